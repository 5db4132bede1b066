import BLE
import BLEProtocols
import BLEWire

/// A virtual device described in a file: what it advertises and the GATT database it serves, with exact handles
/// when it is a clone, values (and the ATT errors it answers instead of some), and values it notifies on a timer.
/// The JSON format is documented in the `GATTDeviceFiles` article and by `docs/gatt-device.schema.json`;
/// ``init(json:)`` reads it (strict RFC 8259, every mistake named by its JSON path, line and column), ``jsonText()``
/// writes it, ``database()`` lays the database out, and ``PeripheralManager/serve(_:)`` serves it.
///
/// When the services include Generic Access (0x1800) or Generic Attribute (0x1801) the description is the whole
/// database (a clone); otherwise the built-in ones (``GATTDatabase/genericServices(deviceName:appearance:caching:enhancedATT:)``,
/// named ``name``) come first.
public struct GATTDeviceDescription: Sendable, Hashable {
    /// The GAP Device Name served by the built-in Generic Access service (also the advertised name when
    /// ``Advertising/name`` is not given).
    public var name: String?
    /// The GAP Appearance served by the built-in Generic Access service.
    public var appearance: UInt16?
    /// What the device advertises.
    public var advertising: Advertising
    /// The services, in handle order.
    public var services: [Service]

    /// Advertising data: every field optional. Laid out as advertising data and scan response (the name and
    /// service UUIDs first), at most 31 octets each.
    public struct Advertising: Sendable, Hashable {
        /// The complete local name.
        public var name: String?
        /// Service UUIDs (complete lists).
        public var serviceUUIDs: [BluetoothUUID]
        /// Manufacturer specific data, one structure each.
        public var manufacturerData: [ManufacturerData]
        /// Service data, one structure each.
        public var serviceData: [ServiceData]
        /// The Appearance AD type.
        public var appearance: UInt16?
        /// The TX Power Level AD type (dBm).
        public var txPowerLevel: Int8?
        /// Creates advertising contents.
        public init(name: String? = nil, serviceUUIDs: [BluetoothUUID] = [], manufacturerData: [ManufacturerData] = [],
                    serviceData: [ServiceData] = [], appearance: UInt16? = nil, txPowerLevel: Int8? = nil) {
            self.name = name
            self.serviceUUIDs = serviceUUIDs
            self.manufacturerData = manufacturerData
            self.serviceData = serviceData
            self.appearance = appearance
            self.txPowerLevel = txPowerLevel
        }
    }

    /// One Service Data AD structure.
    public struct ServiceData: Sendable, Hashable {
        /// The service.
        public var uuid: BluetoothUUID
        /// Its data.
        public var data: [UInt8]
        /// Creates service data.
        public init(uuid: BluetoothUUID, data: [UInt8]) {
            self.uuid = uuid
            self.data = data
        }
    }

    /// A service.
    public struct Service: Sendable, Hashable {
        /// The service type.
        public var uuid: BluetoothUUID
        /// Primary or secondary.
        public var isPrimary: Bool
        /// A name other services' includes may use instead of the index.
        public var id: String?
        /// The declaration's handle (`nil`: after the previous attribute).
        public var handle: AttributeHandle?
        /// The end group handle when past the last attribute.
        public var endHandle: AttributeHandle?
        /// The services it includes, by index in ``GATTDeviceDescription/services``.
        public var includes: [Int]
        /// Its characteristics, in handle order.
        public var characteristics: [Characteristic]
        /// Creates a service.
        public init(uuid: BluetoothUUID, isPrimary: Bool = true, id: String? = nil, handle: AttributeHandle? = nil, endHandle: AttributeHandle? = nil,
                    includes: [Int] = [], characteristics: [Characteristic] = []) {
            self.uuid = uuid
            self.isPrimary = isPrimary
            self.id = id
            self.handle = handle
            self.endHandle = endHandle
            self.includes = includes
            self.characteristics = characteristics
        }
    }

