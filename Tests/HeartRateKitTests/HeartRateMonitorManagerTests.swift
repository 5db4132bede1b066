// The heart-rate manager's unit tests, written as an iOS developer writes them, run on Linux against simulated
// monitors: each test declares a monitor, creates the manager in the simulated world, and moves the world's time
// until the manager reaches the state it expects. The manager runs unchanged over the real Bluetooth stack.
import CoreBluetooth
import Foundation
import HeartRateKit
import Testing

@Suite(.timeLimit(.minutes(1))) struct HeartRateMonitorManagerTests {
    /// A chest strap with the Heart Rate service: the measurement (notify) and the body sensor location (read,
    /// "chest").
    static func makeMonitor() -> SimulatedPeripheral {
        let heartRate = CBMutableService(type: HeartRateMonitorManager.heartRateService, primary: true)
        heartRate.characteristics = [
            CBMutableCharacteristic(type: HeartRateMonitorManager.measurementCharacteristic, properties: [.notify],
                                    value: nil, permissions: []),
            CBMutableCharacteristic(type: HeartRateMonitorManager.bodySensorLocationCharacteristic, properties: [.read],
                                    value: Data([0x01]), permissions: [.readable]),
        ]
        return SimulatedPeripheral(name: "Chest Strap", advertising: [HeartRateMonitorManager.heartRateService],
                                   services: [heartRate])
    }

    @Test func findsTheMonitorAndReportsItsHeartRate() async throws {
        let world = SimulatedWorld()
        let monitor = Self.makeMonitor()
        try await world.add(monitor)
        try await world.run {
            let manager = HeartRateMonitorManager()
            #expect(await world.advance(until: { manager.state == .ready && manager.sensorLocation != nil }))
            #expect(manager.monitorName == "Chest Strap")
            #expect(manager.sensorLocation == .chest)

            try await monitor.setValue(Data([0x00, 72]), for: HeartRateMonitorManager.measurementCharacteristic)
            #expect(await world.advance(until: { manager.heartRate == 72 }))
            // A rate above 255 comes in two bytes (flag bit 0).
            try await monitor.setValue(Data([0x01, 0x2C, 0x01]), for: HeartRateMonitorManager.measurementCharacteristic)
            #expect(await world.advance(until: { manager.heartRate == 300 }))
            #expect(manager.lastError == nil)
        }
    }

    @Test func aFailedSensorLocationReadIsReportedAndTheHeartRateStillArrives() async throws {
        let world = SimulatedWorld()
        let monitor = Self.makeMonitor()
        monitor.onRead(HeartRateMonitorManager.bodySensorLocationCharacteristic) { _ in .failure(CBATTError(.readNotPermitted)) }
        try await world.add(monitor)
        try await world.run {
            let manager = HeartRateMonitorManager()
            #expect(await world.advance(until: { manager.state == .ready && manager.lastError != nil }))
            let error = try #require(manager.lastError as? CBATTError)
            #expect(error.code == .readNotPermitted)
            #expect(manager.sensorLocation == nil)

            try await monitor.setValue(Data([0x00, 64]), for: HeartRateMonitorManager.measurementCharacteristic)
            #expect(await world.advance(until: { manager.heartRate == 64 }))
        }
    }

    @Test func reconnectsWhenTheMonitorComesBack() async throws {
        let world = SimulatedWorld()
        let monitor = Self.makeMonitor()
        try await world.add(monitor)
        try await world.run {
            let manager = HeartRateMonitorManager()
            #expect(await world.advance(until: { manager.state == .ready && manager.sensorLocation != nil }))

            await monitor.powerOff()                  // the strap's battery runs out
            #expect(await world.advance(until: { manager.state == .reconnecting }))
            #expect((manager.lastError as? CBError)?.code == .connectionTimeout)

            await world.advance(by: .seconds(45), step: .milliseconds(100))   // a pending connection waits
            #expect(manager.state == .reconnecting)

            try await monitor.powerOn()               // a fresh battery
            #expect(await world.advance(until: { manager.state == .ready }))
            #expect(manager.reconnections == 1)
            try await monitor.setValue(Data([0x00, 80]), for: HeartRateMonitorManager.measurementCharacteristic)
            #expect(await world.advance(until: { manager.heartRate == 80 }))
        }
    }

    @Test func goesIdleWhenBluetoothIsOffAndReconnectsWhenItIsBackOn() async throws {
        let world = SimulatedWorld()
        let monitor = Self.makeMonitor()
        try await world.add(monitor)
        try await world.run {
            let manager = HeartRateMonitorManager()
            #expect(await world.advance(until: { manager.state == .ready }))

            await world.turnBluetoothOff()            // Control Center
            #expect(await world.advance(until: { manager.state == .idle }))
            await world.advance(by: .seconds(5))
            #expect(manager.state == .idle)

            await world.turnBluetoothOn()
            #expect(await world.advance(until: { manager.state == .ready }))
            #expect(manager.reconnections == 1)
            try await monitor.setValue(Data([0x00, 90]), for: HeartRateMonitorManager.measurementCharacteristic)
            #expect(await world.advance(until: { manager.heartRate == 90 }))
        }
    }
}
