/// Any ``BLEFailure``, whatever its code: the view a caller takes when it handles every error of the stack alike.
///
/// `(error as? any BLEError)?.reason` reads the message of any of swift-ble's errors, and `.category` says how to
/// treat it, without naming each module's error type. ``BLEFailure`` is the one conforming type: the requirements
/// are the fields it stores, written there once.
public protocol BLEError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of code the error carries (``HostErrorCode`` for a `HostError`...).
    associatedtype Code: BLEErrorCode
    /// What kind of failure it was.
    var code: Code { get }
    /// What went wrong, for a person.
    var reason: String { get }
    /// The error that caused this one, if the raiser kept it.
    var underlying: (any Error)? { get }
    /// The source file that raised the error.
    var file: String { get }
    /// The source line that raised the error.
    var line: Int { get }
    /// The code's category.
    var category: BLEErrorCategory { get }
}
