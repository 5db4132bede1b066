import Crypto

/// A Noise cipher state: ChaCha20-Poly1305 with a key and a counting nonce (the Noise Protocol Framework, revision
/// 34, sections 5.1 and 12.3: the nonce is 32 zero bits followed by the 64-bit counter, little-endian).
public struct NoiseCipherState: Sendable {
    private var key: SymmetricKey?
    private var nonce: UInt64 = 0

    init(key: [UInt8]? = nil) { self.key = key.map { SymmetricKey(data: $0) } }

    /// Whether a key is set (before one is, encryption is the identity).
    var hasKey: Bool { key != nil }

    private func nonceValue() throws(ESPHomeAPIError) -> ChaChaPoly.Nonce {
        var bytes = [UInt8](repeating: 0, count: 12)
        for i in 0..<8 { bytes[4 + i] = UInt8(truncatingIfNeeded: nonce >> UInt64(8 * i)) }
        do { return try ChaChaPoly.Nonce(data: bytes) } catch { throw ESPHomeAPIError(.cryptography, "the nonce could not be made") }
    }

    /// Encrypts `plaintext` with associated data `ad` (ciphertext followed by the 16-byte tag).
    public mutating func encrypt(_ plaintext: [UInt8], ad: [UInt8] = []) throws(ESPHomeAPIError) -> [UInt8] {
        guard let key else { return plaintext }
        guard nonce < UInt64.max else { throw ESPHomeAPIError(.cryptography, "the cipher's nonces are used up") }
        let box: ChaChaPoly.SealedBox
        do { box = try ChaChaPoly.seal(plaintext, using: key, nonce: try nonceValue(), authenticating: ad) } catch {
            throw ESPHomeAPIError(.cryptography, "encryption failed")
        }
        nonce += 1
        return Array(box.ciphertext) + Array(box.tag)
    }

    /// Decrypts and authenticates `ciphertext` (with its tag) against `ad`; throws when the tag does not match.
    public mutating func decrypt(_ ciphertext: [UInt8], ad: [UInt8] = []) throws(ESPHomeAPIError) -> [UInt8] {
        guard let key else { return ciphertext }
        guard ciphertext.count >= 16 else { throw ESPHomeAPIError(.malformed, "an encrypted frame is shorter than its tag") }
        guard nonce < UInt64.max else { throw ESPHomeAPIError(.cryptography, "the cipher's nonces are used up") }
        let plaintext: [UInt8]
        do {
            let box = try ChaChaPoly.SealedBox(nonce: try nonceValue(), ciphertext: ciphertext.dropLast(16), tag: ciphertext.suffix(16))
            plaintext = Array(try ChaChaPoly.open(box, using: key, authenticating: ad))
        } catch {
            throw ESPHomeAPIError(.malformed, "decryption failed (wrong key or altered frame)")
        }
        nonce += 1
        return plaintext
    }
}

/// The handshake of `Noise_NNpsk0_25519_ChaChaPoly_SHA256` (Noise revision 34, sections 5.2, 5.3 and 9), the only
/// pattern the ESPHome native API uses: `-> psk, e` then `<- e, ee`, both with empty payloads. Either role; the
/// ephemeral key is given (made by the caller), so that the machine has no randomness of its own.
public struct NoiseNNpsk0Handshake: Sendable {
    /// The protocol name hashed into the initial state.
    public static let protocolName = "Noise_NNpsk0_25519_ChaChaPoly_SHA256"
    /// The prologue ESPHome mixes in: `NoiseAPIInit` and two zero bytes.
    public static let esphomePrologue: [UInt8] = Array("NoiseAPIInit".utf8) + [0, 0]
    /// The length of both handshake messages: a 32-byte public key and a 16-byte tag.
    public static let messageLength = 48

    /// Which side.
    public enum Role: Sendable { case initiator, responder }

    private let role: Role
    private let psk: [UInt8]
    private let ephemeral: Curve25519.KeyAgreement.PrivateKey
    private var remoteEphemeral: Curve25519.KeyAgreement.PublicKey?
    private var ck: [UInt8]
    private var h: [UInt8]
    private var cipher = NoiseCipherState()

    /// Starts a handshake. `psk` must be 32 bytes.
    public init(role: Role, psk: [UInt8], prologue: [UInt8] = NoiseNNpsk0Handshake.esphomePrologue,
                ephemeral: Curve25519.KeyAgreement.PrivateKey) throws(ESPHomeAPIError) {
        guard psk.count == 32 else { throw ESPHomeAPIError(.invalidInput, "the pre-shared key has \(psk.count) bytes, not 32") }
        self.role = role
        self.psk = psk
        self.ephemeral = ephemeral
        let name = Array(Self.protocolName.utf8)
        // A name longer than the hash is hashed; a shorter one would be padded with zeros (section 5.2).
        h = name.count <= 32 ? name + [UInt8](repeating: 0, count: 32 - name.count) : Self.hash(name)
        ck = h
        mixHash(prologue)
    }

