import BLE
import BLEProfiles
import BLETestSupport
import BLEVirtualController
import Testing

/// The simulators' values come from their seed: the same seed gives the same values, another seed others.
@Suite(.timeLimit(.minutes(1))) struct SimulatorDeterminismTests {
    static func manager(on air: VirtualAir, at x: Double) async throws -> PeripheralManager {
        try await PeripheralManager(transport: air.addController(.init(position: Position(x: x))).makeHostTransport(), deviceName: "seeded")
    }

    @Test func glucoseRecordsFollowTheSeed() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let manager = try await Self.manager(on: air, at: 0)
        let first = await SimulatedGlucoseMeter(manager: manager, initialRecords: 20, seed: 5).records
        let again = await SimulatedGlucoseMeter(manager: manager, initialRecords: 20, seed: 5).records
        let other = await SimulatedGlucoseMeter(manager: manager, initialRecords: 20, seed: 6).records
        #expect(first.count == 20)
        #expect(first == again)
        #expect(first != other)
        // Realistic: varied concentrations, four hours apart.
        let levels = Set(first.compactMap { $0.measurement.concentration?.milligramsPerDecilitre })
        #expect(levels.count > 5)
        #expect(first[1].measurement.baseTime == first[0].measurement.baseTime.adding(seconds: 4 * 3600))
        withExtendedLifetime(manager) {}
    }

    @Test func heartRatesFollowTheSeedAndWander() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let monitors = [
            await SimulatedHeartRateMonitor(manager: try await Self.manager(on: air, at: 0), name: "A", seed: 8),
            await SimulatedHeartRateMonitor(manager: try await Self.manager(on: air, at: 1), name: "B", seed: 8),
            await SimulatedHeartRateMonitor(manager: try await Self.manager(on: air, at: 2), name: "C", seed: 9),
        ]
        for monitor in monitors { try await monitor.start(tick: .milliseconds(5)) }
        var runs: [[UInt16]] = []
        try await withTimeout(5) {
            for monitor in monitors {
                while await monitor.sent.count < 30 { try await Task.sleep(for: .milliseconds(5)) }
                await monitor.stop()
            }
        }
        for monitor in monitors { runs.append(Array(await monitor.sent.map(\.beatsPerMinute).prefix(30))) }
        #expect(runs[0] == runs[1])
        #expect(runs[0] != runs[2])
        #expect(Set(runs[0]).count > 3)
        #expect(runs[0].allSatisfy { (50...180).contains($0) })
    }
}
