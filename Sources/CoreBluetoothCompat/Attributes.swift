import BLE
import Foundation

/// An attribute of a peripheral's GATT database, identified by its type, as CoreBluetooth's `CBAttribute`.
public class CBAttribute: NSObject, @unchecked Sendable {
    /// The attribute's type.
    public let uuid: CBUUID

    init(uuid: CBUUID) {
        self.uuid = uuid
        super.init()
    }
}

/// A service of a remote peripheral, as CoreBluetooth's `CBService` (a published one is a ``CBMutableService``).
public class CBService: CBAttribute, @unchecked Sendable {
    struct State {
        weak var peripheral: CBPeripheral?
        var characteristics: [CBCharacteristic]?
        var includedServices: [CBService]?
        var gatt: GATTService
    }

    let protected: Locked<State>
    /// The service as the BLE module discovered it, or as it was published (its handles).
    var gatt: GATTService { protected.withLock { $0.gatt } }

    init(peripheral: CBPeripheral?, gatt: GATTService) {
        var state = State(gatt: gatt)
        state.peripheral = peripheral
        protected = Locked(state)
        super.init(uuid: CBUUID(gatt.uuid))
    }

    /// The peripheral the service belongs to (`nil` once that object is gone, and for a published service).
    public var peripheral: CBPeripheral? { protected.withLock { $0.peripheral } }
    /// Whether it is a primary service.
    public var isPrimary: Bool { gatt.isPrimary }
    /// The characteristics discovered so far (`nil` before ``CBPeripheral/discoverCharacteristics(_:for:)``
    /// succeeded).
    public var characteristics: [CBCharacteristic]? { protected.withLock { $0.characteristics } }
    /// The included services discovered (`nil` before ``CBPeripheral/discoverIncludedServices(_:for:)`` succeeded).
    public var includedServices: [CBService]? { protected.withLock { $0.includedServices } }

    /// The UUID string and handle range.
    public override var description: String { "CBService \(uuid.uuidString) \(gatt.range)" }

    func setIncludedServices(_ services: [CBService]?) { protected.withLock { $0.includedServices = services } }

    /// Adds discovered characteristics, keeping the objects of those found before.
    func merge(_ found: [GATTCharacteristic]) {
        protected.withLock { state in
            var byHandle: [AttributeHandle: CBCharacteristic] = [:]
            for characteristic in state.characteristics ?? [] { byHandle[characteristic.gatt.valueHandle] = characteristic }
            for characteristic in found where byHandle[characteristic.valueHandle]?.gatt != characteristic {
                byHandle[characteristic.valueHandle] = CBCharacteristic(service: self, gatt: characteristic)
            }
            state.characteristics = byHandle.values.sorted { $0.gatt.valueHandle < $1.gatt.valueHandle }
        }
    }
}

/// A characteristic of a remote peripheral's service, as CoreBluetooth's `CBCharacteristic` (a published one is a
/// ``CBMutableCharacteristic``).
public class CBCharacteristic: CBAttribute, @unchecked Sendable {
    struct State {
        weak var service: CBService?
        var value: Data?
        var isNotifying = false
        var descriptors: [CBDescriptor]?
        var subscribed = false
        var forwarder: Task<Void, Never>?
        var gatt: GATTCharacteristic
    }

    let protected: Locked<State>
    /// The characteristic as the BLE module discovered it, or as it was published (its handles).
    var gatt: GATTCharacteristic { protected.withLock { $0.gatt } }

    init(service: CBService?, gatt: GATTCharacteristic) {
        var state = State(gatt: gatt)
        state.service = service
        protected = Locked(state)
        super.init(uuid: CBUUID(gatt.uuid))
    }

    /// The service it belongs to (`nil` once that object is gone, and for a published characteristic not added yet).
    public var service: CBService? { protected.withLock { $0.service } }
    /// Its properties, from its declaration, with CoreBluetooth's bit values.
    public var properties: CBCharacteristicProperties { CBCharacteristicProperties(gatt.properties) }
    /// The latest value read or notified (`nil` before any).
    public var value: Data? { protected.withLock { $0.value } }
    /// Whether notifications or indications are on (see ``CBPeripheral/setNotifyValue(_:for:)``).
    public var isNotifying: Bool { protected.withLock { $0.isNotifying } }
    /// Whether the characteristic's value is broadcast (its Server Characteristic Configuration): always `false`,
    /// as Apple's deprecated property always was; broadcasting is not read.
    @available(*, deprecated, message: "always false")
    public var isBroadcasted: Bool { false }
    /// Its descriptors (`nil` before ``CBPeripheral/discoverDescriptors(for:)`` succeeded).
    public var descriptors: [CBDescriptor]? { protected.withLock { $0.descriptors } }

