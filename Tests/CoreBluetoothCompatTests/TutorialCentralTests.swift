import CoreBluetoothCompat
import Foundation
import Testing

/// A central written as iOS tutorials write one: an `NSObject` subclass that is its manager's delegate and its
/// peripheral's, reacting to each callback with the next call. Only the import line differs from iOS code.
///
/// It delivers on a serial `DispatchQueue` of its own rather than `queue: nil`: swift-testing does not run the main
/// queue on Linux, and a test that pumped it would hold the main thread for the whole run. The callbacks' order and
/// thread discipline are the same on either queue.
final class LabCentral: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate {
    let batteryServiceUUID = CBUUID(string: "180F")
    let batteryLevelUUID = CBUUID(string: "2A19")
    let heartRateMeasurementUUID = CBUUID(string: "2A37")
    let customServiceUUID = CBUUID(string: "12345678-1234-5678-1234-56789ABCDEF0")
    let writableUUID = CBUUID(string: "12345678-1234-5678-1234-56789ABCDEF1")

    var centralManager: CBCentralManager!
    var labPeripheral: CBPeripheral?
    var heartRateCharacteristic: CBCharacteristic?
    var heartRateNotifications = 0
    var peripheralsSeen: Set<ObjectIdentifier> = []
    let message: Data
    let log: AsyncStream<String>.Continuation
    /// Checks (not tutorial code): every callback runs on the given queue, none inside another.
    static let queueKey = DispatchSpecificKey<String>()
    var inCallback = false
    var callbacks = 0
    var violations: [String] = []

    init(queue: DispatchQueue, message: String, log: AsyncStream<String>.Continuation) {
        self.message = Data(message.utf8)
        self.log = log
        queue.setSpecific(key: Self.queueKey, value: queue.label)
        super.init()
        centralManager = CBCentralManager(delegate: self, queue: queue)
    }

    func callback(_ name: String, _ body: () -> Void) {
        callbacks += 1
        if DispatchQueue.getSpecific(key: Self.queueKey) != "tutorial central" { violations.append("\(name) off its queue") }
        if inCallback { violations.append("\(name) inside another callback") }
        inCallback = true
        body()
        inCallback = false
    }

