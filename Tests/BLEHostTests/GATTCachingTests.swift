import enum BLE.SampleDevice
import BLEFixtures
import BLEHost
import BLEProtocols
import BLETestSupport
import BLEWire
import Foundation
import Testing

/// GATT caching through the stack: a client's cache validated by the Database Hash, robust caching telling the
/// client of a change during the connection, and Service Changed both ways. Core 5.4, Vol 3, Part G, 2.5.2 and 7.
@Suite(.timeLimit(.minutes(1))) struct GATTCachingTests {
    /// The lab device serving on one host, a client engine with a cache on another.
    struct Rig {
        let world = World()
        let peripheral: HCIHost
        let address: BluetoothAddress
        let server: GATTEngine
        let central: HCIHost
        let client: GATTEngine
        let cache: GATTCache

        init(cache: GATTCache = GATTCache()) async throws {
            let (peripheral, pc) = try await world.host()
            self.peripheral = peripheral
            address = pc.address
            server = GATTEngine(host: peripheral, database: SampleDevice.lab.database(name: SampleDevice.lab.defaultName))
            await server.start()
            (central, _) = try await world.host(at: 1)
            client = GATTEngine(host: central)
            await client.start()
            self.cache = cache
            await client.setCache(cache)
        }

        /// Connects (the peripheral advertises again first) and exchanges MTUs.
        func connect() async throws -> HostConnection {
            try await peripheral.startAdvertising(.init(data: AdvertisingData(flags: .leOnlyGeneralDiscoverable, localName: "Lab")))
            let c = try await central.connect(to: LEAddress(address, type: .public), timeout: .seconds(5))
            _ = try await client.exchangeMTU(c)
            return c
        }

        func disconnect(_ c: HostConnection) async throws {
            let events = await central.events()
            try await central.disconnect(c)
            _ = try await next(events) { if case .disconnected = $0 { true } else { nil } }
        }

        /// Waits until the client has sent `count` requests since `start` (background ones included).
        func settle(at count: Int, from start: Int) async throws {
            for _ in 0..<200 where await client.requestCount - start < count { try await Task.sleep(for: .milliseconds(5)) }
        }

        var peer: LEAddress { LEAddress(address, type: .public) }
    }

    static func valueHandle(_ uuid: BluetoothUUID, in services: [GATTDiscoveredService]) -> AttributeHandle? {
        services.lazy.flatMap(\.characteristics).first { $0.characteristic.uuid == uuid }?.characteristic.valueHandle
    }

    /// A fresh discovery reads the hash, discovers (9 round trips at MTU 247) and enables robust caching: 11. A
    /// reconnection to the unchanged device is ready after reading the hash: 1 (robust caching follows as the next
    /// request). The cache kept in a file serves a later process the same.
    @Test func aCachedReconnectionIsReadyInOneRoundTrip() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("gatt-cache-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        let rig = try await Rig(cache: GATTCache(fileURL: file))
        defer { withExtendedLifetime(rig) {} }
        var c = try await rig.connect()
        let fresh = try await rig.client.discoverDatabase(c)
        #expect(await rig.client.lastDiscovery == GATTDiscoveryReport(requests: 11, fromCache: false))
        #expect(rig.cache.entry(for: rig.peer)?.hash == SampleDevice.lab.database(name: SampleDevice.lab.defaultName).hash)
        try await rig.disconnect(c)

        c = try await rig.connect()
        let start = await rig.client.requestCount
        let cached = try await rig.client.discoverDatabase(c)
        #expect(await rig.client.lastDiscovery == GATTDiscoveryReport(requests: 1, fromCache: true))
        #expect(cached == fresh)
        // Robust caching is enabled in the background: one more request, answered.
        try await rig.settle(at: 2, from: start)
        #expect(await rig.client.requestCount - start == 2)
        let name = try #require(Self.valueHandle(0x2A00, in: cached))
        #expect(try await rig.client.read(c, attribute: name) == Array(SampleDevice.lab.defaultName.utf8))

        // The file holds the same entry for the next process; without descriptors asked, they are left out.
        let reloaded = GATTCache(fileURL: file)
        #expect(reloaded.entry(for: rig.peer) == rig.cache.entry(for: rig.peer))
        let bare = try await rig.client.discoverDatabase(c, descriptors: false)
        #expect(bare.map(\.service) == fresh.map(\.service))
        #expect(bare.allSatisfy { $0.characteristics.allSatisfy(\.descriptors.isEmpty) })
    }

    /// A device whose database changed while the client was away is discovered again, and the cache follows.
    @Test func aChangedDatabaseIsDiscoveredAgain() async throws {
        let rig = try await Rig()
        defer { withExtendedLifetime(rig) {} }
        var c = try await rig.connect()
        let first = try await rig.client.discoverDatabase(c)
        try await rig.disconnect(c)
        try await rig.server.addService(GATTServiceDefinition(uuid: 0x180A, characteristics: [
            GATTCharacteristicDefinition(uuid: 0x2A29, properties: .read, value: Array("Maker".utf8)),
        ]))
        c = try await rig.connect()
        let again = try await rig.client.discoverDatabase(c)
        #expect(await rig.client.lastDiscovery?.fromCache == false)
        #expect(again.count == first.count + 1 && again.last?.service.uuid == BluetoothUUID(0x180A))
        #expect(rig.cache.entry(for: rig.peer)?.hash == (await rig.server.database.hash))
        #expect(rig.cache.entry(for: rig.peer)?.services == again)
    }

    /// With robust caching enabled, a change during the connection gets the client's next request at a handle
    /// Database Out Of Sync: the cache entry is dropped, the request after is served, and the next discovery finds
    /// the new service. The server sends nothing else to the change-unaware client meanwhile.
    @Test func robustCachingTellsTheClientOfAChange() async throws {
        let rig = try await Rig()
        defer { withExtendedLifetime(rig) {} }
        let c = try await rig.connect()
        let first = try await rig.client.discoverDatabase(c)
        let name = try #require(Self.valueHandle(0x2A00, in: first))
        try await rig.server.addService(GATTServiceDefinition(uuid: 0x180A, characteristics: [
            GATTCharacteristicDefinition(uuid: 0x2A29, properties: .read, value: Array("Maker".utf8)),
        ]))
        await #expect(throws: GATTError(.att(.databaseOutOfSync, handle: name), "")) { try await rig.client.read(c, attribute: name) }
        #expect(rig.cache.entry(for: rig.peer) == nil)
        #expect(try await rig.client.read(c, attribute: name) == Array(SampleDevice.lab.defaultName.utf8))
        let again = try await rig.client.discoverDatabase(c)
        #expect(await rig.client.lastDiscovery?.fromCache == false)
        #expect(again.last?.service.uuid == BluetoothUUID(0x180A))
    }

    /// A client subscribed to Service Changed hears of the change, drops its cache entry, and having confirmed the
    /// indication is change-aware: its next read is served at once.
    @Test func serviceChangedDropsTheCacheAndMakesTheClientAware() async throws {
        let rig = try await Rig()
        defer { withExtendedLifetime(rig) {} }
        let c = try await rig.connect()
        let first = try await rig.client.discoverDatabase(c)
        let name = try #require(Self.valueHandle(0x2A00, in: first))
        let changes = try await rig.client.serviceChanges(c)
        let range = try await rig.server.addService(GATTServiceDefinition(uuid: 0x180A, characteristics: [
            GATTCharacteristicDefinition(uuid: 0x2A29, properties: .read, value: Array("Maker".utf8)),
        ]))
        let heard = try await withTimeout { () async -> ClosedRange<AttributeHandle>? in
            for await r in changes { return r }
            return nil
        }
        #expect(heard == range)
        #expect(rig.cache.entry(for: rig.peer) == nil)
        #expect(try await rig.client.read(c, attribute: name) == Array(SampleDevice.lab.defaultName.utf8))
    }

    /// A server built without caching has no hash: the client discovers every time and caches nothing.
    @Test func withoutAHashNothingIsCached() async throws {
        let world = World()
        let (peripheral, pc) = try await world.host()
        let server = GATTEngine(host: peripheral, database: GATTDatabase(deviceName: "Old", services: [], caching: false))
        await server.start()
        let (central, _) = try await world.host(at: 1)
        let client = GATTEngine(host: central)
        await client.start()
        let cache = GATTCache()
        await client.setCache(cache)
        defer { withExtendedLifetime((world, server)) {} }
        try await peripheral.startAdvertising(.init(data: AdvertisingData(flags: .leOnlyGeneralDiscoverable, localName: "Old")))
        let c = try await central.connect(to: LEAddress(pc.address, type: .public), timeout: .seconds(5))
        #expect(try await client.readDatabaseHash(c) == nil)
        let services = try await client.discoverDatabase(c)
        #expect(services.map(\.service.uuid) == [0x1800, 0x1801])
        #expect(cache.peers.isEmpty)
    }
}

