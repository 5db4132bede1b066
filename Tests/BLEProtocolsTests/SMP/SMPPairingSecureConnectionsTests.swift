import BLEProtocols
import BLEWire
import Testing

/// LE Secure Connections pairings ping-ponged between an initiator and a responder machine, with the specification's
/// sample key pairs (Core 5.4, Vol 3, Part H, Appendix D.1). Core 5.4, Vol 3, Part H, 2.3.5.6.
@Suite struct SMPPairingSecureConnectionsTests {
    /// D.1: the DHKey of the two sample key pairs.
    let dhKey = smpSpec("ec0234a3 57c8ad05 341010a6 0a397d9b 99796b13 b4f866f1 868d34f3 73bfa698")

    /// The LTK f5(DHKey, Na, Nb, A, B) recomputed from the nonces on the wire (the last Pairing Random each side sent).
    func expectedLTK(_ link: SMPLink) throws -> [UInt8] {
        func lastRandom(_ role: SMPPairing.Role) -> [UInt8] {
            link.sent(role).compactMap { pdu -> [UInt8]? in
                if case .pairingRandom(let value) = pdu { return SMPCrypto.wire(value) }
                return nil
            }.last ?? []
        }
        let a = [UInt8(1)] + SMPFixtures.initiatorAddress.address.bytes
        let b = [UInt8(0)] + SMPFixtures.responderAddress.address.bytes
        return try SMPCrypto.f5(w: dhKey, n1: lastRandom(.initiator), n2: lastRandom(.responder), a1: a, a2: b).ltk
    }

