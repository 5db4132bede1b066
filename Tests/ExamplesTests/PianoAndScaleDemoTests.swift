import BLE
import BLEProfiles
import Foundation
import Testing

@Suite(.timeLimit(.minutes(1))) struct PianoAndScaleDemoTests {
    /// The piano demo lights all 115 keys in order with writes with response, decodes the key events the piano
    /// plays, and reconnects when the piano drops the link.
    @Test func pianoDemoLightsEveryKeyInOrderAndPrintsKeyEvents() async throws {
        let air = try DemoAir()
        defer { air.shutdown() }
        let piano = await SimulatedLEDPiano(manager: try await air.peripheralManager(named: "Test Piano", at: 2), name: "Test Piano")
        try await piano.start(tick: .milliseconds(100))
        let demo = try DemoProcess("piano-demo", arguments: ["--notes", "6"], hci: air.specification)
        #expect(await demo.waitFor { $0 == "connected" } != nil)
        // The piano drops the link once; the demo connects again (and keeps lighting, in order).
        let central = try #require(await piano.manager.connectedCentrals.first)
        try await piano.manager.disconnect(central)
        let (status, output) = await demo.finish()
        #expect(status == 0, "\(output)")
        #expect(output.contains { $0.hasPrefix("disconnected (") && $0.hasSuffix("reconnecting") }, "\(output)")
        #expect(output.contains("lit 115 keys"))
        let frames = await piano.ledFrames
        // Every key lit, in order: the link dropped before the sweep began (the demo sweeps once it found the
        // characteristic on the new link).
        let keys = frames.map(\.key)
        #expect(Set(keys) == Set(0..<115), "\(keys)")
        #expect(keys == keys.sorted())
        // The key events printed are the piano's tune: names decoded from the MIDI note numbers it played.
        let names = ["C", "C#", "D", "D#", "E", "F", "F#", "G", "G#", "A", "A#", "B"]
        let tune = Set(SimulatedLEDPiano.tune.map { "\(names[Int($0) % 12])\(Int($0) / 12 - 1)" })
        let printed = output.filter { $0.hasPrefix("note on ") }.map { String($0.split(separator: " ")[2]) }
        #expect(printed.count >= 3, "\(output)")
        #expect(Set(printed).isSubset(of: tune), "\(printed)")
    }

    /// The scale demo reassembles the frames the scale streams in arbitrary chunks (with garbage between) into the
    /// readings the scale sent.
    @Test func scaleDemoReassemblesTheReadingsTheScaleSent() async throws {
        let air = try DemoAir()
        defer { air.shutdown() }
        let scale = await SimulatedHealthScale(manager: try await air.peripheralManager(named: "Test Scale", at: 2), name: "Test Scale")
        try await scale.start(tick: .milliseconds(50))
        let demo = try DemoProcess("scale-demo", arguments: ["--readings", "30"], hci: air.specification)
        let (status, output) = await demo.finish()
        #expect(status == 0, "\(output)")
        #expect(output.first == "powered on; scanning for the scale service")
        let printed = output.filter { $0.hasPrefix("reading ") }
        #expect(printed.count >= 30)
        let sent = await scale.sentReadings
        let expected = sent.prefix(printed.count).map {
            String(format: "reading %d: %.3f kg, impedance %d ohm", Int($0.sequence), Double($0.weightGrams) / 1000, Int($0.impedanceOhms))
        }
        #expect(printed == expected)
        #expect(await scale.framesSplit > 0)
    }

    @Test func pianoAndScaleDemosRunOnTheEmbeddedWorld() async throws {
        let piano = try DemoProcess("piano-demo", arguments: ["--notes", "2"], hci: nil)
        let scale = try DemoProcess("scale-demo", arguments: ["--readings", "3"], hci: nil)
        let (pianoStatus, pianoOutput) = await piano.finish()
        #expect(pianoStatus == 0, "\(pianoOutput)")
        #expect(pianoOutput.contains("lit 115 keys"))
        let (scaleStatus, scaleOutput) = await scale.finish()
        #expect(scaleStatus == 0, "\(scaleOutput)")
        #expect(scaleOutput.contains("done after 3 readings"))
    }
}
