import BLEProtocols
import BLEWire

/// The identity found (or not) behind one resolvable private address.
struct ResolvedIdentity {
    var identity: LEAddress?
}

/// LE privacy, host-based: this side's resolvable private address, its rotation, and recognising bonded peers
/// behind theirs. Core 5.4, Vol 3, Part C, 10.7 (privacy feature) and Vol 6, Part B, 1.3.2.2 (resolvable private
/// addresses); no controller resolving list is used.
///
/// With ``SecurityConfiguration/privacy`` on, advertising, scanning and connection commands use the own address type
/// random, and the controller's random address is a resolvable private address made from this side's IRK (the one
/// pairing distributes). When a new one is made, and how advertising and scanning pause around it, is the
/// ``GAPProcedures`` machine's part; the host makes the addresses.
extension HCIHost {
    /// A new resolvable private address from this side's IRK (the GAP machine asks for one before it sets it with
    /// LE Set Random Address); `nil` when there is no IRK (no identity address, or the bond store fails).
    func makePrivateAddress() -> LEAddress? {
        guard let irk = localIdentityResolvingKey() else { return nil }
        do {
            return try ResolvablePrivateAddress.make(irk: irk, random: SecurityManager.secureRandom(3))
        } catch {
            logger.warning("privacy: \(error)")
            return nil
        }
    }

    // MARK: Peers' private addresses

    /// The identity address of the bonded device behind `address`, when it is a resolvable private address that one
    /// of the bonds' IRKs resolves. Results are remembered per address until the bonds change or a scan starts.
    public func resolvedIdentity(of address: LEAddress) -> LEAddress? {
        guard address.type == .random, address.kind == .randomResolvable else { return nil }
        if let known = securityManager.resolvedIdentities[address] { return known.identity }
        let identity = ResolvablePrivateAddress.resolve(address, among: storedBonds().compactMap { bond in
            bond.peerIdentityResolvingKey.map { (irk: $0, value: bond.peer) }
        })
        if securityManager.resolvedIdentities.count >= 64 { securityManager.resolvedIdentities = [:] }
        securityManager.resolvedIdentities[address] = ResolvedIdentity(identity: identity)
        return identity
    }
}
