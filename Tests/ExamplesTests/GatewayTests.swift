import BLE
import Foundation
import MQTT
import Testing

/// `ble gateway` as a process against a Mosquitto of its own, on a private air where `ble serve --device lab` runs:
/// an MQTT client (ours, not the gateway's code path) sees the retained status, the lab's device record and its
/// presence, reads the lab through a request, gets an error for a malformed one, and sees `offline` on SIGTERM.
@Suite(.serialized, .timeLimit(.minutes(2)), .enabled(if: GatewayBroker.path != nil, "needs mosquitto (scripts/test installs it)"))
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
        let broker = try GatewayBroker()
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
        return try GatewayBroker.spawn([path] + arguments, output: output)
    }
}

/// A Mosquitto broker of our own on a free port (as MQTTTests' one).
final class GatewayBroker: @unchecked Sendable {
    static let path = ["/usr/sbin/mosquitto", "/usr/bin/mosquitto", "/usr/local/sbin/mosquitto"].first { FileManager.default.isExecutableFile(atPath: $0) }
    let port: Int
    let directory: URL
    private var pid: pid_t?

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    init() throws {
        port = try Self.freePort()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("gateway-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let configuration = """
            listener \(port) 127.0.0.1
            allow_anonymous true
            log_dest file \(directory.path)/mosquitto.log
            """ + (getuid() == 0 ? "\nuser root\n" : "\n")
        try configuration.write(to: directory.appendingPathComponent("mosquitto.conf"), atomically: true, encoding: .utf8)
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    func start() throws {
        guard let path = Self.path else { throw Failure(description: "mosquitto is not installed") }
        pid = try Self.spawn([path, "-c", directory.appendingPathComponent("mosquitto.conf").path], output: "/dev/null")
        for _ in 0..<100 {
            if Self.accepts(port) { return }
            usleep(50_000)
        }
        throw Failure(description: "mosquitto did not start on port \(port)")
    }

    func stop() {
        guard let child = pid else { return }
        pid = nil
        kill(child, SIGTERM)
        var status: Int32 = 0
        for _ in 0..<100 {
            if waitpid(child, &status, WNOHANG) == child { return }
            usleep(50_000)
        }
        kill(child, SIGKILL)
        waitpid(child, &status, 0)
    }

    /// posix_spawn with every signal unblocked and at its default, standard output and error to `output`.
    static func spawn(_ arguments: [String], output: String) throws -> pid_t {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var child: pid_t = 0
        guard posix_spawn(&child, arguments[0], &actions, &attributes, &argv, environ) == 0 else {
            throw Failure(description: "cannot start \(arguments[0])")
        }
        return child
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw Failure(description: "no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}
