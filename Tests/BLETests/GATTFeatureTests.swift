import BLE
import BLEFixtures
import BLEHost
import BLEProtocols
import BLETestSupport
import BLETransport
import BLEVirtualController
import Testing

@Suite(.timeLimit(.minutes(1))) struct GATTFeatureTests {
    static let included = BluetoothUUID("0000AAA0-0000-1000-8000-00805F9B34FB") ?? 0
    static let outer = BluetoothUUID("0000BBB0-0000-1000-8000-00805F9B34FB") ?? 0
    static let reliable = BluetoothUUID("0000BBB1-0000-1000-8000-00805F9B34FB") ?? 0

    /// The two devices, the peripheral publishing an included service and one with a reliable-write characteristic,
    /// and the central connected to it.
    func setUp() async throws -> (TwoDevices, RemotePeripheral) {
        let devices = try await TwoDevices(peripheralName: "Features")
        let manager = devices.peripheral
        // Service indices count from the first added service: the outer service (index 1) includes index 0.
        try await manager.add(GATTServiceDefinition(uuid: Self.included, isPrimary: false, characteristics: [
            GATTCharacteristicDefinition(uuid: 0x2A19, properties: .read, value: [42]),
        ]))
        try await manager.add(GATTServiceDefinition(uuid: Self.outer, characteristics: [
            GATTCharacteristicDefinition(uuid: Self.reliable, properties: [.read, .write], permissions: [.readable, .writeable],
                                         value: [1, 2, 3], extendedProperties: 0x0001),
            GATTCharacteristicDefinition(uuid: 0x2A29, properties: .read, value: Array("ACME".utf8)),
        ], includedServices: [0]))
        try await manager.startAdvertising(name: "Features", txPowerLevel: -4, restartAfterConnection: true)
        return (devices, try await devices.connect())
    }

    @Test func includesReadByTypeReadMultipleAndExtendedProperties() async throws {
        let (devices, remote) = try await setUp()
        defer { devices.shutdown() }
        let outer = try #require(try await remote.discoverServices([Self.outer]).first)
        let includes = try await remote.discoverIncludedServices(for: outer)
        #expect(includes.map(\.uuid) == [Self.included])
        let characteristics = try await remote.discoverCharacteristics(for: outer)
        let reliable = try #require(characteristics.first { $0.uuid == Self.reliable })
        #expect(reliable.properties.contains(.extendedProperties))
        let descriptors = try await remote.discoverDescriptors(for: reliable)
        let extended = try #require(descriptors.first { $0.uuid == BluetoothUUID(0x2900) })
        #expect(try await remote.readValue(for: extended) == [0x01, 0x00])
        #expect(try await remote.readValues(for: characteristics) == [[1, 2, 3], Array("ACME".utf8)])
        #expect(try await remote.readValues(ofType: 0x2A29) == [Array("ACME".utf8)])
    }

    @Test func serviceChangedIsIndicatedForTheAddedRangeOnly() async throws {
        let (devices, remote) = try await setUp()
        defer { devices.shutdown() }
        let manager = devices.peripheral
        let changes = try await remote.servicesChanged()
        var iterator = changes.makeAsyncIterator()
        let before = await manager.database.attributes.map(\.handle)
        let added = try await manager.add(GATTServiceDefinition(uuid: 0x180F, characteristics: [GATTCharacteristicDefinition(uuid: 0x2A19, properties: .read, value: [99])]))
        // Only the new service's handles changed: the others stay where they were.
        #expect(await iterator.next() == added)
        #expect(added.lowerBound == before.last?.next)
        #expect(Array(await manager.database.attributes.map(\.handle).prefix(before.count)) == before)
        // Rediscovery finds the new service.
        #expect(try await remote.discoverServices().contains { $0.uuid == .battery })
    }

    /// `discoverAll` finds what per-service discovery finds (the secondary service's characteristic, inside the
    /// whole walk's range, is left out), with its extended properties descriptor, and in fewer requests.
    @Test func discoverAllMatchesPerServiceDiscovery() async throws {
        let (devices, remote) = try await setUp()
        defer { devices.shutdown() }
        let all = try await remote.discoverAll()
        let services = try await remote.discoverServices()
        #expect(all.map(\.service) == services)
        for (entry, service) in zip(all, services) {
            let characteristics = try await remote.discoverCharacteristics(for: service)
            #expect(entry.characteristics.map(\.characteristic) == characteristics)
            for (item, characteristic) in zip(entry.characteristics, characteristics) {
                #expect(item.descriptors == (try await remote.discoverDescriptors(for: characteristic)))
            }
        }
        let outer = try #require(all.first { $0.service.uuid == Self.outer })
        #expect(outer.characteristics.map(\.characteristic.uuid) == [Self.reliable, 0x2A29])
        #expect(outer.characteristics.first?.descriptors.map(\.uuid) == [0x2900])
        #expect(!all.contains { $0.characteristics.contains { $0.characteristic.uuid == 0x2A19 } })
        let bare = try await remote.discoverAll(descriptors: false)
        #expect(bare.flatMap(\.characteristics).allSatisfy { $0.descriptors.isEmpty })
    }

    @Test func advertisingRestartsAfterConnectionsAndCarriesTXPower() async throws {
        let (devices, _) = try await setUp()
        defer { devices.shutdown() }
        let air = devices.air
        // Connected, yet still advertising (restartAfterConnection): a second central sees it, with its TX power.
        let scanner = try await Central(transport: air.addController(.init(position: Position(x: 2))).makeHostTransport())
        let results = try await scanner.scan()
        let seen = try await withTimeout { () async throws -> DiscoveredPeripheral in
            for try await p in results where p.name == "Features" { return p }
            throw TimedOut()
        }
        #expect(try seen.advertisementData.txPowerLevel() == -4)
    }

    @Test func unavailableControllersReportUnauthorizedOrUnsupported() async throws {
        // No kernel Bluetooth here: the user channel fails; the state says why instead of the central failing.
        let central = await Central(.userChannel(index: 0))
        let state = await central.state
        #expect(state == .unsupported || state == .unauthorized)
        await #expect(throws: HostError.self) { _ = try await central.scan() }
        let denied = HCIHost(unavailable: TransportError(.permissionDenied, "no CAP_NET_ADMIN"))
        #expect(await denied.state == .unauthorized)
        // A TCP port nobody listens on: unsupported.
        #expect(await Central(.tcp(host: "127.0.0.1", port: 1)).state == .unsupported)
    }
}
