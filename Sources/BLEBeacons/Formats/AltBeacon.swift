import BLEWire

/// An AltBeacon advertisement (the open AltBeacon specification, revision 1.0): manufacturer specific data whose
/// beacon code is 0xBEAC.
///
/// Wire form (the data of the Manufacturer Specific Data AD structure, whose AD length is 0x1B), 26 bytes: the
/// manufacturer's company identifier (little-endian, any company), the beacon code `BE AC`, the 20-byte beacon
/// identifier, the reference RSSI (signed dBm at 1 m) and one byte reserved for the manufacturer. The beacon
/// identifier is split the usual way: a 16-byte ``id1`` (an organisational unit, a UUID) and two 2-byte values
/// ``id2`` and ``id3``, each most significant byte first.
public struct AltBeacon: Hashable, Sendable, WireCodable, CustomStringConvertible {
    /// The beacon code, as sent (`BE AC`).
    public static let beaconCode: UInt16 = 0xBEAC

    /// The beacon manufacturer's company identifier.
    public var companyID: CompanyIdentifier
    /// The first 16 bytes of the beacon identifier.
    public var id1: BluetoothUUID
    /// Bytes 16–17 of the beacon identifier, big-endian.
    public var id2: UInt16
    /// Bytes 18–19 of the beacon identifier, big-endian.
    public var id3: UInt16
    /// The average RSSI at 1 m, in dBm.
    public var referenceRSSI: Int8
    /// The manufacturer reserved byte.
    public var reserved: UInt8

    /// Creates a frame from its fields.
    public init(companyID: CompanyIdentifier = .testing, id1: BluetoothUUID, id2: UInt16, id3: UInt16,
                referenceRSSI: Int8 = -59, reserved: UInt8 = 0) {
        self.companyID = companyID
        self.id1 = id1
        self.id2 = id2
        self.id3 = id3
        self.referenceRSSI = referenceRSSI
        self.reserved = reserved
    }

    /// Decodes manufacturer specific data, company identifier included. Throws `WireError` with `unknownType`
    /// when the beacon code is not 0xBEAC, `truncated` when the data ends early.
    public init(from reader: inout ByteReader) throws(WireError) {
        companyID = CompanyIdentifier(rawValue: try reader.readUInt16("AltBeacon company identifier"))
        let code = try reader.readUInt16BE("AltBeacon beacon code")
        guard code == Self.beaconCode else { throw WireError(.unknownType, "beacon code 0x\(String(code, radix: 16)) is not AltBeacon's 0xBEAC") }
        guard let uuid = BluetoothUUID(bigEndian: try reader.readBytes(16, "AltBeacon id1")) else {
            throw WireError(.invalidValue, "AltBeacon id1")
        }
        id1 = uuid
        id2 = try reader.readUInt16BE("AltBeacon id2")
        id3 = try reader.readUInt16BE("AltBeacon id3")
        referenceRSSI = try reader.readInt8("AltBeacon reference RSSI")
        reserved = try reader.readUInt8("AltBeacon reserved")
    }

    /// Encodes the manufacturer specific data, company identifier included (26 bytes).
    public func encode(into writer: inout ByteWriter) {
        writer.write(companyID.rawValue)
        writer.writeBE(Self.beaconCode)
        writer.write(id1.bigEndianBytes)
        writer.writeBE(id2)
        writer.writeBE(id3)
        writer.write(referenceRSSI)
        writer.write(reserved)
    }

    /// The manufacturer data to advertise.
    public var manufacturerData: ManufacturerData {
        ManufacturerData(companyID: companyID, data: Array(encoded.dropFirst(2)))
    }

    /// `AltBeacon id1 id2 id3`.
    public var description: String { "AltBeacon \(id1.fullString) \(id2) \(id3)" }
}
