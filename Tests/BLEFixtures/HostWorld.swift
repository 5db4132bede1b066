import BLEHost
import BLETestSupport
import BLETransport
import BLEVirtualController
import BLEWire
import Testing

/// Hosts on virtual controllers on one real-time simulated air: the host-level fixture (``TwoDevices`` is the one on
/// the public API). ``host(at:aclSize:aclCount:configuration:)`` adds a powered-on host; ``connect(_:_:peripheralAddress:)``
/// connects two of them. The air shuts down with the world.
public final class World: Sendable {
    /// The simulated air.
    public let air = VirtualAir(clock: .realTime, seed: 11)

    /// An empty world.
    public init() {}

    /// Adds a controller at `x` metres with `aclCount` buffers of `aclSize` octets, and a powered-on host on it.
    public func host(at x: Double = 0, aclSize: Int = 27, aclCount: Int = 8,
              configuration: HCIHost.Configuration = HCIHost.Configuration()) async throws -> (HCIHost, VirtualController) {
        let controller = air.addController(.init(position: Position(x: x), aclBufferSize: aclSize, aclBufferCount: aclCount))
        let host = HCIHost(transport: controller.makeHostTransport(), configuration: configuration)
        try await host.powerOn()
        return (host, controller)
    }

    deinit { air.shutdown() }
}

/// Waits for the first event matching `predicate`.
public func next<T: Sendable>(_ events: AsyncStream<HostEvent>, _ pick: @escaping @Sendable (HostEvent) -> T?) async throws -> T {
    try await withTimeout {
        for await event in events { if let value = pick(event) { return value } }
        throw TimedOut()
    }
}

/// Connects `central` to `peripheral`, which it makes advertise; returns both sides' connections.
public func connect(_ central: HCIHost, _ peripheral: HCIHost, peripheralAddress: BluetoothAddress) async throws -> (HostConnection, HostConnection) {
    let peripheralEvents = await peripheral.events()
    try await peripheral.startAdvertising(.init(data: AdvertisingData(flags: .leOnlyGeneralDiscoverable, localName: "P")))
    let c = try await central.connect(to: LEAddress(peripheralAddress, type: .public), timeout: .seconds(5))
    let p = try await next(peripheralEvents) { if case .connected(let c) = $0 { c } else { nil } }
    return (c, p)
}
