import BLEFixtures
import BLEHost
import BLEProtocols
import BLETestSupport
import BLEVirtualController
import BLEWire
import Testing

/// Faults on the virtual air, through the whole stack: retransmissions are latency to GATT (long writes and
/// notifications arrive whole and in order), and a link lost in the middle of a long write commits nothing.
@Suite(.timeLimit(.minutes(1))) struct AirFaultTests {
    static let service = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF0") ?? 0
    static let value = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF1") ?? 0

    struct Rig {
        let world = World()
        let peripheral: HCIHost
        let pc: VirtualController
        let central: HCIHost
        let cc: VirtualController
        let server: GATTEngine
        let client: GATTEngine

        init() async throws {
            (peripheral, pc) = try await world.host(aclSize: 251)
            (central, cc) = try await world.host(at: 1, aclSize: 251)
            server = GATTEngine(host: peripheral, database: GATTDatabase(services: [
                GATTServiceDefinition(uuid: AirFaultTests.service, characteristics: [
                    GATTCharacteristicDefinition(uuid: AirFaultTests.value, properties: [.read, .write, .notify],
                                                 permissions: [.readable, .writeable], value: Array("initial".utf8)),
                ]),
            ]))
            await server.start()
            client = GATTEngine(host: central)
            await client.start()
        }

        func connect(supervisionTimeout: UInt16 = 0x01F4) async throws -> (HostConnection, AttributeHandle) {
            try await peripheral.startAdvertising(.init(data: AdvertisingData(flags: .leOnlyGeneralDiscoverable, localName: "F")))
            let c = try await central.connect(to: LEAddress(pc.address, type: .public), timeout: .seconds(5),
                                              supervisionTimeout: supervisionTimeout)
            _ = try await client.exchangeMTU(c)
            let handle = try #require(await server.database.valueHandle(of: AirFaultTests.value))
            return (c, handle)
        }
    }

    @Test func retransmissionsAreLatencyToGATT() async throws {
        let rig = try await Rig()
        defer { withExtendedLifetime(rig) {} }
        let (c, handle) = try await rig.connect()
        rig.world.air.setFaults(LinkFaults(packetLoss: 0.2, crcErrors: 0.05, seed: 21), between: rig.pc, rig.cc)
        let long = (0..<512).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        try await rig.client.write(c, attribute: handle, value: long)
        #expect(try await rig.client.read(c, attribute: handle) == long)
        let cccd = AttributeHandle(rawValue: handle.rawValue + 1)
        let values = try await rig.client.subscribe(c, valueHandle: handle, cccdHandle: cccd)
        let receiving = Task { await values.prefix(20).reduce(into: [[UInt8]]()) { $0.append($1) } }
        for i in 0..<20 { _ = try await rig.server.updateValue([UInt8(i), 0xEE], for: handle) }
        let got = try await withTimeout(20) { await receiving.value }
        #expect(got.map { $0.first } == (0..<20).map { UInt8($0) })
        #expect(rig.world.air.retransmissionCount > 0)
        #expect(await rig.central.connections.count == 1)
    }

    /// The link goes silent after the first prepared write: it is lost at its supervision timeout, the write fails,
    /// and the server, which discarded the link's prepared queue, still holds the old value. The faults are switched on
    /// from the test once the second request has gone out, on an air with the air-time model (each request and its
    /// response take two 50 ms connection events, so the write is still under way); should the whole write still
    /// finish first (a very slow machine), the attempt is made again on a fresh pair of devices.
    @Test func aLinkLostInTheMiddleOfALongWriteCommitsNothing() async throws {
        for attempt in 1...3 {
            let rig = try await Rig()
            defer { withExtendedLifetime(rig) {} }
            var (c, handle) = try await rig.connect(supervisionTimeout: 0x0032)   // 500 ms
            rig.world.air.airTime = AirTimeModel()
            let before = await rig.client.requestCount
            let long = Array(repeating: UInt8(0x42), count: 512)
            let (client, link, attribute) = (rig.client, c, handle)
            let writing = Task { try await client.write(link, attribute: attribute, value: long) }
            for _ in 0..<500 where await rig.client.requestCount - before < 2 { try await Task.sleep(for: .milliseconds(1)) }
            rig.world.air.setFaults(LinkFaults(packetLoss: 1, seed: 4), between: rig.pc, rig.cc)
            guard case .failure(let error) = await writing.result else {
                // The write got through before the link went silent: not the case under test.
                #expect(attempt < 3, "the long write finished before the faults, three times")
                continue
            }
            #expect(error is GATTError)
            #expect(rig.world.air.linksLostToFaultsCount == 1)
            rig.world.air.setFaults(nil, between: rig.pc, rig.cc)
            for _ in 0..<200 where await !rig.peripheral.connections.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
            (c, handle) = try await rig.connect()
            #expect(try await rig.client.read(c, attribute: handle) == Array("initial".utf8))
            return
        }
    }
}
