import BLEProtocols
import BLETransport
import BLEWire
import Logging
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The Security Manager on the SMP fixed channel (CID 0x0006) of every link, LE encryption and bonds.
/// Core 5.4, Vol 3, Part H (SMP), Vol 4, Part E, 7.8.24–7.8.26 (encryption commands), Vol 3, Part C, 9.4 (bonding).
///
/// Host-wide it holds the pairing agent, pairing on demand, the repeated-attempts limiter, each link's Security
/// Manager timer and the identities found behind peers' resolvable private addresses; each link's part is its
/// ``LinkSecurityState``, which the manager changes in place. It runs one ``SMPPairing`` per pairing and decides what
/// the machine does not: whether the agent is asked to consent to a central's Pairing Request (a request the machine
/// would refuse is answered at once), PDUs held while the agent decides, out-of-sequence PDUs with nothing under way
/// (answered by a machine of the link's role that is not a pairing), encryption with a bond's key, the controller's
/// Long Term Key requests, and bonds written to the configured ``BondStore``. It talks back through a
/// ``SecurityPort``.
struct SecurityManager {
    /// The user's part in pairing.
    var agent: any PairingAgent = AutomaticPairingAgent()
    /// Whether GATT client procedures refused for security pair and run again.
    var pairsOnDemand = true
    /// The growing delay between failed pairings, per peer. Core 5.4, Vol 3, Part H, 2.3.6.
    var attempts = SMPAttemptLimiter<LEAddress>()
    /// The Security Manager timer of each link.
    private(set) var timers = TimerSet<LinkID>()
    /// The identity behind each resolvable private address seen in advertising reports (`nil`: no bond resolves it).
    var resolvedIdentities: [LEAddress: ResolvedIdentity] = [:]
    /// The host's clock: the monotonic readings given to ``attempts`` and the Security Manager timers.
    let clock: any TransportClock
    /// Pairing, encryption and bonding settings.
    let settings: SecurityConfiguration
    let logger: Logger

    init(settings: SecurityConfiguration, logger: Logger, clock: any TransportClock = WallClock()) {
        self.settings = settings
        self.logger = logger
        self.clock = clock
        self.timers = TimerSet<LinkID>(clock: clock)
    }

    /// A reading of the monotonic clock: the time since the manager was created.
    var now: Duration { clock.now }

    // MARK: Pairing on request

    /// The link's security when it already is what a caller of ``HCIHost/pair(_:mitm:force:)`` asks for (`nil`: the
    /// caller waits for a pairing or an encryption). Throws when the Security Manager timed out on the link.
    func secured(_ link: Link, mitm: Bool, force: Bool) throws(SecurityError) -> LinkSecurity? {
        if case .timedOut = link.security.phase {
            throw SecurityError(.timedOut, "the Security Manager timed out on this link: pairing needs a new link")
        }
        let wantsMITM = mitm || settings.mitm
        if !force, let level = link.security.current.level, !wantsMITM || level.authenticated { return link.security.current }
        return nil
    }

    /// A caller waits for the link to be secured: unless a pairing or an encryption is under way, the central
    /// encrypts with the bond's key, or this side pairs (the initiator's Pairing Request, the responder's Security
    /// Request).
    mutating func pair(on link: inout Link, mitm: Bool, force: Bool, waiter: SecurityWaiter, port: inout some SecurityPort) {
        let busy = link.security.isBusy
        link.security.waiters.append(waiter)
        guard !busy else { return }
        let connection = link.connection
        let wantsMITM = mitm || settings.mitm
        if connection.role == .central, !force, let bond = bond(with: connection.peer, local: port.localIdentity),
           let key = bond.peerKey, !wantsMITM || bond.security.authenticated {
            link.security.encryption = EncryptionUnderWay(level: bond.security, fromBond: true)
            port.submit(.encryptWithBond(HCILEEnableEncryption(handle: connection.handle, randomNumber: key.rand,
                                                               encryptedDiversifier: key.ediv,
                                                               longTermKey: SMPCrypto.wire(key.longTermKey))),
                        on: connection)
        } else {
            startPairing(on: &link, mitm: wantsMITM, local: port.localIdentity)
            let actions = link.security.phase.withPairing { $0.machine.start() } ?? []
            perform(actions, on: &link, port: &port)
        }
    }

