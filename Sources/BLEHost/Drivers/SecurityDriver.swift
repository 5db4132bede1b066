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

/// Pairing and encryption state of one link.
struct LinkSecurityState {
    /// The pairing under way (or the last one, finished).
    var pairing: SMPPairing?
    /// The Security Manager timed out on this link: nothing more is sent or accepted on SMP. Core 5.4, Vol 3, Part H, 3.4.
    var timedOut = false
    /// SMP PDUs held while the pairing agent decides whether to accept the peer's Pairing Request.
    var backlog: [[UInt8]]?
    /// Responder: the key the pairing produced, for the controller's LE Long Term Key Request.
    var responderKey: [UInt8]?
    /// Responder: the controller asked for the key before the pairing produced it.
    var keyRequested = false
    /// What the link's security becomes when the encryption under way succeeds.
    var pending: SMPSecurityLevel?
    /// Whether the encryption under way uses a bond's key (no pairing).
    var pendingFromBond = false
    /// An encryption (LE Enable Encryption as central, or an answered LTK request as peripheral) is under way.
    var encrypting = false
    /// The link's security now.
    var current = LinkSecurity()
    /// Callers of ``HCIHost/pair(_:mitm:force:)`` waiting for the outcome.
    var waiters: [CheckedContinuation<LinkSecurity, any Error>] = []

    /// Whether a pairing or an encryption is under way.
    var isBusy: Bool { encrypting || backlog != nil || pairing.map { !$0.isFinished } == true }
}
