import BLEWire

/// One pairing on one link, initiator (central) or responder (peripheral), as a sans-I/O state machine.
/// Core 5.4, Vol 3, Part H, 2.3 (pairing phases 1–3) and 3 (the Security Manager Protocol).
///
/// Phase 1 exchanges Pairing Request and Response; the method comes from ``SMPPairingMethod/select(initiator:responder:secureConnections:)``.
/// Phase 2 is LE Secure Connections (P-256 public keys, then Just Works, Numeric Comparison, Passkey Entry in 20
/// rounds or OOB, then the DHKey checks; the LTK comes from f5) or LE legacy (the TK, c1 confirm values, the STK
/// from s1). Phase 3 distributes the negotiated keys once the link is encrypted.
///
/// How a host drives it:
/// - Create one value per pairing, with this side's ``Configuration``, the link's initiator and responder
///   addresses, a P-256 key pair (``SMPKeyPair``, from 32 random octets) and a random source. When the peer's
///   identity is waiting after a failure (``SMPAttemptLimiter``), set ``Configuration/refusal`` to Repeated Attempts.
/// - Call ``start()`` to pair (a responder sends a Security Request), ``receive(_:)`` with every PDU of the SMP fixed
///   channel (CID 0x0006), ``passkeyEntered(_:)`` / ``numericComparisonConfirmed(_:)`` / ``justWorksConfirmed(_:)``
///   with the user's answers,
///   ``timerFired()`` when the timer this machine started expires, and ``encryptionChanged(success:keySize:)`` when
///   the controller reports the link encrypted (or not) after ``Action/startEncryption(longTermKey:ediv:rand:)``
///   (initiator) or after it answered the LE Long Term Key Request with ``Action/provideLongTermKey(_:)`` (responder).
/// - Perform the returned actions in order. After ``Action/fail(_:)`` or ``Action/complete(_:)`` the value accepts
///   nothing more; pair again with a new value. After a ``SMPPairingFailure/timeout`` no new pairing may run on the link.
///
/// A host's loop, in outline (`peer` is the peer's identity or address, `now` a monotonic reading):
/// ```swift
/// var configuration = SMPPairing.Configuration(ioCapability: .keyboardDisplay, mitm: true)
/// if !limiter.mayPair(peer, now: now) { configuration.refusal = .repeatedAttempts }
/// var pairing = SMPPairing(role: .responder, configuration: configuration, initiatorAddress: central,
///                          responderAddress: local, keyPair: keyPair, random: secureRandom)
/// perform(pairing.receive(bytes))            // every SMP PDU; user answers, timer and encryption likewise
/// // perform: .send → L2CAP CID 0x0006; .startTimer/.cancelTimer → one timer calling pairing.timerFired();
/// // .displayPasskey/.requestPasskey/.confirmNumber/.confirmJustWorks → the application; .provideLongTermKey → keep it for the
/// // LE Long Term Key Request; .complete → store the keys when bonding, limiter.recordSuccess(peer);
/// // .fail → limiter.recordFailure(peer, now: now) (and after .timeout, no SMP on this link any more).
/// ```
///
/// Keys and nonces are most significant octet first; PDUs carry them least significant octet first.
public struct SMPPairing: Sendable {
    /// Which side of the pairing this is.
    public enum Role: Hashable, Sendable {
        /// The central: sends the Pairing Request.
        case initiator
        /// The peripheral: answers with the Pairing Response.
        case responder
    }