    /// The controller refused LE Enable Encryption with a bond's key: no Encryption Change will come; the callers are
    /// told.
    mutating func bondEncryptionRefused(_ status: HCIStatus, on link: inout Link, port: inout some SecurityPort) {
        link.security.encryption = nil
        notifyWaiters(on: &link, .failure(SecurityError(.encryptionFailed(status),
                                                        "encrypting the link with \(link.connection.peer) failed: LE Enable Encryption: \(status)")),
                      port: &port)
    }

    // MARK: The SMP channel

    /// A PDU from the link's SMP channel.
    mutating func receive(_ payload: [UInt8], on link: inout Link, port: inout some SecurityPort) {
        // An empty frame carries no command to answer: it is dropped, like empty frames on the other fixed channels.
        guard let first = payload.first else { return }
        let code = SMPCode(rawValue: first)
        let connection = link.connection
        // A reserved code is ignored, whatever is under way. Core 5.4, Vol 3, Part H, 3.3.
        guard !code.isReserved else {
            logger.debug("ignoring an SMP PDU with the reserved code 0x\([first].hexString()) on \(connection.link)")
            return
        }
        switch link.security.phase {
        case .timedOut:
            // After the timeout nothing more is accepted on this link. Core 5.4, Vol 3, Part H, 3.4.
            return
        case .awaitingConsent(var consent):
            link.security.phase = .idle  // the backlog leaves the enum, so the append does not copy it
            if consent.backlog.count < 8 { consent.backlog.append(payload) }
            link.security.phase = .awaitingConsent(consent)
            return
        case .pairing:
            break
        case .idle:
            switch (connection.role, code) {
            case (_, SMPCode.pairingFailed):
                return  // nothing under way to fail
            case (.central, SMPCode.securityRequest):
                answerSecurityRequest(payload, on: &link, port: &port)
                return
            case (.peripheral, SMPCode.pairingRequest) where attempts.mayPair(limiterKey(link), now: now)
                    && pairingRequestNegotiates(payload, on: link, local: port.localIdentity):
                // A new pairing from the central: the agent consents first (the reader does not wait for it). A
                // request the machine refuses at once (malformed, reserved values, a key too short, requirements
                // this side cannot meet), or one within the repeated-attempts delay, is answered by the machine now.
                link.security.phase = .awaitingConsent(AwaitingConsent(backlog: [payload]))
                // The Security Manager timer runs from the reception of the Pairing Request, the agent's time
                // included. Core 5.4, Vol 3, Part H, 3.4.
                startTimer(settings.timeout, on: connection, port: port)
                port.ask(agent, .consent, on: connection)
                return
            case (.peripheral, SMPCode.pairingRequest):
                guard startPairing(on: &link, local: port.localIdentity) else { return }
            default:
                // Out of sequence, unknown or malformed with nothing under way: a machine of the link's role answers
                // as the specification says (Unspecified Reason, Command Not Supported, Invalid Parameters). It is
                // not a pairing: the link's state, the events and the repeated-attempts count stay as they were.
                guard var stray = makePairing(on: link, local: port.localIdentity) else { return }
                for case .send(let pdu) in stray.receive(payload) { port.send(pdu, on: connection) }
                return
            }
        }
        feed(payload, on: &link, port: &port)
    }

    /// Whether a machine of this side would go on with the central's Pairing Request (answer it with a Pairing
    /// Response) rather than refuse it at once with Pairing Failed. Only such a request is put to the pairing agent:
    /// the user is not asked to consent to a pairing that cannot happen. Core 5.4, Vol 3, Part H, 3.5.1.
    private func pairingRequestNegotiates(_ payload: [UInt8], on link: Link, local: LEAddress?) -> Bool {
        guard var trial = makePairing(on: link, local: local) else { return false }
        return !trial.receive(payload).contains { if case .fail = $0 { true } else { false } }
    }

