import BLEWire

/// Device Information Service 1.1 (0x180A): the manufacturer, model, serial number, revisions and identifiers of a
/// device, each in a read-only characteristic the device may or may not have.
public enum DeviceInformationService {
    /// The service UUID (0x180A).
    public static let uuid = BluetoothUUID(0x180A)
    /// Manufacturer Name String (0x2A29).
    public static let manufacturerName = BluetoothUUID(0x2A29)
    /// Model Number String (0x2A24).
    public static let modelNumber = BluetoothUUID(0x2A24)
    /// Serial Number String (0x2A25).
    public static let serialNumber = BluetoothUUID(0x2A25)
    /// Hardware Revision String (0x2A27).
    public static let hardwareRevision = BluetoothUUID(0x2A27)
    /// Firmware Revision String (0x2A26).
    public static let firmwareRevision = BluetoothUUID(0x2A26)
    /// Software Revision String (0x2A28).
    public static let softwareRevision = BluetoothUUID(0x2A28)
    /// System ID (0x2A23).
    public static let systemID = BluetoothUUID(0x2A23)
    /// PnP ID (0x2A50).
    public static let pnpID = BluetoothUUID(0x2A50)

    /// The service with a read-only characteristic for each field of `information` that is not `nil`.
    public static func definition(_ information: DeviceInformation) -> GATTServiceDefinition {
        var characteristics: [GATTCharacteristicDefinition] = []
        func add(_ uuid: BluetoothUUID, _ value: [UInt8]?) {
            guard let value else { return }
            characteristics.append(GATTCharacteristicDefinition(uuid: uuid, properties: .read, value: value))
        }
        add(manufacturerName, information.manufacturerName.map { Array($0.utf8) })
        add(modelNumber, information.modelNumber.map { Array($0.utf8) })
        add(serialNumber, information.serialNumber.map { Array($0.utf8) })
        add(hardwareRevision, information.hardwareRevision.map { Array($0.utf8) })
        add(firmwareRevision, information.firmwareRevision.map { Array($0.utf8) })
        add(softwareRevision, information.softwareRevision.map { Array($0.utf8) })
        add(systemID, information.systemID?.encoded)
        add(pnpID, information.pnpID?.encoded)
        return GATTServiceDefinition(uuid: uuid, characteristics: characteristics)
    }
}

/// Device Information Service 1.1, 3.1–3.9: what a device says about itself; a field the device does not publish is
/// `nil`.
public struct DeviceInformation: Sendable, Hashable {
    /// Manufacturer Name String (0x2A29).
    public var manufacturerName: String?
    /// Model Number String (0x2A24).
    public var modelNumber: String?
    /// Serial Number String (0x2A25).
    public var serialNumber: String?
    /// Hardware Revision String (0x2A27).
    public var hardwareRevision: String?
    /// Firmware Revision String (0x2A26).
    public var firmwareRevision: String?
    /// Software Revision String (0x2A28).
    public var softwareRevision: String?
    /// System ID (0x2A23).
    public var systemID: SystemID?
    /// PnP ID (0x2A50).
    public var pnpID: PnPID?

    /// Creates device information from its fields.
    public init(manufacturerName: String? = nil, modelNumber: String? = nil, serialNumber: String? = nil, hardwareRevision: String? = nil,
                firmwareRevision: String? = nil, softwareRevision: String? = nil, systemID: SystemID? = nil, pnpID: PnPID? = nil) {
        self.manufacturerName = manufacturerName
        self.modelNumber = modelNumber
        self.serialNumber = serialNumber
        self.hardwareRevision = hardwareRevision
        self.firmwareRevision = firmwareRevision
        self.softwareRevision = softwareRevision
        self.systemID = systemID
        self.pnpID = pnpID
    }

    /// What the simulators publish: swift-ble as manufacturer, `model`, a serial number, revisions and both IDs.
    public static func simulated(model: String, serialNumber: String = "SN-0001") -> DeviceInformation {
        DeviceInformation(manufacturerName: "swift-ble", modelNumber: model, serialNumber: serialNumber, hardwareRevision: "1.0",
                          firmwareRevision: "2.1.0", softwareRevision: "swift-ble simulator",
                          systemID: SystemID(manufacturerIdentifier: 0x00_0000_0001, organizationallyUniqueIdentifier: 0x00_1B_DC),
                          pnpID: PnPID(vendorIDSource: .bluetoothSIG, vendorID: 0x05F1, productID: 0x0001, productVersion: 0x0100))
    }

    /// A UTF-8 string characteristic's text (invalid sequences replaced, trailing NUL padding dropped).
    public static func decodeString(_ bytes: [UInt8]) -> String {
        var end = bytes.count
        while end > 0, bytes[end - 1] == 0 { end -= 1 }
        return String(decoding: bytes[..<end], as: UTF8.self)
    }
}

