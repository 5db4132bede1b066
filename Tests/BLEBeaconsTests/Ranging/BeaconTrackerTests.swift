import BLEBeacons
import BLEWire
import Testing

@Suite struct BeaconTrackerTests {
    static let uuid = BluetoothUUID("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0") ?? BluetoothUUID(0)
    static let other = BluetoothUUID("2F234454-CF6D-4A0F-ADF2-F4911BA9FFA6") ?? BluetoothUUID(0)

    func data(_ uuid: BluetoothUUID, minor: UInt16) -> AdvertisingData {
        BeaconFrame.iBeacon(IBeacon(proximityUUID: uuid, major: 1, minor: minor, measuredPower: -59)).advertisingData
    }

    @Test func rangesOnlyTheRegionsOfInterestAndMonitorsTheirs() throws {
        let region = BeaconRegion(name: "ours", uuid: Self.uuid)
        var tracker = BeaconTracker(rangedRegions: [region], monitoring: [region], exitTimeout: .seconds(5))
        #expect(tracker.observe(data(Self.uuid, minor: 1), rssi: -59, at: .zero).map(\.kind) == [.enter])
        #expect(tracker.observe(data(Self.other, minor: 1), rssi: -50, at: .zero).isEmpty)
        // Not a beacon at all; and an iBeacon whose length byte is wrong (counted as malformed).
        #expect(tracker.observe(AdvertisingData(localName: "x"), rssi: -50, at: .zero).isEmpty)
        let bad = [UInt8](hex: "020106 1aff4c000214e2c56db5dffb48d2b060d0f5a71096e000010002c5") ?? []
        #expect(tracker.observe(try AdvertisingData(bytes: bad), rssi: -50, at: .zero).isEmpty)
        #expect(tracker.malformedCount == 1)
        let (updates, events) = tracker.advance(to: .seconds(1))
        #expect(updates.first?.beacons.map(\.identifier) == [.iBeacon(uuid: Self.uuid, major: 1, minor: 1)])
        #expect(events.isEmpty)
        #expect(tracker.advance(to: .seconds(6)).events.map(\.kind) == [.exit])
    }

    @Test func telemetryJoinsTheIdentityItsAdvertiserSentLast() throws {
        var tracker = BeaconTracker()
        let uid = try EddystoneUID(namespace: Array(repeating: 0xAB, count: 10), instance: [1, 2, 3, 4, 5, 6])
        let tlm = EddystoneTLM(batteryMillivolts: 2950, temperature: 21.5, advertisingPDUCount: 42, uptimeDeciseconds: 600)
        let address = BluetoothAddress(0x0000_0000_0001), stranger = BluetoothAddress(0x0000_0000_0002)
        _ = tracker.observe(BeaconFrame.eddystone(.uid(uid)).advertisingData, rssi: -60, at: .zero, from: address)
        _ = tracker.observe(BeaconFrame.eddystone(.tlm(tlm)).advertisingData, rssi: -60, at: .milliseconds(100), from: address)
        // Telemetry from an advertiser that sent no identity goes nowhere.
        let other = EddystoneTLM(batteryMillivolts: 1, temperature: nil, advertisingPDUCount: 1, uptimeDeciseconds: 1)
        _ = tracker.observe(BeaconFrame.eddystone(.tlm(other)).advertisingData, rssi: -60, at: .milliseconds(200), from: stranger)
        let beacons = tracker.advance(to: .seconds(1)).updates.first?.beacons ?? []
        #expect(beacons.count == 1)
        #expect(beacons.first?.telemetry == tlm)
        #expect(beacons.first?.sampleCount == 1)
    }
}