    // MARK: CBCentralManagerDelegate

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        callback("centralManagerDidUpdateState") {
            log.yield("state \(central.state.rawValue)")
            if central.state == .poweredOn {
                central.scanForPeripherals(withServices: [batteryServiceUUID], options: nil)
                log.yield("scanning \(central.isScanning)")
            }
        }
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                        advertisementData: [String: Any], rssi RSSI: NSNumber) {
        callback("centralManager didDiscover") {
            guard labPeripheral == nil, advertisementData[CBAdvertisementDataLocalNameKey] as? String == "SwiftBLELab" else { return }
            let services = advertisementData[CBAdvertisementDataServiceUUIDsKey] as? [CBUUID] ?? []
            let manufacturer = advertisementData[CBAdvertisementDataManufacturerDataKey] as? Data ?? Data()
            let connectable = (advertisementData[CBAdvertisementDataIsConnectable] as? NSNumber)?.boolValue ?? false
            log.yield("discovered \(peripheral.name ?? "?") battery \(services.contains(batteryServiceUUID)) "
                      + "manufacturer \(String(decoding: manufacturer.dropFirst(2), as: UTF8.self)) connectable \(connectable) "
                      + "rssi \(RSSI.intValue < 0)")
            labPeripheral = peripheral
            central.stopScan()
            log.yield("scanning \(central.isScanning)")
            central.connect(peripheral, options: nil)
            log.yield("state \(peripheral.state.rawValue)")
        }
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        callback("centralManager didConnect") {
            peripheralsSeen.insert(ObjectIdentifier(peripheral))
            log.yield("connected state \(peripheral.state.rawValue) max \(peripheral.maximumWriteValueLength(for: .withoutResponse)) "
                      + "\(peripheral.maximumWriteValueLength(for: .withResponse))")
            peripheral.delegate = self
            peripheral.discoverServices(nil)
        }
    }

    func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: Error?) {
        callback("centralManager didFailToConnect") {
            log.yield("failed to connect \(String(describing: error))")
            log.finish()
        }
    }

    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: Error?) {
        callback("centralManager didDisconnectPeripheral") {
            peripheralsSeen.insert(ObjectIdentifier(peripheral))
            log.yield("disconnected error \(error == nil ? "nil" : "\(error!)") state \(peripheral.state.rawValue) "
                      + "same object \(peripheralsSeen.count == 1 && peripheral === labPeripheral)")
            log.finish()
        }
    }

    // MARK: CBPeripheralDelegate

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: Error?) {
        callback("peripheral didDiscoverServices") {
            peripheralsSeen.insert(ObjectIdentifier(peripheral))
            guard error == nil, let services = peripheral.services else { log.yield("services error \(String(describing: error))"); return }
            log.yield("services \(services.map(\.uuid.uuidString).joined(separator: ","))")
            for service in services where [batteryServiceUUID, CBUUID(string: "180D"), customServiceUUID].contains(service.uuid) {
                peripheral.discoverCharacteristics(nil, for: service)
            }
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: Error?) {
        callback("peripheral didDiscoverCharacteristicsFor") {
            peripheralsSeen.insert(ObjectIdentifier(peripheral))
            guard error == nil else { log.yield("characteristics error \(error!)"); return }
            for characteristic in service.characteristics ?? [] {
                switch characteristic.uuid {
                case batteryLevelUUID:
                    peripheral.readValue(for: characteristic)
                case heartRateMeasurementUUID:
                    heartRateCharacteristic = characteristic
                    log.yield("2A37 properties \(characteristic.properties.rawValue) in \(characteristic.service?.uuid.uuidString ?? "?")")
                    peripheral.setNotifyValue(true, for: characteristic)
                case writableUUID:
                    peripheral.writeValue(message, for: characteristic, type: .withResponse)
                    peripheral.discoverDescriptors(for: characteristic)
                default:
                    break
                }
            }
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverDescriptorsFor characteristic: CBCharacteristic, error: Error?) {
        callback("peripheral didDiscoverDescriptorsFor") {
            for descriptor in characteristic.descriptors ?? [] where descriptor.uuid == CBUUID(string: CBUUIDCharacteristicUserDescriptionString) {
                peripheral.readValue(for: descriptor)
            }
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor descriptor: CBDescriptor, error: Error?) {
        callback("peripheral didUpdateValueFor") {
            log.yield("descriptor \(descriptor.uuid.uuidString) \(descriptor.value as? String ?? "?")")
            peripheral.writeValue(Data("renamed".utf8), for: descriptor)
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor descriptor: CBDescriptor, error: Error?) {
        callback("peripheral didWriteValueFor") {
            log.yield("wrote descriptor \(descriptor.uuid.uuidString) error \((error as? CBATTError)?.code.rawValue ?? -1)")
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: Error?) {
        callback("peripheral didWriteValueFor") {
            log.yield("wrote \(characteristic.uuid.uuidString.suffix(4)) error \(error == nil ? "nil" : "\(error!)")")
            peripheral.readValue(for: characteristic)
            // Cannot notify: CoreBluetooth answers with an error.
            peripheral.setNotifyValue(true, for: characteristic)
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: Error?) {
        callback("peripheral didUpdateValueFor") {
            peripheralsSeen.insert(ObjectIdentifier(peripheral))
            if let error { log.yield("read \(characteristic.uuid.uuidString) error \(error)"); return }
            guard let value = characteristic.value else { log.yield("read \(characteristic.uuid.uuidString) no value"); return }
            switch characteristic.uuid {
            case batteryLevelUUID:
                log.yield("battery \(value.first.map(String.init) ?? "?")")
            case writableUUID:
                log.yield("read back \(value == message)")
            case heartRateMeasurementUUID:
                heartRateNotifications += 1
                log.yield("heart rate \(heartRateNotifications) bytes \(value.count) notifying \(characteristic.isNotifying)")
                if heartRateNotifications == 3 { peripheral.setNotifyValue(false, for: characteristic) }
            default:
                break
            }
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: Error?) {
        callback("peripheral didUpdateNotificationStateFor") {
            if let error = error as? CBATTError {
                log.yield("notify \(characteristic.uuid.uuidString.suffix(4)) error \(error.code.rawValue)")
                return
            }
            log.yield("notify \(characteristic.uuid.uuidString.suffix(4)) \(characteristic.isNotifying) error \(error == nil ? "nil" : "\(error!)")")
            if !characteristic.isNotifying { centralManager.cancelPeripheralConnection(peripheral) }
        }
    }
}

/// A scanner that reports every advertisement, stops after a few, and records what came after.
final class DuplicateScanner: NSObject, CBCentralManagerDelegate {
    var centralManager: CBCentralManager!
    var states: [CBManagerState] = []
    var discoveries: [ObjectIdentifier: Int] = [:]
    var total = 0
    var totalWhenStopped: Int?
    let log: AsyncStream<String>.Continuation

    /// Whether the caller runs on the main queue (marked with a queue-specific value; on Linux a program in
    /// `dispatchMain()` has its main queue drained by a worker thread, so `Thread.isMainThread` does not tell).
    static var onMainQueue: Bool {
        DispatchQueue.main.setSpecific(key: mainKey, value: true)
        return DispatchQueue.getSpecific(key: mainKey) == true
    }
    static let mainKey = DispatchSpecificKey<Bool>()

    init(queue: DispatchQueue?, log: AsyncStream<String>.Continuation) {
        self.log = log
        super.init()
        centralManager = CBCentralManager(delegate: self, queue: queue)
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        states.append(central.state)
        log.yield("state \(central.state.rawValue) main queue \(DuplicateScanner.onMainQueue)")
        if central.state == .poweredOn {
            central.scanForPeripherals(withServices: nil, options: [CBCentralManagerScanOptionAllowDuplicatesKey: NSNumber(value: true)])
        } else if let identifier = UUID(uuidString: "53424C45-0000-8001-8000-C10203040506"),
                  let peripheral = central.retrievePeripherals(withIdentifiers: [identifier]).first {
            central.connect(peripheral)
        } else {
            log.finish()
        }
    }

    func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: Error?) {
        log.yield("failed to connect \((error as? CBError)?.code.rawValue ?? -1) state \(peripheral.state.rawValue)")
        log.finish()
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                        advertisementData: [String: Any], rssi RSSI: NSNumber) {
        total += 1
        discoveries[ObjectIdentifier(peripheral), default: 0] += 1
        if total == 12 {
            central.stopScan()
            totalWhenStopped = total
            log.yield("stopped main queue \(DuplicateScanner.onMainQueue)")
            log.finish()
        }
    }
}

@Suite("CoreBluetoothCompat central", .serialized, .timeLimit(.minutes(1)))
struct TutorialCentralTests {
    /// Collects the central's log until it finishes (after its disconnection), or 30 s.
    static func run(_ start: (AsyncStream<String>.Continuation) -> LabCentral) async -> (LabCentral, [String]) {
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        let central = start(continuation)
        let timeout = Task {
            try await Task.sleep(for: .seconds(30))
            continuation.yield("timed out")
            continuation.finish()
        }
        var lines: [String] = []
        for await line in stream { lines.append(line) }
        timeout.cancel()
        return (central, lines)
    }

    @Test("A tutorial-style central scans by service, reads, writes, subscribes and disconnects through the embedded world")
    func tutorialCentral() async throws {
        let queue = DispatchQueue(label: "tutorial central")
        let message = "hello \(UInt32.random(in: 0...UInt32.max))"
        let (central, lines) = await Self.run { LabCentral(queue: queue, message: message, log: $0) }
        #expect(!lines.contains("timed out"), "\(lines)")
        let expectedInOrder = [
            "state 5", "scanning true",
            "discovered SwiftBLELab battery true manufacturer lab connectable true rssi true", "scanning false", "state 1",
            "connected state 2 max 244 512",
            "services 1800,1801,180F,180D,180A,12345678-1234-5678-1234-56789ABCDEF0",
        ]
        #expect(lines.filter(expectedInOrder.contains) == expectedInOrder, "\(lines)")
        for line in ["battery 87", "2A37 properties 16 in 180D", "notify 2A37 true error nil", "wrote DEF1 error nil",
                     "read back true", "notify DEF1 error 6", "descriptor 2901 Writable",
                     "wrote descriptor 2901 error 3"] {
            #expect(lines.contains(line), "\(line) missing from \(lines)")
        }
        let notifications = lines.filter { $0.hasPrefix("heart rate") }
        #expect(notifications == ["heart rate 1 bytes 2 notifying true", "heart rate 2 bytes 2 notifying true",
                                  "heart rate 3 bytes 2 notifying true"], "\(lines)")
        // The write is answered before its read back; notifications stop before the disconnection, which is last.
        let index = { (line: String) in lines.firstIndex(of: line) ?? -1 }
        #expect(index("wrote DEF1 error nil") < index("read back true"))
        #expect(index("notify 2A37 true error nil") < index("heart rate 1 bytes 2 notifying true"))
        #expect(index("heart rate 3 bytes 2 notifying true") < index("notify 2A37 false error nil"))
        #expect(lines.last == "disconnected error nil state 0 same object true", "\(lines)")
        let peripheral = try #require(central.labPeripheral)
        #expect(peripheral.identifier.uuidString.hasPrefix("53424C45-0000-800"))
        #expect(peripheral.state == .disconnected)
        #expect(central.heartRateCharacteristic?.isNotifying == false)
        #expect(central.centralManager.isScanning == false)
        let (callbacks, violations) = queue.sync { (central.callbacks, central.violations) }
        // At least: state, discovery, connection, services, 3 characteristic discoveries, 2 reads, 2 notification states, a
        // write, a descriptor discovery and read, a read back, the refused subscription, 3 notifications, the disconnection.
        #expect(callbacks >= 19)
        #expect(violations.isEmpty, "\(violations)")
    }

    @Test("With AllowDuplicates every advertisement is reported, to the same peripheral object, and none after stopScan")
    func duplicatesAndStopScan() async throws {
        let queue = DispatchQueue(label: "duplicate scanner")
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        let scanner = DuplicateScanner(queue: queue, log: continuation)
        for await _ in stream {}
        try await Task.sleep(for: .milliseconds(800))
        let (total, stopped, counts, scanning) = queue.sync {
            (scanner.total, scanner.totalWhenStopped, Array(scanner.discoveries.values), scanner.centralManager.isScanning)
        }
        #expect(stopped == 12)
        #expect(total == 12)
        #expect(!scanning)
        // Two sample devices advertise: with duplicates allowed, one of them is reported several times.
        #expect(counts.contains { $0 > 1 }, "\(counts)")
    }

    @Test("With queue nil the callbacks run on the main queue (which the test runner drains)")
    func mainQueue() async throws {
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        let scanner = DuplicateScanner(queue: nil, log: continuation)
        var lines: [String] = []
        for await line in stream { lines.append(line) }
        #expect(lines == ["state 5 main queue true", "stopped main queue true"])
        withExtendedLifetime(scanner) {}
    }
}
