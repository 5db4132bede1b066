import BLE
import BLEProfiles
import BLETestSupport
import BLEVirtualController
import BLEWire
import Testing

/// The first `count` values of `stream`, or ``TimedOut``.
func standardCollect<T: Sendable>(_ count: Int, from stream: AsyncThrowingStream<T, any Error>, seconds: Double = 5) async throws -> [T] {
    try await withTimeout(seconds) {
        var values: [T] = []
        for try await value in stream {
            values.append(value)
            if values.count == count { break }
        }
        return values
    }
}

/// A simulator on a peripheral manager and a central connected to it, on an air of their own (real time).
struct StandardLink<Simulator: Sendable>: Sendable {
    let air: VirtualAir
    let manager: PeripheralManager
    let simulator: Simulator
    let central: Central
    let remote: RemotePeripheral

    /// Starts a simulator made by `make` on a fresh air and connects a central to it.
    static func start(_ make: @Sendable (PeripheralManager) async throws -> Simulator) async throws -> StandardLink {
        let air = VirtualAir(clock: .realTime)
        let controller = air.addController(.init())
        let manager = try await PeripheralManager(transport: controller.makeHostTransport(), deviceName: "standard")
        let simulator = try await make(manager)
        let central = try await Central(transport: air.addController(.init(position: Position(x: 1))).makeHostTransport())
        let remote = try await central.connect(LEAddress(controller.address, type: .public), timeout: .seconds(5))
        return StandardLink(air: air, manager: manager, simulator: simulator, central: central, remote: remote)
    }
}

/// Whether decoding `bytes` as `T` throws a ``WireError`` with `code`.
func standardThrows<T: WireCodable>(_ type: T.Type, _ bytes: [UInt8], _ code: WireError.Code) -> Bool {
    decodeErrorCode(type, bytes) == code
}
