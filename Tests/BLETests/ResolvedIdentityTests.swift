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
        let interval = Duration.milliseconds(700)
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

        let first = try await find(otherThan: nil)
        #expect(first.address.kind == .randomResolvable)
        #expect(await central.resolvedIdentity(of: first.address) == nil, "no bond yet")
        let remote = try await central.connect(first, timeout: .seconds(5))
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
