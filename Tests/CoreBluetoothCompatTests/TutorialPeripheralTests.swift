import CoreBluetoothCompat
import Foundation
import Testing

/// A peripheral written as Apple's "Transferring Data Between Bluetooth Low Energy Devices" sample writes one: it
/// publishes a transfer service, advertises it, and streams a text to each central that subscribes, in chunks of
/// `maximumUpdateValueLength` with an end-of-message marker, waiting for `peripheralManagerIsReady` whenever
/// `updateValue` returns false. Centrals write back; each write is recorded against the central that sent it. Only
/// the import line differs from iOS code (plus the `log` and records the test reads).
final class TransferPeripheral: NSObject, CBPeripheralManagerDelegate {
    static let serviceUUID = CBUUID(string: "E20A39F4-73F5-4BC4-A12F-17D1AD07A961")
    static let characteristicUUID = CBUUID(string: "08590F7E-DB05-467E-8757-72F6FAEB13D4")
    static let countUUID = CBUUID(string: "08590F7E-DB05-467E-8757-72F6FAEB13D5")

    var peripheralManager: CBPeripheralManager!
    var transferCharacteristic: CBMutableCharacteristic?
    var countCharacteristic: CBMutableCharacteristic?
    let dataToSend: Data
    /// Where each subscribed central is in the text.
    var sendIndex: [UUID: Int] = [:]
    var subscribed: [CBCentral] = []
    var sentEOM: Set<UUID> = []
    var writes: [UUID: [String]] = [:]
    var reads = 0
    var refusedUpdates = 0
    var readyCallbacks = 0
    let name: String
    let log: AsyncStream<String>.Continuation

    init(text: String, name: String, queue: DispatchQueue?, log: AsyncStream<String>.Continuation) {
        dataToSend = Data(text.utf8)
        self.name = name
        self.log = log
        super.init()
        peripheralManager = CBPeripheralManager(delegate: self, queue: queue, options: [CBPeripheralManagerOptionShowPowerAlertKey: true])
    }

    private func setupPeripheral() {
        let transferCharacteristic = CBMutableCharacteristic(type: Self.characteristicUUID,
                                                             properties: [.notify, .writeWithoutResponse, .write],
                                                             value: nil, permissions: [.readable, .writeable])
        let countCharacteristic = CBMutableCharacteristic(type: Self.countUUID, properties: [.read], value: nil, permissions: [.readable])
        let description = CBMutableDescriptor(type: CBUUID(string: CBUUIDCharacteristicUserDescriptionString), value: "transfer")
        transferCharacteristic.descriptors = [description]
        let transferService = CBMutableService(type: Self.serviceUUID, primary: true)
        transferService.characteristics = [transferCharacteristic, countCharacteristic]
        peripheralManager.add(transferService)
        self.transferCharacteristic = transferCharacteristic
        self.countCharacteristic = countCharacteristic
    }

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        log.yield("peripheral state \(peripheral.state.rawValue) main thread \(Thread.isMainThread)")
        guard peripheral.state == .poweredOn else { return }
        setupPeripheral()
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didAdd service: CBService, error: Error?) {
        log.yield("added \(service.uuid) error \(error.map { "\($0)" } ?? "none")")
        peripheralManager.startAdvertising([CBAdvertisementDataServiceUUIDsKey: [Self.serviceUUID],
                                            CBAdvertisementDataLocalNameKey: name])
    }

    func peripheralManagerDidStartAdvertising(_ peripheral: CBPeripheralManager, error: Error?) {
        log.yield("advertising \(peripheral.isAdvertising) error \(error.map { "\($0)" } ?? "none")")
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didSubscribeTo characteristic: CBCharacteristic) {
        log.yield("subscribed \(characteristic.uuid) max \(central.maximumUpdateValueLength >= 20)")
        subscribed.append(central)
        sendIndex[central.identifier] = 0
        sendData()
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didUnsubscribeFrom characteristic: CBCharacteristic) {
        log.yield("unsubscribed \(characteristic.uuid)")
        subscribed.removeAll { $0 === central }
    }

    func peripheralManagerIsReady(toUpdateSubscribers peripheral: CBPeripheralManager) {
        readyCallbacks += 1
        sendData()
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveRead request: CBATTRequest) {
        reads += 1
        let value = Data("\(subscribed.count) subscribed".utf8)
        guard request.offset <= value.count else {
            peripheral.respond(to: request, withResult: .invalidOffset)
            return
        }
        request.value = value.subdata(in: request.offset..<value.count)
        peripheral.respond(to: request, withResult: .success)
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveWrite requests: [CBATTRequest]) {
        for request in requests {
            guard let value = request.value, let text = String(data: value, encoding: .utf8) else { continue }
            writes[request.central.identifier, default: []].append(text)
        }
        if let first = requests.first {
            let refuse = first.value.map { String(decoding: $0, as: UTF8.self) } == "refuse me"
            peripheral.respond(to: first, withResult: refuse ? .writeNotPermitted : .success)
        }
    }

    /// Sends the next chunks to each subscribed central until `updateValue` refuses one.
    func sendData() {
        guard let transferCharacteristic else { return }
        for central in subscribed {
            guard var index = sendIndex[central.identifier] else { continue }
            while index < dataToSend.count {
                let amount = min(dataToSend.count - index, central.maximumUpdateValueLength)
                let chunk = dataToSend.subdata(in: index..<index + amount)
                guard peripheralManager.updateValue(chunk, for: transferCharacteristic, onSubscribedCentrals: [central]) else {
                    refusedUpdates += 1
                    sendIndex[central.identifier] = index
                    return
                }
                index += amount
            }
            sendIndex[central.identifier] = index
            if !sentEOM.contains(central.identifier) {
                guard peripheralManager.updateValue(Data("EOM".utf8), for: transferCharacteristic, onSubscribedCentrals: [central]) else {
                    refusedUpdates += 1
                    return
                }
                sentEOM.insert(central.identifier)
                log.yield("sent EOM")
            }
        }
    }
}

