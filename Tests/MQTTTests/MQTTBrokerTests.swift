#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MQTT
import MQTTTestSupport
import Testing

/// The client against a real broker: Mosquitto (not our code) judges our packets.
@Suite(.serialized, .timeLimit(.minutes(1)), .enabled(if: Mosquitto.path != nil, "needs mosquitto (scripts/test installs it)"))
struct MQTTBrokerTests {
    /// Collects the messages a client receives.
    actor Inbox {
        var messages: [MQTTMessage] = []
        var delivered: Set<UInt64> = []
        func take(_ event: MQTTSession.Event) {
            switch event {
            case .message(let m): messages.append(m)
            case .delivered(let n): delivered.insert(n)
            default: break
            }
        }
        func waitFor(_ condition: @Sendable (Inbox) async -> Bool, seconds: Double) async -> Bool {
            let deadline = ContinuousClock.now + .seconds(seconds)
            while ContinuousClock.now < deadline {
                if await condition(self) { return true }
                try? await Task.sleep(for: .milliseconds(20))
            }
            return await condition(self)
        }
    }

    func listen(_ client: MQTTClient) -> Inbox {
        let inbox = Inbox()
        Task { for await event in client.eventStream { await inbox.take(event) } }
        return inbox
    }

    /// A broker of its own, and a client "observer" connected to it whose events an inbox collects.
    func startWithObserver() async throws -> (Mosquitto, MQTTBrokerAddress, MQTTClient, Inbox) {
        let broker = try Mosquitto()
        try broker.start()
        let address = MQTTBrokerAddress(host: "127.0.0.1", port: broker.port)
        let observer = MQTTClient(broker: address, configuration: .init(clientID: "observer"))
        let observed = listen(observer)
        await observer.start()
        #expect(await observer.waitUntilConnected(timeout: .seconds(5)))
        return (broker, address, observer, observed)
    }

    @Test func publishSubscribeRetainAndWill() async throws {
        let (broker, address, observer, observed) = try await startWithObserver()
        defer { withExtendedLifetime(broker) {} }
        let granted = try await observer.subscribe([("fleet/#", .atLeastOnce)])
        #expect(granted == [.atLeastOnce])

        let will = MQTTMessage(topic: "fleet/gw1/status", text: "offline", qos: .atLeastOnce, retain: true)
        let gateway = MQTTClient(broker: address, configuration: .init(clientID: "gw1", keepAlive: 5, will: will))
        let sent = listen(gateway)
        await gateway.start()
        #expect(await gateway.waitUntilConnected(timeout: .seconds(5)))
        try await gateway.publish(MQTTMessage(topic: "fleet/gw1/status", text: "online", qos: .atLeastOnce, retain: true))
        var numbers: [UInt64] = []
        for i in 0..<20 {
            numbers.append(try await gateway.publish(MQTTMessage(topic: "fleet/gw1/devices/\(i)", text: "{\"rssi\":-\(40 + i)}", qos: .atLeastOnce)))
        }
        let first = numbers
        #expect(await sent.waitFor({ await $0.delivered.isSuperset(of: first) }, seconds: 5), "every QoS 1 message acknowledged by the broker")
        #expect(await observed.waitFor({ await $0.messages.count >= 21 }, seconds: 5))
        let topics = await observed.messages.map(\.topic)
        #expect(topics.first == "fleet/gw1/status")
        #expect(Array(topics.dropFirst().prefix(20)) == (0..<20).map { "fleet/gw1/devices/\($0)" }, "in order")

        // A late subscriber gets the retained status.
        let late = MQTTClient(broker: address, configuration: .init(clientID: "late"))
        let lateInbox = listen(late)
        await late.start()
        #expect(await late.waitUntilConnected(timeout: .seconds(5)))
        try await late.subscribe([("fleet/+/status", .atMostOnce)])
        #expect(await lateInbox.waitFor({ await $0.messages.contains { $0.topic == "fleet/gw1/status" && $0.payload == Array("online".utf8) && $0.retain } }, seconds: 5))

        // A clean stop: DISCONNECT, so the broker does not publish the Will.
        await gateway.stop()
        try await Task.sleep(for: .milliseconds(300))
        #expect(await !observed.messages.contains { $0.payload == Array("offline".utf8) })
        await observer.stop()
        await late.stop()
    }

