import BLEFixtures
import BLEHost
import BLEProtocols
import BLETestSupport
import BLETransport
import BLEVirtualController
import BLEWire
import Testing

@Suite(.timeLimit(.minutes(1))) struct GATTEngineTests {
    static let custom = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF0") ?? 0
    static let writable = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF1") ?? 0
    static let long = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF2") ?? 0
    static let longValue = (0..<300).map { UInt8(truncatingIfNeeded: $0) }

    static func database() -> GATTDatabase {
        GATTDatabase(deviceName: "Sample", services: [
            GATTServiceDefinition(uuid: 0x180F, characteristics: [
                GATTCharacteristicDefinition(uuid: 0x2A19, properties: [.read, .notify], value: [87]),
            ]),
            GATTServiceDefinition(uuid: 0x180D, characteristics: [
                GATTCharacteristicDefinition(uuid: 0x2A37, properties: [.notify, .indicate], permissions: [], value: [0, 60]),
            ]),
            GATTServiceDefinition(uuid: custom, characteristics: [
                GATTCharacteristicDefinition(uuid: writable, properties: [.read, .write, .writeWithoutResponse],
                                             permissions: [.readable, .writeable], value: Array("initial".utf8)),
                GATTCharacteristicDefinition(uuid: long, properties: .read, value: longValue),
            ]),
        ])
    }

    /// A peripheral serving the sample database and `count` centrals connected to it, each with a GATT engine.
    func setUp(centrals count: Int = 1) async throws -> (World, GATTEngine, HCIHost, [(HCIHost, GATTEngine, HostConnection)]) {
        let world = World()
        let (peripheral, pc) = try await world.host()
        let server = GATTEngine(host: peripheral, database: Self.database())
        await server.start()
        var centrals: [(HCIHost, GATTEngine, HostConnection)] = []
        for i in 0..<count {
            let (central, _) = try await world.host(at: Double(i + 1))
            let client = GATTEngine(host: central)
            await client.start()
            try await peripheral.startAdvertising(.init(data: AdvertisingData(flags: .leOnlyGeneralDiscoverable, localName: "Sample")))
            let connection = try await central.connect(to: LEAddress(pc.address, type: .public), timeout: .seconds(5))
            centrals.append((central, client, connection))
        }
        return (world, server, peripheral, centrals)
    }

    @Test func discoveryReadsWritesAndMTU() async throws {
        let (world, server, _, centrals) = try await setUp()
        defer { withExtendedLifetime((world, server)) {} }
        let (_, client, c) = centrals[0]
        #expect(try await client.exchangeMTU(c) == 247)
        #expect(await client.maximumWriteValueLength(c, withResponse: false) == 244)
        #expect(await client.maximumWriteValueLength(c, withResponse: true) == 512)
        let services = try await client.discoverPrimaryServices(c)
        #expect(services.map(\.uuid) == [0x1800, 0x1801, 0x180F, 0x180D, Self.custom])
        let byUUID = try await client.discoverPrimaryServices(c, uuid: Self.custom)
        #expect(byUUID.count == 1 && byUUID.first?.startHandle == services.last?.startHandle)
        let customService = try #require(services.last)
        let characteristics = try await client.discoverCharacteristics(c, of: customService)
        #expect(characteristics.map(\.uuid) == [Self.writable, Self.long])
        #expect(characteristics.first?.properties == [.read, .write, .writeWithoutResponse])
        let battery = try #require(try await client.discoverCharacteristics(c, of: services[2]).first)
        let descriptors = try await client.discoverDescriptors(c, of: battery)
        #expect(descriptors.map(\.uuid) == [0x2902])
        // A 300-byte value needs a Read and a Read Blob at MTU 247.
        #expect(try await client.read(c, attribute: characteristics[1].valueHandle) == Self.longValue)
        let w = characteristics[0].valueHandle
        try await client.write(c, attribute: w, value: Array("with response".utf8))
        #expect(try await client.read(c, attribute: w) == Array("with response".utf8))
        try await client.writeWithoutResponse(c, attribute: w, value: Array("without".utf8))
        #expect(try await client.read(c, attribute: w) == Array("without".utf8))
    }

    @Test func longValuesUpToTheATTLimit() async throws {
        let (world, server, _, centrals) = try await setUp()
        defer { withExtendedLifetime((world, server)) {} }
        let (_, client, c) = centrals[0]
        // At the default MTU 23: a 512-byte value takes 29 prepared writes and a Read + 23 Read Blobs.
        let handle = try #require(try await client.discoverCharacteristics(c, of: try await client.discoverPrimaryServices(c, uuid: Self.custom)[0], uuid: Self.writable).first?.valueHandle)
        let value = (0..<512).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try await client.write(c, attribute: handle, value: value)
        #expect(try await client.read(c, attribute: handle) == value)
        // 600 bytes exceed the 512-byte attribute limit (Core 5.4, Vol 3, Part F, 3.2.9): refused.
        await #expect(throws: GATTError.self) { try await client.write(c, attribute: handle, value: Array(repeating: 1, count: 600)) }
    }

    @Test func notificationBurstArrivesCompleteAndInOrder() async throws {
        let (world, server, _, centrals) = try await setUp()
        defer { withExtendedLifetime(world) {} }
        let (_, client, c) = centrals[0]
        _ = try await client.exchangeMTU(c)
        let battery = try #require(try await client.discoverCharacteristics(c, of: try await client.discoverPrimaryServices(c, uuid: 0x180F)[0]).first)
        let cccd = try #require(try await client.discoverDescriptors(c, of: battery).first { $0.uuid == BluetoothUUID(0x2902) })
        let values = try await client.subscribe(c, valueHandle: battery.valueHandle, cccdHandle: cccd.handle)
        let count = 200
        let received = Task { () -> [[UInt8]] in
            var out: [[UInt8]] = []
            for await v in values {
                out.append(v)
                if out.count == count { break }
            }
            return out
        }
        for i in 0..<count {
            // 244-byte payloads (MTU 247) in 27-byte controller buffers: 10 ACL packets each, under flow control.
            let payload = [UInt8(truncatingIfNeeded: i)] + Array(repeating: 0xEE, count: 243)
            let sent = try await server.updateValue(payload, for: battery.valueHandle)
            #expect(sent.count == 1)
        }
        let got = try await withTimeout { await received.value }
        #expect(got.count == count)
        #expect(got.map { $0.first ?? 0 } == (0..<count).map { UInt8(truncatingIfNeeded: $0) })
        #expect(got.allSatisfy { $0.count == 244 })
    }

    @Test func indicationsAreConfirmed() async throws {
        let (world, server, _, centrals) = try await setUp()
        defer { withExtendedLifetime(world) {} }
        let (_, client, c) = centrals[0]
        let hr = try #require(try await client.discoverCharacteristics(c, of: try await client.discoverPrimaryServices(c, uuid: 0x180D)[0]).first)
        let cccd = try #require(try await client.discoverDescriptors(c, of: hr).first)
        let values = try await client.subscribe(c, valueHandle: hr.valueHandle, cccdHandle: cccd.handle, indications: true)
        var iterator = values.makeAsyncIterator()
        for bpm in UInt8(60)..<UInt8(65) {
            // updateValue returns only after the client confirmed the indication.
            #expect(try await server.updateValue([0, bpm], for: hr.valueHandle).count == 1)
            #expect(await iterator.next() == [0, bpm])
        }
    }

    /// Core 5.4, Vol 3, Part F, 3.3.3: a server sends no new indication before the last one is confirmed. Two updates
    /// at once queue: a raw client sees the second indication only after it confirmed the first.
    @Test func concurrentIndicationsGoOutOneAtATime() async throws {
        let world = World()
        let (peripheral, pc) = try await world.host()
        let server = GATTEngine(host: peripheral, database: GATTEngineTests.database())
        await server.start()
        let (central, _) = try await world.host(at: 1)
        try await peripheral.startAdvertising(.init(data: AdvertisingData(localName: "Sample")))
        let c = try await central.connect(to: LEAddress(pc.address, type: .public), timeout: .seconds(5))
        let att = try await central.openFixedChannel(.att, on: c)
        let hr = try #require(await server.database.valueHandle(of: 0x2A37))
        let log = PDULog()
        let reader = Task { for await pdu in att { await log.append(pdu) } }
        defer { reader.cancel() }
        try await central.sendL2CAP(ATTPDU.writeRequest(.init(handle: try #require(hr.next), value: [0x02, 0x00])).encoded, channel: .att, on: c)
        try await log.waitFor(count: 1)
        #expect(await log.entries == [[0x13]])
        let first = Task { try await server.updateValue([0, 1], for: hr) }
        let second = Task { try await server.updateValue([0, 2], for: hr) }
        try await log.waitFor(count: 2)
        // Give a wrongly eager server every chance to send the second indication now.
        try await Task.sleep(for: .milliseconds(300))
        await log.append([0xFF])   // marks the moment the confirmation goes out
        try await central.sendL2CAP([0x1E], channel: .att, on: c)
        try await log.waitFor(count: 4)
        try await central.sendL2CAP([0x1E], channel: .att, on: c)
        let h = [UInt8(truncatingIfNeeded: hr.rawValue), UInt8(hr.rawValue >> 8)]
        let indications = await log.entries.dropFirst()
        #expect(Array(indications) == [[0x1D] + h + [0, 1], [0xFF], [0x1D] + h + [0, 2]]
                || Array(indications) == [[0x1D] + h + [0, 2], [0xFF], [0x1D] + h + [0, 1]])
        #expect(try await first.value.map(\.handle) == [c.handle])
        #expect(try await second.value.map(\.handle) == [c.handle])
        withExtendedLifetime(world) {}
    }

    @Test func writesFromManyCentralsAreAttributedToTheRightOne() async throws {
        let (world, server, peripheral, centrals) = try await setUp(centrals: 4)
        defer { withExtendedLifetime(world) {} }
        let events = await server.serverEvents()
        let handle = try #require(await server.database.valueHandle(of: Self.writable))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (i, (_, client, c)) in centrals.enumerated() {
                group.addTask { try await client.write(c, attribute: handle, value: Array("central-\(i)".utf8)) }
            }
            try await group.waitForAll()
        }
        // Map each write to the central whose link it came on.
        var writers: [ConnectionHandle: String] = [:]
        for await e in events {
            if case .wrote(_, let value, _) = e.event { writers[e.connection.handle] = String(decoding: value, as: UTF8.self) }
            if writers.count == centrals.count { break }
        }
        // The peripheral's link for each write leads to the central that wrote it.
        let links = await peripheral.connections
        for (i, (central, _, _)) in centrals.enumerated() {
            let centralAddress = try #require(await central.address)
            let link = try #require(links.first { $0.peer.address == centralAddress })
            #expect(writers[link.handle] == "central-\(i)")
        }
    }

    @Test func malformedServerResponsesFailTheProcedureNotTheLink() async throws {
        let world = World()
        let (fake, fc) = try await world.host()
        let (central, _) = try await world.host(at: 1)
        let client = GATTEngine(host: central)
        await client.start()
        // The fake's own Connection Complete can be processed after the central's connect call returns: wait for it.
        let fakeEvents = await fake.events()
        try await fake.startAdvertising(.init(data: AdvertisingData(localName: "Fake")))
        let c = try await central.connect(to: LEAddress(fc.address, type: .public), timeout: .seconds(5))
        let fakeLink = try await next(fakeEvents) { if case .connected(let c) = $0 { c } else { nil } }
        // The fake server answers Read By Group Type with services going backwards.
        let att = try await fake.openFixedChannel(.att, on: fakeLink)
        let responder = Task {
            for await _ in att {
                let response = ATTPDU.readByGroupTypeResponse(.init(entries: [
                    .init(handle: 0x0010, endGroupHandle: 0x0012, value: [0x0F, 0x18]),
                    .init(handle: 0x0005, endGroupHandle: 0x0006, value: [0x0A, 0x18]),
                ]))
                try? await fake.sendL2CAP(response.encoded, channel: .att, on: fakeLink)
            }
        }
        defer { responder.cancel() }
        do {
            _ = try await client.discoverPrimaryServices(c)
            Issue.record("backwards handles must fail discovery")
        } catch let error as GATTError {
            #expect(error.code == .malformedResponse)
        }
        #expect(await central.connections.count == 1, "the link stays up")
    }

    /// A peer that never answers ATT: the request fails at the transaction timeout and the ATT bearer ends (later
    /// requests fail at once, the same way), but the link is not ATT's: it stays up, and a credit based channel opens
    /// on it and carries data both ways (Core 5.4, Vol 3, Part F, 3.3.3).
    @Test func aTransactionTimeoutEndsTheBearerAndLeavesTheLinkUp() async throws {
        let world = World()
        let (silent, sc) = try await world.host()
        let (central, _) = try await world.host(at: 1)
        let client = GATTEngine(host: central)
        await client.setTransactionTimeout(.milliseconds(300))
        await client.start()
        let silentEvents = await silent.events()
        try await silent.startAdvertising(.init(data: AdvertisingData(localName: "Silent")))
        let c = try await central.connect(to: LEAddress(sc.address, type: .public), timeout: .seconds(5))
        // The peer opens its ATT channel and never answers.
        let link = try await next(silentEvents) { if case .connected(let c) = $0 { c } else { nil } }
        _ = try await silent.openFixedChannel(.att, on: link)
        let channels = try await silent.listen(spsm: L2CAPSPSM(rawValue: 0x0080))
        do {
            _ = try await client.read(c, attribute: 3)
            Issue.record("a silent server must time out")
        } catch let error as GATTError {
            #expect(error.code == .timeout)
        }
        let clock = ContinuousClock()
        let start = clock.now
        await #expect(throws: GATTError(.timeout, "")) { try await client.read(c, attribute: 3) }
        #expect(clock.now - start < .milliseconds(250), "a closed bearer fails at once")
        #expect(await central.connections.map(\.link) == [c.link], "the link stays up")
        let channel = try await central.openL2CAPChannel(spsm: L2CAPSPSM(rawValue: 0x0080), on: c)
        var accepted = channels.makeAsyncIterator()
        let peer = try #require(await accepted.next())
        try await channel.send(Array("over the link".utf8))
        var fromCentral = peer.incoming.makeAsyncIterator()
        #expect(await fromCentral.next() == Array("over the link".utf8))
        try await peer.send([1, 2, 3])
        var fromPeer = channel.incoming.makeAsyncIterator()
        #expect(await fromPeer.next() == [1, 2, 3])
    }
}

