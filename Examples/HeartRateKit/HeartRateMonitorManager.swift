// HeartRateKit: the Bluetooth layer of a heart-rate app, written as an iOS developer writes one — a manager class that
// is the CBCentralManager's and the monitor's delegate, with a state machine (idle, scanning, connecting, discovering,
// ready, reconnecting) and reconnection after a loss. It imports CoreBluetooth and nothing else: on iOS it is Apple's
// framework, on Linux swift-ble's. Its tests (Tests/HeartRateKitTests) run it against simulated monitors.
import CoreBluetooth

/// Where a heart-rate sensor is worn: the Body Sensor Location characteristic (0x2A38).
public enum BodySensorLocation: UInt8, Sendable {
    /// Elsewhere (0), or a value this type does not know.
    case other = 0
    /// On the chest (1).
    case chest
    /// On the wrist (2).
    case wrist
    /// On a finger (3).
    case finger
    /// In the hand (4).
    case hand
    /// On an ear lobe (5).
    case earLobe
    /// On a foot (6).
    case foot
}

/// What the manager is doing.
public enum HeartRateManagerState: Equatable, Sendable {
    /// Bluetooth is not on (or the manager is stopped): nothing to do.
    case idle
    /// Looking for a monitor advertising the Heart Rate service.
    case scanning
    /// Connecting to the monitor found.
    case connecting
    /// Connected; finding the Heart Rate service and its characteristics, subscribing to the measurement.
    case discovering
    /// Subscribed: heart rates arrive.
    case ready
    /// The link was lost (or Bluetooth came back on): connecting to the same monitor again, for as long as it takes.
    case reconnecting
}

