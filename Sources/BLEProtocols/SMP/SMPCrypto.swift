import Crypto
import CryptoExtras
import BLEWire

/// The Security Manager's cryptographic toolbox. Core 5.4, Vol 3, Part H, 2.2.
///
/// Every value is given **most significant octet first**, as the specification prints its sample data (Appendix D)
/// and as AES and AES-CMAC consume bytes; SMP PDUs carry the same values least significant octet first, so the
/// pairing machine reverses them at the wire (``SMPCrypto/wire(_:)``). The functions are pure: keys and nonces are
/// inputs, never generated here.
public enum SMPCrypto {
    /// Why a toolbox function could not run.
    public typealias Failure = BLEFailure<SMPCryptoFailureCode>

    /// Reverses a value between the specification's order (most significant octet first) and the wire's.
    public static func wire(_ value: [UInt8]) -> [UInt8] { value.reversed() }

    /// The security function e: AES-128 encryption of one 16-octet block. Core 5.4, Vol 3, Part H, 2.2.1.
    public static func e(key: [UInt8], _ plaintext: [UInt8]) throws(Failure) -> [UInt8] {
        guard key.count == 16, plaintext.count == 16 else {
            throw Failure(.invalidInput, "e: a 16-octet key and block are needed (\(key.count), \(plaintext.count))")
        }
        var block = plaintext
        do {
            try AES.permute(&block, key: SymmetricKey(data: key))
        } catch {
            throw Failure(.cryptography, "e: \(error)")
        }
        return block
    }

    /// AES-CMAC with a 128-bit key (RFC 4493). Core 5.4, Vol 3, Part H, 2.2.5.
    public static func aesCMAC(key: [UInt8], _ message: [UInt8]) throws(Failure) -> [UInt8] {
        guard key.count == 16 else { throw Failure(.invalidInput, "AES-CMAC: a 16-octet key is needed (\(key.count))") }
        do {
            var mac = try AES.CMAC(key: SymmetricKey(data: key))
            mac.update(data: message)
            return Array(mac.finalize())
        } catch {
            throw Failure(.cryptography, "AES-CMAC: \(error)")
        }
    }

    private static func xor(_ a: [UInt8], _ b: [UInt8]) -> [UInt8] { zip(a, b).map { $0 ^ $1 } }

    /// The random address hash function ah: the 24-bit hash of a resolvable private address's prand under an IRK.
    /// Core 5.4, Vol 3, Part H, 2.2.2.
    public static func ah(irk: [UInt8], prand: [UInt8]) throws(Failure) -> [UInt8] {
        guard prand.count == 3 else { throw Failure(.invalidInput, "ah: prand has 3 octets (\(prand.count))") }
        return Array(try e(key: irk, Array(repeating: 0, count: 13) + prand).suffix(3))
    }

    /// The LE legacy pairing confirm value function c1. `preq` and `pres` are the Pairing Request and Response PDUs
    /// (7 octets, opcode first, in the specification's order), `iat`/`rat` the initiator's and responder's address
    /// types (0 public, 1 random). Core 5.4, Vol 3, Part H, 2.2.3.
    public static func c1(k: [UInt8], r: [UInt8], preq: [UInt8], pres: [UInt8], iat: UInt8, ia: [UInt8], rat: UInt8,
                          ra: [UInt8]) throws(Failure) -> [UInt8] {
        guard r.count == 16, preq.count == 7, pres.count == 7, ia.count == 6, ra.count == 6 else {
            throw Failure(.invalidInput, "c1: r 16, preq and pres 7, ia and ra 6 octets are needed")
        }
        let p1 = pres + preq + [rat & 1, iat & 1]
        let p2 = [0, 0, 0, 0] + ia + ra
        return try e(key: k, xor(try e(key: k, xor(r, p1)), p2))
    }

    /// The LE legacy pairing key generation function s1: the STK from the two random values.
    /// Core 5.4, Vol 3, Part H, 2.2.4.
    public static func s1(k: [UInt8], r1: [UInt8], r2: [UInt8]) throws(Failure) -> [UInt8] {
        guard r1.count == 16, r2.count == 16 else { throw Failure(.invalidInput, "s1: r1 and r2 have 16 octets") }
        return try e(key: k, Array(r1.suffix(8)) + Array(r2.suffix(8)))
    }

    /// The LE Secure Connections confirm value function f4 (U, V: public key X coordinates; X: a nonce; Z: 0, or
    /// the passkey bit with 0x80 set). Core 5.4, Vol 3, Part H, 2.2.6.
    public static func f4(u: [UInt8], v: [UInt8], x: [UInt8], z: UInt8) throws(Failure) -> [UInt8] {
        guard u.count == 32, v.count == 32 else { throw Failure(.invalidInput, "f4: U and V have 32 octets") }
        return try aesCMAC(key: x, u + v + [z])
    }

    /// The LE Secure Connections key generation function f5: the MacKey and the LTK from the DHKey W, the nonces and
    /// the two addresses (7 octets each: the address type octet, then the address). Core 5.4, Vol 3, Part H, 2.2.7.
    public static func f5(w: [UInt8], n1: [UInt8], n2: [UInt8], a1: [UInt8], a2: [UInt8]) throws(Failure) -> (macKey: [UInt8], ltk: [UInt8]) {
        guard w.count == 32, n1.count == 16, n2.count == 16, a1.count == 7, a2.count == 7 else {
            throw Failure(.invalidInput, "f5: W 32, N1 and N2 16, A1 and A2 7 octets are needed")
        }
        let salt: [UInt8] = [0x6C, 0x88, 0x83, 0x91, 0xAA, 0xF5, 0xA5, 0x38, 0x60, 0x37, 0x0B, 0xDB, 0x5A, 0x60, 0x83, 0xBE]
        let t = try aesCMAC(key: salt, w)
        let keyID: [UInt8] = [0x62, 0x74, 0x6C, 0x65]   // "btle"
        let rest = keyID + n1 + n2 + a1 + a2 + [0x01, 0x00]   // Length = 256
        return (try aesCMAC(key: t, [0x00] + rest), try aesCMAC(key: t, [0x01] + rest))
    }

