// scale-demo: a health-scale app written the way the CoreBluetooth tutorials write it — check the power state,
// connect with a 5-second timeout timer (cancel and retry when it fires), discover only the service of interest,
// subscribe, and reassemble the length-prefixed frames that arrive in arbitrary chunks into readings.
//
//     swift run scale-demo [--readings N]   (exits after N readings, 5 by default)
import BLEProfiles
import CoreBluetooth
import Foundation

/// Prints a line at once, even when standard output is a pipe (as when a test runs the demo). A plain write: stdio's
/// `fflush(nil)` would wait for the lock of standard input, which a thread blocked in `readLine()` holds.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

final class ScaleController: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate {
    let scaleServiceUUID = CBUUID(string: "7D2E0001-5C3A-4B8E-9F41-5357424C4553")
    let streamUUID = CBUUID(string: "7D2E0002-5C3A-4B8E-9F41-5357424C4553")
    let connectTimeout: TimeInterval = 5

    var centralManager: CBCentralManager!
    var scale: CBPeripheral?
    var connectTimer: DispatchWorkItem?
    var attempts = 0
    var reassembler = HealthFrameReassembler()
    var readings = 0
    var finishing = false
    let wantedReadings: Int

    init(wantedReadings: Int) {
        self.wantedReadings = wantedReadings
        super.init()
        centralManager = CBCentralManager(delegate: self, queue: nil)
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        switch central.state {
        case .poweredOn:
            say("powered on; scanning for the scale service")
            central.scanForPeripherals(withServices: [scaleServiceUUID], options: nil)
        case .poweredOff: say("Bluetooth is off")
        case .unauthorized: say("not allowed to use Bluetooth")
        case .unsupported: say("no Bluetooth LE controller")
        default: break
        }
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                        advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard scale == nil else { return }
        say("found \(peripheral.name ?? "a scale")")
        scale = peripheral
        central.stopScan()
        connect(peripheral)
    }

    /// Connects, and gives up on the attempt after the timeout to try again.
    func connect(_ peripheral: CBPeripheral) {
        attempts += 1
        say("connecting (attempt \(attempts))")
        centralManager.connect(peripheral, options: nil)
        connectTimer?.cancel()
        let timer = DispatchWorkItem { [weak self] in
            guard let self, peripheral.state != .connected else { return }
            say("no connection after \(Int(self.connectTimeout)) s; cancelling and retrying")
            self.centralManager.cancelPeripheralConnection(peripheral)
            self.connect(peripheral)
        }
        connectTimer = timer
        DispatchQueue.main.asyncAfter(deadline: .now() + connectTimeout, execute: timer)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        connectTimer?.cancel()
        say("connected")
        peripheral.delegate = self
        peripheral.discoverServices([scaleServiceUUID])
    }

    func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: Error?) {
        say("connection failed; retrying")
        connect(peripheral)
    }

    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: Error?) {
        if finishing {
            say("disconnected")
            exit(0)
        }
        reassembler = HealthFrameReassembler()
        connect(peripheral)
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: Error?) {
        guard let service = peripheral.services?.first(where: { $0.uuid == scaleServiceUUID }) else { return }
        peripheral.discoverCharacteristics([streamUUID], for: service)
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: Error?) {
        guard let stream = service.characteristics?.first(where: { $0.uuid == streamUUID }) else { return }
        peripheral.setNotifyValue(true, for: stream)
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: Error?) {
        say("subscribed \(characteristic.isNotifying)")
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: Error?) {
        guard let chunk = characteristic.value else { return }
        for result in reassembler.append([UInt8](chunk)) {
            switch result {
            case .success(let frame):
                guard let reading = try? HealthScaleReading(frame: frame) else {
                    say("a frame that is not a reading (command \(frame.command))")
                    continue
                }
                readings += 1
                say(String(format: "reading %d: %.3f kg, impedance %d ohm", Int(reading.sequence), Double(reading.weightGrams) / 1000,
                           Int(reading.impedanceOhms)))
            case .failure(let error):
                say("skipped: \(error)")
            }
        }
        if readings >= wantedReadings, !finishing {
            finishing = true
            say("done after \(readings) readings")
            centralManager.cancelPeripheralConnection(peripheral)
        }
    }
}

let arguments = CommandLine.arguments
let wanted = arguments.firstIndex(of: "--readings").flatMap { arguments.indices.contains($0 + 1) ? Int(arguments[$0 + 1]) : nil } ?? 5
let controller = ScaleController(wantedReadings: wanted)
DispatchQueue.main.asyncAfter(deadline: .now() + 60) {
    say("timed out")
    exit(1)
}
dispatchMain()
