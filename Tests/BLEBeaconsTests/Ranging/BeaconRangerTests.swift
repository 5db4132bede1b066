import BLEBeacons
import BLEWire
import Testing

@Suite struct BeaconRangerTests {
    static let uuid = BluetoothUUID("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0") ?? BluetoothUUID(0)
    static func beacon(_ minor: UInt16, power: Int8 = -59) -> BeaconFrame {
        .iBeacon(IBeacon(proximityUUID: uuid, major: 1, minor: minor, measuredPower: power))
    }

    @Test func fixedRateUpdatesNearestFirst() throws {
        var ranger = BeaconRanger()
        // Minor 1 at −79 dBm (10 m with n = 2), minor 2 at −59 dBm (1 m), every 100 ms for 3.5 s.
        var updates: [BeaconRanger.Update] = []
        for i in 0...35 {
            let t = Duration.milliseconds(100 * i)
            ranger.observe(Self.beacon(1), rssi: -79, at: t)
            ranger.observe(Self.beacon(2), rssi: -59, at: t)
            updates += ranger.advance(to: t)
        }
        #expect(updates.map(\.time) == [.seconds(1), .seconds(2), .seconds(3)])
        let last = try #require(updates.last)
        #expect(last.beacons.map(\.identifier) == [Self.beacon(2).identifier, Self.beacon(1).identifier].compactMap { $0 })
        #expect(abs((last.beacons.first?.distance ?? 0) - 1) < 0.01)
        #expect(abs((last.beacons.last?.distance ?? 0) - 10) < 0.1)
        #expect(last.beacons.map(\.proximity) == [.near, .far])
        #expect(last.beacons.first?.rssi == -59)
        #expect((last.beacons.first?.accuracy ?? 0) > 0)
        #expect(last.beacons.first?.sampleCount == 31)
    }

    @Test func aJumpInTimeGivesOneUpdatePerInterval() {
        var ranger = BeaconRanger()
        ranger.observe(Self.beacon(1), rssi: -60, at: .zero)
        #expect(ranger.advance(to: .milliseconds(999)).isEmpty)
        #expect(ranger.advance(to: .milliseconds(3500)).map(\.time) == [.seconds(1), .seconds(2), .seconds(3)])
        #expect(ranger.advance(to: .milliseconds(3900)).isEmpty)
    }

    @Test func staleBeaconsBecomeUnknownThenLeave() {
        var ranger = BeaconRanger(configuration: .init(staleAfter: .seconds(5), forgetAfter: .seconds(10)))
        ranger.observe(Self.beacon(1), rssi: -60, at: .zero)
        ranger.observe(Self.beacon(2), rssi: -70, at: .seconds(8))
        let at9 = ranger.update(at: .seconds(9))
        // Minor 2 has a distance; minor 1 (heard 9 s ago) is unknown and sorted after it.
        #expect(at9.beacons.map(\.proximity) == [.far, .unknown])
        #expect(at9.beacons.last?.distance == nil)
        #expect(ranger.update(at: .seconds(11)).beacons.count == 1)
    }

    @Test func telemetryAndTheExponentOfTheModel() {
        var ranger = BeaconRanger(configuration: .init(pathLoss: PathLossModel(exponent: 3)))
        ranger.observe(.eddystone(.tlm(EddystoneTLM(batteryMillivolts: 3000, temperature: 20, advertisingPDUCount: 1, uptimeDeciseconds: 1))),
                       rssi: -50, at: .zero)
        #expect(ranger.update(at: .seconds(1)).beacons.isEmpty)
        // Eddystone-UID with TX power −18 at 0 m: −59 dBm expected at 1 m; −89 dBm is 10 m with n = 3.
        let uid = (try? EddystoneUID(txPowerAt0m: -18, namespace: Array(repeating: 1, count: 10), instance: Array(repeating: 2, count: 6)))
        guard let uid else { return }
        ranger.observe(.eddystone(.uid(uid)), rssi: -89, at: .seconds(1))
        #expect(abs((ranger.update(at: .seconds(2)).beacons.first?.distance ?? 0) - 10) < 0.01)
    }
}
