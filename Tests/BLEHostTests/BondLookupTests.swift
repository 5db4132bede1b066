import BLEHost
import BLEProtocols
import BLEWire
import Testing

/// Finding the bond of a link by the address the link is made with: the identity address, the address the peer paired
/// through, or a resolvable private address one of the bonds' IRKs resolves; an all-zero IRK is no IRK.
@Suite struct BondLookupTests {
    static let local = Fixture.localRandom
    static let publicIdentity = Fixture.peerPublic
    static let staticRandom = Fixture.pairedThrough
    static let irk = Fixture.key(0x60)
    static let zeroIRK = [UInt8](repeating: 0, count: 16)

    static func bond(peer: LEAddress, through: LEAddress? = nil, irk: [UInt8]? = nil, key: UInt8) -> Bond {
        Bond(local: local, peer: peer, pairedThrough: through, peerKey: BondKey(longTermKey: Fixture.key(key)), localKey: nil,
             peerIdentityResolvingKey: irk, security: SMPSecurityLevel(secureConnections: true, authenticated: true, keySize: 16),
             created: 1_790_000_000)
    }

    /// A device known by its public address that paired through a static random one and sent an all-zero IRK.
    static let band = bond(peer: publicIdentity, through: staticRandom, irk: zeroIRK, key: 0x10)
    /// A private device: an IRK, paired through a resolvable private address long gone.
    static let privateDevice = bond(peer: Fixture.peerRandom, through: LEAddress(BluetoothAddress("4A:00:00:00:00:01") ?? .zero, type: .random),
                                    irk: irk, key: 0x20)

    @Test func theBondIsFoundByTheIdentityAddress() {
        #expect(Bond.find(Self.publicIdentity, among: [Self.privateDevice, Self.band]) == Self.band)
        #expect(Bond.find(Fixture.peerRandom, among: [Self.band, Self.privateDevice]) == Self.privateDevice)
    }

    @Test func theBondIsFoundByTheAddressThePeerPairedThrough() {
        #expect(Bond.find(Self.staticRandom, among: [Self.privateDevice, Self.band]) == Self.band)
        #expect(Self.band.matches(linkAddress: Self.staticRandom) && Self.band.matches(linkAddress: Self.publicIdentity))
        // The same 48 bits as another type are another device.
        let publicBits = LEAddress(Self.staticRandom.address, type: .public)
        #expect(Bond.find(publicBits, among: [Self.band]) == nil)
        #expect(!Self.band.matches(linkAddress: publicBits))
    }

    @Test func theIdentityAddressComesBeforeThePairedThroughAddress() {
        // One device paired through another's identity address: the link's address names the other's bond first.
        let other = Self.bond(peer: Self.staticRandom, key: 0x30)
        #expect(Bond.find(Self.staticRandom, among: [Self.band, other]) == other)
    }

    @Test func theBondIsFoundByResolvingAPrivateAddressWithItsIRK() throws {
        let rpa = try ResolvablePrivateAddress.make(irk: Self.irk, random: [0x12, 0x34, 0x56])
        #expect(Bond.find(rpa, among: [Self.band, Self.privateDevice]) == Self.privateDevice)
        let stranger = try ResolvablePrivateAddress.make(irk: Fixture.key(0x70), random: [0x12, 0x34, 0x56])
        #expect(Bond.find(stranger, among: [Self.band, Self.privateDevice]) == nil)
    }

    @Test func anAllZeroIRKIsNoIRK() throws {
        #expect(Self.band.peerIdentityResolvingKey == nil)
        var changed = Self.privateDevice
        changed.peerIdentityResolvingKey = Self.zeroIRK
        #expect(changed.peerIdentityResolvingKey == nil)
        #expect(!ResolvablePrivateAddress.isIdentityResolvingKey(Self.zeroIRK))
        #expect(ResolvablePrivateAddress.isIdentityResolvingKey(Self.irk))
        #expect(!ResolvablePrivateAddress.isIdentityResolvingKey(Array(Self.irk.prefix(15))))
        // No address is made from it, and none resolves with it: an attacker's address computed with the zero key
        // does not find a bond, even one given the zero key behind the Bond type's back.
        #expect(throws: SMPCrypto.Failure.self) { try ResolvablePrivateAddress.make(irk: Self.zeroIRK, random: [1, 2, 3]) }
        let prand: [UInt8] = [0x41, 0x02, 0x03]
        let hash = try SMPCrypto.ah(irk: Self.zeroIRK, prand: prand)
        let forged = LEAddress(try #require(BluetoothAddress(bigEndian: prand + hash)), type: .random)
        #expect(!ResolvablePrivateAddress.resolves(forged, irk: Self.zeroIRK))
        #expect(ResolvablePrivateAddress.resolve(forged, among: [(irk: Self.zeroIRK, value: 1)]) == nil)
        #expect(Bond.find(forged, among: [Self.band, Self.privateDevice]) == nil)
    }

    /// A store that only has the protocol's default ``BondStore/updateBond(local:peer:_:)``.
    final class PlainStore: BondStore {
        let inner = InMemoryBondStore()
        func allBonds() throws(BondStoreError) -> [Bond] { try inner.allBonds() }
        func save(_ bond: Bond) throws(BondStoreError) { try inner.save(bond) }
        func removeBonds(peer: LEAddress, local: LEAddress?) throws(BondStoreError) -> Int { try inner.removeBonds(peer: peer, local: local) }
        func identityResolvingKey(local: LEAddress) throws(BondStoreError) -> [UInt8]? { try inner.identityResolvingKey(local: local) }
        func setIdentityResolvingKey(_ key: [UInt8], local: LEAddress) throws(BondStoreError) {
            try inner.setIdentityResolvingKey(key, local: local)
        }
    }

    @Test(arguments: [false, true])
    func updateBondChangesOnlyTheNamedBond(plain: Bool) throws {
        let store: any BondStore = plain ? PlainStore() : InMemoryBondStore()
        try store.save(Self.band)
        try store.save(Self.privateDevice)
        let state = BondedGATTClient(serviceChangedConfiguration: 2, clientSupportedFeatures: 1, databaseHash: Fixture.key(0x50))
        #expect(try store.updateBond(local: Self.local, peer: Self.publicIdentity) { $0.gattClient = state })
        #expect(try !store.updateBond(local: Self.local, peer: Fixture.peerPublicOther) { $0.gattClient = state })
        let bonds = try store.allBonds()
        #expect(bonds.first { $0.peer == Self.publicIdentity }?.gattClient == state)
        #expect(bonds.first { $0.peer == Fixture.peerRandom }?.gattClient == nil)
        #expect(bonds.count == 2)
    }
}

extension Fixture {
    static let peerPublicOther = address("00:1A:7D:DA:71:14", .public)
}