    /// Feeds a PDU to the link's pairing machine.
    private mutating func feed(_ payload: [UInt8], on link: inout Link, port: inout some SecurityPort) {
        guard let actions = link.security.phase.withPairing({ $0.machine.receive(payload) }) else { return }
        perform(actions, on: &link, port: &port)
    }

    /// Central: a peripheral's Security Request. Core 5.4, Vol 3, Part H, 2.4.6: encrypt with the bond when it is
    /// strong enough, else pair; a central that does not answer them refuses with Pairing Not Supported.
    private mutating func answerSecurityRequest(_ payload: [UInt8], on link: inout Link, port: inout some SecurityPort) {
        let connection = link.connection
        guard case .securityRequest(let auth)? = try? SMPPDU(bytes: payload) else {
            port.send(.pairingFailed(.invalidParameters), on: connection)
            return
        }
        guard settings.answersSecurityRequests else {
            port.send(.pairingFailed(.pairingNotSupported), on: connection)
            return
        }
        let mitm = auth.contains(.mitm)
        if let level = link.security.current.level, !mitm || level.authenticated { return }
        guard link.security.encryption == nil else { return }
        if let bond = bond(with: connection.peer, local: port.localIdentity), let key = bond.peerKey,
           !mitm || bond.security.authenticated {
            link.security.encryption = EncryptionUnderWay(level: bond.security, fromBond: true)
            port.submit(.enableEncryption(HCILEEnableEncryption(handle: connection.handle, randomNumber: key.rand,
                                                                encryptedDiversifier: key.ediv,
                                                                longTermKey: SMPCrypto.wire(key.longTermKey))),
                        on: connection)
            return
        }
        guard startPairing(on: &link, mitm: mitm, local: port.localIdentity) else { return }
        feed(payload, on: &link, port: &port)
    }

    /// The pairing agent answered.
    mutating func answered(_ answer: PairingAnswer, on link: inout Link, port: inout some SecurityPort) {
        let actions: [SMPPairing.Action]?
        switch answer {
        case .consent(let accepted):
            consent(accepted, on: &link, port: &port)
            return
        case .passkey(let passkey): actions = link.security.phase.withPairing { $0.machine.passkeyEntered(passkey) }
        case .number(let confirmed): actions = link.security.phase.withPairing { $0.machine.numericComparisonConfirmed(confirmed) }
        case .justWorks(let confirmed): actions = link.security.phase.withPairing { $0.machine.justWorksConfirmed(confirmed) }
        }
        perform(actions ?? [], on: &link, port: &port)
    }

    /// The agent answered whether to accept the central's Pairing Request.
    private mutating func consent(_ accepted: Bool, on link: inout Link, port: inout some SecurityPort) {
        guard case .awaitingConsent(let consent) = link.security.phase else { return }
        let connection = link.connection
        guard accepted, startPairing(on: &link, local: port.localIdentity) else {
            link.security.phase = .idle
            timers.cancel(connection.link)
            let reason: SMPPairingFailedReason = accepted ? .unspecifiedReason : .pairingNotSupported
            port.send(.pairingFailed(reason), on: connection)
            port.publish(.pairingFailed(connection, .sent(reason)), about: connection)
            // Callers of pair() waiting since the request came are told too.
            notifyWaiters(on: &link, .failure(SecurityError(.pairingFailed(.sent(reason)), "pairing with \(connection.peer) failed: \(reason)")),
                          port: &port)
            return
        }
        timers.cancel(connection.link)
        // The held PDUs go to the new pairing in order (nothing can overtake them: nothing arrives meanwhile); once it
        // ended, the rest find no pairing to take them.
        for payload in consent.backlog { feed(payload, on: &link, port: &port) }
    }

