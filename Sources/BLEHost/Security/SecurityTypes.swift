import BLEProtocols
import BLEWire

/// How a host pairs and what it accepts. Core 5.4, Vol 3, Part H, 2.3 (pairing) and Part C, 10.2 (LE security mode 1).
public struct SecurityConfiguration: Sendable {
    /// What this device can show and input; with the peer's it chooses the pairing method.
    public var ioCapability: SMPIOCapability
    /// Whether pairings bond (the keys are stored in ``bondStore``).
    public var bonding: Bool
    /// Whether every pairing must be authenticated (protected against a man in the middle).
    public var mitm: Bool
    /// Whether LE Secure Connections is offered (otherwise only LE legacy pairing).
    public var secureConnections: Bool
    /// Whether LE legacy pairing is refused.
    public var secureConnectionsOnly: Bool
    /// The smallest encryption key size accepted (7...16; 16 by default, against key-size downgrades).
    public var minimumKeySize: UInt8
    /// A passkey this side displays instead of a random one (a device with a printed passkey).
    public var fixedPasskey: UInt32?
    /// Whether a central answers a peripheral's Security Request (by encrypting with the bond, or pairing).
    public var answersSecurityRequests: Bool
    /// Where bonds and this side's identity resolving key live.
    public var bondStore: any BondStore
    /// The Security Manager timeout (30 s in the specification). Core 5.4, Vol 3, Part H, 3.4.
    public var timeout: Duration
    /// LE privacy, host-based (Core 5.4, Vol 3, Part C, 10.7): the host advertises, scans and connects with a
    /// resolvable private address made from this side's IRK (Core 5.4, Vol 6, Part B, 1.3.2.2), never with its
    /// identity address. The identity address (public, or static random) stays the one bonds belong to and the one
    /// pairing distributes (Identity Address Information). Off by default.
    public var privacy: Bool
    /// How long one resolvable private address is used before a new one replaces it, `TGAP(private_addr_int)`:
    /// 15 minutes by default, the recommended value (Core 5.4, Vol 3, Part C, 10.7 and Appendix A).
    public var privateAddressInterval: Duration
    /// The identity pairing distributes (Identity Information, Identity Address Information) when it is not this
    /// side's own address with its IRK: a device whose controller has a public address but that advertises and
    /// connects from a static random one, say, and that does not use privacy, whose IRK may then be all zero
    /// (Core 5.4, Vol 3, Part H, 2.4.2.1 and Part C, 10.7). `nil` (the default): the own identity address and this
    /// side's stored IRK. Leave it `nil` with ``privacy`` on: peers resolve this side's private addresses with the IRK
    /// it distributed. Bonds still belong to the own identity address.
    public var distributedIdentity: SMPIdentity?
    /// Whether a Just Works pairing asks the pairing agent to go on (``PairingAgent/confirmJustWorks(for:)``), on
    /// both sides of it, the initiator's too: a test harness or a careful device that wants every pairing seen by a
    /// user. Off by default: Just Works then needs no user (a peripheral's agent still consents to a central's
    /// request, ``PairingAgent/acceptPairing(from:)``).
    public var confirmsJustWorks: Bool

    /// The defaults: no input and no output (Just Works), bonding, Secure Connections preferred with legacy
    /// accepted, 16-octet keys, Security Requests answered, bonds kept in memory, privacy off (a new private address
    /// every 15 minutes when it is on).
    public init(ioCapability: SMPIOCapability = .noInputNoOutput, bonding: Bool = true, mitm: Bool = false,
                secureConnections: Bool = true, secureConnectionsOnly: Bool = false, minimumKeySize: UInt8 = 16,
                fixedPasskey: UInt32? = nil, answersSecurityRequests: Bool = true, bondStore: any BondStore = InMemoryBondStore(),
                timeout: Duration = .seconds(30), privacy: Bool = false,
                privateAddressInterval: Duration = PrivateAddressRotation.recommendedInterval,
                distributedIdentity: SMPIdentity? = nil, confirmsJustWorks: Bool = false) {
        self.ioCapability = ioCapability
        self.bonding = bonding
        self.mitm = mitm
        self.secureConnections = secureConnections
        self.secureConnectionsOnly = secureConnectionsOnly
        self.minimumKeySize = minimumKeySize
        self.fixedPasskey = fixedPasskey
        self.answersSecurityRequests = answersSecurityRequests
        self.bondStore = bondStore
        self.timeout = timeout
        self.privacy = privacy
        self.privateAddressInterval = privateAddressInterval
        self.distributedIdentity = distributedIdentity
        self.confirmsJustWorks = confirmsJustWorks
    }
}

/// The user's part in pairing: consent, passkeys, numeric comparison. The host calls these from its own tasks and
/// waits for the answers (the Security Manager timeout, 30 s, still runs).
public protocol PairingAgent: Sendable {
    /// A peer asks to pair with this peripheral; `false` refuses (Pairing Not Supported).
    func acceptPairing(from peer: LEAddress) async -> Bool
    /// Show `passkey` (six digits, with leading zeros) for the user to type on the peer.
    func displayPasskey(_ passkey: UInt32, for peer: LEAddress) async
    /// The passkey the peer displays, typed by the user; `nil` cancels (Passkey Entry Failed).
    func enterPasskey(for peer: LEAddress) async -> UInt32?
    /// Whether the user sees the same six digits `number` on both devices (Numeric Comparison).
    func confirmNumber(_ number: UInt32, for peer: LEAddress) async -> Bool
    /// Whether to go on with a Just Works pairing with `peer` (no number to compare, no passkey): asked only when
    /// ``SecurityConfiguration/confirmsJustWorks`` is on; `false` fails the pairing. The default answers `true`.
    func confirmJustWorks(for peer: LEAddress) async -> Bool
}

