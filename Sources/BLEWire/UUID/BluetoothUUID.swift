/// A Bluetooth UUID in its 16-, 32- or 128-bit form.
///
/// Core 5.4, Vol 3, Part B, 2.5.1: 16- and 32-bit UUIDs are shorthands for 128-bit UUIDs built on the
/// Bluetooth Base UUID `00000000-0000-1000-8000-00805F9B34FB`. Equality and hashing compare the full 128-bit
/// value, so `180F` equals `0000180F-0000-1000-8000-00805F9B34FB`. On the wire UUIDs are little-endian; as text
/// (and in ``bigEndianBytes``) they are big-endian, as CoreBluetooth's `CBUUID` prints them.
public struct BluetoothUUID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The 128-bit value's most and least significant halves: two words, so that a UUID is made, compared and hashed
    /// without allocating.
    @usableFromInline let high: UInt64
    @usableFromInline let low: UInt64

    /// The Bluetooth Base UUID's low half and the fixed bits of its high half.
    static let baseLow: UInt64 = 0x8000_0080_5F9B_34FB
    static let baseHighBits: UInt64 = 0x0000_1000

    @inlinable init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    private init(raw: [UInt8]) {
        var h: UInt64 = 0, l: UInt64 = 0
        for i in 0..<8 { h = h << 8 | UInt64(raw[i]) }
        for i in 8..<16 { l = l << 8 | UInt64(raw[i]) }
        self.init(high: h, low: l)
    }

    /// The 128-bit value, big-endian (the order the text form is written in).
    public var bigEndianBytes: [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 16)
        for i in 0..<8 {
            bytes[i] = UInt8(truncatingIfNeeded: high >> (56 - 8 * UInt64(i)))
            bytes[8 + i] = UInt8(truncatingIfNeeded: low >> (56 - 8 * UInt64(i)))
        }
        return bytes
    }

    /// Creates a UUID from its 16-bit shorthand.
    @inlinable public init(_ value: UInt16) {
        // The Base UUID's bits (``baseHighBits``, ``baseLow``), written out so that inlined code need not reach them.
        self.init(high: UInt64(value) << 32 | 0x0000_1000, low: 0x8000_0080_5F9B_34FB)
    }

    /// Creates a UUID from its 32-bit shorthand.
    @inlinable public init(uint32 value: UInt32) {
        self.init(high: UInt64(value) << 32 | 0x0000_1000, low: 0x8000_0080_5F9B_34FB)
    }

    /// Creates a UUID from 16 big-endian bytes, or `nil` if `bytes` is not 16 bytes long.
    public init?(bigEndian bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        self.init(raw: bytes)
    }

    /// Creates a UUID from 16 little-endian bytes (the 128-bit wire form) at `offset` of `bytes`, which must hold them.
    init(littleEndian128 bytes: some RandomAccessCollection<UInt8>, at offset: Int) {
        var h: UInt64 = 0, l: UInt64 = 0
        var i = bytes.index(bytes.startIndex, offsetBy: offset)
        for k in 0..<16 {
            let b = UInt64(bytes[i])
            if k < 8 { l |= b << (8 * UInt64(k)) } else { h |= b << (8 * UInt64(k - 8)) }
            i = bytes.index(after: i)
        }
        self.init(high: h, low: l)
    }

    /// Decodes a UUID from its little-endian wire form of 2, 4 or 16 bytes.
    public init(littleEndian bytes: [UInt8]) throws(WireError) {
        switch bytes.count {
        case 2: self.init(UInt16(bytes[0]) | UInt16(bytes[1]) << 8)
        case 4: self.init(uint32: UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24)
        case 16: self.init(littleEndian128: bytes, at: 0)
        default: throw WireError(.lengthMismatch, "UUID of \(bytes.count) byte(s); expected 2, 4 or 16")
        }
    }

    /// Parses `"180F"`, `"0x180F"`, `"0000180F"` or `"0000180F-0000-1000-8000-00805F9B34FB"` (any case),
    /// as `CBUUID(string:)` does; `nil` for anything else.
    public init?(_ text: String) {
        var t = text
        if t.hasPrefix("0x") || t.hasPrefix("0X") { t.removeFirst(2) }
        // Only hex digits (and the dashes of the long form): integer parsing would also accept a sign.
        guard t.allSatisfy({ $0.isHexDigit || $0 == "-" }) else { return nil }
        switch t.count {
        case 4:
            guard let v = UInt16(t, radix: 16) else { return nil }
            self.init(v)
        case 8:
            guard let v = UInt32(t, radix: 16) else { return nil }
            self.init(uint32: v)
        case 36:
            let chars = Array(t)
            guard [8, 13, 18, 23].allSatisfy({ chars[$0] == "-" }) else { return nil }
            guard let bytes = [UInt8](hex: String(chars.filter { $0 != "-" })), bytes.count == 16 else { return nil }
            self.init(raw: bytes)
        case 32:
            guard let bytes = [UInt8](hex: t), bytes.count == 16 else { return nil }
            self.init(raw: bytes)
        default:
            return nil
        }
    }

    /// Whether the UUID is built on the Bluetooth Base UUID.
    public var isBased: Bool { low == Self.baseLow && high & 0xFFFF_FFFF == Self.baseHighBits }

    /// The 16-bit shorthand, when the UUID has one.
    public var uint16: UInt16? {
        guard isBased, high >> 48 == 0 else { return nil }
        return UInt16(truncatingIfNeeded: high >> 32)
    }

    /// The 32-bit shorthand, when the UUID has one (16-bit UUIDs have one too).
    public var uint32: UInt32? {
        guard isBased else { return nil }
        return UInt32(truncatingIfNeeded: high >> 32)
    }

    /// The shortest little-endian wire form allowed in ATT: 2 bytes for 16-bit UUIDs, else 16 bytes.
    ///
    /// ATT carries only 16- and 128-bit UUIDs (Core 5.4, Vol 3, Part F, 3.2.1).
    public var attWireBytes: [UInt8] {
        if let short = uint16 { return [UInt8(truncatingIfNeeded: short), UInt8(short >> 8)] }
        return bigEndianBytes.reversed()
    }

    /// The 128-bit little-endian wire form.
    public var wireBytes128: [UInt8] { bigEndianBytes.reversed() }

    /// The canonical text: `"180F"` for 16-bit UUIDs, `"0000FFFF"`-style for 32-bit, else the 36-character form
    /// (uppercase, like `CBUUID.uuidString`).
    public var uuidString: String {
        if let short = uint16 { return [UInt8(short >> 8), UInt8(truncatingIfNeeded: short)].hexString().uppercased() }
        if let long = uint32 {
            return [UInt8(long >> 24), UInt8(truncatingIfNeeded: long >> 16), UInt8(truncatingIfNeeded: long >> 8),
                    UInt8(truncatingIfNeeded: long)].hexString().uppercased()
        }
        return fullString
    }

    /// The full 36-character text form, uppercase.
    public var fullString: String {
        // 8-4-4-4-12 hex digits, most significant first: high's 16 digits, then low's.
        String(unsafeUninitializedCapacity: 36) { out in
            var i = 0
            for digit in 0..<32 {
                if digit == 8 || digit == 12 || digit == 16 || digit == 20 {
                    out[i] = UInt8(ascii: "-")
                    i += 1
                }
                let word = digit < 16 ? high : low
                out[i] = hexDigit(UInt8(truncatingIfNeeded: word >> UInt64(60 - 4 * (digit % 16))) & 0x0F, uppercase: true)
                i += 1
            }
            return i
        }
    }

    public var description: String { uuidString }

    public static func < (lhs: BluetoothUUID, rhs: BluetoothUUID) -> Bool {
        (lhs.high, lhs.low) < (rhs.high, rhs.low)
    }
}

extension BluetoothUUID: ExpressibleByIntegerLiteral {
    /// `let battery: BluetoothUUID = 0x180F`
    public init(integerLiteral value: UInt16) { self.init(value) }
}
