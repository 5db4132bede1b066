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

/// The README's section "Testing iOS Bluetooth code on Linux" shows one of the tests above: its code block must be
/// that test as written here (line by line, indentation aside), so that the README's sample is code that compiles
/// and passes.
@Test func theReadmeSampleIsOneOfTheseTests() throws {
    let here = URL(fileURLWithPath: #filePath)
    let root = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
    let source = try String(contentsOf: here, encoding: .utf8)
    let section = try #require(readme.range(of: "## Testing iOS Bluetooth code on Linux"))
    let opening = try #require(readme.range(of: "```swift\n", range: section.upperBound..<readme.endIndex))
    let closing = try #require(readme.range(of: "\n```", range: opening.upperBound..<readme.endIndex))
    func lines(_ text: Substring) -> [String] {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
    }
    let sample = lines(readme[opening.upperBound..<closing.lowerBound])
    let tests = lines(source[...])
    #expect(sample.count > 5)
    let found = tests.indices.contains { start in
        start + sample.count <= tests.count && Array(tests[start..<start + sample.count]) == sample
    }
    #expect(found, "the README's sample is not one of HeartRateMonitorManagerTests' tests")
}
