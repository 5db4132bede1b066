import BLEWire

/// Characteristic properties. Core 5.4, Vol 3, Part G, 3.3.1.1.
public struct GATTCharacteristicProperties: OptionSet, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// The value may be broadcast.
    public static let broadcast = GATTCharacteristicProperties(rawValue: 0x01)
    /// The value may be read.
    public static let read = GATTCharacteristicProperties(rawValue: 0x02)
    /// The value may be written with Write Command.
    public static let writeWithoutResponse = GATTCharacteristicProperties(rawValue: 0x04)
    /// The value may be written with Write Request.
    public static let write = GATTCharacteristicProperties(rawValue: 0x08)
    /// The value may be notified.
    public static let notify = GATTCharacteristicProperties(rawValue: 0x10)
    /// The value may be indicated.
    public static let indicate = GATTCharacteristicProperties(rawValue: 0x20)
    /// The value may be written with Signed Write Command.
    public static let authenticatedSignedWrites = GATTCharacteristicProperties(rawValue: 0x40)
    /// An Extended Properties descriptor follows.
    public static let extendedProperties = GATTCharacteristicProperties(rawValue: 0x80)
}

/// Attribute permissions (not on the wire; enforced by the server). Core 5.4, Vol 3, Part F, 3.2.5.
public struct GATTPermissions: OptionSet, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Clients may read.
    public static let readable = GATTPermissions(rawValue: 0x01)
    /// Clients may write.
    public static let writeable = GATTPermissions(rawValue: 0x02)
    /// Reading needs an encrypted link.
    public static let readEncryptionRequired = GATTPermissions(rawValue: 0x04)
    /// Writing needs an encrypted link.
    public static let writeEncryptionRequired = GATTPermissions(rawValue: 0x08)
    /// Reading needs an authenticated encrypted link.
    public static let readAuthenticationRequired = GATTPermissions(rawValue: 0x10)
    /// Writing needs an authenticated encrypted link.
    public static let writeAuthenticationRequired = GATTPermissions(rawValue: 0x20)
    /// Reading and writing need an authenticated LE Secure Connections key (LE security mode 1 level 4).
    public static let secureConnectionsRequired = GATTPermissions(rawValue: 0x40)
}

/// Where an attribute's value comes from.
public enum GATTValueSource: Sendable, Hashable {
    /// The database holds the value: reads are answered from it and permitted writes change it.
    case stored
    /// The application answers every read and write of the value itself, when it wants and with any ATT error
    /// (application errors 0x80–0x9F included): see ``ATTServer/Pending``. Like a CoreBluetooth characteristic
    /// published with a `nil` value.
    case application
}

/// A descriptor to publish.
public struct GATTDescriptorDefinition: Sendable, Hashable {
    /// The descriptor type.
    public var uuid: BluetoothUUID
    /// Its value.
    public var value: [UInt8]
    /// Who may read or write it.
    public var permissions: GATTPermissions
    /// Who answers reads and writes of it.
    public var source: GATTValueSource
    /// Creates a descriptor definition.
    public init(uuid: BluetoothUUID, value: [UInt8], permissions: GATTPermissions = .readable, source: GATTValueSource = .stored) {
        self.uuid = uuid
        self.value = value
        self.permissions = permissions
        self.source = source
    }
}

