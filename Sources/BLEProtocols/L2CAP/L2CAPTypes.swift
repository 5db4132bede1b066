import BLEWire

/// The receive side of a credit based channel, as this device announces it in a connection request or response.
/// Core 5.4, Vol 3, Part A, 4.22 and 4.25.
public struct L2CAPChannelParameters: Hashable, Sendable {
    /// The largest SDU this side accepts (`MTU`): 23 or more (64 or more for enhanced channels).
    public var mtu: UInt16
    /// The largest K-frame payload this side accepts (`MPS`): 23–65533 (64–65533 for enhanced channels).
    public var mps: UInt16
    /// The credits granted to the peer when the channel opens (`Initial Credits`).
    public var initialCredits: UInt16

    /// Creates parameters. The defaults carry a 512-byte SDU in three K-frames that each fit one 251-byte LE
    /// data-length PDU, with credits for 16 K-frames in flight.
    public init(mtu: UInt16 = 512, mps: UInt16 = 247, initialCredits: UInt16 = 16) {
        self.mtu = mtu
        self.mps = mps
        self.initialCredits = initialCredits
    }

    /// The smallest MTU and MPS of an LE credit based channel. Core 5.4, Vol 3, Part A, 4.22.
    public static let minimumLE: UInt16 = 23
    /// The smallest MTU and MPS of an enhanced credit based channel. Core 5.4, Vol 3, Part A, 4.25.
    public static let minimumEnhanced: UInt16 = 64
    /// The largest MPS. Core 5.4, Vol 3, Part A, 4.22.
    public static let maximumMPS: UInt16 = 65533

    /// Whether `mtu` and `mps` are within the ranges of an LE (`enhanced == false`) or enhanced channel.
    public static func areValid(mtu: UInt16, mps: UInt16, enhanced: Bool) -> Bool {
        let minimum = enhanced ? minimumEnhanced : minimumLE
        return mtu >= minimum && (minimum...maximumMPS).contains(mps)
    }
}

/// A misuse of ``L2CAPChannelManager`` by its consumer (never a peer's misbehaviour, which the manager answers on
/// the wire). Equal when the codes are equal.
public typealias L2CAPError = BLEFailure<L2CAPErrorCode>

/// The kind of misuse of an ``L2CAPError``.
public struct L2CAPErrorCode: RawRepresentable, BLEErrorCode {
    /// The number of the kind (stable within a release; new kinds take new numbers).
    public var rawValue: UInt8
    /// The kind numbered `rawValue`.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// No open credit based channel has this local CID.
    public static let channelNotOpen = L2CAPErrorCode(rawValue: 1)
    /// The SDU is longer than the peer's MTU.
    public static let sduTooLarge = L2CAPErrorCode(rawValue: 2)
    /// MTU, MPS or channel count outside the ranges the specification allows.
    public static let invalidParameters = L2CAPErrorCode(rawValue: 3)
    /// Every local dynamic CID is in use.
    public static let noFreeChannel = L2CAPErrorCode(rawValue: 4)
    /// The SPSM is outside 0x0001–0x00FF.
    public static let invalidSPSM = L2CAPErrorCode(rawValue: 5)
    /// The operation belongs to the other role (a central does not request a connection parameter update).
    public static let wrongRole = L2CAPErrorCode(rawValue: 6)
    /// The CID is not a fixed channel a consumer can register (the signaling channel belongs to the manager).
    public static let invalidFixedChannel = L2CAPErrorCode(rawValue: 7)

    /// ``BLEErrorCategory/disconnected`` for a channel that is not open, ``BLEErrorCategory/failure`` when every
    /// CID is in use, ``BLEErrorCategory/invalidInput`` for the other misuses.
    public var category: BLEErrorCategory {
        switch self {
        case .channelNotOpen: .disconnected
        case .noFreeChannel: .failure
        default: .invalidInput
        }
    }

