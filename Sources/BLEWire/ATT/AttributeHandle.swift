/// An attribute handle: an attribute's address in a server's database (0x0001–0xFFFF; 0x0000 is reserved).
/// Core 5.4, Vol 3, Part F, 3.2.2. Not strideable on purpose: handles from a peer may be 0xFFFF, so the next handle
/// is ``next`` (`nil` past the end), never an arithmetic that could overflow.
public struct AttributeHandle: RawRepresentable, Hashable, Comparable, Sendable, ExpressibleByIntegerLiteral, CustomStringConvertible {
    /// The handle's value.
    public var rawValue: UInt16
    /// Creates a handle from its value.
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// Creates a handle from a literal.
    public init(integerLiteral value: UInt16) { rawValue = value }
    /// The reserved handle 0x0000 (never an attribute's).
    public static let reserved = AttributeHandle(rawValue: 0x0000)
    /// The first handle (0x0001).
    public static let first = AttributeHandle(rawValue: 0x0001)
    /// The last handle (0xFFFF).
    public static let last = AttributeHandle(rawValue: 0xFFFF)
    /// The handle after this one, or `nil` for 0xFFFF.
    public var next: AttributeHandle? { rawValue == 0xFFFF ? nil : AttributeHandle(rawValue: rawValue + 1) }
    /// The handle before this one, or `nil` for 0x0000.
    public var previous: AttributeHandle? { rawValue == 0 ? nil : AttributeHandle(rawValue: rawValue - 1) }
    public static func < (lhs: AttributeHandle, rhs: AttributeHandle) -> Bool { lhs.rawValue < rhs.rawValue }
    /// `0x000C`.
    public var description: String {
        let digits = String(rawValue, radix: 16, uppercase: true)
        return "0x" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}

extension ByteReader {
    /// Reads a 16-bit little-endian attribute handle field.
    public mutating func readAttributeHandle(_ field: @autoclosure () -> String = "Attribute Handle") throws(WireError) -> AttributeHandle {
        AttributeHandle(rawValue: try readUInt16(field()))
    }
}

extension ByteWriter {
    /// Writes an attribute handle field (16 bits, little-endian).
    public mutating func write(_ handle: AttributeHandle) { write(handle.rawValue) }
}
