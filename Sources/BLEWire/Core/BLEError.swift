/// The one shape of swift-ble's errors: a ``code`` that says what kind of failure it was, a ``reason`` a person
/// reads, and the source location that raised it. Two errors are equal when their codes are (the reason and the
/// location describe one occurrence), so `catch let error as HostError where error.code == .notConnected` and
/// `#expect(throws: HostError(.notConnected, ""))` read as they should.
///
/// Every public error type of the stack conforms, so a caller that only wants a message or a code needs one cast:
/// `(error as? any BLEError)?.reason`.
public protocol BLEError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure: a value that maps to the wire where the failure came from it (an HCI status, an ATT
    /// error code, an SMP reason), or the module's own list.
    associatedtype Code: Hashable & Sendable
    /// What went wrong.
    var code: Code { get }
    /// A human-readable explanation.
    var reason: String { get }
    /// The source file that raised the error.
    var file: String { get }
    /// The source line that raised the error.
    var line: Int { get }
}

extension BLEError {
    /// Errors are equal when their codes are.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }

    /// Hashes the code only (equal errors hash alike).
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// The reason.
    public var description: String { reason }
}