    /// This side's pairing features and keys.
    public struct Configuration: Sendable {
        /// The IO capability.
        public var ioCapability: SMPIOCapability
        /// Whether to bond (store the keys).
        public var bonding: Bool
        /// Whether MITM protection is required: a pairing that can only be Just Works fails with Authentication
        /// Requirements.
        public var mitm: Bool
        /// Whether LE Secure Connections is supported.
        public var secureConnections: Bool
        /// Whether LE legacy pairing is refused (Authentication Requirements).
        public var secureConnectionsOnly: Bool
        /// The smallest acceptable encryption key size (7...16).
        public var minimumKeySize: UInt8
        /// The largest encryption key size offered (7...16).
        public var maximumKeySize: UInt8
        /// Whether this side distributes an LTK with EDIV and Rand (LE legacy only).
        public var distributeEncryptionKey: Bool
        /// The keys asked of the peer.
        public var requestedPeerKeys: SMPKeyDistribution
        /// This side's IRK and identity address, distributed when both sides agree.
        public var identity: SMPIdentity?
        /// This side's CSRK (most significant octet first), distributed when both sides agree.
        public var signatureKey: [UInt8]?
        /// Out-of-band data, when some was exchanged.
        public var oob: SMPOOBData?
        /// When set, a new pairing from the peer (its Pairing Request or Security Request) is answered with Pairing
        /// Failed of this reason, typically Repeated Attempts. Core 5.4, Vol 3, Part H, 2.3.6.
        public var refusal: SMPPairingFailedReason?
        /// The Security Manager timer (30 s in the specification). Core 5.4, Vol 3, Part H, 3.4.
        public var timeout: Duration
        /// A fixed passkey this side displays instead of a random one (a device with a printed passkey). The
        /// specification asks for a new random passkey per pairing (Core 5.4, Vol 3, Part H, 2.3.5.3): a fixed one
        /// protects only as long as it stays secret.
        public var fixedPasskey: UInt32?
        /// Whether a Just Works pairing asks the user to go on (``SMPPairing/Action/confirmJustWorks``) before it
        /// completes: in LE Secure Connections where Numeric Comparison would show the number (after the nonces,
        /// before the DHKey check), in LE legacy pairing before this side's confirm value. The specification leaves
        /// this to the device (Core 5.4, Vol 3, Part H, 2.3.5.6.2: Just Works is Numeric Comparison without the
        /// number shown); off by default, Just Works then needs no user.
        public var confirmsJustWorks: Bool

        /// A configuration; by default Just Works capable, bonding, Secure Connections, 16-octet keys.
        public init(ioCapability: SMPIOCapability = .noInputNoOutput, bonding: Bool = true, mitm: Bool = false,
                    secureConnections: Bool = true, secureConnectionsOnly: Bool = false, minimumKeySize: UInt8 = 16,
                    maximumKeySize: UInt8 = 16, distributeEncryptionKey: Bool = true,
                    requestedPeerKeys: SMPKeyDistribution = [.encryptionKey, .identityKey, .signingKey],
                    identity: SMPIdentity? = nil, signatureKey: [UInt8]? = nil, oob: SMPOOBData? = nil,
                    refusal: SMPPairingFailedReason? = nil, timeout: Duration = .seconds(30), fixedPasskey: UInt32? = nil,
                    confirmsJustWorks: Bool = false) {
            self.ioCapability = ioCapability
            self.bonding = bonding
            self.mitm = mitm
            self.secureConnections = secureConnections
            self.secureConnectionsOnly = secureConnectionsOnly
            self.minimumKeySize = minimumKeySize
            self.maximumKeySize = maximumKeySize
            self.distributeEncryptionKey = distributeEncryptionKey
            self.requestedPeerKeys = requestedPeerKeys
            self.identity = identity
            self.signatureKey = signatureKey
            self.oob = oob
            self.refusal = refusal
            self.timeout = timeout
            self.fixedPasskey = fixedPasskey.map { $0 % 1_000_000 }
            self.confirmsJustWorks = confirmsJustWorks
        }

        /// The keys this side offers to distribute.
        var offeredKeys: SMPKeyDistribution {
            var keys: SMPKeyDistribution = distributeEncryptionKey ? [.encryptionKey] : []
            if identity != nil { keys.insert(.identityKey) }
            if signatureKey?.count == 16 { keys.insert(.signingKey) }
            return keys
        }
    }

    /// What the host must do.
    public enum Action: Hashable, Sendable {
        /// Send this PDU on the SMP channel.
        case send(SMPPDU)
        /// Start (or restart) the Security Manager timer.
        case startTimer(Duration)
        /// Stop the Security Manager timer.
        case cancelTimer
        /// Show this six-digit passkey to the user.
        case displayPasskey(UInt32)
        /// Ask the user for the passkey the peer displays (answer with ``SMPPairing/passkeyEntered(_:)``).
        case requestPasskey
        /// Ask the user whether both devices show this six-digit number (answer with
        /// ``SMPPairing/numericComparisonConfirmed(_:)``).
        case confirmNumber(UInt32)
        /// Ask the user whether to go on with a Just Works pairing (answer with ``SMPPairing/justWorksConfirmed(_:)``);
        /// only with ``Configuration/confirmsJustWorks``.
        case confirmJustWorks
        /// Initiator: encrypt the link (HCI LE Enable Encryption) with this key, EDIV and Rand.
        case startEncryption(longTermKey: [UInt8], ediv: UInt16, rand: UInt64)
        /// Responder: answer the controller's LE Long Term Key Request with this key.
        case provideLongTermKey([UInt8])
        /// The pairing succeeded.
        case complete(SMPPairingResult)
        /// The pairing failed.
        case fail(SMPPairingFailure)
    }