    /// A characteristic.
    public struct Characteristic: Sendable, Hashable {
        /// The characteristic type.
        public var uuid: BluetoothUUID
        /// Its declared properties.
        public var properties: GATTCharacteristicProperties
        /// Who may read and write its value.
        public var permissions: GATTPermissions
        /// Its (initial) value.
        public var value: [UInt8]
        /// The declaration's handle (`nil`: after the previous attribute).
        public var handle: AttributeHandle?
        /// The value's handle (`nil`: after the declaration).
        public var valueHandle: AttributeHandle?
        /// The ATT error a permitted read answers instead of the value.
        public var readError: ATTErrorCode?
        /// Its descriptors. A CCCD (0x2902) is added after the value when it notifies or indicates and none is listed.
        public var descriptors: [Descriptor]
        /// Values it sends on a timer.
        public var notify: NotifyTimer?
        /// Creates a characteristic.
        public init(uuid: BluetoothUUID, properties: GATTCharacteristicProperties, permissions: GATTPermissions? = nil, value: [UInt8] = [],
                    handle: AttributeHandle? = nil, valueHandle: AttributeHandle? = nil, readError: ATTErrorCode? = nil,
                    descriptors: [Descriptor] = [], notify: NotifyTimer? = nil) {
            self.uuid = uuid
            self.properties = properties
            self.permissions = permissions ?? GATTDeviceDescription.defaultPermissions(for: properties)
            self.value = value
            self.handle = handle
            self.valueHandle = valueHandle
            self.readError = readError
            self.descriptors = descriptors
            self.notify = notify
        }
    }

    /// A descriptor.
    public struct Descriptor: Sendable, Hashable {
        /// The descriptor type.
        public var uuid: BluetoothUUID
        /// Its value (a CCCD's is per client and not kept).
        public var value: [UInt8]
        /// Who may read and write it.
        public var permissions: GATTPermissions
        /// Its handle (`nil`: after the previous attribute).
        public var handle: AttributeHandle?
        /// The ATT error a permitted read answers instead of the value.
        public var readError: ATTErrorCode?
        /// Creates a descriptor; a CCCD's permissions default to read and write, others' to read.
        public init(uuid: BluetoothUUID, value: [UInt8] = [], permissions: GATTPermissions? = nil, handle: AttributeHandle? = nil,
                    readError: ATTErrorCode? = nil) {
            self.uuid = uuid
            self.value = value
            self.permissions = permissions ?? (uuid == BluetoothUUID(0x2902) ? [.readable, .writeable] : .readable)
            self.handle = handle
            self.readError = readError
        }
    }

    /// Values a characteristic sends to its subscribers every ``interval``, in turn (the list starts over after
    /// the last); each also becomes the value a read returns.
    public struct NotifyTimer: Sendable, Hashable {
        /// Milliseconds between two values (10 ms to one hour).
        public var intervalMilliseconds: Int
        /// The values, sent in order and again from the first.
        public var values: [[UInt8]]
        /// Creates a timer.
        public init(intervalMilliseconds: Int, values: [[UInt8]]) {
            self.intervalMilliseconds = intervalMilliseconds
            self.values = values
        }
    }

    /// Creates a description.
    public init(name: String? = nil, appearance: UInt16? = nil, advertising: Advertising = Advertising(), services: [Service] = []) {
        self.name = name
        self.appearance = appearance
        self.advertising = advertising
        self.services = services
    }

    /// The permissions a characteristic gets when the file names none: readable when it has the read property,
    /// writable when it has a write property.
    public static func defaultPermissions(for properties: GATTCharacteristicProperties) -> GATTPermissions {
        var p: GATTPermissions = []
        if properties.contains(.read) { p.insert(.readable) }
        if !properties.isDisjoint(with: [.write, .writeWithoutResponse, .authenticatedSignedWrites]) { p.insert(.writeable) }
        return p
    }

    /// Whether the services hold Generic Access or Generic Attribute, so that no built-in ones are added.
    public var suppliesGenericServices: Bool {
        services.contains { $0.uuid == BluetoothUUID(0x1800) || $0.uuid == BluetoothUUID(0x1801) }
    }