    /// Starts a handshake with the ephemeral private key given as its 32 raw bytes (for fixed keys: test vectors,
    /// fuzzing); throws when `psk` is not 32 bytes or the key is not 32 bytes.
    public init(role: Role, psk: [UInt8], prologue: [UInt8] = NoiseNNpsk0Handshake.esphomePrologue,
                ephemeralKey: [UInt8]) throws(ESPHomeAPIError) {
        let key: Curve25519.KeyAgreement.PrivateKey
        do { key = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: ephemeralKey) } catch {
            throw ESPHomeAPIError(.invalidInput, "an ephemeral key of \(ephemeralKey.count) bytes, not 32")
        }
        try self.init(role: role, psk: psk, prologue: prologue, ephemeral: key)
    }

    /// The ephemeral public key this side sends.
    public var ephemeralPublicKey: [UInt8] { Array(ephemeral.publicKey.rawRepresentation) }

    // MARK: Messages

    /// Initiator: the first message (`psk, e`, empty payload).
    public mutating func writeMessage1() throws(ESPHomeAPIError) -> [UInt8] {
        guard role == .initiator else { throw ESPHomeAPIError(.invalidInput, "only the initiator writes the first message") }
        mixKeyAndHash(psk)
        let e = ephemeralPublicKey
        mixHash(e)
        mixKey(e)
        return e + (try encryptAndHash([]))
    }

    /// Responder: reads the first message; throws when its tag does not verify (a different pre-shared key).
    public mutating func readMessage1(_ message: [UInt8]) throws(ESPHomeAPIError) {
        guard role == .responder else { throw ESPHomeAPIError(.invalidInput, "only the responder reads the first message") }
        guard message.count == Self.messageLength else { throw ESPHomeAPIError(.malformed, "a handshake message of \(message.count) bytes, not 48") }
        mixKeyAndHash(psk)
        let re = Array(message.prefix(32))
        remoteEphemeral = try Self.publicKey(re)
        mixHash(re)
        mixKey(re)
        _ = try decryptAndHash(Array(message.suffix(16)))
    }

    /// Responder: the second message (`e, ee`, empty payload), and the transport ciphers (send, receive).
    public mutating func writeMessage2() throws(ESPHomeAPIError) -> (message: [UInt8], send: NoiseCipherState, receive: NoiseCipherState) {
        guard role == .responder, let remote = remoteEphemeral else { throw ESPHomeAPIError(.invalidInput, "the second message follows the first") }
        let e = ephemeralPublicKey
        mixHash(e)
        mixKey(e)
        mixKey(try dh(remote))
        let message = e + (try encryptAndHash([]))
        let (k1, k2) = split()
        return (message, k2, k1)
    }

    /// Initiator: reads the second message and returns the transport ciphers (send, receive).
    public mutating func readMessage2(_ message: [UInt8]) throws(ESPHomeAPIError) -> (send: NoiseCipherState, receive: NoiseCipherState) {
        guard role == .initiator else { throw ESPHomeAPIError(.invalidInput, "only the initiator reads the second message") }
        guard message.count == Self.messageLength else { throw ESPHomeAPIError(.malformed, "a handshake message of \(message.count) bytes, not 48") }
        let re = Array(message.prefix(32))
        let remote = try Self.publicKey(re)
        mixHash(re)
        mixKey(re)
        mixKey(try dh(remote))
        _ = try decryptAndHash(Array(message.suffix(16)))
        let (k1, k2) = split()
        return (k1, k2)
    }

    /// The handshake hash (the same on both sides after a successful handshake).
    public var handshakeHash: [UInt8] { h }

    // MARK: Symmetric state (section 5.2)

    private static func hash(_ data: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: data)) }

    private static func hmac(_ key: [UInt8], _ data: [UInt8]) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: data, using: SymmetricKey(data: key)))
    }

    /// HKDF of section 4.3 with three outputs.
    private static func hkdf(_ chainingKey: [UInt8], _ input: [UInt8]) -> ([UInt8], [UInt8], [UInt8]) {
        let temp = hmac(chainingKey, input)
        let o1 = hmac(temp, [1])
        let o2 = hmac(temp, o1 + [2])
        let o3 = hmac(temp, o2 + [3])
        return (o1, o2, o3)
    }

    private static func publicKey(_ bytes: [UInt8]) throws(ESPHomeAPIError) -> Curve25519.KeyAgreement.PublicKey {
        do { return try Curve25519.KeyAgreement.PublicKey(rawRepresentation: bytes) } catch {
            throw ESPHomeAPIError(.malformed, "an ephemeral public key is not a Curve25519 key")
        }
    }

    private func dh(_ remote: Curve25519.KeyAgreement.PublicKey) throws(ESPHomeAPIError) -> [UInt8] {
        do {
            let secret = try ephemeral.sharedSecretFromKeyAgreement(with: remote)
            return secret.withUnsafeBytes { Array($0) }
        } catch {
            throw ESPHomeAPIError(.cryptography, "the Diffie-Hellman exchange failed")
        }
    }

    private mutating func mixHash(_ data: [UInt8]) { h = Self.hash(h + data) }

    private mutating func mixKey(_ input: [UInt8]) {
        let (newCK, key, _) = Self.hkdf(ck, input)
        ck = newCK
        cipher = NoiseCipherState(key: key)
    }

    private mutating func mixKeyAndHash(_ input: [UInt8]) {
        let (newCK, temp, key) = Self.hkdf(ck, input)
        ck = newCK
        mixHash(temp)
        cipher = NoiseCipherState(key: key)
    }

    private mutating func encryptAndHash(_ plaintext: [UInt8]) throws(ESPHomeAPIError) -> [UInt8] {
        let ciphertext = try cipher.encrypt(plaintext, ad: h)
        mixHash(ciphertext)
        return ciphertext
    }

    private mutating func decryptAndHash(_ ciphertext: [UInt8]) throws(ESPHomeAPIError) -> [UInt8] {
        let plaintext = try cipher.decrypt(ciphertext, ad: h)
        mixHash(ciphertext)
        return plaintext
    }

    private func split() -> (NoiseCipherState, NoiseCipherState) {
        let (k1, k2, _) = Self.hkdf(ck, [])
        return (NoiseCipherState(key: k1), NoiseCipherState(key: k2))
    }
}