/// A bonded client's robust-caching state survives its disconnections. Core 5.4, Vol 3, Part G, 2.5.2.1 and 7.2.
extension PairingTests {
    /// Reads the peer's Client Supported Features until `done` accepts the outcome (the peripheral's engine hears of
    /// the encryption shortly after the central does), at most a second.
    func readFeatures(_ s: Pair, _ handle: AttributeHandle, until done: (Result<[UInt8], GATTError>) -> Bool) async throws
        -> Result<[UInt8], GATTError> {
        var outcome: Result<[UInt8], GATTError> = .failure(GATTError(.timeout, "not read"))
        for _ in 0..<100 {
            do {
                outcome = .success(try await s.client.read(s.c, attribute: handle))
            } catch let error as GATTError {
                outcome = .failure(error)
            }
            if done(outcome) { return outcome }
            try await Task.sleep(for: .milliseconds(10))
        }
        return outcome
    }

    @Test func aBondedClientKeepsItsFeaturesAndLearnsOfAChangeWhileAway() async throws {
        var s = try await setUp()
        _ = try await s.central.pair(s.c)
        let gatt = try #require(try await s.client.discoverPrimaryServices(s.c, uuid: 0x1801).first)
        let features = try #require(try await s.client.discoverCharacteristics(s.c, of: gatt, uuid: 0x2B29).first?.valueHandle)
        try await s.client.write(s.c, attribute: features, value: [0x01])

        // Back, encrypted with the bond: robust caching is still on.
        try await s.reconnect()
        _ = try await s.central.pair(s.c)
        let kept = try await readFeatures(s, features) { (try? $0.get()) == [0x01] }
        #expect((try? kept.get()) == [0x01])

        // The database changes while the client is away: back, it is change-unaware, told so once, then served.
        let events = await s.peripheral.events()
        try await s.central.disconnect(s.c)
        _ = try await next(events) { if case .disconnected = $0 { true } else { nil } }
        try await s.server.addService(GATTServiceDefinition(uuid: 0x180A, characteristics: [
            GATTCharacteristicDefinition(uuid: 0x2A29, properties: .read, value: Array("Maker".utf8)),
        ]))
        (s.c, s.p) = try await connect(s.central, s.peripheral, peripheralAddress: s.peripheralAddress)
        _ = try await s.central.pair(s.c)
        let refused = try await readFeatures(s, features) { if case .failure = $0 { true } else { false } }
        #expect(refused == .failure(GATTError(.att(.databaseOutOfSync, handle: features), "")))
        #expect(try await s.client.read(s.c, attribute: features) == [0x01])
    }
}
