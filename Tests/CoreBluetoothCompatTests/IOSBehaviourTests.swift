import BLE
@testable import CoreBluetoothCompat
import Foundation
import Synchronization
import Testing

// iOS's documented behaviours, checked one by one through the real stack: a CoreBluetooth central (delegate API) on
// one virtual controller, a peripheral (CoreBluetooth's or the async API's) on another, on the embedded air.

/// A peripheral-manager delegate that serves one dynamic characteristic and answers each read and write with the code
/// the test sets (`.success` serves `value` and accepts writes).
final class AnsweringPeripheral: NSObject, CBPeripheralManagerDelegate, @unchecked Sendable {
    let log: AsyncStream<String>.Continuation
    var manager: CBPeripheralManager!
    let serviceUUID = CBUUID(nsuuid: UUID())
    let characteristic = CBMutableCharacteristic(type: CBUUID(string: "A0B1C2D3-0000-1000-8000-0000000000A1"),
                                                 properties: [.read, .write, .notify], value: nil, permissions: [.readable, .writeable])
    let name = "Answering \(UInt16.random(in: 1000...9999))"
    private let answers = Mutex<(read: CBATTError.Code, write: CBATTError.Code)>((.success, .success))
    let value = Data("iOS".utf8)

    /// The codes the next reads and writes are answered with.
    func answer(reads read: CBATTError.Code, writes write: CBATTError.Code) { answers.withLock { $0 = (read, write) } }

    init(queue: DispatchQueue, log: AsyncStream<String>.Continuation) {
        self.log = log
        super.init()
        manager = CBPeripheralManager(delegate: self, queue: queue)
    }

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        guard peripheral.state == .poweredOn else { return }
        let service = CBMutableService(type: serviceUUID, primary: true)
        service.characteristics = [characteristic]
        peripheral.add(service)
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didAdd service: CBService, error: Error?) {
        log.yield("added \(error.map { "\($0)" } ?? "ok")")
        peripheral.startAdvertising([CBAdvertisementDataLocalNameKey: name, CBAdvertisementDataServiceUUIDsKey: [serviceUUID]])
    }

    func peripheralManagerDidStartAdvertising(_ peripheral: CBPeripheralManager, error: Error?) {
        log.yield("advertising \(error.map { "\($0)" } ?? "ok")")
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didSubscribeTo characteristic: CBCharacteristic) {
        log.yield("subscribed")
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveRead request: CBATTRequest) {
        let code = answers.withLock { $0.read }
        if code == .success { request.value = value.subdata(in: min(request.offset, value.count)..<value.count) }
        peripheral.respond(to: request, withResult: code)
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveWrite requests: [CBATTRequest]) {
        guard let first = requests.first else { return }
        peripheral.respond(to: first, withResult: answers.withLock { $0.write })
    }
}

