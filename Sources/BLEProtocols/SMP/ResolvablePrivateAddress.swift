import BLEWire

/// Resolvable private addresses: making one from an IRK, and recognising a peer behind one.
/// Core 5.4, Vol 6, Part B, 1.3.2.2 (the address) and Vol 3, Part H, 2.2.2 (the hash function ah).
///
/// A resolvable private address is `prand || hash` (most significant octet first): the 24-bit `prand`, whose two most
/// significant bits are 0b01, followed by `hash = ah(IRK, prand)`. Anyone holding the IRK can recompute the hash from
/// the prand and so recognise the device; anyone else sees an address that changes every rotation.
///
/// These functions are pure: the random octets are passed in, and nothing here reads a clock.
public enum ResolvablePrivateAddress {
    /// The mask of the random part of prand (its 22 least significant bits).
    private static let randomMask: UInt32 = 0x3F_FFFF

    /// Whether `key` can be an IRK: 16 octets, not all zero. A device that does not use privacy may distribute an
    /// all-zero IRK (Core 5.4, Vol 3, Part H, 2.4.2.1; Vol 3, Part C, 10.7): that is no key, and nothing is resolved
    /// with it, kept as a resolving key or made from it.
    public static func isIdentityResolvingKey(_ key: [UInt8]) -> Bool {
        key.count == 16 && key.contains { $0 != 0 }
    }

    /// Makes a resolvable private address from this side's IRK and three random octets.
    ///
    /// The octets become prand (most significant first): its two most significant bits are forced to 0b01 and the
    /// other 22 bits are kept. The specification forbids a random part of all zeros or all ones
    /// (Core 5.4, Vol 6, Part B, 1.3.2.2); rather than fail, this function then flips the least significant bit
    /// (all zeros becomes …01, all ones becomes …10), so every input yields a valid address. Two of the 2²² values
    /// are thereby twice as likely as the others, which does not help an observer link addresses.
    ///
    /// - Parameters:
    ///   - irk: The identity resolving key, 16 octets, most significant first.
    ///   - random: Three octets from a cryptographically secure random source.
    /// - Returns: The address, of type ``LEAddressType/random``.
    /// - Throws: ``SMPCrypto/Failure`` when `irk` does not have 16 octets or is all zero (no IRK), or `random` does not
    ///   have 3.
    public static func make(irk: [UInt8], random: [UInt8]) throws(SMPCrypto.Failure) -> LEAddress {
        guard irk.count != 16 || isIdentityResolvingKey(irk) else {
            throw SMPCrypto.Failure(.invalidInput, "resolvable private address: an all-zero IRK is no IRK")
        }
        guard random.count == 3 else {
            throw SMPCrypto.Failure(.invalidInput, "resolvable private address: 3 random octets are needed (\(random.count))")
        }
        var value = random.reduce(UInt32(0)) { $0 << 8 | UInt32($1) } & randomMask
        if value == 0 {
            value = 1
        } else if value == randomMask {
            value = randomMask ^ 1
        }
        value |= 0x40_0000   // the two most significant bits: 0b01
        let prand: [UInt8] = [UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 8),
                              UInt8(truncatingIfNeeded: value)]
        let hash = try SMPCrypto.ah(irk: irk, prand: prand)
        guard let address = BluetoothAddress(bigEndian: prand + hash) else {
            // ah always returns 3 octets, so the address always has 6.
            throw SMPCrypto.Failure(.invalidInput, "resolvable private address: ah returned \(hash.count) octets")
        }
        return LEAddress(address, type: .random)
    }

    /// Whether `address` is a resolvable private address made with `irk`.
    ///
    /// Only addresses of type ``LEAddressType/random`` whose kind is ``LEAddress/Kind/randomResolvable`` (top bits
    /// 0b01, a random part neither all zeros nor all ones) can resolve; public addresses, static random addresses,
    /// non-resolvable private addresses and identity types never do. An `irk` that does not have 16 octets, or is all
    /// zero (no IRK), resolves nothing.
    public static func resolves(_ address: LEAddress, irk: [UInt8]) -> Bool {
        guard let (prand, hash) = parts(of: address) else { return false }
        return matches(prand: prand, hash: hash, irk: irk)
    }

    /// The value of the first entry whose IRK resolves `address`, or `nil` when none does (or the address is not a
    /// resolvable private address).
    ///
    /// Use it to find the bond, or the peer, behind an address seen on the air:
    /// `ResolvablePrivateAddress.resolve(address, among: peers.map { (irk: $0.irk, value: $0) })`.
    ///
    /// - Parameters:
    ///   - address: The address to resolve.
    ///   - entries: IRKs (16 octets, most significant first) with the value each stands for. Entries whose IRK does not
    ///     have 16 octets, or is all zero, never match.
    public static func resolve<Value>(_ address: LEAddress, among entries: some Sequence<(irk: [UInt8], value: Value)>) -> Value? {
        guard let (prand, hash) = parts(of: address) else { return nil }
        for entry in entries where matches(prand: prand, hash: hash, irk: entry.irk) {
            return entry.value
        }
        return nil
    }

    /// The prand and hash of a resolvable private address, or `nil` for any other address.
    private static func parts(of address: LEAddress) -> (prand: [UInt8], hash: [UInt8])? {
        guard address.type == .random, address.kind == .randomResolvable else { return nil }
        let bytes = address.address.bytes
        return (Array(bytes.prefix(3)), Array(bytes.suffix(3)))
    }

    private static func matches(prand: [UInt8], hash: [UInt8], irk: [UInt8]) -> Bool {
        guard isIdentityResolvingKey(irk) else { return false }
        guard let computed = try? SMPCrypto.ah(irk: irk, prand: prand) else { return false }
        return computed == hash
    }
}

