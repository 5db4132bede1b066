import BLE
import CoreBluetoothCompat
import Foundation
import Testing

/// A central that keeps its discovered services and rediscovers when the peripheral says its database changed.
final class ServiceWatcher: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate {
    let advertisedUUID: CBUUID
    var centralManager: CBCentralManager!
    var device: CBPeripheral?
    var modifications = 0
    let log: AsyncStream<String>.Continuation

    init(queue: DispatchQueue, advertised: CBUUID, log: AsyncStream<String>.Continuation) {
        advertisedUUID = advertised
        self.log = log
        super.init()
        centralManager = CBCentralManager(delegate: self, queue: queue)
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        if central.state == .poweredOn { central.scanForPeripherals(withServices: [advertisedUUID]) }
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                        advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard device == nil else { return }
        device = peripheral
        central.stopScan()
        central.connect(peripheral)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        peripheral.delegate = self
        peripheral.discoverServices(nil)
    }

    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: Error?) {
        log.yield("disconnected \(error == nil ? "nil" : "\(error!)")")
        log.finish()
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: Error?) {
        log.yield("services \((peripheral.services ?? []).map(\.uuid.uuidString).joined(separator: ","))")
        if modifications > 0, let service = peripheral.services?.first(where: { $0.uuid == advertisedUUID }) {
            peripheral.discoverCharacteristics(nil, for: service)
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: Error?) {
        guard let characteristic = service.characteristics?.first else { return }
        peripheral.discoverDescriptors(for: characteristic)
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverDescriptorsFor characteristic: CBCharacteristic, error: Error?) {
        guard let descriptor = characteristic.descriptors?.first(where: { $0.uuid == CBUUID(string: "EE11") }) else {
            log.yield("no descriptor EE11")
            centralManager.cancelPeripheralConnection(peripheral)
            return
        }
        peripheral.writeValue(Data([7]), for: descriptor)
    }

    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor descriptor: CBDescriptor, error: Error?) {
        log.yield("wrote descriptor \(descriptor.uuid.uuidString) error \(error == nil ? "nil" : "\(error!)")")
        peripheral.readValue(for: descriptor)
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor descriptor: CBDescriptor, error: Error?) {
        log.yield("descriptor \(descriptor.uuid.uuidString) \((descriptor.value as? Data).map { [UInt8]($0) } ?? [])")
        centralManager.cancelPeripheralConnection(peripheral)
    }

    func peripheral(_ peripheral: CBPeripheral, didModifyServices invalidatedServices: [CBService]) {
        modifications += 1
        log.yield("invalidated \(invalidatedServices.map(\.uuid.uuidString).joined(separator: ","))")
        log.yield("kept \((peripheral.services ?? []).map(\.uuid.uuidString).joined(separator: ","))")
        peripheral.discoverServices(nil)
    }
}

extension TutorialCentralTests {
    @Test("A Service Changed indication removes the invalidated services and calls didModifyServices; descriptors are written")
    func serviceChanged() async throws {
        let kept = BluetoothUUID("0000EE10-0000-1000-8000-00805F9B34FB") ?? 0
        let removed = BluetoothUUID("0000EE20-0000-1000-8000-00805F9B34FB") ?? 0
        let world = try await EmbeddedWorld.shared()
        let manager = try await PeripheralManager(transport: world.makeTransport(at: Position(x: 6)), deviceName: "Changing")
        defer { Task { await manager.powerOff() } }
        for uuid in [kept, removed] {
            _ = try await manager.add(GATTServiceDefinition(uuid: uuid, characteristics: [
                GATTCharacteristicDefinition(uuid: 0x2A00, properties: .read, value: [1], descriptors: [
                    GATTDescriptorDefinition(uuid: 0xEE11, value: [0], permissions: [.readable, .writeable]),
                ]),
            ]))
        }
        let requests = await manager.requests()
        try await manager.startAdvertising(name: "Changing", serviceUUIDs: [kept])

        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        let watcher = ServiceWatcher(queue: DispatchQueue(label: "service watcher"), advertised: CBUUID(kept), log: continuation)
        let timeout = Task {
            try await Task.sleep(for: .seconds(20))
            continuation.yield("timed out")
            continuation.finish()
        }
        // Once the central has discovered the services and subscribed to Service Changed (as iOS does on connecting),
        // one service goes away.
        var iterator = stream.makeAsyncIterator()
        var lines: [String] = []
        if let first = await iterator.next() { lines.append(first) }
        for await request in requests {
            if case .subscription(let characteristic, _, _, let indicate) = request.kind, characteristic == BluetoothUUID(0x2A05), indicate { break }
        }
        try await manager.remove(removed)
        while let line = await iterator.next() { lines.append(line) }
        timeout.cancel()
        #expect(lines == [
            "services 1800,1801,EE10,EE20",
            "invalidated EE20",
            "kept 1800,1801,EE10",
            "services 1800,1801,EE10",
            "wrote descriptor EE11 error nil",
            "descriptor EE11 [7]",
            "disconnected nil",
        ])
        withExtendedLifetime(watcher) {}
    }
}
