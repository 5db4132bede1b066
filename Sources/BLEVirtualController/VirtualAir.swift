import BLEWire
import Foundation
import Synchronization

/// The shared simulated air: every ``VirtualController`` on it can hear the others, subject to distance.
///
/// All state lives behind one lock and changes only when a host sends a packet or simulated time advances, so a
/// run is deterministic for a given seed. Two clocks:
/// - ``Clock/manual``: time stands still until a test calls ``advance(by:)``; events due in between run in order.
/// - ``Clock/realTime``: one driver thread runs events as wall time reaches them (for the CLI and in-process hosts).
///   Call ``shutdown()`` when done with it.
public final class VirtualAir: Sendable {
    /// How simulated time advances.
    public enum Clock: Sendable, Hashable {
        /// Only ``VirtualAir/advance(by:)`` moves time.
        case manual
        /// Simulated time follows the wall clock.
        case realTime
    }

    /// The clock mode.
    public let clock: Clock
    let world: Mutex<World>
    private let wake = NSCondition()
    private let stopped = Atomic<Bool>(false)
    private let origin = ContinuousClock.now

    /// Creates an air with a seeded generator (advertising delays, LE Rand, RSSI noise) and a radio model.
    public init(clock: Clock = .manual, seed: UInt64 = 0x5EED, radio: RadioModel = RadioModel()) {
        self.clock = clock
        world = Mutex(World(seed: seed, radio: radio))
        if clock == .realTime {
            let thread = Thread { [self] in self.drive() }
            thread.name = "ble.virtual-air"
            thread.start()
        }
    }

    /// Adds a controller to the air.
    ///
    /// - Parameter buffered: when `true`, packets for the host collect in a buffer read with
    ///   ``VirtualController/drainToHost()`` (synchronous tests); otherwise they flow through
    ///   ``VirtualController/toHost``.
    public func addController(_ configuration: VirtualController.Configuration = .init(),
                              buffered: Bool = false) -> VirtualController {
        let sink = HostSink(mode: buffered ? .buffer : .stream)
        let id = world.withLock { w in
            let id = w.nextControllerID
            w.nextControllerID += 1
            var config = configuration
            if config.address == nil { config.address = BluetoothAddress(0x005B_0000_0000 | UInt64(id)) }
            w.controllers[id] = ControllerState(id: id, configuration: config, sink: sink)
            return id
        }
        let address = world.withLock { $0.controllers[id]?.configuration.address } ?? .zero
        return VirtualController(id: id, address: address, air: self, sink: sink)
    }

    /// The simulated time elapsed since the air was created.
    public var now: Duration {
        .nanoseconds(Int64(clamping: world.withLock { $0.now }))
    }

    /// The radio model (change it at any time; links are re-evaluated).
    public var radio: RadioModel {
        get { world.withLock { $0.radio } }
        set { mutate { w in w.radio = newValue; w.reevaluateLinks() } }
    }

    /// ACL packets hosts sent for unknown connection handles (dropped).
    public var droppedACLPacketCount: Int { world.withLock { $0.droppedACLPackets } }

    /// Moves simulated time forward by `duration`, running every event due in that span. Only the manual clock is
    /// driven this way; on a real-time air the call does nothing (wall time drives it).
    public func advance(by duration: Duration) {
        guard clock == .manual else { return }
        let (seconds, attoseconds) = duration.components
        let nanos = UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds)) / 1_000_000_000
        world.withLock { w in
            let target = w.now + nanos
            while let (time, event) = w.queue.popDue(notAfter: target) {
                w.now = max(w.now, time)
                w.run(event)
            }
            w.now = target
        }
    }

    /// Stops the real-time driver thread. The air is unusable afterwards.
    public func shutdown() {
        stopped.store(true, ordering: .releasing)
        wake.lock()
        wake.signal()
        wake.unlock()
    }

    /// Runs `body` on the world at the current time (catching a real-time clock up first), then wakes the driver.
    func mutate<T>(_ body: (inout World) -> T) -> T {
        let result = world.withLock { w -> T in
            if clock == .realTime { catchUp(&w) }
            return body(&w)
        }
        if clock == .realTime {
            wake.lock()
            wake.signal()
            wake.unlock()
        }
        return result
    }

    private var wallNanos: UInt64 {
        let (s, a) = (ContinuousClock.now - origin).components
        return UInt64(max(0, s)) * 1_000_000_000 + UInt64(max(0, a)) / 1_000_000_000
    }

    private func catchUp(_ w: inout World) {
        let target = max(w.now, wallNanos)
        while let (time, event) = w.queue.popDue(notAfter: target) {
            w.now = max(w.now, time)
            w.run(event)
        }
        w.now = target
    }

    private func drive() {
        wake.lock()
        while !stopped.load(ordering: .acquiring) {
            let next = world.withLock { w -> UInt64? in
                catchUp(&w)
                return w.queue.nextTime
            }
            if let next {
                let delay = Double(next &- min(next, wallNanos)) / 1e9
                _ = wake.wait(until: Date(timeIntervalSinceNow: max(delay, 0)))
            } else {
                wake.wait()
            }
        }
        wake.unlock()
    }
}