/// A characteristic to publish. A CCCD is added when it notifies or indicates; a User Description descriptor when
/// ``userDescription`` is set. Core 5.4, Vol 3, Part G, 3.3.
public struct GATTCharacteristicDefinition: Sendable, Hashable {
    /// The characteristic type.
    public var uuid: BluetoothUUID
    /// Its declared properties.
    public var properties: GATTCharacteristicProperties
    /// Who may read or write its value.
    public var permissions: GATTPermissions
    /// Its initial value.
    public var value: [UInt8]
    /// Descriptors beyond the CCCD and user description added automatically.
    public var descriptors: [GATTDescriptorDefinition]
    /// A Characteristic User Description descriptor's text.
    public var userDescription: String?
    /// Characteristic Extended Properties (bit 0 reliable write, bit 1 writable auxiliaries): when set, a 0x2900
    /// descriptor is published and the declaration's Extended Properties bit is set. Core 5.4, Vol 3, Part G, 3.3.3.1.
    public var extendedProperties: UInt16?
    /// Who answers reads and writes of the value: the database (``value`` is the initial value) or the application.
    public var source: GATTValueSource
    /// Who may read or write the Client Characteristic Configuration descriptor added when the characteristic
    /// notifies or indicates: anyone by default; with ``GATTPermissions/writeEncryptionRequired`` a client must
    /// encrypt the link (pair) before it can subscribe, as an iPhone's ANCS characteristics require.
    public var clientConfigurationPermissions: GATTPermissions
    /// Creates a characteristic definition.
    public init(uuid: BluetoothUUID, properties: GATTCharacteristicProperties, permissions: GATTPermissions = [.readable],
                value: [UInt8] = [], descriptors: [GATTDescriptorDefinition] = [], userDescription: String? = nil,
                extendedProperties: UInt16? = nil, source: GATTValueSource = .stored,
                clientConfigurationPermissions: GATTPermissions = [.readable, .writeable]) {
        self.uuid = uuid
        self.clientConfigurationPermissions = clientConfigurationPermissions
        self.source = source
        self.properties = extendedProperties == nil ? properties : properties.union(.extendedProperties)
        self.permissions = permissions
        self.value = value
        self.extendedProperties = extendedProperties
        self.descriptors = extendedProperties.map {
            [GATTDescriptorDefinition(uuid: 0x2900, value: [UInt8(truncatingIfNeeded: $0), UInt8($0 >> 8)])]
        } ?? []
        self.descriptors += descriptors
        self.userDescription = userDescription
    }
}

/// A service to publish. Core 5.4, Vol 3, Part G, 3.1.
public struct GATTServiceDefinition: Sendable, Hashable {
    /// The service type.
    public var uuid: BluetoothUUID
    /// Primary (discoverable) or secondary (only included).
    public var isPrimary: Bool
    /// Its characteristics, in handle order.
    public var characteristics: [GATTCharacteristicDefinition]
    /// Indices (in the database's service list) of services this one includes.
    public var includedServices: [Int]
    /// Creates a service definition.
    public init(uuid: BluetoothUUID, isPrimary: Bool = true, characteristics: [GATTCharacteristicDefinition],
                includedServices: [Int] = []) {
        self.uuid = uuid
        self.isPrimary = isPrimary
        self.characteristics = characteristics
        self.includedServices = includedServices
    }
}

/// An attribute in the database. Core 5.4, Vol 3, Part F, 3.2.
public struct GATTAttribute: Sendable, Hashable {
    /// What the attribute is in GATT terms.
    public enum Role: Sendable, Hashable {
        /// Service declaration.
        case serviceDeclaration(endGroupHandle: AttributeHandle)
        /// Include.
        case include
        /// Characteristic declaration.
        case characteristicDeclaration
        /// A characteristic value, with its declaration's properties.
        case characteristicValue(properties: GATTCharacteristicProperties)
        /// A Client Characteristic Configuration descriptor (its value is per connection).
        case clientConfiguration(valueHandle: AttributeHandle, properties: GATTCharacteristicProperties)
        /// Descriptor.
        case descriptor
    }
    /// The attribute handle.
    public var handle: AttributeHandle
    /// The attribute type.
    public var type: BluetoothUUID
    /// The attribute value (CCCDs: the default; clients see their own).
    public var value: [UInt8]
    /// Who may read or write it.
    public var permissions: GATTPermissions
    /// What it is in GATT terms.
    public var role: Role
    /// Who answers reads and writes of it.
    public var source: GATTValueSource = .stored

    /// Creates an attribute from its fields (a database lays its attributes out itself: this is for computing
    /// hashes of other layouts and for tests).
    public init(handle: AttributeHandle, type: BluetoothUUID, value: [UInt8], permissions: GATTPermissions, role: Role,
                source: GATTValueSource = .stored) {
        self.handle = handle
        self.type = type
        self.value = value
        self.permissions = permissions
        self.role = role
        self.source = source
    }
}

/// A service an include declaration points to.
struct GATTInclude {
    var start: AttributeHandle
    var end: AttributeHandle
    var uuid: BluetoothUUID
}

