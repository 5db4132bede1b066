import BLEHost
import BLETestSupport
import BLETransport
import BLEVirtualController
import BLEWire
import Testing

/// Hosts on virtual controllers on one real-time simulated air.
final class World: Sendable {
    let air = VirtualAir(clock: .realTime, seed: 11)

    func host(at x: Double = 0, aclSize: Int = 27, aclCount: Int = 8,
              configuration: HCIHost.Configuration = HCIHost.Configuration()) async throws -> (HCIHost, VirtualController) {
        let controller = air.addController(.init(position: Position(x: x), aclBufferSize: aclSize, aclBufferCount: aclCount))
        let host = HCIHost(transport: controller.makeHostTransport(), configuration: configuration)
        try await host.powerOn()
        return (host, controller)
    }

    deinit { air.shutdown() }
}

/// Waits for the first event matching `predicate`.
func next<T: Sendable>(_ events: AsyncStream<HostEvent>, _ pick: @escaping @Sendable (HostEvent) -> T?) async throws -> T {
    try await withTimeout {
        for await event in events { if let value = pick(event) { return value } }
        throw TimedOut()
    }
}

/// Connects `central` to advertising `peripheral`; returns both sides' connections.
func connect(_ central: HCIHost, _ peripheral: HCIHost, peripheralAddress: BluetoothAddress) async throws -> (HostConnection, HostConnection) {
    let peripheralEvents = await peripheral.events()
    try await peripheral.startAdvertising(.init(data: AdvertisingData(flags: .leOnlyGeneralDiscoverable, localName: "P")))
    let c = try await central.connect(to: LEAddress(peripheralAddress, type: .public), timeout: .seconds(5))
    let p = try await next(peripheralEvents) { if case .connected(let c) = $0 { c } else { nil } }
    return (c, p)
}
