// heart-rate-demo: HeartRateKit's manager, as an app uses it, run against a simulated chest strap in a simulated
// world on a manual clock: it finds the strap, reads where it is worn, prints heart rates, and reconnects after the
// strap's battery is changed. The same manager runs on a real controller in an app (`HeartRateMonitorManager()`
// outside a world opens the controller SWIFT_BLE_HCI names).
//
//     swift run heart-rate-demo
import CoreBluetooth
import HeartRateKit

let heartRate = CBMutableService(type: HeartRateMonitorManager.heartRateService, primary: true)
heartRate.characteristics = [
    CBMutableCharacteristic(type: HeartRateMonitorManager.measurementCharacteristic, properties: [.notify], value: nil,
                            permissions: []),
    CBMutableCharacteristic(type: HeartRateMonitorManager.bodySensorLocationCharacteristic, properties: [.read],
                            value: Data([0x02]), permissions: [.readable]),
]
let strap = SimulatedPeripheral(name: "Chest Strap", advertising: [HeartRateMonitorManager.heartRateService],
                                services: [heartRate])
let world = SimulatedWorld()
try await world.add(strap)

/// The demo's steps, away from the main actor (the conditions given to `advance(until:)` stay in this task).
enum Demo {
    static func show(_ manager: HeartRateMonitorManager, in world: SimulatedWorld) {
        let location = manager.sensorLocation.map { " (worn: \($0))" } ?? ""
        let rate = manager.heartRate.map { ", \($0) bpm" } ?? ""
        print("t=\(world.now): \(manager.state)\(location)\(rate)")
    }

    static func run(_ world: SimulatedWorld, strap: SimulatedPeripheral) async throws -> Bool {
        try await world.run { () async throws -> Bool in
            let manager = HeartRateMonitorManager()
            guard await world.advance(until: { manager.state == .ready && manager.sensorLocation != nil }) else { return false }
            print("connected to \(manager.monitorName ?? "?")")
            show(manager, in: world)
            for bpm in [72, 75, 79] {
                try await strap.setValue(Data([0x00, UInt8(bpm)]), for: HeartRateMonitorManager.measurementCharacteristic)
                guard await world.advance(until: { manager.heartRate == bpm }) else { return false }
                show(manager, in: world)
            }
            print("the strap's battery is changed")
            await strap.powerOff()
            guard await world.advance(until: { manager.state == .reconnecting }) else { return false }
            show(manager, in: world)
            try await strap.powerOn()
            guard await world.advance(until: { manager.state == .ready }) else { return false }
            try await strap.setValue(Data([0x00, 81]), for: HeartRateMonitorManager.measurementCharacteristic)
            guard await world.advance(until: { manager.heartRate == 81 }) else { return false }
            show(manager, in: world)
            print("reconnected \(manager.reconnections) time(s)")
            return true
        }
    }
}

if try await !Demo.run(world, strap: strap) {
    print("the demo did not reach the state it waited for")
    exit(1)
}