/// A GATT server's attribute database, with handles assigned in order from 0x0001 and the mandatory GAP and GATT
/// services first. Core 5.4, Vol 3, Part G, 3 and 7.
public struct GATTDatabase: Sendable {
    /// The attributes, sorted by handle.
    public private(set) var attributes: [GATTAttribute] = []

    /// The Database Hash of the attributes as they are now: 16 octets, least significant first (as the Database
    /// Hash characteristic serves it). It changes when the database's structure does (services added or removed),
    /// never when a characteristic value does. Core 5.4, Vol 3, Part G, 7.3.
    public private(set) var hash: [UInt8] = Array(repeating: 0, count: 16)

    /// Recomputes ``hash`` after a change of structure and serves it from the Database Hash characteristic.
    private mutating func refreshHash() {
        hash = Self.hash(of: attributes)
        if let i = attributes.firstIndex(where: { $0.type == BluetoothUUID(0x2B2A) }) { attributes[i].value = hash }
    }

    /// Builds a database: Generic Access (device name, appearance), Generic Attribute (Service Changed with its
    /// CCCD and, with `caching`, Client Supported Features and Database Hash: Core 5.4, Vol 3, Part G, 7), then
    /// `services` in order. Without `caching` the server behaves as one built before Core 5.1 (clients can only
    /// rely on Service Changed).
    public init(deviceName: String = "swift-ble", appearance: UInt16 = 0, services: [GATTServiceDefinition], caching: Bool = true) {
        let gap = GATTServiceDefinition(uuid: 0x1800, characteristics: [
            GATTCharacteristicDefinition(uuid: 0x2A00, properties: .read, value: Array(deviceName.utf8)),
            GATTCharacteristicDefinition(uuid: 0x2A01, properties: .read, value: [UInt8(truncatingIfNeeded: appearance), UInt8(appearance >> 8)]),
        ])
        var gattCharacteristics = [
            GATTCharacteristicDefinition(uuid: 0x2A05, properties: .indicate, permissions: [], value: [0x01, 0x00, 0xFF, 0xFF]),
        ]
        if caching {
            gattCharacteristics += [
                GATTCharacteristicDefinition(uuid: 0x2B29, properties: [.read, .write], permissions: [.readable, .writeable], value: [0x00]),
                GATTCharacteristicDefinition(uuid: 0x2B2A, properties: .read, value: Array(repeating: 0, count: 16)),
            ]
        }
        let gatt = GATTServiceDefinition(uuid: 0x1801, characteristics: gattCharacteristics)
        let all = [gap, gatt] + services
        // Service start handles are needed for includes: lay services out first.
        var starts: [UInt16] = []
        var ends: [UInt16] = []
        var handle: UInt16 = 1
        for service in all {
            starts.append(handle)
            handle &+= UInt16(truncatingIfNeeded: Self.handleCount(service))
            ends.append(handle &- 1)
        }
        var list: [GATTAttribute] = []
        for (index, service) in all.enumerated() {
            // Included service offsets are relative to the caller's list (after GAP and GATT).
            let includes = service.includedServices.compactMap { included -> GATTInclude? in
                let target = included + 2
                guard target >= 0, target < all.count else { return nil }
                return GATTInclude(start: AttributeHandle(rawValue: starts[target]), end: AttributeHandle(rawValue: ends[target]),
                                   uuid: all[target].uuid)
            }
            list += Self.layout(service, at: AttributeHandle(rawValue: starts[index]), end: AttributeHandle(rawValue: ends[index]),
                                includes: includes)
        }
        attributes = list
        refreshHash()
    }

    /// The handles a service takes: its declaration, includes, characteristic declarations and values, CCCDs and
    /// descriptors.
    public static func handleCount(_ service: GATTServiceDefinition) -> Int {
        1 + service.includedServices.count + service.characteristics.reduce(0) { sum, c in
            sum + 2 + c.descriptors.count + (c.properties.contains(.notify) || c.properties.contains(.indicate) ? 1 : 0)
                + (c.userDescription == nil ? 0 : 1)
        }
    }