/// When to replace this side's resolvable private address: a sans-I/O timer over readings of a monotonic clock that
/// the caller passes in. Core 5.4, Vol 3, Part C, 10.7.1.2 (a new address every `TGAP(private_addr_int)`, whose
/// recommended value is 15 minutes; Vol 3, Part C, Appendix A).
///
/// ```swift
/// var rotation = PrivateAddressRotation()
/// if rotation.isDue(at: clock.now - origin) {
///     // make and set a new address, then:
///     rotation.didSetAddress(at: clock.now - origin)
/// }
/// ```
public struct PrivateAddressRotation: Sendable, Hashable {
    /// The recommended rotation interval, `TGAP(private_addr_int)`: 15 minutes.
    public static let recommendedInterval: Duration = .seconds(15 * 60)

    /// How long one address is used. An interval of zero or less makes a new address due at every reading.
    public var interval: Duration
    /// The reading at which the current address was set, or `nil` before the first.
    public private(set) var lastChange: Duration?

    /// A rotation that has not set an address yet (so one is due at once).
    /// - Parameter interval: How long one address is used; 15 minutes unless given.
    public init(interval: Duration = PrivateAddressRotation.recommendedInterval) {
        self.interval = interval
        self.lastChange = nil
    }

    /// Whether a new address is due at the reading `now`: no address was set yet, `interval` has passed since the
    /// last one, or `now` is earlier than the last change (the clock's origin moved, so how long the address has
    /// been in use is unknown, and rotating is the safe answer).
    /// - Parameter now: A reading of a monotonic clock, as the time since an origin of the caller's choosing.
    public func isDue(at now: Duration) -> Bool {
        guard let lastChange else { return true }
        guard now >= lastChange else { return true }
        return now - lastChange >= interval
    }

    /// How long after the reading `now` the next address is due: zero when it is already due.
    /// - Parameter now: A reading of the same clock as ``isDue(at:)``.
    public func timeUntilDue(at now: Duration) -> Duration {
        guard !isDue(at: now), let lastChange else { return .zero }
        return interval - (now - lastChange)
    }

    /// Records that a new address was set at the reading `now`.
    /// - Parameter now: A reading of the same clock as ``isDue(at:)``.
    public mutating func didSetAddress(at now: Duration) {
        lastChange = now
    }
}
