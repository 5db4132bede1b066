import BLE
import BLEBeacons
import BLEVirtualController
import Testing

/// The live wrappers on a real-time virtual air: a peripheral advertises through ``BeaconAdvertiser``, a central
/// ranges and monitors through `Central.rangeBeacons` and `Central.monitor`, every packet crossing HCI and the air.
@Suite(.timeLimit(.minutes(1))) struct LiveBeaconTests {
    static let uuid = BluetoothUUID("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0") ?? BluetoothUUID(0)
    let iBeacon = BeaconFrame.iBeacon(IBeacon(proximityUUID: uuid, major: 7, minor: 9, measuredPower: -59))

    /// A beacon 2 m from a central on a quiet real-time air; the beacon's RSSI at 1 m is −59 dBm.
    func setUp() async throws -> (VirtualAir, BeaconAdvertiser, Central) {
        let air = VirtualAir(clock: .realTime, seed: 3)
        let beaconController = air.addController(.init(txPower: -19))
        let advertiser = BeaconAdvertiser(peripheral: try await PeripheralManager(transport: beaconController.makeHostTransport()))
        let central = try await Central(transport: air.addController(.init(position: Position(x: 2))).makeHostTransport())
        return (air, advertiser, central)
    }

    @Test func rangesAnAdvertisedIBeacon() async throws {
        let (air, advertiser, central) = try await setUp()
        defer { air.shutdown() }
        try await advertiser.start(iBeacon, interval: .milliseconds(50))
        var updates = try await central.rangeBeacons(in: [BeaconRegion(name: "r", uuid: Self.uuid)]).makeAsyncIterator()
        let update = try #require(try await updates.next())
        let beacon = try #require(update.beacons.first)
        #expect(beacon.identifier == .iBeacon(uuid: Self.uuid, major: 7, minor: 9))
        #expect(beacon.rssi == -65)   // −59 − 20·log10(2), rounded: no noise on this air
        #expect(abs((beacon.distance ?? 0) - 2) < 0.1)
        #expect(beacon.proximity == .near)
    }

    @Test func rotatesBetweenFrames() async throws {
        let (air, advertiser, central) = try await setUp()
        defer { air.shutdown() }
        let url = BeaconFrame.eddystone(.url(try EddystoneURL(txPowerAt0m: -18, url: "https://swift.org")))
        try await advertiser.start([iBeacon, url], interval: .milliseconds(50), dwell: .milliseconds(200))
        var seen: Set<BeaconIdentifier> = []
        for try await update in try await central.rangeBeacons() {
            seen.formUnion(update.beacons.map(\.identifier))
            if seen.count == 2 { break }
        }
        #expect(seen == [.iBeacon(uuid: Self.uuid, major: 7, minor: 9), .eddystoneURL("https://swift.org")])
    }

    @Test func aFrameThatDoesNotFitIsRefused() async throws {
        let (air, advertiser, _) = try await setUp()
        defer { air.shutdown() }
        let big = BeaconFrame.eddystone(.unknown(frameType: EddystoneFrameType(rawValue: 0x40), payload: Array(repeating: 0, count: 20)))
        await #expect(throws: WireError.self) { try await advertiser.start([self.iBeacon, big]) }
    }

    @Test func monitorsEntryAndExit() async throws {
        let (air, advertiser, central) = try await setUp()
        defer { air.shutdown() }
        let region = BeaconRegion(name: "desk", uuid: Self.uuid, major: 7)
        var events = try await central.monitor([region, BeaconRegion(name: "elsewhere", uuid: Self.uuid, major: 8)],
                                               exitTimeout: .milliseconds(500), resolution: .milliseconds(50)).makeAsyncIterator()
        try await advertiser.start(iBeacon, interval: .milliseconds(50))
        let entered = try #require(try await events.next())
        #expect(entered.kind == .enter && entered.region == region)
        try await advertiser.stop()
        let exited = try #require(try await events.next())
        #expect(exited.kind == .exit && exited.region == region)
    }
}
