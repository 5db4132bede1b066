import CoreBluetoothCompat
import Foundation
import Synchronization
import Testing

/// Collects the names a CBCentralManager discovers.
final class NameCollector: NSObject, CBCentralManagerDelegate, @unchecked Sendable {
    var manager: CBCentralManager!
    let names = Mutex<Set<String>>([])

    init(queue: DispatchQueue) {
        super.init()
        manager = CBCentralManager(delegate: self, queue: queue)
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        if central.state == .poweredOn { central.scanForPeripherals(withServices: nil) }
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any], rssi RSSI: NSNumber) {
        if let name = advertisementData[CBAdvertisementDataLocalNameKey] as? String { names.withLock { _ = $0.insert(name) } }
    }
}

/// A CoreBluetooth program on the embedded world sees the same thirteen simulated devices as `ble scan` does
/// (ExamplesTests' ServeDevicesTests checks the tool's list against the same names).
@Suite struct EmbeddedWorldDevicesTests {
    static let names: Set<String> = ["SwiftBLELab", "SwiftBLE HRM", "SwiftBLE Battery", "SwiftBLE BPM", "SwiftBLE Thermometer",
                                     "SwiftBLE Weight", "SwiftBLE Body", "SwiftBLE Glucose", "SwiftBLE Clock", "SwiftBLE Band",
                                     "SwiftBLE Piano", "SwiftBLE Scale", "SwiftBLE Phone"]

    @Test func aCentralManagerDiscoversEveryDevice() async throws {
        let collector = NameCollector(queue: DispatchQueue(label: "name collector"))
        let deadline = ContinuousClock.now + .seconds(20)
        while !collector.names.withLock({ $0.isSuperset(of: Self.names) }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        collector.manager.stopScan()
        // Other suites add peripherals of their own to the same world: the thirteen must all be there.
        let seen = collector.names.withLock { $0 }
        #expect(seen.isSuperset(of: Self.names), "missing \(Self.names.subtracting(seen))")
    }
}
