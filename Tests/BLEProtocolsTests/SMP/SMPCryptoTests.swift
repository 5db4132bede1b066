import BLEProtocols
import BLEWire
import Testing

/// The Security Manager's toolbox against the specification's sample data (Core 5.4, Vol 3, Part H, Appendix D,
/// and 2.2.3/2.2.4) and RFC 4493's AES-CMAC examples. Values are written most significant octet first, as the
/// specification prints them.
@Suite struct SMPCryptoTests {
    /// A value as the specification prints it: hex, most significant octet first, spaces ignored.
    func spec(_ text: String) -> [UInt8] { [UInt8](hex: String(text.filter { $0 != " " })) ?? [] }

    @Test func aesCMACMatchesRFC4493() throws {
        let key = spec("2b7e1516 28aed2a6 abf71588 09cf4f3c")
        let m = spec("6bc1bee2 2e409f96 e93d7e11 7393172a ae2d8a57 1e03ac9c 9eb76fac 45af8e51 30c81c46 a35ce411 e5fbc119 1a0a52ef f69f2445 df4f9b17 ad2b417b e66c3710")
        #expect(try SMPCrypto.aesCMAC(key: key, []) == spec("bb1d6929 e9593728 7fa37d12 9b756746"))
        #expect(try SMPCrypto.aesCMAC(key: key, Array(m.prefix(16))) == spec("070a16b4 6b4d4144 f79bdd9d d04a287c"))
        #expect(try SMPCrypto.aesCMAC(key: key, Array(m.prefix(40))) == spec("dfa66747 de9ae630 30ca3261 1497c827"))
        #expect(try SMPCrypto.aesCMAC(key: key, m) == spec("51f0bebf 7e3b9d92 fc497417 79363cfe"))
    }

    @Test func legacyConfirmAndKeyGeneration() throws {
        // c1: Core 5.4, Vol 3, Part H, 2.2.3.
        let confirm = try SMPCrypto.c1(k: Array(repeating: 0, count: 16), r: spec("5783D52156AD6F0E6388274EC6702EE0"),
                                       preq: spec("07071000000101"), pres: spec("05000800000302"),
                                       iat: 1, ia: spec("A1A2A3A4A5A6"), rat: 0, ra: spec("B1B2B3B4B5B6"))
        #expect(confirm == spec("1e1e3fef878988ead2a74dc5bef13b86"))
        // s1: Core 5.4, Vol 3, Part H, 2.2.4.
        let stk = try SMPCrypto.s1(k: Array(repeating: 0, count: 16), r1: spec("000F0E0D0C0B0A091122334455667788"),
                                   r2: spec("010203040506070899AABBCCDDEEFF00"))
        #expect(stk == spec("9a1fe1f0e8b0f49b5b4216ae796da062"))
    }

    @Test func secureConnectionsFunctions() throws {
        let u = spec("20b003d2 f297be2c 5e2c83a7 e9f9a5b9 eff49111 acf4fddb cc030148 0e359de6")
        let v = spec("55188b3d 32f6bb9a 900afcfb eed4e72a 59cb9ac2 f19d7cfb 6b4fdd49 f47fc5fd")
        let n1 = spec("d5cb8454 d177733e ffffb2ec 712baeab")
        let n2 = spec("a6e8e7cc 25a75f6e 216583f7 ff3dc4cf")
        let w = spec("ec0234a3 57c8ad05 341010a6 0a397d9b 99796b13 b4f866f1 868d34f3 73bfa698")
        let a1 = spec("00561237 37bfce")
        let a2 = spec("00a71370 2dcfc1")
        // f4, D.2.
        #expect(try SMPCrypto.f4(u: u, v: v, x: n1, z: 0) == spec("f2c916f1 07a9bd1c f1eda1be a974872d"))
        // f5, D.3.
        let (macKey, ltk) = try SMPCrypto.f5(w: w, n1: n1, n2: n2, a1: a1, a2: a2)
        #expect(macKey == spec("2965f176 a1084a02 fd3f6a20 ce636e20"))
        #expect(ltk == spec("69867911 69d7cd23 980522b5 94750a38"))
        // f6, D.4.
        let check = try SMPCrypto.f6(w: macKey, n1: n1, n2: n2, r: spec("12a3343b b453bb54 08da42d2 0c2d0fc8"),
                                     ioCap: spec("010102"), a1: a1, a2: a2)
        #expect(check == spec("e3c47398 9cd0e8c5 d26c0b09 da958f61"))
        // g2, D.5: the six digits are the value mod 1 000 000.
        let g2 = try SMPCrypto.g2(u: u, v: v, x: n1, y: n2)
        #expect(g2 == 0x2F9E_D5BA)
        #expect(g2 % 1_000_000 == 0x2F9E_D5BA % 1_000_000)
        // h6, D.6, and h7, D.7.
        let key = spec("ec0234a3 57c8ad05 341010a6 0a397d9b")
        #expect(try SMPCrypto.h6(w: key, keyID: spec("6c656272")) == spec("2d9ae102 e76dc91c e8d3a9e2 80b16399"))
        #expect(try SMPCrypto.h7(salt: spec("00000000 00000000 00000000 746D7031"), w: key) == spec("fb173597 c6a3c0ec d2998c2a 75a57011"))
        // ah, D.7.
        #expect(try SMPCrypto.ah(irk: key, prand: spec("708194")) == spec("0dfbaa"))
    }

    @Test func p256DiffieHellmanWithTheSpecificationKeysAndPeerKeyValidation() throws {
        // D.1: both sides compute the same DHKey.
        let a = try SMPKeyPair(privateKey: spec("3f49f6d4 a3c55f38 74c9b3e3 d2103f50 4aff607b eb40b799 5899b8a6 cd3c1abd"))
        let b = try SMPKeyPair(privateKey: spec("55188b3d 32f6bb9a 900afcfb eed4e72a 59cb9ac2 f19d7cfb 6b4fdd49 f47fc5fd"))
        #expect(a.x == spec("20b003d2 f297be2c 5e2c83a7 e9f9a5b9 eff49111 acf4fddb cc030148 0e359de6"))
        #expect(a.y == spec("dc809c49 652aeb6d 63329abf 5a52155c 766345c2 8fed3024 741c8ed0 1589d28b"))
        #expect(b.x == spec("1ea1f0f0 1faf1d96 09592284 f19e4c00 47b58afd 8615a69f 559077b2 2faaa190"))
        let dhKey = spec("ec0234a3 57c8ad05 341010a6 0a397d9b 99796b13 b4f866f1 868d34f3 73bfa698")
        #expect(try a.dhKey(peerX: b.x, peerY: b.y) == dhKey)
        #expect(try b.dhKey(peerX: a.x, peerY: a.y) == dhKey)
        // Invalid peer keys: off the curve, all zeros (where the point at infinity would be), our own key.
        var offCurve = b.y
        offCurve[31] ^= 0x01
        #expect(throws: SMPCrypto.Failure.self) { try a.dhKey(peerX: b.x, peerY: offCurve) }
        #expect(throws: SMPCrypto.Failure.self) { try a.dhKey(peerX: Array(repeating: 0, count: 32), peerY: Array(repeating: 0, count: 32)) }
        #expect(throws: SMPCrypto.Failure.self) { try a.dhKey(peerX: a.x, peerY: a.y) }
        #expect(throws: SMPCrypto.Failure.self) { try a.dhKey(peerX: Array(b.x.prefix(31)), peerY: b.y) }
    }

    @Test func wireOrderIsTheReverse() {
        #expect(SMPCrypto.wire(spec("0102 0304")) == [0x04, 0x03, 0x02, 0x01])
    }
}