/// Finds a Bluetooth heart-rate monitor (Heart Rate service 0x180D), connects, reads where the sensor is worn,
/// subscribes to the measurement, and keeps the monitor: when the link drops, or Bluetooth goes off and on, it
/// reconnects to the same monitor by itself.
///
/// The delegate callbacks run on the queue given at creation; the properties can be read from any thread, and
/// ``onChange`` is called on that queue after each change.
public final class HeartRateMonitorManager: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    /// The Heart Rate service.
    public static let heartRateService = CBUUID(string: "180D")
    /// The Heart Rate Measurement characteristic (notify).
    public static let measurementCharacteristic = CBUUID(string: "2A37")
    /// The Body Sensor Location characteristic (read).
    public static let bodySensorLocationCharacteristic = CBUUID(string: "2A38")

    private let lock = NSLock()
    private var _state = HeartRateManagerState.idle
    private var _heartRate: Int?
    private var _sensorLocation: BodySensorLocation?
    private var _lastError: Error?
    private var _reconnections = 0
    private var _monitorName: String?
    private var stopped = false

    private let queue: DispatchQueue
    private var centralManager: CBCentralManager!
    /// The monitor in use: kept across disconnections so that the manager reconnects to it.
    private var monitor: CBPeripheral?
    /// The monitor's identifier, to find it again after Bluetooth was off (iOS invalidates the peripheral objects).
    private var monitorIdentifier: UUID?

    /// Called on the delegate queue after any change of the properties.
    public var onChange: (@Sendable (HeartRateMonitorManager) -> Void)?

    /// What the manager is doing now.
    public var state: HeartRateManagerState { lock.withLock { _state } }
    /// The last heart rate received, in beats per minute.
    public var heartRate: Int? { lock.withLock { _heartRate } }
    /// Where the sensor is worn, once read.
    public var sensorLocation: BodySensorLocation? { lock.withLock { _sensorLocation } }
    /// The last error a callback reported (a failed read or subscription, a lost link).
    public var lastError: Error? { lock.withLock { _lastError } }
    /// How many times the manager got the monitor back after losing it.
    public var reconnections: Int { lock.withLock { _reconnections } }
    /// The name of the monitor in use.
    public var monitorName: String? { lock.withLock { _monitorName } }

    /// Creates the manager; its delegate callbacks run on `queue` (a queue of its own when `nil`). It starts
    /// scanning as soon as Bluetooth is on.
    public init(queue: DispatchQueue? = nil) {
        self.queue = queue ?? DispatchQueue(label: "HeartRateMonitorManager")
        super.init()
        centralManager = CBCentralManager(delegate: self, queue: self.queue)
    }

    /// Disconnects and forgets the monitor; the manager goes idle.
    public func stop() {
        queue.async {
            self.stopped = true
            self.centralManager.stopScan()
            if let monitor = self.monitor { self.centralManager.cancelPeripheralConnection(monitor) }
            self.monitor = nil
            self.monitorIdentifier = nil
            self.update { $0._state = .idle }
        }
    }

    private func update(_ change: (HeartRateMonitorManager) -> Void) {
        lock.withLock { change(self) }
        onChange?(self)
    }

    // The callbacks use the manager they are given: the first one may come before `centralManager` is assigned.

    private func startScanning(_ central: CBCentralManager) {
        update { $0._state = .scanning }
        central.scanForPeripherals(withServices: [Self.heartRateService], options: nil)
    }

    private func reconnect(to peripheral: CBPeripheral, using central: CBCentralManager) {
        update { $0._state = .reconnecting }
        // A pending connection: it completes whenever the monitor is back in range.
        central.connect(peripheral, options: nil)
    }

    // MARK: CBCentralManagerDelegate

    public func centralManagerDidUpdateState(_ central: CBCentralManager) {
        guard !stopped else { return }
        guard central.state == .poweredOn else {
            // Bluetooth off (or unavailable): the connection is gone; the monitor is found again when it comes back.
            monitor = nil
            update { $0._state = .idle }
            return
        }
        if let identifier = monitorIdentifier,
           let known = central.retrievePeripherals(withIdentifiers: [identifier]).first {
            monitor = known
            reconnect(to: known, using: central)
        } else {
            startScanning(central)
        }
    }

    public func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                               advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard state == .scanning, monitor == nil else { return }
        central.stopScan()
        monitor = peripheral
        monitorIdentifier = peripheral.identifier
        update { manager in
            manager._monitorName = peripheral.name
            manager._state = .connecting
        }
        central.connect(peripheral, options: nil)
    }

    public func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        guard peripheral == monitor else { return }
        update { manager in
            if manager._state == .reconnecting { manager._reconnections += 1 }
            manager._state = .discovering
        }
        peripheral.delegate = self
        peripheral.discoverServices([Self.heartRateService])
    }

    public func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: Error?) {
        guard peripheral == monitor, !stopped else { return }
        update { $0._lastError = error }
        reconnect(to: peripheral, using: central)
    }

    public func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: Error?) {
        guard peripheral == monitor, !stopped else { return }
        update { $0._lastError = error }
        // Bluetooth going off ends the links too: then wait for it to come back on (centralManagerDidUpdateState).
        guard central.state == .poweredOn else { return }
        reconnect(to: peripheral, using: central)
    }

    // MARK: CBPeripheralDelegate

    public func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: Error?) {
        guard let service = peripheral.services?.first(where: { $0.uuid == Self.heartRateService }) else {
            update { $0._lastError = error }
            return
        }
        peripheral.discoverCharacteristics([Self.measurementCharacteristic, Self.bodySensorLocationCharacteristic], for: service)
    }

    public func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: Error?) {
        for characteristic in service.characteristics ?? [] {
            switch characteristic.uuid {
            case Self.bodySensorLocationCharacteristic: peripheral.readValue(for: characteristic)
            case Self.measurementCharacteristic: peripheral.setNotifyValue(true, for: characteristic)
            default: break
            }
        }
    }

    public func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic,
                           error: Error?) {
        guard characteristic.uuid == Self.measurementCharacteristic else { return }
        if let error {
            update { $0._lastError = error }
        } else if characteristic.isNotifying {
            update { $0._state = .ready }
        }
    }

    public func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: Error?) {
        if let error {
            update { $0._lastError = error }
            return
        }
        guard let value = characteristic.value else { return }
        switch characteristic.uuid {
        case Self.measurementCharacteristic:
            guard let rate = Self.heartRate(from: value) else { return }
            update { $0._heartRate = rate }
        case Self.bodySensorLocationCharacteristic:
            guard let byte = value.first else { return }
            update { $0._sensorLocation = BodySensorLocation(rawValue: byte) ?? .other }
        default:
            break
        }
    }

    /// The heart rate of a Heart Rate Measurement value: a flags byte, then the rate in one byte, or in two
    /// (little-endian) when flag bit 0 is set; `nil` when the value is too short.
    public static func heartRate(from value: Data) -> Int? {
        let bytes = [UInt8](value)
        guard let flags = bytes.first else { return nil }
        if flags & 0x01 == 0 {
            return bytes.count >= 2 ? Int(bytes[1]) : nil
        }
        return bytes.count >= 3 ? Int(bytes[1]) | Int(bytes[2]) << 8 : nil
    }
}
