import BLE
import BLEFiles
import BLEHost
import BLEProfiles
import Foundation
import MQTT
import MQTTTestSupport
import Testing

/// `ble gateway` as a process against a Mosquitto of its own, on a private air where `ble serve --device lab` runs:
/// an MQTT client (ours, not the gateway's code path) sees the retained status, the lab's device record and its
/// presence, reads the lab through a request, gets an error for a malformed one, and sees `offline` on SIGTERM.
@Suite(.serialized, .timeLimit(.minutes(2)), .enabled(if: Mosquitto.path != nil, "needs mosquitto (scripts/test installs it)"))
struct GatewayTests {
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
        let inbox = await MQTTInbox.listening(to: observer)
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
        let lateInbox = await MQTTInbox.listening(to: late)
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

    /// Connected sensors through the real stack: a simulated heart-rate monitor on the test's air, a gateway process
    /// on another controller of it. The gateway connects (the monitor advertises Heart Rate), subscribes, and the
    /// device's topic carries the heart rate and battery read over the link, with Home Assistant sensors whose state
    /// topic is that topic; the monitor drops the link and the gateway connects again, and values flow again.
    @Test func aGatewayPublishesValuesReadOverLinksAndReconnects() async throws {
        let broker = try Mosquitto()
        try broker.start()
        let air = try DemoAir(ports: 1)
        defer { air.shutdown() }
        let manager = try await air.peripheralManager(named: SimulatedHeartRateMonitor.defaultName, at: 1)
        let monitor = try await SimulatedDevice.heartRate.start(on: manager)

        let address = MQTTBrokerAddress(host: "127.0.0.1", port: broker.port)
        let observer = MQTTClient(broker: address, configuration: .init(clientID: "observer"))
        let inbox = await MQTTInbox.listening(to: observer)
        #expect(await observer.waitUntilConnected(timeout: .seconds(5)))
        try await observer.subscribe([("swift-ble/#", .atLeastOnce), ("homeassistant/#", .atLeastOnce)])

        let log = broker.directory.appendingPathComponent("gateway.log").path
        let gateway = try spawnTool(["gateway", "--mqtt", "mqtt://127.0.0.1:\(broker.port)", "--id", "gw2", "--hci", air.specification(0),
                                     "--read-interval", "2", "--json"], output: log)
        defer { kill(gateway, SIGKILL); var s: Int32 = 0; waitpid(gateway, &s, WNOHANG) }
        @Sendable func output() -> String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

        let named = await waitFor(15) {
            await inbox.firstMatching { $0.topic.hasPrefix("swift-ble/gw2/devices/") && String(decoding: $0.payload, as: UTF8.self).contains(#""name":"SwiftBLE HRM""#) }
        }
        let topic = try #require(named?.topic, "a record of the monitor; \(output().suffix(800))")
        let values = await waitFor(15) {
            await inbox.firstMatching {
                let text = String(decoding: $0.payload, as: UTF8.self)
                return $0.topic == topic && text.contains(#""heart_rate_measurement":{"bpm":"#) && text.contains(#""battery_level":{"percent":"#)
            }
        }
        let text = values.map { String(decoding: $0.payload, as: UTF8.self) } ?? "none; \(output().suffix(800))"
        #expect(values != nil, "heart rate and battery read over the link: \(text)")
        #expect(text.contains(#""sensor_contact":"detected""#) || text.contains(#""sensor_contact":"not_detected""#), "\(text)")
        #expect(text.contains(#""manufacturer_name":{"text":"#), "Device Information read: \(text)")
        let hex = String(topic.dropFirst("swift-ble/gw2/devices/".count)).replacingOccurrences(of: ":", with: "").lowercased()
        let config = await waitFor(5) { await inbox.first("homeassistant/sensor/swift_ble_gw2_\(hex)/heart_rate/config") }
        let configText = config.map { String(decoding: $0.payload, as: UTF8.self) } ?? ""
        #expect(configText.contains(#""state_topic":"\#(topic)""#), "\(configText)")
        #expect(configText.contains(#""value_template":"{{ value_json['values']['heart_rate_measurement']['bpm'] }}""#), "\(configText)")
        #expect(output().contains(#""state":"connected""#))

        // The monitor drops the link: the gateway says so, connects again after its delay, and values flow again.
        let centrals = await manager.connectedCentrals
        #expect(centrals.count == 1, "the gateway's link")
        for central in centrals { _ = try await manager.disconnect(central) }
        let lost = await waitFor(10) { output().contains(#""state":"lost""#) ? true : nil }
        #expect(lost == true, "\(output().suffix(800))")
        let before = await inbox.messages.count
        let again = await waitFor(20) { output().components(separatedBy: #""state":"connected""#).count - 1 >= 2 ? true : nil }
        #expect(again == true, "connected again: \(output().suffix(800))")
        let flowing = await waitFor(10) {
            await inbox.messages.dropFirst(before).contains { $0.topic == topic && String(decoding: $0.payload, as: UTF8.self).contains(#""bpm":"#) } ? true : nil
        }
        #expect(flowing == true, "values after reconnecting")
        kill(gateway, SIGTERM)
        #expect(await waitFor(10) { await inbox.first("swift-ble/gw2/status") { $0 == "offline" } } != nil)
        await observer.stop()
        await monitor.stop()
    }

#if TLS
    /// `--tls --ca --user --password-file` against a Mosquitto with TLS (a CA of the test's own) and a password file:
    /// the gateway's status goes online; with a wrong password the broker refuses it and the gateway ends with a
    /// clear error and exit status 3, instead of retrying for ever.
    @Test func overTLSWithAPasswordFileAndAWrongPasswordRefused() async throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("gateway-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let broker = try Mosquitto(listener: try Mosquitto.tlsListener(in: work, user: "gateway", password: "s3cret"), anonymous: false)
        try broker.start()
        let ca = work.appendingPathComponent("ca.pem").path
        try "s3cret\n".write(to: work.appendingPathComponent("password"), atomically: true, encoding: .utf8)
        try "guess\n".write(to: work.appendingPathComponent("wrong"), atomically: true, encoding: .utf8)

        let address = try #require(MQTTBrokerAddress(url: "mqtts://127.0.0.1:\(broker.port)"))
        let observer = MQTTClient(broker: address, configuration: .init(clientID: "observer", userName: "gateway", password: Array("s3cret".utf8)),
                                  tls: MQTTTLSOptions(trustRootsFile: ca))
        let inbox = await MQTTInbox.listening(to: observer)
        #expect(await observer.waitUntilConnected(timeout: .seconds(5)))
        try await observer.subscribe([("swift-ble/#", .atLeastOnce)])

        let air = try DemoAir(ports: 2)
        defer { air.shutdown() }
        let log = work.appendingPathComponent("gateway.log").path
        let gateway = try spawnTool(["gateway", "--mqtt", "mqtt://127.0.0.1:\(broker.port)", "--tls", "--ca", ca, "--user", "gateway",
                                     "--password-file", work.appendingPathComponent("password").path, "--id", "secure",
                                     "--hci", air.specification(0), "--connect", "none"], output: log)
        defer { kill(gateway, SIGKILL); var s: Int32 = 0; waitpid(gateway, &s, WNOHANG) }
        let online = await waitFor(15) { await inbox.first("swift-ble/secure/status") { $0 == "online" } }
        #expect(online != nil, "online over TLS: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        kill(gateway, SIGTERM)
        #expect(await waitFor(10) { await inbox.first("swift-ble/secure/status") { $0 == "offline" } } != nil, "a clean offline")

        let refusedLog = work.appendingPathComponent("refused.log").path
        let refused = try spawnTool(["gateway", "--mqtt", "mqtt://127.0.0.1:\(broker.port)", "--tls", "--ca", ca, "--user", "gateway",
                                     "--password-file", work.appendingPathComponent("wrong").path, "--id", "intruder",
                                     "--hci", air.specification(1), "--connect", "none"], output: refusedLog)
        defer { kill(refused, SIGKILL); var s: Int32 = 0; waitpid(refused, &s, WNOHANG) }
        let status = await waitFor(15) { () -> Int32? in
            var status: Int32 = 0
            return waitpid(refused, &status, WNOHANG) == refused ? status : nil
        }
        let said = (try? String(contentsOfFile: refusedLog, encoding: .utf8)) ?? ""
        #expect(status.map { ($0 >> 8) & 0xFF } == 3, "exit status \(status.map { ($0 >> 8) & 0xFF } ?? -1): \(said)")
        #expect(said.contains("error: the broker mqtts://127.0.0.1:\(broker.port) refused the connection: not authorized")
                || said.contains("refused the connection: bad user name or password"), "\(said)")
        #expect(said.contains("check --user and --password-file"), "\(said)")
        #expect(await inbox.first("swift-ble/intruder/status") == nil, "the refused gateway published nothing")
        await observer.stop()
    }
#else
    /// Built without the `TLS` trait, `ble gateway --tls` (or an `mqtts://` broker) ends at once with exit status 1
    /// and says how to build it with TLS, instead of retrying a connection that cannot be made.
    @Test func overTLSWithoutTheTLSTraitEndsWithTheReason() async throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("gateway-no-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let log = work.appendingPathComponent("gateway.log").path
        let gateway = try spawnTool(["gateway", "--mqtt", "mqtts://127.0.0.1:1", "--connect", "none"], output: log)
        defer { kill(gateway, SIGKILL); var s: Int32 = 0; waitpid(gateway, &s, WNOHANG) }
        let status = await waitFor(15) { () -> Int32? in
            var status: Int32 = 0
            return waitpid(gateway, &status, WNOHANG) == gateway ? status : nil
        }
        let said = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(status.map { ($0 >> 8) & 0xFF } == 1, "exit status \(status.map { ($0 >> 8) & 0xFF } ?? -1): \(said)")
        #expect(said.contains("this build of ble has no TLS; build it with `swift build --traits TLS`"), "\(said)")
    }
#endif

    /// Requests naming different devices are answered concurrently, those naming one device in order: a slow write on
    /// one lab device (its application answers after 500 ms) does not hold a read of another, and a read of the first
    /// sent after its write is answered after it.
    @Test func requestsToDifferentDevicesDoNotWaitForEachOther() async throws {
        let broker = try Mosquitto()
        try broker.start()
        let air = try DemoAir(ports: 3)
        defer { air.shutdown() }
        let labA = try DemoProcess("ble", arguments: ["serve", "--device", "lab", "--name", "LabA", "--hci", air.specification(0), "--json", "--run-for", "60"], hci: nil)
        let labB = try DemoProcess("ble", arguments: ["serve", "--device", "lab", "--name", "LabB", "--hci", air.specification(1), "--json", "--run-for", "60"], hci: nil)
        #expect(await labA.waitFor { $0.contains(#""event":"serving""#) } != nil)
        #expect(await labB.waitFor { $0.contains(#""event":"serving""#) } != nil)

        let address = MQTTBrokerAddress(host: "127.0.0.1", port: broker.port)
        let observer = MQTTClient(broker: address, configuration: .init(clientID: "observer"))
        let inbox = await MQTTInbox.listening(to: observer)
        #expect(await observer.waitUntilConnected(timeout: .seconds(5)))
        try await observer.subscribe([("swift-ble/gw3/response/#", .atLeastOnce), ("swift-ble/gw3/status", .atLeastOnce)])
        let log = broker.directory.appendingPathComponent("gateway.log").path
        let gateway = try spawnTool(["gateway", "--mqtt", "mqtt://127.0.0.1:\(broker.port)", "--id", "gw3", "--hci", air.specification(2),
                                     "--connect", "none"], output: log)
        defer { kill(gateway, SIGKILL); var s: Int32 = 0; waitpid(gateway, &s, WNOHANG) }
        #expect(await waitFor(10) { await inbox.first("swift-ble/gw3/status") { $0 == "online" } } != nil)

        func send(_ json: String) async throws {
            try await observer.publish(MQTTMessage(topic: "swift-ble/gw3/command", text: json, qos: .atLeastOnce))
        }
        // Both connected first (connections are made one at a time), concurrently requested.
        try await send(#"{"id":"a0","op":"connect","device":"LabA"}"#)
        try await send(#"{"id":"b0","op":"connect","device":"LabB"}"#)
        let connected = await waitFor(20) {
            let a = await inbox.first("swift-ble/gw3/response/a0")
            let b = await inbox.first("swift-ble/gw3/response/b0")
            return a != nil && b != nil ? true : nil
        }
        let a0 = await inbox.first("swift-ble/gw3/response/a0").map { String(decoding: $0.payload, as: UTF8.self) } ?? "none"
        let b0 = await inbox.first("swift-ble/gw3/response/b0").map { String(decoding: $0.payload, as: UTF8.self) } ?? "none"
        #expect(connected == true && a0.contains(#""ok":true"#) && b0.contains(#""ok":true"#), "\(a0) \(b0)")

        let slow = SampleDevice.customSlow.description
        try await send(#"{"id":"a1","op":"write","device":"LabA","characteristic":"\#(slow)","value":"01","withResponse":true}"#)
        try await send(#"{"id":"a2","op":"read","device":"LabA","characteristic":"2A29"}"#)
        try await send(#"{"id":"b1","op":"read","device":"LabB","characteristic":"2A29"}"#)
        let all = await waitFor(15) {
            let topics = await inbox.messages.map(\.topic)
            return ["a1", "a2", "b1"].allSatisfy { topics.contains("swift-ble/gw3/response/\($0)") } ? topics : nil
        }
        let order = (all ?? []).filter { $0.hasPrefix("swift-ble/gw3/response/") }.map { String($0.dropFirst("swift-ble/gw3/response/".count)) }
        #expect(order.filter { ["a1", "a2", "b1"].contains($0) } == ["b1", "a1", "a2"], "LabB's read before LabA's slow write; LabA's in order: \(order)")
        for id in ["a1", "a2", "b1"] {
            let text = await inbox.first("swift-ble/gw3/response/\(id)").map { String(decoding: $0.payload, as: UTF8.self) } ?? "none"
            #expect(text.contains(#""ok":true"#), "\(id): \(text)")
        }
        kill(gateway, SIGTERM)
        await observer.stop()
        _ = await labA.finish(timeout: .seconds(1))
        _ = await labB.finish(timeout: .seconds(1))
    }

    /// Starts the `ble` tool built next to the tests with every signal unblocked (Foundation's Process would pass on
    /// the test process's blocked SIGTERM), its output to a file.
    func spawnTool(_ arguments: [String], output: String) throws -> pid_t {
        let path = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("ble").path
        return try Mosquitto.spawn([path] + arguments, output: output)
    }
}
