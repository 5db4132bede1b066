import enum BLE.SampleDevice
import BLEFixtures
import BLEHost
import BLEProtocols
import BLEProtocolsTestSupport
import BLEWire
import Testing

/// The round trips a full discovery of the lab device (`ble serve --device lab`) takes, synchronously against the
/// ``ATTServer`` machine, and the whole-database discovery through a ``GATTEngine`` on the virtual air.
@Suite(.timeLimit(.minutes(1))) struct LabDiscoveryRoundTripTests {
    /// Requests after the MTU exchange: per service (services, each one's characteristics, each characteristic's
    /// descriptors, as the benchmark and CoreBluetooth-style callers do) and with ``DatabaseDiscovery``.
    static func count(mtu: Int) throws -> (perService: Int, whole: Int, same: Bool) {
        let lab = SampleDevice.lab.database(name: SampleDevice.lab.defaultName)
        let slow = try SynchronousATTServer(lab, mtu: mtu)
        let expected = try discoverPerService(slow.answer)
        let fast = try SynchronousATTServer(lab, mtu: mtu)
        var discovery = DatabaseDiscovery()
        let found = try discovery.run(fast.answer)
        return (slow.requests.count, fast.requests.count, found == expected && expected.count == 6)
    }

    /// MTU 247: 3 Read By Group Type (the 16-bit services, the 128-bit one, Attribute Not Found); per service 6 Read
    /// By Type (one per service: the custom service's 11 declarations of 21 bytes fit one page, and no service asks
    /// again when its last value leaves one handle, for a descriptor) and 6 Find Information (one per characteristic
    /// with a descriptor); whole: 2 Read By Type (the 16-bit declarations, then the 128-bit ones) and 4 Find
    /// Information (0x0009–0x0018 covers three gaps; then 0x001A, 0x0023 and 0x0026, each page stopping at a 128-bit
    /// value). MTU 23: 4 + 16 + 6 per service (one 128-bit declaration per page); 4 + 14 + 5 whole. Before the early
    /// stop, the Generic Attribute and Battery services each cost one more Read By Type: 17 and 28 per service.
    @Test func labDeviceRoundTrips() throws {
        let large = try Self.count(mtu: 247)
        #expect(large.same)
        #expect(large.perService == 15 && large.whole == 9, "MTU 247: \(large.perService) per service, \(large.whole) whole")
        let small = try Self.count(mtu: 23)
        #expect(small.same)
        #expect(small.perService == 26 && small.whole == 23, "MTU 23: \(small.perService) per service, \(small.whole) whole")
    }

    /// The engine runs the whole-database discovery over a link and finds what per-service discovery finds.
    @Test func engineDiscoversTheWholeDatabase() async throws {
        let world = World()
        let (peripheral, pc) = try await world.host()
        let server = GATTEngine(host: peripheral, database: SampleDevice.lab.database(name: SampleDevice.lab.defaultName))
        await server.start()
        defer { withExtendedLifetime((world, server)) {} }
        let (central, _) = try await world.host(at: 1)
        let client = GATTEngine(host: central)
        await client.start()
        try await peripheral.startAdvertising(.init(data: AdvertisingData(flags: .leOnlyGeneralDiscoverable, localName: "Lab")))
        let c = try await central.connect(to: LEAddress(pc.address, type: .public), timeout: .seconds(5))
        #expect(try await client.exchangeMTU(c) == 247)
        let before = await client.requestCount
        let all = try await client.discoverDatabase(c)
        #expect(await client.requestCount - before == 9)
        let services = try await client.discoverPrimaryServices(c)
        #expect(all.map(\.service) == services)
        for (entry, service) in zip(all, services) {
            #expect(entry.characteristics.map(\.characteristic) == (try await client.discoverCharacteristics(c, of: service)))
            for item in entry.characteristics {
                #expect(item.descriptors == (try await client.discoverDescriptors(c, of: item.characteristic)))
            }
        }
        let custom = try #require(all.first { $0.service.uuid == SampleDevice.customService })
        #expect(custom.characteristics.count == 11)
        #expect(custom.characteristics.first?.descriptors.map(\.uuid) == [0x2901])
    }
}
