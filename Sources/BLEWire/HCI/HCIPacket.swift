/// The HCI packet indicator used by the UART (H4) transport and btsnoop captures.
///
/// Core 5.4, Vol 4, Part A, 2 (UART transport packet indicators).
public struct HCIPacketType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Command (0x01).
    public static let command = HCIPacketType(rawValue: 0x01)
    /// ACL (0x02).
    public static let acl = HCIPacketType(rawValue: 0x02)
    /// SCO (0x03).
    public static let sco = HCIPacketType(rawValue: 0x03)
    /// Event (0x04).
    public static let event = HCIPacketType(rawValue: 0x04)
    /// ISO (0x05).
    public static let iso = HCIPacketType(rawValue: 0x05)

    /// The length of this packet type's header, or `nil` for an unknown type. (By raw value: matching the static
    /// constants would reach each through its lazy global's accessor, on the deframer's per-packet path.)
    @inlinable public var headerLength: Int? {
        switch rawValue {
        case 0x01, 0x03: 3      // command, SCO
        case 0x02, 0x05: 4      // ACL, ISO
        case 0x04: 2            // event
        default: nil
        }
    }

    /// The payload length announced by a complete header of this type (`header.count == headerLength`), read in
    /// place.
    @inlinable public func payloadLength(header: some Collection<UInt8>) -> Int? {
        guard let expected = headerLength, header.count == expected else { return nil }
        func octet(_ n: Int) -> Int { Int(header[header.index(header.startIndex, offsetBy: n)]) }
        switch rawValue {
        case 0x01, 0x03: return octet(2)                         // command, SCO
        case 0x04: return octet(1)                               // event
        case 0x02: return octet(2) | octet(3) << 8               // ACL
        default: return octet(2) | (octet(3) & 0x3F) << 8        // ISO: 14-bit length
        }
    }

    public var description: String {
        switch self {
        case .command: "command"
        case .acl: "ACL"
        case .sco: "SCO"
        case .event: "event"
        case .iso: "ISO"
        default: "type 0x\([rawValue].hexString())"
        }
    }
}

/// An HCI command packet: opcode and raw parameters.
///
/// Core 5.4, Vol 4, Part E, 5.4.1. Typed commands (``HCICommand``) encode into and decode from this form.
public struct HCICommandPacket: Hashable, Sendable, WireCodable {
    /// The command opcode (OGF and OCF).
    public var opcode: HCIOpcode
    /// The command parameters (at most 255 bytes).
    public var parameters: [UInt8]

    /// Creates a command packet.
    public init(opcode: HCIOpcode, parameters: [UInt8] = []) {
        self.opcode = opcode
        self.parameters = parameters
    }

    public init(from reader: inout ByteReader) throws(WireError) {
        opcode = HCIOpcode(rawValue: try reader.readUInt16("HCI command opcode"))
        let length = Int(try reader.readUInt8("HCI command parameter length"))
        guard reader.remainingCount >= length else {
            throw WireError(.lengthMismatch, "HCI command \(opcode): length \(length), \(reader.remainingCount) byte(s) present")
        }
        parameters = try reader.readBytes(length, "HCI command parameters")
    }

    public func encode(into writer: inout ByteWriter) {
        writer.write(opcode.rawValue)
        writer.write(UInt8(truncatingIfNeeded: parameters.count))
        writer.write(parameters.prefix(255))
    }
}

/// An HCI event packet: event code and raw parameters.
///
/// Core 5.4, Vol 4, Part E, 5.4.4. Typed events (``HCIEvent``) encode into and decode from this form.
public struct HCIEventPacket: Hashable, Sendable, WireCodable {
    /// The event code.
    public var code: HCIEventCode
    /// The event parameters (at most 255 bytes).
    public var parameters: [UInt8]

    /// Creates an event packet.
    public init(code: HCIEventCode, parameters: [UInt8] = []) {
        self.code = code
        self.parameters = parameters
    }

    public init(from reader: inout ByteReader) throws(WireError) {
        code = HCIEventCode(rawValue: try reader.readUInt8("HCI event code"))
        let length = Int(try reader.readUInt8("HCI event parameter length"))
        guard reader.remainingCount >= length else {
            throw WireError(.lengthMismatch, "HCI event \(code): length \(length), \(reader.remainingCount) byte(s) present")
        }
        parameters = try reader.readBytes(length, "HCI event parameters")
    }

    public func encode(into writer: inout ByteWriter) {
        writer.write(code.rawValue)
        writer.write(UInt8(truncatingIfNeeded: parameters.count))
        writer.write(parameters.prefix(255))
    }
}

