import CoreBluetoothCompat
import Foundation
import Synchronization
import Testing

/// An iOS-style central the test drives step by step: it connects to the first peripheral advertising `service`,
/// discovers everything, and logs every callback as a line; the test asks it to read, write, subscribe, disconnect and
/// connect (each on its delegate queue, as an app's button would).
final class ScriptedCentral: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    let service: CBUUID
    let queue = DispatchQueue(label: "scripted central")
    private let lock = NSLock()
    private var _log: [String] = []
    private var manager: CBCentralManager!
    private var device: CBPeripheral?

    init(service: CBUUID) {
        self.service = service
        super.init()
        manager = CBCentralManager(delegate: self, queue: queue)
    }

    /// Every callback so far, one line each.
    var log: [String] { lock.withLock { _log } }
    /// How many times `line` was logged.
    func count(_ line: String) -> Int { log.filter { $0 == line }.count }

    private func record(_ line: String) { lock.withLock { _log.append(line) } }

    static func describe(_ error: Error?) -> String {
        switch error {
        case nil: "nil"
        case let error as CBATTError: "\(error.code)"
        case let error as CBError: "\(error.code)"
        case let error?: "\(error)"
        }
    }

    private func characteristic(_ uuid: CBUUID) -> CBCharacteristic? {
        device?.services?.lazy.compactMap { $0.characteristics?.first { $0.uuid == uuid } }.first
    }

    func read(_ uuid: CBUUID) {
        queue.async { self.characteristic(uuid).map { self.device?.readValue(for: $0) } }
    }

    func write(_ value: Data, to uuid: CBUUID) {
        queue.async { self.characteristic(uuid).map { self.device?.writeValue(value, for: $0, type: .withResponse) } }
    }

    func subscribe(_ uuid: CBUUID, _ on: Bool) {
        queue.async { self.characteristic(uuid).map { self.device?.setNotifyValue(on, for: $0) } }
    }

    func disconnect() {
        queue.async { self.device.map { self.manager.cancelPeripheralConnection($0) } }
    }

    func connect() {
        queue.async { self.device.map { self.manager.connect($0) } }
    }

    /// The longest write without response to the peripheral (called off the delegate queue).
    func maximumWriteWithoutResponse() -> Int {
        queue.sync { device?.maximumWriteValueLength(for: .withoutResponse) ?? 0 }
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        record("state \(central.state.rawValue)")
        if central.state == .poweredOn, device == nil { central.scanForPeripherals(withServices: [service]) }
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                        advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard device == nil else { return }
        device = peripheral
        central.stopScan()
        central.connect(peripheral)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        record("connected")
        peripheral.delegate = self
        peripheral.discoverServices(nil)
    }

    func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: Error?) {
        record("failed \(Self.describe(error))")
    }

    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: Error?) {
        record("disconnected \(Self.describe(error))")
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: Error?) {
        let services = peripheral.services ?? []
        record("services \(services.map(\.uuid.uuidString).joined(separator: ","))")
        for service in services { peripheral.discoverCharacteristics(nil, for: service) }
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: Error?) {
        record("discovered \(service.uuid.uuidString): \((service.characteristics ?? []).map(\.uuid.uuidString).joined(separator: ","))")
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: Error?) {
        if let error {
            record("read \(characteristic.uuid.uuidString) error \(Self.describe(error))")
        } else {
            record("read \(characteristic.uuid.uuidString) \((characteristic.value ?? Data()).map { String(format: "%02X", $0) }.joined())")
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: Error?) {
        record(error == nil ? "wrote \(characteristic.uuid.uuidString)" : "wrote \(characteristic.uuid.uuidString) error \(Self.describe(error))")
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: Error?) {
        record("notifying \(characteristic.uuid.uuidString) \(characteristic.isNotifying) \(Self.describe(error))")
    }

    func peripheral(_ peripheral: CBPeripheral, didModifyServices invalidatedServices: [CBService]) {
        record("modified: \(invalidatedServices.map(\.uuid.uuidString).joined(separator: ","))")
        peripheral.discoverServices(nil)
    }
}

