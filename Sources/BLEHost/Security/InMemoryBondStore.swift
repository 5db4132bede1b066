import BLEWire
import Synchronization

/// A bond store that forgets everything when the process ends: for tests, demos and devices that must not bond
/// across runs.
public final class InMemoryBondStore: BondStore {
    private struct Contents {
        var bonds: [Bond] = []
        var identityKeys: [LEAddress: [UInt8]] = [:]
    }

    private let contents = Mutex(Contents())

    /// An empty store.
    public init() {}

    public func allBonds() throws(BondStoreError) -> [Bond] { contents.withLock { $0.bonds } }

    public func save(_ bond: Bond) throws(BondStoreError) {
        contents.withLock { c in
            c.bonds.removeAll { $0.local == bond.local && $0.peer == bond.peer }
            c.bonds.append(bond)
        }
    }

    @discardableResult
    public func updateBond(local: LEAddress, peer: LEAddress, _ change: (inout Bond) -> Void) throws(BondStoreError) -> Bool {
        contents.withLock { c in
            guard let index = c.bonds.firstIndex(where: { $0.local == local && $0.peer == peer }) else { return false }
            change(&c.bonds[index])
            return true
        }
    }

    @discardableResult
    public func removeBonds(peer: LEAddress, local: LEAddress?) throws(BondStoreError) -> Int {
        contents.withLock { c in
            let before = c.bonds.count
            c.bonds.removeAll { $0.peer == peer && (local == nil || $0.local == local) }
            return before - c.bonds.count
        }
    }

    public func identityResolvingKey(local: LEAddress) throws(BondStoreError) -> [UInt8]? {
        contents.withLock { $0.identityKeys[local] }
    }

    public func setIdentityResolvingKey(_ key: [UInt8], local: LEAddress) throws(BondStoreError) {
        contents.withLock { $0.identityKeys[local] = key }
    }
}
