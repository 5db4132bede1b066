import BLE
import BLEHost
import BLEVirtualController
import Foundation
import Synchronization

/// A world of simulated peripherals for unit tests of CoreBluetooth code: the peripherals a test declares
/// (``SimulatedPeripheral``) and the `CBCentralManager`s and `CBPeripheralManager`s the code under test creates inside
/// ``run(_:)`` share one simulated air, each on a virtual controller of its own, under the real host stack. Nothing is
/// mocked: what crosses the air are the HCI packets a radio would carry.
///
/// **Time.** With ``Time/manual`` (the default) time stands still until the test advances it
/// (``advance(by:step:)``, ``advance(until:limit:step:)``): advertising intervals, connection events, supervision
/// timeouts and the stack's own timers (ATT transactions, pairing, connection attempts) go off at their simulated
/// time and never by the wall clock, so a test of a 30 s timeout takes milliseconds. RSSI follows distance without
/// random noise. The stack and the app react between the steps, on their own threads; before each step the world
/// settles: it waits until no manager's adapter is still opening, every host has taken what its controller sent it,
/// and no central manager has a delegate callback queued or running. So the stack never times out because it was
/// slow to take an answer, on a busy machine as on a quiet one. What the world cannot see (the application's own
/// work off its delegate queue, a task between an application's call and its packet) may still leave a step late,
/// so a test asserts what happens, in what order, and bounds on when (a link is never lost before its supervision
/// timeout), not exact instants.
///
/// **Driving the world.** Peripherals: ``SimulatedPeripheral`` (distance, power, values, what reads and writes
/// answer, security, bonds, MTU, connection interval, Service Changed). The phone: ``turnBluetoothOff()`` and
/// ``turnBluetoothOn()``. The air: `connectionEvents` (``init(time:seed:connectionEvents:)``) makes links run
/// connection events, so that intervals and packet sizes show in how long things take.
///
/// **One world per test.** The world a manager joins is the one whose ``run(_:)`` it was created in (a task-local
/// value, like Swift Testing's own), so tests run in parallel, each in a world of its own, under Swift Testing or
/// XCTest.
///
/// ```swift
/// let world = SimulatedWorld()
/// let monitor = SimulatedPeripheral(name: "HRM", advertising: [CBUUID(string: "180D")], services: [heartRate])
/// try await world.add(monitor)
/// try await world.run {
///     let app = HeartRateApp()                                  // creates its CBCentralManager
///     #expect(await world.advance(until: { app.state == .connected }))
///     monitor.move(toDistance: 10_000)                          // out of range
///     #expect(await world.advance(until: { app.state == .disconnected }, limit: .seconds(31)))
/// }
/// ```
public final class SimulatedWorld: Sendable {
    /// How the world's time moves.
    public enum Time: Sendable, Hashable {
        /// Only ``SimulatedWorld/advance(by:step:)`` and ``SimulatedWorld/advance(until:limit:step:)`` move it.
        case manual
        /// It follows the wall clock.
        case realTime
    }

    /// How time moves in this world.
    public let time: Time
    let air: VirtualAir
    private let peripherals = Mutex<[SimulatedPeripheral]>([])
    /// The phone's bonds: those of every manager created in this world (iOS keeps them system-wide), whatever bond
    /// store `CBManager.setSecurity(_:pairingAgent:)` named, so that no bond leaks from one world (one test) to
    /// another.
    private let bondStore = InMemoryBondStore()
    /// The phone's Bluetooth switch (``turnBluetoothOff()``), the adapters opened in this world with their
    /// controllers, and the central managers told when it is switched.
    private let radio = Mutex(Radio())

    private struct Radio {
        var isOn = true
        /// Adapters asked for by managers created in this world and not open yet.
        var opening = 0
        var adapters: [(adapter: Adapter, controller: VirtualController)] = []
        var managers: [WeakCentralManager] = []
    }

    private struct WeakCentralManager {
        weak var manager: CBCentralManager?
    }

    /// The world the managers created in the current task join (``run(_:)``).
    @TaskLocal static var current: SimulatedWorld?

