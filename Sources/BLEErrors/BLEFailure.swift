/// The one error type of swift-ble, written once: a ``code`` that says what kind of failure it was, a ``reason`` a
/// person reads, the source location that raised it, and the error behind it when there is one.
///
/// Each module names its errors by their code: `public typealias HostError = BLEFailure<HostErrorCode>`, so
/// `catch let error as HostError`, `throw HostError(.notConnected, "the link is down")` and
/// `error.code == .notConnected` read as they always have. The codes are open structs (see ``BLEErrorCode``): a
/// release may add one without breaking a client's `switch`, which needs a `default:` as it would for any
/// non-frozen type.
///
/// Two errors are equal when their codes are: the reason, the location and the underlying error describe one
/// occurrence, not the failure. So `#expect(throws: HostError(.notConnected))` matches whatever reason the host gave.
///
/// The value is one reference wide: the fields live in one immutable, shared backing object, so throwing and
/// catching copies a pointer, as with swift-asn1's `ASN1Error`.
public struct BLEFailure<Code: BLEErrorCode>: BLEError {
    /// The immutable fields, shared by the copies of one error.
    private final class Backing: Sendable {
        let code: Code
        let reason: String
        let underlying: (any Error)?
        let file: String
        let line: Int

        init(code: Code, reason: String, underlying: (any Error)?, file: String, line: Int) {
            self.code = code
            self.reason = reason
            self.underlying = underlying
            self.file = file
            self.line = line
        }
    }

    private let backing: Backing

    /// Creates an error, recording where it was raised.
    ///
    /// - Parameters:
    ///   - code: What kind of failure it is.
    ///   - reason: What went wrong, for a person; `nil` says the code's own description.
    ///   - underlying: The error that caused this one, if any (an `errno`, a decoder's error...).
    ///   - file: The source file that raised it (the caller's, by default).
    ///   - line: The source line that raised it (the caller's, by default).
    public init(_ code: Code, _ reason: String? = nil, underlying: (any Error)? = nil,
                file: String = #fileID, line: Int = #line) {
        backing = Backing(code: code, reason: reason ?? code.description, underlying: underlying, file: file, line: line)
    }

    /// What kind of failure it was: the part that equality and hashing compare.
    public var code: Code { backing.code }
    /// What went wrong, for a person (the code's description unless the raiser said more).
    public var reason: String { backing.reason }
    /// The error that caused this one, if the raiser kept it.
    public var underlying: (any Error)? { backing.underlying }
    /// The source file that raised the error (`#fileID`).
    public var file: String { backing.file }
    /// The source line that raised the error.
    public var line: Int { backing.line }
    /// The code's category: how a caller (or the `ble` tool's exit status) treats the failure.
    public var category: BLEErrorCategory { backing.code.category }

    /// The reason, then the underlying error in parentheses when there is one and it says something else (a wrapper
    /// that kept the underlying error's message as its reason says it once).
    public var description: String {
        guard let underlying else { return reason }
        let said = "\(underlying)"
        return said == reason ? reason : "\(reason) (\(said))"
    }

    /// Errors are equal when their codes are.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }

    /// Hashes the code only (equal errors hash alike).
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}

extension BLEFailure: CustomDebugStringConvertible {
    /// The code, the reason, the underlying error and the location: `notConnected: the link is down (Host/File.swift:12)`.
    public var debugDescription: String { "\(code): \(description) (\(file):\(line))" }
}