    public var description: String {
        switch self {
        case .channelNotOpen: "channelNotOpen"
        case .sduTooLarge: "sduTooLarge"
        case .invalidParameters: "invalidParameters"
        case .noFreeChannel: "noFreeChannel"
        case .invalidSPSM: "invalidSPSM"
        case .wrongRole: "wrongRole"
        case .invalidFixedChannel: "invalidFixedChannel"
        default: "code \(rawValue)"
        }
    }
}

/// Identifies one timer the manager asked its driver to run. Never reused within a manager.
public struct L2CAPTimerID: Hashable, Sendable, CustomStringConvertible {
    /// A number unique within the manager.
    public let value: UInt64
    public var description: String { "l2cap-timer#\(value)" }
}

/// An open credit based channel, as the manager reports it.
public struct L2CAPChannelInfo: Hashable, Sendable {
    /// This side's CID (frames arrive on it; the consumer names the channel with it).
    public var localCID: L2CAPChannelID
    /// The peer's CID (frames are sent to it).
    public var remoteCID: L2CAPChannelID
    /// The service.
    public var spsm: L2CAPSPSM
    /// What this side accepts.
    public var local: L2CAPChannelParameters
    /// The largest SDU the peer accepts.
    public var peerMTU: UInt16
    /// The largest K-frame payload the peer accepts.
    public var peerMPS: UInt16
    /// Whether the channel was opened with L2CAP_CREDIT_BASED_CONNECTION_REQ (enhanced mode).
    public var isEnhanced: Bool
    /// Whether this side asked for the channel.
    public var initiatedLocally: Bool

    /// Creates the description of an open credit based channel: both CIDs, its SPSM, the parameters of each side, its
    /// mode and who opened it.
    public init(localCID: L2CAPChannelID, remoteCID: L2CAPChannelID, spsm: L2CAPSPSM, local: L2CAPChannelParameters,
                peerMTU: UInt16, peerMPS: UInt16, isEnhanced: Bool, initiatedLocally: Bool) {
        self.localCID = localCID
        self.remoteCID = remoteCID
        self.spsm = spsm
        self.local = local
        self.peerMTU = peerMTU
        self.peerMPS = peerMPS
        self.isEnhanced = isEnhanced
        self.initiatedLocally = initiatedLocally
    }
}

/// Why a credit based channel closed.
public enum L2CAPChannelCloseReason: Hashable, Sendable {
    /// The consumer called ``L2CAPChannelManager/disconnect(_:)``.
    case localRequest
    /// The peer sent a Disconnection Request.
    case remoteRequest
    /// The peer broke the credit based flow control rules; the manager disconnected the channel.
    case protocolViolation(L2CAPChannelViolation)
    /// The link went down.
    case linkClosed
}

/// A peer's breach of LE credit based flow control, for which the channel is disconnected.
/// Core 5.4, Vol 3, Part A, 3.4.3, 4.24 and 10.1.
public enum L2CAPChannelViolation: Hashable, Sendable {
    /// A K-frame arrived while the peer had no credits left.
    case kFrameWithoutCredit
    /// A K-frame's payload was longer than this side's MPS.
    case kFrameExceedsMPS
    /// An SDU Length above this side's MTU.
    case sduExceedsMTU
    /// The K-frames of an SDU carried more bytes than its SDU Length.
    case sduLengthExceeded
    /// A first K-frame too short to hold the SDU Length field.
    case missingSDULength
    /// Flow Control Credit pushed the credit count past 65535.
    case creditOverflow
}

/// Why an outgoing credit based connection did not open.
public enum L2CAPConnectionFailure: Hashable, Sendable {
    /// The peer refused it with this result.
    case refused(L2CAPCreditBasedConnectionResult)
    /// The peer answered the request with Command Reject.
    case rejected(L2CAPCommandRejectReason)
    /// No response within the signaling timeout (RTX).
    case timedOut
    /// The response did not make sense (a Destination CID outside the dynamic range or already in use, MTU or MPS
    /// below the minimum, malformed).
    case invalidResponse
    /// The link went down first.
    case linkClosed
}

