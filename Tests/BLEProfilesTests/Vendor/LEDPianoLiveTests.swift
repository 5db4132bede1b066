import BLE
import BLEHost
import BLEProfiles
import BLEProtocols
import BLETestSupport
import BLEVirtualController
import Testing

@Suite(.timeLimit(.minutes(1))) struct LEDPianoLiveTests {
    @Test func thePianoLightsEveryKeyInOrderAndPlays() async throws {
        let rig = try await LiveRig.make(name: SimulatedLEDPiano.defaultName)
        defer { rig.air.shutdown() }
        let piano = await SimulatedLEDPiano(manager: rig.manager)
        try await piano.start(tick: .milliseconds(50))
        let client = LEDPianoClient(peripheral: try await rig.connect())

        let keys = try await client.keyEvents()
        try await client.sweep(mode: .on)
        let expected = try (0...PianoLEDFrame.maximumKey).map { try PianoLEDFrame(key: $0, mode: .on) }
        #expect(await piano.ledFrames == expected)
        #expect(await piano.leds.allSatisfy { $0 == .on })

        try await client.light(key: 0x10, mode: .off)
        #expect(await piano.leds[0x10] == .off)
        #expect(await piano.ledFrames.last == (try PianoLEDFrame(key: 0x10, mode: .off)))

        // A malformed frame is refused with Value Not Allowed and not recorded; a bad key never leaves the client.
        do {
            try await client.write([0xF0, 0x3D, 0x3D, 0x73, 0x01, 0xF7])
            Issue.record("the malformed frame was accepted")
        } catch let error as GATTError {
            if let code = error.code.attError { #expect(code == LEDPiano.malformedFrameError) } else { Issue.record("\(error)") }
        }
        #expect(await piano.refusedWrites == [[0xF0, 0x3D, 0x3D, 0x73, 0x01, 0xF7]])
        await #expect(throws: WireError.self) { try await client.light(key: 0x73) }
        #expect(await piano.ledFrames.count == 116)

        let messages = try await withTimeout(5) {
            var messages: [MIDIMessage] = []
            for try await message in keys {
                messages.append(message)
                if messages.count == 6 { break }
            }
            return messages
        }
        // The piano records a note once its update returned, which may be after the central got the notification.
        try await eventually(5) { await piano.played.count >= 6 }
        let played = await piano.played
        #expect(Array(played.prefix(6)) == messages)
        // Presses and releases alternate, each release the key just pressed.
        for (previous, message) in zip(messages, messages.dropFirst()) {
            switch (previous, message) {
            case (.noteOn(_, let pressed, _), .noteOff(_, let released, let velocity)):
                #expect(released == pressed)
                #expect(velocity == 0)
            case (.noteOff, .noteOn(_, _, let velocity)):
                #expect((64...123).contains(velocity))
            default:
                Issue.record("presses and releases do not alternate: \(previous), \(message)")
            }
        }
        await piano.stop()
        withExtendedLifetime((rig, keys)) {}
    }

    /// A piano that notifies something other than note messages: the key stream throws a typed error.
    @Test func aNonNoteNotificationEndsTheKeyStreamWithATypedError() async throws {
        let rig = try await LiveRig.make(name: "Odd Piano")
        defer { rig.air.shutdown() }
        try await rig.manager.add(GATTServiceDefinition(uuid: LEDPiano.keyService, characteristics: [
            GATTCharacteristicDefinition(uuid: LEDPiano.keyEvents, properties: .notify, permissions: []),
        ]))
        let requests = await rig.manager.requests()
        try await rig.manager.startAdvertising(name: "Odd Piano", serviceUUIDs: [LEDPiano.keyService])
        let client = LEDPianoClient(peripheral: try await rig.connect())
        let keys = try await client.keyEvents()
        try await withTimeout(5) {
            for await request in requests { if case .subscription(LEDPiano.keyEvents, _, true, _) = request.kind { return } }
        }
        try await rig.manager.updateValue([0x90, 60, 100], for: LEDPiano.keyEvents)
        try await rig.manager.updateValue([0xB0, 7, 100], for: LEDPiano.keyEvents)   // a control change
        let outcome = try await withTimeout(5) { () -> ([MIDIMessage], WireError?) in
            var messages: [MIDIMessage] = []
            do {
                for try await message in keys { messages.append(message) }
                return (messages, nil)
            } catch let error as WireError {
                return (messages, error)
            }
        }
        #expect(outcome.0 == [.noteOn(channel: 0, note: 60, velocity: 100)])
        #expect(outcome.1?.code == .unknownType)
        withExtendedLifetime((rig, keys)) {}
    }
}
