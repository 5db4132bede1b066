import BLETransport

/// One-shot timers keyed by what they time, each run as a task that sleeps on the host's clock: the one timer idiom
/// of the host's drivers (command timeouts, L2CAP RTX, the Security Manager timer, connection attempts,
/// private-address rotation, ATT transactions).
///
/// A timer that fires calls its handler with its ``Firing``; the driver passes that to ``expire(_:)``, which says
/// whether the timer was still the one set under its key. So a timer cancelled or replaced after its task woke up
/// does nothing, without any flag of the driver's own.
struct TimerSet<Key: Hashable & Sendable> {
    /// One timer's firing: its key and which setting of that key it belongs to.
    struct Firing: Sendable {
        let key: Key
        let generation: UInt64
    }

    private var tasks: [Key: (generation: UInt64, task: Task<Void, Never>)] = [:]
    private var lastGeneration: UInt64 = 0
    /// The clock the timers run on (the host's transport's: see ``TransportClock``); the wall clock when `nil`.
    var clock: (any TransportClock)?

    init(clock: (any TransportClock)? = nil) { self.clock = clock }

    /// Sets the timer `key` to fire after `delay` (replacing one set under the same key); `handler` runs then, unless
    /// the timer was cancelled or replaced.
    mutating func start(_ key: Key, after delay: Duration, handler: @escaping @Sendable (Firing) async -> Void) {
        tasks.removeValue(forKey: key)?.task.cancel()
        lastGeneration &+= 1
        let firing = Firing(key: key, generation: lastGeneration)
        let clock = clock
        let task = Task {
            if let clock { try? await clock.sleep(for: delay) } else { try? await Task.sleep(for: delay) }
            guard !Task.isCancelled else { return }
            await handler(firing)
        }
        tasks[key] = (lastGeneration, task)
    }

    /// Whether `firing` is the timer still set under its key; if so, the timer is done (removed).
    mutating func expire(_ firing: Firing) -> Bool {
        guard tasks[firing.key]?.generation == firing.generation else { return false }
        tasks[firing.key] = nil
        return true
    }

    /// Cancels the timer `key`; returns whether one was set.
    @discardableResult
    mutating func cancel(_ key: Key) -> Bool {
        guard let entry = tasks.removeValue(forKey: key) else { return false }
        entry.task.cancel()
        return true
    }

    /// Cancels every timer whose key matches.
    mutating func cancelAll(where matches: (Key) -> Bool = { _ in true }) {
        for key in tasks.keys where matches(key) { cancel(key) }
    }
}
