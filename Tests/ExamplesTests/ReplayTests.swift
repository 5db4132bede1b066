import BLE
import BLEFiles
import Foundation
import Testing

/// `ble serve --replay CAPTURE` as processes on a private air: the lab device explored with `--btsnoop`, then its
/// capture replayed and explored again, prints the same tree and values; a capture of a subscription replays the
/// notifications in order; a value the capture never shows is refused with Read Not Permitted; a file that is not a
/// capture is refused.
@Suite(.timeLimit(.minutes(3))) struct ReplayTests {
    static func run(_ air: DemoAir, port: Int, _ arguments: [String]) async throws -> (Int32, [String]) {
        let process = try DemoProcess("ble", arguments: arguments + ["--hci", air.specification(port), "--json",
                                                                      "--bonds", GATTFileTests.temporary("bonds.json")], hci: nil)
        return await process.finish(timeout: .seconds(60))
    }

    /// The lines of an explore that describe the database and its values (addresses masked: another controller).
    static func tree(_ lines: [String]) -> [String] {
        lines.filter { $0.contains(#""kind":"#) }.map { $0.replacing(/([0-9A-F]{2}:){5}[0-9A-F]{2}/, with: "ADDRESS") }
    }

    @Test func anExploredLabDeviceReplaysAsItWas() async throws {
        let air = try DemoAir(ports: 4)
        defer { air.shutdown() }
        let (original, address) = try await GATTFileTests.serve(air, port: 0, ["--device", "lab"])
        let capture = GATTFileTests.temporary("lab.btsnoop")
        let (status, first) = try await Self.run(air, port: 1, ["explore", address, "--btsnoop", capture])
        #expect(status == 0, "\(first)")
        _ = await original.finish(timeout: .milliseconds(100))
        let saved = GATTFileTests.temporary("replay.json")
        let (replay, replayAddress) = try await GATTFileTests.serve(air, port: 2, ["--replay", capture, "--save", saved])
        let (again, second) = try await Self.run(air, port: 3, ["explore", replayAddress])
        #expect(again == 0, "\(second)")
        #expect(Self.tree(first).count > 30)
        #expect(Self.tree(second) == Self.tree(first), "the replay explores as the device did: handles, values, the refusal")
        // What the replay serves is also written in the --gatt format.
        let description = try GATTDeviceDescription(json: Array(try Data(contentsOf: URL(fileURLWithPath: saved))))
        #expect(description.advertising.name == "SwiftBLELab")
        let (_, served) = await replay.finish(timeout: .milliseconds(100))
        // DEFB's value was refused (an authenticated key is needed; Just Works gives none): never seen.
        let summary = try #require(served.first { $0.contains(#""event":"replay""#) }, "\(served)")
        #expect(summary.contains(#""unseen_values":1"#), "\(summary)")
    }

    @Test func aSubscriptionReplaysItsNotificationsAndUnseenValuesAreRefused() async throws {
        let air = try DemoAir(ports: 4)
        defer { air.shutdown() }
        let (original, address) = try await GATTFileTests.serve(air, port: 0, ["--device", "heart-rate", "--notify-interval", "100"])
        let capture = GATTFileTests.temporary("hr.btsnoop")
        let (status, heard) = try await Self.run(air, port: 1, ["subscribe", address, "2A37", "--count", "4", "--btsnoop", capture])
        #expect(status == 0, "\(heard)")
        _ = await original.finish(timeout: .milliseconds(100))
        let values = heard.compactMap { $0.firstMatch(of: /"value":"([0-9a-f]+)"/).map { String($0.1) } }
        #expect(values.count == 4, "\(heard)")
        let (replay, replayAddress) = try await GATTFileTests.serve(air, port: 2, ["--replay", capture])
        let (again, replayed) = try await Self.run(air, port: 3, ["subscribe", replayAddress, "2A37", "--count", "4"])
        #expect(again == 0, "\(replayed)")
        #expect(replayed.compactMap { $0.firstMatch(of: /"value":"([0-9a-f]+)"/).map { String($0.1) } } == values,
                "the notifications come back in the order the device sent them")
        // The subscription discovered the database but read nothing: the Device Name was never given, and the
        // replay says so with Read Not Permitted (0x02) where the device would have answered.
        let (explored, lines) = try await Self.run(air, port: 3, ["explore", replayAddress, "--no-pair"])
        #expect(explored == 0, "\(lines)")
        #expect(lines.contains { $0.contains(#""uuid":"2A00""#) && $0.contains(#""att_error":2"#) }, "\(lines)")
        _ = await replay.finish(timeout: .milliseconds(100))
    }

    @Test func aFileThatIsNotACaptureIsRefused() async throws {
        let air = try DemoAir(ports: 1)
        defer { air.shutdown() }
        let bogus = GATTFileTests.temporary("bogus.btsnoop")
        try Data("not a capture".utf8).write(to: URL(fileURLWithPath: bogus))
        let (status, lines) = try await Self.run(air, port: 0, ["serve", "--replay", bogus, "--run-for", "5"])
        #expect(status == 1, "\(lines)")
    }
}