    /// A batch of QoS 0 and QoS 1 messages (one step of the client, one buffer to the socket) reaches a subscriber
    /// whole and in order; a client that does not report deliveries still reports what else happens, and its backlog
    /// drains.
    @Test func aMixedBatchArrivesInOrderAndDeliveriesCanGoUnreported() async throws {
        let (broker, address, observer, observed) = try await startWithObserver()
        defer { withExtendedLifetime(broker) {} }
        try await observer.subscribe([("batch/#", .atLeastOnce)])

        let publisher = MQTTClient(broker: address, configuration: .init(clientID: "quiet"), reportsDeliveries: false)
        actor Seen {
            var events: [MQTTSession.Event] = []
            func take(_ event: MQTTSession.Event) { events.append(event) }
        }
        let seen = Seen()
        Task { for await event in publisher.eventStream { await seen.take(event) } }
        await publisher.start()
        #expect(await publisher.waitUntilConnected(timeout: .seconds(5)))
        let batch = (0..<40).map { MQTTMessage(topic: "batch/\($0)", text: "\($0)", qos: $0 % 3 == 0 ? .atLeastOnce : .atMostOnce) }
        let numbers = await publisher.publish(contentsOf: batch)
        #expect(numbers.allSatisfy { $0 != nil })
        #expect(await observed.waitFor({ await $0.messages.count >= 40 }, seconds: 5))
        #expect(await observed.messages.map(\.topic) == batch.map(\.topic), "whole and in order")
        let drained = await Inbox().waitFor({ _ in let b = await publisher.backlog; return b.inFlight + b.queued == 0 }, seconds: 5)
        #expect(drained, "every QoS 1 message acknowledged")
        let events = await seen.events
        #expect(events.contains(.connected(sessionPresent: false)))
        #expect(!events.contains { if case .delivered = $0 { true } else { false } })
        await publisher.stop()
        await observer.stop()
    }

