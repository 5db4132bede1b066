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
/// random noise. The stack and the app react between the steps, on their own threads: on a busy machine a reaction
/// may come a few steps later in simulated time than on a quiet one, so a test asserts what happens, in what order,
/// and bounds on when (a link is never lost before its supervision timeout), not exact instants.
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

    /// The world the managers created in the current task join (``run(_:)``).
    @TaskLocal static var current: SimulatedWorld?

    /// An empty world; `seed` fixes its random draws (advertising delays, addresses the controllers pick).
    public init(time: Time = .manual, seed: UInt64 = 1) {
        self.time = time
        air = VirtualAir(clock: time == .manual ? .manual : .realTime, seed: seed)
    }

    deinit { air.shutdown() }

    /// The simulated time since the world was created.
    public var now: Duration { air.now }

    /// Runs `body` in this world: every `CBCentralManager` and `CBPeripheralManager` created in it, and in the tasks it
    /// starts, gets a virtual controller of its own at the origin of this world's air.
    public func run<T>(_ body: () async throws -> T) async rethrows -> T {
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
    /// wall time.
    @discardableResult
    public func advance(until condition: () -> Bool, limit: Duration = .seconds(60), step: Duration = .milliseconds(10)) async -> Bool {
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

    /// Gives the hosts' tasks and the delegates' queues a moment to take what the last step delivered.
    private func settle() async {
        for _ in 0..<8 { await Task.yield() }
    }

    /// The adapter of a manager created in this world: a controller of its own at the origin.
    func openAdapter(security: (configuration: SecurityConfiguration, agent: (any PairingAgent)?)?) async -> Adapter {
        let transport = air.addController().makeHostTransport()
        do {
            let adapter = try await Adapter(transport: transport, security: security?.configuration ?? SecurityConfiguration())
            if let agent = security?.agent { await adapter.setPairingAgent(agent) }
            return adapter
        } catch {
            return Adapter(host: HCIHost(unavailable: TransportError(.openFailed, "the simulated controller: \(error)")))
        }
    }
}

/// A peripheral in a ``SimulatedWorld``: a device the test declares — its name, what it advertises, its services
/// with their values — and drives: its distance (RSSI, out of range), its power, its values. It runs the real stack's
/// peripheral role on a virtual controller of its own.
public final class SimulatedPeripheral: Sendable {
    /// The name it advertises and serves as its GAP Device Name.
    public let name: String
    private let advertisedServices: [CBUUID]
    private let services: [CBMutableService]
    private let advertisingInterval: Duration
    private let supervisionTimeout: Duration?
    private let state = Mutex(State())

    private struct State {
        var controller: VirtualController?
        var manager: PeripheralManager?
        var distance: Double = 1
        var watcher: Task<Void, Never>?
        var parameterUpdates = 0
        var air: VirtualAir?
        var address: BluetoothAddress?
    }

    /// Declares a peripheral `distance` metres from the origin (where the managers' controllers are) that advertises
    /// `name` and `advertising` every `advertisingInterval`, connectable, and serves `services` (characteristics with
    /// values, as ``CBPeripheralManager/add(_:)`` takes them; ``setValue(_:for:)`` changes a value and notifies the
    /// subscribers). With a `supervisionTimeout` (100 ms to 32 s), it asks each central that connects for that
    /// supervision timeout (L2CAP Connection Parameter Update Request), as a device that wants to be found lost only
    /// late does.
    public init(name: String, distance: Double = 1, advertising: [CBUUID] = [], services: [CBMutableService] = [],
                advertisingInterval: Duration = .milliseconds(100), supervisionTimeout: Duration? = nil) {
        self.name = name
        self.advertisedServices = advertising
        self.services = services
        self.advertisingInterval = advertisingInterval
        self.supervisionTimeout = supervisionTimeout
        state.withLock { $0.distance = distance }
    }

    func start(on air: VirtualAir) async throws {
        try await boot(on: air, address: nil)
    }

    /// Puts the device on `air`: a controller (with `address`, or the one the air gives), the peripheral role on it,
    /// its services, its request for a supervision timeout, and advertising.
    private func boot(on air: VirtualAir, address: BluetoothAddress?) async throws {
        let distance = state.withLock { $0.distance }
        let controller = air.addController(.init(address: address, position: Position(x: distance)))
        let manager = try await PeripheralManager(transport: controller.makeHostTransport(), deviceName: name)
        for service in services { try await manager.add(try service.simulatedDefinition()) }
        let events = await manager.centralEvents()
        let watcher = supervisionTimeout.map { timeout in
            Task { [manager, weak self] in
                // In 10 ms units, within what the Core Specification allows: 100 ms to 32 s (0x000A–0x0C80).
                let (seconds, attoseconds) = timeout.components
                let units = UInt16(max(10, min(3200, min(max(seconds, 0), 33) * 100 + max(attoseconds, 0) / 10_000_000_000_000_000)))
                for await event in events {
                    guard case .connected(let central) = event else { continue }
                    if (try? await manager.requestConnectionParameters(interval: 24...40, latency: 0,
                                                                        supervisionTimeout: units, for: central)) != nil {
                        self?.state.withLock { $0.parameterUpdates += 1 }
                    }
                }
            }
        }
        state.withLock {
            $0.air = air
            $0.address = controller.address
            $0.controller = controller
            $0.manager = manager
            $0.watcher = watcher
        }
        try await startAdvertising()
    }

    private func startAdvertising() async throws {
        guard let manager = state.withLock({ $0.manager }) else { return }
        let data = AdvertisingData(flags: .leOnlyGeneralDiscoverable, localName: name,
                                   serviceUUIDs: advertisedServices.map(\.bluetoothUUID))
        try await manager.startAdvertising(Advertisement(data: data, interval: advertisingInterval, kind: .connectable),
                                           restartAfterConnection: true)
    }

    /// How many connections took the supervision timeout it asks for (the `supervisionTimeout` it was declared with).
    public var connectionParameterUpdates: Int { state.withLock { $0.parameterUpdates } }

    /// How far it is from the managers' controllers, in metres. Moving it changes the RSSI they measure; far enough
    /// (the radio model's sensitivity), nothing is heard: links are lost at their supervision timeout.
    public var distance: Double { state.withLock { $0.distance } }

    /// Moves it to `distance` metres from the origin.
    public func move(toDistance distance: Double) {
        let controller = state.withLock { state in
            state.distance = distance
            return state.controller
        }
        controller?.position = Position(x: distance)
    }

    /// Turns it off, as a device whose power is cut: its radio leaves the air at once, so it stops advertising and
    /// each central loses its link at the link's supervision timeout (Connection Timeout), hearing nothing before.
    public func powerOff() async {
        let (controller, manager, watcher) = state.withLock { state in
            defer {
                state.controller = nil
                state.manager = nil
                state.watcher = nil
            }
            return (state.controller, state.manager, state.watcher)
        }
        watcher?.cancel()
        controller?.remove()
        await manager?.powerOff()
    }

    /// Turns it back on after ``powerOff()``, as the same device: the same address, the same services and values
    /// (its firmware's), advertising again.
    public func powerOn() async throws {
        let (air, controller, address) = state.withLock { ($0.air, $0.controller, $0.address) }
        guard let air, controller == nil else { return }
        try await boot(on: air, address: address)
    }

    /// Sets the value of `characteristic` and notifies (or indicates) the centrals that subscribed to it; returns
    /// how many were sent it.
    @discardableResult
    public func setValue(_ value: Data, for characteristic: CBUUID) async throws -> Int {
        guard let manager = state.withLock({ $0.manager }) else { return 0 }
        return try await manager.updateValue(Array(value), for: characteristic.bluetoothUUID).count
    }
}

extension CBMutableService {
    /// The service as a ``SimulatedPeripheral`` publishes it: its characteristics must be `CBMutableCharacteristic`
    /// objects, with the rules of ``CBPeripheralManager/add(_:)``.
    func simulatedDefinition() throws(CBError) -> GATTServiceDefinition {
        let definitions = try (characteristics ?? []).map { characteristic throws(CBError) -> GATTCharacteristicDefinition in
            guard let mutable = characteristic as? CBMutableCharacteristic else {
                throw CBError(.invalidParameters, reason: "characteristics of a simulated service must be CBMutableCharacteristic objects")
            }
            return try mutable.definition()
        }
        return GATTServiceDefinition(uuid: uuid.bluetoothUUID, isPrimary: isPrimary, characteristics: definitions)
    }
}