/// The central of the same sample: scans for the transfer service, connects, subscribes, accumulates the chunks
/// until "EOM", then writes a line back (with response), reads the count characteristic and unsubscribes.
final class TransferCentral: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate {
    var centralManager: CBCentralManager!
    var discoveredPeripheral: CBPeripheral?
    var transferCharacteristic: CBCharacteristic?
    var data = Data()
    let reply: String
    let peripheralName: String
    let log: AsyncStream<String>.Continuation

    init(reply: String, peripheralName: String, queue: DispatchQueue, log: AsyncStream<String>.Continuation) {
        self.reply = reply
        self.peripheralName = peripheralName
        self.log = log
        super.init()
        centralManager = CBCentralManager(delegate: self, queue: queue, options: nil)
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        guard central.state == .poweredOn else { return }
        centralManager.scanForPeripherals(withServices: [TransferPeripheral.serviceUUID],
                                          options: [CBCentralManagerScanOptionAllowDuplicatesKey: true])
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                        advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard discoveredPeripheral == nil, advertisementData[CBAdvertisementDataLocalNameKey] as? String == peripheralName else { return }
        discoveredPeripheral = peripheral
        centralManager.stopScan()
        centralManager.connect(peripheral, options: nil)
    }

    func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: Error?) {
        log.yield("failed to connect \(String(describing: error))")
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        data.removeAll(keepingCapacity: false)
        peripheral.delegate = self
        peripheral.discoverServices([TransferPeripheral.serviceUUID])
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: Error?) {
        guard error == nil, let services = peripheral.services else { return }
        for service in services { peripheral.discoverCharacteristics(nil, for: service) }
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: Error?) {
        guard error == nil, let characteristics = service.characteristics else { return }
        for characteristic in characteristics where characteristic.uuid == TransferPeripheral.characteristicUUID {
            transferCharacteristic = characteristic
            peripheral.discoverDescriptors(for: characteristic)
            peripheral.setNotifyValue(true, for: characteristic)
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverDescriptorsFor characteristic: CBCharacteristic, error: Error?) {
        for descriptor in characteristic.descriptors ?? [] where descriptor.uuid == CBUUID(string: CBUUIDCharacteristicUserDescriptionString) {
            peripheral.readValue(for: descriptor)
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor descriptor: CBDescriptor, error: Error?) {
        log.yield("description \(descriptor.value as? String ?? "?")")
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: Error?) {
        if let error {
            log.yield("error \(error)")
            return
        }
        guard let value = characteristic.value else { return }
        if characteristic.uuid == TransferPeripheral.countUUID {
            log.yield("count \(String(decoding: value, as: UTF8.self))")
            peripheral.setNotifyValue(false, for: characteristic.service?.characteristics?.first { $0.uuid == TransferPeripheral.characteristicUUID } ?? characteristic)
            return
        }
        if String(data: value, encoding: .utf8) == "EOM" {
            log.yield("received \(data.count) bytes")
            log.yield("text \(String(decoding: data, as: UTF8.self))")
            peripheral.writeValue(Data(reply.utf8), for: characteristic, type: .withResponse)
            peripheral.writeValue(Data("refuse me".utf8), for: characteristic, type: .withResponse)
            if let count = characteristic.service?.characteristics?.first(where: { $0.uuid == TransferPeripheral.countUUID }) {
                peripheral.readValue(for: count)
            }
        } else {
            data.append(value)
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: Error?) {
        if let error = error as? CBATTError {
            log.yield("write refused \(error.code.rawValue)")
        } else {
            log.yield("wrote \(error == nil)")
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: Error?) {
        log.yield("notifying \(characteristic.isNotifying)")
    }
}

/// Hands a delegate object to its queue from a test (the object is only touched on that queue).
struct Unchecked<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

@Suite struct TutorialPeripheralTests {
    /// A text longer than many chunks, with every printable ASCII character.
    static let text = String((0..<2000).map { Character(UnicodeScalar(UInt8(32 + $0 % 95))) })

    /// Collects log lines until `predicate` holds for the lines so far, or the timeout passes.
    static func collect(_ stream: AsyncStream<String>, timeout: Duration = .seconds(20),
                        until predicate: @escaping @Sendable ([String]) -> Bool) async -> [String] {
        await withTaskGroup(of: [String]?.self) { group in
            group.addTask {
                var lines: [String] = []
                for await line in stream {
                    lines.append(line)
                    if predicate(lines) { break }
                }
                return lines
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? []
        }
    }

    @Test func twoCentralsReceiveTheStreamAndEachWriteIsAttributedToItsSender() async throws {
        let queue = DispatchQueue(label: "transfer tutorial")
        let (peripheralLines, peripheralLog) = AsyncStream.makeStream(of: String.self)
        let (centralLines, centralLog) = AsyncStream.makeStream(of: String.self)
        let name = "Transfer \(UInt16.random(in: 1000...9999))"
        // The peripheral delivers on the main queue (`queue: nil`), as an iOS app's does, and is made there as an app
        // makes it (made on another thread, its first callback could run on main before `peripheralManager` is set:
        // a slow sanitizer run did that); the centrals on a queue of their own.
        let peripheral = DispatchQueue.main.sync { TransferPeripheral(text: Self.text, name: name, queue: nil, log: peripheralLog) }
        let started = await Self.collect(peripheralLines) { $0.contains { $0.hasPrefix("advertising") } }
        #expect(started.contains("added E20A39F4-73F5-4BC4-A12F-17D1AD07A961 error none"))
        #expect(started.contains("advertising true error none"))
        #expect(started.first?.hasPrefix("peripheral state 5") == true)
        // Made on their queue, so that no callback can come before the object holds its manager.
        let first = queue.sync { TransferCentral(reply: "thanks from A", peripheralName: name, queue: queue, log: centralLog) }
        let second = queue.sync { TransferCentral(reply: "thanks from B", peripheralName: name, queue: queue, log: centralLog) }
        let lines = await Self.collect(centralLines) { lines in lines.filter { $0 == "notifying false" }.count == 2 }
        withExtendedLifetime((peripheral, first, second)) {}
        #expect(lines.filter { $0 == "received \(Self.text.utf8.count) bytes" }.count == 2, "\(lines)")
        #expect(lines.filter { $0 == "text \(Self.text)" }.count == 2)
        #expect(lines.filter { $0 == "description transfer" }.count == 2)
        #expect(lines.filter { $0 == "wrote true" }.count == 2)
        #expect(lines.filter { $0 == "write refused \(CBATTError.Code.writeNotPermitted.rawValue)" }.count == 2)
        #expect(lines.filter { $0.hasPrefix("count ") && $0.hasSuffix(" subscribed") }.count == 2)
        // Each central's writes are recorded under its own identifier.
        let box = Unchecked(peripheral)
        let writes = await withCheckedContinuation { continuation in DispatchQueue.main.async { continuation.resume(returning: box.value.writes) } }
        #expect(writes.count == 2)
        #expect(Set(writes.values.map { $0.first ?? "" }) == ["thanks from A", "thanks from B"])
        #expect(writes.values.allSatisfy { $0.last == "refuse me" })
        let (reads, subscribed) = await withCheckedContinuation { continuation in
            DispatchQueue.main.async { continuation.resume(returning: (box.value.reads, box.value.subscribed.count)) }
        }
        #expect(reads == 2)
        #expect(subscribed == 0)
    }
}
