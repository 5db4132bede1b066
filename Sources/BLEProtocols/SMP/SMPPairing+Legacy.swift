import BLEWire

/// LE legacy pairing phase 2: the TK, the c1 confirm values and the STK from s1. Core 5.4, Vol 3, Part H, 2.3.5.2–2.3.5.5.
extension SMPPairing {
    /// The method's TK is known (Just Works, OOB, a displayed passkey) or asked of the user.
    mutating func beginLegacy() -> [Action] {
        phase = .awaitingConfirm
        var actions: [Action] = []
        switch session.method {
        case .justWorks where configuration.confirmsJustWorks:
            // The TK (zero) is set once the user agrees; no confirm value goes out before.
            session.awaitingJustWorks = true
            actions = [.confirmJustWorks]
        case .justWorks: session.tk = [UInt8](repeating: 0, count: 16)
        case .outOfBand: session.tk = configuration.oob?.legacyTK
        case .passkeyEntry: actions = askForPasskey()
        case .numericComparison: return fail(.unspecifiedReason)   // not a legacy method
        }
        return actions + legacyProgress()
    }

    /// c1 over this pairing's features and addresses. Core 5.4, Vol 3, Part H, 2.2.3.
    private func c1(tk: [UInt8], r: [UInt8]) -> [UInt8]? {
        try? SMPCrypto.c1(k: tk, r: r, preq: SMPCrypto.wire(SMPPDU.pairingRequest(session.request).encoded),
                          pres: SMPCrypto.wire(SMPPDU.pairingResponse(session.response).encoded),
                          iat: initiatorAddress.type.rawValue, ia: initiatorAddress.address.bytes,
                          rat: responderAddress.type.rawValue, ra: responderAddress.address.bytes)
    }

    /// Sends this side's confirm value when it may: the initiator once the TK is known, the responder once the TK
    /// is known and the initiator's confirm arrived.
    mutating func legacyProgress() -> [Action] {
        guard let tk = session.tk, !session.sentConfirm else { return [] }
        if role == .responder && session.peerConfirm == nil { return [] }
        session.localNonce = randomBytes(16)
        guard let confirm = c1(tk: tk, r: session.localNonce) else { return fail(.unspecifiedReason) }
        session.sentConfirm = true
        if role == .responder { phase = .awaitingRandom }
        return send(.pairingConfirm(SMPCrypto.wire(confirm)))
    }

    /// Mconfirm (responder) or Sconfirm (initiator).
    mutating func receiveLegacyConfirm(_ confirm: [UInt8]) -> [Action] {
        guard session.peerConfirm == nil else { return fail(.unspecifiedReason) }
        session.peerConfirm = confirm
        switch role {
        case .responder:
            return legacyProgress()
        case .initiator:
            guard session.sentConfirm else { return fail(.unspecifiedReason) }
            phase = .awaitingRandom
            return send(.pairingRandom(SMPCrypto.wire(session.localNonce)))
        }
    }

    /// Mrand (responder) or Srand (initiator): checks the peer's confirm value, then the STK.
    mutating func receiveLegacyRandom(_ peerRandom: [UInt8]) -> [Action] {
        guard let tk = session.tk, let peerConfirm = session.peerConfirm, let expected = c1(tk: tk, r: peerRandom) else {
            return fail(.unspecifiedReason)
        }
        guard expected == peerConfirm else { return fail(.confirmValueFailed) }
        session.peerNonce = peerRandom
        let (srand, mrand) = role == .initiator ? (peerRandom, session.localNonce) : (session.localNonce, peerRandom)
        guard let stk = try? SMPCrypto.s1(k: tk, r1: srand, r2: mrand) else { return fail(.unspecifiedReason) }
        phase = .awaitingEncryption
        switch role {
        case .initiator:
            return [.startEncryption(longTermKey: masked(stk), ediv: 0, rand: 0)]
        case .responder:
            return send(.pairingRandom(SMPCrypto.wire(session.localNonce))) + [.provideLongTermKey(masked(stk))]
        }
    }
}
