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
    /// The address the peer had on the link it paired on, with its type: what it advertised and connected from then.
    /// A device without privacy may distribute one identity (say, its public address) and go on using another address
    /// on the air (say, a static random one); its bond is found under both. `nil` for bonds stored before this was kept.
    public var pairedThrough: LEAddress?
    /// The key this side encrypts with as central: the Secure Connections LTK, or the LTK the peer distributed in
    /// LE legacy pairing (with its EDIV and Rand).
    public var peerKey: BondKey?
    /// The key this side gives as peripheral when the peer's controller asks with its EDIV and Rand: the Secure
    /// Connections LTK (EDIV and Rand 0), or the LTK this side distributed in LE legacy pairing.
    public var localKey: BondKey?
    /// The peer's IRK (most significant octet first), to resolve its resolvable private addresses. Never all zero:
    /// a device that does not use privacy may distribute an all-zero IRK (Core 5.4, Vol 3, Part H, 2.4.2.1 and Part C,
    /// 10.7), which is no key and is stored as `nil`.
    public var peerIdentityResolvingKey: [UInt8]? {
        didSet { if let key = peerIdentityResolvingKey, !ResolvablePrivateAddress.isIdentityResolvingKey(key) { peerIdentityResolvingKey = nil } }
    }
    /// The peer's CSRK (most significant octet first), to check its signed writes.
    public var peerSignatureKey: [UInt8]?
    /// The security the pairing reached (what a link encrypted with these keys has).
    public var security: SMPSecurityLevel
    /// When the bond was made, in seconds since 1970.
    public var created: Double
    /// What this side's GATT server keeps for the peer as a bonded client between connections; `nil` until it has
    /// anything to keep. Core 5.4, Vol 3, Part G, 2.5.2.1, 7.1 and 7.2.
    public var gattClient: BondedGATTClient?

    /// Creates a bond from its fields. An all-zero `peerIdentityResolvingKey` is no key: it is stored as `nil`.
    public init(local: LEAddress, peer: LEAddress, pairedThrough: LEAddress? = nil, peerKey: BondKey?, localKey: BondKey?,
                peerIdentityResolvingKey: [UInt8]? = nil, peerSignatureKey: [UInt8]? = nil, security: SMPSecurityLevel,
                created: Double, gattClient: BondedGATTClient? = nil) {
        self.local = local
        self.peer = peer
        self.pairedThrough = pairedThrough
        self.peerKey = peerKey
        self.localKey = localKey
        self.peerIdentityResolvingKey = peerIdentityResolvingKey.flatMap { ResolvablePrivateAddress.isIdentityResolvingKey($0) ? $0 : nil }
        self.peerSignatureKey = peerSignatureKey
        self.security = security
        self.created = created
        self.gattClient = gattClient
    }

    /// Whether a link whose peer has the address `address` is a link with this bond's device, without resolving: the
    /// identity address, or the address it paired through.
    public func matches(linkAddress address: LEAddress) -> Bool {
        address == peer || address == pairedThrough
    }

    /// The bond for a link whose peer has the address `address`, among `bonds`: the one whose identity address it is,
    /// else the one it paired through, else the one whose IRK resolves it (a resolvable private address). All-zero
    /// IRKs resolve nothing.
    public static func find(_ address: LEAddress, among bonds: [Bond]) -> Bond? {
        if let bond = bonds.first(where: { $0.peer == address }) { return bond }
        if let bond = bonds.first(where: { $0.pairedThrough == address }) { return bond }
        return ResolvablePrivateAddress.resolve(address, among: bonds.compactMap { bond in
            bond.peerIdentityResolvingKey.map { (irk: $0, value: bond) }
        })
    }
}

/// What a GATT server keeps for a bonded client between its connections: the client's Service Changed subscription
/// (Core 5.4, Vol 3, Part G, 7.1), the Client Supported Features it wrote (7.2), and the Database Hash of the database
/// it last knew, so that it is change-unaware on its next connection when the database changed meanwhile, across a
/// restart of the server too (2.5.2.1).
public struct BondedGATTClient: Sendable, Hashable {
    /// The client's Client Characteristic Configuration of Service Changed (bit 1: indications).
    public var serviceChangedConfiguration: UInt16
    /// The Client Supported Features the client wrote (bit 0 robust caching).
    public var clientSupportedFeatures: UInt8
    /// The Database Hash (16 octets, as the characteristic's value) of the database the client was last aware of;
    /// `nil` when unknown.
    public var databaseHash: [UInt8]?

    /// Creates the state from its fields.
    public init(serviceChangedConfiguration: UInt16 = 0, clientSupportedFeatures: UInt8 = 0, databaseHash: [UInt8]? = nil) {
        self.serviceChangedConfiguration = serviceChangedConfiguration
        self.clientSupportedFeatures = clientSupportedFeatures
        self.databaseHash = databaseHash
    }
}

/// Where bonds and this side's identity resolving keys live. Calls are synchronous and short (a file read or an
/// atomic file write at most); a store is shared by every host using it, so implementations synchronise themselves.
public protocol BondStore: Sendable {
    /// Every bond, of every local identity.
    func allBonds() throws(BondStoreError) -> [Bond]
    /// Saves `bond`, replacing the bond of the same local identity and peer.
    func save(_ bond: Bond) throws(BondStoreError)
    /// Changes the bond of `local` with `peer` (its identity address) in place; returns whether there was one. The
    /// default reads the bonds and saves the changed one; a store shared between tasks does both at once.
    @discardableResult
    func updateBond(local: LEAddress, peer: LEAddress, _ change: (inout Bond) -> Void) throws(BondStoreError) -> Bool
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

    @discardableResult
    public func updateBond(local: LEAddress, peer: LEAddress, _ change: (inout Bond) -> Void) throws(BondStoreError) -> Bool {
        guard var bond = try allBonds().first(where: { $0.local == local && $0.peer == peer }) else { return false }
        let before = bond
        change(&bond)
        if bond != before { try save(bond) }
        return true
    }
}

/// Why a bond store could not read or write.
public typealias BondStoreError = BLEFailure<BondStoreErrorCode>

/// The kind of a ``BondStoreError``: an open struct, so a release may add kinds.
public struct BondStoreErrorCode: BLEErrorCode {
    private enum Backing: Hashable, Sendable {
        case io
        case corrupt
    }

    private let backing: Backing
    private init(_ backing: Backing) { self.backing = backing }

    /// The store could not be read or written (permissions, disk). ``BLEErrorCategory/failure``.
    public static let io = BondStoreErrorCode(.io)
    /// The stored bonds do not decode. ``BLEErrorCategory/failure``.
    public static let corrupt = BondStoreErrorCode(.corrupt)

    public var category: BLEErrorCategory {
        switch backing {
        case .io, .corrupt: .failure
        }
    }

    /// `io` or `corrupt`.
    public var description: String {
        switch backing {
        case .io: "io"
        case .corrupt: "corrupt"
        }
    }
}
