/// What a ``BLEFailure`` carries as its code: a value that says what kind of failure it was and which
/// ``BLEErrorCategory`` that kind falls in.
///
/// Conforming types are open structs, not enums: a private backing enum holds the kinds (with their payloads: an
/// HCI status, an ATT error code...), public static members build them (`.notConnected`, `.commandFailed(opcode,
/// status)`), and typed optional accessors read the payloads back (`code.hciStatus`). A new kind is then a new
/// static member, not a new enum case, and does not break a client's `switch` (which has a `default:`).
public protocol BLEErrorCode: Hashable, Sendable, CustomStringConvertible {
    /// How a caller treats a failure of this kind.
    var category: BLEErrorCategory { get }
}

/// How a caller treats a failure, whatever module raised it: the few answers a retry policy, a user interface or the
/// `ble` tool's exit status needs.
///
/// An open struct: a release may add a category; a `switch` over categories needs a `default:`.
public struct BLEErrorCategory: Hashable, Sendable, CustomStringConvertible {
    private enum Backing: UInt8, Hashable, Sendable {
        case failure, notFound, timedOut, protocolError, invalidInput, unsupported, disconnected, cancelled
    }

    private let backing: Backing
    private init(_ backing: Backing) { self.backing = backing }

    /// Something failed that fits no other category (an I/O error, a transport that broke...).
    public static let failure = BLEErrorCategory(.failure)
    /// What was asked for is not there: no such device, service, characteristic, record or bond.
    public static let notFound = BLEErrorCategory(.notFound)
    /// No answer came in time.
    public static let timedOut = BLEErrorCategory(.timedOut)
    /// The peer or the controller said no, or broke the protocol: an ATT error, an HCI status, a Pairing Failed,
    /// a malformed response.
    public static let protocolError = BLEErrorCategory(.protocolError)
    /// The caller asked for something the API does not allow (a parameter out of range, a value too long, a
    /// configuration that cannot work). Retrying the same call fails the same way.
    public static let invalidInput = BLEErrorCategory(.invalidInput)
    /// This side cannot do it: the controller lacks the feature, the system lacks the support or denies access.
    public static let unsupported = BLEErrorCategory(.unsupported)
    /// The link, the channel or the transport is down (or never came up).
    public static let disconnected = BLEErrorCategory(.disconnected)
    /// The operation was cancelled by this side.
    public static let cancelled = BLEErrorCategory(.cancelled)

    /// `notFound`, `timedOut`...
    public var description: String {
        switch backing {
        case .failure: "failure"
        case .notFound: "notFound"
        case .timedOut: "timedOut"
        case .protocolError: "protocolError"
        case .invalidInput: "invalidInput"
        case .unsupported: "unsupported"
        case .disconnected: "disconnected"
        case .cancelled: "cancelled"
        }
    }
}