    /// The broker stops during a stream of QoS 1 messages and comes back: the client queues, reconnects with backoff
    /// and delivers every message; a persistent subscriber receives every one.
    @Test func theBrokerGoesAwayAndComesBackNothingIsLost() async throws {
        let broker = try Mosquitto(persistent: true)
        try broker.start()
        let address = MQTTBrokerAddress(host: "127.0.0.1", port: broker.port)
        let subscriber = MQTTClient(broker: address, configuration: .init(clientID: "keeper", cleanSession: false), backoff: (.milliseconds(100), .milliseconds(400)))
        let received = listen(subscriber)
        await subscriber.start()
        #expect(await subscriber.waitUntilConnected(timeout: .seconds(5)))
        try await subscriber.subscribe([("readings/#", .atLeastOnce)])
        let gateway = MQTTClient(broker: address, configuration: .init(clientID: "gw"), backoff: (.milliseconds(100), .milliseconds(400)))
        let sent = listen(gateway)
        await gateway.start()
        #expect(await gateway.waitUntilConnected(timeout: .seconds(5)))
        var numbers: [UInt64] = []
        for i in 0..<50 { numbers.append(try await gateway.publish(MQTTMessage(topic: "readings/\(i)", text: "\(i)", qos: .atLeastOnce))) }
        #expect(await sent.waitFor({ await $0.delivered.count == 50 }, seconds: 5))
        broker.stop()
        #expect(await sent.waitFor({ _ in await !gateway.isConnected }, seconds: 5))
        for i in 50..<100 { numbers.append(try await gateway.publish(MQTTMessage(topic: "readings/\(i)", text: "\(i)", qos: .atLeastOnce))) }
        #expect(await gateway.backlog.queued == 50)
        try broker.start()
        let all = numbers
        #expect(await sent.waitFor({ await $0.delivered.isSuperset(of: all) }, seconds: 10), "the queued messages went out after reconnection")
        #expect(await received.waitFor({ Set(await $0.messages.map(\.topic)).count == 100 }, seconds: 10))
        #expect(await gateway.droppedCount == 0)
        #expect(await gateway.connectionCount >= 2)
        await gateway.stop()
        await subscriber.stop()
    }

#if TLS
    /// A broker behind TLS with a certificate from a CA of the test's own, and a password file: the client connects
    /// with the CA and the right password; without the CA it is refused by its own certificate check; with a wrong
    /// password the broker refuses it.
    @Test func tlsAndCredentials() async throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("mqtt-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let broker = try Mosquitto(listener: try Mosquitto.tlsListener(in: work, user: "gateway", password: "s3cret"), anonymous: false)
        try broker.start()
        let address = try #require(MQTTBrokerAddress(url: "mqtts://127.0.0.1:\(broker.port)"))
        #expect(address.usesTLS)
        let trusted = MQTTTLSOptions(trustRootsFile: work.appendingPathComponent("ca.pem").path)

        let good = MQTTClient(broker: address, configuration: .init(clientID: "tls-good", userName: "gateway", password: Array("s3cret".utf8)), tls: trusted)
        let inbox = listen(good)
        await good.start()
        let connected = await good.waitUntilConnected(timeout: .seconds(5))
        let why = await good.lastDisconnectReason ?? ""
        #expect(connected, "\(why)")
        try await good.subscribe([("secure/#", .atLeastOnce)])
        let number = try await good.publish(MQTTMessage(topic: "secure/x", text: "over TLS", qos: .atLeastOnce))
        #expect(await inbox.waitFor({ inbox in
            let delivered = await inbox.delivered.contains(number)
            let heard = await inbox.messages.contains { $0.topic == "secure/x" }
            return delivered && heard
        }, seconds: 5))
        await good.stop()

        // By name: SNI "localhost", checked against the certificate's DNS name.
        let byName = MQTTClient(broker: address, configuration: .init(clientID: "tls-name", userName: "gateway", password: Array("s3cret".utf8)),
                                tls: MQTTTLSOptions(trustRootsFile: trusted.trustRootsFile, serverName: "localhost"))
        await byName.start()
        #expect(await byName.waitUntilConnected(timeout: .seconds(5)))
        await byName.stop()

        let untrusting = MQTTClient(broker: address, configuration: .init(clientID: "tls-untrusting", userName: "gateway", password: Array("s3cret".utf8)),
                                    backoff: (.seconds(5), .seconds(5)))
        await untrusting.start()
        #expect(await !untrusting.waitUntilConnected(timeout: .seconds(1)), "a certificate from an unknown CA is refused")
        await untrusting.stop()

        let wrong = MQTTClient(broker: address, configuration: .init(clientID: "tls-wrong", userName: "gateway", password: Array("guess".utf8)),
                               tls: trusted, backoff: (.seconds(5), .seconds(5)))
        await wrong.start()
        #expect(await !wrong.waitUntilConnected(timeout: .seconds(1)))
        let reason = await wrong.lastDisconnectReason ?? ""
        #expect(reason.contains("not authorized") || reason.contains("bad user name or password"), "\(reason)")
        await wrong.stop()
    }
#else
    /// Built without the `TLS` trait, a client of an `mqtts://` broker never connects and says why, once, instead of
    /// retrying for ever (Mosquitto is not needed: nothing is dialled).
    @Test func aTLSBrokerWithoutTheTLSTraitIsRefusedWithTheReason() async throws {
        #expect(!MQTTClient.supportsTLS)
        let client = MQTTClient(broker: MQTTBrokerAddress(host: "127.0.0.1", port: 1, usesTLS: true),
                                configuration: .init(clientID: "no-tls"))
        await client.start()
        var reason: String?
        for await event in client.eventStream {
            if case .connectionLost(let why) = event { reason = why; break }
        }
        #expect(reason?.contains("needs TLS, and this build has none") == true, "\(reason ?? "no event")")
        #expect(await client.connectionCount == 0)
        await client.stop()
    }
#endif

    @Test func brokerAddresses() {
        #expect(MQTTBrokerAddress(url: "mqtt://broker.local") == MQTTBrokerAddress(host: "broker.local", port: 1883))
        #expect(MQTTBrokerAddress(url: "mqtts://10.0.0.2:9000") == MQTTBrokerAddress(host: "10.0.0.2", port: 9000, usesTLS: true))
        #expect(MQTTBrokerAddress(url: "mqtt://[::1]:1884")?.host == "::1")
        #expect(MQTTBrokerAddress(url: "http://x") == nil)
        #expect(MQTTBrokerAddress(url: "mqtt://x:0") == nil)
        #expect(MQTTBrokerAddress(url: "mqtt://:1883") == nil)
    }
}
