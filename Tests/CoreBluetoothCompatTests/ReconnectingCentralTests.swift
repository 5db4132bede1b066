import CoreBluetoothCompat
import Foundation
import Testing

/// A central as tutorials write one that keeps a device: it queues several writes with response, has the lab
/// device drop the link (its control point), connects again to the same peripheral object, and finally cancels.
final class ReconnectingCentral: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate {
    let customServiceUUID = CBUUID(string: "12345678-1234-5678-1234-56789ABCDEF0")
    let writableUUID = CBUUID(string: "12345678-1234-5678-1234-56789ABCDEF1")
    let controlUUID = CBUUID(string: "12345678-1234-5678-1234-56789ABCDEF7")

    var centralManager: CBCentralManager!
    var device: CBPeripheral?
    var connections = 0
    var writesAnswered = 0
    let tag = UInt16.random(in: 0...UInt16.max)
    let log: AsyncStream<String>.Continuation

    init(queue: DispatchQueue, log: AsyncStream<String>.Continuation) {
        self.log = log
        super.init()
        centralManager = CBCentralManager(delegate: self, queue: queue)
    }

    func value(_ n: Int) -> Data { Data("w\(n)-\(tag)".utf8) }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        if central.state == .poweredOn { central.scanForPeripherals(withServices: nil) }
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                        advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard device == nil, peripheral.name == "SwiftBLELab" else { return }
        central.stopScan()
        device = peripheral
        let retrieved = central.retrievePeripherals(withIdentifiers: [peripheral.identifier, UUID()])
        log.yield("retrieved \(retrieved.count) same \(retrieved.first === peripheral)")
        central.connect(peripheral, options: [CBConnectPeripheralOptionNotifyOnDisconnectionKey: true])
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        connections += 1
        log.yield("connected \(connections) same \(peripheral === device)")
        if connections == 1 {
            peripheral.delegate = self
            peripheral.discoverServices([customServiceUUID])
        } else {
            log.yield("connected with services \(central.retrieveConnectedPeripherals(withServices: [customServiceUUID]).count)")
            peripheral.readRSSI()
        }
    }

    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: Error?) {
        let code = (error as? CBError)?.code.rawValue
        log.yield("disconnected \(code.map(String.init) ?? "nil") state \(peripheral.state.rawValue)")
        if connections == 1 {
            central.connect(peripheral)
        } else {
            log.finish()
        }
    }

    func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: Error?) {
        log.yield("failed \(String(describing: error))")
        log.finish()
    }

    func peripheral(_ peripheral: CBPeripheral, didReadRSSI RSSI: NSNumber, error: Error?) {
        log.yield("rssi negative \(RSSI.intValue < 0) error \(error == nil ? "nil" : "\(error!)")")
        centralManager.cancelPeripheralConnection(peripheral)
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: Error?) {
        guard let service = peripheral.services?.first(where: { $0.uuid == customServiceUUID }) else { return }
        peripheral.discoverIncludedServices(nil, for: service)
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverIncludedServicesFor service: CBService, error: Error?) {
        log.yield("included \(service.includedServices.map { "\($0.count)" } ?? "nil") error \(error == nil ? "nil" : "\(error!)")")
        peripheral.discoverCharacteristics([writableUUID, controlUUID], for: service)
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: Error?) {
        log.yield("characteristics \(service.characteristics?.count ?? 0)")
        guard let writable = service.characteristics?.first(where: { $0.uuid == writableUUID }) else { return }
        peripheral.writeValue(value(0), for: writable, type: .withoutResponse)
        peripheral.readValue(for: writable)
        for n in 1...5 { peripheral.writeValue(value(n), for: writable, type: .withResponse) }
        peripheral.readValue(for: writable)
    }

    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: Error?) {
        if characteristic.uuid == controlUUID {
            log.yield("control written")
            return
        }
        writesAnswered += 1
        log.yield("write \(writesAnswered) answered error \(error == nil ? "nil" : "\(error!)")")
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: Error?) {
        if characteristic.value == value(0) {
            log.yield("read back the write without response")
            return
        }
        log.yield("read back last \(characteristic.value == value(5))")
        guard let control = characteristic.service?.characteristics?.first(where: { $0.uuid == controlUUID }) else { return }
        peripheral.writeValue(Data("disconnect".utf8), for: control, type: .withResponse)
    }
}

/// In the serialized central suite: the tutorial central writes the same characteristic of the shared lab device.
extension TutorialCentralTests {
    @Test("Writes without response go before later reads; writes with response are answered in order; a link the peripheral drops reports an error; reconnecting gives the same object")
    func reconnect() async throws {
        let queue = DispatchQueue(label: "reconnecting central")
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        let central = queue.sync { ReconnectingCentral(queue: queue, log: continuation) }   // made on its queue, as callbacks could otherwise come first
        let timeout = Task {
            try await Task.sleep(for: .seconds(30))
            continuation.yield("timed out")
            continuation.finish()
        }
        var lines: [String] = []
        for await line in stream { lines.append(line) }
        timeout.cancel()
        #expect(lines == [
            "retrieved 1 same true",
            "connected 1 same true",
            "included 0 error nil",
            "characteristics 2",
            "read back the write without response",
            "write 1 answered error nil", "write 2 answered error nil", "write 3 answered error nil",
            "write 4 answered error nil", "write 5 answered error nil",
            "read back last true",
            "control written",
            "disconnected 7 state 0",
            "connected 2 same true",
            "connected with services 1",
            "rssi negative true error nil",
            "disconnected nil state 0",
        ])
        withExtendedLifetime(central) {}
    }
}
