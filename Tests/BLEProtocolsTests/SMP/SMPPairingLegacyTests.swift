import BLEProtocols
import BLEWire
import Testing

/// LE legacy pairings ping-ponged between an initiator and a responder machine. Core 5.4, Vol 3, Part H, 2.3.5.2–2.3.5.5
/// and 3.6.
@Suite struct SMPPairingLegacyTests {
    static let legacy = SMPPairing.Configuration(secureConnections: false)

    /// The STK s1(TK, Srand, Mrand) recomputed from the randoms on the wire.
    func expectedSTK(_ link: SMPLink, tk: [UInt8]) throws -> [UInt8] {
        func random(_ role: SMPPairing.Role) -> [UInt8] {
            link.sent(role).compactMap { pdu -> [UInt8]? in
                if case .pairingRandom(let value) = pdu { return SMPCrypto.wire(value) }
                return nil
            }.last ?? []
        }
        return try SMPCrypto.s1(k: tk, r1: random(.responder), r2: random(.initiator))
    }

    func expectSuccess(_ link: SMPLink, method: SMPPairingMethod, tk: [UInt8], keySize: Int = 16,
                       sourceLocation: SourceLocation = #_sourceLocation) throws {
        let i = try #require(link.result(.initiator), sourceLocation: sourceLocation)
        let r = try #require(link.result(.responder), sourceLocation: sourceLocation)
        #expect(i.method == method && r.method == method, sourceLocation: sourceLocation)
        #expect(i.security == SMPSecurityLevel(secureConnections: false, authenticated: method != .justWorks, keySize: keySize),
                sourceLocation: sourceLocation)
        var stk = try expectedSTK(link, tk: tk)
        for index in 0..<(16 - keySize) { stk[index] = 0 }
        #expect(link.encryptionKeys.initiator == stk, sourceLocation: sourceLocation)
        #expect(link.encryptionKeys.responder == stk, sourceLocation: sourceLocation)
        // The LTKs both sides distributed arrived intact, with EDIV and Rand.
        #expect(i.peer.longTermKey == r.local.longTermKey && i.peer.longTermKey != nil, sourceLocation: sourceLocation)
        #expect(r.peer.longTermKey == i.local.longTermKey && r.peer.longTermKey != nil, sourceLocation: sourceLocation)
        #expect(i.peer.ediv == r.local.ediv && i.peer.rand == r.local.rand, sourceLocation: sourceLocation)
        #expect(i.longTermKey == nil && !i.debugKey, sourceLocation: sourceLocation)
    }

    @Test func justWorksWithTheZeroTK() throws {
        var link = try SMPLink(Self.legacy, Self.legacy)
        link.pair()
        try expectSuccess(link, method: .justWorks, tk: Array(repeating: 0, count: 16))
        // Request/response, confirms, randoms, then the responder's keys first.
        #expect(link.sent(.responder).map { SMPCode(rawValue: $0.encoded.first ?? 0) }
                == [.pairingResponse, .pairingConfirm, .pairingRandom, .encryptionInformation, .centralIdentification])
    }

    @Test func secureConnectionsOnOneSideOnlyFallsBackToLegacy() throws {
        var link = try SMPLink(.init(), Self.legacy)
        link.pair()
        try expectSuccess(link, method: .justWorks, tk: Array(repeating: 0, count: 16))
    }

    @Test func passkeyEntry() throws {
        var initiator = Self.legacy, responder = Self.legacy
        initiator.ioCapability = .keyboardOnly
        initiator.mitm = true
        responder.ioCapability = .displayOnly
        var link = try SMPLink(initiator, responder)
        link.pair()
        let passkey = try #require(link.log.compactMap { entry -> UInt32? in
            if case .displayPasskey(let p) = entry.action { return p }
            return nil
        }.first)
        try expectSuccess(link, method: .passkeyEntry(initiatorInputs: true, responderInputs: false),
                          tk: [UInt8](repeating: 0, count: 12) + [UInt8(passkey >> 24 & 0xFF), UInt8(passkey >> 16 & 0xFF),
                                                                   UInt8(passkey >> 8 & 0xFF), UInt8(passkey & 0xFF)])
    }

    @Test func passkeyEntryWithTwoKeyboards() throws {
        var both = Self.legacy
        both.ioCapability = .keyboardOnly
        both.mitm = true
        var link = try SMPLink(both, both)
        link.typedPasskey = 654_321
        link.pair()
        try expectSuccess(link, method: .passkeyEntry(initiatorInputs: true, responderInputs: true),
                          tk: [UInt8](repeating: 0, count: 13) + [0x09, 0xFB, 0xF1])
        #expect(link.log.filter { $0.action == .requestPasskey }.count == 2)
    }

    @Test func outOfBandWithTheSharedTK() throws {
        let tk = smpSpec("0f0e0d0c 0b0a0908 07060504 03020100")
        var initiator = Self.legacy, responder = Self.legacy
        initiator.oob = SMPOOBData(legacyTK: tk)
        responder.oob = SMPOOBData(legacyTK: tk)
        var link = try SMPLink(initiator, responder)
        link.pair()
        try expectSuccess(link, method: .outOfBand, tk: tk)
    }

    @Test func differentOOBTKsFailWithConfirmValueFailed() throws {
        var initiator = Self.legacy, responder = Self.legacy
        initiator.oob = SMPOOBData(legacyTK: Array(repeating: 1, count: 16))
        responder.oob = SMPOOBData(legacyTK: Array(repeating: 2, count: 16))
        var link = try SMPLink(initiator, responder)
        link.pair()
        #expect(link.failure(.responder) == .sent(.confirmValueFailed))
        #expect(link.failure(.initiator) == .received(.confirmValueFailed))
    }

    @Test func aSmallerKeySizeIsNegotiatedAndMasked() throws {
        var initiator = Self.legacy, responder = Self.legacy
        initiator.minimumKeySize = 7
        responder.minimumKeySize = 7
        responder.maximumKeySize = 7
        var link = try SMPLink(initiator, responder)
        link.reportedKeySize = 7
        link.pair()
        try expectSuccess(link, method: .justWorks, tk: Array(repeating: 0, count: 16), keySize: 7)
        #expect(link.result(.initiator)?.peer.longTermKey?.prefix(9).allSatisfy { $0 == 0 } == true)
    }

    @Test func identityAddressAndSigningKeyFollowTheLTK() throws {
        let irk = smpSpec("00010203 04050607 08090a0b 0c0d0e0f"), csrk = smpSpec("a0a1a2a3 a4a5a6a7 a8a9aaab acadaeaf")
        let address = LEAddress(BluetoothAddress(0xC0FF_EE00_0001), type: .random)
        var initiator = Self.legacy
        initiator.identity = SMPIdentity(identityResolvingKey: irk, address: address)
        initiator.signatureKey = csrk
        var link = try SMPLink(initiator, Self.legacy)
        link.pair()
        let r = try #require(link.result(.responder))
        #expect(r.peer.identityResolvingKey == irk && r.peer.identityAddress == address && r.peer.signatureKey == csrk)
        #expect(link.sent(.initiator).map { SMPCode(rawValue: $0.encoded.first ?? 0) }.suffix(5)
                == [.encryptionInformation, .centralIdentification, .identityInformation, .identityAddressInformation,
                    .signingInformation])
    }
}
