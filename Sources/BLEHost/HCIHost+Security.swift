import BLEProtocols
import BLEWire
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The Security Manager on the SMP fixed channel (CID 0x0006) of every link, LE encryption, and bonds.
/// Core 5.4, Vol 3, Part H (SMP), Vol 4, Part E, 7.8.24–7.8.26 (encryption commands), Vol 3, Part C, 9.4 (bonding).
///
/// One ``SMPPairing`` per pairing, fed from the reader; its actions are carried out here: PDUs queued without
/// waiting, the Security Manager timer as a task, the pairing agent asked from a task of its own (the reader never
/// waits for the user), LE Enable Encryption (central) or the LTK request's reply (peripheral), bonds written to the
/// configured ``BondStore``.
extension HCIHost {
    /// Sets the agent that answers for the user during pairing (consent, passkeys, numeric comparison).
    public func setPairingAgent(_ agent: any PairingAgent) { securityManager.agent = agent }

    /// Turns pairing on demand on or off: whether a GATT client procedure the server refuses for security pairs (or
    /// encrypts with the bond) and runs again (see ``GATTEngine/run(_:on:)``). On by default.
    public func setPairsOnDemand(_ on: Bool) { securityManager.pairsOnDemand = on }

    /// The bond store of this host.
    public nonisolated var bondStore: any BondStore { configuration.security.bondStore }

    /// The security of `connection`'s link; `nil` when it is down.
    public func security(of connection: HostConnection) -> LinkSecurity? {
        guard let link = links[connection.handle], link.connection.link == connection.link else { return nil }
        return link.security.current
    }

    /// Secures `connection`'s link and returns its security.
    ///
    /// As central: a link encrypted well enough is returned as it is; with a bond the link is encrypted with the
    /// stored key (no pairing); otherwise this side pairs (Pairing Request). As peripheral: sends a Security Request
    /// and waits for the central to encrypt or pair. `mitm` asks for an authenticated key (a Just Works bond or link
    /// does not do); `force` pairs again even when encrypted or bonded.
    ///
    /// Throws ``SecurityError``: the pairing failed (with the reason sent or received), the bond's key was refused by
    /// the peer (it lost the bond: 0x06 PIN or Key Missing; the link stays unencrypted), the link went down, or the
    /// Security Manager timed out on this link before.
    public func pair(_ connection: HostConnection, mitm: Bool = false, force: Bool = false) async throws -> LinkSecurity {
        guard let link = links[connection.handle], link.connection.link == connection.link else {
            throw SecurityError(.disconnected, "no connection with handle \(connection.handle)")
        }
        guard !link.security.timedOut else {
            throw SecurityError(.timedOut, "the Security Manager timed out on this link: pairing needs a new link")
        }
        let wantsMITM = mitm || configuration.security.mitm
        if !force, let level = link.security.current.level, !wantsMITM || level.authenticated { return link.security.current }
        // The caller waits from before the procedure starts: its outcome cannot come first.
        return try await withCheckedThrowingContinuation { continuation in
            links[connection.handle]?.security.waiters.append(continuation)
            guard !link.security.isBusy else { return }
            if connection.role == .central, !force, let bond = bond(with: connection.peer), let key = bond.peerKey,
               !wantsMITM || bond.security.authenticated {
                encrypt(connection, with: key, security: bond.security)
            } else {
                startPairing(on: connection, mitm: wantsMITM)
                performSMP(startedPairingActions(on: connection), on: connection)
            }
        }
    }

    /// Ends the waits of a link's callers with `outcome`.
    func resolveWaiters(_ outcome: Result<LinkSecurity, SecurityError>, handle: ConnectionHandle) {
        guard var link = links[handle] else { return }
        let waiters = link.security.waiters
        link.security.waiters = []
        links[handle] = link
        for waiter in waiters { waiter.resume(with: outcome.mapError { $0 }) }
    }

    /// Starts the link's new pairing machine: the initiator's Pairing Request, or the responder's Security Request.
    private func startedPairingActions(on connection: HostConnection) -> [SMPPairing.Action] {
        guard var link = links[connection.handle], var pairing = link.security.pairing else { return [] }
        let actions = pairing.start()
        link.security.pairing = pairing
        links[connection.handle] = link
        return actions
    }

