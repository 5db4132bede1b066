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
    /// Creates a characteristic definition.
    public init(uuid: BluetoothUUID, properties: GATTCharacteristicProperties, permissions: GATTPermissions = [.readable],
                value: [UInt8] = [], descriptors: [GATTDescriptorDefinition] = [], userDescription: String? = nil,
                extendedProperties: UInt16? = nil, source: GATTValueSource = .stored) {
        self.uuid = uuid
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
        case serviceDeclaration(endGroupHandle: UInt16)
        /// Include.
        case include
        /// Characteristic declaration.
        case characteristicDeclaration
        /// A characteristic value, with its declaration's properties.
        case characteristicValue(properties: GATTCharacteristicProperties)
        /// A Client Characteristic Configuration descriptor (its value is per connection).
        case clientConfiguration(valueHandle: UInt16, properties: GATTCharacteristicProperties)
        /// Descriptor.
        case descriptor
    }
    /// The attribute handle.
    public var handle: UInt16
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
}

/// A GATT server's attribute database, with handles assigned in order from 0x0001 and the mandatory GAP and GATT
/// services first. Core 5.4, Vol 3, Part G, 3 and 7.
public struct GATTDatabase: Sendable {
    /// The attributes, sorted by handle.
    public private(set) var attributes: [GATTAttribute] = []

    /// Builds a database: Generic Access (device name, appearance), Generic Attribute (Service Changed with its
    /// CCCD), then `services` in order.
    public init(deviceName: String = "swift-ble", appearance: UInt16 = 0, services: [GATTServiceDefinition]) {
        let gap = GATTServiceDefinition(uuid: 0x1800, characteristics: [
            GATTCharacteristicDefinition(uuid: 0x2A00, properties: .read, value: Array(deviceName.utf8)),
            GATTCharacteristicDefinition(uuid: 0x2A01, properties: .read, value: [UInt8(truncatingIfNeeded: appearance), UInt8(appearance >> 8)]),
        ])
        let gatt = GATTServiceDefinition(uuid: 0x1801, characteristics: [
            GATTCharacteristicDefinition(uuid: 0x2A05, properties: .indicate, permissions: [], value: [0x01, 0x00, 0xFF, 0xFF]),
        ])
        let all = [gap, gatt] + services
        // Service start handles are needed for includes: lay services out first.
        var starts: [UInt16] = []
        var ends: [UInt16] = []
        var handle: UInt16 = 1
        for service in all {
            starts.append(handle)
            handle &+= 1 + UInt16(service.includedServices.count)
            for c in service.characteristics {
                handle &+= 2 + UInt16(c.descriptors.count) + (c.properties.contains(.notify) || c.properties.contains(.indicate) ? 1 : 0)
                    + (c.userDescription == nil ? 0 : 1)
            }
            ends.append(handle &- 1)
        }
        var list: [GATTAttribute] = []
        for (index, service) in all.enumerated() {
            var h = starts[index]
            list.append(GATTAttribute(handle: h, type: service.isPrimary ? 0x2800 : 0x2801, value: service.uuid.attWireBytes,
                                      permissions: .readable, role: .serviceDeclaration(endGroupHandle: ends[index])))
            h &+= 1
            for included in service.includedServices {
                // Included service offsets are relative to the caller's list (after GAP and GATT).
                let target = included + 2
                guard target >= 0, target < all.count else { continue }
                var value: [UInt8] = []
                for v in [starts[target], ends[target]] { value += [UInt8(truncatingIfNeeded: v), UInt8(v >> 8)] }
                if let short = all[target].uuid.uint16 { value += [UInt8(truncatingIfNeeded: short), UInt8(short >> 8)] }
                list.append(GATTAttribute(handle: h, type: 0x2802, value: value, permissions: .readable, role: .include))
                h &+= 1
            }
            for c in service.characteristics {
                let valueHandle = h &+ 1
                list.append(GATTAttribute(handle: h, type: 0x2803,
                                          value: [c.properties.rawValue, UInt8(truncatingIfNeeded: valueHandle), UInt8(valueHandle >> 8)] + c.uuid.attWireBytes,
                                          permissions: .readable, role: .characteristicDeclaration))
                list.append(GATTAttribute(handle: valueHandle, type: c.uuid, value: c.value, permissions: c.permissions,
                                          role: .characteristicValue(properties: c.properties), source: c.source))
                h = valueHandle &+ 1
                if c.properties.contains(.notify) || c.properties.contains(.indicate) {
                    list.append(GATTAttribute(handle: h, type: 0x2902, value: [0, 0], permissions: [.readable, .writeable],
                                              role: .clientConfiguration(valueHandle: valueHandle, properties: c.properties)))
                    h &+= 1
                }
                if let text = c.userDescription {
                    list.append(GATTAttribute(handle: h, type: 0x2901, value: Array(text.utf8), permissions: .readable, role: .descriptor))
                    h &+= 1
                }
                for d in c.descriptors {
                    list.append(GATTAttribute(handle: h, type: d.uuid, value: d.value, permissions: d.permissions, role: .descriptor,
                                              source: d.source))
                    h &+= 1
                }
            }
        }
        attributes = list
    }

    /// The index of the attribute with `handle`.
    func index(of handle: UInt16) -> Int? {
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
    public func attribute(_ handle: UInt16) -> GATTAttribute? { index(of: handle).map { attributes[$0] } }

    /// Attributes whose handles are in `range`.
    public func attributes(in range: ClosedRange<UInt16>) -> ArraySlice<GATTAttribute> {
        let start = attributes.firstIndex { $0.handle >= range.lowerBound } ?? attributes.count
        let end = attributes.lastIndex { $0.handle <= range.upperBound }.map { $0 + 1 } ?? start
        return start < end ? attributes[start..<end] : []
    }

    /// Replaces an attribute's value (the server side setting a characteristic value).
    public mutating func setValue(_ value: [UInt8], for handle: UInt16) {
        guard let i = index(of: handle) else { return }
        attributes[i].value = value
    }

    /// The value handle of the first characteristic of type `uuid` (in service `service`, if given).
    public func valueHandle(of uuid: BluetoothUUID, in service: BluetoothUUID? = nil) -> UInt16? {
        var currentService: BluetoothUUID?
        for a in attributes {
            if case .serviceDeclaration = a.role { currentService = try? BluetoothUUID(littleEndian: a.value) }
            if case .characteristicValue = a.role, a.type == uuid, service == nil || currentService == service { return a.handle }
        }
        return nil
    }

    /// The last handle in use.
    public var lastHandle: UInt16 { attributes.last?.handle ?? 0 }
}