    // MARK: The Security Manager timer

    /// Whether `firing` is the link's timer still set; if so, it is done.
    mutating func expire(_ firing: TimerSet<LinkID>.Firing) -> Bool { timers.expire(firing) }

    /// The link's Security Manager timer ran out (``expire(_:)`` said it was still set).
    mutating func timerFired(on link: inout Link, port: inout some SecurityPort) {
        if case .awaitingConsent = link.security.phase {
            // The agent did not answer in time: the pairing failed, and a late answer finds no request to start.
            pairingFailed(.timeout, on: &link, port: &port)
            return
        }
        guard let actions = link.security.phase.withPairing({ $0.machine.timerFired() }) else { return }
        perform(actions, on: &link, port: &port)
    }

    /// (Re)starts the link's Security Manager timer.
    private mutating func startTimer(_ duration: Duration, on connection: HostConnection, port: some SecurityPort) {
        timers.start(connection.link, after: duration, handler: port.timerHandler(for: connection))
    }

    // MARK: The pairing's actions

    /// Carries out a pairing's actions, in order.
    private mutating func perform(_ actions: [SMPPairing.Action], on link: inout Link, port: inout some SecurityPort) {
        let connection = link.connection
        for action in actions {
            switch action {
            case .send(let pdu):
                port.send(pdu, on: connection)
            case .startTimer(let duration):
                startTimer(duration, on: connection, port: port)
            case .cancelTimer:
                timers.cancel(connection.link)
            case .displayPasskey(let passkey):
                port.publish(.passkeyDisplayed(connection, passkey), about: connection)
                port.ask(agent, .display(passkey), on: connection)
            case .requestPasskey:
                port.ask(agent, .passkey, on: connection)
            case .confirmNumber(let number):
                port.ask(agent, .number(number), on: connection)
            case .confirmJustWorks:
                port.ask(agent, .justWorks, on: connection)
            case .startEncryption(let key, let ediv, let rand):
                link.security.encryption = EncryptionUnderWay(level: link.security.phase.pairing?.machine.securityLevel, fromBond: false)
                port.submit(.enableEncryption(HCILEEnableEncryption(handle: connection.handle, randomNumber: rand, encryptedDiversifier: ediv,
                                                                    longTermKey: SMPCrypto.wire(key))),
                            on: connection)
            case .provideLongTermKey(let key):
                let requested = link.security.phase.withPairing { pairing -> Bool in
                    defer { pairing.key = .produced(key) }
                    return pairing.key == .requested
                }
                if requested == true {
                    replyLongTermKey(key, level: link.security.phase.pairing?.machine.securityLevel, fromBond: false, on: &link, port: &port)
                }
            case .complete(let result):
                pairingSucceeded(result, on: &link, port: &port)
            case .fail(let failure):
                let requested = link.security.phase.pairing?.key == .requested
                pairingFailed(failure, on: &link, port: &port)
                // An LTK request held for this pairing's key will not get one: refuse it now, or the controller's
                // encryption procedure stays open until the link drops. Core 5.4, Vol 3, Part H, 2.4.4.
                if requested { port.submit(.longTermKeyNegativeReply, on: connection) }
            }
        }
    }

