import BLE
import BLEHost
import BLEProfiles
import BLEProtocols
import BLEVirtualController
import Testing

struct TimedOut: Error {}

/// Runs `body`, failing after `limit`.
func within<T: Sendable>(_ limit: Duration = .seconds(5), _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: limit)
            throw TimedOut()
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw TimedOut() }
        return first
    }
}

/// Waits until `condition` holds, checking every 20 ms, failing after `limit`.
func eventually(_ limit: Duration = .seconds(5), _ condition: @escaping @Sendable () async -> Bool) async throws {
    try await within(limit) {
        while !(await condition()) { try await Task.sleep(for: .milliseconds(20)) }
    }
}

/// A peripheral manager and a central connected to it on a fresh virtual air, through the whole stack.
struct LiveRig {
    let air: VirtualAir
    let manager: PeripheralManager
    let peripheralController: VirtualController
    let central: Central

    static func make(name: String) async throws -> LiveRig {
        let air = VirtualAir(clock: .realTime)
        let controller = air.addController(.init())
        let manager = try await PeripheralManager(transport: controller.makeHostTransport(), deviceName: name)
        let central = try await Central(transport: air.addController(.init(position: Position(x: 1))).makeHostTransport())
        return LiveRig(air: air, manager: manager, peripheralController: controller, central: central)
    }

    func connect() async throws -> RemotePeripheral {
        try await central.connect(LEAddress(peripheralController.address, type: .public), timeout: .seconds(5))
    }
}
