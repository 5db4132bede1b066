/// A connection handle: the controller's name for one link while it is up (12 bits, 0x0000–0x0EFF). Core 5.4,
/// Vol 4, Part E, 5.4.2 and 7.1.5. A controller may give the handle of a closed link to the next one at once, so
/// nothing that outlives a link should be keyed by its handle (the host's `LinkID` is never reused).
public struct ConnectionHandle: RawRepresentable, Hashable, Comparable, Sendable, ExpressibleByIntegerLiteral, CustomStringConvertible {
    /// The handle's value.
    public var rawValue: UInt16
    /// Creates a handle from its value.
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// Creates a handle from a literal.
    public init(integerLiteral value: UInt16) { rawValue = value }
    /// The largest valid handle (0x0EFF).
    public static let maximum = ConnectionHandle(rawValue: 0x0EFF)
    public static func < (lhs: ConnectionHandle, rhs: ConnectionHandle) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { String(rawValue) }
}

extension ByteReader {
    /// Reads a 16-bit little-endian connection handle field.
    public mutating func readConnectionHandle(_ field: @autoclosure () -> String = "Connection_Handle") throws(WireError) -> ConnectionHandle {
        ConnectionHandle(rawValue: try readUInt16(field()))
    }
}

extension ByteWriter {
    /// Writes a connection handle field (16 bits, little-endian).
    public mutating func write(_ handle: ConnectionHandle) { write(handle.rawValue) }
}
