import BLEWire

/// An Eddystone frame type: the first byte of the service data of UUID 0xFEAA. Open code.
public struct EddystoneFrameType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Eddystone-UID (0x00).
    public static let uid = EddystoneFrameType(rawValue: 0x00)
    /// Eddystone-URL (0x10).
    public static let url = EddystoneFrameType(rawValue: 0x10)
    /// Eddystone-TLM (0x20).
    public static let tlm = EddystoneFrameType(rawValue: 0x20)
    /// Eddystone-EID (0x30).
    public static let eid = EddystoneFrameType(rawValue: 0x30)
    public var description: String { "Eddystone frame 0x" + [rawValue].hexString() }
}

/// The 16-bit service UUID that carries Eddystone frames (0xFEAA, Google).
public let eddystoneServiceUUID = BluetoothUUID(0xFEAA)

/// An Eddystone-UID frame: a 10-byte namespace and a 6-byte instance.
///
/// Wire form (the service data after the UUID), 20 bytes: `00`, TX power at 0 m (signed dBm), namespace,
/// instance, two reserved bytes (sent as zero, ignored when received).
public struct EddystoneUID: Hashable, Sendable, WireCodable {
    /// The calibrated TX power at 0 m, in dBm.
    public var txPowerAt0m: Int8
    /// The namespace (10 bytes).
    public var namespace: [UInt8]
    /// The instance (6 bytes).
    public var instance: [UInt8]

    /// Creates a frame; throws `WireError` (`lengthMismatch`) unless the namespace has 10 bytes and the instance 6.
    public init(txPowerAt0m: Int8 = -18, namespace: [UInt8], instance: [UInt8]) throws(WireError) {
        guard namespace.count == 10 else { throw WireError(.lengthMismatch, "Eddystone-UID namespace of \(namespace.count) byte(s); expected 10") }
        guard instance.count == 6 else { throw WireError(.lengthMismatch, "Eddystone-UID instance of \(instance.count) byte(s); expected 6") }
        self.txPowerAt0m = txPowerAt0m
        self.namespace = namespace
        self.instance = instance
    }

    public init(from reader: inout ByteReader) throws(WireError) {
        try expectFrameType(.uid, &reader)
        txPowerAt0m = try reader.readInt8("Eddystone-UID TX power")
        namespace = try reader.readBytes(10, "Eddystone-UID namespace")
        instance = try reader.readBytes(6, "Eddystone-UID instance")
        try reader.skip(2, "Eddystone-UID reserved")
    }

    public func encode(into writer: inout ByteWriter) {
        writer.write(EddystoneFrameType.uid.rawValue)
        writer.write(txPowerAt0m)
        writer.write(namespace)
        writer.write(instance)
        writer.write([0, 0] as [UInt8])
    }
}

/// An Eddystone-URL frame: a compressed URL (see ``EddystoneURLCoding``).
///
/// Wire form: `10`, TX power at 0 m, the scheme code, up to 17 bytes of encoded URL.
public struct EddystoneURL: Hashable, Sendable, WireCodable {
    /// The calibrated TX power at 0 m, in dBm.
    public var txPowerAt0m: Int8
    /// The URL, expanded.
    public var url: String

    /// Creates a frame; throws `WireError` when the URL cannot be compressed into a frame.
    public init(txPowerAt0m: Int8 = -18, url: String) throws(WireError) {
        _ = try EddystoneURLCoding.encode(url)
        self.txPowerAt0m = txPowerAt0m
        self.url = url
    }

    public init(from reader: inout ByteReader) throws(WireError) {
        try expectFrameType(.url, &reader)
        txPowerAt0m = try reader.readInt8("Eddystone-URL TX power")
        let scheme = try reader.readUInt8("Eddystone-URL scheme")
        let encoded = reader.readRemaining()
        guard encoded.count <= EddystoneURLCoding.maximumEncodedLength else {
            throw WireError(.oversized, "Eddystone-URL of \(encoded.count) encoded bytes; at most 17")
        }
        url = try EddystoneURLCoding.decode(scheme: scheme, encoded)
    }

    public func encode(into writer: inout ByteWriter) {
        writer.write(EddystoneFrameType.url.rawValue)
        writer.write(txPowerAt0m)
        // The initializer checked that the URL compresses.
        let (scheme, encoded) = (try? EddystoneURLCoding.encode(url)) ?? (0x03, [])
        writer.write(scheme)
        writer.write(encoded)
    }
}

