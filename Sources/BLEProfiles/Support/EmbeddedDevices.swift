/// The profile simulators of the embedded simulated world: the fitness band ("SwiftBLE Band"), the LED piano
/// ("SwiftBLE Piano"), the streaming health scale ("SwiftBLE Scale") and a battery-powered device with Battery and
/// Device Information services ("SwiftBLE Battery"), each on a controller of its own on the
/// process's `EmbeddedWorld`, beside its sample devices. The CoreBluetooth compatibility module starts them when a
/// manager joins the embedded world, so that the tutorials' demo apps find their devices there.
public enum EmbeddedDevices {
    /// The running simulators.
    public struct Running: Sendable {
        /// The fitness band.
        public let band: SimulatedFitnessBand
        /// The LED piano.
        public let piano: SimulatedLEDPiano
        /// The streaming health scale.
        public let scale: SimulatedHealthScale
        /// The battery-powered device.
        public let battery: SimulatedBattery
    }

    /// Starts the simulators on the process's embedded world, once; later calls return the same ones.
    @discardableResult
    public static func start() async throws -> Running {
        try await Starter.shared.running()
    }

    /// Starts the simulators on `world` (a test's own world), each on a controller of its own.
    public static func start(in world: EmbeddedWorld) async throws -> Running {
        func manager(_ x: Double, _ name: String) async throws -> PeripheralManager {
            try await PeripheralManager(transport: world.makeTransport(at: Position(x: x)), deviceName: name)
        }
        let band = await SimulatedFitnessBand(manager: try await manager(3, SimulatedFitnessBand.defaultName))
        try await band.start(tick: .milliseconds(500))
        let piano = await SimulatedLEDPiano(manager: try await manager(4, SimulatedLEDPiano.defaultName))
        try await piano.start()
        let scale = await SimulatedHealthScale(manager: try await manager(5, SimulatedHealthScale.defaultName))
        try await scale.start()
        let battery = await SimulatedBattery(manager: try await manager(6, SimulatedBattery.defaultName), level: 80)
        try await battery.start(tick: .milliseconds(500))
        return Running(band: band, piano: piano, scale: scale, battery: battery)
    }

    /// Starts the simulators once, whoever asks first.
    private actor Starter {
        static let shared = Starter()
        private var started: Task<Running, any Error>?
        func running() async throws -> Running {
            if let started { return try await started.value }
            let task = Task { try await EmbeddedDevices.start(in: EmbeddedWorld.shared()) }
            started = task
            return try await task.value
        }
    }
}
