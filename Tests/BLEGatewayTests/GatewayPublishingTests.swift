import BLE
import BLEGateway
import BLEHost
import BLEVirtualController
import MQTT
import MQTTTestSupport
import Testing

/// A gateway in this process, on a virtual air with one advertiser, publishing to a Mosquitto of its own: what it
/// gathers waits for the publish delay, and nothing gathered is lost when it stops.
@Suite(.serialized, .timeLimit(.minutes(1)), .enabled(if: Mosquitto.path != nil, "needs mosquitto (scripts/test installs it)"))
struct GatewayPublishingTests {
    func waitFor(_ seconds: Double, _ probe: @Sendable () async -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if await probe() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return await probe()
    }

    @Test func gatheredRecordsWaitForTheDelayAndShutdownSendsThemBeforeOffline() async throws {
        let broker = try Mosquitto()
        try broker.start()
        let address = MQTTBrokerAddress(host: "127.0.0.1", port: broker.port)
        let observer = MQTTClient(broker: address, configuration: .init(clientID: "observer"))
        let inbox = await MQTTInbox.listening(to: observer)
        #expect(await observer.waitUntilConnected(timeout: .seconds(5)))
        try await observer.subscribe([("swift-ble/#", .atLeastOnce)])

        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let beacon = try await PeripheralManager(transport: air.addController().makeHostTransport())
        try await beacon.startAdvertising(Advertisement(data: AdvertisingData(localName: "Gathered"), interval: .milliseconds(50), kind: .nonConnectable))
        let central = try await Central(transport: air.addController(.init(position: Position(x: 2))).makeHostTransport())
        let gateway = Gateway(central: central, configuration: .init(topics: GatewayTopics(gatewayID: "gw"), broker: address,
                                                                     homeAssistant: false, connect: .none, publishDelay: .seconds(30)))
        let running = Task { try await gateway.run() }
        defer { running.cancel() }
        let isRecord: @Sendable (MQTTMessage) -> Bool = { $0.topic.hasPrefix("swift-ble/gw/devices/") }
        let isView: @Sendable (MQTTMessage) -> Bool = { $0.topic.hasPrefix("swift-ble/gw/rssi/") }
        let isOffline: @Sendable (MQTTMessage) -> Bool = { $0.topic == "swift-ble/gw/status" && $0.payload == Array("offline".utf8) }

        // Heard and counted, but within the delay nothing of it reaches the broker.
        #expect(await waitFor(10) {
            let counted = await gateway.readings > 0
            let online = await inbox.index { $0.topic == "swift-ble/gw/status" } != nil
            return counted && online
        })
        try await Task.sleep(for: .milliseconds(500))
        let early = await inbox.count(where: isRecord) + inbox.count(where: isView)
        #expect(early == 0, "gathered, not sent")

        // Stopping sends what was gathered, before the final counters and offline.
        await gateway.shutdown()
        let readings = await gateway.readings
        #expect(await waitFor(5) { await inbox.index(where: isOffline) != nil })
        let firstRecord = await inbox.index(where: isRecord), offline = await inbox.index(where: isOffline)
        #expect(firstRecord != nil && offline != nil && (firstRecord ?? .max) < (offline ?? .min), "the record before offline")
        #expect(await inbox.count(where: isRecord) == Int(readings), "every record counted was published: \(readings)")
        #expect(await inbox.count(where: isView) >= 1, "the view too")
        await observer.stop()
    }
}
