/// Keeps the newest update per key and lets them out at most once per ``interval``, so that a view gets at most
/// `1 / interval` messages a second however fast its source changes (1,000 advertisers, a notification every
/// millisecond): an update that a newer one for the same key replaced before the flush is never sent.
///
/// Time is given by the caller (`now`), so the behaviour is tested without a clock.
public struct Coalescer<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    /// The shortest time between two flushes.
    public let interval: Duration
    private var pending: [Key: Value] = [:]
    /// The keys in the order of their first update since the last flush.
    private var order: [Key] = []
    private var lastFlush: Duration?

    /// A coalescer that flushes at most once per `interval` (100 ms: 10 a second).
    public init(interval: Duration = .milliseconds(100)) {
        self.interval = interval
    }

    /// Records an update, replacing any pending one for the same key.
    public mutating func offer(_ key: Key, _ value: Value) {
        if pending.updateValue(value, forKey: key) == nil { order.append(key) }
    }

    /// How many keys wait.
    public var pendingCount: Int { pending.count }

    /// The pending updates, oldest key first, when `now` is at least ``interval`` after the last flush (and any are
    /// pending); otherwise nothing, and they stay pending.
    public mutating func flush(now: Duration) -> [(key: Key, value: Value)] {
        guard !pending.isEmpty else { return [] }
        if let lastFlush, now - lastFlush < interval { return [] }
        lastFlush = now
        let out = order.compactMap { key in pending[key].map { (key: key, value: $0) } }
        pending.removeAll(keepingCapacity: true)
        order.removeAll(keepingCapacity: true)
        return out
    }

    /// When the next flush may happen (`nil`: whenever; no flush yet).
    public var earliestNextFlush: Duration? { lastFlush.map { $0 + interval } }
}
