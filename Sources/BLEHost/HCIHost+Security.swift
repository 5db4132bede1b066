import BLEProtocols
import BLEWire

/// The Security Manager's async surface and its routing: the SMP channel's PDUs, the controller's encryption events,
/// the agent's answers and the timer's firings go to the ``SecurityManager`` driver, which works on the link in place
/// and talks back through a ``SecurityPort`` the host carries out. Core 5.4, Vol 3, Part H; Vol 4, Part E, 7.7.8,
/// 7.7.39, 7.7.65.5.
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
        links.update(connection.handle) { $0.connection.link == connection.link ? $0.security.current : nil } ?? nil
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
        guard links.isCurrent(connection.handle, is: connection.link) else {
            throw SecurityError(.disconnected, "no connection with handle \(connection.handle)")
        }
        if let secured = try links.update(connection.handle, { try securityManager.secured($0, mitm: mitm, force: force) }) ?? nil {
            return secured
        }
        // The caller waits from before the procedure starts: its outcome cannot come first.
        return try await withCheckedThrowingContinuation { continuation in
            withSecurity(connection.handle) { manager, link, port in
                manager.pair(on: &link, mitm: mitm, force: force, waiter: continuation, port: &port)
            }
        }
    }

    // MARK: Bonds

    /// This side's identity address (bonds belong to it).
    var localIdentity: LEAddress? { ownAddress }

    /// The bond with the device whose address on a link is `peer`: the bond whose identity address it is, else the
    /// one whose device paired through it (a device may distribute a public identity address and use a static random
    /// one on the air), else the one whose IRK resolves it (a resolvable private address; all-zero IRKs resolve
    /// nothing). See ``Bond/find(_:among:)``.
    func bond(with peer: LEAddress) -> Bond? { securityManager.bond(with: peer, local: localIdentity) }

    /// The bond of `connection`'s peer, found as ``bond(with:)`` finds it; `nil` without one (or when the link is down).
    public func bond(of connection: HostConnection) -> Bond? {
        guard links.isCurrent(connection.handle, is: connection.link) else { return nil }
        return bond(with: connection.peer)
    }

    /// The bonds of this side's identity in the bond store (none when it fails, which is logged).
    func storedBonds() -> [Bond] { securityManager.storedBonds(local: localIdentity) }

    /// Removes the bonds with `peer` (its identity address) from the bond store; links with it count as unbonded
    /// from now on (their current encryption stays). Returns how many bonds went.
    @discardableResult
    public func removeBond(with peer: LEAddress) throws(BondStoreError) -> Int {
        let removed = try configuration.security.bondStore.removeBonds(peer: peer, local: localIdentity)
        securityManager.resolvedIdentities = [:]
        for handle in links.handles {
            withSecurity(handle) { manager, link, port in
                guard link.connection.peer == peer || link.security.current.peerIdentity == peer else { return }
                manager.bondRemoved(on: &link, port: &port)
            }
        }
        return removed
    }

    /// This side's IRK, created and stored on first use.
    func localIdentityResolvingKey() -> [UInt8]? { securityManager.localIdentityResolvingKey(local: localIdentity) }

    /// A reading of the monotonic clock: the time since the host was created.
    var now: Duration { securityManager.now }

    // MARK: Routing

    /// A PDU from a link's SMP channel (routed by the link's ``FixedChannelTable``).
    func receiveSMP(_ payload: [UInt8], handle: ConnectionHandle) {
        withSecurity(handle) { manager, link, port in manager.receive(payload, on: &link, port: &port) }
    }

    /// Peripheral: the controller asks for the key the central encrypts with (LE Long Term Key Request). Without a
    /// link this side is peripheral of, a negative reply. Core 5.4, Vol 3, Part H, 2.4.4.
    func longTermKeyRequested(handle: ConnectionHandle, ediv: UInt16, rand: UInt64) {
        let answered = withSecurity(handle) { manager, link, port -> Bool in
            guard link.connection.role == .peripheral else { return false }
            manager.longTermKeyRequested(ediv: ediv, rand: rand, on: &link, port: &port)
            return true
        }
        if answered != true { submitDetached(HCILELongTermKeyRequestNegativeReply(handle: handle)) }
    }

    /// Encryption Change or Encryption Key Refresh Complete.
    func encryptionChanged(handle: ConnectionHandle, status: HCIStatus, enabled: Bool) {
        publish(.encryptionChanged(handle: handle, status: status, enabled: enabled))
        withSecurity(handle) { manager, link, port in manager.encryptionChanged(status: status, enabled: enabled, on: &link, port: &port) }
    }

    /// The controller refused a command that starts the link's encryption: no Encryption Change will come, so the
    /// encryption under way ends here as failed.
    func encryptionRefused(handle: ConnectionHandle, link id: LinkID, status: HCIStatus) {
        withSecurity(handle, link: id) { manager, link, port in manager.encryptionRefused(status, on: &link, port: &port) }
    }

    /// The pairing agent answered a question about `connection`'s peer.
    private func agentAnswered(_ answer: PairingAnswer, on connection: HostConnection) {
        withSecurity(connection.handle, link: connection.link) { manager, link, port in manager.answered(answer, on: &link, port: &port) }
    }

    private func securityTimerFired(_ firing: TimerSet<LinkID>.Firing, on connection: HostConnection) {
        guard securityManager.expire(firing) else { return }
        withSecurity(connection.handle, link: connection.link) { manager, link, port in manager.timerFired(on: &link, port: &port) }
    }

    /// A link went down: its timer stops and its waiters fail.
    func closeSecurity(_ link: Link) { securityManager.close(link) }

    /// Runs `body` on the Security Manager and the link with `handle` (when it is `link`, if given) in place, then
    /// carries out what the manager asked of its port; `nil` without that link.
    @discardableResult
    private func withSecurity<R>(_ handle: ConnectionHandle, link id: LinkID? = nil,
                                 _ body: (inout SecurityManager, inout Link, inout HostSecurityPort) -> R) -> R? {
        var port = HostSecurityPort(localIdentity: localIdentity, host: self)
        let result = links.update(handle) { link -> R? in
            guard id == nil || link.connection.link == id else { return nil }
            return body(&securityManager, &link, &port)
        } ?? nil
        carryOut(port.requests)
        return result
    }

    /// Carries out, in order, what the Security Manager asked: what concerns a link only while that link is up.
    private func carryOut(_ requests: [HostSecurityPort.Request]) {
        for request in requests {
            switch request {
            case .send(let pdu, let connection):
                guard links.isCurrent(connection.handle, is: connection.link) else { continue }
                _ = send(pdu.encoded, channel: .smp, on: connection, whenFull: .queue)
            case .submit(let command, let connection):
                guard links.isCurrent(connection.handle, is: connection.link) else { continue }
                submit(command, on: connection)
            case .publish(let event, let connection):
                guard links.isCurrent(connection.handle, is: connection.link) else { continue }
                if case .securityChanged(_, let security) = event {
                    gatt.driver?.securityChanged(security, on: connection.link, host: self)
                }
                publish(event)
            case .ask(let agent, let question, let connection):
                guard links.isCurrent(connection.handle, is: connection.link) else { continue }
                let peer = connection.peer
                Task { [weak self] in
                    guard let answer = await question.ask(agent, about: peer) else { return }
                    await self?.agentAnswered(answer, on: connection)
                }
            case .notify(let waiters, let outcome):
                for waiter in waiters { waiter.resume(with: outcome.mapError { $0 }) }
            }
        }
    }

    private func submit(_ command: SecurityCommand, on connection: HostConnection) {
        let handle = connection.handle
        switch command {
        case .encryptWithBond(let command):
            // The outcome arrives as Encryption Change, or, when the controller refuses the command, ends here.
            submit(command) { [self] outcome in
                let status: HCIStatus
                switch outcome {
                case .complete, .pending: return
                case .failed(let refused): status = refused
                case .timedOut, .cancelled: status = .unspecifiedError
                }
                withSecurity(handle, link: connection.link) { manager, link, port in
                    manager.bondEncryptionRefused(status, on: &link, port: &port)
                }
            }
        case .enableEncryption(let command):
            submitDetached(command, encrypting: handle)
        case .longTermKeyReply(let command):
            submitDetached(command, encrypting: handle)
        case .longTermKeyNegativeReply:
            submitDetached(HCILELongTermKeyRequestNegativeReply(handle: handle))
        }
    }

    /// What a link's Security Manager timer calls when it fires.
    nonisolated func securityTimerHandler(for connection: HostConnection) -> @Sendable (TimerSet<LinkID>.Firing) async -> Void {
        { [weak self] firing in await self?.securityTimerFired(firing, on: connection) }
    }
}
