import BLETransport
import BLEWire
import Foundation
import Synchronization

/// The shared simulated air: every ``VirtualController`` on it can hear the others, subject to distance.
///
/// All state lives behind one lock and changes only when a host sends a packet or simulated time advances, so a
/// run is deterministic for a given seed. Host → controller packets are handled at once (zero simulated latency);
/// scheduled work (advertising events, connection-update instants, supervision timeouts) waits in a time-ordered
/// queue, first-in first-out for equal times. Two clocks:
/// - ``Clock/manual``: time stands still until a test calls ``advance(by:)`` or ``runUntilIdle(limit:)``, which
///   run the events due in between synchronously, in order, and return.
/// - ``Clock/realTime``: one driver thread sleeps on a condition until the next event is due or a host packet
///   changes the schedule, then runs what wall time has reached. It stops with ``shutdown()``, or on its own once
///   nothing references the air any more.
public final class VirtualAir: Sendable {
    /// How simulated time advances.
    public enum Clock: Sendable, Hashable {
        /// Only ``VirtualAir/advance(by:)`` and ``VirtualAir/runUntilIdle(limit:)`` move time.
        case manual
        /// Simulated time follows the wall clock.
        case realTime
    }

    /// The clock mode.
    public let clock: Clock
    let world: Locked<World>
    let driver = RealTimeDriver()
    /// Reader threads handling packets now (hosts attached to descriptor transports).
    let readers = ReaderActivity()
    private let origin = ContinuousClock.now
    /// The hosts' timers on this air (a manual air wakes them in ``advance(by:)``).
    private let hostClock: AirClock

    /// Creates an air with a seeded generator (advertising delays, LE Rand, RSSI noise), a radio model and, when
    /// given, the air-time model for connections (``AirTimeModel``; without it packets cross links instantly).
    public init(clock: Clock = .manual, seed: UInt64 = 0x5EED, radio: RadioModel = RadioModel(), airTime: AirTimeModel? = nil) {
        self.clock = clock
        var world = World(seed: seed, radio: radio)
        world.airTime = airTime
        self.world = Locked(world)
        self.hostClock = AirClock(world: self.world)
        if clock == .realTime {
            // The thread holds the air weakly: dropping the last reference to the air stops it.
            let driver = driver
            let thread = Thread { [weak self] in
                driver.run { () -> Duration?? in
                    guard let air = self else { return nil }
                    return .some(air.runDueEvents())
                }
            }
            thread.name = "ble.virtual-air"
            thread.start()
        }
    }

    deinit { driver.stop() }

    /// Adds a controller to the air.
    ///
    /// - Parameter buffered: when `true`, packets for the host collect in a buffer read with
    ///   ``VirtualController/drainToHost()`` (synchronous tests); otherwise they flow through
    ///   ``VirtualController/toHost``.
    public func addController(_ configuration: VirtualController.Configuration = .init(),
                              buffered: Bool = false) -> VirtualController {
        let sink = HostSink(mode: buffered ? .buffer : .stream, readers: readers)
        let (id, address, name) = mutate { w in
            let id = w.nextControllerID
            w.nextControllerID += 1
            var config = configuration
            if config.address == nil { config.address = BluetoothAddress(0x005B_0000_0000 | UInt64(id)) }
            w.controllers[id] = ControllerState(id: id, configuration: config, sink: sink)
            w.listenerCache = nil
            let name = config.name ?? "controller \(id < 10 ? "0" : "")\(id)"
            return (id, config.address ?? .zero, name)
        }
        return VirtualController(id: id, address: address, name: name, air: self, sink: sink)
    }

    /// The simulated time elapsed since the air was created (on a real-time air: the wall time elapsed).
    public var now: Duration {
        let nanos = world.withLock { w in clock == .realTime ? max(w.now, wallNanos) : w.now }
        return .nanoseconds(Int64(clamping: nanos))
    }

    /// The radio model (change it at any time; links are re-evaluated).
    public var radio: RadioModel {
        get { world.withLock { $0.radio } }
        set { mutate { w in w.radio = newValue; w.reevaluateLinks() } }
    }

