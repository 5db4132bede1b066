// transfer-demo: Apple's "Transferring Data Between Bluetooth Low Energy Devices" sample on Linux. A
// CBPeripheralManager streams a file to every central that subscribes, in chunks of the central's
// maximumUpdateValueLength followed by an "EOM" chunk, and waits for peripheralManagerIsReady whenever updateValue
// returns false. Two centrals receive it at once; each writes back, and each write is attributed to the central that
// sent it (a "who am I" characteristic tells each central the identifier the peripheral sees it as).
//
//     swift run transfer-demo [--file PATH] [--centrals N]
//     swift run transfer-demo --peripheral-only [--name NAME] [--file PATH] [--centrals N]
//         (only the peripheral, for centrals elsewhere: it exits once N of them have written back)
import CoreBluetooth
import Foundation

/// Prints a line at once, even when standard output is a pipe (as when a test runs the demo). A plain write: stdio's
/// `fflush(nil)` would wait for the lock of standard input, which a thread blocked in `readLine()` holds.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let transferServiceUUID = CBUUID(string: "E20A39F4-73F5-4BC4-A12F-17D1AD07A961")
let transferCharacteristicUUID = CBUUID(string: "08590F7E-DB05-467E-8757-72F6FAEB13D4")
let whoAmIUUID = CBUUID(string: "08590F7E-DB05-467E-8757-72F6FAEB13D5")
func option(_ name: String) -> String? {
    let arguments = CommandLine.arguments
    return arguments.firstIndex(of: name).flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil }
}

let peripheralName = option("--name") ?? "Transfer \(ProcessInfo.processInfo.processIdentifier)"
let peripheralOnly = CommandLine.arguments.contains("--peripheral-only")

final class TransferPeripheral: NSObject, CBPeripheralManagerDelegate {
    var peripheralManager: CBPeripheralManager!
    var transferCharacteristic: CBMutableCharacteristic?
    let dataToSend: Data
    var subscribed: [CBCentral] = []
    var sendIndex: [UUID: Int] = [:]
    var sentEOM: Set<UUID> = []
    var refusals = 0
    var replies = 0
    /// Called with the number of replies so far, after each.
    var replied: (Int) -> Void = { _ in }

    init(data: Data) {
        dataToSend = data
        super.init()
        peripheralManager = CBPeripheralManager(delegate: self, queue: nil, options: [CBPeripheralManagerOptionShowPowerAlertKey: true])
    }

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        guard peripheral.state == .poweredOn else { return }
        let transfer = CBMutableCharacteristic(type: transferCharacteristicUUID, properties: [.notify, .write],
                                               value: nil, permissions: [.readable, .writeable])
        let whoAmI = CBMutableCharacteristic(type: whoAmIUUID, properties: [.read], value: nil, permissions: [.readable])
        let service = CBMutableService(type: transferServiceUUID, primary: true)
        service.characteristics = [transfer, whoAmI]
        peripheral.add(service)
        transferCharacteristic = transfer
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didAdd service: CBService, error: Error?) {
        peripheral.startAdvertising([CBAdvertisementDataServiceUUIDsKey: [transferServiceUUID], CBAdvertisementDataLocalNameKey: peripheralName])
    }

    func peripheralManagerDidStartAdvertising(_ peripheral: CBPeripheralManager, error: Error?) {
        say("peripheral: advertising \(peripheralName), \(dataToSend.count) bytes to send")
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didSubscribeTo characteristic: CBCharacteristic) {
        say("peripheral: \(central.identifier.uuidString) subscribed; chunks of \(central.maximumUpdateValueLength) bytes")
        subscribed.append(central)
        sendIndex[central.identifier] = 0
        sendData()
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didUnsubscribeFrom characteristic: CBCharacteristic) {
        subscribed.removeAll { $0 === central }
    }

    func peripheralManagerIsReady(toUpdateSubscribers peripheral: CBPeripheralManager) {
        sendData()
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveRead request: CBATTRequest) {
        let identity = Data(request.central.identifier.uuidString.utf8)
        guard request.offset <= identity.count else {
            peripheral.respond(to: request, withResult: .invalidOffset)
            return
        }
        request.value = identity.subdata(in: request.offset..<identity.count)
        peripheral.respond(to: request, withResult: .success)
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveWrite requests: [CBATTRequest]) {
        for request in requests {
            say("peripheral: \(request.central.identifier.uuidString) wrote \"\(String(decoding: request.value ?? Data(), as: UTF8.self))\"")
        }
        if let first = requests.first { peripheral.respond(to: first, withResult: .success) }
        replies += 1
        replied(replies)
    }

    /// Sends each subscribed central its next chunks until updateValue says the queue is full.
    func sendData() {
        guard let transferCharacteristic else { return }
        for central in subscribed {
            guard var index = sendIndex[central.identifier], !sentEOM.contains(central.identifier) else { continue }
            while index < dataToSend.count {
                let amount = min(dataToSend.count - index, central.maximumUpdateValueLength)
                guard peripheralManager.updateValue(dataToSend.subdata(in: index..<index + amount), for: transferCharacteristic,
                                                    onSubscribedCentrals: [central]) else {
                    refusals += 1
                    sendIndex[central.identifier] = index
                    return
                }
                index += amount
            }
            sendIndex[central.identifier] = index
            guard peripheralManager.updateValue(Data("EOM".utf8), for: transferCharacteristic, onSubscribedCentrals: [central]) else {
                refusals += 1
                return
            }
            sentEOM.insert(central.identifier)
            say("peripheral: sent \(index) bytes and EOM to \(central.identifier.uuidString) (updateValue refused \(refusals) times so far)")
        }
    }
}

