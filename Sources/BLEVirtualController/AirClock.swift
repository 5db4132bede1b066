import BLETransport
import Synchronization

/// A manual-clock air's time as a host's clock (``TransportClock``): what a host on one of its virtual controllers
/// times itself by. Its timers fire when the test advances the air (``VirtualAir/advance(by:)``), in time order with
/// the air's own events, and never by the wall clock. (A real-time air gives its hosts the wall clock.)
final class AirClock: TransportClock {
    private struct Sleeper {
        let deadline: UInt64
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var sleepers: [UInt64: Sleeper] = [:]
        /// Sleeps cancelled before they were registered.
        var cancelled: Set<UInt64> = []
        var lastID: UInt64 = 0
    }

    private let world: Locked<World>
    private let state = Mutex(State())

    init(world: Locked<World>) { self.world = world }

    private var nanosecondsNow: UInt64 { world.withLock { $0.now } }

    var now: Duration { .nanoseconds(Int64(clamping: nanosecondsNow)) }

    func sleep(for duration: Duration) async throws {
        let start = nanosecondsNow
        let deadline = start &+ min(VirtualAir.nanoseconds(duration), UInt64.max - start)
        let id = state.withLock { state -> UInt64 in
            state.lastID &+= 1
            return state.lastID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome = state.withLock { state -> Result<Void, any Error>? in
                    if state.cancelled.remove(id) != nil { return .failure(CancellationError()) }
                    if deadline <= nanosecondsNow { return .success(()) }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                guard let sleeper = state.sleepers.removeValue(forKey: id) else {
                    state.cancelled.insert(id)
                    return nil
                }
                return sleeper
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// The earliest deadline of a sleeping timer, if any.
    var nextDeadline: UInt64? { state.withLock { $0.sleepers.values.map(\.deadline).min() } }

    /// Wakes the timers whose deadline is `now` or earlier.
    func wake(notAfter now: UInt64) {
        let due = state.withLock { state -> [Sleeper] in
            let ids = state.sleepers.filter { $0.value.deadline <= now }.sorted { $0.value.deadline < $1.value.deadline }.map(\.key)
            return ids.compactMap { state.sleepers.removeValue(forKey: $0) }
        }
        for sleeper in due { sleeper.continuation.resume() }
    }
}