    /// The air-time model of connections (``AirTimeModel``), or `nil`: packets cross links the instant a controller
    /// takes them. Turning it on starts connection events on the links already up; turning it off sends what their
    /// controllers hold at once.
    public var airTime: AirTimeModel? {
        get { world.withLock { $0.airTime } }
        set {
            mutate { w in
                let wasOn = w.airTime != nil
                w.airTime = newValue
                for id in w.links.keys.sorted() {
                    if newValue != nil, !wasOn {
                        w.startConnectionEvents(link: id)
                    } else if newValue == nil, wasOn, var link = w.links[id] {
                        let held = [(link.central.controller, link.air[0]), (link.peripheral.controller, link.air[1])]
                        link.air = [AirQueue(), AirQueue()]
                        link.airGeneration = w.token()
                        w.links[id] = link
                        for (sender, queue) in held {
                            for _ in 0..<queue.unacknowledged { w.airAcknowledgeFlushed(link: id, sender: sender) }
                            for packet in queue.packets { w.transmitACL(link: id, from: sender, packet) }
                        }
                    }
                }
            }
        }
    }

    /// ACL packets hosts sent for unknown connection handles (dropped).
    public var droppedACLPacketCount: Int { world.withLock { $0.droppedACLPackets } }

    /// Sets the faults of every link between `a` and `b`, now and later (`nil`: none). See ``LinkFaults``.
    public func setFaults(_ faults: LinkFaults?, between a: VirtualController, _ b: VirtualController) {
        mutate { w in
            w.faults[[min(a.id, b.id), max(a.id, b.id)]] = faults.map { FaultState(faults: $0, rng: SplitMix64(seed: $0.seed)) }
        }
    }

    /// Transmission attempts the link layer repeated because of ``LinkFaults``.
    public var retransmissionCount: Int { world.withLock { $0.retransmissions } }

    /// Links lost because of ``LinkFaults`` (every attempt failed until the supervision timeout).
    public var linksLostToFaultsCount: Int { world.withLock { $0.linksLostToFaults } }

    /// Moves simulated time forward by `duration`, running every event due in that span in order, and returns
    /// with the clock at exactly `now + duration`. Only the manual clock is driven this way; on a real-time air the
    /// call does nothing (wall time drives it). The hosts' timers due in the span (see ``VirtualController``'s
    /// transport clock) are woken at their time, between the air's events.
    public func advance(by duration: Duration) {
        guard clock == .manual else { return }
        let nanos = Self.nanoseconds(duration)
        let target = world.withLock { w in w.now &+ min(nanos, UInt64.max - w.now) }
        // The hosts' timers due before the target go off at their time, after the air's events until then.
        while let deadline = hostClock.nextDeadline, deadline <= target {
            world.withLock { w in
                runEvents(&w, notAfter: deadline)
                w.now = max(w.now, deadline)
            }
            hostClock.wake(notAfter: deadline)
        }
        world.withLock { w in
            runEvents(&w, notAfter: target)
            w.now = target
        }
    }

    /// The clock of the hosts on this air's controllers (``TransportClock``): the air's time on a manual air, the
    /// wall clock on a real-time one.
    var transportClock: any TransportClock { clock == .manual ? hostClock : WallClock() }

    /// Runs scheduled events one after another, moving the clock to each, until nothing is scheduled or the next
    /// event lies more than `limit` past the current time.
    ///
    /// - Returns: `true` when the queue ran empty (the clock then stands at the last event run); `false` when the
    ///   limit was reached first (the clock then stands at `now + limit`). An advertising controller never lets
    ///   the queue run empty. On a real-time air the call does nothing and returns `false`.
    @discardableResult
    public func runUntilIdle(limit: Duration = .seconds(60)) -> Bool {
        guard clock == .manual else { return false }
        let nanos = Self.nanoseconds(limit)
        let (idle, now) = world.withLock { w -> (Bool, UInt64) in
            let deadline = w.now &+ min(nanos, UInt64.max - w.now)
            runEvents(&w, notAfter: deadline)
            if w.queue.isEmpty { return (true, w.now) }
            w.now = deadline
            return (false, w.now)
        }
        // The hosts' timers the clock passed go off now.
        hostClock.wake(notAfter: now)
        return idle
    }

    /// Whether every in-process host on this air took every packet its controller sent it and waits for more: the
    /// stack has handled what the air delivered so far (its tasks and its application may still be busy). A
    /// simulated world waits for it between steps of manual time.
    package var hostsAreIdle: Bool {
        let sinks = world.withLock { w in w.controllers.values.filter { !$0.removed }.map(\.sink) }
        return sinks.allSatisfy(\.hostIsIdle)
    }