    /// Where the pairing stands. Internal (not private) because the phases live in extensions in their own files.
    enum Phase: Hashable, Sendable {
        case idle, securityRequested, awaitingPairingResponse, awaitingPublicKey, awaitingConfirm, awaitingRandom,
             awaitingDHKeyCheck, awaitingEncryption, distributing, complete, failed
    }

    /// What the pairing accumulated so far.
    struct Session: Sendable {
        var request = SMPPairingFeatures(ioCapability: .noInputNoOutput, authRequirements: [], initiatorKeyDistribution: [], responderKeyDistribution: [])
        var response = SMPPairingFeatures(ioCapability: .noInputNoOutput, authRequirements: [], initiatorKeyDistribution: [], responderKeyDistribution: [])
        var method = SMPPairingMethod.justWorks
        var secureConnections = false
        var keySize = 16
        var passkey: UInt32?
        var awaitingPasskey = false
        var awaitingNumericComparison = false
        var awaitingJustWorks = false
        var tk: [UInt8]?
        var localNonce: [UInt8] = []
        var peerNonce: [UInt8] = []
        var peerConfirm: [UInt8]?
        var sentConfirm = false
        var round = 0
        var peerX: [UInt8] = []
        var peerY: [UInt8] = []
        var dhKey: [UInt8] = []
        var macKey: [UInt8] = []
        var longTermKey: [UInt8] = []
        var peerCheck: [UInt8]?
        var sentCheck = false
        var expectedKeys: [SMPCode] = []
        var early: [SMPPDU] = []
        var local = SMPDistributedKeys()
        var peer = SMPDistributedKeys()
    }

    /// This side's role.
    public let role: Role
    /// This side's features and keys.
    public let configuration: Configuration
    let keyPair: SMPKeyPair
    let random: @Sendable (Int) -> [UInt8]
    let initiatorAddress: LEAddress
    let responderAddress: LEAddress
    var phase = Phase.idle
    var session = Session()

    /// A pairing that has not started. `random(n)` returns `n` random octets (a cryptographically secure source in
    /// production, a seeded one in tests).
    public init(role: Role, configuration: Configuration = Configuration(), initiatorAddress: LEAddress,
                responderAddress: LEAddress, keyPair: SMPKeyPair, random: @escaping @Sendable (Int) -> [UInt8]) {
        self.role = role
        self.configuration = configuration
        self.initiatorAddress = initiatorAddress
        self.responderAddress = responderAddress
        self.keyPair = keyPair
        self.random = random
    }

    /// Whether the pairing ended (completed or failed); the value then accepts nothing more.
    public var isFinished: Bool { phase == .complete || phase == .failed }
    /// The method, once phase 1 chose it.
    public var method: SMPPairingMethod? { phase == .idle || phase == .securityRequested || phase == .awaitingPairingResponse ? nil : session.method }

    /// The negotiated encryption key size, once phase 1 chose it (what the encrypted link must report).
    public var keySize: Int? { method == nil ? nil : session.keySize }
    /// The security the link will have once encrypted with this pairing's key, once phase 1 chose the method.
    public var securityLevel: SMPSecurityLevel? {
        method.map { SMPSecurityLevel(secureConnections: session.secureConnections, authenticated: $0.isAuthenticated, keySize: session.keySize) }
    }
    /// Whether the pairing waits for the user's passkey or numeric comparison answer.
    public var isWaitingForUser: Bool { session.awaitingPasskey || session.awaitingNumericComparison || session.awaitingJustWorks }

