/// The embedded simulated world with every simulated GATT device on it: ``SimulatedDevice/allCases`` but the BTHome
/// broadcaster (``SimulatedDevice/bthome``, which nothing can connect to), each a resident of
/// the process's `EmbeddedWorld` on a controller of its own, advertising its ``SimulatedDevice/defaultName``
/// (`SwiftBLELab`, `SwiftBLE HRM`, `SwiftBLE Battery`, `SwiftBLE BPM`, `SwiftBLE Thermometer`, `SwiftBLE Weight`,
/// `SwiftBLE Body`, `SwiftBLE Glucose`, `SwiftBLE Clock`, `SwiftBLE Band`, `SwiftBLE Piano`, `SwiftBLE Scale`, `SwiftBLE Phone`).
///
/// This is the one definition of what `.virtual` holds: the `ble` tool and the CoreBluetooth compatibility module
/// call ``start()`` before they open `.virtual`, and an application that imports `BLEProfiles` calls it to see the
/// same world. (A program that imports only `BLE` sees the world's lab device.)
public enum EmbeddedDevices {
    /// Every device the embedded world holds, in order: the connectable ones (``SimulatedDevice/bthome`` is left out:
    /// the world's residents are GATT devices that commands and tests connect to).
    public static let devices: [SimulatedDevice] = SimulatedDevice.allCases.filter { $0 != .bthome }

    /// Furnishes the process's embedded world with every device, once (later calls find them running); returns the
    /// world.
    @discardableResult
    public static func start() async throws -> EmbeddedWorld {
        let world = try await EmbeddedWorld.shared()
        try await start(in: world)
        return world
    }

    /// Furnishes `world` (a test's own world) with every device, each on a controller of its own.
    public static func start(in world: EmbeddedWorld) async throws {
        try await world.furnish(with: devices.map(\.resident))
    }
}