    /// The UUID string, properties and value handle.
    public override var description: String {
        "CBCharacteristic \(uuid.uuidString) properties 0x\(String(properties.rawValue, radix: 16)) handle \(gatt.valueHandle)"
    }

    func setValue(_ value: Data?) { protected.withLock { $0.value = value } }

    /// Marks the characteristic subscribed; `false` when it already was.
    func claimSubscription() -> Bool {
        protected.withLock { state in
            guard !state.subscribed else { return false }
            state.subscribed = true
            return true
        }
    }

    func releaseSubscription() { protected.withLock { $0.subscribed = false } }

    /// Turns notifying on and forwards `values` to the peripheral's delegate.
    func startNotifying(_ values: NotificationStream, peripheral: CBPeripheral) {
        let forwarder = Task { [weak self, weak peripheral] in
            for await value in values {
                guard let self, let peripheral else { return }
                peripheral.notified(value, for: self)
            }
        }
        protected.withLock { state in
            state.forwarder?.cancel()
            state.forwarder = forwarder
            state.isNotifying = true
        }
    }

    /// Turns notifying off (unsubscribed, or the link ended).
    func stopNotifying() {
        let forwarder = protected.withLock { state in
            state.isNotifying = false
            state.subscribed = false
            let forwarder = state.forwarder
            state.forwarder = nil
            return forwarder
        }
        forwarder?.cancel()
    }

    /// Adds discovered descriptors, keeping the objects of those found before.
    func merge(_ found: [GATTDescriptor]) {
        protected.withLock { state in
            var byHandle: [AttributeHandle: CBDescriptor] = [:]
            for descriptor in state.descriptors ?? [] { byHandle[descriptor.gatt.handle] = descriptor }
            for descriptor in found where byHandle[descriptor.handle]?.gatt != descriptor {
                byHandle[descriptor.handle] = CBDescriptor(characteristic: self, gatt: descriptor)
            }
            state.descriptors = byHandle.values.sorted { $0.gatt.handle < $1.gatt.handle }
        }
    }
}

/// A descriptor of a remote characteristic, as CoreBluetooth's `CBDescriptor` (a published one is a
/// ``CBMutableDescriptor``).
public class CBDescriptor: CBAttribute, @unchecked Sendable {
    struct State {
        weak var characteristic: CBCharacteristic?
        var value: [UInt8]?
        var gatt: GATTDescriptor
    }

    let protected: Locked<State>
    /// The descriptor as the BLE module discovered it, or as it was published (its handle).
    var gatt: GATTDescriptor { protected.withLock { $0.gatt } }

    init(characteristic: CBCharacteristic?, gatt: GATTDescriptor) {
        var state = State(gatt: gatt)
        state.characteristic = characteristic
        protected = Locked(state)
        super.init(uuid: CBUUID(gatt.uuid))
    }

    /// The characteristic it belongs to (`nil` once that object is gone).
    public var characteristic: CBCharacteristic? { protected.withLock { $0.characteristic } }

    /// The latest value read (`nil` before any), typed as CoreBluetooth types it: an `NSNumber` for the Extended
    /// Properties (0x2900) and Client Characteristic Configuration (0x2902) descriptors, a `String` for the User
    /// Description (0x2901), `Data` for any other.
    public var value: Any? {
        guard let bytes = protected.withLock({ $0.value }) else { return nil }
        switch uuid.bluetoothUUID.uint16 {
        case 0x2900, 0x2902:
            let number = bytes.prefix(2).enumerated().reduce(UInt16(0)) { $0 | UInt16($1.element) << (8 * $1.offset) }
            return NSNumber(value: number)
        case 0x2901:
            return String(decoding: bytes, as: UTF8.self)
        default:
            return Data(bytes)
        }
    }

    /// The UUID string and handle.
    public override var description: String { "CBDescriptor \(uuid.uuidString) handle \(gatt.handle)" }

    func setValue(_ value: [UInt8]) { protected.withLock { $0.value = value } }
}