    /// Central: starts encryption with a bond's key (LE Enable Encryption); the outcome arrives as Encryption Change,
    /// or, when the controller refuses the command, ends here.
    private func encrypt(_ connection: HostConnection, with key: BondKey, security: SMPSecurityLevel) {
        links[connection.handle]?.security.encrypting = true
        links[connection.handle]?.security.pending = security
        links[connection.handle]?.security.pendingFromBond = true
        submit(HCILEEnableEncryption(handle: connection.handle, randomNumber: key.rand, encryptedDiversifier: key.ediv,
                                     longTermKey: SMPCrypto.wire(key.longTermKey))) { [self] outcome in
            let status: HCIStatus
            switch outcome {
            case .complete, .pending: return
            case .failed(let refused): status = refused
            case .timedOut, .cancelled: status = .unspecifiedError
            }
            guard links[connection.handle]?.connection.link == connection.link else { return }
            links[connection.handle]?.security.encrypting = false
            links[connection.handle]?.security.pending = nil
            resolveWaiters(.failure(SecurityError(.encryptionFailed(status),
                                                  "encrypting the link with \(connection.peer) failed: LE Enable Encryption: \(status)")),
                           handle: connection.handle)
        }
    }

    // MARK: Bonds

    /// This side's identity address (bonds belong to it).
    var localIdentity: LEAddress? { ownAddress }

    /// The bond with the device whose address on a link is `peer`: the bond whose identity address it is, else the
    /// one whose device paired through it (a device may distribute a public identity address and use a static random
    /// one on the air), else the one whose IRK resolves it (a resolvable private address; all-zero IRKs resolve
    /// nothing). See ``Bond/find(_:among:)``.
    func bond(with peer: LEAddress) -> Bond? {
        Bond.find(peer, among: storedBonds())
    }

    /// The bond of `connection`'s peer, found as ``bond(with:)`` finds it; `nil` without one (or when the link is down).
    public func bond(of connection: HostConnection) -> Bond? {
        guard let link = links[connection.handle], link.connection.link == connection.link else { return nil }
        return bond(with: connection.peer)
    }

    /// The bonds of this side's identity in the bond store (none when it fails, which is logged).
    func storedBonds() -> [Bond] {
        guard let local = localIdentity else { return [] }
        do {
            return try configuration.security.bondStore.bonds(local: local)
        } catch {
            logger.warning("bond store: \(error)")
            return []
        }
    }

    /// Removes the bonds with `peer` (its identity address) from the bond store; links with it count as unbonded
    /// from now on (their current encryption stays). Returns how many bonds went.
    @discardableResult
    public func removeBond(with peer: LEAddress) throws(BondStoreError) -> Int {
        let removed = try configuration.security.bondStore.removeBonds(peer: peer, local: localIdentity)
        securityManager.resolvedIdentities = [:]
        for (handle, link) in links where link.connection.peer == peer || link.security.current.peerIdentity == peer {
            links[handle]?.security.current.isBonded = false
            syncL2CAPSecurity(handle)
            if let security = links[handle]?.security.current { publish(.securityChanged(link.connection, security)) }
        }
        return removed
    }

