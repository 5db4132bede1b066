import BLE
import BLEHost
import BLEProfiles
import Foundation

/// Whether the application may use Bluetooth, with CoreBluetooth's raw values.
public enum CBManagerAuthorization: Int, Sendable {
    /// The user has not decided yet.
    case notDetermined = 0
    /// Bluetooth use is restricted on this device.
    case restricted = 1
    /// The user denied Bluetooth use.
    case denied = 2
    /// The application may use Bluetooth.
    case allowedAlways = 3
}

/// The common base of ``CBCentralManager`` and ``CBPeripheralManager``, as CoreBluetooth's `CBManager`.
public class CBManager: NSObject, @unchecked Sendable {
    /// The adapter's state, as last reported to the delegate (`unknown` until the controller is up).
    public var state: CBManagerState { .unknown }

    /// Whether the application may use Bluetooth: always allowed on Linux, where there is no per-application
    /// permission (access to a controller is the operating system's business: a manager whose controller cannot be
    /// opened for lack of rights reports the state ``CBManagerState/unauthorized``).
    public class var authorization: CBManagerAuthorization { .allowedAlways }

    /// The same as the class's ``authorization`` (the instance property of iOS 13).
    @available(*, deprecated, message: "use CBManager.authorization")
    public var authorization: CBManagerAuthorization { Self.authorization }

    /// The controller a new manager opens: `setController(_:)`'s, else `SWIFT_BLE_HCI`'s, else the
    /// embedded world. A `SWIFT_BLE_HCI` that does not parse gives a manager whose state is `unsupported`.
    static func controller() -> Result<HCITransportSpec, TransportError> {
        // A manager created in a simulated world gets a controller of that world (``openAdapter(_:security:)``).
        if SimulatedWorld.current != nil { return .success(.virtual) }
        if let chosen = controllerInThisTask { return .success(chosen) }
        return controller(configured: configuredController.withLock { $0 }, environment: ProcessInfo.processInfo.environment)
    }

    /// A controller for the managers created within one task only (tests running side by side in one process must
    /// not change each other's choice, which `setController(_:)` and `SWIFT_BLE_HCI` make for the whole process).
    @TaskLocal static var controllerInThisTask: HCITransportSpec?

    /// The rule of ``controller()`` on given inputs (what `setController(_:)` set, and an environment), so it can be
    /// checked without changing the process's own, which every manager created meanwhile reads.
    static func controller(configured: HCITransportSpec?, environment: [String: String]) -> Result<HCITransportSpec, TransportError> {
        if let configured { return .success(configured) }
        guard let text = environment["SWIFT_BLE_HCI"], !text.isEmpty else { return .success(.virtual) }
        do {
            return .success(try HCITransportSpec(parsing: text))
        } catch {
            return .failure(TransportError(.openFailed, "SWIFT_BLE_HCI=\(text): \(error)"))
        }
    }

    private static let configuredController = Locked<HCITransportSpec?>(nil)

    /// Names the controller that managers (central and peripheral) created from now on open, as `SWIFT_BLE_HCI`
    /// does (and instead of it); `nil` goes back to the environment variable, or the embedded world when it is unset.
    public static func setController(_ specification: HCITransportSpec?) {
        configuredController.withLock { $0 = specification }
    }

    /// Names the controller that managers created from now on open, in `ble --hci` syntax (`virtual`, `hci0`,
    /// `tcp:127.0.0.1:9100`, `serial:/dev/ttyACM0`...). Throws when the text names no controller.
    public static func setController(_ specification: String) throws {
        setController(try HCITransportSpec(parsing: specification))
    }

    private static let configuredSecurity = Locked<(configuration: SecurityConfiguration, agent: (any PairingAgent)?)?>(nil)

    /// How managers created from now on pair, encrypt and bond — the I/O capabilities they declare, whether they
    /// bond and where the bonds are kept — and who answers the pairing questions (consent, a passkey to show or to
    /// type, a number to compare): on iOS the system's pairing dialog, here a ``PairingAgent`` of the application
    /// (`nil`: the automatic agent, which consents and has no display or keyboard). A peripheral that refuses a
    /// request for lack of security makes a central pair (or encrypt with its bond) and repeat it, as iOS does.
    public static func setSecurity(_ configuration: SecurityConfiguration, pairingAgent: (any PairingAgent)? = nil) {
        configuredSecurity.withLock { $0 = (configuration, pairingAgent) }
    }

