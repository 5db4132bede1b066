import BLE
import BLEHost
import BLEVirtualController
import Testing

/// `Central.resolvedIdentity(of:)` through the public API, over HCI on virtual controllers: a peripheral with privacy
/// advertises from resolvable private addresses; before pairing the central cannot say who it is, after pairing (the
/// peripheral distributed its IRK) the new private addresses it advertises from resolve to its identity.
@Suite(.timeLimit(.minutes(1))) struct ResolvedIdentityTests {
    struct NotHeard: Error {}

    @Test func aBondedPrivateDeviceIsRecognisedBehindItsNextAddress() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let interval = Duration.milliseconds(1500)
        let manager = try await PeripheralManager(transport: air.addController(.init()).makeHostTransport(), deviceName: "Private",
                                                  security: SecurityConfiguration(privacy: true, privateAddressInterval: interval))
        try await manager.startAdvertising(name: "Private", restartAfterConnection: true)
        let central = try await Central(transport: air.addController(.init(position: Position(x: 1))).makeHostTransport())

        func find(otherThan previous: LEAddress?) async throws -> DiscoveredPeripheral {
            for try await device in try await central.scan(allowDuplicates: true, timeout: .seconds(10))
            where device.name == "Private" && device.address != previous {
                return device
            }
            throw NotHeard()
        }

        // The address may rotate between the report and the connection on a loaded machine: then the attempt times
        // out and the scan starts again (at most four times).
        var attempt = 0
        var connected: (DiscoveredPeripheral, RemotePeripheral)?
        while connected == nil {
            attempt += 1
            let found = try await find(otherThan: nil)
            #expect(found.address.kind == .randomResolvable)
            #expect(await central.resolvedIdentity(of: found.address) == nil, "no bond yet")
            do {
                connected = (found, try await central.connect(found, timeout: .milliseconds(1500)))
            } catch let error as HostError where attempt < 4 {
                guard case .connectionTimedOut = error.code else { throw error }
            }
        }
        let (first, remote) = try #require(connected)
        let security = try await remote.pair()
        #expect(security.isBonded)
        let identity = try #require(await remote.identity)
        #expect(identity != first.address)
        _ = try await central.disconnect(remote)
        try await Task.sleep(for: interval + .milliseconds(200))

        let second = try await find(otherThan: first.address)
        #expect(second.address.kind == .randomResolvable && second.address != first.address)
        #expect(await central.resolvedIdentity(of: second.address) == identity)
        // Not a resolvable private address: nothing to resolve.
        #expect(await central.resolvedIdentity(of: identity) == nil)
    }
}
