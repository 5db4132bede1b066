import BLEWire

/// LE Secure Connections pairing phase 2. Core 5.4, Vol 3, Part H, 2.3.5.6: the public key exchange, authentication
/// stage 1 (Just Works or Numeric Comparison, Passkey Entry, OOB) and stage 2 (f5 for the MacKey and LTK, the f6
/// DHKey checks).
extension SMPPairing {
    /// PKa, PKb, Na, Nb, the two addresses as 7 octets (type first), most significant octet first.
    private var initiatorX: [UInt8] { role == .initiator ? keyPair.x : session.peerX }
    private var responderX: [UInt8] { role == .responder ? keyPair.x : session.peerX }
    private var na: [UInt8] { role == .initiator ? session.localNonce : session.peerNonce }
    private var nb: [UInt8] { role == .responder ? session.localNonce : session.peerNonce }
    private var a: [UInt8] { [initiatorAddress.type.rawValue & 1] + initiatorAddress.address.bytes }
    private var b: [UInt8] { [responderAddress.type.rawValue & 1] + responderAddress.address.bytes }
    private var localX: [UInt8] { keyPair.x }

    /// The passkey bit of the current round with 0x80 set. Core 5.4, Vol 3, Part H, 2.3.5.6.3.
    private var passkeyBit: UInt8 {
        0x80 | UInt8(truncatingIfNeeded: ((session.passkey ?? 0) >> UInt32(min(session.round, 19))) & 1)
    }

    // MARK: Public keys

    /// The responder waits for the initiator's public key.
    mutating func awaitPublicKey() -> [Action] {
        phase = .awaitingPublicKey
        return []
    }

    /// The initiator sends its public key first.
    mutating func sendPublicKey() -> [Action] {
        phase = .awaitingPublicKey
        return send(.pairingPublicKey(x: SMPCrypto.wire(keyPair.x), y: SMPCrypto.wire(keyPair.y)))
    }

    /// The peer's public key, validated before use. Core 5.4, Vol 3, Part H, 2.3.5.6.1: a key off the curve, or one
    /// with our own X coordinate (our key reflected, or its negation), fails the pairing with DHKey Check Failed (no
    /// DHKey check could succeed with it; NimBLE and Zephyr answer the same).
    mutating func receivePublicKey(x: [UInt8], y: [UInt8]) -> [Action] {
        guard x != keyPair.x, let dhKey = try? keyPair.dhKey(peerX: x, peerY: y) else { return fail(.dhKeyCheckFailed) }
        session.peerX = x
        session.peerY = y
        session.dhKey = dhKey
        var actions: [Action] = []
        if role == .responder {
            actions = send(.pairingPublicKey(x: SMPCrypto.wire(keyPair.x), y: SMPCrypto.wire(keyPair.y)))
        }
        return actions + beginStage1()
    }

    // MARK: Stage 1

    private mutating func beginStage1() -> [Action] {
        switch session.method {
        case .justWorks, .numericComparison:
            guard role == .responder else {
                phase = .awaitingConfirm
                return []
            }
            // Cb = f4(PKbx, PKax, Nb, 0). Core 5.4, Vol 3, Part H, 2.3.5.6.2.
            session.localNonce = randomBytes(16)
            guard let confirm = try? SMPCrypto.f4(u: localX, v: session.peerX, x: session.localNonce, z: 0) else {
                return fail(.unspecifiedReason)
            }
            phase = .awaitingRandom
            return send(.pairingConfirm(SMPCrypto.wire(confirm)))
        case .passkeyEntry:
            phase = .awaitingConfirm
            let actions = askForPasskey()
            return actions + passkeyProgress()
        case .outOfBand:
            // The peer's OOB confirm C = f4(PKx, PKx, r, 0) when we received its data. Core 5.4, Vol 3, Part H, 2.3.5.6.4.
            if let oob = configuration.oob, let r = oob.peerRandom, let c = oob.peerConfirm {
                guard let expected = try? SMPCrypto.f4(u: session.peerX, v: session.peerX, x: r, z: 0) else {
                    return fail(.unspecifiedReason)
                }
                guard expected == c else { return fail(.confirmValueFailed) }
            }
            phase = .awaitingRandom
            guard role == .initiator else { return [] }
            session.localNonce = randomBytes(16)
            return send(.pairingRandom(SMPCrypto.wire(session.localNonce)))
        }
    }