    /// The security a new manager uses: ``setSecurity(_:pairingAgent:)``'s, else the defaults (Just Works, bonds in
    /// memory for the embedded world and in the default bond file otherwise).
    static func security() -> (configuration: SecurityConfiguration, agent: (any PairingAgent)?)? {
        configuredSecurity.withLock { $0 }
    }

    private static func open(_ spec: HCITransportSpec, security: (configuration: SecurityConfiguration, agent: (any PairingAgent)?)?)
        async throws -> Adapter {
        guard let security else { return try await Adapter.open(spec) }
        let adapter = try await Adapter.open(spec, security: security.configuration)
        if let agent = security.agent { await adapter.setPairingAgent(agent) }
        return adapter
    }

    /// Lets go of an adapter ``openAdapter(_:security:)`` gave: powers it off, unless other managers of the process
    /// still share it.
    static func closeAdapter(_ adapter: Adapter, choice: Result<HCITransportSpec, TransportError>) async {
        if case .success(let spec) = choice, spec != .virtual {
            await SharedAdapters.shared.release(spec, adapter: adapter)
        } else {
            await adapter.powerOff()
        }
    }

    /// Opens the controller `choice` names (``controller()``'s answer when the manager was created), powered on; a
    /// controller that cannot be opened gives an adapter whose state says why (unsupported, or unauthorized without
    /// the rights).
    static func openAdapter(_ choice: Result<HCITransportSpec, TransportError>,
                            security: (configuration: SecurityConfiguration, agent: (any PairingAgent)?)?) async -> Adapter {
        if let world = SimulatedWorld.current { return await world.openAdapter(security: security) }
        switch choice {
        case .failure(let error):
            return unavailable(error)
        case .success(let spec):
            do {
                if spec == .virtual {
                    // The embedded world with every simulated device (the one the ble tool sees), started once.
                    try await EmbeddedDevices.start()
                    return try await open(spec, security: security)
                }
                // A real controller (or a TCP port) is opened once per process: the managers share its adapter, as
                // an iOS app's managers share the radio.
                return try await SharedAdapters.shared.acquire(spec) { try await open(spec, security: security) }
            } catch let error as TransportError {
                return unavailable(error)
            } catch {
                return unavailable(TransportError(.openFailed, "\(error)"))
            }
        }
    }

    /// An adapter whose controller could not be opened: its state says why (`unauthorized` when the operating system
    /// denied access, `unsupported` otherwise) and every operation fails. Made through `BLEHost`, as `BLE` offers no
    /// adapter without a controller.
    private static func unavailable(_ error: TransportError) -> Adapter {
        Adapter(host: HCIHost(unavailable: error))
    }
}

/// The adapters of the real controllers (and TCP ports) this process opened, shared by its managers: a controller can
/// be opened once (a user channel is exclusive; a TCP controller serves one host at a time).
actor SharedAdapters {
    static let shared = SharedAdapters()
    private var adapters: [HCITransportSpec: (opening: Task<Adapter, any Error>, users: Int)] = [:]

    /// The adapter of `spec`, opened by `open` unless another manager holds it already (the first manager's security
    /// configuration applies to all).
    func acquire(_ spec: HCITransportSpec, open: @escaping @Sendable () async throws -> Adapter) async throws -> Adapter {
        if let entry = adapters[spec] {
            adapters[spec] = (entry.opening, entry.users + 1)
            return try await entry.opening.value
        }
        let opening = Task { try await open() }
        adapters[spec] = (opening, 1)
        do {
            return try await opening.value
        } catch {
            adapters[spec] = nil
            throw error
        }
    }

    /// One manager less on `spec`'s adapter; the last one powers it off.
    func release(_ spec: HCITransportSpec, adapter: Adapter) async {
        guard let entry = adapters[spec] else {
            await adapter.powerOff()
            return
        }
        if entry.users > 1 {
            adapters[spec] = (entry.opening, entry.users - 1)
            return
        }
        adapters[spec] = nil
        await adapter.powerOff()
    }
}
