/// The error every decoder in ``BLEWire`` throws when bytes are truncated, oversized or inconsistent.
///
/// Decoders never trap on peer-controlled bytes: they throw a `WireError` whose ``BLEFailure/code`` says what kind
/// of problem it was, whose ``BLEFailure/reason`` says where, and which records the source location that detected it.
public typealias WireError = BLEFailure<WireErrorCode>

/// The kind of decoding failure of a ``WireError``.
public struct WireErrorCode: RawRepresentable, BLEErrorCode {
    /// The number of the kind (stable within a release; new kinds take new numbers).
    public var rawValue: UInt8
    /// The kind numbered `rawValue`.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// The input ended before a field that must be present.
    public static let truncated = WireErrorCode(rawValue: 1)
    /// Bytes remain after a fixed-length structure.
    public static let trailingBytes = WireErrorCode(rawValue: 2)
    /// A length field disagrees with the data that carries it.
    public static let lengthMismatch = WireErrorCode(rawValue: 3)
    /// A field holds a value the specification forbids.
    public static let invalidValue = WireErrorCode(rawValue: 4)
    /// The value is too large to encode (for example advertising data over 31 bytes).
    public static let oversized = WireErrorCode(rawValue: 5)
    /// A type, opcode or code this decoder does not know how to decode.
    public static let unknownType = WireErrorCode(rawValue: 6)

    /// ``BLEErrorCategory/protocolError`` for every kind: bytes (or a value to encode, for ``oversized``) that break
    /// their format, which is what the `ble` tool has always answered with exit status 3.
    public var category: BLEErrorCategory { .protocolError }

    public var description: String {
        switch self {
        case .truncated: "truncated"
        case .trailingBytes: "trailing bytes"
        case .lengthMismatch: "length mismatch"
        case .invalidValue: "invalid value"
        case .oversized: "oversized"
        case .unknownType: "unknown type"
        default: "code \(rawValue)"
        }
    }
}