    /// This side's IRK, created and stored on first use.
    func localIdentityResolvingKey() -> [UInt8]? {
        guard let local = localIdentity else { return nil }
        let store = configuration.security.bondStore
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

    /// `count` octets from the system's cryptographically secure generator.
    static func secureRandom(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    /// The peer as the attempt limiter knows it: its identity when known.
    private func limiterKey(_ link: Link) -> LEAddress { link.security.current.peerIdentity ?? link.connection.peer }

    /// A reading of the monotonic clock: the time since the host was created.
    var now: Duration { ContinuousClock.now - securityManager.clockOrigin }

    // MARK: Starting pairings

    /// A new pairing machine for `connection`, stored on its link (replacing a finished one).
    @discardableResult
    private func startPairing(on connection: HostConnection, mitm: Bool = false) -> Bool {
        guard var link = links[connection.handle], let pairing = makePairing(on: connection, mitm: mitm) else { return false }
        link.security.pairing = pairing
        link.security.responderKey = nil
        link.security.keyRequested = false
        links[connection.handle] = link
        return true
    }

    /// A pairing machine for `connection`'s role with this host's settings (not stored anywhere).
    private func makePairing(on connection: HostConnection, mitm: Bool = false) -> SMPPairing? {
        // The addresses on the link feed the pairing functions (c1, f5, f6); the identity address is what is
        // distributed (Identity Information, Identity Address Information). Core 5.4, Vol 3, Part H, 2.2.3, 2.2.7, 2.2.8,
        // 3.6.4 and 3.6.5.
        guard let link = links[connection.handle], let identity = localIdentity else { return nil }
        let local = link.connection.localAddress
        let settings = configuration.security
        var configuration = SMPPairing.Configuration(
            ioCapability: settings.ioCapability, bonding: settings.bonding, mitm: settings.mitm || mitm,
            secureConnections: settings.secureConnections, secureConnectionsOnly: settings.secureConnectionsOnly,
            minimumKeySize: settings.minimumKeySize, timeout: settings.timeout, fixedPasskey: settings.fixedPasskey,
            confirmsJustWorks: settings.confirmsJustWorks)
        if settings.bonding, let distributed = settings.distributedIdentity {
            configuration.identity = distributed
        } else if settings.bonding, let irk = localIdentityResolvingKey() {
            configuration.identity = SMPIdentity(identityResolvingKey: irk, address: identity)
        }
        if !securityManager.attempts.mayPair(limiterKey(link), now: now) { configuration.refusal = .repeatedAttempts }
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

    // MARK: The SMP channel

    /// A PDU from a link's SMP channel.
    func receiveSMP(_ payload: [UInt8], handle: ConnectionHandle) {
        // An empty frame carries no command to answer: it is dropped, like empty frames on the other fixed channels.
        guard let first = payload.first, var link = links[handle] else { return }
        // A reserved code is ignored, whatever is under way. Core 5.4, Vol 3, Part H, 3.3.
        guard !SMPCode(rawValue: first).isReserved else {
            logger.debug("ignoring an SMP PDU with the reserved code 0x\([first].hexString()) on \(link.connection.link)")
            return
        }
        let connection = link.connection
        // After the timeout nothing more is accepted on this link. Core 5.4, Vol 3, Part H, 3.4.
        guard !link.security.timedOut else { return }
        if var backlog = link.security.backlog {
            if backlog.count < 8 { backlog.append(payload) }
            link.security.backlog = backlog
            links[handle] = link
            return
        }
        if link.security.pairing?.isFinished != false {
            let code = payload.first.map { SMPCode(rawValue: $0) }
            switch (connection.role, code) {
            case (_, SMPCode.pairingFailed?):
                return  // nothing under way to fail
            case (.central, SMPCode.securityRequest?):
                answerSecurityRequest(payload, on: connection)
                return
            case (.peripheral, SMPCode.pairingRequest?) where securityManager.attempts.mayPair(limiterKey(link), now: now)
                    && pairingRequestNegotiates(payload, on: connection):
                // A new pairing from the central: the agent consents first (the reader does not wait for it). A
                // request the machine refuses at once (malformed, reserved values, a key too short, requirements
                // this side cannot meet), or one within the repeated-attempts delay, is answered by the machine now.
                link.security.backlog = [payload]
                links[handle] = link
                // The Security Manager timer runs from the reception of the Pairing Request, the agent's time
                // included. Core 5.4, Vol 3, Part H, 3.4.
                startSMPTimer(configuration.security.timeout, on: connection)
                let agent = securityManager.agent
                let peer = connection.peer
                Task { [weak self] in
                    let accepted = await agent.acceptPairing(from: peer)
                    await self?.pairingConsent(accepted, on: connection)
                }
                return
            case (.peripheral, SMPCode.pairingRequest?):
                guard startPairing(on: connection) else { return }
            default:
                // Out of sequence, unknown or malformed with nothing under way: a machine of the link's role answers
                // as the specification says (Unspecified Reason, Command Not Supported, Invalid Parameters). It is
                // not a pairing: the link's state, the events and the repeated-attempts count stay as they were.
                guard var stray = makePairing(on: connection) else { return }
                for case .send(let pdu) in stray.receive(payload) {
                    enqueueL2CAP(pdu.encoded, channel: .smp, handle: handle)
                }
                return
            }
        }
        feedSMP(payload, on: connection)
    }

    /// Whether a machine of this side would go on with the central's Pairing Request (answer it with a Pairing
    /// Response) rather than refuse it at once with Pairing Failed. Only such a request is put to the pairing agent:
    /// the user is not asked to consent to a pairing that cannot happen. Core 5.4, Vol 3, Part H, 3.5.1.
    private func pairingRequestNegotiates(_ payload: [UInt8], on connection: HostConnection) -> Bool {
        guard var trial = makePairing(on: connection) else { return false }
        return !trial.receive(payload).contains { if case .fail = $0 { true } else { false } }
    }

    private func feedSMP(_ payload: [UInt8], on connection: HostConnection) {
        guard var link = links[connection.handle], link.connection.link == connection.link, var pairing = link.security.pairing else { return }
        let actions = pairing.receive(payload)
        link.security.pairing = pairing
        links[connection.handle] = link
        performSMP(actions, on: connection)
    }

    /// Central: a peripheral's Security Request. Core 5.4, Vol 3, Part H, 2.4.6: encrypt with the bond when it is
    /// strong enough, else pair; a central that does not answer them refuses with Pairing Not Supported.
    private func answerSecurityRequest(_ payload: [UInt8], on connection: HostConnection) {
        guard let link = links[connection.handle] else { return }
        guard case .securityRequest(let auth)? = try? SMPPDU(bytes: payload) else {
            enqueueL2CAP(SMPPDU.pairingFailed(.invalidParameters).encoded, channel: .smp, handle: connection.handle)
            return
        }
        guard configuration.security.answersSecurityRequests else {
            enqueueL2CAP(SMPPDU.pairingFailed(.pairingNotSupported).encoded, channel: .smp, handle: connection.handle)
            return
        }
        let mitm = auth.contains(.mitm)
        if let level = link.security.current.level, !mitm || level.authenticated { return }
        guard !link.security.encrypting else { return }
        if let bond = bond(with: connection.peer), let key = bond.peerKey, !mitm || bond.security.authenticated {
            links[connection.handle]?.security.encrypting = true
            links[connection.handle]?.security.pending = bond.security
            links[connection.handle]?.security.pendingFromBond = true
            submitDetached(HCILEEnableEncryption(handle: connection.handle, randomNumber: key.rand, encryptedDiversifier: key.ediv,
                                                       longTermKey: SMPCrypto.wire(key.longTermKey)), encrypting: connection.handle)
            return
        }
        guard startPairing(on: connection, mitm: mitm) else { return }
        feedSMP(payload, on: connection)
    }

    /// The agent answered whether to accept the central's Pairing Request.
    private func pairingConsent(_ accepted: Bool, on connection: HostConnection) {
        guard var link = links[connection.handle], link.connection.link == connection.link, link.security.backlog != nil else { return }
        guard accepted, startPairing(on: connection) else {
            link = links[connection.handle] ?? link
            link.security.backlog = nil
            links[connection.handle] = link
            securityManager.timers.cancel(connection.link)
            let reason: SMPPairingFailedReason = accepted ? .unspecifiedReason : .pairingNotSupported
            enqueueL2CAP(SMPPDU.pairingFailed(reason).encoded, channel: .smp, handle: connection.handle)
            guard links[connection.handle]?.connection.link == connection.link else { return }
            publish(.pairingFailed(connection, .sent(reason)))
            // Callers of pair() waiting since the request came are told too.
            resolveWaiters(.failure(SecurityError(.pairingFailed(.sent(reason)), "pairing with \(connection.peer) failed: \(reason)")),
                           handle: connection.handle)
            return
        }
        securityManager.timers.cancel(connection.link)
        // The held PDUs go to the machine in order; PDUs that arrive while they do join the backlog behind them (the
        // backlog stays in place until it is empty), so nothing overtakes.
        while let held = links[connection.handle], held.connection.link == connection.link, var backlog = held.security.backlog,
              !backlog.isEmpty {
            let payload = backlog.removeFirst()
            links[connection.handle]?.security.backlog = backlog
            feedSMP(payload, on: connection)
        }
        if links[connection.handle]?.connection.link == connection.link { links[connection.handle]?.security.backlog = nil }
    }

    /// The user answered (a passkey, a comparison).
    private func userAnswered(on connection: HostConnection, _ answer: (inout SMPPairing) -> [SMPPairing.Action]) {
        guard var link = links[connection.handle], link.connection.link == connection.link, var pairing = link.security.pairing else { return }
        let actions = answer(&pairing)
        link.security.pairing = pairing
        links[connection.handle] = link
        performSMP(actions, on: connection)
    }

    /// (Re)starts the link's Security Manager timer.
    private func startSMPTimer(_ duration: Duration, on connection: HostConnection) {
        securityManager.timers.start(connection.link, after: duration) { [weak self] firing in
            await self?.smpTimerFired(firing, on: connection)
        }
    }

    private func smpTimerFired(_ firing: TimerSet<LinkID>.Firing, on connection: HostConnection) {
        guard securityManager.timers.expire(firing) else { return }
        guard var link = links[connection.handle], link.connection.link == connection.link else { return }
        if link.security.backlog != nil {
            // The agent did not answer in time: the pairing failed, and a late answer finds no request to start.
            link.security.backlog = nil
            links[connection.handle] = link
            pairingFailed(.timeout, on: connection)
            return
        }
        guard var pairing = link.security.pairing else { return }
        let actions = pairing.timerFired()
        link.security.pairing = pairing
        links[connection.handle] = link
        performSMP(actions, on: connection)
    }

    /// Carries out a pairing's actions, in order, without waiting for anything but the transport.
    func performSMP(_ actions: [SMPPairing.Action], on connection: HostConnection) {
        let handle = connection.handle
        for action in actions {
            guard links[handle]?.connection.link == connection.link else { return }
            switch action {
            case .send(let pdu):
                enqueueL2CAP(pdu.encoded, channel: .smp, handle: handle)
            case .startTimer(let duration):
                startSMPTimer(duration, on: connection)
            case .cancelTimer:
                securityManager.timers.cancel(connection.link)
            case .displayPasskey(let passkey):
                publish(.passkeyDisplayed(connection, passkey))
                let agent = securityManager.agent
                Task { await agent.displayPasskey(passkey, for: connection.peer) }
            case .requestPasskey:
                let agent = securityManager.agent
                Task { [weak self] in
                    let passkey = await agent.enterPasskey(for: connection.peer)
                    await self?.userAnswered(on: connection) { $0.passkeyEntered(passkey) }
                }
            case .confirmNumber(let number):
                let agent = securityManager.agent
                Task { [weak self] in
                    let confirmed = await agent.confirmNumber(number, for: connection.peer)
                    await self?.userAnswered(on: connection) { $0.numericComparisonConfirmed(confirmed) }
                }
            case .confirmJustWorks:
                let agent = securityManager.agent
                Task { [weak self] in
                    let confirmed = await agent.confirmJustWorks(for: connection.peer)
                    await self?.userAnswered(on: connection) { $0.justWorksConfirmed(confirmed) }
                }
            case .startEncryption(let key, let ediv, let rand):
                let level = links[handle]?.security.pairing?.securityLevel
                links[handle]?.security.encrypting = true
                links[handle]?.security.pending = level
                links[handle]?.security.pendingFromBond = false
                submitDetached(HCILEEnableEncryption(handle: handle, randomNumber: rand, encryptedDiversifier: ediv,
                                                           longTermKey: SMPCrypto.wire(key)), encrypting: handle)
            case .provideLongTermKey(let key):
                links[handle]?.security.responderKey = key
                if links[handle]?.security.keyRequested == true {
                    links[handle]?.security.keyRequested = false
                    replyLongTermKey(key, handle: handle, level: links[handle]?.security.pairing?.securityLevel, fromBond: false)
                }
            case .complete(let result):
                pairingSucceeded(result, on: connection)
            case .fail(let failure):
                pairingFailed(failure, on: connection)
                // An LTK request held for this pairing's key will not get one: refuse it now, or the controller's
                // encryption procedure stays open until the link drops. Core 5.4, Vol 3, Part H, 2.4.4.
                if links[handle]?.security.keyRequested == true {
                    links[handle]?.security.keyRequested = false
                    submitDetached(HCILELongTermKeyRequestNegativeReply(handle: handle))
                }
            }
        }
    }

    private func pairingSucceeded(_ result: SMPPairingResult, on connection: HostConnection) {
        guard var link = links[connection.handle] else { return }
        securityManager.attempts.recordSuccess(limiterKey(link))
        let identity = result.peer.identityAddress ?? link.security.current.peerIdentity ?? connection.peer
        var bonded = false
        if result.bonding, configuration.security.bonding, !result.debugKey, let local = localIdentity {
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
                let store = configuration.security.bondStore
                var stale: Set<LEAddress> = identity != connection.peer ? [connection.peer] : []
                for old in storedBonds() where old.peer != identity && old.pairedThrough == connection.peer { stale.insert(old.peer) }
                for peer in stale { try store.removeBonds(peer: peer, local: local) }
                try store.save(bond)
                securityManager.resolvedIdentities = [:]
                bonded = true
            } catch {
                logger.warning("bond store: could not store the bond with \(identity): \(error)")
            }
        }
        link.security.current.isBonded = bonded || link.security.current.isBonded
        link.security.current.peerIdentity = identity
        links[connection.handle] = link
        syncL2CAPSecurity(connection.handle)
        publish(.pairingCompleted(connection, PairingOutcome(method: result.method, security: result.security, bonded: bonded,
                                                             peerIdentity: identity)))
        publish(.securityChanged(connection, link.security.current))
        resolveWaiters(.success(link.security.current), handle: connection.handle)
    }

    private func pairingFailed(_ failure: SMPPairingFailure, on connection: HostConnection) {
        guard var link = links[connection.handle] else { return }
        securityManager.attempts.recordFailure(limiterKey(link), now: now)
        if failure == .timeout { link.security.timedOut = true }
        link.security.responderKey = nil
        links[connection.handle] = link
        publish(.pairingFailed(connection, failure))
        resolveWaiters(.failure(SecurityError(.pairingFailed(failure), "pairing with \(connection.peer) failed: \(failure.reasonText)")),
                       handle: connection.handle)
    }

    /// Hands a link's security to its L2CAP manager, which checks listeners' requirements against it.
    func syncL2CAPSecurity(_ handle: ConnectionHandle) {
        guard let current = links[handle]?.security.current else { return }
        links[handle]?.l2cap.setLinkSecurity(L2CAPLinkSecurity(encrypted: current.isEncrypted, authenticated: current.isAuthenticated,
                                                               keySize: current.level?.keySize ?? 0, hasKey: current.isBonded))
    }

    /// A link went down: its timer stops and its waiters fail.
    func closeSecurity(_ link: Link) {
        securityManager.timers.cancel(link.connection.link)
        for waiter in link.security.waiters {
            waiter.resume(throwing: SecurityError(.disconnected, "the link with \(link.connection.peer) went down"))
        }
    }

    /// The wall clock, in seconds since 1970 (when a bond was made).
    private static func secondsSince1970() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}

extension SMPPairingFailure {
    /// The reason as users read it: "Confirm Value Failed (0x04)", "timed out".
    var reasonText: String {
        switch self {
        case .sent(let reason), .received(let reason): "\(reason)"
        case .timeout: "the Security Manager timed out"
        case .encryptionFailed: "the link could not be encrypted"
        }
    }
}
