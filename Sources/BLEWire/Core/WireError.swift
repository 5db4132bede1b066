/// The error every decoder in ``BLEWire`` throws when bytes are truncated, oversized or inconsistent.
///
/// Decoders never trap on peer-controlled bytes: they throw a `WireError` whose ``code`` says what kind of
/// problem it was, whose ``reason`` says where, and which records the source location that detected it.
public struct WireError: BLEError {
    /// The kind of decoding failure.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }

        /// The input ended before a field that must be present.
        public static let truncated = Code(rawValue: 1)
        /// Bytes remain after a fixed-length structure.
        public static let trailingBytes = Code(rawValue: 2)
        /// A length field disagrees with the data that carries it.
        public static let lengthMismatch = Code(rawValue: 3)
        /// A field holds a value the specification forbids.
        public static let invalidValue = Code(rawValue: 4)
        /// The value is too large to encode (for example advertising data over 31 bytes).
        public static let oversized = Code(rawValue: 5)
        /// A type, opcode or code this decoder does not know how to decode.
        public static let unknownType = Code(rawValue: 6)

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

    /// What went wrong.
    public var code: Code
    /// A human-readable explanation naming the structure and field involved.
    public var reason: String
    /// The source file that detected the problem.
    public var file: String
    /// The source line that detected the problem.
    public var line: Int

    /// Creates an error.
    public init(_ code: Code, _ reason: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.reason = reason
        self.file = file
        self.line = line
    }

    public var description: String { "\(code): \(reason) (\(file):\(line))" }
}
