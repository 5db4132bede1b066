import BLEWire

/// Pairing phase 3: transport-specific key distribution over the encrypted link. Core 5.4, Vol 3, Part H, 3.6.1:
/// the responder distributes its keys first, then the initiator; each side only what both sides set.
extension SMPPairing {
    /// The negotiated distributions (the Pairing Response's fields).
    private var localDistribution: SMPKeyDistribution {
        role == .initiator ? session.response.initiatorKeyDistribution : session.response.responderKeyDistribution
    }

    private var peerDistribution: SMPKeyDistribution {
        role == .initiator ? session.response.responderKeyDistribution : session.response.initiatorKeyDistribution
    }

    /// The PDUs a distribution consists of, in the order they are sent. With LE Secure Connections the EncKey bit
    /// is ignored (both sides already have the LTK). Core 5.4, Vol 3, Part H, 3.6.1.
    private func codes(_ keys: SMPKeyDistribution) -> [SMPCode] {
        var codes: [SMPCode] = []
        if keys.contains(.encryptionKey) && !session.secureConnections { codes += [.encryptionInformation, .centralIdentification] }
        if keys.contains(.identityKey) { codes += [.identityInformation, .identityAddressInformation] }
        if keys.contains(.signingKey) { codes.append(.signingInformation) }
        return codes
    }

    /// The link is encrypted: the responder sends its keys; both then wait for the peer's.
    mutating func startDistribution() -> [Action] {
        phase = .distributing
        session.expectedKeys = codes(peerDistribution)
        var actions = role == .responder ? sendLocalKeys() : []
        let early = session.early
        session.early = []
        for pdu in early where !isFinished {
            actions += receiveKey(pdu)
        }
        return isFinished ? actions : actions + finishIfDone()
    }

    private mutating func sendLocalKeys() -> [Action] {
        let keys = localDistribution
        var pdus: [SMPPDU] = []
        if keys.contains(.encryptionKey) && !session.secureConnections {
            session.local.longTermKey = masked(randomBytes(16))
            session.local.ediv = randomBytes(2).reduce(UInt16(0)) { $0 << 8 | UInt16($1) }
            session.local.rand = randomBytes(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            pdus += [.encryptionInformation(longTermKey: SMPCrypto.wire(session.local.longTermKey ?? [])),
                     .centralIdentification(ediv: session.local.ediv, rand: session.local.rand)]
        }
        if keys.contains(.identityKey), let identity = configuration.identity {
            session.local.identityResolvingKey = identity.identityResolvingKey
            session.local.identityAddress = identity.address
            pdus += [.identityInformation(identityResolvingKey: SMPCrypto.wire(identity.identityResolvingKey)),
                     .identityAddressInformation(identity.address)]
        }
        if keys.contains(.signingKey), let key = configuration.signatureKey {
            session.local.signatureKey = key
            pdus.append(.signingInformation(signatureKey: SMPCrypto.wire(key)))
        }
        return pdus.isEmpty ? [] : pdus.map { .send($0) } + [.startTimer(configuration.timeout)]
    }

    /// One key PDU from the peer, in the order of ``codes(_:)``; any other order fails the pairing.
    mutating func receiveKey(_ pdu: SMPPDU) -> [Action] {
        guard let expected = session.expectedKeys.first else { return fail(.unspecifiedReason) }
        switch (expected, pdu) {
        case (.encryptionInformation, .encryptionInformation(let key)):
            session.peer.longTermKey = SMPCrypto.wire(key)
        case (.centralIdentification, .centralIdentification(let ediv, let rand)):
            session.peer.ediv = ediv
            session.peer.rand = rand
        case (.identityInformation, .identityInformation(let key)):
            session.peer.identityResolvingKey = SMPCrypto.wire(key)
        case (.identityAddressInformation, .identityAddressInformation(let address)):
            // A random identity address is a static one. Core 5.4, Vol 3, Part H, 3.6.5.
            guard address.kind == .public || address.kind == .randomStatic else { return fail(.invalidParameters) }
            session.peer.identityAddress = address
        case (.signingInformation, .signingInformation(let key)):
            session.peer.signatureKey = SMPCrypto.wire(key)
        default:
            return fail(.unspecifiedReason)
        }
        session.expectedKeys.removeFirst()
        return phase == .distributing ? finishIfDone() : []
    }

    /// When the peer's keys are all in: the initiator sends its own; the pairing is complete.
    private mutating func finishIfDone() -> [Action] {
        guard session.expectedKeys.isEmpty else { return [] }
        let actions = role == .initiator ? sendLocalKeys() : []
        phase = .complete
        let request = session.request, response = session.response
        let result = SMPPairingResult(
            method: session.method,
            security: SMPSecurityLevel(secureConnections: session.secureConnections,
                                       authenticated: session.method.isAuthenticated, keySize: session.keySize),
            bonding: request.authRequirements.contains(.bonding) && response.authRequirements.contains(.bonding),
            debugKey: session.secureConnections && (keyPair.x == Self.debugPublicKeyX || session.peerX == Self.debugPublicKeyX),
            longTermKey: session.secureConnections ? session.longTermKey : nil,
            local: session.local, peer: session.peer)
        return actions + [.cancelTimer, .complete(result)]
    }
}
