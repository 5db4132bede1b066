import BLEProtocols
import BLEWire
import Testing

/// Pairings with fixed inputs (the Appendix D.1 key pairs, seeded nonces, the fixture addresses) pinned to their
/// results. The transcripts of these runs (every PDU, the displayed numbers, the keys) were checked once with an
/// independent implementation, Bumble's `bumble/crypto` (c1, s1, f4, f5, f6, g2 as Bumble's `smp.py` arranges
/// them): Cb, the 20 passkey rounds' Cai/Cbi, g2, Ea, Eb, the f5 LTK, Mconfirm, Sconfirm and the s1 STK all matched.
/// A change in how the machine arranges its inputs (byte order, addresses, IOcap) fails here even when both roles
/// would still agree with each other.
@Suite struct SMPPairingVectorTests {
    func encryptionKey(_ link: SMPLink) -> String? { link.encryptionKeys.initiator?.hexString() }

    @Test func secureConnections() throws {
        var justWorks = try SMPLink()
        justWorks.pair()
        #expect(encryptionKey(justWorks) == "27d3dde4e5f24028b72a74c9d9dbb082")
        #expect(justWorks.sent(.initiator).first?.encoded.hexString() == "01030009100107")
        #expect(justWorks.sent(.responder).first?.encoded.hexString() == "02030009100101")

        let yesNo = SMPPairing.Configuration(ioCapability: .displayYesNo, mitm: true)
        var numeric = try SMPLink(yesNo, yesNo)
        numeric.pair()
        #expect(numeric.log.contains { $0.action == .confirmNumber(23181) })
        #expect(encryptionKey(numeric) == "27d3dde4e5f24028b72a74c9d9dbb082")

        var passkey = try SMPLink(.init(ioCapability: .keyboardOnly, mitm: true), .init(ioCapability: .displayOnly, mitm: true))
        passkey.pair()
        #expect(passkey.log.contains { $0.action == .displayPasskey(444_004) })
        #expect(encryptionKey(passkey) == "58d9756e6df262f7d95fdcec3d0af339")
    }

    @Test func legacy() throws {
        let legacy = SMPPairing.Configuration(secureConnections: false)
        var justWorks = try SMPLink(legacy, legacy)
        justWorks.pair()
        #expect(encryptionKey(justWorks) == "916d00bec947be61df494b7f4047d5e2")

        var passkey = try SMPLink(.init(ioCapability: .displayOnly, mitm: true, secureConnections: false),
                                  .init(ioCapability: .keyboardOnly, secureConnections: false))
        passkey.pair()
        #expect(passkey.log.contains { $0.action == .displayPasskey(776_971) })
        #expect(encryptionKey(passkey) == "1fd7ca679f59f9a2294211c0034d497f")
    }
}