    private mutating func pairingSucceeded(_ result: SMPPairingResult, on link: inout Link, port: inout some SecurityPort) {
        let connection = link.connection
        attempts.recordSuccess(limiterKey(link))
        let identity = result.peer.identityAddress ?? link.security.current.peerIdentity ?? connection.peer
        var bonded = false
        if result.bonding, settings.bonding, !result.debugKey, let local = port.localIdentity {
            let peerKey: BondKey?
            let localKey: BondKey?
            if let key = result.longTermKey {
                peerKey = BondKey(longTermKey: key)
                localKey = BondKey(longTermKey: key)
            } else {
                peerKey = result.peer.longTermKey.map { BondKey(longTermKey: $0, ediv: result.peer.ediv, rand: result.peer.rand) }
                localKey = result.local.longTermKey.map { BondKey(longTermKey: $0, ediv: result.local.ediv, rand: result.local.rand) }
            }
            // The bond keeps the address the peer paired through beside its identity; an all-zero IRK is no IRK
            // (Bond drops it).
            let bond = Bond(local: local, peer: identity, pairedThrough: connection.peer, peerKey: peerKey, localKey: localKey,
                            peerIdentityResolvingKey: result.peer.identityResolvingKey, peerSignatureKey: result.peer.signatureKey,
                            security: result.security, created: Self.secondsSince1970())
            do {
                // The new bond replaces any other this link's address would find: one stored under the address
                // itself, or one under another identity that paired through it.
                let store = settings.bondStore
                var stale: Set<LEAddress> = identity != connection.peer ? [connection.peer] : []
                for old in storedBonds(local: local) where old.peer != identity && old.pairedThrough == connection.peer { stale.insert(old.peer) }
                for peer in stale { try store.removeBonds(peer: peer, local: local) }
                try store.save(bond)
                resolvedIdentities = [:]
                bonded = true
            } catch {
                logger.warning("bond store: could not store the bond with \(identity): \(error)")
            }
        }
        link.security.phase = .idle
        link.security.current.isBonded = bonded || link.security.current.isBonded
        link.security.current.peerIdentity = identity
        link.syncL2CAPSecurity()
        port.publish(.pairingCompleted(connection, PairingOutcome(method: result.method, security: result.security, bonded: bonded,
                                                                  peerIdentity: identity)),
                     about: connection)
        port.publish(.securityChanged(connection, link.security.current), about: connection)
        notifyWaiters(on: &link, .success(link.security.current), port: &port)
    }

    private mutating func pairingFailed(_ failure: SMPPairingFailure, on link: inout Link, port: inout some SecurityPort) {
        let connection = link.connection
        attempts.recordFailure(limiterKey(link), now: now)
        link.security.phase = failure == .timeout ? .timedOut : .idle
        port.publish(.pairingFailed(connection, failure), about: connection)
        notifyWaiters(on: &link, .failure(SecurityError(.pairingFailed(failure), "pairing with \(connection.peer) failed: \(failure.reasonText)")),
                      port: &port)
    }

    /// Ends the waits of the link's callers with `outcome`.
    private func notifyWaiters(on link: inout Link, _ outcome: Result<LinkSecurity, SecurityError>, port: inout some SecurityPort) {
        let waiters = link.security.waiters
        link.security.waiters = []
        port.notify(waiters, outcome)
    }

    // MARK: Encryption

    /// Peripheral: the controller asks for the key the central encrypts with. The pairing's key, or the bond's when
    /// EDIV and Rand match; otherwise (no pairing finished, no bond, an all-zero key) a negative reply.
    /// Core 5.4, Vol 3, Part H, 2.4.4.
    mutating func longTermKeyRequested(ediv: UInt16, rand: UInt64, on link: inout Link, port: inout some SecurityPort) {
        let connection = link.connection
        // A pairing past phase 1 gives its key (now, or when it has produced it). Before that (only a Security
        // Request sent) the central may answer with a bond's key.
        if let pairing = link.security.phase.pairing, pairing.machine.method != nil {
            if case .produced(let key) = pairing.key {
                replyLongTermKey(key, level: pairing.machine.securityLevel, fromBond: false, on: &link, port: &port)
            } else {
                link.security.phase.withPairing { $0.key = .requested }
            }
            return
        }
        if let bond = bond(with: connection.peer, local: port.localIdentity), let key = bond.localKey, key.ediv == ediv, key.rand == rand {
            replyLongTermKey(key.longTermKey, level: bond.security, fromBond: true, on: &link, port: &port)
        } else {
            port.submit(.longTermKeyNegativeReply, on: connection)
        }
    }