    func expectSuccess(_ link: SMPLink, method: SMPPairingMethod, authenticated: Bool,
                       sourceLocation: SourceLocation = #_sourceLocation) throws {
        let i = try #require(link.result(.initiator), sourceLocation: sourceLocation)
        let r = try #require(link.result(.responder), sourceLocation: sourceLocation)
        #expect(i.method == method && r.method == method, sourceLocation: sourceLocation)
        #expect(i.security == SMPSecurityLevel(secureConnections: true, authenticated: authenticated, keySize: 16),
                sourceLocation: sourceLocation)
        #expect(i.longTermKey == r.longTermKey, sourceLocation: sourceLocation)
        #expect(i.longTermKey == (try expectedLTK(link)), sourceLocation: sourceLocation)
        #expect(link.encryptionKeys.initiator == i.longTermKey, sourceLocation: sourceLocation)
        #expect(link.encryptionKeys.responder == i.longTermKey, sourceLocation: sourceLocation)
        #expect(link.initiator.isFinished && link.responder.isFinished, sourceLocation: sourceLocation)
        // The initiator uses Appendix D.1's first key pair, which is the debug key pair.
        #expect(i.debugKey && r.debugKey, sourceLocation: sourceLocation)
    }

    @Test func withoutTheDebugKeyTheResultSaysSo() throws {
        let key = smpSpec("0badc0de 00000000 00000000 00000000 00000000 00000000 00000000 00000001")
        var link = SMPLink(
            initiator: SMPPairing(role: .initiator, initiatorAddress: SMPFixtures.initiatorAddress,
                                  responderAddress: SMPFixtures.responderAddress, keyPair: try SMPKeyPair(privateKey: key),
                                  random: seededRandom(7)),
            responder: try SMPFixtures.responder())
        link.pair()
        let i = try #require(link.result(.initiator)), r = try #require(link.result(.responder))
        #expect(!i.debugKey && !r.debugKey)
        #expect(i.longTermKey == r.longTermKey && i.longTermKey?.count == 16)
    }

    @Test func aRandomIdentityAddressMustBeStatic() throws {
        let irk = smpSpec("00010203 04050607 08090a0b 0c0d0e0f")
        let resolvable = LEAddress(BluetoothAddress(0x4011_2233_4455), type: .random)
        var link = try SMPLink(.init(), SMPPairing.Configuration(identity: SMPIdentity(identityResolvingKey: irk, address: resolvable)))
        link.pair()
        #expect(link.failure(.initiator) == .sent(.invalidParameters))
        let staticRandom = LEAddress(BluetoothAddress(0xC011_2233_4455), type: .random)
        var good = try SMPLink(.init(), SMPPairing.Configuration(identity: SMPIdentity(identityResolvingKey: irk, address: staticRandom)))
        good.pair()
        #expect(good.result(.initiator)?.peer.identityAddress == staticRandom)
    }

    @Test func justWorks() throws {
        var link = try SMPLink()
        link.pair()
        try expectSuccess(link, method: .justWorks, authenticated: false)
        // The exchange: request/response, public keys, Cb, Na, Nb, Ea, Eb.
        #expect(link.sent(.initiator).map { SMPCode(rawValue: $0.encoded.first ?? 0) }
                == [.pairingRequest, .pairingPublicKey, .pairingRandom, .pairingDHKeyCheck])
        #expect(link.sent(.responder).map { SMPCode(rawValue: $0.encoded.first ?? 0) }
                == [.pairingResponse, .pairingPublicKey, .pairingConfirm, .pairingRandom, .pairingDHKeyCheck])
        // The public keys on the wire are the sample keys, least significant octet first.
        #expect(link.sent(.initiator).contains(.pairingPublicKey(
            x: SMPCrypto.wire(smpSpec("20b003d2 f297be2c 5e2c83a7 e9f9a5b9 eff49111 acf4fddb cc030148 0e359de6")),
            y: SMPCrypto.wire(smpSpec("dc809c49 652aeb6d 63329abf 5a52155c 766345c2 8fed3024 741c8ed0 1589d28b")))))
    }

    @Test func numericComparisonShowsTheSameNumberOnBothSides() throws {
        let yesNo = SMPPairing.Configuration(ioCapability: .displayYesNo, mitm: true)
        var link = try SMPLink(yesNo, SMPPairing.Configuration(ioCapability: .keyboardDisplay, mitm: true))
        link.pair()
        try expectSuccess(link, method: .numericComparison, authenticated: true)
        let numbers = link.log.compactMap { entry -> UInt32? in
            if case .confirmNumber(let n) = entry.action { return n }
            return nil
        }
        #expect(numbers.count == 2 && numbers.first == numbers.last && (numbers.first ?? 1_000_000) < 1_000_000)
    }

    @Test(arguments: [
        (SMPIOCapability.keyboardOnly, SMPIOCapability.displayOnly),
        (SMPIOCapability.displayOnly, SMPIOCapability.keyboardOnly),
        (SMPIOCapability.keyboardOnly, SMPIOCapability.keyboardOnly),
    ])
    func passkeyEntryRunsTwentyRounds(initiatorIO: SMPIOCapability, responderIO: SMPIOCapability) throws {
        var link = try SMPLink(SMPPairing.Configuration(ioCapability: initiatorIO, mitm: true),
                               SMPPairing.Configuration(ioCapability: responderIO, mitm: true))
        link.pair()
        let method = try #require(link.result(.initiator)?.method)
        guard case .passkeyEntry = method else { Issue.record("not passkey entry: \(method)"); return }
        try expectSuccess(link, method: method, authenticated: true)
        let confirms = link.sent(.initiator).filter { if case .pairingConfirm = $0 { true } else { false } }
        #expect(confirms.count == 20)
        #expect(link.sent(.responder).filter { if case .pairingRandom = $0 { true } else { false } }.count == 20)
    }

    @Test func wrongPasskeyFailsWithConfirmValueFailed() throws {
        var link = try SMPLink(SMPPairing.Configuration(ioCapability: .keyboardOnly, mitm: true),
                               SMPPairing.Configuration(ioCapability: .displayOnly, mitm: true))
        link.user = false
        link.pair()
        let displayed = try #require(link.log.compactMap { entry -> UInt32? in
            if case .displayPasskey(let p) = entry.action { return p }
            return nil
        }.first)
        link.handle(link.initiator.passkeyEntered((displayed + 1) % 1_000_000), from: .initiator)
        link.run()
        // The first bit differs (passkey + 1 flips bit 0): the responder finds Cai wrong.
        #expect(link.failure(.responder) == .sent(.confirmValueFailed))
        #expect(link.failure(.initiator) == .received(.confirmValueFailed))
    }

    @Test func outOfBandBothWaysAndOneWay() throws {
        let pairA = try SMPKeyPair(privateKey: SMPFixtures.privateKeyA)
        let pairB = try SMPKeyPair(privateKey: SMPFixtures.privateKeyB)
        let ra = smpSpec("00112233 44556677 8899aabb ccddeeff"), rb = smpSpec("ffeeddcc bbaa9988 77665544 33221100")
        let ca = try SMPPairing.localOOBConfirm(keyPair: pairA, random: ra)
        let cb = try SMPPairing.localOOBConfirm(keyPair: pairB, random: rb)
        // Both received the other's data.
        var link = try SMPLink(
            SMPPairing.Configuration(oob: SMPOOBData(peerRandom: rb, peerConfirm: cb, localRandom: ra)),
            SMPPairing.Configuration(oob: SMPOOBData(peerRandom: ra, peerConfirm: ca, localRandom: rb)))
        link.pair()
        try expectSuccess(link, method: .outOfBand, authenticated: true)
        // Only the initiator received the responder's data.
        var oneWay = try SMPLink(SMPPairing.Configuration(oob: SMPOOBData(peerRandom: rb, peerConfirm: cb)),
                                 SMPPairing.Configuration(oob: SMPOOBData(localRandom: rb)))
        oneWay.pair()
        try expectSuccess(oneWay, method: .outOfBand, authenticated: true)
        // A confirm that does not match the peer's public key.
        var wrong = try SMPLink(SMPPairing.Configuration(oob: SMPOOBData(peerRandom: rb, peerConfirm: ca)),
                                SMPPairing.Configuration(oob: SMPOOBData(localRandom: rb)))
        wrong.pair()
        #expect(wrong.failure(.initiator) == .sent(.confirmValueFailed))
        // The peer says it has our data, but we kept no OOB random.
        var missing = try SMPLink(SMPPairing.Configuration(oob: SMPOOBData(peerRandom: rb, peerConfirm: cb)), .init())
        missing.pair()
        #expect(missing.failure(.responder) == .sent(.oobNotAvailable))
    }

    @Test func identityAndSigningKeysAreDistributedTheLTKIsNot() throws {
        let irkA = smpSpec("00010203 04050607 08090a0b 0c0d0e0f"), irkB = smpSpec("f0f1f2f3 f4f5f6f7 f8f9fafb fcfdfeff")
        let csrkA = smpSpec("a0a1a2a3 a4a5a6a7 a8a9aaab acadaeaf"), csrkB = smpSpec("b0b1b2b3 b4b5b6b7 b8b9babb bcbdbebf")
        let identityA = LEAddress(BluetoothAddress(0xC0FF_EE00_0001), type: .random)
        let identityB = LEAddress(BluetoothAddress(0x0011_2233_4455), type: .public)
        var link = try SMPLink(
            SMPPairing.Configuration(identity: SMPIdentity(identityResolvingKey: irkA, address: identityA), signatureKey: csrkA),
            SMPPairing.Configuration(identity: SMPIdentity(identityResolvingKey: irkB, address: identityB), signatureKey: csrkB))
        link.pair()
        let i = try #require(link.result(.initiator)), r = try #require(link.result(.responder))
        #expect(i.peer == SMPDistributedKeys(identityResolvingKey: irkB, identityAddress: identityB, signatureKey: csrkB))
        #expect(r.peer == SMPDistributedKeys(identityResolvingKey: irkA, identityAddress: identityA, signatureKey: csrkA))
        #expect(i.local == r.peer && r.local == i.peer)
        #expect(i.bonding)
        // The responder's keys go first, least significant octet first on the wire.
        #expect(link.sent(.responder).suffix(3) == [.identityInformation(identityResolvingKey: SMPCrypto.wire(irkB)),
                                                     .identityAddressInformation(identityB),
                                                     .signingInformation(signatureKey: SMPCrypto.wire(csrkB))])
        #expect(!link.sent(.responder).contains { if case .encryptionInformation = $0 { true } else { false } })
    }

    @Test func onlyKeysBothSidesSetAreDistributed() throws {
        let irk = smpSpec("00010203 04050607 08090a0b 0c0d0e0f")
        let identity = SMPIdentity(identityResolvingKey: irk, address: LEAddress(BluetoothAddress(1), type: .public))
        // The initiator does not ask for the responder's identity; the responder has one to give.
        var link = try SMPLink(SMPPairing.Configuration(requestedPeerKeys: [.signingKey]),
                               SMPPairing.Configuration(identity: identity))
        link.pair()
        #expect(link.result(.initiator)?.peer == SMPDistributedKeys())
        #expect(link.result(.responder)?.local == SMPDistributedKeys())
    }

    @Test func keysOvertakingTheEncryptionChangeAreKept() throws {
        let irk = smpSpec("00010203 04050607 08090a0b 0c0d0e0f")
        let identity = SMPIdentity(identityResolvingKey: irk, address: LEAddress(BluetoothAddress(1), type: .public))
        var link = try SMPLink(.init(), SMPPairing.Configuration(identity: identity))
        link.user = false
        link.handle(link.initiator.start(), from: .initiator)
        // Run the pairing up to encryption, then tell the responder first and deliver its keys before the initiator
        // hears of the encryption.
        while !link.inFlight.isEmpty {
            let (to, bytes) = link.inFlight.removeFirst()
            link.deliver(bytes, to: to)
        }
        link.handle(link.responder.encryptionChanged(success: true, keySize: 16), from: .responder)
        while !link.inFlight.isEmpty {
            let (to, bytes) = link.inFlight.removeFirst()
            link.deliver(bytes, to: to)
        }
        #expect(link.result(.initiator) == nil)
        link.handle(link.initiator.encryptionChanged(success: true, keySize: 16), from: .initiator)
        #expect(link.result(.initiator)?.peer.identityResolvingKey == irk)
    }
}
