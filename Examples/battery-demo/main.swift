// battery-demo: the battery-level app of the CoreBluetooth tutorials — scan for devices with the Battery (180F) or
// Device Information (180A) service, connect to the one with the wanted local name, read the manufacturer name,
// read the battery level and follow its notifications.
//
//     swift run battery-demo [--name NAME] [--updates N]   ("SwiftBLE Battery" and 4 notifications by default;
//                                                          0 reads the level once and stops)
import CoreBluetooth

/// Prints a line at once, even when standard output is a pipe (as when a test runs the demo). A plain write: stdio's
/// `fflush(nil)` would wait for the lock of standard input, which a thread blocked in `readLine()` holds.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

final class BatteryMonitor: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate {
    let batteryServiceUUID = CBUUID(string: "180F")
    let deviceInformationUUID = CBUUID(string: "180A")
    let batteryLevelUUID = CBUUID(string: "2A19")
    let manufacturerNameUUID = CBUUID(string: "2A29")

    var centralManager: CBCentralManager!
    var device: CBPeripheral?
    var notifications = 0
    var manufacturer: String?
    var hasInformationService = false
    var finishing = false
    let wantedName: String
    let wantedUpdates: Int

    init(name: String, updates: Int) {
        wantedName = name
        wantedUpdates = updates
        super.init()
        centralManager = CBCentralManager(delegate: self, queue: nil)
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        guard central.state == .poweredOn else { return }
        say("scanning for \(wantedName)")
        central.scanForPeripherals(withServices: [batteryServiceUUID, deviceInformationUUID], options: nil)
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                        advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard device == nil, advertisementData[CBAdvertisementDataLocalNameKey] as? String == wantedName else { return }
        device = peripheral
        central.stopScan()
        central.connect(peripheral, options: nil)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        say("connected to \(peripheral.name ?? wantedName)")
        peripheral.delegate = self
        peripheral.discoverServices([batteryServiceUUID, deviceInformationUUID])
    }

    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: Error?) {
        say("disconnected")
        exit(finishing ? 0 : 1)
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: Error?) {
        hasInformationService = peripheral.services?.contains { $0.uuid == deviceInformationUUID } ?? false
        for service in peripheral.services ?? [] {
            peripheral.discoverCharacteristics([batteryLevelUUID, manufacturerNameUUID], for: service)
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: Error?) {
        for characteristic in service.characteristics ?? [] {
            peripheral.readValue(for: characteristic)
            if characteristic.uuid == batteryLevelUUID, characteristic.properties.contains(.notify) {
                peripheral.setNotifyValue(true, for: characteristic)
            }
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: Error?) {
        guard let value = characteristic.value else { return }
        switch characteristic.uuid {
        case manufacturerNameUUID:
            manufacturer = String(decoding: value, as: UTF8.self)
            say("manufacturer \(manufacturer ?? "")")
        case batteryLevelUUID:
            let level = value.first.map(Int.init) ?? -1
            if characteristic.isNotifying {
                notifications += 1
                say("battery level \(level)% (notification \(notifications))")
            } else {
                say("battery level \(level)%")
            }
        default:
            break
        }
        // Done once the manufacturer is known (when the device has the service) and enough levels were notified.
        if notifications >= wantedUpdates, manufacturer != nil || !hasInformationService, !finishing {
            finishing = true
            centralManager.cancelPeripheralConnection(peripheral)
        }
    }
}

func option(_ name: String) -> String? {
    let arguments = CommandLine.arguments
    return arguments.firstIndex(of: name).flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil }
}

let monitor = BatteryMonitor(name: option("--name") ?? "SwiftBLE Battery", updates: option("--updates").flatMap(Int.init) ?? 4)
DispatchQueue.main.asyncAfter(deadline: .now() + 60) {
    say("timed out")
    exit(1)
}
dispatchMain()
