import BLE
import BLEHost
import BLEVirtualController
import Synchronization
import Testing

/// The stack on a manual clock: simulated time moves only when the test advances the air, so what takes 30 s on a
/// radio — a supervision timeout — is checked to the simulated millisecond in a fraction of a second of the test's
/// own time, without a wall-clock sleep.
@Suite(.timeLimit(.minutes(1))) struct ManualClockTests {
    /// Advances `air` in `step`s (yielding to the hosts between steps) until `done` says so, at most `limit` of
    /// simulated time; returns the simulated time it took.
    static func pump(_ air: VirtualAir, step: Duration = .milliseconds(10), limit: Duration = .seconds(60),
                     until done: () -> Bool) async -> Duration? {
        let start = air.now
        while !done() {
            guard air.now - start < limit else { return nil }
            air.advance(by: step)
            for _ in 0..<8 { await Task.yield() }
        }
        return air.now - start
    }

    @Test func aPeripheralOutOfRangeIsLostAtItsThirtySecondSupervisionTimeout() async throws {
        let air = VirtualAir(clock: .manual, seed: 21)
        let peripheralController = air.addController()
        let manager = try await PeripheralManager(transport: peripheralController.makeHostTransport(), deviceName: "Far")
        try await manager.startAdvertising(name: "Far")
        let centralController = air.addController(.init(position: Position(x: 1)))
        let central = try await Central(transport: centralController.makeHostTransport())

        // Connecting takes simulated time (advertising events, the connection's first events): the test drives it.
        let connected = Mutex<RemotePeripheral?>(nil)
        let attempt = Task {
            let remote = try await central.connect(LEAddress(peripheralController.address, type: .public), exchangeMTU: false)
            connected.withLock { $0 = remote }
        }
        #expect(await Self.pump(air, until: { connected.withLock { $0 != nil } }) != nil, "no connection")
        try await attempt.value
        let remote = try #require(connected.withLock { $0 })

        // A 30 s supervision timeout (3000 × 10 ms), asked for with LE Connection Update and applied by both sides.
        let updated = Mutex(false)
        let update = Task {
            _ = try await remote.updateConnectionParameters(interval: 40...40, latency: 0, supervisionTimeout: 3000)
            updated.withLock { $0 = true }
        }
        #expect(await Self.pump(air, until: { updated.withLock { $0 } }) != nil, "no connection update")
        try await update.value
        #expect(await remote.connection.supervisionTimeout == 3000)

        // The peripheral goes out of range; nothing more is heard from it, and the link is lost when 30 s have passed.
        let events = await remote.linkEvents()
        let lost = Mutex<HCIStatus?>(nil)
        let watcher = Task {
            for await event in events {
                if case .disconnected(let reason) = event {
                    lost.withLock { $0 = reason }
                    return
                }
            }
        }
        peripheralController.position = Position(x: 100_000)
        // The controllers decide on the air's time alone: the link is up at 29.99 s and gone at 30.01 s.
        #expect(await Self.pump(air, step: .milliseconds(10), limit: .milliseconds(29_990), until: { lost.withLock { $0 != nil } }) == nil,
                "the link was lost before its supervision timeout")
        #expect(centralController.connectionCount == 1 && peripheralController.connectionCount == 1)
        air.advance(by: .milliseconds(20))
        #expect(centralController.connectionCount == 0 && peripheralController.connectionCount == 0)
        // And the central's host reports the loss with its reason.
        #expect(await Self.pump(air, until: { lost.withLock { $0 != nil } }) != nil, "the central was not told")
        #expect(lost.withLock { $0 } == .connectionTimeout)
        watcher.cancel()
        air.shutdown()
    }
}

/// The host's own timers run on the air's clock too: on a manual-clock air, the 30 s ATT transaction timeout of a
/// request nobody answers goes off when the test has advanced the air 30 s, and not by the wall clock.
@Suite(.timeLimit(.minutes(1))) struct ManualClockHostTimerTests {
    @Test func theATTTransactionTimeoutGoesOffAtThirtySecondsOfTheAirsTime() async throws {
        let air = VirtualAir(clock: .manual, seed: 22)
        defer { air.shutdown() }
        // A peer with no GATT: it holds the ATT requests it gets and answers none.
        let silentController = air.addController()
        let silent = HCIHost(transport: silentController.makeHostTransport())
        try await silent.powerOn()
        try await silent.startAdvertising(.init(data: AdvertisingData(localName: "Silent")))
        let central = try await Central(transport: air.addController(.init(position: Position(x: 1))).makeHostTransport())
        let connected = Mutex<RemotePeripheral?>(nil)
        let attempt = Task {
            let remote = try await central.connect(LEAddress(silentController.address, type: .public), exchangeMTU: false)
            connected.withLock { $0 = remote }
        }
        #expect(await ManualClockTests.pump(air, until: { connected.withLock { $0 != nil } }) != nil, "no connection")
        try await attempt.value
        let remote = try #require(connected.withLock { $0 })

        let outcome = Mutex<GATTError?>(nil)
        let discovery = Task {
            do {
                _ = try await remote.discoverServices()
                outcome.withLock { $0 = GATTError(.malformedResponse, "the silent peer answered") }
            } catch let error as GATTError {
                outcome.withLock { $0 = error }
            }
        }
        #expect(await ManualClockTests.pump(air, step: .milliseconds(100), limit: .milliseconds(29_900),
                                            until: { outcome.withLock { $0 != nil } }) == nil, "the request ended early")
        #expect(await ManualClockTests.pump(air, step: .milliseconds(100), limit: .seconds(5),
                                            until: { outcome.withLock { $0 != nil } }) != nil, "the transaction never timed out")
        try await discovery.value
        #expect(outcome.withLock { $0?.code } == .timeout)
    }
}
