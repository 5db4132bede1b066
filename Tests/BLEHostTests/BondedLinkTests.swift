import BLEFixtures
import BLEHost
import BLEProtocols
import BLETestSupport
import BLETransport
import BLEVirtualController
import BLEWire
import Synchronization
import Testing

/// A transport that counts the SMP Pairing Requests its host sends (L2CAP CID 0x0006, code 0x01).
final class PairingRequestCounter: HCITransport {
    let inner: any HCITransport
    private let count = Mutex(0)

    init(_ inner: any HCITransport) { self.inner = inner }

    var incoming: AsyncThrowingStream<HCIPacket, any Error> { inner.incoming }
    var pairingRequests: Int { count.withLock { $0 } }

    func send(_ packet: HCIPacket) async throws {
        // A start fragment: length (2), CID (2), then the SMP code.
        if case .acl(let acl) = packet, acl.boundary.isStart, acl.data.count >= 5, acl.data[2] == 0x06, acl.data[3] == 0x00,
           acl.data[4] == SMPCode.pairingRequest.rawValue {
            count.withLock { $0 += 1 }
        }
        try await inner.send(packet)
    }

    func close() async { await inner.close() }
}

/// Bonds found by the address the link is made with, and what a GATT server keeps with a bond: through the stack,
/// two hosts on the virtual controller.
@Suite(.timeLimit(.minutes(1))) struct BondedLinkTests {
    static let publicIdentity = LEAddress(BluetoothAddress("00:1A:7D:DA:71:13") ?? .zero, type: .public)

    /// Issue 23, item 4: a peripheral that advertises and connects from a static random address and distributes a
    /// public identity address with an all-zero IRK. The central's bond is found under the address the link is made
    /// with: the second link is encrypted from the bond, and no Pairing Request goes out.
    @Test func aPeerPairedThroughAStaticRandomAddressIsEncryptedFromTheBondWithoutPairing() async throws {
        let air = VirtualAir(clock: .realTime, seed: 11)
        defer { air.shutdown() }
        var pc = HCIHost.Configuration()
        pc.security = SecurityConfiguration(
            distributedIdentity: SMPIdentity(identityResolvingKey: [UInt8](repeating: 0, count: 16), address: Self.publicIdentity))
        // No public address on the peripheral's controller: its host picks a static random one.
        let peripheral = HCIHost(transport: air.addController(.init(address: .zero)).makeHostTransport(), configuration: pc)
        let counter = PairingRequestCounter(air.addController(.init(position: Position(x: 1))).makeHostTransport())
        let central = HCIHost(transport: counter)
        try await peripheral.powerOn()
        try await central.powerOn()
        let own = try #require(await peripheral.ownAddress)
        #expect(own.kind == .randomStatic)
        let server = GATTEngine(host: peripheral, database: PairingTests.database)
        await server.start()
        let client = GATTEngine(host: central)
        await client.start()

        func connect() async throws -> HostConnection {
            try await peripheral.startAdvertising(.init(data: AdvertisingData(flags: .leOnlyGeneralDiscoverable, localName: "SecureBand")))
            return try await central.connect(to: own, timeout: .seconds(5))
        }
        var c = try await connect()
        let paired = try await central.pair(c)
        #expect(paired.isBonded && paired.peerIdentity == Self.publicIdentity)
        #expect(counter.pairingRequests == 1)
        let bonds = try central.bondStore.allBonds()
        #expect(bonds.count == 1)
        let bond = try #require(bonds.first)
        #expect(bond.peer == Self.publicIdentity && bond.pairedThrough == own)
        #expect(bond.peerIdentityResolvingKey == nil, "an all-zero IRK is no IRK")

        let events = await peripheral.events()
        try await central.disconnect(c)
        _ = try await next(events) { if case .disconnected = $0 { true } else { nil } }
        c = try await connect()
        // Known at once as the bonded device, by the address it connected from.
        let known = await central.security(of: c)
        #expect(known?.isBonded == true && known?.peerIdentity == Self.publicIdentity && known?.isEncrypted == false)
        #expect(await central.bond(of: c) == bond)

        // A read that needs encryption: the central encrypts with the bond and reads.
        let service = try #require(try await client.discoverPrimaryServices(c, uuid: PairingTests.service).first)
        let value = try #require(try await client.discoverCharacteristics(c, of: service, uuid: PairingTests.encrypted).first?.valueHandle)
        #expect(try await client.read(c, attribute: value) == Array("top-secret".utf8))
        let secured = await central.security(of: c)
        #expect(secured?.isEncrypted == true && secured?.isBonded == true && secured?.level?.authenticated == false)
        #expect(counter.pairingRequests == 1, "the second link paired again")
    }

    // MARK: Task 2: a bonded client's robust-caching state in the bond store

    static let serverAddress = BluetoothAddress("00:5B:00:00:00:A1") ?? .zero
    static let band = GATTServiceDefinition(uuid: 0x180F, characteristics: [
        GATTCharacteristicDefinition(uuid: 0x2A19, properties: .read, value: [87]),
    ])
    static let deviceInformation = GATTServiceDefinition(uuid: 0x180A, characteristics: [
        GATTCharacteristicDefinition(uuid: 0x2A29, properties: .read, value: Array("Maker".utf8)),
    ])
    /// The database before and after a "firmware update".
    static let before = GATTDatabase(deviceName: "Band", services: [band])
    static let after = GATTDatabase(deviceName: "Band", services: [band, deviceInformation])

    /// A server host on a controller with ``serverAddress`` (the one of the bonds), its bonds in the file at `path`.
    func startServer(_ air: VirtualAir, bonds path: String, database: GATTDatabase) async throws -> (HCIHost, GATTEngine) {
        var configuration = HCIHost.Configuration()
        configuration.security = SecurityConfiguration(bondStore: FileBondStore(path: path))
        let host = HCIHost(transport: air.addController(.init(address: Self.serverAddress)).makeHostTransport(), configuration: configuration)
        try await host.powerOn()
        let engine = GATTEngine(host: host, database: database)
        await engine.start()
        try await host.startAdvertising(.init(data: AdvertisingData(flags: .leOnlyGeneralDiscoverable, localName: "Band")))
        return (host, engine)
    }

    /// What the bond file keeps for the client, once it is `expected` (the server writes it as requests are served).
    func stored(_ path: String, becomes expected: BondedGATTClient) async throws -> BondedGATTClient? {
        var found: BondedGATTClient?
        for _ in 0..<100 {
            found = try FileBondStore(path: path).allBonds().first?.gattClient
            if found == expected { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        return found
    }

    func attError(_ body: () async throws -> [UInt8]) async -> ATTErrorCode? {
        do {
            _ = try await body()
            return nil
        } catch let error as GATTError {
            if let code = error.code.attError { return code }
            return nil
        } catch {
            return nil
        }
    }

    /// Core 5.4, Vol 3, Part G, 2.5.2.1, 7.1 and 7.2: a bonded client's Service Changed subscription, Client Supported
    /// Features and change awareness outlive the server process. The server restarts (a new host, the same bond file)
    /// with a changed database: the client subscribed to Service Changed is indicated and, once it confirms, served;
    /// one that did not subscribe is answered Database Out Of Sync until it is change-aware again. Its features read
    /// back what it wrote.
    @Test func aBondedClientsCachingStateOutlivesAServerRestartWithAChangedDatabase() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("bonds.json")
        let air = VirtualAir(clock: .realTime, seed: 11)
        defer { air.shutdown() }
        let central = HCIHost(transport: air.addController(.init(position: Position(x: 1))).makeHostTransport())
        try await central.powerOn()
        let client = GATTEngine(host: central)
        await client.start()
        let serverIdentity = LEAddress(Self.serverAddress, type: .public)

        var (server, engine) = try await startServer(air, bonds: path, database: Self.before)
        var retired: [GATTEngine] = []
        defer { withExtendedLifetime(retired) {} }
        var c = try await central.connect(to: serverIdentity, timeout: .seconds(5))
        _ = try await central.pair(c)
        let gatt = try #require(try await client.discoverPrimaryServices(c, uuid: 0x1801).first)
        let characteristics = try await client.discoverCharacteristics(c, of: gatt)
        let serviceChanged = try #require(characteristics.first { $0.uuid == BluetoothUUID(0x2A05) })
        let features = try #require(characteristics.first { $0.uuid == BluetoothUUID(0x2B29) }?.valueHandle)
        let cccd = try #require(try await client.discoverDescriptors(c, of: serviceChanged).first { $0.uuid == BluetoothUUID(0x2902) }?.handle)
        try await client.write(c, attribute: features, value: [0x01])
        _ = try await client.subscribe(c, valueHandle: serviceChanged.valueHandle, cccdHandle: cccd, indications: true)
        let subscribed = BondedGATTClient(serviceChangedConfiguration: 2, clientSupportedFeatures: 1, databaseHash: Self.before.hash)
        #expect(try await stored(path, becomes: subscribed) == subscribed)

        // The server goes away; a new host on the same bond file serves a changed database.
        func restart(with database: GATTDatabase) async throws {
            let events = await central.events()
            try await central.disconnect(c)
            _ = try await next(events) { if case .disconnected = $0 { true } else { nil } }
            await server.powerOff()
            retired.append(engine)
            (server, engine) = try await startServer(air, bonds: path, database: database)
        }
        try await restart(with: Self.after)
        let serverEvents = await engine.serverEvents()
        c = try await central.connect(to: serverIdentity, timeout: .seconds(5))
        // Subscribed to Service Changed: indicated at once, and change-aware once it confirmed.
        let confirmed = try await withTimeout(5) { () async throws -> Bool in
            for await event in serverEvents where event.event == .indicationConfirmed { return true }
            return false
        }
        #expect(confirmed)
        let aware = BondedGATTClient(serviceChangedConfiguration: 2, clientSupportedFeatures: 1, databaseHash: Self.after.hash)
        #expect(try await stored(path, becomes: aware) == aware)
        #expect(try await client.read(c, attribute: features) == [0x01])

        // Without the Service Changed subscription, the next change is told with Database Out Of Sync.
        try await client.unsubscribe(c, valueHandle: serviceChanged.valueHandle, cccdHandle: cccd)
        let unsubscribed = BondedGATTClient(serviceChangedConfiguration: 0, clientSupportedFeatures: 1, databaseHash: Self.after.hash)
        #expect(try await stored(path, becomes: unsubscribed) == unsubscribed)
        try await restart(with: Self.before)
        c = try await central.connect(to: serverIdentity, timeout: .seconds(5))
        #expect(await attError { try await client.read(c, attribute: features) } == .databaseOutOfSync)
        // Still change-unaware in the bond file: a restart now would find it so.
        #expect(try FileBondStore(path: path).allBonds().first?.gattClient == unsubscribed)
        // The request after Database Out Of Sync makes it change-aware: served, and kept so.
        #expect(try await client.read(c, attribute: features) == [0x01])
        let caughtUp = BondedGATTClient(serviceChangedConfiguration: 0, clientSupportedFeatures: 1, databaseHash: Self.before.hash)
        #expect(try await stored(path, becomes: caughtUp) == caughtUp)
    }

    /// A change-unaware client that reads the Database Hash by type is served it, and is change-aware from its next
    /// request. Core 5.4, Vol 3, Part G, 2.5.2.1.
    @Test func readingTheDatabaseHashMakesARestoredClientChangeAware() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("bonds.json")
        let air = VirtualAir(clock: .realTime, seed: 11)
        defer { air.shutdown() }
        let central = HCIHost(transport: air.addController(.init(position: Position(x: 1))).makeHostTransport())
        try await central.powerOn()
        let client = GATTEngine(host: central)
        await client.start()
        let serverIdentity = LEAddress(Self.serverAddress, type: .public)

        let (first, firstEngine) = try await startServer(air, bonds: path, database: Self.before)
        var c = try await central.connect(to: serverIdentity, timeout: .seconds(5))
        _ = try await central.pair(c)
        let features = try #require(try await client.read(c, byType: 0x2B29).first?.handle)
        try await client.write(c, attribute: features, value: [0x01])
        let written = BondedGATTClient(clientSupportedFeatures: 1, databaseHash: Self.before.hash)
        #expect(try await stored(path, becomes: written) == written)
        let events = await central.events()
        try await central.disconnect(c)
        _ = try await next(events) { if case .disconnected = $0 { true } else { nil } }
        await first.powerOff()
        let (_, secondEngine) = try await startServer(air, bonds: path, database: Self.after)

        c = try await central.connect(to: serverIdentity, timeout: .seconds(5))
        #expect(try await client.readDatabaseHash(c) == Self.after.hash)
        #expect(try await client.read(c, attribute: features) == [0x01])
        let caughtUp = BondedGATTClient(clientSupportedFeatures: 1, databaseHash: Self.after.hash)
        #expect(try await stored(path, becomes: caughtUp) == caughtUp)
        withExtendedLifetime((firstEngine, secondEngine)) {}
    }
}