/// The simulated peripheral's scripted side (issue 35, item 4): what reads, writes and subscriptions answer,
/// security on characteristics and a bond the peripheral forgets, its MTU and connection interval, Service Changed,
/// and the phone's Bluetooth switched off and on — each seen by iOS-style delegate code through the real stack.
@Suite(.timeLimit(.minutes(1))) struct SimulatedPeripheralTests {
    static let gadget = CBUUID(string: "FFF0")
    static let counter = CBUUID(string: "FF01")
    static let control = CBUUID(string: "FF02")

    static func gadgetService() -> CBMutableService {
        let service = CBMutableService(type: gadget, primary: true)
        service.characteristics = [
            CBMutableCharacteristic(type: counter, properties: [.read, .notify], value: nil, permissions: [.readable]),
            CBMutableCharacteristic(type: control, properties: [.read, .write], value: Data([0]), permissions: [.readable, .writeable]),
        ]
        return service
    }

    @Test func readsWritesAndSubscriptionsAreAnsweredByTheTestsClosures() async throws {
        let world = SimulatedWorld()
        let device = SimulatedPeripheral(name: "Gadget", advertising: [Self.gadget], services: [Self.gadgetService()])
        let reads = Mutex(0)
        device.onRead(Self.counter) { _ in .success(Data([reads.withLock { $0 += 1; return UInt8($0) }])) }
        device.onWrite(Self.control) { _, value in value.count == 1 ? .success(()) : .failure(CBATTError(.invalidAttributeValueLength)) }
        let subscriptions = Mutex<[Bool]>([])
        device.onSubscribe(Self.counter) { _, on in subscriptions.withLock { $0.append(on) } }
        try await world.add(device)
        try await world.run {
            let app = ScriptedCentral(service: Self.gadget)
            #expect(await world.advance(until: { app.count("discovered FFF0: FF01,FF02") == 1 }))
            app.read(Self.counter)
            #expect(await world.advance(until: { app.count("read FF01 01") == 1 }))
            app.read(Self.counter)
            #expect(await world.advance(until: { app.count("read FF01 02") == 1 }))

            // A write the closure accepts becomes the value; one it refuses reaches the app as its ATT error.
            app.write(Data([7]), to: Self.control)
            #expect(await world.advance(until: { app.count("wrote FF02") == 1 }))
            #expect(device.value(of: Self.control) == Data([7]))
            app.read(Self.control)
            #expect(await world.advance(until: { app.count("read FF02 07") == 1 }))
            app.write(Data([1, 2]), to: Self.control)
            #expect(await world.advance(until: { app.count("wrote FF02 error invalidAttributeValueLength") == 1 }))
            #expect(device.value(of: Self.control) == Data([7]))

            app.subscribe(Self.counter, true)
            #expect(await world.advance(until: { app.count("notifying FF01 true nil") == 1 && subscriptions.withLock { $0 } == [true] }))
            let sent = try await device.setValue(Data([9]), for: Self.counter)
            #expect(sent == 1)
            #expect(await world.advance(until: { app.count("read FF01 09") == 1 }))
            app.subscribe(Self.counter, false)
            #expect(await world.advance(until: { subscriptions.withLock { $0 } == [true, false] }))

            // The test changes its mind: reads now fail, and the app's didUpdateValueFor gets the CBATTError.
            device.onRead(Self.counter) { _ in .failure(CBATTError(.insufficientResources)) }
            app.read(Self.counter)
            #expect(await world.advance(until: { app.count("read FF01 error insufficientResources") == 1 }))
            #expect(reads.withLock { $0 } == 2)
        }
    }

    @Test func bluetoothSwitchedOffEndsTheLinksAndOnLetsTheAppConnectAgain() async throws {
        let world = SimulatedWorld()
        let device = SimulatedPeripheral(name: "Gadget", advertising: [Self.gadget], services: [Self.gadgetService()])
        try await world.add(device)
        try await world.run { () async throws in
            let app = ScriptedCentral(service: Self.gadget)
            #expect(await world.advance(until: { app.count("discovered FFF0: FF01,FF02") == 1 }))

            await world.turnBluetoothOff()
            #expect(!world.isBluetoothOn)
            #expect(await world.advance(until: { app.count("disconnected peripheralDisconnected") == 1 }))
            // The state first, then the link.
            let off = try #require(app.log.firstIndex(of: "state 4"))
            #expect(app.log.firstIndex(of: "disconnected peripheralDisconnected").map { $0 > off } == true)

            // Connecting while Bluetooth is off is ignored, as on iOS.
            app.connect()
            await world.advance(by: .seconds(2))
            #expect(app.count("connected") == 1)

            await world.turnBluetoothOn()
            #expect(await world.advance(until: { app.log.last == "state 5" }))
            app.connect()
            #expect(await world.advance(until: { app.count("discovered FFF0: FF01,FF02") == 2 }))
            #expect(app.count("connected") == 2)
        }
    }

    @Test func anEncryptedCharacteristicMakesTheAppPairAndAnAuthenticatedOneFailsWithJustWorks() async throws {
        let secure = CBUUID(string: "5EC0")
        let secret = CBUUID(string: "5EC1")
        let pin = CBUUID(string: "5EC2")
        let service = CBMutableService(type: secure, primary: true)
        service.characteristics = [
            CBMutableCharacteristic(type: secret, properties: [.read], value: Data("secret".utf8), permissions: [.readEncryptionRequired]),
            CBMutableCharacteristic(type: pin, properties: [.read], value: Data([1, 2, 3, 4]), permissions: [.readable]),
        ]
        let world = SimulatedWorld()
        let device = SimulatedPeripheral(name: "Lock", advertising: [secure], services: [service], requiringAuthentication: [pin])
        try await world.add(device)
        await world.run {
            let app = ScriptedCentral(service: secure)
            #expect(await world.advance(until: { app.count("discovered 5EC0: 5EC1,5EC2") == 1 }))
            // The peripheral refuses for lack of encryption; the central pairs (Just Works) and reads again, as iOS.
            app.read(secret)
            #expect(await world.advance(until: { app.log.contains { $0.hasPrefix("read 5EC1") } }))
            #expect(app.count("read 5EC1 736563726574") == 1)
            // Just Works gives no authentication: the read of the authenticated characteristic fails.
            app.read(pin)
            #expect(await world.advance(until: { app.log.contains { $0.hasPrefix("read 5EC2") } }))
            #expect(app.count("read 5EC2 error insufficientAuthentication") == 1)
        }
    }

    @Test func aBondThePeripheralForgets() async throws {
        let secure = CBUUID(string: "5EC0")
        let secret = CBUUID(string: "5EC1")
        let service = CBMutableService(type: secure, primary: true)
        service.characteristics = [
            CBMutableCharacteristic(type: secret, properties: [.read], value: Data("secret".utf8), permissions: [.readEncryptionRequired]),
        ]
        let world = SimulatedWorld()
        let device = SimulatedPeripheral(name: "Lock", advertising: [secure], services: [service])
        try await world.add(device)
        try await world.run { () async throws in
            let app = ScriptedCentral(service: secure)
            #expect(await world.advance(until: { app.count("discovered 5EC0: 5EC1") == 1 }))
            app.read(secret)
            #expect(await world.advance(until: { app.count("read 5EC1 736563726574") == 1 }), "\(app.log)")
            app.disconnect()
            #expect(await world.advance(until: { app.count("disconnected nil") == 1 }))

            // The lock is reset to factory settings; the app, still bonded, connects and reads again.
            #expect(try await device.forgetBonds() == 1)
            app.connect()
            #expect(await world.advance(until: { app.count("discovered 5EC0: 5EC1") == 2 }))
            // The central encrypts with its key, the lock has none (PIN or Key Missing), and the read fails with
            // CBError.peerRemovedPairingInformation, as on iOS.
            app.read(secret)
            #expect(await world.advance(until: { app.log.filter { $0.hasPrefix("read 5EC1") }.count == 2 }))
            #expect(app.log.last == "read 5EC1 error peerRemovedPairingInformation")
        }
    }

    @Test func thePeripheralsMTUAndConnectionIntervalAreWhatTheAppGets() async throws {
        let world = SimulatedWorld(connectionEvents: true)
        let device = SimulatedPeripheral(name: "Gadget", advertising: [Self.gadget], services: [Self.gadgetService()],
                                         connectionInterval: .milliseconds(100), preferredMTU: 100)
        try await world.add(device)
        await world.run {
            let app = ScriptedCentral(service: Self.gadget)
            #expect(await world.advance(until: { app.count("discovered FFF0: FF01,FF02") == 1 }))
            #expect(await world.advance(until: { device.connectionParameterUpdates == 1 }))
            #expect(device.lastConnectionInterval == .milliseconds(100))
            // ATT_MTU 100 (the smaller of the two offers): 97 bytes in a write without response.
            #expect(await world.advance(until: { app.maximumWriteWithoutResponse() == 97 }))
            // Each read waits for a connection event and its answer for a later one, 100 ms apart: five reads take at
            // least four intervals (a central's default interval, 30 to 50 ms, would take less).
            let start = world.now
            for n in 1...5 {
                app.read(Self.control)
                #expect(await world.advance(until: { app.count("read FF02 00") == n }, step: .milliseconds(5)))
            }
            #expect(world.now - start >= .milliseconds(400))
        }
    }

    @Test func servicesAddedAndRemovedReachTheAppAsDidModifyServices() async throws {
        let battery = CBMutableService(type: CBUUID(string: "180F"), primary: true)
        battery.characteristics = [
            CBMutableCharacteristic(type: CBUUID(string: "2A19"), properties: [.read], value: Data([99]), permissions: [.readable]),
        ]
        let world = SimulatedWorld()
        let device = SimulatedPeripheral(name: "Gadget", advertising: [Self.gadget], services: [Self.gadgetService()])
        let serviceChanged = Mutex(false)
        device.onSubscribe(CBUUID(string: "2A05")) { _, on in serviceChanged.withLock { $0 = on } }
        try await world.add(device)
        try await world.run { () async throws in
            let app = ScriptedCentral(service: Self.gadget)
            #expect(await world.advance(until: { app.count("discovered FFF0: FF01,FF02") == 1 }))
            // iOS subscribes to Service Changed by itself.
            #expect(await world.advance(until: { serviceChanged.withLock { $0 } }))

            // An added service invalidates none of those the app has; it finds the new one when it discovers again.
            try await device.addService(battery)
            #expect(await world.advance(until: { app.count("discovered 180F: 2A19") == 1 }))
            #expect(app.count("modified: ") == 1)
            #expect(app.count("services 1800,1801,FFF0,180F") == 1)
            // A removed service is among the invalidated ones, and gone after the next discovery.
            try await device.removeService(CBUUID(string: "180F"))
            #expect(await world.advance(until: { app.count("modified: 180F") == 1 && app.count("services 1800,1801,FFF0") == 2 }))
        }
    }

    /// A delegate queue nobody runs keeps the world from settling: it slows the steps down, it does not stop them.
    @Test func aWorldThatNeverSettlesStillMoves() async throws {
        final class Waiting: NSObject, CBCentralManagerDelegate {
            let lock = NSLock()
            var updates = 0
            func centralManagerDidUpdateState(_ central: CBCentralManager) { lock.withLock { updates += 1 } }
        }
        let world = SimulatedWorld()
        await world.run {
            let queue = DispatchQueue(label: "suspended")
            queue.suspend()
            let delegate = Waiting()
            let manager = CBCentralManager(delegate: delegate, queue: queue)
            let start = ContinuousClock.now
            await world.advance(by: .seconds(2))
            #expect(ContinuousClock.now - start < .seconds(20))
            #expect(world.now == .seconds(2))
            #expect(delegate.lock.withLock { delegate.updates } == 0)
            queue.resume()
            #expect(await world.advance(until: { delegate.lock.withLock { delegate.updates } == 1 }))
            withExtendedLifetime(manager) {}
        }
    }
}
