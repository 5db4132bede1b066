import BLE
import BLEFixtures
import BLEVirtualController
import Testing

/// The peripheral's one request stream: every open stream gets every application request and the first answer is
/// sent; with no stream open, application requests are refused with Unlikely Error at once.
@Suite(.timeLimit(.minutes(1))) struct RequestStreamTests {
    static let service = BluetoothUUID("0000CD00-0000-1000-8000-00805F9B34FB") ?? 0
    static let computed = BluetoothUUID("0000CD01-0000-1000-8000-00805F9B34FB") ?? 0

    /// What the watching stream saw, in order.
    actor Seen {
        var kinds: [String] = []
        func add(_ kind: String) { kinds.append(kind) }
    }

    @Test func oneStreamAnswersWhileAnotherWatchesAndNoStreamMeansUnlikelyError() async throws {
        let devices = try await TwoDevices(peripheralName: "Streams")
        defer { devices.shutdown() }
        let pc = devices.peripheralController
        let manager = devices.peripheral
        try await manager.add(GATTServiceDefinition(uuid: Self.service, characteristics: [
            GATTCharacteristicDefinition(uuid: Self.computed, properties: [.read, .notify], source: .application),
        ]))
        try await manager.startAdvertising(name: "Streams")
        let central = devices.central
        let remote = try await central.connect(LEAddress(pc.address, type: .public), timeout: .seconds(5))
        let service = try #require(try await remote.discoverServices([Self.service]).first)
        let computed = try #require(try await remote.discoverCharacteristics([Self.computed], for: service).first)

        // No stream yet: refused at once.
        await #expect(throws: GATTError(.att(.unlikelyError, handle: computed.valueHandle), "")) {
            _ = try await remote.readValue(for: computed)
        }

        // A stream that only watches, and one that answers.
        let seen = Seen()
        let watched = await manager.requests()
        let watching = Task {
            for await request in watched {
                switch request.kind {
                case .application: await seen.add("application")
                case .subscription(_, _, let notify, _): await seen.add(notify ? "subscribed" : "unsubscribed")
                case .write, .mtuChanged: break
                }
            }
        }
        let answered = await manager.requests()
        let answering = Task {
            for await request in answered {
                if case .application(let asked) = request.kind { await asked.respond(with: [42]) }
            }
        }
        #expect(try await remote.readValue(for: computed) == [42])
        _ = try await remote.notifications(for: computed)
        var kinds: [String] = []
        for _ in 0..<100 where kinds.count < 2 {
            try await Task.sleep(for: .milliseconds(20))
            kinds = await seen.kinds
        }
        #expect(kinds == ["application", "subscribed"])

        // Both streams ended: refused at once again.
        watching.cancel()
        answering.cancel()
        _ = await (watching.value, answering.value)
        var refused = false
        for _ in 0..<50 where !refused {
            do {
                _ = try await remote.readValue(for: computed)
                try await Task.sleep(for: .milliseconds(20))
            } catch let error as GATTError {
                refused = error == GATTError(.att(.unlikelyError, handle: computed.valueHandle), "")
            }
        }
        #expect(refused)
        try await central.disconnect(remote)
    }
}
