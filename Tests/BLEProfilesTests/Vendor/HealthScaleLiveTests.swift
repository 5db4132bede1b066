import BLE
import BLEHost
import BLEProfiles
import BLEProtocols
import BLETestSupport
import BLEVirtualController
import Testing

@Suite(.timeLimit(.minutes(1))) struct HealthScaleLiveTests {
    @Test func theScaleStreamIsReassembledIntoTheReadingsSent() async throws {
        let rig = try await LiveRig.make(name: SimulatedHealthScale.defaultName)
        defer { rig.air.shutdown() }
        let scale = await SimulatedHealthScale(manager: rig.manager)
        try await scale.start(tick: .milliseconds(50))
        let client = HealthScaleClient(peripheral: try await rig.connect())

        let events = try await client.readings()
        let received = try await withTimeout(15) {
            var received: [HealthScaleClient.Event] = []
            for try await event in events {
                received.append(event)
                if received.count(where: { if case .reading = $0 { true } else { false } }) == 40 { break }
            }
            return received
        }
        let readings = received.compactMap { if case .reading(let reading) = $0 { reading } else { nil } }
        #expect(readings == Array(await scale.sentReadings.prefix(40)))
        #expect(readings.map(\.sequence) == Array(1...40))
        // The only errors are the garbage the scale put between frames.
        let skipped = received.compactMap { event -> Int? in
            if case .framingError(let error) = event, let count = error.code.skippedByteCount { count } else { nil }
        }
        #expect(skipped.count == received.count - 40)
        let garbage = await scale.garbageBytesSent
        #expect(garbage > 0)
        #expect(skipped.reduce(0, +) > 0)
        #expect(skipped.reduce(0, +) <= garbage)
        // The stream really was cut both ways.
        #expect(await scale.framesSplit > 0)
        #expect(await scale.notificationsSpanningFrames > 0)
        await scale.stop()
        withExtendedLifetime((rig, events)) {}
    }

    /// A misbehaving scale (a plain manager publishing the scale's service): oversize lengths, bad checksums and
    /// frames that are not readings come out as events, and the stream goes on to the readings after them.
    @Test func errorsInTheStreamAreEventsAndTheStreamGoesOn() async throws {
        let rig = try await LiveRig.make(name: "Bad Scale")
        defer { rig.air.shutdown() }
        try await rig.manager.add(GATTServiceDefinition(uuid: HealthScale.service, characteristics: [
            GATTCharacteristicDefinition(uuid: HealthScale.stream, properties: .notify, permissions: []),
        ]))
        let requests = await rig.manager.requests()
        try await rig.manager.startAdvertising(name: "Bad Scale", serviceUUIDs: [HealthScale.service])
        let client = HealthScaleClient(peripheral: try await rig.connect())
        let events = try await client.readings()
        try await withTimeout(5) {
            for await request in requests { if case .subscription(HealthScale.stream, _, true, _) = request.kind { return } }
        }
        let first = HealthScaleReading(sequence: 1, weightGrams: 70_000, impedanceOhms: 480)
        let second = HealthScaleReading(sequence: 2, weightGrams: 70_100, impedanceOhms: 0)
        var corrupt = try first.frame.encoded()
        corrupt[7] ^= 0x01
        let other = HealthFrame(deviceType: 0x02, command: 0x20, payload: [1, 2])
        let notifications: [[UInt8]] = [
            [0xA5, 0x01, 0x10, 0x7F, 0xFF, 0x00],      // an oversize length, then its resynchronisation
            try first.frame.encoded(),
            corrupt,                                   // a bad checksum
            [0x11, 0x22] + (try other.encoded()),      // garbage, then a frame that is not a reading
            try second.frame.encoded(),
        ]
        for value in notifications { try await rig.manager.updateValue(value, for: HealthScale.stream) }
        let received = try await withTimeout(15) {
            var received: [HealthScaleClient.Event] = []
            for try await event in events {
                received.append(event)
                if event == .reading(second) { break }
            }
            return received
        }
        let checksum = HealthFrame.checksum(corrupt[1..<13])
        #expect(received == [
            .framingError(.oversizeFrame(size: 0x7FFF + 7, maximum: HealthFrame.maximumPayloadLength + 7)),
            .reading(first),
            .framingError(.checksumMismatch(expected: checksum, received: corrupt[13])),
            .unexpectedFrame(other),
            .reading(second),
        ])
        withExtendedLifetime((rig, events)) {}
    }
}