    /// Passkey Entry: sends this round's confirm value when it may (the initiator once the passkey is known, the
    /// responder once it is known and the initiator's confirm arrived). Cai = f4(PKax, PKbx, Nai, rai),
    /// Cbi = f4(PKbx, PKax, Nbi, rbi). Core 5.4, Vol 3, Part H, 2.3.5.6.3.
    mutating func passkeyProgress() -> [Action] {
        guard session.passkey != nil, !session.sentConfirm else { return [] }
        if role == .responder && session.peerConfirm == nil { return [] }
        session.localNonce = randomBytes(16)
        guard let confirm = try? SMPCrypto.f4(u: localX, v: session.peerX, x: session.localNonce, z: passkeyBit) else {
            return fail(.unspecifiedReason)
        }
        session.sentConfirm = true
        if role == .responder { phase = .awaitingRandom }
        return send(.pairingConfirm(SMPCrypto.wire(confirm)))
    }

    /// Cb (Just Works, Numeric Comparison) or this round's Cai/Cbi (Passkey Entry).
    mutating func receiveConfirm(_ confirm: [UInt8]) -> [Action] {
        guard session.peerConfirm == nil else { return fail(.unspecifiedReason) }
        session.peerConfirm = confirm
        switch (session.method, role) {
        case (.justWorks, .initiator), (.numericComparison, .initiator):
            session.localNonce = randomBytes(16)
            phase = .awaitingRandom
            return send(.pairingRandom(SMPCrypto.wire(session.localNonce)))
        case (.passkeyEntry, .initiator):
            guard session.sentConfirm else { return fail(.unspecifiedReason) }
            phase = .awaitingRandom
            return send(.pairingRandom(SMPCrypto.wire(session.localNonce)))
        case (.passkeyEntry, .responder):
            return passkeyProgress()
        default:
            return fail(.unspecifiedReason)
        }
    }

    /// Na or Nb (or this round's Nai/Nbi): checks the peer's confirm value where there is one.
    mutating func receiveRandom(_ nonce: [UInt8]) -> [Action] {
        session.peerNonce = nonce
        switch session.method {
        case .justWorks, .numericComparison:
            var actions: [Action] = []
            if role == .initiator {
                guard let peerConfirm = session.peerConfirm,
                      let expected = try? SMPCrypto.f4(u: session.peerX, v: localX, x: nonce, z: 0) else {
                    return fail(.unspecifiedReason)
                }
                guard expected == peerConfirm else { return fail(.confirmValueFailed) }
            } else {
                actions = send(.pairingRandom(SMPCrypto.wire(session.localNonce)))
            }
            if session.method == .numericComparison {
                // Va = Vb = g2(PKax, PKbx, Na, Nb) mod 10⁶. Core 5.4, Vol 3, Part H, 2.3.5.6.2.
                guard let value = try? SMPCrypto.g2(u: initiatorX, v: responderX, x: na, y: nb) else {
                    return fail(.unspecifiedReason)
                }
                session.awaitingNumericComparison = true
                actions.append(.confirmNumber(value % 1_000_000))
            } else if configuration.confirmsJustWorks {
                session.awaitingJustWorks = true
                actions.append(.confirmJustWorks)
            }
            return actions + beginStage2()
        case .passkeyEntry:
            guard let peerConfirm = session.peerConfirm,
                  let expected = try? SMPCrypto.f4(u: session.peerX, v: localX, x: nonce, z: passkeyBit) else {
                return fail(.unspecifiedReason)
            }
            guard expected == peerConfirm else { return fail(.confirmValueFailed) }
            var actions: [Action] = role == .responder ? send(.pairingRandom(SMPCrypto.wire(session.localNonce))) : []
            session.round += 1
            session.peerConfirm = nil
            session.sentConfirm = false
            guard session.round == 20 else {
                phase = .awaitingConfirm
                return actions + passkeyProgress()
            }
            actions += beginStage2()
            return actions
        case .outOfBand:
            var actions: [Action] = []
            if role == .responder {
                session.localNonce = randomBytes(16)
                actions = send(.pairingRandom(SMPCrypto.wire(session.localNonce)))
            }
            return actions + beginStage2()
        }
    }

