import BLE
import BLEFixtures
import BLEHost
import BLEProtocols
import BLETestSupport
import BLEVirtualController
import Testing

/// LE credit based channels on the public API: a peripheral publishes one, a central opens it, bytes go both ways.
@Suite(.timeLimit(.minutes(1))) struct L2CAPChannelAPITests {
    @Test func aPublishedChannelEchoesWhatACentralSends() async throws {
        let devices = try await TwoDevices(peripheralName: "Echo",
                                           peripheralController: .init(aclBufferSize: 251, aclBufferCount: 8),
                                           centralController: .init(position: Position(x: 1), aclBufferSize: 251, aclBufferCount: 8))
        defer { devices.shutdown() }
        let manager = devices.peripheral
        let (psm, channels) = try await manager.publishL2CAPChannel()
        #expect(psm.isDynamic)
        let echo = Task {
            for await channel in channels {
                for await sdu in channel.incoming { try await channel.send(sdu) }
                return
            }
        }
        try await manager.startAdvertising(name: "Echo")
        let remote = try await devices.connect()
        let channel = try await remote.openL2CAPChannel(psm)
        let data = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let received = Task { () -> [UInt8] in
            var all: [UInt8] = []
            for await sdu in channel.incoming {
                all += sdu
                if all.count >= data.count { break }
            }
            return all
        }
        var offset = 0
        while offset < data.count {
            let end = min(data.count, offset + channel.peerMTU)
            try await channel.send(Array(data[offset..<end]))
            offset = end
        }
        #expect(try await withTimeout(30) { await received.value } == data)
        // A PSM nobody published is refused.
        await #expect(throws: HostError.self) { try await remote.openL2CAPChannel(L2CAPSPSM(rawValue: 0x00F0)) }
        try await channel.close()
        await manager.unpublishL2CAPChannel(psm)
        _ = await echo.result
    }

    /// The other way round: a peripheral opens a channel to a connected central, whose adapter publishes the PSM
    /// (a peripheral manager beside the central), and SDUs go both ways. Core 5.4, Vol 3, Part A, 4.22.
    @Test func aPeripheralOpensAChannelToACentral() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let pc = air.addController()
        let manager = try await PeripheralManager(transport: pc.makeHostTransport(), deviceName: "Opener")
        let connections = await manager.centralEvents()
        try await manager.startAdvertising(name: "Opener")
        let centralAdapter = try await Adapter(transport: air.addController(.init(position: Position(x: 1))).makeHostTransport())
        let central = Central(adapter: centralAdapter)
        let (psm, channels) = try await PeripheralManager(adapter: centralAdapter, deviceName: "Central").publishL2CAPChannel()
        let remote = try await central.connect(LEAddress(pc.address, type: .public), timeout: .seconds(5))
        var link: HostConnection?
        for await event in connections {
            if case .connected(let connection) = event {
                link = connection
                break
            }
        }
        let toCentral = try #require(link)
        let opened = try await manager.openL2CAPChannel(psm, to: toCentral)
        var accepted = channels.makeAsyncIterator()
        let atCentral = try #require(await accepted.next())
        #expect(atCentral.link == (await remote.connection).link)
        try await opened.send(Array("from the peripheral".utf8))
        var fromPeripheral = atCentral.incoming.makeAsyncIterator()
        #expect(await fromPeripheral.next() == Array("from the peripheral".utf8))
        try await atCentral.send(Array("back".utf8))
        var fromCentral = opened.incoming.makeAsyncIterator()
        #expect(await fromCentral.next() == Array("back".utf8))
        // A PSM the central does not accept is refused.
        await #expect(throws: HostError.self) { try await manager.openL2CAPChannel(L2CAPSPSM(rawValue: 0x00F0), to: toCentral) }
        try await opened.close()
    }
}
