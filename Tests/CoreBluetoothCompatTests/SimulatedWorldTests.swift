import CoreBluetoothCompat
import Foundation
import Testing

/// A heart-rate client written as an iOS app writes one: it scans for the Heart Rate service when the radio is on,
/// connects to the first monitor it finds, reads the Body Sensor Location and subscribes to the measurement, and
/// remembers how the link ended.
final class HeartRateClient: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    enum State { case starting, scanning, connecting, connected, disconnected }

    static let heartRateService = CBUUID(string: "180D")
    static let measurement = CBUUID(string: "2A37")
    static let bodySensorLocation = CBUUID(string: "2A38")

    private let lock = NSLock()
    private var _state = State.starting
    private var _location: Data?
    private var _beats: [UInt8] = []
    private var _disconnectError: Error?
    var centralManager: CBCentralManager!
    var monitor: CBPeripheral?

    var state: State { lock.withLock { _state } }
    var location: Data? { lock.withLock { _location } }
    var beats: [UInt8] { lock.withLock { _beats } }
    var disconnectError: Error? { lock.withLock { _disconnectError } }

    func start() {
        centralManager = CBCentralManager(delegate: self, queue: DispatchQueue(label: "heart-rate-client"))
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        guard central.state == .poweredOn else { return }
        lock.withLock { _state = .scanning }
        central.scanForPeripherals(withServices: [Self.heartRateService])
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                        advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard monitor == nil else { return }
        central.stopScan()
        monitor = peripheral
        lock.withLock { _state = .connecting }
        central.connect(peripheral)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        lock.withLock { _state = .connected }
        peripheral.delegate = self
        peripheral.discoverServices([Self.heartRateService])
    }

    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: Error?) {
        lock.withLock {
            _state = .disconnected
            _disconnectError = error
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: Error?) {
        guard let service = peripheral.services?.first(where: { $0.uuid == Self.heartRateService }) else { return }
        peripheral.discoverCharacteristics([Self.measurement, Self.bodySensorLocation], for: service)
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: Error?) {
        for characteristic in service.characteristics ?? [] {
            if characteristic.uuid == Self.bodySensorLocation { peripheral.readValue(for: characteristic) }
            if characteristic.uuid == Self.measurement { peripheral.setNotifyValue(true, for: characteristic) }
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: Error?) {
        guard let value = characteristic.value else { return }
        lock.withLock {
            if characteristic.uuid == Self.bodySensorLocation { _location = value }
            if characteristic.uuid == Self.measurement, value.count >= 2 { _beats.append(value[value.startIndex + 1]) }
        }
    }
}

/// iOS Bluetooth code tested on Linux against a simulated peripheral, on a manual clock: the app's own
/// `CBCentralManager` scans, connects, reads and subscribes through the real stack; the test moves the monitor out of
/// range and the app hears of it at the supervision timeout, 30 s of simulated time, in milliseconds of the test's.
@Suite(.timeLimit(.minutes(1))) struct SimulatedWorldTests {
    static func monitor(supervisionTimeout: Duration? = nil) -> SimulatedPeripheral {
        let service = CBMutableService(type: HeartRateClient.heartRateService, primary: true)
        service.characteristics = [
            CBMutableCharacteristic(type: HeartRateClient.measurement, properties: [.notify], value: nil, permissions: []),
            CBMutableCharacteristic(type: HeartRateClient.bodySensorLocation, properties: [.read], value: Data([0x01]),
                                    permissions: [.readable]),
        ]
        return SimulatedPeripheral(name: "HRM", advertising: [HeartRateClient.heartRateService], services: [service],
                                   supervisionTimeout: supervisionTimeout)
    }

    @Test func theAppConnectsReadsAndHearsNotifications() async throws {
        let world = SimulatedWorld()
        let monitor = Self.monitor()
        try await world.add(monitor)
        try await world.run {
            let app = HeartRateClient()
            app.start()
            #expect(await world.advance(until: { app.location != nil }), "no Body Sensor Location read")
            #expect(app.location == Data([0x01]))
            #expect(app.state == .connected)
            // The app subscribed once a value the monitor sends reaches a central.
            var subscribed = false
            for _ in 0..<100 where !subscribed {
                await world.advance(by: .milliseconds(10))
                subscribed = try await monitor.setValue(Data([0x00, 70]), for: HeartRateClient.measurement) > 0
            }
            #expect(subscribed, "the app never subscribed")
            for beat in [72, 73, 75] as [UInt8] {
                #expect(try await monitor.setValue(Data([0x00, beat]), for: HeartRateClient.measurement) == 1)
            }
            #expect(await world.advance(until: { app.beats.suffix(3) == [72, 73, 75] }))
        }
    }

    @Test func aMonitorOutOfRangeIsLostAtItsThirtySecondSupervisionTimeout() async throws {
        let world = SimulatedWorld()
        let monitor = Self.monitor(supervisionTimeout: .seconds(30))
        try await world.add(monitor)
        await world.run {
            let app = HeartRateClient()
            app.start()
            #expect(await world.advance(until: { app.location != nil }), "no Body Sensor Location read")
            #expect(await world.advance(until: { monitor.connectionParameterUpdates == 1 }), "the 30 s timeout was not taken")
            monitor.move(toDistance: 100_000)
            let outOfRangeAt = world.now
            // Not a moment before the supervision timeout (the controllers decide on the air's time alone), and then
            // the app hears of it, with Connection Timeout.
            await world.advance(by: .milliseconds(29_900), step: .milliseconds(100))
            #expect(app.state == .connected, "lost before its supervision timeout")
            #expect(await world.advance(until: { app.state == .disconnected }, limit: .seconds(60), step: .milliseconds(100)))
            #expect(world.now - outOfRangeAt >= .seconds(30))
            #expect((app.disconnectError as? CBError)?.code == .connectionTimeout)
        }
    }

    @Test func aMonitorPowerCycledIsFoundAgainWithTheSameServices() async throws {
        let world = SimulatedWorld()
        let monitor = Self.monitor()
        try await world.add(monitor)
        await world.run {
            let app = HeartRateClient()
            app.start()
            #expect(await world.advance(until: { app.location != nil }), "no Body Sensor Location read")
            await monitor.powerOff()
            #expect(await world.advance(until: { app.state == .disconnected }), "the app did not hear of the power-off")
            await #expect(throws: Never.self) { try await monitor.powerOn() }
            // Another app finds it again, and its database is the one it had: one Heart Rate service, the same value.
            let again = HeartRateClient()
            again.start()
            #expect(await world.advance(until: { again.location != nil }), "not found again after the power cycle")
            #expect(again.location == Data([0x01]))
            #expect(again.monitor?.services?.filter { $0.uuid == HeartRateClient.heartRateService }.count == 1)
        }
    }
}

/// An app class as iOS code is often written: on the main actor, its manager delivering on the main queue
/// (`queue: nil`), its state plain properties (not `Sendable`).
@MainActor final class MainActorScanner: NSObject, @preconcurrency CBCentralManagerDelegate {
    var manager: CBCentralManager?
    var names: [String] = []
    var poweredOn = false

    func start() { manager = CBCentralManager(delegate: self, queue: nil) }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        poweredOn = central.state == .poweredOn
        if poweredOn { central.scanForPeripherals(withServices: [HeartRateClient.heartRateService]) }
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any],
                        rssi RSSI: NSNumber) {
        if let name = peripheral.name, !names.contains(name) { names.append(name) }
    }
}

@Suite struct SimulatedWorldMainActorTests {
    /// A test on the main actor drives a main-actor app whose delegate runs on the main queue: `run` and
    /// `advance(until:)` run on the caller's actor, so the condition reads the app's state directly, and the main
    /// queue delivers the callbacks while the test waits.
    @MainActor @Test func aMainActorAppOnTheMainQueueIsDrivenFromTheMainActor() async throws {
        let world = SimulatedWorld()
        try await world.add(SimulatedPeripheral(name: "HRM", advertising: [HeartRateClient.heartRateService]))
        let app = MainActorScanner()
        await world.run {
            app.start()
            #expect(await world.advance(until: { app.names.contains("HRM") }, limit: .seconds(10)))
            #expect(app.poweredOn)
        }
    }
}
