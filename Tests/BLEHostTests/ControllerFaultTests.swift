import BLEFixtures
import BLEHost
import BLEProtocols
import BLETestSupport
import BLETransport
import BLEVirtualController
import BLEWire
import Testing

/// The controller fails under a session: a hardware error (the host resets it and powers on again), or the TCP
/// connection to it drops. Every link is reported lost, every waiting GATT request fails, the peers time their
/// sides out, and the host is usable again (or says it is powered off).
@Suite(.timeLimit(.minutes(1))) struct ControllerFaultTests {
    static let slow = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF9") ?? 0

    /// A peripheral whose one characteristic the application never answers: a read of it waits until the link ends.
    static func peripheral(_ world: World, at x: Double) async throws -> (HCIHost, VirtualController, GATTEngine, AsyncStream<GATTServerRequest>) {
        let (host, controller) = try await world.host(at: x)
        let engine = GATTEngine(host: host, database: GATTDatabase(services: [
            GATTServiceDefinition(uuid: 0xFFF0, characteristics: [
                GATTCharacteristicDefinition(uuid: slow, properties: .read, source: .application),
            ]),
        ]))
        await engine.start()
        let requests = await engine.applicationRequests()
        return (host, controller, engine, requests)
    }

    func connect(_ central: HCIHost, to peripheral: HCIHost, _ controller: VirtualController) async throws -> HostConnection {
        try await peripheral.startAdvertising(.init(data: AdvertisingData(flags: .leOnlyGeneralDiscoverable, localName: "P")))
        return try await central.connect(to: LEAddress(controller.address, type: .public), timeout: .seconds(5), supervisionTimeout: 0x0032)
    }

    @Test func aHardwareErrorLosesEveryLinkFailsWaitingRequestsAndPowersOnAgain() async throws {
        let world = World()
        let (central, cc) = try await world.host()
        let (p1, pc1, e1, r1) = try await Self.peripheral(world, at: 1)
        let (p2, pc2, e2, r2) = try await Self.peripheral(world, at: 2)
        defer { withExtendedLifetime((world, e1, e2, r1, r2)) {} }
        let client = GATTEngine(host: central)
        await client.start()
        let c1 = try await connect(central, to: p1, pc1)
        let c2 = try await connect(central, to: p2, pc2)
        let value = try #require(await e1.database.valueHandle(of: Self.slow))
        let events = await central.events()
        let p1Events = await p1.events()
        let waiting = Task { try await client.read(c1, attribute: value) }
        try await Task.sleep(for: .milliseconds(50))

        cc.injectHardwareError(code: 0x21)
        let seen = try await withTimeout { () async throws -> (lost: Set<LinkID>, reasons: Set<HCIStatus>, states: [AdapterState]) in
            var lost = Set<LinkID>(), reasons = Set<HCIStatus>(), states: [AdapterState] = []
            for await event in events {
                switch event {
                case .disconnected(let c, let reason):
                    lost.insert(c.link)
                    reasons.insert(reason)
                case .stateChanged(let s): states.append(s)
                default: break
                }
                if lost.count == 2, states.contains(.resetting), states.last == .poweredOn { return (lost, reasons, states) }
            }
            throw TimedOut()
        }
        #expect(seen.lost == [c1.link, c2.link])
        #expect(seen.reasons == [.hardwareFailure])
        // The subscription starts with the state as it was.
        #expect(seen.states == [.poweredOn, .resetting, .poweredOn])
        await #expect(throws: GATTError(.disconnected, "")) { try await waiting.value }
        // The controller forgot its links without a word: the peripheral times its side out.
        let reason = try await next(p1Events) { if case .disconnected(_, let r) = $0 { r } else { nil } }
        #expect(reason == .connectionTimeout)
        // The host works again.
        let again = try await connect(central, to: p1, pc1)
        #expect(try await client.discoverPrimaryServices(again).map(\.uuid).contains(0xFFF0))
    }

    /// `powerOn()` on a host that is on resets the controller in place (what Pandora's Reset asks): HCI Reset on the
    /// same transport ends every link (reported lost, Connection Terminated By Local Host; the peer times its side
    /// out), the scan stream ends, advertising is off, waiting requests fail; the address stays and the host works on.
    @Test func powerOnWhileOnResetsTheControllerInPlace() async throws {
        let world = World()
        let (central, cc) = try await world.host()
        let (p1, pc1, e1, r1) = try await Self.peripheral(world, at: 1)
        defer { withExtendedLifetime((world, e1, r1)) {} }
        let client = GATTEngine(host: central)
        await client.start()
        let c1 = try await connect(central, to: p1, pc1)
        let value = try #require(await e1.database.valueHandle(of: Self.slow))
        let address = await central.ownAddress
        let p1Events = await p1.events()
        let events = await central.events()
        let waiting = Task { try await client.read(c1, attribute: value) }
        try await central.startAdvertising(.init(data: AdvertisingData(flags: .leOnlyGeneralDiscoverable, localName: "C")))
        let scan = try await central.scan()
        let scanEnd = Task { () -> Bool in
            do {
                for try await _ in scan {}
                return false
            } catch {
                return true
            }
        }
        try await Task.sleep(for: .milliseconds(50))
        #expect(cc.isAdvertising && cc.connectionCount == 1)

        try await central.powerOn()
        let reason = try await next(events) { if case .disconnected(let c, let r) = $0, c.link == c1.link { r } else { nil } }
        #expect(reason == .connectionTerminatedByLocalHost)
        #expect(await central.connections.isEmpty)
        #expect(await central.state == .poweredOn)
        #expect(await !central.isAdvertising && !cc.isAdvertising && cc.connectionCount == 0)
        #expect(await scanEnd.value, "the scan stream ends with an error")
        await #expect(throws: GATTError(.disconnected, "")) { try await waiting.value }
        #expect(await central.ownAddress == address)
        // The controller forgot the link without a word: the peripheral times its side out.
        let peerReason = try await next(p1Events) { if case .disconnected(_, let r) = $0 { r } else { nil } }
        #expect(peerReason == .connectionTimeout)
        let again = try await connect(central, to: p1, pc1)
        #expect(try await client.discoverPrimaryServices(again).map(\.uuid).contains(0xFFF0))
    }

    /// Both ways a controller serves a TCP host: reading through the transport's stream, and on its reader thread
    /// (a server made with `startReading: false`, as `ble controller` does).
    @Test(arguments: [true, false]) func aDroppedTCPConnectionLosesEveryLinkAndPowersOff(streamed: Bool) async throws {
        let world = World()
        let server = try H4TCPServer(host: "127.0.0.1", port: 0, startReading: streamed)
        defer { server.close() }
        let serving = Task { () -> FileDescriptorTransport? in
            for await transport in server.connections {
                let controller = world.air.addController(.init(position: Position(x: 0)))
                Task { await controller.attach(transport) }
                return transport
            }
            return nil
        }
        let central = HCIHost(transport: try TCPTransport.connect(host: "127.0.0.1", port: server.port))
        try await central.powerOn()
        let accepted = try #require(await serving.value)
        let (p1, pc1, e1, r1) = try await Self.peripheral(world, at: 1)
        defer { withExtendedLifetime((e1, r1)) {} }
        let client = GATTEngine(host: central)
        await client.start()
        let c1 = try await connect(central, to: p1, pc1)
        let value = try #require(await e1.database.valueHandle(of: Self.slow))
        let events = await central.events()
        let waiting = Task { try await client.read(c1, attribute: value) }
        try await Task.sleep(for: .milliseconds(50))

        await accepted.close()
        let lost = try await next(events) { if case .disconnected(let c, let r) = $0 { (c.link, r) } else { nil } }
        #expect(lost.0 == c1.link && lost.1 == .connectionTimeout)
        await #expect(throws: GATTError(.disconnected, "")) { try await waiting.value }
        for _ in 0..<100 where await central.state != .poweredOff { try await Task.sleep(for: .milliseconds(10)) }
        #expect(await central.state == .poweredOff)
        await #expect(throws: HostError.self) { _ = try await central.connect(to: LEAddress(pc1.address, type: .public), timeout: .seconds(1)) }
    }
}
