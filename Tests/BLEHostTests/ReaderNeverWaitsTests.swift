import BLEFixtures
import BLEHost
import BLEProtocols
import BLETestSupport
import BLETransport
import BLEVirtualController
import BLEWire
import Testing

/// The packet-reading path of a host never waits for queue room or for a command's outcome: only that path reads the
/// events (Number Of Completed Packets, Command Complete/Status) that would end the wait. Each test drives the bytes
/// of a hostile-input finding through the stack; the hosts get a 60 s command timeout so that a stalled reader shows
/// as a test timeout, not as a slow pass.
@Suite(.timeLimit(.minutes(1))) struct ReaderNeverWaitsTests {
    static var patient: HCIHost.Configuration {
        var configuration = HCIHost.Configuration()
        configuration.commandTimeout = .seconds(60)
        return configuration
    }

    static func database() -> GATTDatabase {
        GATTDatabase(deviceName: "Busy", services: [
            GATTServiceDefinition(uuid: 0x180F, characteristics: [
                GATTCharacteristicDefinition(uuid: 0x2A19, properties: [.read, .notify], value: [87]),
            ]),
            GATTServiceDefinition(uuid: 0x180A, characteristics: [
                GATTCharacteristicDefinition(uuid: 0x2A29, properties: .read, value: Array("swift-ble".utf8)),
                GATTCharacteristicDefinition(uuid: 0x2A24, properties: .read, value: Array("model".utf8)),
                GATTCharacteristicDefinition(uuid: 0x2A25, properties: .read, value: Array("serial".utf8)),
            ]),
        ])
    }

    /// The freeze: a central subscribed to a notification burst sends SMP and signaling PDUs while the peripheral's
    /// queue for its link is full. The peripheral answers them, finishes the burst, and keeps serving another central.
    @Test func smpAndSignalingDuringANotificationBurstFreezeNothing() async throws {
        let world = World()
        let (peripheral, pc) = try await world.host(aclSize: 27, aclCount: 2, configuration: Self.patient)
        let server = GATTEngine(host: peripheral, database: Self.database())
        await server.start()
        let (rawCentral, _) = try await world.host(at: 1, configuration: Self.patient)
        let (a, _) = try await connect(rawCentral, peripheral, peripheralAddress: pc.address)
        let (central, _) = try await world.host(at: 2, configuration: Self.patient)
        let client = GATTEngine(host: central)
        await client.start()
        let (b, _) = try await connect(central, peripheral, peripheralAddress: pc.address)

        // The raw central speaks ATT, SMP and signaling itself.
        let att = try await rawCentral.openFixedChannel(.att, on: a)
        let smp = try await rawCentral.openFixedChannel(.smp, on: a)
        let signaling = try await rawCentral.openFixedChannel(.leSignaling, on: a)
        var attIterator = att.makeAsyncIterator()
        try await rawCentral.sendL2CAP(ATTPDU.exchangeMTURequest(.init(mtu: 247)).encoded, channel: .att, on: a)
        #expect(try await attIterator.next().map(ATTPDU.init(bytes:)) == .exchangeMTUResponse(.init(mtu: 247)))
        let battery = try #require(await server.database.valueHandle(of: 0x2A19))
        try await rawCentral.sendL2CAP(ATTPDU.writeRequest(.init(handle: try #require(battery.next), value: [0x01, 0x00])).encoded, channel: .att, on: a)
        #expect(try await attIterator.next().map(ATTPDU.init(bytes:)) == .writeResponse(.init()))

        // 300 notifications of 244 bytes: 10 ACL packets each against 2 controller buffers keep the queue full.
        let count = 300
        let burst = Task {
            for i in 0..<count {
                _ = try await server.updateValue([UInt8(truncatingIfNeeded: i)] + Array(repeating: 0xEE, count: 243), for: battery, onLinks: [a.link])
            }
        }
        let received = Task { () -> Int in
            var n = 0
            while let payload = await attIterator.next() {
                if payload.first == ATTOpcode.handleValueNotification.rawValue { n += 1 }
                if n == count { break }
            }
            return n
        }
        // While the burst runs: Pairing Requests and unknown signaling commands, each needing an answer.
        let pairing = SMPPDU.pairingRequest(.init(ioCapability: .noInputNoOutput, authRequirements: [.bonding],
                                                  initiatorKeyDistribution: [.encryptionKey], responderKeyDistribution: [.encryptionKey]))
        for round in 0..<10 {
            try await Task.sleep(for: .milliseconds(5))
            try await rawCentral.sendL2CAP(pairing.encoded, channel: .smp, on: a)
            try await rawCentral.sendL2CAP([0x7E, UInt8(round + 1), 0x00, 0x00], channel: .leSignaling, on: a)
        }
        // Another central is served meanwhile.
        let name = try await withTimeout(10) {
            try await client.read(b, byType: 0x2A29)
        }
        #expect(name.first?.value == Array("swift-ble".utf8))
        // Every SMP and signaling command was answered, and the whole burst arrived.
        let answers = try await withTimeout(10) { () -> ([SMPPDU], [L2CAPSignalingPDU]) in
            var smpAnswers: [SMPPDU] = []
            var signalingAnswers: [L2CAPSignalingPDU] = []
            var smpIterator = smp.makeAsyncIterator()
            var signalingIterator = signaling.makeAsyncIterator()
            for _ in 0..<10 {
                if let bytes = await smpIterator.next() { smpAnswers.append(try SMPPDU(bytes: bytes)) }
                if let bytes = await signalingIterator.next() { signalingAnswers.append(try L2CAPSignalingPDU(bytes: bytes)) }
            }
            return (smpAnswers, signalingAnswers)
        }
        // The first request starts a pairing (Pairing Response); a second one during it fails the pairing (Unspecified
        // Reason), and the next ones come within the repeated-attempts delay (Repeated Attempts).
        if case .pairingResponse = answers.0.first {} else { Issue.record("the first Pairing Request was not answered with a Pairing Response") }
        #expect(Array(answers.0.dropFirst()) == [.pairingFailed(.unspecifiedReason)] + Array(repeating: .pairingFailed(.repeatedAttempts), count: 8))
        #expect(answers.1 == (1...10).map { .commandReject(identifier: UInt8($0), reason: .commandNotUnderstood) })
        try await withTimeout(20) { try await burst.value }
        #expect(try await withTimeout(20) { await received.value } == count)
        withExtendedLifetime((world, server)) {}
    }

    /// The stall: a peripheral asks for new connection parameters every 100 ms while our central discovers its
    /// database. The central applies each request (LE Connection Update) without awaiting the command's outcome on its
    /// reader, so the discovery finishes; the old reader waited for a Command Status only it could read.
    @Test func parameterUpdateRequestsDuringDiscoveryDoNotStallIt() async throws {
        let world = World()
        let (peripheral, pc) = try await world.host(configuration: Self.patient)
        let server = GATTEngine(host: peripheral, database: Self.database())
        await server.start()
        let (central, _) = try await world.host(at: 1, configuration: Self.patient)
        let client = GATTEngine(host: central)
        await client.start()
        let (c, p) = try await connect(central, peripheral, peripheralAddress: pc.address)
        let updates = await central.events()
        let requester = Task {
            for i in 0..<40 {
                try await peripheral.requestConnectionParameterUpdate(.init(intervalMin: 6, intervalMax: UInt16(8 + i % 2 * 2), latency: 0, timeout: 300),
                                                                      on: p)
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        defer { requester.cancel() }
        _ = try await next(updates) { if case .connectionUpdated(let u) = $0 { u } else { nil } }
        let found = try await withTimeout(10) { () -> Int in
            var found = 0
            for _ in 0..<3 {
                for service in try await client.discoverPrimaryServices(c) {
                    for characteristic in try await client.discoverCharacteristics(c, of: service) {
                        found += 1
                        _ = try await client.discoverDescriptors(c, of: characteristic)
                    }
                }
            }
            return found
        }
        #expect(found > 0)
        withExtendedLifetime((world, server)) {}
    }

    /// A central's LE Enable Encryption reaches a peripheral without keys: its host answers LTK Negative Reply from
    /// the reader without waiting for the outcome, and another central is served at once.
    @Test func anLTKRequestDoesNotStallOtherCentrals() async throws {
        let world = World()
        let (peripheral, pc) = try await world.host(configuration: Self.patient)
        let server = GATTEngine(host: peripheral, database: Self.database())
        await server.start()
        let (encrypting, _) = try await world.host(at: 1, configuration: Self.patient)
        let (x, _) = try await connect(encrypting, peripheral, peripheralAddress: pc.address)
        let (central, _) = try await world.host(at: 2, configuration: Self.patient)
        let client = GATTEngine(host: central)
        await client.start()
        let (b, _) = try await connect(central, peripheral, peripheralAddress: pc.address)
        let events = await encrypting.events()
        _ = try await encrypting.send(HCILEEnableEncryption(handle: x.handle, randomNumber: 1, encryptedDiversifier: 2,
                                                            longTermKey: Array(repeating: 0x11, count: 16)))
        let outcome = try await next(events) { if case .encryptionChanged(_, let status, let enabled) = $0 { (status, enabled) } else { nil } }
        #expect(outcome.0 != .success && !outcome.1)
        for _ in 0..<5 {
            let value = try await withTimeout(5) { try await client.read(b, byType: 0x2A24) }
            #expect(value.first?.value == Array("model".utf8))
        }
        withExtendedLifetime((world, server)) {}
    }
}