/// A CoreBluetooth central written as an iOS app is: it finds the service, connects, discovers, reads, writes and
/// subscribes, and logs each callback with whether it ran on the queue its manager was given.
final class QueueCheckingCentral: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    static let queueKey = DispatchSpecificKey<String>()
    let queue: DispatchQueue
    let log: AsyncStream<String>.Continuation
    let service: CBUUID
    var manager: CBCentralManager!
    var peripheral: CBPeripheral?
    var characteristic: CBCharacteristic?

    init(service: CBUUID, log: AsyncStream<String>.Continuation) {
        self.service = service
        self.log = log
        queue = DispatchQueue(label: "the app's Bluetooth queue")
        queue.setSpecific(key: Self.queueKey, value: "app")
        super.init()
        manager = CBCentralManager(delegate: self, queue: queue)
    }

    /// Logs `line`, marked `!` when it did not run on the manager's queue.
    func note(_ line: String) {
        log.yield(DispatchQueue.getSpecific(key: Self.queueKey) == "app" ? line : "! \(line)")
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        note("state \(central.state.rawValue)")
        if central.state == .poweredOn { central.scanForPeripherals(withServices: [service]) }
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard self.peripheral == nil else { return }
        // iOS's keys and value types: the name a String, the services [CBUUID], connectable an NSNumber, RSSI in dBm.
        // (A name that only the scan response carries may come in a second discovery, as on iOS.)
        let named = advertisementData[CBAdvertisementDataLocalNameKey].map { $0 is String } ?? true
        let services = (advertisementData[CBAdvertisementDataServiceUUIDsKey] as? [CBUUID])?.contains(service) == true
        let connectable = (advertisementData[CBAdvertisementDataIsConnectable] as? NSNumber)?.boolValue == true
        let rssi = (-127...20).contains(RSSI.intValue)
        note("discovered \(peripheral.state.rawValue)\(named && services && connectable && rssi ? "" : " advertisement \(advertisementData) rssi \(RSSI)")")
        self.peripheral = peripheral
        central.stopScan()
        central.connect(peripheral)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        note("connected \(peripheral.state.rawValue) services \(peripheral.services == nil ? "nil" : "known")")
        peripheral.delegate = self
        peripheral.discoverServices([service])
    }

    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: Error?) {
        note("disconnected \(peripheral.state.rawValue) \(error.map { "\(($0 as? CBError)?.code.rawValue ?? -1)" } ?? "nil")")
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: Error?) {
        note("services \(peripheral.services?.map(\.uuid) == [service])")
        guard let found = peripheral.services?.first else { return }
        peripheral.discoverCharacteristics(nil, for: found)
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: Error?) {
        note("characteristics \(service.characteristics?.count ?? 0)")
        characteristic = service.characteristics?.first
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: Error?) {
        if let error {
            note("read error \(type(of: error)) \((error as NSError).domain) \((error as NSError).code)")
        } else {
            note("value \(String(decoding: characteristic.value ?? Data(), as: UTF8.self))")
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: Error?) {
        if let error {
            note("write error \(type(of: error)) \((error as NSError).domain) \((error as NSError).code)")
        } else {
            note("written")
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: Error?) {
        note("notifying \(characteristic.isNotifying) \(error == nil)")
    }

    /// Runs `body` on the manager's queue, as the app's own code runs.
    func onQueue(_ body: @escaping @Sendable (QueueCheckingCentral) -> Void) {
        queue.async { body(self) }
    }
}

@Suite struct IOSBehaviourTests {
    /// Starts an answering peripheral and a queue-checking central that connects to it and discovers its one
    /// characteristic; checks iOS's order of callbacks on the way.
    static func connected(_ centralLog: AsyncStream<String>.Continuation, _ centralLines: LineQueue)
        async throws -> (AnsweringPeripheral, QueueCheckingCentral, LineQueue) {
        let (peripheralStream, peripheralLog) = AsyncStream.makeStream(of: String.self)
        let peripheralLines = LineQueue(peripheralStream)
        let peripheral = AnsweringPeripheral(queue: DispatchQueue(label: "answering peripheral"), log: peripheralLog)
        #expect(await peripheralLines.next() == "added ok")
        #expect(await peripheralLines.next() == "advertising ok")
        let central = QueueCheckingCentral(service: peripheral.serviceUUID, log: centralLog)
        // iOS: the state first; discovery while disconnected (0); didConnect with the peripheral connected (2) and
        // no services known, before any discovery callback; then services and characteristics, in that order.
        #expect(await centralLines.next() == "state 5")
        let discovered = await centralLines.next()
        #expect(discovered == "discovered 0", "\(discovered ?? "nothing")")
        #expect(await centralLines.next(timeout: .seconds(20)) == "connected 2 services nil")
        #expect(await centralLines.next() == "services true")
        #expect(await centralLines.next() == "characteristics 1")
        return (peripheral, central, peripheralLines)
    }

    @Test("Every delegate call runs on the manager's queue, in iOS's order, and a local cancel disconnects without an error")
    func delegateCallsRunOnTheManagersQueueInIOSOrder() async throws {
        let (stream, log) = AsyncStream.makeStream(of: String.self)
        let lines = LineQueue(stream)
        let (peripheral, central, peripheralLines) = try await Self.connected(log, lines)
        central.onQueue { app in
            guard let target = app.peripheral, let characteristic = app.characteristic else { return }
            target.readValue(for: characteristic)
            target.writeValue(Data([1]), for: characteristic, type: .withResponse)
            target.setNotifyValue(true, for: characteristic)
        }
        // Requests are answered in the order they were made.
        #expect(await lines.next() == "value iOS")
        #expect(await lines.next() == "written")
        #expect(await lines.next() == "notifying true true")
        #expect(await peripheralLines.next() == "subscribed")
        #expect(peripheral.manager.updateValue(Data("note".utf8), for: peripheral.characteristic, onSubscribedCentrals: nil))
        #expect(await lines.next() == "value note")
        // iOS: cancelPeripheralConnection is answered by didDisconnectPeripheral with a nil error, the peripheral
        // disconnected (0).
        central.onQueue { app in
            guard let target = app.peripheral else { return }
            app.manager.cancelPeripheralConnection(target)
        }
        #expect(await lines.next() == "disconnected 0 nil")
        withExtendedLifetime((peripheral, central)) {}
    }

    /// The ATT errors a peripheral answers with, as the central's app receives them: a `CBATTError` in
    /// `CBATTErrorDomain` with the code sent. (Insufficient Authentication, Insufficient Encryption and Encryption Key
    /// Size Too Short are not in the list: as on iOS, the central pairs on them and asks again; `SecurityTests`
    /// covers that path.)
    static let refusals: [CBATTError.Code] = [
        .invalidHandle, .readNotPermitted, .writeNotPermitted, .requestNotSupported, .invalidOffset, .insufficientAuthorization,
        .prepareQueueFull, .attributeNotFound, .attributeNotLong, .invalidAttributeValueLength, .unlikelyError,
        .unsupportedGroupType, .insufficientResources,
    ]

    @Test("Each ATT error a peripheral answers reaches the app as the CBATTError iOS raises, code by code, reads and writes")
    func eachATTErrorReachesTheAppAsTheCBATTErrorIOSRaises() async throws {
        let (stream, log) = AsyncStream.makeStream(of: String.self)
        let lines = LineQueue(stream)
        let (peripheral, central, _) = try await Self.connected(log, lines)
        for code in Self.refusals + [CBATTError.Code(rawValue: 0x80)].compactMap({ $0 }) {
            peripheral.answer(reads: code, writes: code)
            central.onQueue { app in
                guard let target = app.peripheral, let characteristic = app.characteristic else { return }
                target.readValue(for: characteristic)
                target.writeValue(Data([2]), for: characteristic, type: .withResponse)
            }
            #expect(await lines.next() == "read error CBATTError CBATTErrorDomain \(code.rawValue)", "read refused with \(code)")
            #expect(await lines.next() == "write error CBATTError CBATTErrorDomain \(code.rawValue)", "write refused with \(code)")
        }
        // The link survives every refusal.
        peripheral.answer(reads: .success, writes: .success)
        central.onQueue { app in
            guard let target = app.peripheral, let characteristic = app.characteristic else { return }
            target.readValue(for: characteristic)
        }
        #expect(await lines.next() == "value iOS")
        withExtendedLifetime((peripheral, central)) {}
    }

    @Test("A peripheral that ends the link: didDisconnectPeripheral with CBError.peripheralDisconnected (7)")
    func aPeripheralEndingTheLinkIsPeripheralDisconnected() async throws {
        let (stream, log) = AsyncStream.makeStream(of: String.self)
        let lines = LineQueue(stream)
        let advertised = CBUUID(nsuuid: UUID())
        let serviceUUID = advertised.bluetoothUUID
        let server = try await PeripheralManager(.virtual)
        _ = try await server.add(GATTServiceDefinition(uuid: serviceUUID, characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0x2A29), properties: [.read], permissions: [.readable], value: [1]),
        ]))
        let events = await server.centralEvents()
        try await server.startAdvertising(name: "Ending", serviceUUIDs: [serviceUUID])
        let central = QueueCheckingCentral(service: advertised, log: log)
        #expect(await lines.next() == "state 5")
        #expect(await lines.next() == "discovered 0")
        #expect(await lines.next(timeout: .seconds(20)) == "connected 2 services nil")
        var connection: HostConnection?
        for await event in events {
            if case .connected(let link) = event {
                connection = link
                break
            }
        }
        let link = try #require(connection)
        _ = try await server.disconnect(link)
        var disconnected = await lines.next()
        // Discovery may have answered before the link went down.
        while let line = disconnected, line.hasPrefix("services") || line.hasPrefix("characteristics") { disconnected = await lines.next() }
        #expect(disconnected == "disconnected 0 \(CBError.Code.peripheralDisconnected.rawValue)")
        withExtendedLifetime((server, central)) {}
    }

    @Test("A peripheral's identifier is the same for every manager and every run; retrievePeripherals(withIdentifiers:) finds it")
    func theIdentifierIsTheSameInEveryRun() async throws {
        let (peripheralStream, peripheralLog) = AsyncStream.makeStream(of: String.self)
        let peripheralLines = LineQueue(peripheralStream)
        let peripheral = AnsweringPeripheral(queue: DispatchQueue(label: "answering peripheral"), log: peripheralLog)
        #expect(await peripheralLines.next() == "added ok")
        #expect(await peripheralLines.next() == "advertising ok")
        var identifiers: [UUID] = []
        for _ in 0..<2 {
            let (stream, log) = AsyncStream.makeStream(of: String.self)
            let lines = LineQueue(stream)
            let central = QueueCheckingCentral(service: peripheral.serviceUUID, log: log)
            #expect(await lines.next() == "state 5")
            #expect(await lines.next() == "discovered 0")
            #expect(await lines.next(timeout: .seconds(20)) == "connected 2 services nil")
            let identifier = try #require(central.queue.sync { central.peripheral?.identifier })
            identifiers.append(identifier)
            central.onQueue { app in
                guard let target = app.peripheral else { return }
                app.manager.cancelPeripheralConnection(target)
            }
            var line = await lines.next()
            while let current = line, !current.hasPrefix("disconnected") { line = await lines.next() }
            #expect(line == "disconnected 0 nil")
        }
        #expect(identifiers.count == 2 && identifiers[0] == identifiers[1])
        // A third run that knows only the identifier it stored connects without scanning.
        let (stream, log) = AsyncStream.makeStream(of: String.self)
        let lines = LineQueue(stream)
        let retriever = RetrievingCentral(identifier: identifiers[0], log: log)
        #expect(await lines.next(timeout: .seconds(20)) == "connected \(identifiers[0].uuidString)")
        withExtendedLifetime((peripheral, retriever)) {}
    }

    @Test("A bonded device behind a new private address is the same CBPeripheral, with the same identifier, and is reached there")
    func aBondedPrivateDeviceKeepsItsPeripheralAndIdentifier() async throws {
        let (stream, log) = AsyncStream.makeStream(of: String.self)
        let lines = LineQueue(stream)
        let interval = Duration.seconds(4)
        let server = try await PeripheralManager(.virtual, deviceName: "Private",
                                                 security: SecurityConfiguration(privacy: true, privateAddressInterval: interval))
        let advertised = CBUUID(nsuuid: UUID())
        _ = try await server.add(GATTServiceDefinition(uuid: advertised.bluetoothUUID, characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0x2A29), properties: [.read], permissions: [.readable, .readEncryptionRequired],
                                         value: Array("sealed".utf8)),
        ]))
        let started = ContinuousClock.now
        try await server.startAdvertising(serviceUUIDs: [advertised.bluetoothUUID], restartAfterConnection: true)
        let central = QueueCheckingCentral(service: advertised, log: log)
        #expect(await lines.next() == "state 5")
        #expect(await lines.next() == "discovered 0")
        #expect(await lines.next(timeout: .seconds(20)) == "connected 2 services nil")
        #expect(await lines.next() == "services true")
        #expect(await lines.next() == "characteristics 1")
        // The value needs encryption: the central pairs (and bonds) on the refusal, as iOS does, and reads it.
        central.onQueue { app in
            guard let target = app.peripheral, let characteristic = app.characteristic else { return }
            target.readValue(for: characteristic)
        }
        #expect(await lines.next(timeout: .seconds(20)) == "value sealed")
        let (first, firstAddress) = try #require(central.queue.sync { central.peripheral.map { ($0, $0.address) } })
        #expect(firstAddress.kind == .randomResolvable)
        central.onQueue { app in
            guard let target = app.peripheral else { return }
            app.manager.cancelPeripheralConnection(target)
        }
        #expect(await lines.next() == "disconnected 0 nil")
        // After its next rotation the device advertises from another private address, which the bond resolves.
        try await Task.sleep(until: started + interval + .milliseconds(500))
        central.onQueue { app in
            app.peripheral = nil
            app.manager.scanForPeripherals(withServices: [advertised])
        }
        #expect(await lines.next() == "discovered 0")
        let (second, secondAddress) = try #require(central.queue.sync { central.peripheral.map { ($0, $0.address) } })
        #expect(second === first && second.identifier == first.identifier)
        #expect(secondAddress.kind == .randomResolvable && secondAddress != firstAddress)
        // It is reached at the address it was heard from, and the bond encrypts the link without pairing again.
        let connected = await lines.next(timeout: .seconds(20)) ?? ""
        #expect(connected.hasPrefix("connected 2"), "\(connected)")
        #expect(await lines.next() == "services true")
        #expect(await lines.next() == "characteristics 1")
        central.onQueue { app in
            guard let target = app.peripheral, let characteristic = app.characteristic else { return }
            target.readValue(for: characteristic)
        }
        #expect(await lines.next(timeout: .seconds(20)) == "value sealed")
        withExtendedLifetime((server, central)) {}
    }

    @Test("Services the system provides (GAP 1800, GATT 1801) cannot be added: CBError.uuidNotAllowed, as iOS answers")
    func servicesTheSystemProvidesAreNotAllowed() async throws {
        let (stream, log) = AsyncStream.makeStream(of: String.self)
        let lines = LineQueue(stream)
        let peripheral = AddingPeripheral(log: log)
        #expect(await lines.next() == "state 5")
        for uuid in ["1800", "1801"] {
            let service = CBMutableService(type: CBUUID(string: uuid), primary: true)
            service.characteristics = [CBMutableCharacteristic(type: CBUUID(string: "2A00"), properties: [.read], value: Data([1]),
                                                               permissions: [.readable])]
            peripheral.manager.add(service)
            #expect(await lines.next() == "added \(uuid) CBErrorDomain \(CBError.Code.uuidNotAllowed.rawValue)")
        }
        // Any other service is the app's to add.
        let battery = CBMutableService(type: CBUUID(string: "180F"), primary: true)
        peripheral.manager.add(battery)
        #expect(await lines.next() == "added 180F ok")
        withExtendedLifetime(peripheral) {}
    }
}

