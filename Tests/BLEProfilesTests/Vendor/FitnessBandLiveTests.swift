import BLE
import BLEHost
import BLEProfiles
import BLEProtocols
import BLETestSupport
import BLEVirtualController
import Testing

@Suite(.timeLimit(.minutes(1))) struct FitnessBandLiveTests {
    @Test func theFitnessBandCountsStepsAndVibrates() async throws {
        let rig = try await LiveRig.make(name: SimulatedFitnessBand.defaultName)
        defer { rig.air.shutdown() }
        let band = await SimulatedFitnessBand(manager: rig.manager)
        try await band.start(tick: .milliseconds(100))
        let client = FitnessBandClient(peripheral: try await rig.connect())

        #expect(try await client.deviceInfo() == band.deviceInfo)
        let battery = try await client.battery()
        #expect(battery.chargeCycles == 12)
        #expect(battery.percent <= 87)
        let first = try await client.steps()
        #expect(first <= (await band.steps))

        let events = try await client.events()
        let seen = try await withTimeout(5) {
            var seen: [FitnessBandClient.Event] = []
            for try await event in events {
                seen.append(event)
                if seen.count(where: { if case .steps = $0 { true } else { false } }) == 3 { break }
            }
            return seen
        }
        #expect(seen.first == .deviceInfo(band.deviceInfo))
        let steps = seen.compactMap { if case .steps(let count) = $0 { count } else { nil } }
        #expect(steps.count == 3)
        #expect(zip(steps, steps.dropFirst()).allSatisfy { $0 < $1 })
        #expect(steps.first.map { $0 >= first } == true)
        #expect(try await client.steps() >= steps[2])

        try await client.vibrate()
        try await client.vibrate(.shake)
        try await client.stopVibrating()
        // A value that is neither an alert level nor SHAKE is ignored.
        let remote = client.peripheral
        let alertService = try #require(try await remote.discoverServices([FitnessBand.immediateAlertService]).first)
        let alertLevel = try #require(try await remote.discoverCharacteristics([FitnessBand.alertLevel], for: alertService).first)
        try await remote.writeValue([0x07], for: alertLevel, type: .withoutResponse)
        try await client.vibrate(.mild)
        try await eventually(5) { await band.alerts.count == 4 }
        #expect(await band.alerts == [.high, .shake, .stop, .mild])
        #expect(await band.isVibrating)
        try await client.stopVibrating()
        try await eventually(5) { await band.alerts.count == 5 }
        #expect(await band.isVibrating == false)
        await band.stop()
        withExtendedLifetime((rig, events)) {}
    }
}
