import BLE
import Foundation

/// A service to publish with ``CBPeripheralManager/add(_:)``, as CoreBluetooth's `CBMutableService`.
public final class CBMutableService: CBService, @unchecked Sendable {
    /// Creates a service of type `UUID`, primary (discoverable) or secondary (only reachable as an included service).
    public init(type UUID: CBUUID, primary isPrimary: Bool) {
        super.init(peripheral: nil, gatt: GATTService(uuid: UUID.bluetoothUUID, isPrimary: isPrimary, startHandle: 0, endHandle: 0))
    }

    /// Whether it is a primary service.
    public override var isPrimary: Bool {
        get { super.isPrimary }
        set { protected.withLock { $0.gatt.isPrimary = newValue } }
    }

    /// Its characteristics (``CBMutableCharacteristic`` objects), in the order they are published.
    public override var characteristics: [CBCharacteristic]? {
        get { super.characteristics }
        set { protected.withLock { $0.characteristics = newValue } }
    }

    /// The services it includes: services already published with ``CBPeripheralManager/add(_:)``.
    public override var includedServices: [CBService]? {
        get { super.includedServices }
        set { setIncludedServices(newValue) }
    }

    /// The UUID string, and the handles once published.
    public override var description: String {
        let gatt = gatt
        return gatt.startHandle == 0 ? "CBMutableService \(uuid.uuidString) (not published)" : "CBMutableService \(uuid.uuidString) \(gatt.range)"
    }

    /// Records the handles the service got when it was published (0 when it was removed).
    func published(_ range: ClosedRange<AttributeHandle>?) {
        protected.withLock { state in
            state.gatt.startHandle = range?.lowerBound ?? 0
            state.gatt.endHandle = range?.upperBound ?? 0
        }
    }
}

/// A characteristic to publish, as CoreBluetooth's `CBMutableCharacteristic`.
///
/// With a `nil` value, every read and write of the value reaches the peripheral manager's delegate
/// (``CBPeripheralManagerDelegate/peripheralManager(_:didReceiveRead:)`` and
/// ``CBPeripheralManagerDelegate/peripheralManager(_:didReceiveWrite:)``), which answers it. With a value, the stack
/// serves it and the characteristic must be read-only, as in CoreBluetooth: ``CBPeripheralManager/add(_:)`` refuses
/// a service with a valued characteristic that can be written (where CoreBluetooth raises an exception).
public final class CBMutableCharacteristic: CBCharacteristic, @unchecked Sendable {
    private struct Published {
        var properties: CBCharacteristicProperties
        var permissions: CBAttributePermissions
        /// The links of the centrals subscribed, and those centrals.
        var subscribed: [(link: LinkID, central: CBCentral)] = []
    }

    private let published: Locked<Published>

    /// Creates a characteristic of type `UUID` with its properties, its value (`nil`: the delegate answers reads and
    /// writes) and who may read and write it.
    public init(type UUID: CBUUID, properties: CBCharacteristicProperties, value: Data?, permissions: CBAttributePermissions) {
        published = Locked(Published(properties: properties, permissions: permissions))
        super.init(service: nil, gatt: GATTCharacteristic(uuid: UUID.bluetoothUUID, properties: GATTCharacteristicProperties(properties),
                                                           declarationHandle: 0, valueHandle: 0, endHandle: 0))
        setValue(value)
    }

    /// Its properties, CoreBluetooth's bits (the two encryption bits included).
    public override var properties: CBCharacteristicProperties {
        get { published.withLock { $0.properties } }
        set { published.withLock { $0.properties = newValue } }
    }

    /// Who may read and write the value.
    public var permissions: CBAttributePermissions {
        get { published.withLock { $0.permissions } }
        set { published.withLock { $0.permissions = newValue } }
    }

    /// The value the stack serves (`nil`: the delegate answers reads and writes).
    public override var value: Data? {
        get { super.value }
        set { setValue(newValue) }
    }

    /// Its descriptors (``CBMutableDescriptor`` objects), published after the value.
    public override var descriptors: [CBDescriptor]? {
        get { super.descriptors }
        set { protected.withLock { $0.descriptors = newValue } }
    }

    /// The centrals subscribed to its notifications or indications now.
    public var subscribedCentrals: [CBCentral]? {
        let centrals = published.withLock { $0.subscribed.map(\.central) }
        return centrals.isEmpty ? nil : centrals
    }

    /// The UUID string, properties, and value handle once published.
    public override var description: String {
        let handle = gatt.valueHandle
        return "CBMutableCharacteristic \(uuid.uuidString) properties 0x\(String(properties.rawValue, radix: 16))"
            + (handle == 0 ? " (not published)" : " handle \(handle)")
    }

