import BLE
import Foundation
import MQTT
import MQTTTestSupport
import Testing

/// `ble gateway` as a process against a Mosquitto of its own, on a private air where `ble serve --device lab` runs:
/// an MQTT client (ours, not the gateway's code path) sees the retained status, the lab's device record and its
/// presence, reads the lab through a request, gets an error for a malformed one, and sees `offline` on SIGTERM.
@Suite(.serialized, .timeLimit(.minutes(2)), .enabled(if: Mosquitto.path != nil, "needs mosquitto (scripts/test installs it)"))
struct GatewayTests {
    actor Inbox {
        var messages: [MQTTMessage] = []
        func take(_ event: MQTTSession.Event) { if case .message(let m) = event { messages.append(m) } }
        func first(_ topic: String, where predicate: @Sendable (String) -> Bool = { _ in true }) -> MQTTMessage? {
            messages.first { $0.topic == topic && predicate(String(decoding: $0.payload, as: UTF8.self)) }
        }
        func firstMatching(_ predicate: @Sendable (MQTTMessage) -> Bool) -> MQTTMessage? { messages.first(where: predicate) }
    }

    func waitFor<T: Sendable>(_ seconds: Double, _ probe: @Sendable () async -> T?) async -> T? {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if let value = await probe() { return value }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return await probe()
    }

    @Test func aGatewayPublishesAnswersAndSaysGoodbye() async throws {
        let broker = try Mosquitto()
        try broker.start()
        let air = try DemoAir(ports: 2)
        defer { air.shutdown() }
        let lab = try DemoProcess("ble", arguments: ["serve", "--device", "lab", "--hci", air.specification(0), "--json", "--run-for", "60"], hci: nil)
        #expect(await lab.waitFor { $0.contains(#""event":"serving""#) } != nil)

        let address = MQTTBrokerAddress(host: "127.0.0.1", port: broker.port)
        let observer = MQTTClient(broker: address, configuration: .init(clientID: "observer"))
        let inbox = Inbox()
        Task { for await event in observer.eventStream { await inbox.take(event) } }
        await observer.start()
        #expect(await observer.waitUntilConnected(timeout: .seconds(5)))
        try await observer.subscribe([("swift-ble/#", .atLeastOnce)])

        let log = broker.directory.appendingPathComponent("gateway.log").path
        let gateway = try spawnTool(["gateway", "--mqtt", "mqtt://127.0.0.1:\(broker.port)", "--id", "gw1", "--hci", air.specification(1),
                                     "--interval", "1", "--json"], output: log)
        defer { kill(gateway, SIGKILL); var s: Int32 = 0; waitpid(gateway, &s, WNOHANG) }

        let online = await waitFor(10) { await inbox.first("swift-ble/gw1/status") { $0 == "online" } }
        #expect(online != nil, "status online")
        // A late subscriber sees it retained.
        let late = MQTTClient(broker: address, configuration: .init(clientID: "late"))
        let lateInbox = Inbox()
        Task { for await event in late.eventStream { await lateInbox.take(event) } }
        await late.start()
        #expect(await late.waitUntilConnected(timeout: .seconds(5)))
        try await late.subscribe([("swift-ble/gw1/status", .atLeastOnce)])
        #expect(await waitFor(5) { await lateInbox.firstMatching { $0.retain && $0.payload == Array("online".utf8) } } != nil, "retained online")
        await late.stop()

        // The lab's record, decoded, numbered.
        let record = await waitFor(15) {
            await inbox.firstMatching { $0.topic.hasPrefix("swift-ble/gw1/devices/") && String(decoding: $0.payload, as: UTF8.self).contains(#""name":"SwiftBLELab""#) }
        }
        let text = record.map { String(decoding: $0.payload, as: UTF8.self) } ?? ""
        #expect(text.contains(#""services":["180D","180F"]"#), "\(text)")
        #expect(text.contains(#""rssi":-"#) && text.contains(#""seq":"#), "\(text)")
        let labAddress = record.map { String($0.topic.dropFirst("swift-ble/gw1/devices/".count)) } ?? "?"
        // Alone on the air, the gateway holds the lab: its presence, retained.
        let presence = await waitFor(10) { await inbox.first("swift-ble/presence/\(labAddress)") }
        #expect(presence.map { String(decoding: $0.payload, as: UTF8.self) }?.contains(#""gateway":"gw1""#) == true)
        #expect(await inbox.first("swift-ble/gw1/rssi/\(labAddress)") != nil, "its view")

        // A read through the broker, by name; then a malformed request.
        try await observer.publish(MQTTMessage(topic: "swift-ble/gw1/command",
                                               text: #"{"id":"r1","op":"read","device":"SwiftBLELab","characteristic":"2A29"}"#, qos: .atLeastOnce))
        let response = await waitFor(20) { await inbox.first("swift-ble/gw1/response/r1") }
        let answer = response.map { String(decoding: $0.payload, as: UTF8.self) } ?? "no response"
        #expect(answer.hasPrefix(#"{"id":"r1","ok":true,"op":"read","device":"\#(labAddress)","characteristic":"2A29","value":""#), "\(answer)")
        #expect(answer.contains(#""decoded":{"type":"text","text":"#), "\(answer)")
        try await observer.publish(MQTTMessage(topic: "swift-ble/gw1/command", text: #"{"id":"r2","op":"read","device":"SwiftBLELab"}"#, qos: .atLeastOnce))
        let refused = await waitFor(10) { await inbox.first("swift-ble/gw1/response/r2") }
        #expect(refused.map { String(decoding: $0.payload, as: UTF8.self) }?.hasPrefix(#"{"id":"r2","ok":false,"error":{"code":"malformed_request""#) == true)
        try await observer.publish(MQTTMessage(topic: "swift-ble/gw1/command", text: "{not json", qos: .atLeastOnce))
        #expect(await waitFor(10) { await inbox.first("swift-ble/gw1/response/_") } != nil, "junk answered on response/_")

        // SIGTERM: offline, retained, published by the gateway itself; exit status 143.
        kill(gateway, SIGTERM)
        let offline = await waitFor(10) { await inbox.first("swift-ble/gw1/status") { $0 == "offline" } }
        #expect(offline != nil, "offline on SIGTERM")
        let status = await waitFor(10) { () -> Int32? in
            var status: Int32 = 0
            return waitpid(gateway, &status, WNOHANG) == gateway ? status : nil
        }
        #expect(status.map { ($0 >> 8) & 0xFF } == 143, "exit status \(status.map { ($0 >> 8) & 0xFF } ?? -1)")
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(output.contains(#""event":"stopped""#), "a clean stop, not the Will: \(output.suffix(600))")
        if ProcessInfo.processInfo.environment["GATEWAY_TEST_SHOW"] != nil { print(output) }
        await observer.stop()
        _ = await lab.finish(timeout: .seconds(1))
    }

    /// Starts the `ble` tool built next to the tests with every signal unblocked (Foundation's Process would pass on
    /// the test process's blocked SIGTERM), its output to a file.
    func spawnTool(_ arguments: [String], output: String) throws -> pid_t {
        let path = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("ble").path
        return try Mosquitto.spawn([path] + arguments, output: output)
    }
}
