import BLEProtocols
import BLEWire

/// A long-term key with the EDIV and Rand that name it in LE Enable Encryption and the LE Long Term Key Request.
/// Core 5.4, Vol 3, Part H, 2.4.2. The key is most significant octet first.
public struct BondKey: Sendable, Hashable {
    /// The LTK, 16 octets, most significant first (masked to the key size).
    public var longTermKey: [UInt8]
    /// The encrypted diversifier (0 for LE Secure Connections).
    public var ediv: UInt16
    /// The random number (0 for LE Secure Connections).
    public var rand: UInt64

    /// Creates a bond key from an LTK (most significant octet first) and the EDIV and Rand that name it; both stay 0
    /// for LE Secure Connections.
    public init(longTermKey: [UInt8], ediv: UInt16 = 0, rand: UInt64 = 0) {
        self.longTermKey = longTermKey
        self.ediv = ediv
        self.rand = rand
    }
}

/// What two devices keep after pairing with bonding: the keys to encrypt their next links without pairing again,
/// and the peer's identity to recognise it under a new resolvable private address. Core 5.4, Vol 3, Part C, 9.4.
public struct Bond: Sendable, Hashable {
    /// This side's identity address when the bond was made (the bond belongs to this local identity).
    public var local: LEAddress
    /// The peer's identity address: the one it distributed (Identity Address Information), or the address it paired
    /// from when it distributed none.
    public var peer: LEAddress
    /// The key this side encrypts with as central: the Secure Connections LTK, or the LTK the peer distributed in
    /// LE legacy pairing (with its EDIV and Rand).
    public var peerKey: BondKey?
    /// The key this side gives as peripheral when the peer's controller asks with its EDIV and Rand: the Secure
    /// Connections LTK (EDIV and Rand 0), or the LTK this side distributed in LE legacy pairing.
    public var localKey: BondKey?
    /// The peer's IRK (most significant octet first), to resolve its resolvable private addresses.
    public var peerIdentityResolvingKey: [UInt8]?
    /// The peer's CSRK (most significant octet first), to check its signed writes.
    public var peerSignatureKey: [UInt8]?
    /// The security the pairing reached (what a link encrypted with these keys has).
    public var security: SMPSecurityLevel
    /// When the bond was made, in seconds since 1970.
    public var created: Double

    /// Creates a bond from its fields.
    public init(local: LEAddress, peer: LEAddress, peerKey: BondKey?, localKey: BondKey?, peerIdentityResolvingKey: [UInt8]? = nil,
                peerSignatureKey: [UInt8]? = nil, security: SMPSecurityLevel, created: Double) {
        self.local = local
        self.peer = peer
        self.peerKey = peerKey
        self.localKey = localKey
        self.peerIdentityResolvingKey = peerIdentityResolvingKey
        self.peerSignatureKey = peerSignatureKey
        self.security = security
        self.created = created
    }
}

/// Where bonds and this side's identity resolving keys live. Calls are synchronous and short (a file read or an
/// atomic file write at most); a store is shared by every host using it, so implementations synchronise themselves.
public protocol BondStore: Sendable {
    /// Every bond, of every local identity.
    func allBonds() throws(BondStoreError) -> [Bond]
    /// Saves `bond`, replacing the bond of the same local identity and peer.
    func save(_ bond: Bond) throws(BondStoreError)
    /// Removes the bonds with `peer` (of `local` only, when given); returns how many went.
    @discardableResult
    func removeBonds(peer: LEAddress, local: LEAddress?) throws(BondStoreError) -> Int
    /// This side's IRK for the local identity `local`, if one was stored.
    func identityResolvingKey(local: LEAddress) throws(BondStoreError) -> [UInt8]?
    /// Stores this side's IRK for the local identity `local`.
    func setIdentityResolvingKey(_ key: [UInt8], local: LEAddress) throws(BondStoreError)
}

extension BondStore {
    /// The bonds of the local identity `local`.
    public func bonds(local: LEAddress) throws(BondStoreError) -> [Bond] {
        try allBonds().filter { $0.local == local }
    }
}

/// Why a bond store could not read or write.
public struct BondStoreError: BLEError {
    /// What went wrong.
    public enum Code: Sendable, Hashable {
        /// The store could not be read or written (permissions, disk).
        case io
        /// The stored bonds do not decode.
        case corrupt
    }

    /// What went wrong.
    public var code: Code
    /// A human-readable explanation.
    public var reason: String
    /// The source file that raised the error.
    public var file: String
    /// The source line that raised the error.
    public var line: Int

    /// Creates an error.
    public init(_ code: Code, _ reason: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.reason = reason
        self.file = file
        self.line = line
    }
}