    /// Records a subscription change of the central on `link` (`central` is needed to subscribe); returns the
    /// central whose subscription changed, or `nil` when nothing changed.
    func subscription(of central: CBCentral?, on link: LinkID, subscribed: Bool) -> CBCentral? {
        published.withLock { state in
            let index = state.subscribed.firstIndex { $0.link == link }
            switch (index, subscribed, central) {
            case (nil, true, let central?):
                state.subscribed.append((link, central))
                return central
            case (let index?, false, _):
                return state.subscribed.remove(at: index).central
            default:
                return nil
            }
        }
    }

    /// Forgets the subscriptions (the service was removed).
    func clearSubscriptions() { published.withLock { $0.subscribed = [] } }

    /// Records the handles the characteristic got when its service was published, with the service it belongs to.
    func published(in service: CBService?, declaration: AttributeHandle, value: AttributeHandle, end: AttributeHandle) {
        protected.withLock { state in
            state.service = service
            state.gatt.declarationHandle = declaration
            state.gatt.valueHandle = value
            state.gatt.endHandle = end
        }
    }

    /// The definition the BLE module publishes.
    func definition() throws(CBError) -> GATTCharacteristicDefinition {
        let properties = properties
        let permissions = permissions
        let value = value
        if value != nil, !properties.isDisjoint(with: [.write, .writeWithoutResponse, .authenticatedSignedWrites]) || permissions.contains(.writeable)
            || permissions.contains(.writeEncryptionRequired) {
            throw CBError(.invalidParameters, reason: "characteristic \(uuid.uuidString) has a value, so it must be read-only (give it a nil value to answer writes)")
        }
        var gattPermissions: GATTPermissions = []
        if permissions.contains(.readable) || permissions.contains(.readEncryptionRequired) { gattPermissions.insert(.readable) }
        if permissions.contains(.writeable) || permissions.contains(.writeEncryptionRequired) { gattPermissions.insert(.writeable) }
        if permissions.contains(.readEncryptionRequired) { gattPermissions.insert(.readEncryptionRequired) }
        if permissions.contains(.writeEncryptionRequired) { gattPermissions.insert(.writeEncryptionRequired) }
        var descriptors: [GATTDescriptorDefinition] = []
        for descriptor in self.descriptors ?? [] {
            guard let mutable = descriptor as? CBMutableDescriptor else {
                throw CBError(.invalidParameters, reason: "descriptors of a published characteristic must be CBMutableDescriptor objects")
            }
            descriptors.append(try mutable.definition())
        }
        return GATTCharacteristicDefinition(
            uuid: uuid.bluetoothUUID, properties: GATTCharacteristicProperties(properties), permissions: gattPermissions,
            value: value.map { [UInt8]($0) } ?? [], descriptors: descriptors, source: value == nil ? .application : .stored)
    }
}

/// A descriptor to publish, as CoreBluetooth's `CBMutableDescriptor`: a Characteristic User Description (0x2901,
/// a `String` value) or Characteristic Presentation Format (0x2904, a 7-byte `Data` value), the two CoreBluetooth
/// lets an application publish. The stack adds the Client Characteristic Configuration descriptor itself.
public final class CBMutableDescriptor: CBDescriptor, @unchecked Sendable {
    /// Creates a descriptor of type `UUID` with its value: a `String` for the user description, `Data` otherwise.
    public init(type UUID: CBUUID, value: Any?) {
        super.init(characteristic: nil, gatt: GATTDescriptor(uuid: UUID.bluetoothUUID, handle: 0))
        switch value {
        case let text as String: setValue(Array(text.utf8))
        case let data as Data: setValue([UInt8](data))
        case let bytes as [UInt8]: setValue(bytes)
        case let number as NSNumber:
            let raw = number.uint16Value
            setValue([UInt8(truncatingIfNeeded: raw), UInt8(raw >> 8)])
        default: break
        }
    }

    /// Records the handle the descriptor got when its service was published.
    func published(in characteristic: CBCharacteristic?, handle: AttributeHandle) {
        protected.withLock { state in
            state.characteristic = characteristic
            state.gatt.handle = handle
        }
    }

    /// The definition the BLE module publishes.
    func definition() throws(CBError) -> GATTDescriptorDefinition {
        let type = uuid.bluetoothUUID
        guard type == BluetoothUUID(0x2901) || type == BluetoothUUID(0x2904) else {
            throw CBError(.invalidParameters, reason: "only the User Description (2901) and Presentation Format (2904) descriptors can be published, not \(uuid.uuidString)")
        }
        let bytes = protected.withLock { $0.value } ?? []
        if type == BluetoothUUID(0x2904), bytes.count != 7 {
            throw CBError(.invalidParameters, reason: "a Presentation Format descriptor's value is 7 bytes, not \(bytes.count)")
        }
        return GATTDescriptorDefinition(uuid: type, value: bytes, permissions: .readable)
    }
}

