/// The time a host on a transport lives by: the wall clock in front of a radio, the simulated air's time in front of
/// a virtual controller on a manual clock. A host takes its timers (command timeouts, the ATT transaction timeout,
/// SMP's, L2CAP's, GAP's) and its notion of "now" from its transport's clock, so that on a manual-clock air they
/// fire when a test advances the air, and never by the wall clock.
public protocol TransportClock: Sendable {
    /// Time since the clock's origin.
    var now: Duration { get }
    /// Suspends until `duration` has passed on this clock. Throws `CancellationError` when the task is cancelled.
    func sleep(for duration: Duration) async throws
}

/// The wall clock (`ContinuousClock`), the clock of every transport to a real controller.
public struct WallClock: TransportClock {
    private let origin: ContinuousClock.Instant

    /// A wall clock whose origin is now.
    public init() { origin = .now }

    public var now: Duration { ContinuousClock.now - origin }

    public func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }
}

extension HCITransport {
    /// The wall clock, unless the transport says otherwise (a virtual controller on a manual-clock air).
    public var clock: any TransportClock { WallClock() }
}