    /// The X coordinate of the debug public key (most significant octet first). Core 5.4, Vol 3, Part H, 2.3.5.6.1.
    public static let debugPublicKeyX: [UInt8] = [
        0x20, 0xB0, 0x03, 0xD2, 0xF2, 0x97, 0xBE, 0x2C, 0x5E, 0x2C, 0x83, 0xA7, 0xE9, 0xF9, 0xA5, 0xB9,
        0xEF, 0xF4, 0x91, 0x11, 0xAC, 0xF4, 0xFD, 0xDB, 0xCC, 0x03, 0x01, 0x48, 0x0E, 0x35, 0x9D, 0xE6,
    ]

    /// The OOB confirm value to send out of band with `random` (16 octets): f4(PKx, PKx, r, 0).
    /// Core 5.4, Vol 3, Part H, 2.3.5.6.4.
    public static func localOOBConfirm(keyPair: SMPKeyPair, random: [UInt8]) throws(SMPCrypto.Failure) -> [UInt8] {
        try SMPCrypto.f4(u: keyPair.x, v: keyPair.x, x: random, z: 0)
    }

    // MARK: Inputs

    /// Starts pairing: the initiator sends its Pairing Request, the responder a Security Request. Nothing once
    /// started.
    public mutating func start() -> [Action] {
        guard phase == .idle else { return [] }
        switch role {
        case .initiator:
            return sendPairingRequest()
        case .responder:
            phase = .securityRequested
            return send(.securityRequest(localAuthRequirements))
        }
    }

    /// Ends the pairing now with Pairing Failed of `reason` (nothing when it already ended).
    public mutating func abort(_ reason: SMPPairingFailedReason) -> [Action] {
        isFinished ? [] : fail(reason)
    }

    /// The Security Manager timer expired: the pairing fails and nothing more is sent. Core 5.4, Vol 3, Part H, 3.4.
    public mutating func timerFired() -> [Action] {
        guard !isFinished, phase != .idle else { return [] }
        phase = .failed
        return [.fail(.timeout)]
    }

    /// The user typed the passkey (`nil`: the user cancelled, Passkey Entry Failed).
    public mutating func passkeyEntered(_ passkey: UInt32?) -> [Action] {
        guard !isFinished, session.awaitingPasskey else { return [] }
        session.awaitingPasskey = false
        guard let passkey, passkey <= 999_999 else { return fail(.passkeyEntryFailed) }
        session.passkey = passkey
        session.tk = Self.passkeyValue(passkey)
        return session.secureConnections ? passkeyProgress() : legacyProgress()
    }

    /// The user confirmed (or rejected: Numeric Comparison Failed) the six digits.
    public mutating func numericComparisonConfirmed(_ confirmed: Bool) -> [Action] {
        guard !isFinished, session.awaitingNumericComparison else { return [] }
        session.awaitingNumericComparison = false
        guard confirmed else { return fail(.numericComparisonFailed) }
        return checkProgress()
    }

    /// The user agreed (or refused) to go on with a Just Works pairing (``Action/confirmJustWorks``). A refusal fails
    /// the pairing: Numeric Comparison Failed in LE Secure Connections (whose Just Works is Numeric Comparison
    /// without the number), Unspecified Reason in LE legacy pairing (which has no code of its own for it).
    public mutating func justWorksConfirmed(_ confirmed: Bool) -> [Action] {
        guard !isFinished, session.awaitingJustWorks else { return [] }
        session.awaitingJustWorks = false
        guard confirmed else { return fail(session.secureConnections ? .numericComparisonFailed : .unspecifiedReason) }
        guard session.secureConnections else {
            session.tk = [UInt8](repeating: 0, count: 16)
            return legacyProgress()
        }
        return checkProgress()
    }

    /// The controller reports the link's encryption after pairing phase 2: phase 3, key distribution, starts.
    public mutating func encryptionChanged(success: Bool, keySize: Int) -> [Action] {
        guard phase == .awaitingEncryption else { return [] }
        guard success else {
            phase = .failed
            return [.cancelTimer, .fail(.encryptionFailed)]
        }
        guard keySize == session.keySize else { return fail(.encryptionKeySize) }
        return startDistribution()
    }