/// A central that stored a peripheral's identifier in an earlier run and connects to it without scanning.
final class RetrievingCentral: NSObject, CBCentralManagerDelegate, @unchecked Sendable {
    let identifier: UUID
    let log: AsyncStream<String>.Continuation
    var manager: CBCentralManager!
    var peripheral: CBPeripheral?

    init(identifier: UUID, log: AsyncStream<String>.Continuation) {
        self.identifier = identifier
        self.log = log
        super.init()
        manager = CBCentralManager(delegate: self, queue: DispatchQueue(label: "retrieving central"))
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        guard central.state == .poweredOn, let known = central.retrievePeripherals(withIdentifiers: [identifier]).first else { return }
        peripheral = known
        central.connect(known)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        log.yield("connected \(peripheral.identifier.uuidString)")
        central.cancelPeripheralConnection(peripheral)
    }
}

/// A peripheral-manager delegate that logs the outcome of each service it adds, with the error's domain and code.
final class AddingPeripheral: NSObject, CBPeripheralManagerDelegate, @unchecked Sendable {
    let log: AsyncStream<String>.Continuation
    var manager: CBPeripheralManager!

    init(log: AsyncStream<String>.Continuation) {
        self.log = log
        super.init()
        manager = CBPeripheralManager(delegate: self, queue: DispatchQueue(label: "adding peripheral"))
    }

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) { log.yield("state \(peripheral.state.rawValue)") }

    func peripheralManager(_ peripheral: CBPeripheralManager, didAdd service: CBService, error: Error?) {
        log.yield("added \(service.uuid) \(error.map { "\(($0 as NSError).domain) \(($0 as NSError).code)" } ?? "ok")")
    }
}