    /// Stops the real-time driver thread. The air is unusable afterwards.
    public func shutdown() {
        driver.stop()
    }

    /// Handles packets on a reader thread: writer tasks are not woken meanwhile, and every host attached on its
    /// reader thread gets what gathered for it at the end.
    func handleOnReaderThread(_ body: () -> Void) {
        readers.count.add(1, ordering: .sequentiallyConsistent)
        body()
        readers.count.subtract(1, ordering: .sequentiallyConsistent)
        flushAttachedHosts()
    }

    /// Writes what gathered for every host attached on its reader thread.
    func flushAttachedHosts() {
        let sinks = world.withLock { w in w.controllers.values.map(\.sink) }
        for sink in sinks { sink.flush() }
    }

    /// Runs `body` on the world at the current time (catching a real-time clock up first), then wakes the driver if
    /// `body` scheduled an event earlier than any it had: the driver sleeps until the earliest event it knew of, so a
    /// later one needs no wake-up (most host packets schedule nothing, and a wake-up per packet cost a thread switch).
    func mutate<T>(_ body: (inout World) -> T) -> T {
        var wake = false
        let result = world.withLock { w -> T in
            guard clock == .realTime else { return body(&w) }
            runEvents(&w, notAfter: max(w.now, wallNanos))
            let before = w.queue.nextTime
            let result = body(&w)
            if let after = w.queue.nextTime, before.map({ after < $0 }) ?? true { wake = true }
            return result
        }
        if wake { driver.wake() }
        return result
    }

    /// Runs what is due by wall time; returns how long until the next event (`nil`: none scheduled).
    private func runDueEvents() -> Duration? {
        world.withLock { w -> Duration? in
            let wall = max(w.now, wallNanos)
            runEvents(&w, notAfter: wall)
            w.now = wall
            return w.queue.nextTime.map { .nanoseconds(Int64(clamping: $0 &- min($0, wall))) }
        }
    }

    private func runEvents(_ w: inout World, notAfter target: UInt64) {
        while let (time, event) = w.queue.popDue(notAfter: target) {
            w.now = max(w.now, time)
            w.run(event)
        }
    }

    private var wallNanos: UInt64 { Self.nanoseconds(ContinuousClock.now - origin) }

    static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0, attoseconds >= 0 else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : whole &+ min(UInt64(attoseconds) / 1_000_000_000, UInt64.max - whole)
    }
}

/// The real-time air's driver: a thread that sleeps on a condition variable until the next event is due or it is
/// woken (a host packet may have scheduled something sooner). No polling: with nothing scheduled it waits until
/// woken.
final class RealTimeDriver: Sendable {
    private let condition = NSCondition()
    /// Set (under `condition`) when the schedule may have changed since the driver last looked.
    private let dirty = Atomic<Bool>(false)
    private let stopped = Atomic<Bool>(false)
    /// Finishes when the loop has ended (the thread is about to exit).
    let finished: AsyncStream<Void>
    private let finishedContinuation: AsyncStream<Void>.Continuation

    init() {
        (finished, finishedContinuation) = AsyncStream.makeStream(of: Void.self)
    }

    /// The thread's loop. `step` runs the due events and returns the delay to the next one, or `nil` when nothing
    /// is scheduled; it is not called with the condition held, so the air may be released (and stop the driver)
    /// from inside it.
    func run(_ step: () -> Duration??) {
        defer { finishedContinuation.finish() }
        while !stopped.load(ordering: .acquiring) {
            guard let next = step() else { return }   // The air is gone.
            condition.lock()
            if !dirty.load(ordering: .relaxed), !stopped.load(ordering: .acquiring) {
                if let next {
                    let seconds = Double(next.components.seconds) + Double(next.components.attoseconds) / 1e18
                    _ = condition.wait(until: Date(timeIntervalSinceNow: max(seconds, 0)))
                } else {
                    condition.wait()
                }
            }
            dirty.store(false, ordering: .relaxed)
            condition.unlock()
        }
    }

    /// Makes the driver look at the schedule again.
    func wake() {
        condition.lock()
        dirty.store(true, ordering: .relaxed)
        condition.signal()
        condition.unlock()
    }

    /// Ends the loop.
    func stop() {
        stopped.store(true, ordering: .releasing)
        wake()
    }
}
