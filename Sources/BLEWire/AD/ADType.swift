/// An advertising data type. Core Specification Supplement v11, Part A, 1 and Assigned Numbers 2.3. Open code.
public struct ADType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Flags (0x01).
    public static let flags = ADType(rawValue: 0x01)
    /// Incomplete 16 bit service UUI ds (0x02).
    public static let incomplete16BitServiceUUIDs = ADType(rawValue: 0x02)
    /// Complete 16 bit service UUI ds (0x03).
    public static let complete16BitServiceUUIDs = ADType(rawValue: 0x03)
    /// Incomplete 32 bit service UUI ds (0x04).
    public static let incomplete32BitServiceUUIDs = ADType(rawValue: 0x04)
    /// Complete 32 bit service UUI ds (0x05).
    public static let complete32BitServiceUUIDs = ADType(rawValue: 0x05)
    /// Incomplete 128 bit service UUI ds (0x06).
    public static let incomplete128BitServiceUUIDs = ADType(rawValue: 0x06)
    /// Complete 128 bit service UUI ds (0x07).
    public static let complete128BitServiceUUIDs = ADType(rawValue: 0x07)
    /// Shortened local name (0x08).
    public static let shortenedLocalName = ADType(rawValue: 0x08)
    /// Complete local name (0x09).
    public static let completeLocalName = ADType(rawValue: 0x09)
    /// TX power level (0x0A).
    public static let txPowerLevel = ADType(rawValue: 0x0A)
    /// Peripheral connection interval range (0x12).
    public static let peripheralConnectionIntervalRange = ADType(rawValue: 0x12)
    /// Solicitation 16 bit UUI ds (0x14).
    public static let solicitation16BitUUIDs = ADType(rawValue: 0x14)
    /// Solicitation 128 bit UUI ds (0x15).
    public static let solicitation128BitUUIDs = ADType(rawValue: 0x15)
    /// Service data 16 bit UUID (0x16).
    public static let serviceData16BitUUID = ADType(rawValue: 0x16)
    /// Public target address (0x17).
    public static let publicTargetAddress = ADType(rawValue: 0x17)
    /// Random target address (0x18).
    public static let randomTargetAddress = ADType(rawValue: 0x18)
    /// Appearance (0x19).
    public static let appearance = ADType(rawValue: 0x19)
    /// Advertising interval (0x1A).
    public static let advertisingInterval = ADType(rawValue: 0x1A)
    /// LE bluetooth device address (0x1B).
    public static let leBluetoothDeviceAddress = ADType(rawValue: 0x1B)
    /// LE role (0x1C).
    public static let leRole = ADType(rawValue: 0x1C)
    /// Solicitation 32 bit UUI ds (0x1F).
    public static let solicitation32BitUUIDs = ADType(rawValue: 0x1F)
    /// Service data 32 bit UUID (0x20).
    public static let serviceData32BitUUID = ADType(rawValue: 0x20)
    /// Service data 128 bit UUID (0x21).
    public static let serviceData128BitUUID = ADType(rawValue: 0x21)
    /// URI (0x24).
    public static let uri = ADType(rawValue: 0x24)
    /// Manufacturer specific data (0xFF).
    public static let manufacturerSpecificData = ADType(rawValue: 0xFF)

    /// For UUID list and service data types, the width of their UUIDs in bytes.
    var uuidWidth: Int? {
        switch self {
        case .incomplete16BitServiceUUIDs, .complete16BitServiceUUIDs, .solicitation16BitUUIDs, .serviceData16BitUUID: 2
        case .incomplete32BitServiceUUIDs, .complete32BitServiceUUIDs, .solicitation32BitUUIDs, .serviceData32BitUUID: 4
        case .incomplete128BitServiceUUIDs, .complete128BitServiceUUIDs, .solicitation128BitUUIDs, .serviceData128BitUUID: 16
        default: nil
        }
    }

    public var description: String { "AD 0x" + [rawValue].hexString() }
}

/// AD Flags. Core Specification Supplement v11, Part A, 1.3.
public struct ADFlags: OptionSet, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// LE limited discoverable (1).
    public static let leLimitedDiscoverable = ADFlags(rawValue: 1 << 0)
    /// LE general discoverable (1).
    public static let leGeneralDiscoverable = ADFlags(rawValue: 1 << 1)
    /// BR EDR not supported (1).
    public static let brEDRNotSupported = ADFlags(rawValue: 1 << 2)
    /// Simultaneous LE and BREDR controller (1).
    public static let simultaneousLEAndBREDRController = ADFlags(rawValue: 1 << 3)
    /// The usual flags of an LE-only peripheral: general discoverable, BR/EDR not supported (0x06).
    public static let leOnlyGeneralDiscoverable: ADFlags = [.leGeneralDiscoverable, .brEDRNotSupported]
}

/// A Bluetooth SIG company identifier (Assigned Numbers 7.1). Open code.
public struct CompanyIdentifier: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// Microsoft (0x0006).
    public static let microsoft = CompanyIdentifier(rawValue: 0x0006)
    /// Apple (0x004C).
    public static let apple = CompanyIdentifier(rawValue: 0x004C)
    /// Nordic semiconductor (0x0059).
    public static let nordicSemiconductor = CompanyIdentifier(rawValue: 0x0059)
    /// Google (0x00E0).
    public static let google = CompanyIdentifier(rawValue: 0x00E0)
    /// Reserved for tests and prototypes.
    public static let testing = CompanyIdentifier(rawValue: 0xFFFF)
    public var description: String { "0x" + [UInt8(rawValue >> 8), UInt8(truncatingIfNeeded: rawValue)].hexString().uppercased() }
}

/// Manufacturer specific data: a company identifier and its payload. CSS v11, Part A, 1.4.
public struct ManufacturerData: Hashable, Sendable {
    /// Company ID.
    public var companyID: CompanyIdentifier
    /// Data.
    public var data: [UInt8]
    /// Creates manufacturer specific data: the company `companyID` and its payload `data`.
    public init(companyID: CompanyIdentifier, data: [UInt8]) {
        self.companyID = companyID
        self.data = data
    }
}

/// One AD structure: `length, type, data` with `length = 1 + data.count`. Core 5.4, Vol 3, Part C, 11.
public struct ADStructure: Hashable, Sendable, WireCodable {
    /// `AD type`.
    public var type: ADType
    /// Data.
    public var data: [UInt8]

    /// Creates an AD structure of type `type` carrying `data`; its length octet is derived when encoded.
    public init(type: ADType, data: [UInt8]) {
        self.type = type
        self.data = data
    }

    public init(from reader: inout ByteReader) throws(WireError) {
        let length = Int(try reader.readUInt8("AD length"))
        guard length > 0 else { throw WireError(.invalidValue, "AD structure of length 0 (padding) has no type") }
        guard reader.remainingCount >= length else {
            throw WireError(.truncated, "AD structure of length \(length) runs past the end (\(reader.remainingCount) byte(s) left)")
        }
        type = ADType(rawValue: try reader.readUInt8("AD type"))
        data = try reader.readBytes(length - 1, "AD data")
    }

    public func encode(into writer: inout ByteWriter) {
        writer.write(UInt8(truncatingIfNeeded: data.count + 1))
        writer.write(type.rawValue)
        writer.write(data)
    }
}
