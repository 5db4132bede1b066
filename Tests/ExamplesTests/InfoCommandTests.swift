import BLEVirtualController
import Foundation
import Testing

/// `ble info`, run as a process: the embedded virtual controller read whole, a Core 4.1 one (served over TCP) read
/// as such; and `ble bench run --data-length 251 --phy 2m` on the 4.1 controller measuring anyway.
@Suite(.timeLimit(.minutes(2))) struct InfoCommandTests {
    /// The one JSON object `ble info --json` prints.
    func info(_ arguments: [String]) async throws -> [String: Any] {
        let process = try DemoProcess("ble", arguments: ["info", "--json"] + arguments, hci: nil)
        let (status, lines) = await process.finish(timeout: .seconds(30))
        #expect(status == 0, "\(lines)")
        #expect(lines.count == 1, "\(lines)")
        let line = try #require(lines.first)
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    @Test func theDefaultVirtualControllerIsFullyCapable() async throws {
        let info = try await info([])
        #expect(info["hciVersion"] as? String == "5.4" && info["hciVersionNumber"] as? Int == 13)
        #expect(info["lmpVersion"] as? String == "5.4")
        #expect(info["companyIdentifier"] as? Int == 0xFFFF)
        #expect(info["company"] as? String == "reserved for internal use and testing")
        #expect((info["publicAddress"] as? String)?.hasPrefix("00:5B:00:00:00:") == true)
        let acl = try #require(info["aclBuffers"] as? [String: Any])
        #expect(acl["length"] as? Int == 27 && acl["count"] as? Int == 8 && acl["source"] as? String == "LE Read Buffer Size [v2]")
        let dataLength = try #require(info["maximumDataLength"] as? [String: Any])
        #expect(dataLength["txOctets"] as? Int == 251 && dataLength["rxTime"] as? Int == 2120)
        #expect(info["dataLengthExtension"] as? Bool == true)
        #expect(info["phys"] as? [String] == ["LE 1M", "LE 2M", "LE Coded"])
        #expect(info["leFeatureNames"] as? [String] == ["LE Encryption", "LE Data Packet Length Extension", "LE 2M PHY", "LE Coded PHY",
                                                               "LE Extended Advertising"])
        #expect(info["lmpFeatureNames"] as? [String] == ["BR/EDR Not Supported", "LE Supported (Controller)"])
        #expect(info["supportedCommandsSource"] as? String == "controller")
        let commands = try #require(info["supportedCommands"] as? [String])
        for name in ["Reset", "LE Set Data Length", "LE Set PHY", "LE Read Buffer Size [v2]", "LE Create Connection"] {
            #expect(commands.contains(name), "\(name)")
        }
        #expect(info["filterAcceptListSize"] is NSNull && info["resolvingListSize"] is NSNull)
    }

    @Test func aCore41ControllerSaysWhatItLacks() async throws {
        let air = try DemoAir(profiles: [.bluetooth41])
        defer { air.shutdown() }
        let info = try await info(["--hci", air.specification])
        #expect(info["hciVersion"] as? String == "4.1" && info["hciVersionNumber"] as? Int == 7)
        #expect((info["aclBuffers"] as? [String: Any])?["source"] as? String == "LE Read Buffer Size [v1]")
        #expect(info["maximumDataLength"] is NSNull)
        #expect(info["dataLengthExtension"] as? Bool == false)
        #expect(info["phys"] as? [String] == ["LE 1M"])
        #expect(info["leFeatureNames"] as? [String] == ["LE Encryption"])
        let commands = try #require(info["supportedCommands"] as? [String])
        #expect(!commands.contains("LE Set Data Length") && !commands.contains("LE Set PHY") && !commands.contains("LE Read Buffer Size [v2]"))
        #expect(commands.contains("LE Read Buffer Size [v1]") && commands.contains("LE Enable Encryption"))
    }

    @Test func benchRunOnACore41ControllerMeasuresAtTheDefaults() async throws {
        let air = try DemoAir(ports: 2, profiles: [.full, .bluetooth41])
        defer { air.shutdown() }
        let server = try DemoProcess("ble", arguments: ["bench", "serve", "--hci", air.specification(0)], hci: nil)
        #expect(await server.waitFor { $0.contains("bench service up") } != nil)
        let run = try DemoProcess("ble", arguments: ["bench", "run", "SwiftBLEBench", "--hci", air.specification(1), "--count", "50",
                                                     "--mode", "notify", "--data-length", "251", "--phy", "2m", "--json"], hci: nil)
        let (status, lines) = await run.finish(timeout: .seconds(60))
        #expect(status == 0, "\(lines)")
        let objects = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let skipped = objects.filter { $0["event"] as? String == "skipped" }
        #expect(skipped.compactMap { $0["option"] as? String } == ["phy", "data-length"])
        #expect(skipped.last?["reason"] as? String
                == "the controller does not support LE Data Length Extension (LE Set Data Length is not in its supported commands)")
        #expect(objects.contains { $0["mode"] as? String == "notify" && $0["count"] as? Int == 50 })
        _ = await server.finish(timeout: .milliseconds(100))
    }
}