/// An unencrypted Eddystone-TLM frame (version 0): the beacon's telemetry.
///
/// Wire form, 14 bytes, every field most significant byte first: `20 00`, battery voltage (mV, 0 when not
/// measured), temperature (signed 8.8 fixed point °C, 0x8000 when not measured), advertising PDU count since
/// power-up, time since power-up in 0.1 s.
public struct EddystoneTLM: Hashable, Sendable, WireCodable {
    /// The battery voltage in mV (0: not supported).
    public var batteryMillivolts: UInt16
    /// The temperature as sent: signed 8.8 fixed point, °C (0x8000, that is −128.0: not supported).
    public var temperatureFixedPoint: Int16
    /// Advertising PDUs sent since power-up or reboot.
    public var advertisingPDUCount: UInt32
    /// Time since power-up or reboot, in 0.1 s.
    public var uptimeDeciseconds: UInt32

    /// Creates a frame from its fields.
    public init(batteryMillivolts: UInt16, temperatureFixedPoint: Int16, advertisingPDUCount: UInt32, uptimeDeciseconds: UInt32) {
        self.batteryMillivolts = batteryMillivolts
        self.temperatureFixedPoint = temperatureFixedPoint
        self.advertisingPDUCount = advertisingPDUCount
        self.uptimeDeciseconds = uptimeDeciseconds
    }

    /// Creates a frame with the temperature in °C (rounded to 1/256 °C, clamped to the 8.8 range; `nil`: not
    /// supported).
    public init(batteryMillivolts: UInt16, temperature: Double?, advertisingPDUCount: UInt32, uptimeDeciseconds: UInt32) {
        let fixed: Int16 = temperature.map { Int16(clamping: Int(($0 * 256).rounded())) } ?? Int16.min
        self.init(batteryMillivolts: batteryMillivolts, temperatureFixedPoint: fixed, advertisingPDUCount: advertisingPDUCount,
                  uptimeDeciseconds: uptimeDeciseconds)
    }

    /// The temperature in °C, or `nil` when the beacon does not measure it.
    public var temperature: Double? { temperatureFixedPoint == Int16.min ? nil : Double(temperatureFixedPoint) / 256 }
    /// The uptime as a duration.
    public var uptime: Duration { .milliseconds(Int64(uptimeDeciseconds) * 100) }

    public init(from reader: inout ByteReader) throws(WireError) {
        try expectFrameType(.tlm, &reader)
        let version = try reader.readUInt8("Eddystone-TLM version")
        guard version == 0 else { throw WireError(.unknownType, "Eddystone-TLM version \(version) is not the unencrypted version 0") }
        batteryMillivolts = try reader.readUInt16BE("Eddystone-TLM battery voltage")
        temperatureFixedPoint = Int16(bitPattern: try reader.readUInt16BE("Eddystone-TLM temperature"))
        advertisingPDUCount = try reader.readUInt32BE("Eddystone-TLM advertising PDU count")
        uptimeDeciseconds = try reader.readUInt32BE("Eddystone-TLM uptime")
    }

    public func encode(into writer: inout ByteWriter) {
        writer.write(EddystoneFrameType.tlm.rawValue)
        writer.write(UInt8(0))
        writer.writeBE(batteryMillivolts)
        writer.writeBE(UInt16(bitPattern: temperatureFixedPoint))
        writer.write(advertisingPDUCount.byteSwapped)
        writer.write(uptimeDeciseconds.byteSwapped)
    }
}

/// An Eddystone-EID frame: an 8-byte ephemeral identifier, recognised but not resolved (resolving needs the
/// beacon's identity key, held by its registrar).
///
/// Wire form, 10 bytes: `30`, TX power at 0 m, the ephemeral identifier.
public struct EddystoneEID: Hashable, Sendable, WireCodable {
    /// The calibrated TX power at 0 m, in dBm.
    public var txPowerAt0m: Int8
    /// The ephemeral identifier (8 bytes).
    public var ephemeralID: [UInt8]

