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
    /// Its handle, for a database laid out with explicit handles (``GATTDatabase/init(exactly:caching:)``); `nil`:
    /// the handle after the previous attribute.
    public var handle: AttributeHandle?
    /// The ATT error every permitted read of it is answered with (the value is then never served), as a device that
    /// refuses it does; `nil`: reads are served.
    public var readError: ATTErrorCode?
    /// Creates a descriptor definition. A Client Characteristic Configuration descriptor (0x2902) given here is
    /// served per client as the automatic one is (its `value` is ignored), and no other CCCD is added.
    public init(uuid: BluetoothUUID, value: [UInt8], permissions: GATTPermissions = .readable, source: GATTValueSource = .stored,
                handle: AttributeHandle? = nil, readError: ATTErrorCode? = nil) {
        self.uuid = uuid
        self.value = value
        self.permissions = permissions
        self.source = source
        self.handle = handle
        self.readError = readError
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
    /// The handle of its declaration, for a database laid out with explicit handles; `nil`: the handle after the
    /// previous attribute.
    public var handle: AttributeHandle?
    /// The handle of its value; `nil`: the one after the declaration.
    public var valueHandle: AttributeHandle?
    /// The ATT error every permitted read of the value is answered with (an application error 0x80–0x9F, say), as
    /// a device that refuses it does; `nil`: reads are served.
    public var readError: ATTErrorCode?
    /// Who may read or write the Client Characteristic Configuration descriptor added when the characteristic
    /// notifies or indicates: anyone by default; with ``GATTPermissions/writeEncryptionRequired`` a client must
    /// encrypt the link (pair) before it can subscribe, as an iPhone's ANCS characteristics require.
    public var clientConfigurationPermissions: GATTPermissions
    /// Whether a CCCD is published for it: it notifies or indicates and ``descriptors`` holds none (0x2902) itself.
    public var addsClientConfiguration: Bool {
        (properties.contains(.notify) || properties.contains(.indicate)) && !descriptors.contains { $0.uuid == BluetoothUUID(0x2902) }
    }
    /// Creates a characteristic definition.
    public init(uuid: BluetoothUUID, properties: GATTCharacteristicProperties, permissions: GATTPermissions = [.readable],
                value: [UInt8] = [], descriptors: [GATTDescriptorDefinition] = [], userDescription: String? = nil,
                extendedProperties: UInt16? = nil, source: GATTValueSource = .stored, handle: AttributeHandle? = nil,
                valueHandle: AttributeHandle? = nil, readError: ATTErrorCode? = nil,
                clientConfigurationPermissions: GATTPermissions = [.readable, .writeable]) {
        self.uuid = uuid
        self.handle = handle
        self.valueHandle = valueHandle
        self.readError = readError
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
    /// The handle of its declaration, for a database laid out with explicit handles (``GATTDatabase/init(exactly:caching:)``);
    /// `nil`: the handle after the previous service.
    public var handle: AttributeHandle?
    /// Its end group handle, when it reaches past its last attribute (a gap the device keeps free, or 0xFFFF);
    /// `nil`: its last attribute.
    public var endHandle: AttributeHandle?
    /// Creates a service definition.
    public init(uuid: BluetoothUUID, isPrimary: Bool = true, characteristics: [GATTCharacteristicDefinition],
                includedServices: [Int] = [], handle: AttributeHandle? = nil, endHandle: AttributeHandle? = nil) {
        self.uuid = uuid
        self.handle = handle
        self.endHandle = endHandle
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
    /// The ATT error a permitted read is answered with instead of the value (`nil`: served).
    public var readError: ATTErrorCode?

    /// Creates an attribute from its fields (a database lays its attributes out itself: this is for computing
    /// hashes of other layouts and for tests).
    public init(handle: AttributeHandle, type: BluetoothUUID, value: [UInt8], permissions: GATTPermissions, role: Role,
                source: GATTValueSource = .stored, readError: ATTErrorCode? = nil) {
        self.handle = handle
        self.type = type
        self.value = value
        self.permissions = permissions
        self.role = role
        self.source = source
        self.readError = readError
    }
}

/// A service an include declaration points to.
struct GATTInclude {
    var start: AttributeHandle
    var end: AttributeHandle
    var uuid: BluetoothUUID
}

/// A GATT server's attribute database: by default with handles assigned in order from 0x0001 and the mandatory GAP
/// and GATT services first; or laid out exactly as given, with explicit handles (``init(exactly:)``), as a clone of a
/// device needs. Core 5.4, Vol 3, Part G, 3 and 7.
public struct GATTDatabase: Sendable {
    /// The attributes, sorted by handle.
    public private(set) var attributes: [GATTAttribute] = []

    /// The Database Hash of the attributes as they are now: 16 octets, least significant first (as the Database
    /// Hash characteristic serves it). It changes when the database's structure does (services added or removed),
    /// never when a characteristic value does. Core 5.4, Vol 3, Part G, 7.3.
    public private(set) var hash: [UInt8] = Array(repeating: 0, count: 16)

    /// Recomputes ``hash`` after a change of structure and serves it from the Database Hash characteristic.
    ///
    /// Always the computed hash, also in a database given whole (``init(exactly:)``, a clone of a device): a client
    /// that cached the original compares hashes to decide whether its cache still describes this server, and only
    /// the hash of the attributes actually served answers that truthfully. A faithful clone (same handles, types and
    /// declaration values) computes the same hash as a correct original, so it is indistinguishable anyway; one that
    /// differs must make caching clients rediscover rather than trust a cache of another layout.
    private mutating func refreshHash() {
        hash = Self.hash(of: attributes)
        if let i = attributes.firstIndex(where: { $0.type == BluetoothUUID(0x2B2A) }) { attributes[i].value = hash }
    }

    /// Builds a database: Generic Access (device name, appearance), Generic Attribute (Service Changed with its
    /// CCCD and, with `caching`, Client Supported Features and Database Hash: Core 5.4, Vol 3, Part G, 7), then
    /// `services` in order. Without `caching` the server behaves as one built before Core 5.1 (clients can only
    /// rely on Service Changed). Explicit handles in `services` that cannot be honoured (not after the previous
    /// attribute) are ignored: the attribute takes the next free handle; ``init(exactly:)`` refuses them instead.
    ///
    /// With `enhancedATT`, the Generic Attribute service also has Server Supported Features (0x2B3A) with its EATT
    /// bit set, which tells clients they may open Enhanced ATT bearers (``genericServices(deviceName:appearance:caching:enhancedATT:)``).
    public init(deviceName: String = "swift-ble", appearance: UInt16 = 0, services: [GATTServiceDefinition], caching: Bool = true,
                enhancedATT: Bool = false) {
        let generic = Self.genericServices(deviceName: deviceName, appearance: appearance, caching: caching, enhancedATT: enhancedATT)
        // Included service offsets are relative to the caller's list (after GAP and GATT).
        let all = generic + services.map { service in
            var shifted = service
            shifted.includedServices = service.includedServices.map { $0 + generic.count }
            return shifted
        }
        attributes = (try? Self.place(all, from: 1, strict: false, external: nil)) ?? []
        refreshHash()
    }

    /// A database laid out exactly as `services` say, in order, and nothing else: no Generic Access or Generic
    /// Attribute service is added (give them, from ``genericServices(deviceName:appearance:caching:enhancedATT:)`` or as a
    /// device one clones has them). Explicit handles (``GATTServiceDefinition/handle``, ``GATTServiceDefinition/endHandle``,
    /// ``GATTCharacteristicDefinition/handle``, ``GATTCharacteristicDefinition/valueHandle``,
    /// ``GATTDescriptorDefinition/handle``) are honoured, gaps allowed; an attribute without one takes the handle after
    /// the previous attribute. `includedServices` index into `services`.
    ///
    /// The server keeps working on a database given this way: it finds Service Changed (0x2A05), Client Supported
    /// Features (0x2B29) and Database Hash (0x2B2A) by type wherever they are. The Database Hash served is always the
    /// one computed over these attributes (Core 5.4, Vol 3, Part G, 7.3), whatever value the definition holds.
    ///
    /// Throws ``GATTLayoutError`` naming the service, characteristic or descriptor (by index) whose handle is 0, not
    /// after the previous attribute, past 0xFFFF, or whose include points at no service.
    public init(exactly services: [GATTServiceDefinition]) throws(GATTLayoutError) {
        attributes = try Self.place(services, from: 1, strict: true, external: nil)
        refreshHash()
    }

    /// The Generic Access (0x1800: Device Name, Appearance) and Generic Attribute (0x1801: Service Changed and, with
    /// `caching`, Client Supported Features and Database Hash) services every database built by
    /// ``init(deviceName:appearance:services:caching:enhancedATT:)`` starts with. Core 5.4, Vol 3, Part C, 12 and Part G, 7.
    ///
    /// With `enhancedATT` the Generic Attribute service ends with Server Supported Features (0x2B3A, read only),
    /// bit 0 set: this server accepts Enhanced ATT bearers (Core 5.4, Vol 3, Part G, 7.4). It is off by default so
    /// that the handles and the Database Hash of existing databases stay as they were.
    public static func genericServices(deviceName: String = "swift-ble", appearance: UInt16 = 0, caching: Bool = true,
                                       enhancedATT: Bool = false) -> [GATTServiceDefinition] {
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
        if enhancedATT {
            gattCharacteristics.append(GATTCharacteristicDefinition(uuid: 0x2B3A, properties: .read, value: [0x01]))
        }
        return [gap, GATTServiceDefinition(uuid: 0x1801, characteristics: gattCharacteristics)]
    }

    /// The handles a service takes when laid out without gaps: its declaration, includes, characteristic declarations
    /// and values, CCCDs and descriptors.
    public static func handleCount(_ service: GATTServiceDefinition) -> Int {
        1 + service.includedServices.count + service.characteristics.reduce(0) { sum, c in
            sum + 2 + c.descriptors.count + (c.addsClientConfiguration ? 1 : 0) + (c.userDescription == nil ? 0 : 1)
        }
    }

    /// Lays `services` out from handle `from`. Strict: an explicit handle that is 0 or not after the previous
    /// attribute, a handle past 0xFFFF or an include pointing nowhere throws; otherwise the attribute takes the next
    /// handle, what does not fit below 0xFFFF is left out and such an include is skipped. Includes index into
    /// `services`, or are resolved by `external` when given.
    static func place(_ services: [GATTServiceDefinition], from first: Int, strict: Bool,
                      external: ((Int) -> GATTInclude?)?) throws(GATTLayoutError) -> [GATTAttribute] {
        var list: [GATTAttribute] = []
        var ranges: [(start: AttributeHandle, end: AttributeHandle)] = []
        var includeSlots: [(index: Int, target: Int, service: Int, position: Int)] = []
        var next = first
        var full = false
        for (si, service) in services.enumerated() {
            func take(_ explicit: AttributeHandle?, _ field: GATTLayoutError.Field, _ c: Int? = nil, _ d: Int? = nil) throws(GATTLayoutError) -> AttributeHandle? {
                var h = next
                if let explicit {
                    let wanted = Int(explicit.rawValue)
                    if wanted >= next && wanted > 0 {
                        h = wanted
                    } else if strict {
                        let reason = wanted == 0 ? "0x0000 is not a valid handle"
                            : "0x\(hex4(wanted)) is not after the previous attribute (the next free handle is 0x\(hex4(next)))"
                        throw GATTLayoutError(.invalidHandle(GATTLayoutPlace(service: si, characteristic: c, descriptor: d, field: field)), reason)
                    }
                }
                guard h <= 0xFFFF else {
                    if strict { throw GATTLayoutError(.handlesExhausted(GATTLayoutPlace(service: si, characteristic: c, descriptor: d, field: field)), "no handle is left: handles end at 0xFFFF") }
                    full = true
                    return nil
                }
                next = h + 1
                return AttributeHandle(rawValue: UInt16(h))
            }
            guard !full, let start = try take(service.handle, .handle) else { break }
            let declaration = list.count
            list.append(GATTAttribute(handle: start, type: service.isPrimary ? 0x2800 : 0x2801, value: service.uuid.attWireBytes,
                                      permissions: .readable, role: .serviceDeclaration(endGroupHandle: start)))
            for (position, target) in service.includedServices.enumerated() {
                let known = external == nil ? (target >= 0 && target < services.count) : external?(target) != nil
                guard known else {
                    if strict {
                        throw GATTLayoutError(.missingInclude(GATTLayoutPlace(service: si, field: .include(position))), "includes service \(target), which does not exist")
                    }
                    continue
                }
                guard let h = try take(nil, .include(position)) else { break }
                includeSlots.append((list.count, target, si, position))
                list.append(GATTAttribute(handle: h, type: 0x2802, value: [], permissions: .readable, role: .include))
            }
            for (ci, c) in service.characteristics.enumerated() where !full {
                guard let declarationHandle = try take(c.handle, .handle, ci), let valueHandle = try take(c.valueHandle, .valueHandle, ci) else { break }
                list.append(GATTAttribute(handle: declarationHandle, type: 0x2803,
                                          value: [c.properties.rawValue, UInt8(truncatingIfNeeded: valueHandle.rawValue), UInt8(valueHandle.rawValue >> 8)] + c.uuid.attWireBytes,
                                          permissions: .readable, role: .characteristicDeclaration))
                list.append(GATTAttribute(handle: valueHandle, type: c.uuid, value: c.value, permissions: c.permissions,
                                          role: .characteristicValue(properties: c.properties), source: c.source, readError: c.readError))
                if c.addsClientConfiguration, let h = try take(nil, .clientConfiguration, ci) {
                    list.append(GATTAttribute(handle: h, type: 0x2902, value: [0, 0], permissions: c.clientConfigurationPermissions,
                                              role: .clientConfiguration(valueHandle: valueHandle, properties: c.properties)))
                }
                if let text = c.userDescription, let h = try take(nil, .userDescription, ci) {
                    list.append(GATTAttribute(handle: h, type: 0x2901, value: Array(text.utf8), permissions: .readable, role: .descriptor))
                }
                for (di, d) in c.descriptors.enumerated() {
                    guard let h = try take(d.handle, .handle, ci, di) else { break }
                    if d.uuid == BluetoothUUID(0x2902) {
                        list.append(GATTAttribute(handle: h, type: 0x2902, value: [0, 0], permissions: d.permissions,
                                                  role: .clientConfiguration(valueHandle: valueHandle, properties: c.properties), readError: d.readError))
                    } else {
                        list.append(GATTAttribute(handle: h, type: d.uuid, value: d.value, permissions: d.permissions, role: .descriptor,
                                                  source: d.source, readError: d.readError))
                    }
                }
            }
            var end = list.last?.handle ?? start
            if let wanted = service.endHandle {
                if wanted >= end {
                    end = wanted
                    next = max(next, Int(wanted.rawValue) + 1)
                } else if strict {
                    throw GATTLayoutError(.invalidHandle(GATTLayoutPlace(service: si, field: .endHandle)),
                                          "0x\(hex4(Int(wanted.rawValue))) is before the service's last attribute (0x\(hex4(Int(end.rawValue))))")
                }
            }
            list[declaration].role = .serviceDeclaration(endGroupHandle: end)
            ranges.append((start, end))
        }
        for slot in includeSlots {
            let include: GATTInclude?
            if let external {
                include = external(slot.target)
            } else if slot.target < ranges.count, slot.target < services.count {
                include = GATTInclude(start: ranges[slot.target].start, end: ranges[slot.target].end, uuid: services[slot.target].uuid)
            } else {
                include = nil
            }
            guard let include else {
                if strict { throw GATTLayoutError(.missingInclude(GATTLayoutPlace(service: slot.service, field: .include(slot.position))), "includes service \(slot.target), which was not laid out") }
                continue
            }
            var value: [UInt8] = []
            for v in [include.start.rawValue, include.end.rawValue] { value += [UInt8(truncatingIfNeeded: v), UInt8(v >> 8)] }
            // Core 5.4, Vol 3, Part G, 3.2: the Service UUID is in the include only when it is a 16-bit UUID.
            if let short = include.uuid.uint16 { value += [UInt8(truncatingIfNeeded: short), UInt8(short >> 8)] }
            list[slot.index].value = value
        }
        if !strict { list.removeAll { if case .include = $0.role { return $0.value.isEmpty } else { return false } } }
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
        let existing = Array(services.dropFirst(2))
        let resolve: (Int) -> GATTInclude? = { index in
            guard index >= 0, index < existing.count else { return nil }
            return GATTInclude(start: existing[index].start, end: existing[index].end, uuid: existing[index].uuid)
        }
        var placed = service
        placed.includedServices = service.includedServices.filter { resolve($0) != nil }
        guard let added = try? Self.place([placed], from: Int(lastHandle.rawValue) + 1, strict: true, external: resolve),
              let first = added.first, let last = added.last, case .serviceDeclaration(let end) = first.role else { return nil }
        attributes += added
        refreshHash()
        return first.handle...max(end, last.handle)
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
        if let type = attributes[i].type.uint16, Self.hashedWithValue(type) { refreshHash() }
    }

    /// The attribute types whose handle, type and value enter the Database Hash, and those whose handle and type do.
    /// Core 5.4, Vol 3, Part G, 7.3.1. (`switch`es: ``setValue(_:for:)`` asks on every notification's value.)
    static func hashedWithValue(_ type: UInt16) -> Bool {
        switch type {
        case 0x2800, 0x2801, 0x2802, 0x2803, 0x2900: true
        default: false
        }
    }
    static func hashedWithoutValue(_ type: UInt16) -> Bool {
        switch type {
        case 0x2901, 0x2902, 0x2903, 0x2904, 0x2905: true
        default: false
        }
    }

    /// The message the Database Hash is computed over: for each attribute in handle order that is a service,
    /// include or characteristic declaration or a Characteristic Extended Properties descriptor, its handle, type and
    /// value; for each user description, client or server configuration, presentation or aggregate format
    /// descriptor, its handle and type. Core 5.4, Vol 3, Part G, 7.3.1.
    public static func hashMessage(of attributes: some Sequence<GATTAttribute>) -> [UInt8] {
        var writer = ByteWriter()
        for a in attributes {
            guard let type = a.type.uint16 else { continue }
            let withValue = hashedWithValue(type)
            guard withValue || hashedWithoutValue(type) else { continue }
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