/// A remote device seen by a manager: the common base of ``CBPeripheral`` and ``CBCentral``, as CoreBluetooth's
/// `CBPeer`.
public class CBPeer: NSObject, NSCopying, @unchecked Sendable {
    /// An identifier derived from the device's address, the same in every run:
    /// `53424C45-0000-800T-8000-AAAAAAAAAAAA`, where `T` is the address type (0 public, 1 random, 2 public identity,
    /// 3 random identity) and the last group is the address, most significant byte first ("SBLE" in ASCII, then an
    /// RFC 9562 version 8 layout).
    ///
    /// Unlike iOS, which gives each device a random identifier per phone, two programs on Linux see the same
    /// identifier for a device; a device with a resolvable private address gets a new identifier when its address
    /// changes, unless it is resolved to its identity address.
    public let identifier: UUID

    init(identifier: UUID) {
        self.identifier = identifier
        super.init()
    }

    /// The identifier ``identifier`` documents for an address.
    static func identifier(for address: LEAddress) -> UUID {
        let a = address.address.bytes
        let t = address.type.rawValue & 0x0F
        return UUID(uuid: (0x53, 0x42, 0x4C, 0x45, 0x00, 0x00, 0x80, t, 0x80, 0x00, a[0], a[1], a[2], a[3], a[4], a[5]))
    }

    /// Returns `self`, as a peer stands for its device (`CBPeer` is `NSCopying` in CoreBluetooth).
    public func copy(with zone: NSZone? = nil) -> Any { self }

    /// The address an identifier of the form ``identifier(for:)`` documents holds, or `nil` for another identifier.
    static func address(from identifier: UUID) -> LEAddress? {
        let u = identifier.uuid
        guard [u.0, u.1, u.2, u.3, u.4, u.5, u.6, u.8, u.9] == [0x53, 0x42, 0x4C, 0x45, 0x00, 0x00, 0x80, 0x80, 0x00], u.7 <= 3,
              let address = BluetoothAddress(bigEndian: [u.10, u.11, u.12, u.13, u.14, u.15]) else { return nil }
        return LEAddress(address, type: LEAddressType(rawValue: u.7))
    }
}

/// A central connected to a ``CBPeripheralManager``, as CoreBluetooth's `CBCentral`: one object per link, the same
/// in every callback about it.
public final class CBCentral: CBPeer, @unchecked Sendable {
    /// The link to the central.
    let connection: HostConnection
    private let maximumUpdate: Locked<Int>

    init(connection: HostConnection, maximumUpdateValueLength: Int) {
        self.connection = connection
        maximumUpdate = Locked(maximumUpdateValueLength)
        super.init(identifier: CBPeer.identifier(for: connection.peer))
    }

    /// The longest value ``CBPeripheralManager/updateValue(_:for:onSubscribedCentrals:)`` can send to this central:
    /// ATT_MTU − 3 for the MTU the central exchanged (20 before an exchange).
    public var maximumUpdateValueLength: Int { maximumUpdate.withLock { $0 } }

    func setMaximumUpdateValueLength(_ length: Int) { maximumUpdate.withLock { $0 = length } }

    /// The identifier and the link's handle.
    public override var description: String { "CBCentral \(identifier.uuidString) link \(connection.handle)" }
}

/// A read or write of a published characteristic from a central, for the delegate to answer with
/// ``CBPeripheralManager/respond(to:withResult:)``, as CoreBluetooth's `CBATTRequest`.
public final class CBATTRequest: NSObject, @unchecked Sendable {
    /// The central that sent it.
    public let central: CBCentral
    /// The characteristic read or written.
    public let characteristic: CBCharacteristic
    /// Where in the value the read starts, or the write goes.
    public let offset: Int
    private let storedValue: Locked<Data?>
    /// The answer the request shares with the other requests of its batch (a prepared-write set is one).
    let answer: PendingAnswer

    init(central: CBCentral, characteristic: CBCharacteristic, offset: Int, value: Data?, answer: PendingAnswer) {
        self.central = central
        self.characteristic = characteristic
        self.offset = offset
        storedValue = Locked(value)
        self.answer = answer
    }

    /// For a write, the bytes written; for a read, set it to the value from ``offset`` on before responding.
    public var value: Data? {
        get { storedValue.withLock { $0 } }
        set { storedValue.withLock { $0 = newValue } }
    }

    /// The characteristic, offset and value length.
    public override var description: String {
        "CBATTRequest \(characteristic.uuid.uuidString) offset \(offset) value \(value.map { "\($0.count) bytes" } ?? "nil")"
    }
}

/// The stack's request behind one or more ``CBATTRequest`` objects, answered once.
final class PendingAnswer: Sendable {
    let request: AttributeRequest
    private let answered = Locked(false)

    init(_ request: AttributeRequest) { self.request = request }

    /// Marks the request answered; `false` when it already was.
    func claim() -> Bool {
        answered.withLock { answered in
            guard !answered else { return false }
            answered = true
            return true
        }
    }
}
