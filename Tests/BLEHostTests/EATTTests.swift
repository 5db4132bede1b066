import BLEFixtures
import BLEHost
import BLEProtocols
import BLETestSupport
import BLEWire
import Foundation
import Testing

/// Enhanced ATT between two of our hosts over the virtual controller: the bearers open on an encrypted link, the
/// client's independent requests go out at once on different bearers, the server answers each on its own, a
/// transaction timeout closes one bearer only, Multiple Handle Value Notifications reach the subscribers, and an
/// unencrypted link gets no bearer. Core 5.4, Vol 3, Part G, 2.5 and Part F, 3.2.11.
@Suite(.timeLimit(.minutes(1))) struct EATTTests {
    /// Characteristics the application answers (four), and two the database holds that notify.
    static let answered = (0..<4).map { BluetoothUUID("12345678-1234-5678-1234-56789ABC000\($0)") ?? 0 }
    static let notifying = [BluetoothUUID(0xFFA1), BluetoothUUID(0xFFA2)]

    static var database: GATTDatabase {
        GATTDatabase(services: [
            GATTServiceDefinition(uuid: 0xFFF0, characteristics: answered.map {
                GATTCharacteristicDefinition(uuid: $0, properties: .read, source: .application)
            } + notifying.map {
                GATTCharacteristicDefinition(uuid: $0, properties: [.read, .notify], value: [0x00])
            }),
        ], enhancedATT: true)
    }

    /// A server with ``database`` and a client, connected; the link is paired (encrypted) when `encrypted`.
    struct Rig {
        let world = World()
        let peripheral: HCIHost
        let central: HCIHost
        let server: GATTEngine
        let client: GATTEngine
        let requests: AsyncStream<GATTServerRequest>
        let c: HostConnection
        let p: HostConnection

        init(encrypted: Bool = true, transactionTimeout: Duration? = nil) async throws {
            let (peripheral, pc) = try await world.host()
            self.peripheral = peripheral
            server = GATTEngine(host: peripheral, database: EATTTests.database)
            await server.start()
            requests = await server.applicationRequests()
            (central, _) = try await world.host(at: 1)
            client = GATTEngine(host: central)
            await client.start()
            if let transactionTimeout { await client.setTransactionTimeout(transactionTimeout) }
            (c, p) = try await connect(central, peripheral, peripheralAddress: pc.address)
            if encrypted { _ = try await central.pair(c) }
        }

        func handle(_ uuid: BluetoothUUID) async throws -> AttributeHandle {
            try #require(await server.database.valueHandle(of: uuid))
        }

        /// Waits until the client's link has `count` EATT bearers.
        func waitForBearers(_ count: Int) async throws {
            for _ in 0..<400 where await client.enhancedBearerCount(c) != count { try await Task.sleep(for: .milliseconds(5)) }
            #expect(await client.enhancedBearerCount(c) == count)
        }
    }

    /// The server's Server Supported Features says EATT; a discovery on the encrypted link opens the host's three
    /// bearers by itself, which the server owns as three bearers of the same link, and the client wrote the EATT and
    /// Multiple Handle Value Notifications bits of Client Supported Features. The application asking for bearers
    /// meanwhile gets those three, not three more.
    @Test func aDiscoveryOnAnEncryptedLinkOpensThreeBearers() async throws {
        let rig = try await Rig()
        defer { withExtendedLifetime(rig) {} }
        let services = try await rig.client.discoverDatabase(rig.c)
        // The application asks while the host opens its own: it waits for them, and nothing more is opened.
        #expect(try await rig.client.openEnhancedBearers(on: rig.c, count: 3) == 3)
        #expect(try await rig.client.openEnhancedBearers(on: rig.c, count: 2) == 3)
        let features = services.first { $0.service.uuid == BluetoothUUID(0x1801) }?.characteristics
            .first { $0.characteristic.uuid == BluetoothUUID(0x2B3A) }?.characteristic.valueHandle
        #expect(try await rig.client.read(rig.c, attribute: try #require(features)) == [0x01])
        try await rig.waitForBearers(3)
        #expect(await rig.server.enhancedBearerCount(rig.p) == 3)
        let csf = try await rig.client.read(rig.c, byType: 0x2B29)
        #expect(csf.first?.value == [0x07])
    }

    /// A discovery before pairing opens nothing (the link is not encrypted); the pairing that follows does, since
    /// the discovery found Server Supported Features.
    @Test func pairingAfterADiscoveryOpensTheBearers() async throws {
        let rig = try await Rig(encrypted: false)
        defer { withExtendedLifetime(rig) {} }
        _ = try await rig.client.discoverDatabase(rig.c)
        try await Task.sleep(for: .milliseconds(100))
        #expect(await rig.client.enhancedBearerCount(rig.c) == 0)
        _ = try await rig.central.pair(rig.c)
        try await rig.waitForBearers(3)
        #expect(await rig.server.enhancedBearerCount(rig.p) == 3)
    }

    /// Four reads the application answers only once all four reached it: they can, because each went out on its own
    /// bearer (one bearer allows one outstanding request: the second would wait behind the first for ever). Each
    /// read gets its own value back: the server answered every request on the bearer it came on.
    @Test func concurrentReadsGoOutOnDifferentBearersAndEachGetsItsAnswer() async throws {
        let rig = try await Rig()
        defer { withExtendedLifetime(rig) {} }
        #expect(try await rig.client.openEnhancedBearers(on: rig.c, count: 3) == 3)
        var handles: [AttributeHandle] = []
        for uuid in Self.answered { handles.append(try await rig.handle(uuid)) }
        let server = rig.server, requests = rig.requests
        let answering = Task {
            var held: [GATTServerRequest] = []
            for await request in requests {
                held.append(request)
                if held.count == 4 { break }
            }
            // All four are outstanding at once: answer in reverse order, each with its handle.
            for request in held.reversed() {
                guard case .read(let handle, _) = request.request else { continue }
                await server.respond(to: request, with: .value([UInt8(truncatingIfNeeded: handle.rawValue), 0xEA]))
            }
            return held.count
        }
        let client = rig.client, c = rig.c
        let values = try await withThrowingTaskGroup(of: (AttributeHandle, [UInt8]).self) { group in
            for handle in handles { group.addTask { (handle, try await client.read(c, attribute: handle)) } }
            var values: [AttributeHandle: [UInt8]] = [:]
            for try await (handle, value) in group { values[handle] = value }
            return values
        }
        #expect(await answering.value == 4)
        for handle in handles { #expect(values[handle] == [UInt8(truncatingIfNeeded: handle.rawValue), 0xEA]) }
    }

    /// A read the application never answers times out on its EATT bearer: that bearer's channel closes (on both
    /// sides), the link and the other bearers stay, and later reads go on.
    @Test func aTimeoutOnOneBearerClosesThatBearerOnly() async throws {
        let rig = try await Rig(transactionTimeout: .seconds(1))
        defer { withExtendedLifetime(rig) {} }
        #expect(try await rig.client.openEnhancedBearers(on: rig.c, count: 3) == 3)
        let answered = try await rig.handle(Self.answered[0])
        let silent = try await rig.handle(Self.answered[1])
        let server = rig.server, client = rig.client, c = rig.c
        let answering = Task {
            var first: GATTServerRequest?
            for await request in rig.requests {
                guard case .read(let handle, _) = request.request else { continue }
                if handle == silent {
                    // The silent read is out: the held one is answered; the silent one never is.
                    if let held = first { await server.respond(to: held, with: .value([1])) }
                    first = nil
                } else if first == nil, handle == answered, await client.enhancedBearerCount(c) == 3 {
                    first = request
                } else {
                    await server.respond(to: request, with: .value([2]))
                }
            }
        }
        defer { answering.cancel() }
        // The first read holds the unenhanced bearer; the silent one goes on an EATT bearer.
        let held = Task { try await client.read(c, attribute: answered) }
        try await Task.sleep(for: .milliseconds(100))
        let timedOut = Task { try await client.read(c, attribute: silent) }
        #expect(try await held.value == [1])
        await #expect(throws: GATTError(.timeout, "")) { try await timedOut.value }
        try await rig.waitForBearers(2)
        for _ in 0..<400 where await server.enhancedBearerCount(rig.p) != 2 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(await server.enhancedBearerCount(rig.p) == 2)
        let again = try await withThrowingTaskGroup(of: [UInt8].self) { group in
            for _ in 0..<3 { group.addTask { try await client.read(c, attribute: answered) } }
            var all: [[UInt8]] = []
            for try await value in group { all.append(value) }
            return all
        }
        #expect(again == [[2], [2], [2]])
        #expect(await rig.central.connections.contains { $0.link == c.link })
    }

    /// Without encryption the client opens no bearer, and the server's host refuses a request for EATT channels
    /// with Insufficient Authentication (no key) as the specification asks.
    @Test func anUnencryptedLinkGetsNoBearer() async throws {
        let rig = try await Rig(encrypted: false)
        defer { withExtendedLifetime(rig) {} }
        await #expect(throws: GATTError(.att(.insufficientEncryption, handle: 0), "")) {
            try await rig.client.openEnhancedBearers(on: rig.c, count: 2)
        }
        do {
            _ = try await rig.central.openL2CAPChannels(spsm: .eatt, count: 2, on: rig.c, parameters: L2CAPChannelParameters(mtu: 247, mps: 247))
            Issue.record("the server accepted EATT channels on an unencrypted link")
        } catch let error as HostError {
            #expect(error.code.l2capConnectionFailure == .refused(.insufficientAuthentication))
        }
        _ = try await rig.client.discoverDatabase(rig.c)
        try await Task.sleep(for: .milliseconds(100))
        #expect(await rig.client.enhancedBearerCount(rig.c) == 0)
        #expect(await rig.server.enhancedBearerCount(rig.p) == 0)
    }

    /// Bad PDUs on an Enhanced ATT bearer, sent by a raw peer (the client's application opens an enhanced channel to
    /// SPSM 0x0027 itself and writes bytes): each gets the answer the specification gives on that bearer (Exchange MTU,
    /// which only the unenhanced bearer carries, and an unknown request: Request Not Supported; a truncated request:
    /// Invalid PDU; handle 0: Invalid Handle), an unknown command and an unsolicited response get none, and the bearer,
    /// its link and the server's other bearers go on: a read on the same bearer is answered after them all. Core 5.4,
    /// Vol 3, Part F, 3.3, 3.4.1.1 and 3.4.2.
    @Test func badPDUsOnAnEnhancedBearerGetTheSpecificationsAnswersAndTheBearerGoesOn() async throws {
        let rig = try await Rig()
        defer { withExtendedLifetime(rig) {} }
        let channels = try await rig.central.openL2CAPChannels(spsm: .eatt, count: 1, on: rig.c,
                                                               parameters: L2CAPChannelParameters(mtu: 247, mps: 247))
        let raw = try #require(channels.first)
        for _ in 0..<400 where await rig.server.enhancedBearerCount(rig.p) != 1 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(await rig.server.enhancedBearerCount(rig.p) == 1)
        let readable = try await rig.handle(EATTTests.notifying[0])
        let read: [UInt8] = [0x0A, UInt8(readable.rawValue & 0xFF), UInt8(readable.rawValue >> 8)]
        let exchanges: [(sent: [[UInt8]], answer: [UInt8])] = [
            ([[0x02, 0xF7, 0x00]], [0x01, 0x02, 0x00, 0x00, 0x06]),   // Exchange MTU: Request Not Supported
            ([[0x3F, 0x01]], [0x01, 0x3F, 0x00, 0x00, 0x06]),         // unknown request: Request Not Supported
            ([[0x0A, 0x01]], [0x01, 0x0A, 0x00, 0x00, 0x04]),         // truncated Read Request: Invalid PDU
            ([[0x0A, 0x00, 0x00]], [0x01, 0x0A, 0x00, 0x00, 0x01]),   // handle 0: Invalid Handle
            // an unknown command, an unsolicited Read Response and a lone Handle Value Confirmation get nothing: the
            // next answer is the read's
            ([[0x7E, 0x01, 0x02], [0x0B, 0x01], [0x1E], read], [0x0B, 0x00]),
        ]
        var incoming = raw.incoming.makeAsyncIterator()
        for exchange in exchanges {
            for pdu in exchange.sent { try await raw.send(pdu) }
            let answer = await incoming.next()
            #expect(answer == exchange.answer, "\(exchange.sent.map { $0.hexString() }) → \(answer?.hexString() ?? "nothing")")
        }
        #expect(await rig.server.enhancedBearerCount(rig.p) == 1)
        #expect(await rig.central.connections.contains { $0.link == rig.c.link })
    }

    /// Our host on the other end of a raw server's Enhanced ATT bearer (the peripheral's host has EATT off and its
    /// application takes SPSM 0x0027): an indication that comes on the bearer is confirmed on it, and a request the
    /// raw peer sends on it is answered on it by our host's own GATT server. Core 5.4, Vol 3, Part F, 3.4.7.2 and
    /// Part G, 2.5.
    @Test func theClientConfirmsAndAnswersOnTheBearerAPDUCameOn() async throws {
        let world = World()
        var noEATT = HCIHost.Configuration()
        noEATT.enhancedATTBearers = 0
        let (peripheral, pc) = try await world.host(configuration: noEATT)
        let server = GATTEngine(host: peripheral, database: EATTTests.database)
        await server.start()
        let listener = try await peripheral.listen(spsm: .eatt, parameters: L2CAPChannelParameters(mtu: 247, mps: 247),
                                                   security: L2CAPSecurityRequirement(encryption: true))
        let (central, _) = try await world.host(at: 1)
        let client = GATTEngine(host: central)
        await client.start()
        let (c, _) = try await connect(central, peripheral, peripheralAddress: pc.address)
        _ = try await central.pair(c)
        #expect(try await client.openEnhancedBearers(on: c, count: 1) == 1)
        var accepted = listener.makeAsyncIterator()
        let raw = try #require(await accepted.next())
        var incoming = raw.incoming.makeAsyncIterator()
        let notifying = try #require(await server.database.valueHandle(of: EATTTests.notifying[0]))
        try await raw.send([0x1D, UInt8(notifying.rawValue & 0xFF), UInt8(notifying.rawValue >> 8), 0xAB])
        #expect(await incoming.next() == [0x1E])
        // Handle 0x0001 of our host's database: the GAP service's declaration (0x1800)
        try await raw.send([0x0A, 0x01, 0x00])
        #expect(await incoming.next() == [0x0B, 0x00, 0x18])
        #expect(await client.enhancedBearerCount(c) == 1)
        withExtendedLifetime((world, server)) {}
    }

    /// Two values changed at once reach their subscribers on a client that enabled Multiple Handle Value
    /// Notifications (they travel in one ATT_MULTIPLE_HANDLE_VALUE_NTF), each to its own stream.
    @Test func multipleHandleValueNotificationsFanOutToTheSubscribers() async throws {
        let rig = try await Rig()
        defer { withExtendedLifetime(rig) {} }
        #expect(try await rig.client.openEnhancedBearers(on: rig.c, count: 1) == 1)
        let services = try await rig.client.discoverDatabase(rig.c)
        var streams: [NotificationStream] = []
        var handles: [AttributeHandle] = []
        for uuid in Self.notifying {
            let ch = try #require(services.lazy.flatMap(\.characteristics).first { $0.characteristic.uuid == uuid })
            let cccd = try #require(ch.descriptors.first { $0.uuid == BluetoothUUID(0x2902) })
            streams.append(try await rig.client.subscribe(rig.c, valueHandle: ch.characteristic.valueHandle, cccdHandle: cccd.handle))
            handles.append(ch.characteristic.valueHandle)
        }
        let sent = try await rig.server.updateValues([(handles[0], [0xA1, 0x01]), (handles[1], [0xA2])])
        #expect(sent.map(\.link) == [rig.p.link])
        var first = streams[0].makeAsyncIterator(), second = streams[1].makeAsyncIterator()
        #expect(await first.next() == [0xA1, 0x01])
        #expect(await second.next() == [0xA2])
    }
}
