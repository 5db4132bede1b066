/// Decides which device reports a gateway publishes: a change of content at once, the same content (RSSI jitter)
/// at most once per ``interval`` per device. A value type without clocks: time is passed in.
///
/// It remembers at most ``capacity`` devices; beyond it, the one published least recently is forgotten (and its
/// next report goes out as new).
public struct DeviceRateLimiter: Sendable {
    /// The shortest time between two records of one device whose content did not change.
    public var interval: Duration
    /// The most devices remembered.
    public let capacity: Int
    private var last: [String: Memory<String>] = [:]

    /// The last record published of a device: its content, and when (kept here by device name, or by a table of
    /// devices of its own).
    struct Memory<Content: Equatable & Sendable>: Sendable {
        var content: Content
        var at: Duration

        /// Whether a record with `content` at `now` goes out; when it does, it becomes the last one.
        mutating func offer(_ content: Content, now: Duration, interval: Duration) -> Verdict {
            let verdict: Verdict
            if self.content != content {
                verdict = .changed
            } else if now - at >= interval {
                verdict = .refresh
            } else {
                return .suppressed
            }
            self.content = content
            at = now
            return verdict
        }
    }

    /// Creates a limiter.
    public init(interval: Duration = .seconds(5), capacity: Int = 65_536) {
        self.interval = interval
        self.capacity = max(1, capacity)
    }

    /// Why a record goes out.
    public enum Verdict: Sendable, Hashable {
        /// The first record of the device.
        case new
        /// Its content changed since the last one published.
        case changed
        /// Same content, and ``DeviceRateLimiter/interval`` has passed.
        case refresh
        /// Held back: same content within the interval.
        case suppressed
    }

    /// The devices remembered.
    public var count: Int { last.count }

    /// Whether a record of `device` with content `content` seen at `now` goes out; when it does, it is remembered as
    /// published then.
    public mutating func offer(device: String, content: String, now: Duration) -> Verdict {
        // A device already known (most reports): one look-up, its entry changed in place.
        if let verdict = last[device]?.offer(content, now: now, interval: interval) { return verdict }
        if last.count >= capacity, let oldest = last.min(by: { $0.value.at < $1.value.at })?.key {
            last.removeValue(forKey: oldest)
        }
        last[device] = Memory(content: content, at: now)
        return .new
    }
}
