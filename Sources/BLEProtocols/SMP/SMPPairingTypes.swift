import BLEWire

/// The security a pairing reached. Core 5.4, Vol 3, Part C, 10.2.1 (LE security mode 1 levels).
public struct SMPSecurityLevel: Hashable, Sendable, CustomStringConvertible {
    /// LE Secure Connections (`true`) or LE legacy pairing.
    public var secureConnections: Bool
    /// Whether the method protected against a man in the middle.
    public var authenticated: Bool
    /// The negotiated encryption key size, 7...16 octets.
    public var keySize: Int

    /// Creates the security a pairing reached: whether it used LE Secure Connections, whether its key is authenticated,
    /// and the key size in octets.
    public init(secureConnections: Bool, authenticated: Bool, keySize: Int) {
        self.secureConnections = secureConnections
        self.authenticated = authenticated
        self.keySize = keySize
    }

    /// The LE security mode 1 level: 2 unauthenticated, 3 authenticated, 4 authenticated Secure Connections with a
    /// 16-octet key.
    public var level: Int { authenticated ? (secureConnections && keySize == 16 ? 4 : 3) : 2 }

    public var description: String {
        "\(secureConnections ? "LE Secure Connections" : "LE legacy"), \(authenticated ? "authenticated" : "unauthenticated"), \(keySize)-octet key"
    }
}

/// The keys one side distributed in phase 3. Core 5.4, Vol 3, Part H, 3.6. Keys are most significant octet first.
public struct SMPDistributedKeys: Hashable, Sendable {
    /// LE legacy: the LTK (Encryption Information).
    public var longTermKey: [UInt8]?
    /// LE legacy: the EDIV (Central Identification).
    public var ediv: UInt16 = 0
    /// LE legacy: the Rand (Central Identification).
    public var rand: UInt64 = 0
    /// The IRK (Identity Information).
    public var identityResolvingKey: [UInt8]?
    /// The identity address (Identity Address Information).
    public var identityAddress: LEAddress?
    /// The CSRK (Signing Information).
    public var signatureKey: [UInt8]?

    /// Creates the set of keys one side distributed; a key it did not send stays `nil` (EDIV and Rand stay 0).
    public init(longTermKey: [UInt8]? = nil, ediv: UInt16 = 0, rand: UInt64 = 0, identityResolvingKey: [UInt8]? = nil,
                identityAddress: LEAddress? = nil, signatureKey: [UInt8]? = nil) {
        self.longTermKey = longTermKey
        self.ediv = ediv
        self.rand = rand
        self.identityResolvingKey = identityResolvingKey
        self.identityAddress = identityAddress
        self.signatureKey = signatureKey
    }
}

/// What a successful pairing produced. Core 5.4, Vol 3, Part H, 2.3 (the STK or LTK of phase 2, the keys of phase 3).
public struct SMPPairingResult: Hashable, Sendable {
    /// How the pairing authenticated.
    public var method: SMPPairingMethod
    /// The security reached.
    public var security: SMPSecurityLevel
    /// Whether both sides asked for bonding (the keys are meant to be stored).
    public var bonding: Bool
    /// LE Secure Connections: whether either side used the specification's debug key pair, whose private key is
    /// public: the link is encrypted but not secret (Core 5.4, Vol 3, Part H, 2.3.5.6.1). A host should not bond.
    public var debugKey: Bool
    /// LE Secure Connections: the LTK from f5 (masked to the key size), used by both sides with EDIV and Rand 0.
    /// LE legacy: `nil` (the STK only encrypted this link; the distributed LTKs are in ``local`` and ``peer``).
    public var longTermKey: [UInt8]?
    /// The keys this side distributed.
    public var local: SMPDistributedKeys
    /// The keys the peer distributed.
    public var peer: SMPDistributedKeys
}

/// Why a pairing ended without success. Core 5.4, Vol 3, Part H, 3.5.5 (Pairing Failed) and 3.4 (the timeout).
public enum SMPPairingFailure: Hashable, Sendable, CustomStringConvertible {
    /// This side sent Pairing Failed with the reason.
    case sent(SMPPairingFailedReason)
    /// The peer sent Pairing Failed with the reason.
    case received(SMPPairingFailedReason)
    /// The 30-second Security Manager timer expired: no further SMP PDU may be sent or accepted on this link, and
    /// a new pairing needs a new link. Core 5.4, Vol 3, Part H, 3.4.
    case timeout
    /// The link could not be encrypted with the key the pairing produced.
    case encryptionFailed

    /// The reason on the wire, when Pairing Failed was sent or received.
    public var reason: SMPPairingFailedReason? {
        switch self {
        case .sent(let reason), .received(let reason): reason
        case .timeout, .encryptionFailed: nil
        }
    }

    public var description: String {
        switch self {
        case .sent(let reason): "pairing failed (sent \(reason))"
        case .received(let reason): "pairing failed (received \(reason))"
        case .timeout: "pairing timed out"
        case .encryptionFailed: "encryption failed"
        }
    }
}

/// Out-of-band data for a pairing. Core 5.4, Vol 3, Part H, 2.3.5.6.4 (LE Secure Connections) and 2.3.5.4 (legacy).
/// Values are most significant octet first.
public struct SMPOOBData: Hashable, Sendable {
    /// LE legacy: the 128-bit TK both sides received out of band.
    public var legacyTK: [UInt8]?
    /// LE Secure Connections: the peer's random r, received out of band.
    public var peerRandom: [UInt8]?
    /// LE Secure Connections: the peer's confirm value C = f4(PKx, PKx, r, 0), received out of band.
    public var peerConfirm: [UInt8]?
    /// LE Secure Connections: the random r this side sent out of band (with ``SMPPairing/localOOBConfirm(keyPair:random:)``).
    public var localRandom: [UInt8]?

    /// Creates out-of-band data: the legacy TK, or the peer's LE Secure Connections random and confirm values and this
    /// side's own random.
    public init(legacyTK: [UInt8]? = nil, peerRandom: [UInt8]? = nil, peerConfirm: [UInt8]? = nil, localRandom: [UInt8]? = nil) {
        self.legacyTK = legacyTK
        self.peerRandom = peerRandom
        self.peerConfirm = peerConfirm
        self.localRandom = localRandom
    }

    /// Whether this side has OOB data from the peer (the OOB data flag it sends).
    var hasPeerData: Bool { legacyTK != nil || (peerRandom != nil && peerConfirm != nil) }
}

/// This side's identity, distributed in phase 3 when both sides agree. Core 5.4, Vol 3, Part H, 3.6.4 and 3.6.5.
public struct SMPIdentity: Hashable, Sendable {
    /// The IRK (most significant octet first).
    public var identityResolvingKey: [UInt8]
    /// The public or static random identity address.
    public var address: LEAddress

    /// Creates this side's identity: the IRK it distributes and its identity address.
    public init(identityResolvingKey: [UInt8], address: LEAddress) {
        self.identityResolvingKey = identityResolvingKey
        self.address = address
    }
}