    /// Creates a frame; throws `WireError` (`lengthMismatch`) unless the identifier has 8 bytes.
    public init(txPowerAt0m: Int8 = -18, ephemeralID: [UInt8]) throws(WireError) {
        guard ephemeralID.count == 8 else { throw WireError(.lengthMismatch, "Eddystone-EID of \(ephemeralID.count) byte(s); expected 8") }
        self.txPowerAt0m = txPowerAt0m
        self.ephemeralID = ephemeralID
    }

    public init(from reader: inout ByteReader) throws(WireError) {
        try expectFrameType(.eid, &reader)
        txPowerAt0m = try reader.readInt8("Eddystone-EID TX power")
        ephemeralID = try reader.readBytes(8, "Eddystone-EID identifier")
    }

    public func encode(into writer: inout ByteWriter) {
        writer.write(EddystoneFrameType.eid.rawValue)
        writer.write(txPowerAt0m)
        writer.write(ephemeralID)
    }
}

/// One Eddystone frame, as carried in the service data of UUID 0xFEAA.
public enum EddystoneFrame: Hashable, Sendable, WireCodable {
    /// Eddystone-UID.
    case uid(EddystoneUID)
    /// Eddystone-URL.
    case url(EddystoneURL)
    /// Eddystone-TLM, unencrypted (version 0).
    case tlm(EddystoneTLM)
    /// Eddystone-TLM, encrypted (version 1): the bytes after the version, not decrypted.
    case encryptedTLM([UInt8])
    /// Eddystone-EID.
    case eid(EddystoneEID)
    /// A frame type this decoder does not know, with the bytes after it.
    case unknown(frameType: EddystoneFrameType, payload: [UInt8])

    /// The frame type.
    public var frameType: EddystoneFrameType {
        switch self {
        case .uid: .uid
        case .url: .url
        case .tlm, .encryptedTLM: .tlm
        case .eid: .eid
        case .unknown(let type, _): type
        }
    }

    /// Decodes a frame (the service data after the UUID). Throws `WireError` for a malformed frame of a known
    /// type: `truncated`, `trailingBytes`, `invalidValue` (a reserved URL byte or scheme).
    public init(from reader: inout ByteReader) throws(WireError) {
        guard let first = reader.peekUInt8() else { throw WireError(.truncated, "Eddystone frame with no frame type") }
        switch EddystoneFrameType(rawValue: first) {
        case .uid: self = .uid(try EddystoneUID(from: &reader))
        case .url: self = .url(try EddystoneURL(from: &reader))
        case .eid: self = .eid(try EddystoneEID(from: &reader))
        case .tlm:
            var probe = reader
            _ = try probe.readUInt8("Eddystone-TLM frame type")
            if try probe.readUInt8("Eddystone-TLM version") == 0x01 {
                reader = probe
                self = .encryptedTLM(reader.readRemaining())
            } else {
                self = .tlm(try EddystoneTLM(from: &reader))
            }
        default:
            _ = try reader.readUInt8("Eddystone frame type")
            self = .unknown(frameType: EddystoneFrameType(rawValue: first), payload: reader.readRemaining())
        }
    }

    public func encode(into writer: inout ByteWriter) {
        switch self {
        case .uid(let f): f.encode(into: &writer)
        case .url(let f): f.encode(into: &writer)
        case .tlm(let f): f.encode(into: &writer)
        case .encryptedTLM(let payload):
            writer.write(EddystoneFrameType.tlm.rawValue)
            writer.write(UInt8(0x01))
            writer.write(payload)
        case .eid(let f): f.encode(into: &writer)
        case .unknown(let type, let payload):
            writer.write(type.rawValue)
            writer.write(payload)
        }
    }

    /// The calibrated TX power at 0 m, for the frames that carry it.
    public var txPowerAt0m: Int8? {
        switch self {
        case .uid(let f): f.txPowerAt0m
        case .url(let f): f.txPowerAt0m
        case .eid(let f): f.txPowerAt0m
        case .tlm, .encryptedTLM, .unknown: nil
        }
    }
}

/// Reads the frame type byte and checks it.
private func expectFrameType(_ type: EddystoneFrameType, _ reader: inout ByteReader) throws(WireError) {
    let byte = try reader.readUInt8("\(type) frame type")
    guard byte == type.rawValue else {
        throw WireError(.unknownType, "frame type 0x\([byte].hexString()) where \(type) was expected")
    }
}