extension PairingAgent {
    /// Goes on with every Just Works pairing.
    public func confirmJustWorks(for peer: LEAddress) async -> Bool { true }
}

/// An agent that needs no user: accepts every pairing and comparison, shows nothing, and enters ``passkey`` (or
/// cancels Passkey Entry without one). What a device with no input and no output does.
public struct AutomaticPairingAgent: PairingAgent {
    /// The passkey entered when one is asked for.
    public var passkey: UInt32?

    /// An agent entering `passkey` when asked.
    public init(passkey: UInt32? = nil) { self.passkey = passkey }

    public func acceptPairing(from peer: LEAddress) async -> Bool { true }
    public func displayPasskey(_ passkey: UInt32, for peer: LEAddress) async {}
    public func enterPasskey(for peer: LEAddress) async -> UInt32? { passkey }
    public func confirmNumber(_ number: UInt32, for peer: LEAddress) async -> Bool { true }
}

/// The security of one link.
public struct LinkSecurity: Sendable, Hashable, CustomStringConvertible {
    /// The security of the key the link is encrypted with; `nil` while it is not encrypted.
    public var level: SMPSecurityLevel?
    /// Whether this side holds a bond with the peer (keys to encrypt without pairing).
    public var isBonded: Bool
    /// The peer's identity address, when a bond or this link's pairing told it.
    public var peerIdentity: LEAddress?

    /// Creates a link's security from the level of its encryption key (`nil` when unencrypted), whether a bond exists
    /// and the peer's identity address.
    public init(level: SMPSecurityLevel? = nil, isBonded: Bool = false, peerIdentity: LEAddress? = nil) {
        self.level = level
        self.isBonded = isBonded
        self.peerIdentity = peerIdentity
    }

    /// Whether the link is encrypted.
    public var isEncrypted: Bool { level != nil }
    /// Whether the link is encrypted with an authenticated (MITM-protected) key.
    public var isAuthenticated: Bool { level?.authenticated == true }

    public var description: String {
        (level.map { "encrypted (\($0))" } ?? "not encrypted") + (isBonded ? ", bonded" : "")
    }
}

/// A pairing that succeeded, as the host reports it.
public struct PairingOutcome: Sendable, Hashable {
    /// How the pairing authenticated.
    public var method: SMPPairingMethod
    /// The security reached.
    public var security: SMPSecurityLevel
    /// Whether the keys were stored as a bond.
    public var bonded: Bool
    /// The peer's identity address (distributed, or the address it paired from).
    public var peerIdentity: LEAddress
}

/// Why pairing or encryption failed.
public typealias SecurityError = BLEFailure<SecurityErrorCode>

/// The kind of a ``SecurityError``: an open struct, so a release may add kinds (a `switch` over codes needs a
/// `default:`).
public struct SecurityErrorCode: BLEErrorCode {
    private enum Backing: Hashable, Sendable {
        case pairingFailed(SMPPairingFailure)
        case encryptionFailed(HCIStatus)
        case disconnected
        case timedOut
    }

    private let backing: Backing
    private init(_ backing: Backing) { self.backing = backing }

    /// The pairing failed (sent or received Pairing Failed, or the Security Manager timeout).
    /// ``BLEErrorCategory/protocolError``.
    public static func pairingFailed(_ failure: SMPPairingFailure) -> SecurityErrorCode { SecurityErrorCode(.pairingFailed(failure)) }
    /// The controller could not encrypt the link with the key (for a bond: the peer lost its keys, 0x06).
    /// ``BLEErrorCategory/protocolError``.
    public static func encryptionFailed(_ status: HCIStatus) -> SecurityErrorCode { SecurityErrorCode(.encryptionFailed(status)) }
    /// The link went down. ``BLEErrorCategory/disconnected``.
    public static let disconnected = SecurityErrorCode(.disconnected)
    /// The Security Manager timed out on this link earlier: no more pairing on it (a new link is needed).
    /// ``BLEErrorCategory/timedOut``.
    public static let timedOut = SecurityErrorCode(.timedOut)

    public var category: BLEErrorCategory {
        switch backing {
        case .pairingFailed, .encryptionFailed: .protocolError
        case .disconnected: .disconnected
        case .timedOut: .timedOut
        }
    }

    /// The kind, with its payload: `notConnected`, `commandFailed(...)`.
    public var description: String {
        switch backing {
        case .pairingFailed(let failure): "pairingFailed(\(failure))"
        case .encryptionFailed(let status): "encryptionFailed(\(status))"
        case .disconnected: "disconnected"
        case .timedOut: "timedOut"
        }
    }

    /// How the pairing of ``pairingFailed(_:)`` failed.
    public var pairingFailure: SMPPairingFailure? {
        switch backing {
        case .pairingFailed(let x): x
        default: nil
        }
    }

    /// The controller's status of ``encryptionFailed(_:)``.
    public var hciStatus: HCIStatus? {
        switch backing {
        case .encryptionFailed(let x): x
        default: nil
        }
    }
}