    /// A PDU from the SMP channel.
    ///
    /// A PDU whose code is reserved (0x00, 0x0F and up) is ignored: no answer, no change of state, a pairing under
    /// way goes on. Core 5.4, Vol 3, Part H, 3.3. Defined codes this role does not take, or that come out of
    /// sequence, are still answered with Pairing Failed.
    public mutating func receive(_ bytes: [UInt8]) -> [Action] {
        guard !isFinished else { return [] }
        if let code = bytes.first, SMPCode(rawValue: code).isReserved { return [] }
        let pdu: SMPPDU
        do {
            pdu = try SMPPDU(bytes: bytes)
        } catch {
            return fail(.invalidParameters)
        }
        switch pdu {
        case .pairingFailed(let reason):
            phase = .failed
            return [.cancelTimer, .fail(.received(reason))]
        case .unknown:
            return []   // a reserved code, ignored above; every defined code decodes to its own case
        case .keypressNotification:
            return []
        case .securityRequest:
            guard role == .initiator else { return fail(.commandNotSupported) }
            guard phase == .idle else { return [] }   // a pairing is already under way: nothing to start
            if let refusal = configuration.refusal { return fail(refusal) }
            return sendPairingRequest()
        case .pairingRequest(let request):
            guard role == .responder else { return fail(.commandNotSupported) }
            guard phase == .idle || phase == .securityRequested else { return fail(.unspecifiedReason) }
            if let refusal = configuration.refusal { return fail(refusal) }
            return receivePairingRequest(request)
        case .pairingResponse(let response):
            guard role == .initiator else { return fail(.commandNotSupported) }
            guard phase == .awaitingPairingResponse else { return fail(.unspecifiedReason) }
            return receivePairingResponse(response)
        case .pairingPublicKey(let x, let y):
            guard phase == .awaitingPublicKey else { return fail(.unspecifiedReason) }
            return receivePublicKey(x: SMPCrypto.wire(x), y: SMPCrypto.wire(y))
        case .pairingConfirm(let value):
            guard phase == .awaitingConfirm else { return fail(.unspecifiedReason) }
            return session.secureConnections ? receiveConfirm(SMPCrypto.wire(value)) : receiveLegacyConfirm(SMPCrypto.wire(value))
        case .pairingRandom(let value):
            guard phase == .awaitingRandom else { return fail(.unspecifiedReason) }
            return session.secureConnections ? receiveRandom(SMPCrypto.wire(value)) : receiveLegacyRandom(SMPCrypto.wire(value))
        case .pairingDHKeyCheck(let value):
            guard phase == .awaitingDHKeyCheck else { return fail(.unspecifiedReason) }
            return receiveCheck(SMPCrypto.wire(value))
        case .encryptionInformation, .centralIdentification, .identityInformation, .identityAddressInformation,
             .signingInformation:
            if phase == .awaitingEncryption, role == .initiator, session.early.count < 5 {
                // The responder's keys may overtake the initiator's Encryption Change event.
                session.early.append(pdu)
                return []
            }
            guard phase == .distributing else { return fail(.unspecifiedReason) }
            return receiveKey(pdu)
        }
    }

    // MARK: Phase 1

    var localAuthRequirements: SMPAuthRequirements {
        var auth: SMPAuthRequirements = configuration.bonding ? [.bonding] : []
        if configuration.mitm { auth.insert(.mitm) }
        if configuration.secureConnections { auth.insert(.secureConnections) }
        return auth
    }

    private var localFeatures: SMPPairingFeatures {
        SMPPairingFeatures(ioCapability: configuration.ioCapability, oobDataFlag: configuration.oob?.hasPeerData == true ? 1 : 0,
                           authRequirements: localAuthRequirements,
                           maximumEncryptionKeySize: min(max(configuration.maximumKeySize, 7), 16),
                           initiatorKeyDistribution: configuration.offeredKeys,
                           responderKeyDistribution: configuration.requestedPeerKeys)
    }

    private mutating func sendPairingRequest() -> [Action] {
        session.request = localFeatures
        phase = .awaitingPairingResponse
        return send(.pairingRequest(session.request))
    }

    private mutating func receivePairingRequest(_ request: SMPPairingFeatures) -> [Action] {
        var response = localFeatures
        response.initiatorKeyDistribution = request.initiatorKeyDistribution.intersection(configuration.requestedPeerKeys)
        response.responderKeyDistribution = request.responderKeyDistribution.intersection(configuration.offeredKeys)
        session.request = request
        session.response = response
        if let reason = negotiate() { return fail(reason) }
        var actions = send(.pairingResponse(response))
        actions += session.secureConnections ? awaitPublicKey() : beginLegacy()
        return actions
    }

