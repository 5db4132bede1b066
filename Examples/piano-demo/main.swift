// piano-demo: a piano-with-LED-keys app written the way the CoreBluetooth tutorials write it — find the piano,
// connect (again on failure and whenever the link drops), light every key in turn (115 writes with response, each
// answered by its own callback, in order), and print the keys played.
//
//     swift run piano-demo [--notes N]      (exits after N key events, 8 by default)
import CoreBluetooth
import Foundation

/// Prints a line at once, even when standard output is a pipe (as when a test runs the demo). A plain write: stdio's
/// `fflush(nil)` would wait for the lock of standard input, which a thread blocked in `readLine()` holds.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

final class PianoController: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate {
    let pianoName = "Piano"
    let keyServiceUUID = CBUUID(string: "FFE0")
    let ledServiceUUID = CBUUID(string: "FFE1")
    let keyEventsUUID = CBUUID(string: "FFE2")
    let ledControlUUID = CBUUID(string: "FFE3")
    let keyCount = 115
    let noteNames = ["C", "C#", "D", "D#", "E", "F", "F#", "G", "G#", "A", "A#", "B"]

    var centralManager: CBCentralManager!
    var piano: CBPeripheral?
    var keysLit = 0
    var sweepStarted = false
    var keyEvents = 0
    var finishing = false
    let wantedNotes: Int

    init(wantedNotes: Int) {
        self.wantedNotes = wantedNotes
        super.init()
        centralManager = CBCentralManager(delegate: self, queue: nil)
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        guard central.state == .poweredOn else {
            say("Bluetooth is not available (state \(central.state.rawValue))")
            return
        }
        central.scanForPeripherals(withServices: [keyServiceUUID], options: nil)
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                        advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard piano == nil, let name = advertisementData[CBAdvertisementDataLocalNameKey] as? String, name.hasSuffix(pianoName) else { return }
        say("found \(name)")
        piano = peripheral
        central.stopScan()
        central.connect(peripheral, options: nil)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        say("connected")
        peripheral.delegate = self
        peripheral.discoverServices([keyServiceUUID, ledServiceUUID])
    }

    func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: Error?) {
        say("connection failed; retrying")
        central.connect(peripheral, options: nil)
    }

    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: Error?) {
        if finishing {
            say("disconnected")
            exit(0)
        }
        say("disconnected (\(error.map { "\($0)" } ?? "no reason")); reconnecting")
        central.connect(peripheral, options: nil)
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: Error?) {
        for service in peripheral.services ?? [] { peripheral.discoverCharacteristics(nil, for: service) }
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: Error?) {
        for characteristic in service.characteristics ?? [] {
            if characteristic.uuid == keyEventsUUID { peripheral.setNotifyValue(true, for: characteristic) }
            if characteristic.uuid == ledControlUUID, !sweepStarted {
                sweepStarted = true
                say("lighting \(keyCount) keys")
                for key in 0..<keyCount {
                    peripheral.writeValue(Data([0xF0, 0x3D, 0x3D, UInt8(key), 0x01, 0xF7]), for: characteristic, type: .withResponse)
                }
            }
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: Error?) {
        if let error {
            say("key \(keysLit) refused: \(error)")
            return
        }
        keysLit += 1
        if keysLit == keyCount { say("lit \(keysLit) keys") }
        finishIfDone(peripheral)
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: Error?) {
        guard characteristic.uuid == keyEventsUUID, let value = characteristic.value else { return }
        let bytes = [UInt8](value)
        var index = 0
        while index + 3 <= bytes.count {
            let (status, note, velocity) = (bytes[index], bytes[index + 1], bytes[index + 2])
            index += 3
            let name = "\(noteNames[Int(note) % 12])\(Int(note) / 12 - 1)"
            switch status & 0xF0 {
            case 0x90 where velocity > 0: say("note on \(name) velocity \(velocity) channel \(status & 0x0F)")
            case 0x80, 0x90: say("note off \(name)")
            default: continue
            }
            keyEvents += 1
        }
        finishIfDone(peripheral)
    }

    func finishIfDone(_ peripheral: CBPeripheral) {
        guard !finishing, keysLit == keyCount, keyEvents >= wantedNotes else { return }
        finishing = true
        say("done: \(keysLit) keys lit, \(keyEvents) key events")
        centralManager.cancelPeripheralConnection(peripheral)
    }
}

let arguments = CommandLine.arguments
let notes = arguments.firstIndex(of: "--notes").flatMap { arguments.indices.contains($0 + 1) ? Int(arguments[$0 + 1]) : nil } ?? 8
let controller = PianoController(wantedNotes: notes)
DispatchQueue.main.asyncAfter(deadline: .now() + 60) {
    say("timed out")
    exit(1)
}
dispatchMain()
