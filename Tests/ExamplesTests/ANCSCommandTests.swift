import BLE
import BLEVirtualController
import Foundation
import Testing

/// `ble serve --device phone` and `ble ancs` against it, two processes on an air of virtual controllers: pairing,
/// the phone's notifications with their apps, titles and messages (text and JSON), an action and the removal it
/// causes, and a refused action's exit status.
@Suite(.serialized, .timeLimit(.minutes(2))) struct ANCSCommandTests {
    @Test func bleANCSPrintsThePhonesNotificationsAndActs() async throws {
        let air = try DemoAir(ports: 2)
        defer { air.shutdown() }
        // Bond stores of the test's own (on a TCP controller the default is the user's file).
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ancs-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let phoneBonds = directory.appendingPathComponent("phone.json").path
        let bonds = ["--bonds", directory.appendingPathComponent("accessory.json").path]
        let server = try DemoProcess("ble", arguments: ["serve", "--device", "phone", "--hci", air.specification(0), "--json",
                                                        "--notify-interval", "1500", "--run-for", "90", "--bonds", phoneBonds], hci: nil)
        let serving = await server.waitFor { $0.contains(#""event":"serving""#) }
        #expect(serving?.contains(#""name":"SwiftBLE Phone""#) == true, "\(serving ?? "no serving line")")

        // Text: the three notifications the phone holds, then the script's incoming call (t = 1.5 s), answered before
        // the script turns it into a missed call (t = 4.5 s; a phone refuses an action on a call that is gone).
        let text = try DemoProcess("ble", arguments: ["ancs", "SwiftBLE Phone", "--hci", air.specification(1), "--count", "7",
                                                      "--perform", "positive"] + bonds, hci: nil)
        let (status, lines) = await text.finish(timeout: .seconds(60))
        #expect(status == 0, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("paired with ") && $0.contains("bonded") }, "\(lines)")
        let notifications = lines.filter { $0.hasPrefix("added ") || $0.hasPrefix("removed ") || $0.hasPrefix("modified ") }
        #expect(notifications.count == 7, "\(lines)")
        #expect(Array(notifications.prefix(4)) == [
            "added 1 social [pre-existing|negative-action] Messages: Alex: Are we still on for lunch? [Clear]",
            "added 2 schedule [pre-existing|negative-action] Calendar: Team meeting (Room 4): In 15 minutes [Clear]",
            "added 3 email [pre-existing|negative-action] Mail: Sam Lee (Quarterly report): Hi, the figures are attached. Could you have a look before Friday? [Clear]",
            "added 4 incoming call [important|positive-action|negative-action] Phone: Mum: Incoming call [Answer / Decline]",
        ], "\(lines)")
        let performed = try #require(lines.firstIndex(of: "performed the positive action (Answer) on 4"), "\(lines)")
        let removed = try #require(lines.firstIndex(of: "removed 4 incoming call [important|positive-action|negative-action]"), "\(lines)")
        #expect(performed < removed)
        #expect(lines.contains("added 5 social [negative-action] Messages: Jo: Running 10 minutes late [Clear]"), "\(lines)")
        // The phone logged the command and the action.
        #expect(await server.waitFor { $0.contains(#""event":"ancs""#) && $0.contains("Perform Notification Action positive on 4") } != nil)

        // JSON: typed fields, the texts as the phone served them.
        let json = try DemoProcess("ble", arguments: ["ancs", "SwiftBLE Phone", "--hci", air.specification(1), "--count", "3", "--json"] + bonds, hci: nil)
        let (jsonStatus, jsonLines) = await json.finish(timeout: .seconds(60))
        #expect(jsonStatus == 0, "\(jsonLines)")
        let objects = try jsonLines.map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
        }
        let received = objects.filter { $0["event"] as? String == "notification" }
        #expect(received.count == 3, "\(jsonLines)")
        // The phone still holds the first three (the call was answered and removed).
        #expect(received.map { $0["app_name"] as? String } == ["Messages", "Calendar", "Mail"], "\(jsonLines)")
        #expect(received.map { $0["title"] as? String } == ["Alex", "Team meeting", "Sam Lee"], "\(jsonLines)")
        #expect(received.first?["message"] as? String == "Are we still on for lunch?")
        #expect(received.first?["uid"] as? Int == 1)
        #expect(received.first?["category_id"] as? Int == 4)
        #expect(received.first?["flags"] as? [String] == ["pre-existing", "negative-action"])
        #expect(received.first?["app_identifier"] as? String == "com.apple.MobileSMS")
        // Secured again (each TCP connection to the air is a new controller with an address of its own, so the
        // first run's bond, made for another local address, is not this one's: it pairs again).
        #expect(objects.contains { ["paired", "encrypted"].contains($0["event"] as? String) }, "\(jsonLines)")

        // A positive action on a message that offers none: the phone answers Action Failed (0xA3), a protocol error.
        let refused = try DemoProcess("ble", arguments: ["ancs", "SwiftBLE Phone", "--hci", air.specification(1), "--count", "3",
                                                         "--perform", "positive", "--uid", "1"] + bonds, hci: nil)
        let (refusedStatus, refusedLines) = await refused.finish(timeout: .seconds(60))
        #expect(refusedStatus == 3, "\(refusedLines)")
        _ = await server.finish(timeout: .milliseconds(100))
    }
}