/// How a peripheral's Connection Parameter Update Request ended. Core 5.4, Vol 3, Part A, 4.20 and 4.21.
public enum L2CAPConnectionParameterUpdateOutcome: Hashable, Sendable {
    /// The central answered with this result.
    case answered(L2CAPConnectionParameterUpdateResult)
    /// The central answered with Command Reject.
    case rejected(L2CAPCommandRejectReason)
    /// No response within the signaling timeout (RTX).
    case timedOut
    /// The link went down first.
    case linkClosed
}

/// How our reconfiguration of enhanced channels ended. Core 5.4, Vol 3, Part A, 4.27 and 4.28.
public enum L2CAPReconfigurationOutcome: Hashable, Sendable {
    /// The peer answered with this result; on success the new MTU and MPS apply.
    case answered(L2CAPCreditBasedReconfigureResult)
    /// The peer answered with Command Reject.
    case rejected(L2CAPCommandRejectReason)
    /// No response within the signaling timeout (RTX).
    case timedOut
    /// The link went down first.
    case linkClosed
}

/// What a listener requires of the link's security before a channel to its SPSM opens. Core 5.4, Vol 3, Part C,
/// 10.2 (LE security mode 1) and Part A, 4.23 (the results a refusal carries).
public struct L2CAPSecurityRequirement: Hashable, Sendable {
    /// The link must be encrypted.
    public var encryption: Bool
    /// The link's key must be authenticated (MITM-protected); implies encryption.
    public var authentication: Bool
    /// The smallest acceptable encryption key size, in octets (when encryption is required).
    public var minimumKeySize: Int

    /// Creates a requirement.
    public init(encryption: Bool = false, authentication: Bool = false, minimumKeySize: Int = 16) {
        self.encryption = encryption || authentication
        self.authentication = authentication
        self.minimumKeySize = minimumKeySize
    }

    /// No requirement (security mode 1 level 1).
    public static let none = L2CAPSecurityRequirement()
    /// An encrypted link (level 2), like CoreBluetooth's `publishL2CAPChannel(withEncryption: true)`.
    public static let encrypted = L2CAPSecurityRequirement(encryption: true)
    /// An encrypted link with an authenticated key (level 3).
    public static let authenticated = L2CAPSecurityRequirement(authentication: true)
}

/// A link's security as the L2CAP manager checks listeners' requirements against it.
public struct L2CAPLinkSecurity: Hashable, Sendable {
    /// The link is encrypted.
    public var encrypted: Bool
    /// Its key is authenticated.
    public var authenticated: Bool
    /// Its key size, in octets.
    public var keySize: Int
    /// This side holds a key for the peer (a bond): it could encrypt.
    public var hasKey: Bool

    /// Creates a link's security as L2CAP sees it; the defaults describe an unencrypted link with no key for the peer.
    public init(encrypted: Bool = false, authenticated: Bool = false, keySize: Int = 0, hasKey: Bool = false) {
        self.encrypted = encrypted
        self.authenticated = authenticated
        self.keySize = keySize
        self.hasKey = hasKey
    }

    /// The refusal `requirement` earns on this link, if any: like the ATT errors of Core 5.4, Vol 3, Part C, 10.3.1,
    /// Insufficient Authentication (0x0005) without a key to encrypt with or without the authentication required,
    /// Insufficient Encryption (0x0008) with a key but no encryption, Encryption Key Size Too Short (0x0007).
    public func refusal(for requirement: L2CAPSecurityRequirement) -> L2CAPCreditBasedConnectionResult? {
        guard requirement.encryption else { return nil }
        guard encrypted else { return hasKey ? .insufficientEncryption : .insufficientAuthentication }
        if requirement.authentication && !authenticated { return .insufficientAuthentication }
        if keySize < requirement.minimumKeySize { return .encryptionKeySizeTooShort }
        return nil
    }
}
