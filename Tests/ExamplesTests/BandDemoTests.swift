import BLE
import BLEProfiles
import Foundation
import Testing

@Suite(.timeLimit(.minutes(1))) struct BandDemoTests {
    /// The demo against a band the test controls: it reads and follows the steps, makes the band vibrate, and when
    /// the band drops the link it reconnects and resubscribes.
    @Test func readsStepsVibratesAndReconnectsWhenTheBandDropsTheLink() async throws {
        let air = try DemoAir()
        defer { air.shutdown() }
        let band = await SimulatedFitnessBand(manager: try await air.peripheralManager(named: "Test Band", at: 2), name: "Test Band")
        try await band.start(tick: .milliseconds(150))
        let demo = try DemoProcess("band-demo", arguments: ["--updates", "8"], hci: air.specification)
        #expect(await demo.waitFor { $0.hasPrefix("found Test Band") } != nil)
        #expect(await demo.waitFor { $0 == "vibrate" } != nil)
        // The write without response reaches the band before the test drops the link.
        let deadline = ContinuousClock.now + .seconds(10)
        while await band.alerts.isEmpty, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        // The band drops the link: the demo reconnects and its step updates go on.
        let central = try #require(await band.manager.connectedCentrals.first)
        try await band.manager.disconnect(central)
        #expect(await demo.waitFor { $0.hasPrefix("the band dropped the link") && $0.hasSuffix("reconnecting") } != nil)
        let (status, output) = await demo.finish()
        #expect(status == 0, "\(output)")
        #expect(output.filter { $0.hasPrefix("connected to Test Band") }.count == 2, "\(output)")
        #expect(output.filter { $0 == "step notifications on" }.count == 2)
        // The band starts at 87 % and loses one percent every ten ticks.
        #expect(output.contains { $0.hasPrefix("battery ") && (80...87).contains(Int($0.dropFirst(8).dropLast()) ?? 0) }, "\(output)")
        #expect(output.contains { $0.hasPrefix("device info 880f1042") })
        #expect(output.contains("done after 8 step updates"))
        // Step counts only grow.
        let steps = output.compactMap { $0.hasPrefix("steps ") ? UInt32($0.dropFirst(6)) : nil }
        #expect(steps.count >= 8)
        #expect(steps == steps.sorted())
        let alerts = await band.alerts
        #expect(alerts == [.high], "\(alerts)")
    }

    /// `swift run band-demo` on the embedded world: the band there is found and followed to the end.
    @Test func runsOnTheEmbeddedWorld() async throws {
        let demo = try DemoProcess("band-demo", arguments: ["--updates", "3"], hci: nil)
        let (status, output) = await demo.finish()
        #expect(status == 0, "\(output)")
        #expect(output.contains { $0.hasPrefix("found SwiftBLE Band") })
        #expect(output.contains("done after 3 step updates"))
    }
}