    /// The service definitions to publish, the built-in Generic Access and Generic Attribute services first unless
    /// ``suppliesGenericServices``; ``GATTDatabase/init(exactly:)`` lays them out.
    public var serviceDefinitions: [GATTServiceDefinition] {
        let generic = suppliesGenericServices ? [] : GATTDatabase.genericServices(deviceName: name ?? advertising.name ?? "swift-ble", appearance: appearance ?? 0)
        return generic + services.map { s in
            GATTServiceDefinition(uuid: s.uuid, isPrimary: s.isPrimary, characteristics: s.characteristics.map { c in
                GATTCharacteristicDefinition(uuid: c.uuid, properties: c.properties, permissions: c.permissions, value: c.value,
                                             descriptors: c.descriptors.map { d in
                                                 GATTDescriptorDefinition(uuid: d.uuid, value: d.value, permissions: d.permissions, handle: d.handle, readError: d.readError)
                                             }, handle: c.handle, valueHandle: c.valueHandle, readError: c.readError)
            }, includedServices: s.includes.map { $0 + generic.count }, handle: s.handle, endHandle: s.endHandle)
        }
    }

    /// The database this description serves. Throws ``GATTDeviceDescriptionError`` with the JSON path of the handle
    /// that cannot be honoured (not after the previous attribute, or past 0xFFFF).
    public func database() throws(GATTDeviceDescriptionError) -> GATTDatabase {
        let offset = suppliesGenericServices ? 0 : 2
        do {
            return try GATTDatabase(exactly: serviceDefinitions)
        } catch {
            guard error.service >= offset else {
                throw GATTDeviceDescriptionError(path: "$.services[0]", reason: "the built-in Generic Access and Generic Attribute services take the first handles: \(error.reason)")
            }
            var path = "$.services[\(error.service - offset)]"
            if let c = error.characteristic { path += ".characteristics[\(c)]" }
            if let d = error.descriptor { path += ".descriptors[\(d)]" }
            switch error.field {
            case .handle: path += ".handle"
            case .valueHandle: path += ".valueHandle"
            case .endHandle: path += ".endHandle"
            case .include(let i): path += ".includes[\(i)]"
            case .clientConfiguration: path += " (its CCCD)"
            case .userDescription: path += " (its user description)"
            }
            throw GATTDeviceDescriptionError(path: path, reason: error.reason)
        }
    }

    /// The advertising data and scan response: flags (LE General Discoverable, BR/EDR not supported), then the
    /// name, service UUIDs, TX power, appearance, manufacturer data and service data, each in the advertising data
    /// while it fits and in the scan response after that. Throws ``GATTDeviceDescriptionError`` (at
    /// `$.advertising`) when they do not fit in both.
    public func advertisement() throws(GATTDeviceDescriptionError) -> Advertisement {
        let a = advertising
        var structures: [ADStructure] = []
        if let name = a.name ?? name { structures.append(ADStructure(type: .completeLocalName, data: Array(name.utf8))) }
        structures += AdvertisingData(serviceUUIDs: a.serviceUUIDs, txPowerLevel: a.txPowerLevel, appearance: a.appearance).structures
        structures += a.manufacturerData.map { m in
            ADStructure(type: .manufacturerSpecificData, data: [UInt8(truncatingIfNeeded: m.companyID.rawValue), UInt8(m.companyID.rawValue >> 8)] + m.data)
        }
        structures += AdvertisingData(serviceData: a.serviceData.map { ($0.uuid, $0.data) }).structures
        var data = [ADStructure(type: .flags, data: [0x06])]
        var response: [ADStructure] = []
        func size(_ list: [ADStructure]) -> Int { list.reduce(0) { $0 + 2 + $1.data.count } }
        for s in structures {
            if size(data + [s]) <= AdvertisingData.legacyMaximumLength {
                data.append(s)
            } else if size(response + [s]) <= AdvertisingData.legacyMaximumLength {
                response.append(s)
            } else {
                throw GATTDeviceDescriptionError(path: "$.advertising", reason: "does not fit in the 31 octets of the advertising data and the 31 of the scan response")
            }
        }
        return Advertisement(data: AdvertisingData(structures: data), scanResponse: AdvertisingData(structures: response), kind: .connectable)
    }

