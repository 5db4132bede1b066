/// Why bytes from an API client could not be taken: a typed error, never a crash. The connection it came on is
/// closed with this reason; other connections go on.
public typealias ESPHomeAPIError = BLEFailure<ESPHomeAPIErrorCode>

/// The kind of an ``ESPHomeAPIError``: an open struct, so a release may add kinds.
public struct ESPHomeAPIErrorCode: BLEErrorCode {
    private enum Backing: Hashable, Sendable {
        case malformed
        case invalidInput
        case cryptography
    }

    private let backing: Backing
    private init(_ backing: Backing) { self.backing = backing }

    /// Bytes from a client (a frame, a protobuf message, a Noise handshake message, a DNS message) that break their
    /// format, or an encrypted frame that does not decrypt. ``BLEErrorCategory/protocolError``.
    public static let malformed = ESPHomeAPIErrorCode(.malformed)
    /// A value of this side's that the API cannot take (a DNS name too long, a pre-shared key of the wrong size, a
    /// handshake step out of turn). ``BLEErrorCategory/invalidInput``.
    public static let invalidInput = ESPHomeAPIErrorCode(.invalidInput)
    /// The cryptographic library refused an operation (a nonce, an encryption, the Diffie-Hellman exchange).
    /// ``BLEErrorCategory/failure``.
    public static let cryptography = ESPHomeAPIErrorCode(.cryptography)

    public var category: BLEErrorCategory {
        switch backing {
        case .malformed: .protocolError
        case .invalidInput: .invalidInput
        case .cryptography: .failure
        }
    }

    /// `malformed`, `invalidInput` or `cryptography`.
    public var description: String {
        switch backing {
        case .malformed: "malformed"
        case .invalidInput: "invalidInput"
        case .cryptography: "cryptography"
        }
    }
}

/// The protobuf wire types this module reads and writes.
enum ProtoWireType: UInt8 {
    case varint = 0
    case fixed64 = 1
    case lengthDelimited = 2
    case fixed32 = 5
}

/// Writes protobuf fields (proto3: default values are left out, as protobuf encoders do).
public struct ProtoWriter: Sendable {
    /// The bytes written so far.
    public private(set) var bytes: [UInt8] = []

    /// Creates an empty writer.
    public init() {}

    /// Appends a base-128 varint.
    public mutating func writeVarint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    private mutating func tag(_ field: UInt32, _ type: ProtoWireType) {
        writeVarint(UInt64(field) << 3 | UInt64(type.rawValue))
    }

    /// A `uint32`/`uint64`/`enum` field (left out when zero).
    public mutating func uint(_ field: UInt32, _ value: UInt64) {
        guard value != 0 else { return }
        tag(field, .varint)
        writeVarint(value)
    }

    /// An `int32` field (negative values take ten bytes, as in protobuf; left out when zero).
    public mutating func int32(_ field: UInt32, _ value: Int32) {
        uint(field, UInt64(bitPattern: Int64(value)))
    }

    /// A `sint32` field (zigzag; left out when zero).
    public mutating func sint32(_ field: UInt32, _ value: Int32) {
        uint(field, UInt64(UInt32(bitPattern: (value << 1) ^ (value >> 31))))
    }

    /// A `bool` field (left out when false).
    public mutating func bool(_ field: UInt32, _ value: Bool) {
        uint(field, value ? 1 : 0)
    }

