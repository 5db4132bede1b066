import BLE
import BLEHost
import BLEProtocols
import BLEVirtualController
import Testing

/// The peripheral side choosing who gets what: updates to chosen centrals, disconnecting a central, and the central's
/// reconnection policy telling a lost link (reconnect) from one it closed itself (do not).
@Suite(.timeLimit(.minutes(1))) struct PeripheralControlTests {
    @Test func updatesGoOnlyToTheChosenCentrals() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let (manager, pc) = try await BLEAPITests().peripheral(air)
        var streams: [NotificationStream.AsyncIterator] = []
        var addresses: [BluetoothAddress] = []
        var remotes: [RemotePeripheral] = []   // kept alive: a released central closes its links
        for x in [1.0, 2.0] {
            let central = try await Central(transport: air.addController(.init(position: Position(x: x))).makeHostTransport())
            try await manager.startAdvertising(name: "UART", serviceUUIDs: [BLEAPITests.service])
            let remote = try await central.connect(LEAddress(pc.address, type: .public), timeout: .seconds(5))
            let service = try #require(try await remote.discoverServices([BLEAPITests.service]).first)
            let tx = try #require(try await remote.discoverCharacteristics([BLEAPITests.tx], for: service).first)
            streams.append(try await remote.notifications(for: tx).makeAsyncIterator())
            addresses.append(try #require(await central.adapter.address?.address))
            remotes.append(remote)
        }
        let centrals = await manager.connectedCentrals
        let first = try #require(centrals.first { $0.peer.address == addresses[0] })
        #expect(try await manager.updateValue(Array("only-first".utf8), for: BLEAPITests.tx, onSubscribedCentrals: [first])
                .map(\.link) == [first.link])
        #expect(await streams[0].next() == Array("only-first".utf8))
        #expect(try await manager.updateValue(Array("everyone".utf8), for: BLEAPITests.tx).count == 2)
        #expect(await streams[0].next() == Array("everyone".utf8))
        // The second central's first value is the broadcast one: it never got the update meant for the first.
        #expect(await streams[1].next() == Array("everyone".utf8))
        withExtendedLifetime(remotes) {}
    }

    @Test func aCentralDisconnectedByThePeripheralReconnectsButNotAfterItsOwnDisconnect() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let (manager, pc) = try await BLEAPITests().peripheral(air)
        try await manager.startAdvertising(name: "UART", serviceUUIDs: [BLEAPITests.service], restartAfterConnection: true)
        let central = try await Central(transport: air.addController(.init(position: Position(x: 1))).makeHostTransport())
        let remote = try await central.connect(LEAddress(pc.address, type: .public), timeout: .seconds(5),
                                               reconnect: ReconnectPolicy(maximumAttempts: 20, initialDelay: .milliseconds(50),
                                                                          maximumDelay: .milliseconds(200), attemptTimeout: .seconds(1)))
        var links = await remote.linkEvents().makeAsyncIterator()
        let service = try #require(try await remote.discoverServices([BLEAPITests.service]).first)
        let tx = try #require(try await remote.discoverCharacteristics([BLEAPITests.tx], for: service).first)
        var values = try await remote.notifications(for: tx).makeAsyncIterator()

        // The peripheral drops the central: the central sees why, reconnects, and the subscription goes on.
        let link = try #require(await manager.connectedCentrals.first)
        try await manager.disconnect(link)
        #expect(await links.next() == .disconnected(.remoteUserTerminatedConnection))
        guard case .reconnected = await links.next() else {
            Issue.record("no reconnection after the peripheral disconnected")
            return
        }
        #expect(await remote.connection.handle != link.handle)
        for _ in 0..<200 {
            if try await !manager.updateValue(Array("again".utf8), for: BLEAPITests.tx).isEmpty { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(await values.next() == Array("again".utf8))

        // The central disconnects on purpose: no reconnection, and the subscription ends.
        try await central.disconnect(remote)
        #expect(await links.next() == .disconnected(.connectionTerminatedByLocalHost))
        #expect(await values.next() == nil)
        try await Task.sleep(for: .milliseconds(500))
        #expect(await central.adapter.connections.isEmpty)
        #expect(await manager.connectedCentrals.isEmpty)
    }
}

/// Controllers that give a new link the handle of the one just closed (Bumble's does): the GATT state of the old link
/// must not take over, or be torn down with, the new one.
@Suite(.timeLimit(.minutes(1))) struct HandleReuseTests {
    @Test func aQuickReconnectionOnTheSameHandleKeepsItsBearer() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let controller = air.addController(.init(reusesHandles: true))
        let manager = try await PeripheralManager(transport: controller.makeHostTransport(), deviceName: "UART")
        try await manager.add(GATTServiceDefinition(uuid: BLEAPITests.service, characteristics: [
            GATTCharacteristicDefinition(uuid: BLEAPITests.tx, properties: [.read, .notify], value: Array("ready".utf8)),
        ]))
        try await manager.startAdvertising(name: "UART", serviceUUIDs: [BLEAPITests.service], restartAfterConnection: true)
        let central = try await Central(transport: air.addController(.init(position: Position(x: 1), reusesHandles: true)).makeHostTransport())
        let remote = try await central.connect(LEAddress(controller.address, type: .public), timeout: .seconds(5),
                                               reconnect: ReconnectPolicy(maximumAttempts: 20, initialDelay: .milliseconds(1),
                                                                          maximumDelay: .milliseconds(50), attemptTimeout: .seconds(1)))
        var links = await remote.linkEvents().makeAsyncIterator()
        let service = try #require(try await remote.discoverServices([BLEAPITests.service]).first)
        let tx = try #require(try await remote.discoverCharacteristics([BLEAPITests.tx], for: service).first)
        var values = try await remote.notifications(for: tx).makeAsyncIterator()
        var current = Array("ready".utf8)   // updateValue changes the served value too
        for round in 1...5 {
            let before = await remote.connection.handle
            try await manager.disconnect(try #require(await manager.connectedCentrals.first))
            #expect(await links.next() == .disconnected(.remoteUserTerminatedConnection))
            guard case .reconnected = await links.next() else {
                Issue.record("round \(round): no reconnection")
                return
            }
            #expect(await remote.connection.handle == before)   // the same handle again
            // The restored subscription and reads work on the new link.
            #expect(try await remote.readValue(for: tx) == current)
            let text = Array("round \(round)".utf8)
            current = text
            for _ in 0..<200 {
                if try await !manager.updateValue(text, for: BLEAPITests.tx).isEmpty { break }
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(await values.next() == text)
        }
    }
}