/// GATT Specification Supplement (System ID, 0x2A23): a 40-bit manufacturer-defined identifier and a 24-bit
/// Organizationally Unique Identifier, 8 bytes little-endian.
public struct SystemID: Sendable, Hashable, WireCodable {
    /// The manufacturer-defined identifier (low 40 bits).
    public var manufacturerIdentifier: UInt64
    /// The IEEE Organizationally Unique Identifier (low 24 bits).
    public var organizationallyUniqueIdentifier: UInt32

    /// Creates a System ID (higher bits than the fields hold are dropped when encoding).
    public init(manufacturerIdentifier: UInt64, organizationallyUniqueIdentifier: UInt32) {
        self.manufacturerIdentifier = manufacturerIdentifier & 0xFF_FFFF_FFFF
        self.organizationallyUniqueIdentifier = organizationallyUniqueIdentifier & 0xFF_FFFF
    }

    /// Decodes the 8 bytes.
    public init(from reader: inout ByteReader) throws(WireError) {
        let low = UInt64(try reader.readUInt32("System ID manufacturer identifier"))
        let high = UInt64(try reader.readUInt8("System ID manufacturer identifier"))
        manufacturerIdentifier = high << 32 | low
        organizationallyUniqueIdentifier = try reader.readUInt24("System ID OUI")
    }

    /// Appends the 8 bytes.
    public func encode(into writer: inout ByteWriter) {
        writer.write(UInt32(truncatingIfNeeded: manufacturerIdentifier))
        writer.write(UInt8(truncatingIfNeeded: manufacturerIdentifier >> 32))
        writer.writeUInt24(organizationallyUniqueIdentifier)
    }
}

/// GATT Specification Supplement (PnP ID, 0x2A50): who assigned the vendor ID, the vendor, product and
/// product version, 7 bytes.
public struct PnPID: Sendable, Hashable, WireCodable {
    /// Who assigned the vendor ID (values other than 1 and 2 are reserved and kept as sent).
    public struct VendorIDSource: RawRepresentable, Sendable, Hashable {
        /// The byte.
        public var rawValue: UInt8
        /// A source from its byte.
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// A Bluetooth SIG company identifier (1).
        public static let bluetoothSIG = VendorIDSource(rawValue: 1)
        /// A USB Implementers Forum vendor ID (2).
        public static let usbImplementersForum = VendorIDSource(rawValue: 2)
    }
    /// Who assigned ``vendorID``.
    public var vendorIDSource: VendorIDSource
    /// The vendor.
    public var vendorID: UInt16
    /// The vendor's product.
    public var productID: UInt16
    /// The product version (0xJJMN: major JJ, minor M, sub-minor N).
    public var productVersion: UInt16

    /// Creates a PnP ID from its fields.
    public init(vendorIDSource: VendorIDSource, vendorID: UInt16, productID: UInt16, productVersion: UInt16) {
        self.vendorIDSource = vendorIDSource
        self.vendorID = vendorID
        self.productID = productID
        self.productVersion = productVersion
    }

    /// Decodes the 7 bytes.
    public init(from reader: inout ByteReader) throws(WireError) {
        vendorIDSource = VendorIDSource(rawValue: try reader.readUInt8("PnP ID vendor ID source"))
        vendorID = try reader.readUInt16("PnP ID vendor ID")
        productID = try reader.readUInt16("PnP ID product ID")
        productVersion = try reader.readUInt16("PnP ID product version")
    }

    /// Appends the 7 bytes.
    public func encode(into writer: inout ByteWriter) {
        writer.write(vendorIDSource.rawValue)
        writer.write(vendorID)
        writer.write(productID)
        writer.write(productVersion)
    }
}

/// A Device Information Service client on a connected peripheral.
public struct DeviceInformationClient: Sendable {
    let service: StandardDiscoveredService

    /// Discovers the Device Information Service of `peripheral`; throws ``StandardServiceError/serviceNotFound(_:)``
    /// when it has none.
    public init(peripheral: RemotePeripheral) async throws {
        service = try await .discover(DeviceInformationService.uuid, on: peripheral)
    }

    /// Reads every characteristic the device has; those it lacks are `nil`. Throws ``WireError`` when a System ID or
    /// PnP ID is malformed.
    public func read() async throws -> DeviceInformation {
        func text(_ uuid: BluetoothUUID) async throws -> String? {
            guard service.has(uuid) else { return nil }
            return try await service.read(uuid, DeviceInformation.decodeString)
        }
        var information = DeviceInformation()
        information.manufacturerName = try await text(DeviceInformationService.manufacturerName)
        information.modelNumber = try await text(DeviceInformationService.modelNumber)
        information.serialNumber = try await text(DeviceInformationService.serialNumber)
        information.hardwareRevision = try await text(DeviceInformationService.hardwareRevision)
        information.firmwareRevision = try await text(DeviceInformationService.firmwareRevision)
        information.softwareRevision = try await text(DeviceInformationService.softwareRevision)
        if service.has(DeviceInformationService.systemID) {
            information.systemID = try await service.read(DeviceInformationService.systemID, SystemID.standardDecode)
        }
        if service.has(DeviceInformationService.pnpID) {
            information.pnpID = try await service.read(DeviceInformationService.pnpID, PnPID.standardDecode)
        }
        return information
    }
}
