/// A 48-bit Bluetooth device address. Core 5.4, Vol 6, Part B, 1.3 and Vol 2, Part B, 1.2.
///
/// The text form is most-significant byte first (`"D1:D2:D3:D4:D5:D6"`); the wire form is little-endian
/// (`d6 d5 d4 d3 d2 d1`).
public struct BluetoothAddress: Hashable, Sendable, Comparable, CustomStringConvertible, WireCodable {
    /// The 48 bits in an integer: no allocation per address, and a cheap hash (scanners key tables by address for
    /// every advertisement they hear).
    private let value: UInt64

    /// The six bytes, most significant first (text order).
    public var bytes: [UInt8] { (0..<6).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) } }

    /// The all-zero address.
    public static let zero = BluetoothAddress(0)

    /// Creates an address from six bytes, most significant first; `nil` for any other count.
    public init?(bigEndian bytes: [UInt8]) {
        guard bytes.count == 6 else { return nil }
        self.init(bytes.reduce(0) { $0 << 8 | UInt64($1) })
    }

    /// Creates an address from the low 48 bits of `value`.
    public init(_ value: UInt64) {
        self.value = value & 0xFFFF_FFFF_FFFF
    }

    /// Parses `"AA:BB:CC:DD:EE:FF"` (or with `-` separators), case-insensitively.
    public init?(_ text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).count == 6
            ? text.split(separator: ":", omittingEmptySubsequences: false)
            : text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 6 else { return nil }
        var out: UInt64 = 0
        for part in parts {
            guard part.count == 2, part.allSatisfy(\.isHexDigit), let byte = UInt8(part, radix: 16) else { return nil }
            out = out << 8 | UInt64(byte)
        }
        self.init(out)
    }

    public init(from reader: inout ByteReader) throws(WireError) {
        // Little-endian on the wire: the first four octets are the low 32 bits.
        let low = try reader.readUInt32("BD_ADDR")
        let high = try reader.readUInt16("BD_ADDR")
        self.init(UInt64(high) << 32 | UInt64(low))
    }

    public func encode(into writer: inout ByteWriter) {
        writer.write(UInt32(truncatingIfNeeded: value))
        writer.write(UInt16(truncatingIfNeeded: value >> 32))
    }

    /// The address as an integer.
    public var uint64: UInt64 { value }

    /// The two most significant bits, which classify random addresses.
    public var topBits: UInt8 { UInt8(truncatingIfNeeded: value >> 46) }

    public var description: String {
        func digit(_ nibble: Int) -> UInt8 { UInt8(truncatingIfNeeded: nibble < 10 ? 0x30 + nibble : 0x37 + nibble) }
        return String(unsafeUninitializedCapacity: 17) { buffer in
            var i = 0
            for shift in stride(from: 40, through: 0, by: -8) {
                let byte = Int(truncatingIfNeeded: value >> UInt64(shift)) & 0xFF
                buffer[i] = digit(byte >> 4)
                buffer[i + 1] = digit(byte & 0x0F)
                if shift > 0 { buffer[i + 2] = UInt8(ascii: ":") }
                i += 3
            }
            return 17
        }
    }

    public static func < (lhs: BluetoothAddress, rhs: BluetoothAddress) -> Bool { lhs.value < rhs.value }
}

/// The address type as HCI carries it. Core 5.4, Vol 4, Part E, 7.8.5 / 7.7.65.1. Open code.
public struct LEAddressType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Public device address.
    public static let `public` = LEAddressType(rawValue: 0x00)
    /// Random device address.
    public static let random = LEAddressType(rawValue: 0x01)
    /// Public identity address (resolved by the controller).
    public static let publicIdentity = LEAddressType(rawValue: 0x02)
    /// Random (static) identity address (resolved by the controller).
    public static let randomIdentity = LEAddressType(rawValue: 0x03)

    /// Whether the address is a random one (including resolved random identities).
    public var isRandom: Bool { self == .random || self == .randomIdentity }

    public var description: String {
        switch self {
        case .public: "public"
        case .random: "random"
        case .publicIdentity: "public identity"
        case .randomIdentity: "random identity"
        default: "type 0x\([rawValue].hexString())"
        }
    }
}

/// An LE device address with its type. Core 5.4, Vol 6, Part B, 1.3.
public struct LEAddress: Hashable, Sendable, CustomStringConvertible {
    /// What kind of address this is.
    public enum Kind: Hashable, Sendable {
        case `public`
        /// Top bits 0b11; stays fixed at least for a power cycle.
        case randomStatic
        /// Top bits 0b01; resolvable with an IRK.
        case randomResolvable
        /// Top bits 0b00.
        case randomNonResolvable
        /// A random address whose top bits are the reserved 0b10, or whose random part is all zeros or all ones.
        case invalid
    }

    /// The 48-bit address.
    public var address: BluetoothAddress
    /// Public or random.
    public var type: LEAddressType

    /// Creates an address with its type.
    public init(_ address: BluetoothAddress, type: LEAddressType) {
        self.address = address
        self.type = type
    }

    /// Creates a random static address from six bytes (most significant first), forcing the top two bits to 0b11.
    public static func randomStatic(_ bytes: [UInt8]) -> LEAddress? {
        guard bytes.count == 6 else { return nil }
        var b = bytes
        b[0] |= 0xC0
        return BluetoothAddress(bigEndian: b).map { LEAddress($0, type: .random) }
    }

    /// The kind of address, from its type and, for random addresses, its top bits.
    public var kind: Kind {
        guard type.isRandom else { return .public }
        let value = address.uint64
        let rest = value & 0x3FFF_FFFF_FFFF
        switch address.topBits {
        case 0b11:
            return rest == 0 || rest == 0x3FFF_FFFF_FFFF ? .invalid : .randomStatic
        case 0b01:
            // The prand part (the top 24 bits less the two fixed ones) must not be all zeros or all ones.
            let prand = (value >> 24) & 0x3F_FFFF
            return prand == 0 || prand == 0x3F_FFFF ? .invalid : .randomResolvable
        case 0b00:
            return rest == 0 || rest == 0x3FFF_FFFF_FFFF ? .invalid : .randomNonResolvable
        default:
            return .invalid
        }
    }

    /// Whether the address is well formed for its kind.
    public var isValid: Bool { kind != .invalid }

    public var description: String {
        let kindText: String = switch kind {
        case .public: "public"
        case .randomStatic: "random static"
        case .randomResolvable: "resolvable private"
        case .randomNonResolvable: "non-resolvable private"
        case .invalid: "invalid random"
        }
        return "\(address) (\(kindText))"
    }
}
