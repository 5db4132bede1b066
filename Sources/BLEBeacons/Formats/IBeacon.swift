import BLEWire

/// An iBeacon advertisement: Apple's manufacturer specific data, type 0x02, length 0x15.
///
/// Wire form (the data of the Manufacturer Specific Data AD structure, CSS v11, Part A, 1.4), 25 bytes:
/// `4C 00` (company 0x004C, little-endian) `02 15` (type, length of what follows), the 128-bit proximity UUID
/// most significant byte first, major and minor big-endian, and the measured power: the RSSI in dBm, signed, that a
/// receiver sees at 1 m.
public struct IBeacon: Hashable, Sendable, WireCodable, CustomStringConvertible {
    /// The company identifier that carries iBeacon frames (Apple, 0x004C).
    public static let companyID = CompanyIdentifier.apple
    /// The iBeacon type byte (0x02).
    public static let typeByte: UInt8 = 0x02
    /// The length byte: the number of bytes after it (0x15 = 21).
    public static let lengthByte: UInt8 = 0x15

    /// The proximity UUID (an organisation or deployment).
    public var proximityUUID: BluetoothUUID
    /// The major value (a group, such as a store or a floor).
    public var major: UInt16
    /// The minor value (one beacon in the group).
    public var minor: UInt16
    /// The calibrated RSSI at 1 m, in dBm (typically about −59).
    public var measuredPower: Int8

    /// Creates a frame from its fields.
    public init(proximityUUID: BluetoothUUID, major: UInt16, minor: UInt16, measuredPower: Int8 = -59) {
        self.proximityUUID = proximityUUID
        self.major = major
        self.minor = minor
        self.measuredPower = measuredPower
    }

    /// Decodes the manufacturer specific data, company identifier included. Throws `WireError` with
    /// `unknownType` when the company or type is not iBeacon's, `lengthMismatch` for a wrong length byte,
    /// `truncated` when the data ends early.
    public init(from reader: inout ByteReader) throws(WireError) {
        let company = CompanyIdentifier(rawValue: try reader.readUInt16("iBeacon company identifier"))
        guard company == Self.companyID else { throw WireError(.unknownType, "company \(company) is not Apple's: not an iBeacon") }
        let type = try reader.readUInt8("iBeacon type")
        guard type == Self.typeByte else { throw WireError(.unknownType, "Apple manufacturer data of type 0x\([type].hexString()) is not an iBeacon") }
        let length = try reader.readUInt8("iBeacon length")
        guard length == Self.lengthByte else { throw WireError(.lengthMismatch, "iBeacon length byte \(length); expected 21") }
        guard let uuid = BluetoothUUID(bigEndian: try reader.readBytes(16, "iBeacon proximity UUID")) else {
            throw WireError(.invalidValue, "iBeacon proximity UUID")
        }
        proximityUUID = uuid
        major = try reader.readUInt16BE("iBeacon major")
        minor = try reader.readUInt16BE("iBeacon minor")
        measuredPower = try reader.readInt8("iBeacon measured power")
    }

    /// Encodes the manufacturer specific data, company identifier included (25 bytes).
    public func encode(into writer: inout ByteWriter) {
        writer.write(Self.companyID.rawValue)
        writer.write(Self.typeByte)
        writer.write(Self.lengthByte)
        writer.write(proximityUUID.bigEndianBytes)
        writer.writeBE(major)
        writer.writeBE(minor)
        writer.write(UInt8(bitPattern: measuredPower))
    }

    /// The manufacturer data to advertise.
    public var manufacturerData: ManufacturerData {
        ManufacturerData(companyID: Self.companyID, data: Array(encoded.dropFirst(2)))
    }

    /// `iBeacon UUID major minor`.
    public var description: String { "iBeacon \(proximityUUID.fullString) \(major) \(minor)" }
}

extension ByteReader {
    /// Reads a big-endian `UInt32` (Eddystone sends its counters MSB first).
    mutating func readUInt32BE(_ field: @autoclosure () -> String) throws(WireError) -> UInt32 {
        try readUInt32(field()).byteSwapped
    }
}