    private func replyLongTermKey(_ key: [UInt8], level: SMPSecurityLevel?, fromBond: Bool, on link: inout Link,
                                  port: inout some SecurityPort) {
        guard key.count == 16, key.contains(where: { $0 != 0 }) else {
            port.submit(.longTermKeyNegativeReply, on: link.connection)
            return
        }
        link.security.encryption = EncryptionUnderWay(level: level, fromBond: fromBond)
        port.submit(.longTermKeyReply(HCILELongTermKeyRequestReply(handle: link.connection.handle, longTermKey: SMPCrypto.wire(key))),
                    on: link.connection)
    }

    /// The controller refused a command that starts the link's encryption: no Encryption Change will come, so the
    /// encryption under way ends here as failed (its pairing fails, its callers are told), or the link would stay
    /// busy for good.
    mutating func encryptionRefused(_ status: HCIStatus, on link: inout Link, port: inout some SecurityPort) {
        guard link.security.encryption != nil else { return }
        let status = status == .success ? .unspecifiedError : status
        port.publish(.encryptionChanged(handle: link.connection.handle, status: status, enabled: false), about: link.connection)
        encryptionChanged(status: status, enabled: false, on: &link, port: &port)
    }

    /// Encryption Change or Encryption Key Refresh Complete.
    mutating func encryptionChanged(status: HCIStatus, enabled: Bool, on link: inout Link, port: inout some SecurityPort) {
        let connection = link.connection
        let success = status == .success && enabled
        let encryption = link.security.encryption
        let fromBond = encryption?.fromBond ?? false
        let before = link.security.current
        if success {
            // Encryption nobody here started (a test driving HCI itself) is counted as unauthenticated.
            link.security.current.level = encryption?.level ?? link.security.current.level
                ?? SMPSecurityLevel(secureConnections: false, authenticated: false, keySize: 16)
        } else if status == .success {
            link.security.current.level = nil
        }
        link.security.encryption = nil
        if fromBond, success, let pairing = link.security.phase.pairing, pairing.machine.method == nil {
            // A Security Request (or Pairing Request) this side sent was answered with the bond's key: no pairing.
            link.security.phase = .idle
            timers.cancel(connection.link)
        }
        let actions = link.security.phase.withPairing { pairing in
            pairing.machine.encryptionChanged(success: success, keySize: pairing.machine.keySize ?? 16)
        } ?? []
        // Encryption with a bond (or nobody's pairing) ends the callers' waits here; a pairing's ends at its last key
        // (or here, when this ended it).
        let resolves = fromBond || link.security.phase.pairing?.machine.isFinished != false
        link.syncL2CAPSecurity()
        if success { port.publish(.encrypted(connection, link.security.current, usingBond: fromBond), about: connection) }
        // Every change is published, encryption switched off included: the GATT server's view of the link follows
        // it, or it would serve protected attributes on an unencrypted link.
        if success || link.security.current != before { port.publish(.securityChanged(connection, link.security.current), about: connection) }
        if resolves {
            notifyWaiters(on: &link, success ? .success(link.security.current)
                                             : .failure(SecurityError(.encryptionFailed(status), "encrypting the link with \(connection.peer) failed: \(status)")),
                          port: &port)
        }
        perform(actions, on: &link, port: &port)
    }

    // MARK: Bonds

    /// The bonds were removed for the link's peer: it counts as unbonded from now on (its current encryption stays).
    func bondRemoved(on link: inout Link, port: inout some SecurityPort) {
        link.security.current.isBonded = false
        link.syncL2CAPSecurity()
        port.publish(.securityChanged(link.connection, link.security.current), about: link.connection)
    }

    /// The bond with the device whose address on a link is `peer`, among `local`'s bonds (see ``Bond/find(_:among:)``).
    func bond(with peer: LEAddress, local: LEAddress?) -> Bond? {
        Bond.find(peer, among: storedBonds(local: local))
    }

