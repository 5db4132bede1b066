// band-demo: a fitness-band app written the way the CoreBluetooth tutorials write it — scan for a name suffix,
// stop scanning, connect, discover everything, subscribe to the step count, read steps and battery, make the band
// vibrate, and reconnect whenever the band drops the link. On Linux it runs on the embedded simulated world
// ("SwiftBLE Band"), or on the controller SWIFT_BLE_HCI names.
//
//     swift run band-demo [--updates N]     (exits after N step notifications, 6 by default)
import CoreBluetooth

/// Prints a line at once, even when standard output is a pipe (as when a test runs the demo). A plain write: stdio's
/// `fflush(nil)` would wait for the lock of standard input, which a thread blocked in `readLine()` holds.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

final class BandController: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate {
    let nameSuffix = "Band"
    let bandServiceUUID = CBUUID(string: "FEE0")
    let deviceInfoUUID = CBUUID(string: "FF01")
    let stepsUUID = CBUUID(string: "FF06")
    let batteryUUID = CBUUID(string: "FF0C")
    let alertServiceUUID = CBUUID(string: "1802")
    let alertLevelUUID = CBUUID(string: "2A06")

    var centralManager: CBCentralManager!
    var band: CBPeripheral?
    var alertLevel: CBCharacteristic?
    var stepUpdates = 0
    var vibrated = false
    var finishing = false
    let wantedUpdates: Int

    init(wantedUpdates: Int) {
        self.wantedUpdates = wantedUpdates
        super.init()
        centralManager = CBCentralManager(delegate: self, queue: nil)
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        switch central.state {
        case .poweredOn:
            say("Bluetooth is on, scanning for a device whose name ends in \"\(nameSuffix)\"")
            central.scanForPeripherals(withServices: nil, options: nil)
        default:
            say("Bluetooth is not available (state \(central.state.rawValue))")
        }
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                        advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard band == nil, let name = peripheral.name, name.hasSuffix(nameSuffix) else { return }
        say("found \(name) at \(RSSI) dBm")
        band = peripheral
        central.stopScan()
        central.connect(peripheral, options: nil)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        say("connected to \(peripheral.name ?? "band")")
        peripheral.delegate = self
        peripheral.discoverServices(nil)
    }

    func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: Error?) {
        say("could not connect (\(error.map { "\($0)" } ?? "no reason")); trying again")
        central.connect(peripheral, options: nil)
    }

    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: Error?) {
        if finishing {
            say("disconnected")
            exit(0)
        }
        say("the band dropped the link (\(error.map { "\($0)" } ?? "no reason")); reconnecting")
        central.connect(peripheral, options: nil)
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: Error?) {
        guard error == nil else { return }
        for service in peripheral.services ?? [] { peripheral.discoverCharacteristics(nil, for: service) }
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: Error?) {
        for characteristic in service.characteristics ?? [] {
            switch characteristic.uuid {
            case deviceInfoUUID, batteryUUID:
                peripheral.readValue(for: characteristic)
            case stepsUUID:
                peripheral.readValue(for: characteristic)
                peripheral.setNotifyValue(true, for: characteristic)
            case alertLevelUUID:
                alertLevel = characteristic
            default:
                break
            }
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: Error?) {
        if characteristic.uuid == stepsUUID { say("step notifications \(characteristic.isNotifying ? "on" : "off")") }
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: Error?) {
        guard error == nil, let value = characteristic.value else { return }
        let bytes = [UInt8](value)
        switch characteristic.uuid {
        case deviceInfoUUID:
            say("device info \(bytes.map { String(format: "%02x", $0) }.joined())")
        case batteryUUID:
            say("battery \(bytes.first ?? 0)%")
        case stepsUUID where bytes.count >= 4:
            let steps = UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24
            say("steps \(steps)")
            guard characteristic.isNotifying else { return }
            stepUpdates += 1
            if stepUpdates == 2, !vibrated, let alertLevel {
                vibrated = true
                say("vibrate")
                peripheral.writeValue(Data([0x02]), for: alertLevel, type: .withoutResponse)
            }
            if stepUpdates >= wantedUpdates, !finishing {
                finishing = true
                say("done after \(stepUpdates) step updates")
                centralManager.cancelPeripheralConnection(peripheral)
            }
        default:
            break
        }
    }
}

let arguments = CommandLine.arguments
let updates = arguments.firstIndex(of: "--updates").flatMap { arguments.indices.contains($0 + 1) ? Int(arguments[$0 + 1]) : nil } ?? 6
let controller = BandController(wantedUpdates: updates)
DispatchQueue.main.asyncAfter(deadline: .now() + 60) {
    say("timed out")
    exit(1)
}
dispatchMain()