/// An HCI ACL data packet.
///
/// Core 5.4, Vol 4, Part E, 5.4.2.
public struct HCIACLPacket: Hashable, Sendable, WireCodable {
    /// The Packet_Boundary_Flag.
    public struct Boundary: RawRepresentable, Hashable, Sendable {
        public var rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue & 0x03 }
        /// First non-automatically-flushable packet of a higher-layer message (host to controller).
        public static let firstNonFlushable = Boundary(rawValue: 0b00)
        /// Continuing fragment of a higher-layer message.
        public static let continuing = Boundary(rawValue: 0b01)
        /// First automatically flushable packet (controller to host on LE; deprecated host to controller).
        public static let firstFlushable = Boundary(rawValue: 0b10)
        /// A complete automatically flushable L2CAP PDU (BR/EDR only).
        public static let complete = Boundary(rawValue: 0b11)

        /// Whether this flag starts a new higher-layer message.
        public var isStart: Bool { self != .continuing }
    }

    /// The connection handle (12 bits, 0x0000–0x0EFF valid).
    public var handle: ConnectionHandle
    /// The packet boundary flag.
    public var boundary: Boundary
    /// The broadcast flag (2 bits; 0 on LE).
    public var broadcast: UInt8
    /// The payload (an L2CAP PDU or a fragment of one).
    public var data: [UInt8]

    /// Creates an ACL packet.
    public init(handle: ConnectionHandle, boundary: Boundary, broadcast: UInt8 = 0, data: [UInt8]) {
        self.handle = ConnectionHandle(rawValue: handle.rawValue & 0x0FFF)
        self.boundary = boundary
        self.broadcast = broadcast & 0x03
        self.data = data
    }

    public init(from reader: inout ByteReader) throws(WireError) {
        let word = try reader.readUInt16("ACL handle and flags")
        handle = ConnectionHandle(rawValue: word & 0x0FFF)
        boundary = Boundary(rawValue: UInt8(truncatingIfNeeded: word >> 12))
        broadcast = UInt8(truncatingIfNeeded: word >> 14) & 0x03
        let length = Int(try reader.readUInt16("ACL data length"))
        guard reader.remainingCount >= length else {
            throw WireError(.lengthMismatch, "ACL handle \(handle): length \(length), \(reader.remainingCount) byte(s) present")
        }
        data = try reader.readBytes(length, "ACL data")
    }

    public func encode(into writer: inout ByteWriter) {
        writer.write(handle.rawValue & 0x0FFF | UInt16(boundary.rawValue) << 12 | UInt16(broadcast & 0x03) << 14)
        writer.write(UInt16(truncatingIfNeeded: data.count))
        writer.write(data)
    }
}

/// Any HCI packet, as carried by a transport in either direction.
public enum HCIPacket: Hashable, Sendable {
    /// Command.
    case command(HCICommandPacket)
    /// ACL.
    case acl(HCIACLPacket)
    /// Event.
    case event(HCIEventPacket)
    /// SCO or ISO data, carried opaquely: `body` is the packet after its indicator byte.
    case other(type: HCIPacketType, body: [UInt8])

    /// The packet's H4 indicator.
    public var type: HCIPacketType {
        switch self {
        case .command: .command
        case .acl: .acl
        case .event: .event
        case .other(let type, _): type
        }
    }

    /// Decodes a packet whose indicator is `type` from `body` (the bytes after the indicator),
    /// which must hold exactly one packet.
    public init(type: HCIPacketType, body: some Sequence<UInt8>) throws(WireError) {
        switch type {
        case .command: self = .command(try HCICommandPacket(bytes: body))
        case .acl: self = .acl(try HCIACLPacket(bytes: body))
        case .event: self = .event(try HCIEventPacket(bytes: body))
        case .sco, .iso: self = .other(type: type, body: Array(body))
        default: throw WireError(.unknownType, "HCI packet indicator 0x\([type.rawValue].hexString())")
        }
    }

    /// Decodes an H4-framed packet: indicator byte then packet.
    public init(h4 bytes: some Sequence<UInt8>) throws(WireError) {
        var reader = ByteReader(bytes)
        let type = HCIPacketType(rawValue: try reader.readUInt8("H4 packet indicator"))
        try self.init(type: type, body: reader.readRemaining())
    }

    /// The packet without its indicator byte.
    public var body: [UInt8] {
        switch self {
        case .command(let p): p.encoded
        case .acl(let p): p.encoded
        case .event(let p): p.encoded
        case .other(_, let body): body
        }
    }

    /// The packet with its H4 indicator byte in front.
    public var h4Bytes: [UInt8] { [type.rawValue] + body }
}