    /// An empty world; `seed` fixes its random draws (advertising delays, addresses the controllers pick).
    ///
    /// With `connectionEvents`, each link runs connection events, one every connection interval, and a packet takes
    /// the time its bits need (the air-time model of `BLEVirtualController`): a request waits for its link's next
    /// event and its answer for a later one, so the connection interval a peripheral asks for shows in how long the
    /// app's requests take. Without it (the default), a packet crosses the air the instant it is sent.
    public init(time: Time = .manual, seed: UInt64 = 1, connectionEvents: Bool = false) {
        self.time = time
        air = VirtualAir(clock: time == .manual ? .manual : .realTime, seed: seed, airTime: connectionEvents ? AirTimeModel() : nil)
    }

    deinit { air.shutdown() }

    /// The simulated time since the world was created.
    public var now: Duration { air.now }

    /// Runs `body` in this world: every `CBCentralManager` and `CBPeripheralManager` created in it, and in the tasks it
    /// starts, gets a virtual controller of its own at the origin of this world's air.
    ///
    /// It runs on the caller's actor (`isolation`), so that test code on the main actor passes it closures that use
    /// the main actor's state.
    public func run<T>(isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T) async rethrows -> T {
        try await Self.$current.withValue(self) { try await body() }
    }

    /// Adds `peripheral` to the world: it powers on and advertises.
    public func add(_ peripheral: SimulatedPeripheral) async throws {
        try await peripheral.start(on: air)
        peripherals.withLock { $0.append(peripheral) }
    }

    /// Moves the world's time forward by `duration` in steps of `step`, letting the stack and the delegates react
    /// after each step. On a ``Time/realTime`` world it waits `duration`.
    public func advance(by duration: Duration, step: Duration = .milliseconds(10)) async {
        guard time == .manual else {
            try? await Task.sleep(for: duration)
            return
        }
        var left = duration
        while left > .zero {
            let next = min(max(step, .nanoseconds(1)), left)
            air.advance(by: next)
            left -= next
            await settle()
        }
    }

    /// Moves the world's time forward in steps of `step` until `condition` holds (checked after each step), at most
    /// `limit`; returns whether it held. On a ``Time/realTime`` world it waits for the condition, at most `limit` of
    /// wall time. It runs on the caller's actor (`isolation`), so `condition` may read the main actor's state in test
    /// code on the main actor.
    @discardableResult
    public func advance(until condition: () -> Bool, limit: Duration = .seconds(60), step: Duration = .milliseconds(10),
                        isolation: isolated (any Actor)? = #isolation) async -> Bool {
        let start = now
        while !condition() {
            guard now - start < limit else { return false }
            if time == .manual {
                air.advance(by: max(step, .nanoseconds(1)))
                await settle()
            } else {
                try? await Task.sleep(for: step)
            }
        }
        return true
    }

    /// The settling step between two steps of manual time: waits (at most half a second of wall time) until the
    /// world is quiet — no manager's adapter is still opening, every host took what its controller sent it and waits
    /// for more, no central manager has a delegate callback queued or running — twice in a row with the other tasks
    /// given turns in between. So the stack's timers (an HCI command's 5 s, an ATT transaction's 30 s) never run out
    /// because the stack was slow to take an answer, and reactions come at the step they belong to, on a busy machine
    /// as on a quiet one. What it cannot see: an application's own work off its delegate queue, and a task between
    /// taking the application's call and sending its packet (its packet then leaves a step late, not lost).
    ///
    /// A world that stays busy (a delegate queue nobody runs, such as the main queue of a test that does not run it)
    /// is waited for at most 5 ms a step until it is quiet again, so that it slows the test down without stopping it.
    private func settle() async {
        let patience: Duration = stuck.load(ordering: .relaxed) ? .milliseconds(5) : .milliseconds(500)
        let deadline = ContinuousClock.now + patience
        var quiet = 0
        defer { stuck.store(quiet < 2, ordering: .relaxed) }
        while quiet < 2, ContinuousClock.now < deadline {
            for _ in 0..<4 { await Task.yield() }
            if isQuiet {
                quiet += 1
            } else {
                quiet = 0
                // Busy: let the other threads run (yielding alone keeps this one on its core).
                try? await Task.sleep(for: .microseconds(50))
            }
        }
    }

