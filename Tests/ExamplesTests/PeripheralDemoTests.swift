import BLE
import BLEProfiles
import Foundation
import Testing

@Suite(.timeLimit(.minutes(1))) struct PeripheralDemoTests {
    /// Two centrals receive the file byte for byte, and each central's reply is attributed by the peripheral to the
    /// same identifier the peripheral gave that central when it asked "who am I".
    @Test func transferDemoStreamsAFileToTwoCentralsAndAttributesEachReply() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("transfer-\(UUID().uuidString).bin").path
        let bytes = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 / 7) }
        #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let demo = try DemoProcess("transfer-demo", arguments: ["--file", path], hci: nil)
        let (status, output) = await demo.finish()
        #expect(status == 0, "\(output)")
        #expect(output.contains { $0.hasPrefix("peripheral: advertising Transfer ") && $0.hasSuffix(", 10000 bytes to send") })
        for label in ["A", "B"] {
            #expect(output.contains("central \(label): received 10000 bytes, identical to the file"), "\(output)")
            #expect(output.contains("central \(label): reply written"))
            let identity = try #require(output.first { $0.hasPrefix("central \(label): the peripheral knows me as ") }?
                .split(separator: " ").last.map(String.init))
            #expect(output.contains("peripheral: \(identity) wrote \"thanks from \(label)\""), "\(output)")
            #expect(output.contains { $0.hasPrefix("peripheral: sent 10000 bytes and EOM to \(identity)") })
        }
        let identities = Set(output.filter { $0.contains("knows me as") }.compactMap { $0.split(separator: " ").last })
        #expect(identities.count == 2)
        #expect(output.last == "done")
    }

    /// The two peers of the chat demo deliver every line of their conversation, both ways, in order.
    @Test func chatDemoDeliversTheConversationBothWays() async throws {
        let demo = try DemoProcess("chat-demo", hci: nil)
        let (status, output) = await demo.finish()
        #expect(status == 0, "\(output)")
        #expect(output == ["Alice> hi Bob", "Bob> hi Alice! all over BLE?", "Alice> yes: I write to your inbox, you write to mine",
                           "Bob> then goodbye", "Alice> goodbye", "conversation over"])
    }

    /// Two chat-demo processes, one peer each, on two TCP-served controllers: each process's central and peripheral
    /// managers share one connection to its controller, and the lines typed on each side reach the other.
    @Test func chatDemoPeersInTwoProcessesTalkThroughTypedLines() async throws {
        let air = try DemoAir(ports: 2)
        defer { air.shutdown() }
        let alice = try DemoProcess("chat-demo", arguments: ["--name", "Alice", "--peer", "Bob"], hci: air.specification(0), withInput: true)
        let bob = try DemoProcess("chat-demo", arguments: ["--name", "Bob", "--peer", "Alice"], hci: air.specification(1), withInput: true)
        #expect(await alice.waitFor { $0 == "[Alice] connected to Bob; type a line and press return" } != nil)
        #expect(await bob.waitFor { $0 == "[Bob] connected to Alice; type a line and press return" } != nil)
        alice.type("hello from the first terminal")
        #expect(await bob.waitFor { $0.hasPrefix("Alice> ") } == "Alice> hello from the first terminal")
        bob.type("and back from the second")
        #expect(await alice.waitFor { $0.hasPrefix("Bob> ") } == "Bob> and back from the second")
        // One host connection per process: its two managers share it.
        #expect(air.connectionsAccepted == 2)
        alice.endInput()
        bob.endInput()
        #expect(await alice.finish().status == 0)
        #expect(await bob.finish().status == 0)
    }

    /// The battery demo finds the battery device by its services and name, reads the manufacturer and follows the
    /// level's notifications.
    @Test func batteryDemoReadsTheManufacturerAndFollowsTheLevel() async throws {
        let air = try DemoAir()
        defer { air.shutdown() }
        let battery = await SimulatedBattery(manager: try await air.peripheralManager(named: "Test Battery", at: 2), name: "Test Battery", level: 50)
        try await battery.start(tick: .milliseconds(100))
        let demo = try DemoProcess("battery-demo", arguments: ["--name", "Test Battery", "--updates", "3"], hci: air.specification)
        let (status, output) = await demo.finish()
        #expect(status == 0, "\(output)")
        #expect(output.contains("connected to Test Battery"))
        #expect(output.contains("manufacturer swift-ble"))
        let levels = output.filter { $0.contains("(notification ") }.compactMap { line in
            line.split(separator: " ").dropFirst(2).first.flatMap { Int($0.dropLast()) }
        }
        #expect(levels.count == 3, "\(output)")
        // The level drains by one percent a tick.
        #expect(zip(levels, levels.dropFirst()).allSatisfy { $0 - $1 == 1 }, "\(levels)")
        #expect(output.last == "disconnected")
    }

    @Test func batteryDemoRunsOnTheEmbeddedWorld() async throws {
        let demo = try DemoProcess("battery-demo", arguments: ["--updates", "2"], hci: nil)
        let (status, output) = await demo.finish()
        #expect(status == 0, "\(output)")
        #expect(output.contains("connected to SwiftBLE Battery"))
    }
}