@Suite(.timeLimit(.minutes(1))) struct IndicationDeadlineTests {
    /// A client that subscribes to indications and never confirms: the server's update fails at the transaction
    /// deadline and the server's ATT bearer on that link ends (later updates to it fail at once); the link stays up.
    @Test func anUnconfirmedIndicationEndsTheBearerNotTheLink() async throws {
        let world = World()
        let (peripheral, pc) = try await world.host()
        let server = GATTEngine(host: peripheral, database: GATTEngineTests.database())
        await server.setTransactionTimeout(.milliseconds(300))
        await server.start()
        let (central, _) = try await world.host(at: 1)
        try await peripheral.startAdvertising(.init(data: AdvertisingData(localName: "Sample")))
        let c = try await central.connect(to: LEAddress(pc.address, type: .public), timeout: .seconds(5))
        // A raw client: write the heart-rate CCCD for indications, then never confirm.
        let att = try await central.openFixedChannel(.att, on: c)
        var responses = att.makeAsyncIterator()
        let hr = try #require(await server.database.valueHandle(of: 0x2A37))
        try await central.sendL2CAP(ATTPDU.writeRequest(.init(handle: try #require(hr.next), value: [0x02, 0x00])).encoded, channel: .att, on: c)
        #expect(await responses.next() == [0x13])
        await #expect(throws: GATTError(.timeout, "")) { try await server.updateValue([0, 70], for: hr) }
        await #expect(throws: GATTError(.timeout, "")) { try await server.updateValue([0, 71], for: hr) }
        #expect(await peripheral.connections.count == 1, "the link stays up")
        #expect(await server.isReadyToUpdateSubscribers())
    }
}

/// PDUs a raw ATT client received, in order.
actor PDULog {
    var entries: [[UInt8]] = []
    func append(_ pdu: [UInt8]) { entries.append(pdu) }
    func waitFor(count: Int) async throws {
        for _ in 0..<500 where entries.count < count { try await Task.sleep(for: .milliseconds(10)) }
        if entries.count < count { throw TimedOut() }
    }
}
