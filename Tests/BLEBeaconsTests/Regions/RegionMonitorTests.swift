import BLEBeacons
import BLEWire
import Testing

@Suite struct RegionMonitorTests {
    static let uuid = BluetoothUUID("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0") ?? BluetoothUUID(0)
    static let other = BluetoothUUID("2F234454-CF6D-4A0F-ADF2-F4911BA9FFA6") ?? BluetoothUUID(0)
    let shop = BeaconRegion(name: "shop", uuid: uuid)
    let floor2 = BeaconRegion(name: "floor 2", uuid: uuid, major: 2)
    let till = BeaconRegion(name: "till", uuid: uuid, major: 2, minor: 7)

    @Test func matching() {
        #expect(shop.matches(.iBeacon(uuid: Self.uuid, major: 9, minor: 9)))
        #expect(!shop.matches(.iBeacon(uuid: Self.other, major: 9, minor: 9)))
        #expect(floor2.matches(.iBeacon(uuid: Self.uuid, major: 2, minor: 1)))
        #expect(!floor2.matches(.iBeacon(uuid: Self.uuid, major: 3, minor: 1)))
        #expect(till.matches(.iBeacon(uuid: Self.uuid, major: 2, minor: 7)))
        #expect(!till.matches(.iBeacon(uuid: Self.uuid, major: 2, minor: 8)))
        #expect(shop.matches(.altBeacon(id1: Self.uuid, id2: 1, id3: 1)))
        #expect(!shop.matches(.eddystoneURL("https://example.com")))
        // A minor without a major is ignored, as CoreLocation has no such region.
        #expect(BeaconRegion(name: "x", uuid: Self.uuid, minor: 3).minor == nil)
    }

    @Test func enterOnceExitAfterTheDefaultThirtySeconds() {
        var monitor = RegionMonitor(regions: [shop, floor2, till])
        #expect(monitor.exitTimeout == .seconds(30))
        let b = BeaconIdentifier.iBeacon(uuid: Self.uuid, major: 2, minor: 1)
        let entered = monitor.observe(b, at: .seconds(1))
        #expect(entered.map(\.kind) == [.enter, .enter])
        #expect(entered.map(\.region) == [shop, floor2])
        #expect(monitor.observe(b, at: .seconds(2)).isEmpty)
        #expect(monitor.isInside(shop) && !monitor.isInside(till))
        #expect(monitor.advance(to: .seconds(31)).isEmpty)
        let exits = monitor.advance(to: .seconds(40))
        #expect(exits.map(\.kind) == [.exit, .exit])
        #expect(exits.map(\.time) == [.seconds(32), .seconds(32)])
        #expect(!monitor.isInside(shop))
        // And back in.
        #expect(monitor.observe(b, at: .seconds(50)).count == 2)
    }

    @Test func sparseSightingsDoNotFlicker() {
        var monitor = RegionMonitor(regions: [shop], exitTimeout: .seconds(10))
        var events: [RegionEvent] = []
        // Heard every 9 s for a minute: one entry, and one exit 10 s after the last sighting.
        for t in stride(from: 0, through: 54, by: 9) {
            events += monitor.observe(.iBeacon(uuid: Self.uuid, major: 1, minor: 1), at: .seconds(t))
        }
        events += monitor.advance(to: .seconds(100))
        #expect(events.map(\.kind) == [.enter, .exit])
        #expect(events.last?.time == .seconds(64))
    }

    @Test func severalRegionsExitInTimeOrder() {
        var monitor = RegionMonitor(regions: [shop, BeaconRegion(name: "other", uuid: Self.other)], exitTimeout: .seconds(5))
        _ = monitor.observe(.iBeacon(uuid: Self.other, major: 1, minor: 1), at: .seconds(1))
        _ = monitor.observe(.iBeacon(uuid: Self.uuid, major: 1, minor: 1), at: .seconds(2))
        _ = monitor.observe(.iBeacon(uuid: Self.other, major: 1, minor: 1), at: .seconds(3))
        let exits = monitor.advance(to: .seconds(20))
        #expect(exits.map(\.region.name) == ["shop", "other"])
        #expect(exits.map(\.time) == [.seconds(7), .seconds(8)])
        monitor.remove(shop)
        #expect(monitor.regions.map(\.name) == ["other"])
    }
}