    /// The bonds of this side's identity `local` in the bond store (none when it fails, which is logged).
    func storedBonds(local: LEAddress?) -> [Bond] {
        guard let local else { return [] }
        do {
            return try settings.bondStore.bonds(local: local)
        } catch {
            logger.warning("bond store: \(error)")
            return []
        }
    }

    /// This side's IRK, created and stored on first use.
    func localIdentityResolvingKey(local: LEAddress?) -> [UInt8]? {
        guard let local else { return nil }
        let store = settings.bondStore
        if let key = try? store.identityResolvingKey(local: local), ResolvablePrivateAddress.isIdentityResolvingKey(key) { return key }
        let key = Self.secureRandom(16)
        do {
            try store.setIdentityResolvingKey(key, local: local)
        } catch {
            logger.warning("bond store: \(error)")
            return nil
        }
        return key
    }

    /// The link went down: its timer stops and its waiters fail.
    mutating func close(_ link: Link) {
        timers.cancel(link.connection.link)
        for waiter in link.security.waiters {
            waiter.resume(throwing: SecurityError(.disconnected, "the link with \(link.connection.peer) went down"))
        }
    }

    // MARK: Pairing machines

    /// The peer as the attempt limiter knows it: its identity when known.
    private func limiterKey(_ link: Link) -> LEAddress { link.security.current.peerIdentity ?? link.connection.peer }

    /// A new pairing machine for the link, stored on it (replacing a finished one).
    @discardableResult
    private func startPairing(on link: inout Link, mitm: Bool = false, local: LEAddress?) -> Bool {
        guard let pairing = makePairing(on: link, mitm: mitm, local: local) else { return false }
        link.security.phase = .pairing(PairingUnderWay(machine: pairing))
        return true
    }

    /// A pairing machine for the link's role with this side's settings (not stored anywhere).
    private func makePairing(on link: Link, mitm: Bool = false, local identity: LEAddress?) -> SMPPairing? {
        // The addresses on the link feed the pairing functions (c1, f5, f6); the identity address is what is
        // distributed (Identity Information, Identity Address Information). Core 5.4, Vol 3, Part H, 2.2.3, 2.2.7, 2.2.8,
        // 3.6.4 and 3.6.5.
        guard let identity else { return nil }
        let connection = link.connection
        let local = connection.localAddress
        var configuration = SMPPairing.Configuration(
            ioCapability: settings.ioCapability, bonding: settings.bonding, mitm: settings.mitm || mitm,
            secureConnections: settings.secureConnections, secureConnectionsOnly: settings.secureConnectionsOnly,
            minimumKeySize: settings.minimumKeySize, timeout: settings.timeout, fixedPasskey: settings.fixedPasskey,
            confirmsJustWorks: settings.confirmsJustWorks)
        if settings.bonding, let distributed = settings.distributedIdentity {
            configuration.identity = distributed
        } else if settings.bonding, let irk = localIdentityResolvingKey(local: identity) {
            configuration.identity = SMPIdentity(identityResolvingKey: irk, address: identity)
        }
        if !attempts.mayPair(limiterKey(link), now: now) { configuration.refusal = .repeatedAttempts }
        guard let keyPair = Self.newKeyPair() else { return nil }
        let central = connection.role == .central
        return SMPPairing(role: central ? .initiator : .responder, configuration: configuration,
                          initiatorAddress: central ? local : connection.peer, responderAddress: central ? connection.peer : local,
                          keyPair: keyPair, random: { Self.secureRandom($0) })
    }

    /// A fresh P-256 key pair (a private key from 32 random octets; retried in the rare case they exceed the order).
    private static func newKeyPair() -> SMPKeyPair? {
        for _ in 0..<8 {
            if let pair = try? SMPKeyPair(privateKey: secureRandom(32)) { return pair }
        }
        return nil
    }

    /// `count` octets from the system's cryptographically secure generator.
    static func secureRandom(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    /// The wall clock, in seconds since 1970 (when a bond was made).
    private static func secondsSince1970() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}