    /// The description of a discovered advertisement's contents.
    public static func advertising(from data: AdvertisingData) -> Advertising {
        var services = (try? data.serviceUUIDs()) ?? []
        var seen = Set<BluetoothUUID>()
        services = services.filter { seen.insert($0).inserted }
        let serviceData = ((try? data.serviceData()) ?? [:]).map { ServiceData(uuid: $0.key, data: $0.value) }
            .sorted { $0.uuid.description < $1.uuid.description }
        return Advertising(name: data.localName, serviceUUIDs: services, manufacturerData: (try? data.manufacturerData()) ?? [],
                           serviceData: serviceData, appearance: try? data.appearance(), txPowerLevel: try? data.txPowerLevel())
    }
}

/// Why a device description was refused: the code says where (the JSON path of the value at fault,
/// `$.services[1].characteristics[0]`, and its 1-based line and column in the text when known) and whether the text
/// is not JSON at all; the reason says it all in words: `$.services[1].uuid: "18G0" is not a UUID (line 12, column 15)`.
public typealias GATTDeviceDescriptionError = BLEFailure<GATTDeviceDescriptionErrorCode>

extension BLEFailure where Code == GATTDeviceDescriptionErrorCode {
    /// Creates an error whose reason places `why`: `$.services[1].uuid: "18G0" is not a UUID (line 12, column 15)`;
    /// a syntax error leads with its place: `line 3, column 7: expected ',' or '}' after a member, found '"' (at
    /// $.services[0])`. `line` and `column` are the text's; `sourceLine` is the raiser's.
    public init(path: String, line: Int? = nil, column: Int? = nil, reason why: String, isSyntaxError: Bool = false,
                file: String = #fileID, sourceLine: Int = #line) {
        let place = line.map { "line \($0), column \(column ?? 0)" }
        let reason = isSyntaxError ? "\(place.map { $0 + ": " } ?? "")\(why) (at \(path))" : "\(path): \(why)\(place.map { " (\($0))" } ?? "")"
        let code: Code = isSyntaxError ? .syntaxError(path: path, line: line, column: column)
            : .invalidDescription(path: path, line: line, column: column)
        self.init(code, reason, file: file, line: sourceLine)
    }

    /// The JSON path of the value at fault (`$` for the whole document).
    public var path: String { code.path }
    /// The column of the value (or of the syntax error) in the text, when known; its line is ``GATTDeviceDescriptionErrorCode/line``.
    public var column: Int? { code.column }
    /// Whether the text is not JSON at all (as opposed to JSON that is not a valid description).
    public var isSyntaxError: Bool { code.isSyntaxError }
}

/// The kind of a ``GATTDeviceDescriptionError`` and where it is: an open struct, so a release may add kinds. Every
/// kind is ``BLEErrorCategory/invalidInput``.
public struct GATTDeviceDescriptionErrorCode: BLEErrorCode {
    private let syntax: Bool
    /// The JSON path of the value at fault (`$` for the whole document).
    public let path: String
    /// The line of the value (or of the syntax error) in the text, when the description came from text.
    public let line: Int?
    /// The column.
    public let column: Int?

    private init(syntax: Bool, path: String, line: Int?, column: Int?) {
        self.syntax = syntax
        self.path = path
        self.line = line
        self.column = column
    }

    /// The text is not JSON (RFC 8259) at all.
    public static func syntaxError(path: String, line: Int?, column: Int?) -> GATTDeviceDescriptionErrorCode {
        GATTDeviceDescriptionErrorCode(syntax: true, path: path, line: line, column: column)
    }
    /// The JSON is not a valid description (a wrong type, an unknown member, a bad UUID, handles that cannot be
    /// honoured, advertising that does not fit...).
    public static func invalidDescription(path: String, line: Int?, column: Int?) -> GATTDeviceDescriptionErrorCode {
        GATTDeviceDescriptionErrorCode(syntax: false, path: path, line: line, column: column)
    }

    /// Whether the text is not JSON at all.
    public var isSyntaxError: Bool { syntax }

    public var category: BLEErrorCategory { .invalidInput }

    /// `invalidDescription($.services[1].uuid, line 12, column 15)`.
    public var description: String {
        let place = line.map { ", line \($0), column \(column ?? 0)" } ?? ""
        return "\(syntax ? "syntaxError" : "invalidDescription")(\(path)\(place))"
    }
}
