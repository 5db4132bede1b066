import BLE
import BLEVirtualController
import Testing

/// ``OwnAddress`` through the public API, on a virtual air: advertising, a scan and a connection attempt each choose
/// the address the other side sees (Core 5.4, Vol 6, Part B, 1.3), and the default stays the identity address.
@Suite(.timeLimit(.minutes(1))) struct OwnAddressTests {
    let marker = ManufacturerData(companyID: .testing, data: Array("own".utf8))

    func discover(_ central: Central) async throws -> DiscoveredPeripheral {
        for try await device in try await central.scan(timeout: .seconds(10)) where device.manufacturerData.contains(marker) {
            return device
        }
        throw HostError(.connectionTimedOut, "no advertisement with the marker")
    }

    @Test(arguments: [false, true]) func aRandomAdvertiserAndARandomInitiatorAreSeenByTheirRandomStaticAddresses(extended: Bool) async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let peripheralController = air.addController()
        let centralController = air.addController()
        let manager = try await PeripheralManager(transport: peripheralController.makeHostTransport())
        let central = try await Central(transport: centralController.makeHostTransport())
        #expect(await central.adapter.address == LEAddress(centralController.address, type: .public))

        var advertisement = Advertisement(data: AdvertisingData(flags: .leOnlyGeneralDiscoverable, manufacturerData: marker),
                                          kind: .connectable, isExtended: extended)
        advertisement.ownAddress = .random
        let events = await manager.centralEvents()
        try await manager.startAdvertising(advertisement)
        let device = try await discover(central)
        #expect(device.address.type == .random)
        #expect(device.address.kind == .randomStatic)
        #expect(device.address.address != peripheralController.address)

        let remote = try await central.connect(device, exchangeMTU: false, ownAddress: .random)
        let local = await remote.connection.localAddress
        #expect(local.kind == .randomStatic && local.address != centralController.address)
        var seenCentral: LEAddress?
        for await event in events {
            if case .connected(let connection) = event {
                seenCentral = connection.peer
                #expect(connection.localAddress == device.address)
                break
            }
        }
        #expect(seenCentral == local)
        try await central.disconnect(remote)
    }

    @Test func theDefaultIsTheIdentityAndIdentityIsPublic() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let peripheralController = air.addController()
        let manager = try await PeripheralManager(transport: peripheralController.makeHostTransport())
        let central = try await Central(transport: air.addController().makeHostTransport())
        for ownAddress in [OwnAddress.resolvableOrIdentity, .identity] {
            var advertisement = Advertisement(data: AdvertisingData(flags: .leOnlyGeneralDiscoverable, manufacturerData: marker))
            advertisement.ownAddress = ownAddress
            try await manager.startAdvertising(advertisement)
            let device = try await discover(central)
            #expect(device.address == LEAddress(peripheralController.address, type: .public), "\(ownAddress)")
            try await manager.stopAdvertising()
        }
    }
}
