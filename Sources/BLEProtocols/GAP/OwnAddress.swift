import BLEWire

/// Which of its addresses this side advertises, scans or initiates with: the Own_Address_Type of LE Set (Extended)
/// Advertising Parameters, LE Set (Extended) Scan Parameters and LE (Extended) Create Connection, and the random
/// address behind it. Core 5.4, Vol 4, Part E, 7.8.5, 7.8.10, 7.8.12, 7.8.53, 7.8.64, 7.8.66; the address kinds are
/// Vol 6, Part B, 1.3.
///
/// The host does privacy itself (it makes the resolvable private addresses), so the two "resolvable or …" values of
/// Own_Address_Type (0x02, 0x03), which ask the controller's resolving list, are never sent: the choice here is made
/// by the host and sent as public (0x00) or random (0x01).
public enum OwnAddress: Sendable, Hashable, CustomStringConvertible {
    /// The default: with privacy on, the resolvable private address; otherwise the identity address (public, or
    /// random static on a controller without a public address).
    case resolvableOrIdentity
    /// The identity address — public, or random static on a controller without a public address — even with privacy
    /// on. One exception: with privacy on and a random static identity, scanning, initiating and legacy advertising
    /// use the resolvable private address (the controller has one random address for them, and privacy holds it);
    /// an extended advertising set, which has a random address of its own, uses the identity.
    case identity
    /// A random address: the resolvable private address with privacy on; otherwise a random static address — the
    /// identity when it is random static, else one this host makes with LE Rand the first time it is needed after
    /// each power-on (Vol 6, Part B, 1.3.2.1) and gives the controller with LE Set Random Address (or, for an
    /// extended advertising set, LE Set Advertising Set Random Address).
    case random

    public var description: String {
        switch self {
        case .resolvableOrIdentity: "resolvable or identity"
        case .identity: "identity"
        case .random: "random"
        }
    }
}
