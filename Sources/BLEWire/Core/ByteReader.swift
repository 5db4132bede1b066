/// A bounds-checked cursor over bytes, little-endian by default, that never traps.
///
/// Every read throws ``WireError`` with code ``WireErrorCode/truncated`` when the input is too short.
/// Fixed-length structures call ``expectEnd(_:)`` after decoding so that trailing bytes are rejected.
public struct ByteReader: Sendable {
    /// The bytes being read.
    public let bytes: [UInt8]
    /// The index of the next byte to read.
    public private(set) var offset: Int
    private let end: Int

    /// Creates a reader over a copy of `bytes`.
    public init(_ bytes: some Sequence<UInt8>) {
        self.bytes = Array(bytes)
        self.offset = 0
        self.end = self.bytes.count
    }

    /// Creates a reader over `bytes[range]` without copying.
    private init(bytes: [UInt8], offset: Int, end: Int) {
        self.bytes = bytes
        self.offset = offset
        self.end = end
    }

    /// The number of bytes not yet read.
    public var remainingCount: Int { end - offset }
    /// Whether every byte has been read.
    public var isAtEnd: Bool { offset >= end }

    @inline(__always)
    private mutating func need(_ count: Int, _ what: @autoclosure () -> String) throws(WireError) {
        guard count >= 0, end - offset >= count else {
            throw WireError(.truncated, "\(what()): need \(count) byte(s), \(end - offset) left")
        }
    }

    /// Reads one byte.
    public mutating func readUInt8(_ field: @autoclosure () -> String = "UInt8") throws(WireError) -> UInt8 {
        try need(1, field())
        let value = bytes[offset]
        offset += 1
        return value
    }

    /// Reads a little-endian unsigned integer of `byteCount` bytes (1...8).
    @inline(__always)
    private mutating func readLE(_ byteCount: Int, _ field: @autoclosure () -> String) throws(WireError) -> UInt64 {
        try need(byteCount, field())
        var value: UInt64 = 0
        for i in 0..<byteCount { value |= UInt64(bytes[offset + i]) << (8 * UInt64(i)) }
        offset += byteCount
        return value
    }

    /// Reads a little-endian `UInt16`.
    public mutating func readUInt16(_ field: @autoclosure () -> String = "UInt16") throws(WireError) -> UInt16 {
        UInt16(truncatingIfNeeded: try readLE(2, field()))
    }
    /// Reads a little-endian 24-bit value.
    public mutating func readUInt24(_ field: @autoclosure () -> String = "UInt24") throws(WireError) -> UInt32 {
        UInt32(truncatingIfNeeded: try readLE(3, field()))
    }
    /// Reads a little-endian `UInt32`.
    public mutating func readUInt32(_ field: @autoclosure () -> String = "UInt32") throws(WireError) -> UInt32 {
        UInt32(truncatingIfNeeded: try readLE(4, field()))
    }
    /// Reads a little-endian `UInt64`.
    public mutating func readUInt64(_ field: @autoclosure () -> String = "UInt64") throws(WireError) -> UInt64 {
        try readLE(8, field())
    }
    /// Reads a big-endian `UInt16` (for the few fields the specification sends MSB first).
    public mutating func readUInt16BE(_ field: @autoclosure () -> String = "UInt16BE") throws(WireError) -> UInt16 {
        try readUInt16(field()).byteSwapped
    }
    /// Reads a signed byte (RSSI, TX power).
    public mutating func readInt8(_ field: @autoclosure () -> String = "Int8") throws(WireError) -> Int8 {
        Int8(bitPattern: try readUInt8(field()))
    }

    /// Reads exactly `count` bytes.
    public mutating func readBytes(_ count: Int, _ field: @autoclosure () -> String = "bytes") throws(WireError) -> [UInt8] {
        try need(count, field())
        let slice = Array(bytes[offset..<(offset + count)])
        offset += count
        return slice
    }

    /// Reads every remaining byte.
    public mutating func readRemaining() -> [UInt8] {
        guard offset < end else { return [] }
        let slice = Array(bytes[offset..<end])
        offset = end
        return slice
    }

    /// Returns a reader over the next `count` bytes and advances past them.
    public mutating func readSubReader(_ count: Int, _ field: @autoclosure () -> String = "sub-structure") throws(WireError) -> ByteReader {
        try need(count, field())
        let sub = ByteReader(bytes: bytes, offset: offset, end: offset + count)
        offset += count
        return sub
    }

    /// Skips `count` bytes.
    public mutating func skip(_ count: Int, _ field: @autoclosure () -> String = "skip") throws(WireError) {
        try need(count, field())
        offset += count
    }

    /// Returns the next byte without consuming it, or `nil` at the end.
    public func peekUInt8() -> UInt8? { offset < end ? bytes[offset] : nil }

    /// Throws ``WireErrorCode/trailingBytes`` unless every byte has been read.
    public func expectEnd(_ structure: @autoclosure () -> String = "structure") throws(WireError) {
        guard offset == end else {
            throw WireError(.trailingBytes, "\(structure()): \(end - offset) unexpected trailing byte(s)")
        }
    }
}