    // MARK: Stage 2

    /// ra and rb of f6: the passkey, the OOB randoms (zero where the other side had no OOB data), or zero.
    private var checkValues: (ra: [UInt8], rb: [UInt8]) {
        let zero = [UInt8](repeating: 0, count: 16)
        switch session.method {
        case .justWorks, .numericComparison:
            return (zero, zero)
        case .passkeyEntry:
            let value = Self.passkeyValue(session.passkey ?? 0)
            return (value, value)
        case .outOfBand:
            let peerHasOurs = (role == .initiator ? session.response : session.request).oobDataFlag == 1
            let local = peerHasOurs ? (configuration.oob?.localRandom ?? zero) : zero
            let peer = configuration.oob?.peerRandom ?? zero
            return role == .initiator ? (local, peer) : (peer, local)
        }
    }

    private func ioCap(_ features: SMPPairingFeatures) -> [UInt8] {
        [features.authRequirements.rawValue, features.oobDataFlag, features.ioCapability.rawValue]
    }

    /// Ea = f6(MacKey, Na, Nb, rb, IOcapA, A, B) and Eb = f6(MacKey, Nb, Na, ra, IOcapB, B, A).
    private func checkValue(ofInitiator: Bool) -> [UInt8]? {
        let (ra, rb) = checkValues
        return ofInitiator
            ? try? SMPCrypto.f6(w: session.macKey, n1: na, n2: nb, r: rb, ioCap: ioCap(session.request), a1: a, a2: b)
            : try? SMPCrypto.f6(w: session.macKey, n1: nb, n2: na, r: ra, ioCap: ioCap(session.response), a1: b, a2: a)
    }

    /// MacKey and LTK = f5(DHKey, Na, Nb, A, B), then the DHKey checks.
    private mutating func beginStage2() -> [Action] {
        guard let (macKey, ltk) = try? SMPCrypto.f5(w: session.dhKey, n1: na, n2: nb, a1: a, a2: b) else {
            return fail(.unspecifiedReason)
        }
        session.macKey = macKey
        session.longTermKey = masked(ltk)
        phase = .awaitingDHKeyCheck
        return checkProgress()
    }

    /// Sends this side's DHKey check when it may: the initiator once its user confirmed (Numeric Comparison), the
    /// responder once its user confirmed and Ea arrived and matched.
    mutating func checkProgress() -> [Action] {
        guard phase == .awaitingDHKeyCheck, !session.awaitingNumericComparison, !session.awaitingJustWorks else { return [] }
        switch role {
        case .initiator:
            guard !session.sentCheck else { return [] }
            guard let ea = checkValue(ofInitiator: true) else { return fail(.unspecifiedReason) }
            session.sentCheck = true
            return send(.pairingDHKeyCheck(SMPCrypto.wire(ea)))
        case .responder:
            guard let peerCheck = session.peerCheck else { return [] }
            guard let ea = checkValue(ofInitiator: true), let eb = checkValue(ofInitiator: false) else {
                return fail(.unspecifiedReason)
            }
            guard ea == peerCheck else { return fail(.dhKeyCheckFailed) }
            phase = .awaitingEncryption
            return send(.pairingDHKeyCheck(SMPCrypto.wire(eb))) + [.provideLongTermKey(session.longTermKey)]
        }
    }

    /// Ea (responder) or Eb (initiator).
    mutating func receiveCheck(_ check: [UInt8]) -> [Action] {
        switch role {
        case .responder:
            guard session.peerCheck == nil else { return fail(.unspecifiedReason) }
            session.peerCheck = check
            return checkProgress()
        case .initiator:
            guard session.sentCheck, let eb = checkValue(ofInitiator: false) else { return fail(.unspecifiedReason) }
            guard eb == check else { return fail(.dhKeyCheckFailed) }
            phase = .awaitingEncryption
            return [.startEncryption(longTermKey: session.longTermKey, ediv: 0, rand: 0)]
        }
    }
}