final class TransferCentral: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate {
    let label: String
    var centralManager: CBCentralManager!
    var discoveredPeripheral: CBPeripheral?
    var data = Data()
    let expected: Data
    let done: () -> Void

    init(label: String, expected: Data, done: @escaping () -> Void) {
        self.label = label
        self.expected = expected
        self.done = done
        super.init()
        centralManager = CBCentralManager(delegate: self, queue: nil)
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        guard central.state == .poweredOn else { return }
        central.scanForPeripherals(withServices: [transferServiceUUID], options: [CBCentralManagerScanOptionAllowDuplicatesKey: true])
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                        advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard discoveredPeripheral == nil, advertisementData[CBAdvertisementDataLocalNameKey] as? String == peripheralName else { return }
        discoveredPeripheral = peripheral
        central.stopScan()
        central.connect(peripheral, options: nil)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        data.removeAll()
        peripheral.delegate = self
        peripheral.discoverServices([transferServiceUUID])
    }

    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: Error?) {
        done()
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: Error?) {
        for service in peripheral.services ?? [] { peripheral.discoverCharacteristics([transferCharacteristicUUID, whoAmIUUID], for: service) }
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: Error?) {
        for characteristic in service.characteristics ?? [] {
            if characteristic.uuid == whoAmIUUID { peripheral.readValue(for: characteristic) }
            if characteristic.uuid == transferCharacteristicUUID { peripheral.setNotifyValue(true, for: characteristic) }
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: Error?) {
        guard error == nil, let value = characteristic.value else { return }
        if characteristic.uuid == whoAmIUUID {
            say("central \(label): the peripheral knows me as \(String(decoding: value, as: UTF8.self))")
            return
        }
        guard value != Data("EOM".utf8) else {
            say("central \(label): received \(data.count) bytes, \(data == expected ? "identical to the file" : "DIFFERENT from the file")")
            peripheral.writeValue(Data("thanks from \(label)".utf8), for: characteristic, type: .withResponse)
            return
        }
        data.append(value)
    }

    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: Error?) {
        say("central \(label): reply \(error == nil ? "written" : "refused: \(error.map { "\($0)" } ?? "")")")
        peripheral.setNotifyValue(false, for: characteristic)
        centralManager.cancelPeripheralConnection(peripheral)
    }
}

let file: Data
if let path = option("--file") {
    guard let contents = FileManager.default.contents(atPath: path) else {
        say("cannot read \(path)")
        exit(2)
    }
    file = contents
} else {
    let sentence = Array("The quick brown fox jumps over the lazy dog. ".utf8)
    file = Data((0..<4000).map { sentence[$0 % sentence.count] })
}
let centralCount = option("--centrals").flatMap(Int.init) ?? 2
/// Counts the centrals that finished; the demo ends with the last.
final class Progress {
    var finished = 0
}
let progress = Progress()
let peripheral = TransferPeripheral(data: file)
if peripheralOnly {
    peripheral.replied = { count in
        guard count == centralCount else { return }
        say("done")
        // Let the last answer go out before the controller closes.
        DispatchQueue.main.asyncAfter(deadline: .now() + 0.5) { exit(0) }
    }
}
let centrals = (peripheralOnly ? 0 : centralCount) > 0 ? (0..<centralCount).map { index in
    TransferCentral(label: String(UnicodeScalar(UInt8(65 + index))), expected: file) {
        progress.finished += 1
        if progress.finished == centralCount {
            say("done")
            exit(0)
        }
    }
} : []
DispatchQueue.main.asyncAfter(deadline: .now() + 60) {
    say("timed out")
    exit(1)
}
dispatchMain()