    private mutating func receivePairingResponse(_ response: SMPPairingFeatures) -> [Action] {
        guard response.initiatorKeyDistribution.isSubset(of: session.request.initiatorKeyDistribution),
              response.responderKeyDistribution.isSubset(of: session.request.responderKeyDistribution) else {
            return fail(.invalidParameters)
        }
        session.response = response
        if let reason = negotiate() { return fail(reason) }
        return session.secureConnections ? sendPublicKey() : beginLegacy()
    }

    /// Key size, Secure Connections or legacy, the method and the requirements on it. Core 5.4, Vol 3, Part H,
    /// 2.3.4 (key size) and 2.3.5.1 (method).
    private mutating func negotiate() -> SMPPairingFailedReason? {
        let (request, response) = (session.request, session.response)
        let keySize = min(request.maximumEncryptionKeySize, response.maximumEncryptionKeySize)
        guard keySize >= max(configuration.minimumKeySize, 7) else { return .encryptionKeySize }
        session.keySize = Int(keySize)
        session.secureConnections = request.authRequirements.contains(.secureConnections)
            && response.authRequirements.contains(.secureConnections)
        if configuration.secureConnectionsOnly && !session.secureConnections { return .authenticationRequirements }
        guard let method = SMPPairingMethod.select(initiator: request, responder: response,
                                                   secureConnections: session.secureConnections) else {
            return .invalidParameters
        }
        session.method = method
        if configuration.mitm && !method.isAuthenticated { return .authenticationRequirements }
        if method == .outOfBand {
            let peerHasOurs = (role == .initiator ? response : request).oobDataFlag == 1
            if session.secureConnections {
                if peerHasOurs && configuration.oob?.localRandom?.count != 16 { return .oobNotAvailable }
            } else if configuration.oob?.legacyTK?.count != 16 {
                return .oobNotAvailable
            }
        }
        return nil
    }

    // MARK: Helpers

    /// Sends PDUs and (re)starts the Security Manager timer.
    func send(_ pdus: SMPPDU...) -> [Action] {
        pdus.map { .send($0) } + [.startTimer(configuration.timeout)]
    }

    /// Sends Pairing Failed and ends the pairing.
    mutating func fail(_ reason: SMPPairingFailedReason) -> [Action] {
        phase = .failed
        return [.send(.pairingFailed(reason)), .cancelTimer, .fail(.sent(reason))]
    }

    /// `count` random octets, whatever the source returned.
    func randomBytes(_ count: Int) -> [UInt8] {
        Array((random(count) + [UInt8](repeating: 0, count: count)).prefix(count))
    }

    /// A new six-digit passkey from the random source.
    func newPasskey() -> UInt32 {
        randomBytes(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) } % 1_000_000
    }

    /// A passkey as a 128-bit value, most significant octet first (the legacy TK, the Secure Connections ra/rb).
    static func passkeyValue(_ passkey: UInt32) -> [UInt8] {
        [UInt8](repeating: 0, count: 12) + (0..<4).reversed().map { UInt8(truncatingIfNeeded: passkey >> (8 * UInt32($0))) }
    }

    /// A key masked to the negotiated size: its most significant octets beyond the size are zero.
    /// Core 5.4, Vol 3, Part H, 2.3.4.
    func masked(_ key: [UInt8]) -> [UInt8] {
        let drop = max(0, key.count - session.keySize)
        return [UInt8](repeating: 0, count: drop) + key.dropFirst(drop)
    }

    /// Starts phase 2 of the method: asks or shows the passkey when the method needs one.
    mutating func askForPasskey() -> [Action] {
        guard case .passkeyEntry(let initiatorInputs, let responderInputs) = session.method else { return [] }
        if role == .initiator ? initiatorInputs : responderInputs {
            session.awaitingPasskey = true
            return [.requestPasskey]
        }
        let passkey = configuration.fixedPasskey ?? newPasskey()
        session.passkey = passkey
        session.tk = Self.passkeyValue(passkey)
        return [.displayPasskey(passkey)]
    }
}
