import BLEHost
import BLETransport
import BLEVirtualController
import BLEWire

/// The embedded simulated world that ``HCITransportSpec/virtual`` opens: one real-time virtual air per process with
/// simulated devices on it, its *residents*, each on a controller of its own. Every `.virtual` central or peripheral
/// manager of the process gets a controller of its own on this air, so they see each other and the residents, as on a
/// real radio.
///
/// The `BLE` module furnishes the world with the lab device (``SampleDevice/lab`` as `SwiftBLELab`, see
/// ``Resident/lab``); the `BLEProfiles` module's `EmbeddedDevices.start()` furnishes the same world with every
/// simulated device it defines (the lab device, heart-rate monitor, battery, blood pressure, thermometer, weight
/// scale, body composition, glucose meter, clock, band, piano and scale). The `ble` tool and CoreBluetoothCompat
/// call it before they open `.virtual`, so they all see one world; residents are told apart by name and each is
/// started once, whoever asks first.
public final class EmbeddedWorld: Sendable {
    /// The simulated air.
    public let air: VirtualAir
    private let residents: Residents

    /// A simulated device living on an embedded world: its advertised name, where its controller is, and how it
    /// starts on a peripheral manager of its own.
    public struct Resident: Sendable {
        /// Stops a running resident (its services stop changing; its controller stays on the air).
        public typealias Stop = @Sendable () async -> Void
        /// The name it advertises: residents are told apart by it.
        public var name: String
        /// Where its controller is on the air.
        public var position: Position
        /// Its controller's transmit power in dBm.
        public var txPower: Int8
        /// Publishes its services and starts advertising on `manager` (powered on, its device name already
        /// ``name``); returns how to stop it.
        public var start: @Sendable (_ manager: PeripheralManager) async throws -> Stop

        /// A resident named `name` at `position` that `start` brings up.
        public init(name: String, position: Position, txPower: Int8 = 4,
                    start: @escaping @Sendable (_ manager: PeripheralManager) async throws -> Stop) {
            self.name = name
            self.position = position
            self.txPower = txPower
            self.start = start
        }

        /// The lab device (``SampleDevice/lab``) as `SwiftBLELab`, 2 m from the origin, notifying its heart rate once a
        /// second.
        public static let lab = Resident(name: SampleDevice.lab.defaultName, position: Position(x: 2)) { manager in
            let peripheral = await SamplePeripheral(manager: manager, device: .lab)
            try await peripheral.start()
            return { await peripheral.stop() }
        }
    }

    private init(air: VirtualAir) {
        self.air = air
        residents = Residents()
    }

    /// The process's world, started on first use with the lab device (``Resident/lab``).
    public static func shared() async throws -> EmbeddedWorld {
        try await Starter.shared.world()
    }

    /// Starts a world of its own with `residents` (tests that want a fresh air use this; `.virtual` uses
    /// ``shared()``).
    public static func start(seed: UInt64 = 7, residents: [Resident] = [.lab]) async throws -> EmbeddedWorld {
        let world = EmbeddedWorld(air: VirtualAir(clock: .realTime, seed: seed))
        try await world.furnish(with: residents)
        return world
    }

    /// Starts each of `residents` whose name is not on this world yet, each on a controller of its own, at the same
    /// time; returns once all of them run. A resident another caller is starting is waited for, not started twice.
    public func furnish(with residents: [Resident]) async throws {
        let starting = await self.residents.claim(residents) { resident in
            let controller = self.air.addController(.init(position: resident.position, txPower: resident.txPower))
            let manager = try await PeripheralManager(transport: controller.makeHostTransport(), deviceName: resident.name)
            return try await resident.start(manager)
        }
        for task in starting { _ = try await task.value }
    }

    /// The names of the residents started (or starting) on this world, in the order they were asked for.
    public var residentNames: [String] {
        get async { await residents.names }
    }

    /// A new controller on this air at `position`, as a host transport.
    public func makeTransport(at position: Position = Position(x: 0)) -> any HCITransport {
        air.addController(.init(position: position)).makeHostTransport()
    }

    /// The residents by name: each started once.
    private actor Residents {
        private var running: [(name: String, task: Task<Resident.Stop, any Error>)] = []

        var names: [String] { running.map(\.name) }

        /// The tasks starting `wanted`: new ones for names not seen yet, the running ones for the others.
        func claim(_ wanted: [Resident], starting: @escaping @Sendable (Resident) async throws -> Resident.Stop) -> [Task<Resident.Stop, any Error>] {
            wanted.map { resident in
                if let found = running.first(where: { $0.name == resident.name }) { return found.task }
                let task = Task { try await starting(resident) }
                running.append((resident.name, task))
                return task
            }
        }
    }

    /// Starts the shared world once, whoever asks first.
    private actor Starter {
        static let shared = Starter()
        private var started: Task<EmbeddedWorld, any Error>?
        func world() async throws -> EmbeddedWorld {
            if let started { return try await started.value }
            let task = Task { try await EmbeddedWorld.start() }
            started = task
            return try await task.value
        }
    }
}

extension HCIHost {
    /// Opens the controller a `--hci` style specification names and powers it on: `virtual` gets a controller on
    /// the process's ``EmbeddedWorld``. The errors say what failed and where (for example "no controller at
    /// tcp:127.0.0.1:9100: connection refused").
    ///
    /// - Parameters:
    ///   - spec: the controller.
    ///   - btsnoop: a file to record the host's HCI traffic in (btsnoop, H4 datalink, readable by Wireshark), from
    ///     the first command on; `nil` records nothing.
    public static func open(_ spec: HCITransportSpec, btsnoop: String? = nil, configuration: Configuration = Configuration()) async throws -> HCIHost {
        var transport: any HCITransport
        switch spec {
        case .virtual:
            transport = try await EmbeddedWorld.shared().makeTransport()
        default:
            do {
                transport = try spec.open()
            } catch let error as TransportError {
                throw TransportError(error.code, "no controller at \(spec): \(error.reason.droppingLeadingSpecification(of: spec))",
                                     errno: error.errno)
            }
        }
        if let btsnoop {
            do {
                transport = SnoopingTransport(transport, writer: try BTSnoopWriter(path: btsnoop), role: .host)
            } catch {
                await transport.close()
                throw error
            }
        }
        let host = HCIHost(transport: transport, configuration: configuration)
        do {
            try await host.powerOn()
        } catch let error as HostError {
            throw HostError(error.code, "the controller at \(spec) did not come up: \(error.reason)")
        }
        return host
    }
}

extension String {
    /// The reason without a leading `SPEC: ` that repeats the specification (transports name what they open), so
    /// "no controller at tcp:127.0.0.1:9100: " is not followed by "tcp:127.0.0.1:9100: " again.
    fileprivate func droppingLeadingSpecification(of spec: HCITransportSpec) -> String {
        guard let colon = range(of: ": ") else { return self }
        let head = self[..<colon.lowerBound]
        guard !head.isEmpty, "\(spec)".hasPrefix(head) else { return self }
        return String(self[colon.upperBound...])
    }
}