    /// A `fixed32` field (left out when zero).
    public mutating func fixed32(_ field: UInt32, _ value: UInt32) {
        guard value != 0 else { return }
        tag(field, .fixed32)
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    /// A `bytes` field (left out when empty, unless `always`: an element of a repeated field).
    public mutating func bytes(_ field: UInt32, _ value: [UInt8], always: Bool = false) {
        guard always || !value.isEmpty else { return }
        tag(field, .lengthDelimited)
        writeVarint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    /// A `string` field (left out when empty, unless `always`).
    public mutating func string(_ field: UInt32, _ value: String, always: Bool = false) {
        bytes(field, Array(value.utf8), always: always)
    }

    /// An embedded message field (always written: an element of a repeated field may be empty).
    public mutating func message(_ field: UInt32, _ body: (inout ProtoWriter) -> Void) {
        var inner = ProtoWriter()
        body(&inner)
        bytes(field, inner.bytes, always: true)
    }

    /// A repeated `uint64` field, packed (proto3's default).
    public mutating func packedUInts(_ field: UInt32, _ values: [UInt64]) {
        guard !values.isEmpty else { return }
        var inner = ProtoWriter()
        for v in values { inner.writeVarint(v) }
        bytes(field, inner.bytes)
    }
}

/// One field read from a message.
public struct ProtoField: Sendable {
    /// The field number.
    public var number: UInt32
    /// The value: a varint, a fixed-width integer, or the bytes of a length-delimited field.
    public var value: Value

    /// A field's value as the wire carries it.
    public enum Value: Sendable, Hashable {
        /// A varint (also `bool`, `enum`, zigzag `sint`).
        case varint(UInt64)
        /// A 64-bit fixed-width value.
        case fixed64(UInt64)
        /// A 32-bit fixed-width value.
        case fixed32(UInt32)
        /// A length-delimited value: bytes, a string, a message, a packed repeated field.
        case bytes([UInt8])
    }

    /// The value as an unsigned integer (a varint or fixed field); throws for bytes.
    public func uint() throws(ESPHomeAPIError) -> UInt64 {
        switch value {
        case .varint(let v), .fixed64(let v): return v
        case .fixed32(let v): return UInt64(v)
        case .bytes: throw ESPHomeAPIError(.malformed, "field \(number) is length-delimited where an integer was expected")
        }
    }

    /// The value as a `uint32` (higher bits dropped, as protobuf does).
    public func uint32() throws(ESPHomeAPIError) -> UInt32 { UInt32(truncatingIfNeeded: try uint()) }

    /// The value as an `int32` (protobuf's two's complement, higher bits dropped).
    public func int32() throws(ESPHomeAPIError) -> Int32 { Int32(truncatingIfNeeded: try uint()) }

    /// The value as a zigzag `sint32`.
    public func sint32() throws(ESPHomeAPIError) -> Int32 {
        let raw = UInt32(truncatingIfNeeded: try uint())
        return Int32(bitPattern: (raw >> 1) ^ (0 &- (raw & 1)))
    }

    /// The value as a `bool`.
    public func bool() throws(ESPHomeAPIError) -> Bool { try uint() != 0 }

    /// The bytes of a length-delimited value; throws for integers.
    public func bytes() throws(ESPHomeAPIError) -> [UInt8] {
        guard case .bytes(let b) = value else { throw ESPHomeAPIError(.malformed, "field \(number) is not length-delimited") }
        return b
    }

    /// The value as a UTF-8 string (invalid sequences replaced).
    public func string() throws(ESPHomeAPIError) -> String { String(decoding: try bytes(), as: UTF8.self) }

    /// A repeated integer field: packed (one length-delimited field of varints) or a single unpacked element.
    public func uints() throws(ESPHomeAPIError) -> [UInt64] {
        switch value {
        case .varint(let v), .fixed64(let v): return [v]
        case .fixed32(let v): return [UInt64(v)]
        case .bytes(let b):
            var reader = ProtoReader(b)
            var out: [UInt64] = []
            while !reader.isAtEnd { out.append(try reader.readVarint()) }
            return out
        }
    }
}

/// Reads protobuf fields one after another; fields of unknown numbers are the caller's to skip (every field is
/// read whole, so skipping is ignoring it). Bounds are checked on every byte.
public struct ProtoReader: Sendable {
    private let bytes: [UInt8]
    private var index = 0

    /// Reads `bytes`.
    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Whether every byte was read.
    public var isAtEnd: Bool { index >= bytes.count }

    /// Reads a base-128 varint of at most ten bytes.
    public mutating func readVarint() throws(ESPHomeAPIError) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard index < bytes.count else { throw ESPHomeAPIError(.malformed, "a varint runs past the end") }
            let byte = bytes[index]
            index += 1
            guard shift < 64 else { throw ESPHomeAPIError(.malformed, "a varint is longer than ten bytes") }
            result |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return result }
            shift += 7
        }
    }

    private mutating func take(_ count: Int) throws(ESPHomeAPIError) -> ArraySlice<UInt8> {
        guard count >= 0, count <= bytes.count - index else { throw ESPHomeAPIError(.malformed, "a field of \(count) bytes runs past the end") }
        defer { index += count }
        return bytes[index..<index + count]
    }

    /// The next field, or `nil` at the end.
    public mutating func next() throws(ESPHomeAPIError) -> ProtoField? {
        guard !isAtEnd else { return nil }
        let key = try readVarint()
        guard key >> 3 > 0, key >> 3 <= UInt64(UInt32.max >> 3) else { throw ESPHomeAPIError(.malformed, "field number \(key >> 3) is invalid") }
        let number = UInt32(key >> 3)
        switch key & 7 {
        case 0:
            return ProtoField(number: number, value: .varint(try readVarint()))
        case 1:
            let b = try take(8)
            return ProtoField(number: number, value: .fixed64(b.reversed().reduce(0) { $0 << 8 | UInt64($1) }))
        case 2:
            let length = try readVarint()
            guard length <= UInt64(bytes.count - index) else { throw ESPHomeAPIError(.malformed, "field \(number) of \(length) bytes runs past the end") }
            return ProtoField(number: number, value: .bytes(Array(try take(Int(length)))))
        case 5:
            let b = try take(4)
            return ProtoField(number: number, value: .fixed32(b.reversed().reduce(0) { $0 << 8 | UInt32($1) }))
        default:
            throw ESPHomeAPIError(.malformed, "field \(number) has wire type \(key & 7), which proto3 does not use")
        }
    }
}
