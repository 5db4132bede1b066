import BLE
import BLEHost
import BLETestSupport
import BLETransport
import BLEVirtualController
import BLEWire

/// Two devices on one real-time simulated air, the fixture most end-to-end tests start from (Bumble's `TwoDevices`):
/// a ``PeripheralManager`` on a controller at the origin and a ``Central`` on another `distance` metres away, each
/// with the security configuration the test gives. The test publishes what it needs and advertises, then
/// ``connect(timeout:)`` connects the central to the peripheral by its public address. The test ends it with
/// ``shutdown()`` (a `defer` also keeps the fixture alive to the end of the test; the air shuts down with the
/// fixture otherwise).
///
/// ```swift
/// let devices = try await TwoDevices(peripheralName: "UART")
/// defer { devices.shutdown() }
/// try await devices.peripheral.add(service)
/// try await devices.peripheral.startAdvertising(name: "UART")
/// let remote = try await devices.connect()
/// ```
public final class TwoDevices: Sendable {
    /// The simulated air both controllers are on.
    public let air: VirtualAir
    /// The peripheral's controller (at the origin).
    public let peripheralController: VirtualController
    /// The central's controller.
    public let centralController: VirtualController
    /// The peripheral manager, powered on, its GAP device name `peripheralName`, publishing nothing yet.
    public let peripheral: PeripheralManager
    /// The central, powered on.
    public let central: Central

    /// Starts both devices on a new air.
    public init(peripheralName: String = "Peripheral", distance: Double = 1,
                peripheralSecurity: SecurityConfiguration = SecurityConfiguration(),
                centralSecurity: SecurityConfiguration = SecurityConfiguration(),
                peripheralController configuration: VirtualController.Configuration = .init(),
                centralController centralConfiguration: VirtualController.Configuration? = nil,
                seed: UInt64 = 0x5EED) async throws {
        let air = VirtualAir(clock: .realTime, seed: seed)
        do {
            peripheralController = air.addController(configuration)
            centralController = air.addController(centralConfiguration ?? .init(position: Position(x: distance)))
            peripheral = try await PeripheralManager(transport: peripheralController.makeHostTransport(), deviceName: peripheralName,
                                                     security: peripheralSecurity)
            central = try await Central(transport: centralController.makeHostTransport(), security: centralSecurity)
        } catch {
            air.shutdown()
            throw error
        }
        self.air = air
    }

    /// The peripheral's public address, which it advertises with unless the test chose another.
    public var peripheralAddress: LEAddress { LEAddress(peripheralController.address, type: .public) }

    /// Connects the central to the advertising peripheral (``peripheralAddress``), exchanging MTUs unless told not to.
    public func connect(timeout: Duration = .seconds(5), exchangeMTU: Bool = true) async throws -> RemotePeripheral {
        try await central.connect(peripheralAddress, timeout: timeout, exchangeMTU: exchangeMTU)
    }

    /// Shuts the air down: both devices' controllers stop.
    public func shutdown() { air.shutdown() }

    deinit { air.shutdown() }
}
