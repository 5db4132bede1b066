import BLEProtocols
import BLEWire

/// The host-wide part of the Security Manager (each link's part is its ``LinkSecurityState``): the pairing agent,
/// pairing on demand, the repeated-attempts limiter, each link's Security Manager timer, and the identities found
/// behind peers' resolvable private addresses.
struct SecurityDriver {
    /// The user's part in pairing.
    var agent: any PairingAgent = AutomaticPairingAgent()
    /// Whether GATT client procedures refused for security pair and run again.
    var pairsOnDemand = true
    /// The growing delay between failed pairings, per peer. Core 5.4, Vol 3, Part H, 2.3.6.
    var attempts = SMPAttemptLimiter<LEAddress>()
    /// The Security Manager timer of each link.
    var timers = TimerSet<LinkID>()
    /// The identity behind each resolvable private address seen in advertising reports (`nil`: no bond resolves it).
    var resolvedIdentities: [LEAddress: ResolvedIdentity] = [:]
    /// The origin of the monotonic readings given to ``attempts``.
    let clockOrigin = ContinuousClock.now
}