    /// The LE Secure Connections check value function f6. `r` is the passkey or OOB value (or 0), `ioCap` the
    /// AuthReq, OOB data flag and IO capability (3 octets). Core 5.4, Vol 3, Part H, 2.2.8.
    public static func f6(w: [UInt8], n1: [UInt8], n2: [UInt8], r: [UInt8], ioCap: [UInt8], a1: [UInt8], a2: [UInt8]) throws(Failure) -> [UInt8] {
        guard n1.count == 16, n2.count == 16, r.count == 16, ioCap.count == 3, a1.count == 7, a2.count == 7 else {
            throw Failure(.invalidInput, "f6: N1, N2 and R 16, IOcap 3, A1 and A2 7 octets are needed")
        }
        return try aesCMAC(key: w, n1 + n2 + r + ioCap + a1 + a2)
    }

    /// The LE Secure Connections numeric comparison value function g2: the six-digit number is its value mod 10⁶.
    /// Core 5.4, Vol 3, Part H, 2.2.9.
    public static func g2(u: [UInt8], v: [UInt8], x: [UInt8], y: [UInt8]) throws(Failure) -> UInt32 {
        guard u.count == 32, v.count == 32, y.count == 16 else { throw Failure(.invalidInput, "g2: U and V 32, Y 16 octets are needed") }
        let mac = try aesCMAC(key: x, u + v + y)
        return mac.suffix(4).reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// The link key conversion function h6. Core 5.4, Vol 3, Part H, 2.2.10.
    public static func h6(w: [UInt8], keyID: [UInt8]) throws(Failure) -> [UInt8] {
        guard keyID.count == 4 else { throw Failure(.invalidInput, "h6: keyID has 4 octets") }
        return try aesCMAC(key: w, keyID)
    }

    /// The link key conversion function h7. Core 5.4, Vol 3, Part H, 2.2.11.
    public static func h7(salt: [UInt8], w: [UInt8]) throws(Failure) -> [UInt8] {
        try aesCMAC(key: salt, w)
    }
}

/// A P-256 key pair for LE Secure Connections, and the Diffie-Hellman key with a peer's public key.
/// Core 5.4, Vol 3, Part H, 2.3.5.6.1.
public struct SMPKeyPair: Sendable {
    private let key: P256.KeyAgreement.PrivateKey

    /// A key pair from a private key (32 octets, most significant first): pass random octets to make a new one,
    /// or the specification's debug key.
    public init(privateKey: [UInt8]) throws(SMPCrypto.Failure) {
        do {
            key = try P256.KeyAgreement.PrivateKey(rawRepresentation: privateKey)
        } catch {
            throw SMPCrypto.Failure(.invalidInput, "not a P-256 private key: \(error)")
        }
    }

    /// The public key's X coordinate (32 octets, most significant first).
    public var x: [UInt8] { Array(key.publicKey.rawRepresentation.prefix(32)) }
    /// The public key's Y coordinate (32 octets, most significant first).
    public var y: [UInt8] { Array(key.publicKey.rawRepresentation.suffix(32)) }

    /// The DHKey (the X coordinate of the shared point, 32 octets, most significant first) with the peer's public
    /// key. The peer's key is validated first: it must be a point on the curve (the point at infinity cannot be
    /// written as X and Y) and must not be this pair's own public key (the reflection attack).
    public func dhKey(peerX: [UInt8], peerY: [UInt8]) throws(SMPCrypto.Failure) -> [UInt8] {
        guard peerX.count == 32, peerY.count == 32 else { throw SMPCrypto.Failure(.invalidInput, "a public key coordinate has 32 octets") }
        guard peerX != x || peerY != y else { throw SMPCrypto.Failure(.invalidInput, "the peer's public key is our own") }
        let peer: P256.KeyAgreement.PublicKey
        do {
            peer = try P256.KeyAgreement.PublicKey(rawRepresentation: peerX + peerY)
        } catch {
            throw SMPCrypto.Failure(.invalidInput, "the peer's public key is not a point on P-256")
        }
        do {
            return try key.sharedSecretFromKeyAgreement(with: peer).withUnsafeBytes { Array($0) }
        } catch {
            throw SMPCrypto.Failure(.cryptography, "Diffie-Hellman: \(error)")
        }
    }
}

/// The kind of an ``SMPCrypto/Failure``: an open struct, so a release may add kinds.
public struct SMPCryptoFailureCode: BLEErrorCode {
    private enum Backing: Hashable, Sendable {
        case invalidInput
        case cryptography
    }

    private let backing: Backing
    private init(_ backing: Backing) { self.backing = backing }

    /// An input of the wrong length or value (a key, a coordinate, random octets).
    /// ``BLEErrorCategory/invalidInput``.
    public static let invalidInput = SMPCryptoFailureCode(.invalidInput)
    /// The cryptographic library refused the operation. ``BLEErrorCategory/failure``.
    public static let cryptography = SMPCryptoFailureCode(.cryptography)

    public var category: BLEErrorCategory {
        switch backing {
        case .invalidInput: .invalidInput
        case .cryptography: .failure
        }
    }

    /// `invalidInput` or `cryptography`.
    public var description: String {
        switch backing {
        case .invalidInput: "invalidInput"
        case .cryptography: "cryptography"
        }
    }
}