    /// The attributes of one service from `start` to `end`. Core 5.4, Vol 3, Part G, 3.
    static func layout(_ service: GATTServiceDefinition, at start: AttributeHandle, end: AttributeHandle, includes: [GATTInclude]) -> [GATTAttribute] {
        var list: [GATTAttribute] = []
        var h = start.rawValue
        list.append(GATTAttribute(handle: AttributeHandle(rawValue: h), type: service.isPrimary ? 0x2800 : 0x2801, value: service.uuid.attWireBytes,
                                  permissions: .readable, role: .serviceDeclaration(endGroupHandle: end)))
        h &+= 1
        for include in includes {
            var value: [UInt8] = []
            for v in [include.start.rawValue, include.end.rawValue] { value += [UInt8(truncatingIfNeeded: v), UInt8(v >> 8)] }
            if let short = include.uuid.uint16 { value += [UInt8(truncatingIfNeeded: short), UInt8(short >> 8)] }
            list.append(GATTAttribute(handle: AttributeHandle(rawValue: h), type: 0x2802, value: value, permissions: .readable, role: .include))
            h &+= 1
        }
        for c in service.characteristics {
            let valueHandle = h &+ 1
            list.append(GATTAttribute(handle: AttributeHandle(rawValue: h), type: 0x2803,
                                      value: [c.properties.rawValue, UInt8(truncatingIfNeeded: valueHandle), UInt8(valueHandle >> 8)] + c.uuid.attWireBytes,
                                      permissions: .readable, role: .characteristicDeclaration))
            list.append(GATTAttribute(handle: AttributeHandle(rawValue: valueHandle), type: c.uuid, value: c.value, permissions: c.permissions,
                                      role: .characteristicValue(properties: c.properties), source: c.source))
            h = valueHandle &+ 1
            if c.properties.contains(.notify) || c.properties.contains(.indicate) {
                list.append(GATTAttribute(handle: AttributeHandle(rawValue: h), type: 0x2902, value: [0, 0], permissions: c.clientConfigurationPermissions,
                                          role: .clientConfiguration(valueHandle: AttributeHandle(rawValue: valueHandle), properties: c.properties)))
                h &+= 1
            }
            if let text = c.userDescription {
                list.append(GATTAttribute(handle: AttributeHandle(rawValue: h), type: 0x2901, value: Array(text.utf8), permissions: .readable, role: .descriptor))
                h &+= 1
            }
            for d in c.descriptors {
                list.append(GATTAttribute(handle: AttributeHandle(rawValue: h), type: d.uuid, value: d.value, permissions: d.permissions, role: .descriptor,
                                          source: d.source))
                h &+= 1
            }
        }
        return list
    }

    /// The services of the database, in handle order: declaration handle, end handle and UUID.
    public var services: [(start: AttributeHandle, end: AttributeHandle, uuid: BluetoothUUID)] {
        attributes.compactMap { a in
            guard case .serviceDeclaration(let end) = a.role, let uuid = try? BluetoothUUID(littleEndian: a.value) else { return nil }
            return (a.handle, end, uuid)
        }
    }

    /// Adds a service after the last handle, leaving every other attribute where it is, and returns its handles
    /// (`nil` when the handle space is full). Its `includedServices` count, as in ``init(deviceName:appearance:services:)``,
    /// from the first service after GAP and GATT (index 0 is ``services``[2]).
    public mutating func add(_ service: GATTServiceDefinition) -> ClosedRange<AttributeHandle>? {
        let count = Self.handleCount(service)
        let start = Int(lastHandle.rawValue) + 1
        guard start + count - 1 <= 0xFFFF else { return nil }
        let existing = Array(services.dropFirst(2))
        let includes = service.includedServices.compactMap { index -> GATTInclude? in
            guard index >= 0, index < existing.count else { return nil }
            return GATTInclude(start: existing[index].start, end: existing[index].end, uuid: existing[index].uuid)
        }
        let range = AttributeHandle(rawValue: UInt16(start))...AttributeHandle(rawValue: UInt16(start + count - 1))
        attributes += Self.layout(service, at: range.lowerBound, end: range.upperBound, includes: includes)
        refreshHash()
        return range
    }

