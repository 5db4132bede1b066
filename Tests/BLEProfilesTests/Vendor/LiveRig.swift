import BLE
import BLEHost
import BLEProfiles
import BLEProtocols
import BLEVirtualController
import Testing

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
