/// The growing wait between failed pairing attempts with one peer. Core 5.4, Vol 3, Part H, 2.3.6.
///
/// After a pairing with a peer fails, a new pairing from that peer (its Pairing Request or Security Request) is
/// refused with Pairing Failed Repeated Attempts until the wait is over (pass
/// ``SMPPairingFailedReason/repeatedAttempts`` as ``SMPPairing/Configuration/refusal``). Each further failure doubles
/// the wait up to ``maximumDelay``; a successful pairing forgets the peer. Time is injected: `now` is any monotonic
/// clock reading, as a `Duration` since the clock's origin. The number of peers remembered is bounded
/// (``capacity``): the entry whose wait ends first is forgotten to make room.
public struct SMPAttemptLimiter<Peer: Hashable & Sendable>: Sendable {
    private struct Entry: Sendable {
        var delay: Duration
        var notBefore: Duration
    }

    /// The wait after the first failure.
    public var initialDelay: Duration
    /// The longest wait.
    public var maximumDelay: Duration
    /// How many peers are remembered at most.
    public var capacity: Int
    private var entries: [Peer: Entry] = [:]

    /// A limiter that remembers no failure yet.
    public init(initialDelay: Duration = .seconds(2), maximumDelay: Duration = .seconds(64), capacity: Int = 64) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.capacity = capacity
    }

    /// Whether a pairing with `peer` may start at `now`.
    public func mayPair(_ peer: Peer, now: Duration) -> Bool {
        guard let entry = entries[peer] else { return true }
        return now >= entry.notBefore
    }

    /// The wait that currently applies to `peer` (zero when none).
    public func delay(for peer: Peer) -> Duration { entries[peer]?.delay ?? .zero }

    /// A pairing with `peer` failed at `now`: the next one waits, twice as long as after the previous failure.
    public mutating func recordFailure(_ peer: Peer, now: Duration) {
        let delay = entries[peer].map { min($0.delay * 2, maximumDelay) } ?? min(initialDelay, maximumDelay)
        if entries[peer] == nil, entries.count >= max(capacity, 1),
           let oldest = entries.min(by: { $0.value.notBefore < $1.value.notBefore })?.key {
            entries[oldest] = nil
        }
        entries[peer] = Entry(delay: delay, notBefore: now + delay)
    }

    /// A pairing with `peer` succeeded: its wait is reset.
    public mutating func recordSuccess(_ peer: Peer) {
        entries[peer] = nil
    }
}