    /// Whether the last settling step ran out of patience (``settle()``).
    private let stuck = Atomic<Bool>(false)

    /// Whether nothing the world can see is in progress: see ``settle()``.
    private var isQuiet: Bool {
        let (opening, managers) = radio.withLock { ($0.opening, $0.managers.compactMap(\.manager)) }
        return opening == 0 && air.hostsAreIdle && !managers.contains(where: \.isDelivering)
    }

    /// A manager created in this world will open an adapter (``openAdapter(security:)``): the world is not quiet
    /// until it has.
    func adapterRequested() {
        radio.withLock { $0.opening += 1 }
    }

    // MARK: The phone's Bluetooth switch

    /// Whether Bluetooth is on for the managers of this world (``turnBluetoothOff()``, ``turnBluetoothOn()``).
    public var isBluetoothOn: Bool { radio.withLock { $0.isOn } }

    /// Turns Bluetooth off for the managers created in this world, as the user does in Settings: each
    /// `CBCentralManager` reports ``CBManagerState/poweredOff`` to `centralManagerDidUpdateState(_:)`, then each
    /// of its links ends, reported to `centralManager(_:didDisconnectPeripheral:error:)` with
    /// ``CBError/Code/peripheralDisconnected`` (the peripherals lose the links at their supervision timeout); scans
    /// stop, and scanning or connecting is ignored until ``turnBluetoothOn()``, as iOS ignores them when the state is
    /// not `poweredOn`.
    public func turnBluetoothOff() async {
        let (managers, adapters) = radio.withLock { radio in
            radio.isOn = false
            return (radio.managers.compactMap(\.manager), radio.adapters)
        }
        // The managers hear of the state first, then of their links.
        for manager in managers { manager.bluetoothSwitched(on: false) }
        for (adapter, controller) in adapters {
            controller.position = Self.offTheAir
            guard await adapter.state == .poweredOn else { continue }
            // A reset in place: the controller forgets its links and scans (the host reports each link ended).
            try? await adapter.powerOn()
        }
    }

    /// Turns Bluetooth back on after ``turnBluetoothOff()``: each `CBCentralManager` reports
    /// ``CBManagerState/poweredOn`` and may scan and connect again (its peripherals are those it had, disconnected).
    public func turnBluetoothOn() async {
        let (managers, adapters) = radio.withLock { radio in
            radio.isOn = true
            return (radio.managers.compactMap(\.manager), radio.adapters)
        }
        for (_, controller) in adapters { controller.position = Position() }
        for manager in managers { manager.bluetoothSwitched(on: true) }
    }

    /// Where a controller whose Bluetooth is off is put: beyond every radio's reach.
    private static let offTheAir = Position(x: 1_000_000_000)

    /// Registers a central manager created in this world for ``turnBluetoothOff()``; returns whether Bluetooth is on.
    func register(_ manager: CBCentralManager) -> Bool {
        radio.withLock { radio in
            radio.managers.removeAll { $0.manager == nil }
            radio.managers.append(WeakCentralManager(manager: manager))
            return radio.isOn
        }
    }

    /// The adapter of a manager created in this world: a controller of its own at the origin, with the security
    /// configuration `CBManager.setSecurity(_:pairingAgent:)` chose but the world's bond store.
    func openAdapter(security: (configuration: SecurityConfiguration, agent: (any PairingAgent)?)?) async -> Adapter {
        defer { radio.withLock { $0.opening = max(0, $0.opening - 1) } }
        let controller = air.addController()
        let transport = controller.makeHostTransport()
        do {
            var configuration = security?.configuration ?? SecurityConfiguration()
            configuration.bondStore = bondStore
            let adapter = try await Adapter(transport: transport, security: configuration)
            if let agent = security?.agent { await adapter.setPairingAgent(agent) }
            let isOn = radio.withLock { radio in
                radio.adapters.append((adapter, controller))
                return radio.isOn
            }
            if !isOn { controller.position = Self.offTheAir }
            return adapter
        } catch {
            return Adapter(host: HCIHost(unavailable: TransportError(.openFailed, "the simulated controller: \(error)")))
        }
    }
}

