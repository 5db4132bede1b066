/// An append-only little-endian byte buffer used by every encoder.
public struct ByteWriter: Sendable {
    /// The bytes written so far.
    public private(set) var bytes: [UInt8]

    /// Creates an empty writer, reserving `capacity` bytes.
    public init(capacity: Int = 32) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// The number of bytes written so far.
    public var count: Int { bytes.count }

    /// Appends one byte.
    public mutating func write(_ value: UInt8) { bytes.append(value) }
    /// Appends a signed byte.
    public mutating func write(_ value: Int8) { bytes.append(UInt8(bitPattern: value)) }
    /// Appends a little-endian `UInt16`.
    public mutating func write(_ value: UInt16) {
        bytes.append(UInt8(truncatingIfNeeded: value))
        bytes.append(UInt8(truncatingIfNeeded: value >> 8))
    }
    /// Appends a little-endian `UInt32`.
    public mutating func write(_ value: UInt32) {
        for i in 0..<4 { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * UInt32(i)))) }
    }
    /// Appends a little-endian `UInt64`.
    public mutating func write(_ value: UInt64) {
        for i in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(i)))) }
    }
    /// Appends the low 24 bits of `value`, little-endian.
    public mutating func writeUInt24(_ value: UInt32) {
        for i in 0..<3 { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * UInt32(i)))) }
    }
    /// Appends a big-endian `UInt16`.
    public mutating func writeBE(_ value: UInt16) { write(value.byteSwapped) }
    /// Appends raw bytes.
    public mutating func write(_ data: some Sequence<UInt8>) { bytes.append(contentsOf: data) }
}

/// A value with a byte-level wire form.
public protocol WireCodable: Sendable {
    /// Decodes a value from `reader`, consuming exactly its bytes.
    init(from reader: inout ByteReader) throws(WireError)
    /// Appends the value's wire form to `writer`.
    func encode(into writer: inout ByteWriter)
    /// How many bytes ``encoded`` reserves before encoding: the wire form's length where a type knows it cheaply
    /// (one allocation instead of a small one and its growth), 32 by default. A hint only: any value is right.
    var encodedCountHint: Int { get }
}

extension WireCodable {
    /// Decodes a value that must span all of `bytes`.
    public init(bytes: some Sequence<UInt8>) throws(WireError) {
        var reader = ByteReader(bytes)
        try self.init(from: &reader)
        try reader.expectEnd("\(Self.self)")
    }

    /// 32 bytes: most PDUs and commands are shorter.
    public var encodedCountHint: Int { 32 }

    /// The value's wire form.
    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: encodedCountHint)
        encode(into: &writer)
        return writer.bytes
    }
}