    /// Removes the service declared at `start` with all its attributes (the others keep their handles) and returns the
    /// handles it took; `nil` when no service is declared there. GAP and GATT cannot be removed.
    public mutating func removeService(at start: AttributeHandle) -> ClosedRange<AttributeHandle>? {
        guard let service = services.first(where: { $0.start == start }),
              service.uuid != BluetoothUUID(0x1800), service.uuid != BluetoothUUID(0x1801) else { return nil }
        attributes.removeAll { $0.handle >= service.start && $0.handle <= service.end }
        refreshHash()
        return service.start...service.end
    }

    /// The index of the attribute with `handle`.
    func index(of handle: AttributeHandle) -> Int? {
        var low = 0, high = attributes.count - 1
        while low <= high {
            let mid = (low + high) / 2
            let h = attributes[mid].handle
            if h == handle { return mid }
            if h < handle { low = mid + 1 } else { high = mid - 1 }
        }
        return nil
    }

    /// The attribute with `handle`.
    public func attribute(_ handle: AttributeHandle) -> GATTAttribute? { index(of: handle).map { attributes[$0] } }

    /// Attributes whose handles are in `range`.
    public func attributes(in range: ClosedRange<AttributeHandle>) -> ArraySlice<GATTAttribute> {
        let start = attributes.firstIndex { $0.handle >= range.lowerBound } ?? attributes.count
        let end = attributes.lastIndex { $0.handle <= range.upperBound }.map { $0 + 1 } ?? start
        return start < end ? attributes[start..<end] : []
    }

    /// Replaces an attribute's value (the server side setting a characteristic value).
    public mutating func setValue(_ value: [UInt8], for handle: AttributeHandle) {
        guard let i = index(of: handle) else { return }
        attributes[i].value = value
        // Values of declarations and Extended Properties enter the hash; characteristic values do not.
        if let type = attributes[i].type.uint16, Self.hashedWithValue.contains(type) { refreshHash() }
    }

    /// The attribute types whose handle, type and value enter the Database Hash, and those whose handle and type do.
    /// Core 5.4, Vol 3, Part G, 7.3.1.
    static let hashedWithValue: Set<UInt16> = [0x2800, 0x2801, 0x2802, 0x2803, 0x2900]
    static let hashedWithoutValue: Set<UInt16> = [0x2901, 0x2902, 0x2903, 0x2904, 0x2905]

    /// The message the Database Hash is computed over: for each attribute in handle order that is a service,
    /// include or characteristic declaration or a Characteristic Extended Properties descriptor, its handle, type and
    /// value; for each user description, client or server configuration, presentation or aggregate format
    /// descriptor, its handle and type. Core 5.4, Vol 3, Part G, 7.3.1.
    public static func hashMessage(of attributes: some Sequence<GATTAttribute>) -> [UInt8] {
        var writer = ByteWriter()
        for a in attributes {
            guard let type = a.type.uint16 else { continue }
            let withValue = hashedWithValue.contains(type)
            guard withValue || hashedWithoutValue.contains(type) else { continue }
            writer.write(a.handle)
            writer.write(type)
            if withValue { writer.write(a.value) }
        }
        return writer.bytes
    }

    /// The Database Hash of `attributes`: AES-CMAC with an all-zero key over ``hashMessage(of:)``, least
    /// significant octet first. Core 5.4, Vol 3, Part G, 7.3.1.
    public static func hash(of attributes: some Sequence<GATTAttribute>) -> [UInt8] {
        let mac = (try? SMPCrypto.aesCMAC(key: Array(repeating: 0, count: 16), hashMessage(of: attributes))) ?? Array(repeating: 0, count: 16)
        return mac.reversed()
    }

    /// The value handle of the first characteristic of type `uuid` (in service `service`, if given).
    public func valueHandle(of uuid: BluetoothUUID, in service: BluetoothUUID? = nil) -> AttributeHandle? {
        var currentService: BluetoothUUID?
        for a in attributes {
            if case .serviceDeclaration = a.role { currentService = try? BluetoothUUID(littleEndian: a.value) }
            if case .characteristicValue = a.role, a.type == uuid, service == nil || currentService == service { return a.handle }
        }
        return nil
    }

    /// The last handle in use.
    public var lastHandle: AttributeHandle { attributes.last?.handle ?? 0 }
}
