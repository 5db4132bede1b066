import BLE
import BLEFiles
@testable import BLEGateway
import BLEProfiles
import Testing

/// The machines the gateway's actor drives, without radios, brokers or clocks: the device table (records, rate
/// limiting, discovery announcements, connected values, forgetting), the per-device request queue and the
/// one-attempt-at-a-time connection gate.
@Suite struct GatewayMachinesTests {
    static let topics = GatewayTopics(prefix: "t", gatewayID: "gw")
    static func address(_ last: UInt8) -> BluetoothAddress { BluetoothAddress("00:5B:00:00:00:\(String(format: "%02X", last))") ?? BluetoothAddress(0) }
    static func report(_ last: UInt8, rssi: Int8 = -60, name: String = "Thermo", battery: UInt8 = 90) -> DiscoveredPeripheral {
        DiscoveredPeripheral(address: LEAddress(address(last), type: .public),
                             advertisementData: AdvertisingData(localName: name, serviceData: [(BluetoothUUID(0x180F), [battery])]),
                             rssi: rssi, isConnectable: true)
    }

    func field(_ json: JSONValue?, _ key: String) -> JSONValue? {
        guard case .object(let fields)? = json else { return nil }
        return fields.first { $0.key == key }?.value
    }

    @Test func recordsArePublishedWhenTheyChangeNumberedInOrder() throws {
        var table = DeviceTable(topics: Self.topics, interval: .seconds(10), discoveryPrefix: nil)
        let first = table.heard(Self.report(1), identity: nil, now: .zero)
        let offered = table.offer(first, now: .zero)
        let published = try #require(offered)
        #expect(published.topic == Self.topics.device(Self.address(1).description))
        #expect(field(published.record, "seq") == .integer(1))
        #expect(published.discoveries.isEmpty, "no Home Assistant prefix, no announcements")
        // The same content within the interval is held back (only the signal changed)...
        let again = table.heard(Self.report(1, rssi: -70), identity: nil, now: .seconds(1))
        #expect(table.offer(again, now: .seconds(1)) == nil)
        // ...new content goes at once, numbered next.
        let changed = table.heard(Self.report(1, battery: 80), identity: nil, now: .seconds(2))
        let next = table.offer(changed, now: .seconds(2))
        #expect(field(try #require(next).record, "seq") == .integer(2))
        #expect(table.advertisements == 3 && table.readings == 2 && table.deviceCount == 1)
    }

    @Test func aRepeatReusesItsRecordWithItsOwnRSSIAndAChangeIsDecodedAgain() throws {
        var table = DeviceTable(topics: Self.topics, interval: .seconds(5), discoveryPrefix: "homeassistant")
        let first = table.heard(Self.report(4, rssi: -60), identity: nil, now: .zero)
        #expect(table.offer(first, now: .zero) != nil)
        // The same data: the last record, with this report's RSSI; held back within the interval...
        let repeated = table.heard(Self.report(4, rssi: -75), identity: nil, now: .seconds(1))
        #expect(repeated.rssi == -75 && repeated.values.count == first.values.count && repeated.name == "Thermo")
        #expect(table.offer(repeated, now: .seconds(1)) == nil)
        // ...and refreshed after it, with the RSSI of the report that went out.
        let later = table.heard(Self.report(4, rssi: -50), identity: nil, now: .seconds(6))
        let refresh = table.offer(later, now: .seconds(6))
        let refreshed = try #require(refresh)
        #expect(field(refreshed.record, "rssi") == .int(-50))
        #expect(refreshed.discoveries.isEmpty)
        // Changed data is decoded again and goes out at once.
        let changed = table.heard(Self.report(4, battery: 12), identity: nil, now: .seconds(7))
        let publication = table.offer(changed, now: .seconds(7))
        let published = try #require(publication)
        #expect(published.record?.encoded().contains(#""battery_level":{"percent":12"#) == true)
        // The same bytes from an address a bond resolved: a record of the identity, not the one kept for the address.
        let identity = LEAddress(Self.address(9), type: .public)
        let resolved = table.heard(Self.report(4, battery: 12), identity: identity, now: .seconds(8))
        #expect(resolved.address == identity && resolved.resolvedFrom?.address == Self.address(4))
        #expect(table.advertisements == 5)
    }

    @Test func aPayloadIsTheEncodingOfItsRecordWhetherItsContentIsMadeOrKept() throws {
        var table = DeviceTable(topics: Self.topics, interval: .zero, discoveryPrefix: nil)
        // An iBeacon (a measured power: the record has a distance) and a thermometer (none).
        var beaconData: [UInt8] = [0x02, 0x01, 0x06, 0x1A, 0xFF, 0x4C, 0x00, 0x02, 0x15]
        beaconData += [UInt8](repeating: 0xE2, count: 16) + [0x00, 0x01, 0x00, 0x02, 0xC5]
        let beacon = DiscoveredPeripheral(address: LEAddress(Self.address(8), type: .random), advertisementData: try AdvertisingData(bytes: beaconData),
                                          rssi: -71, isConnectable: false)
        for (n, report) in [beacon, Self.report(9), beacon, Self.report(9, rssi: -40), Self.report(9, battery: 3)].enumerated() {
            let record = table.heard(report, identity: nil, now: .seconds(n))
            // The content is made at the first offer of a record, kept for its repeats: both splice to the encoding.
            let offered = table.offer(record, now: .seconds(n))
            let made = try #require(offered)
            let whole = try #require(made.record)
            #expect(made.payload == whole.encodedBytes(), "\(String(decoding: made.payload, as: UTF8.self))")
            #expect(whole == record.json(sequence: table.readings))
            if n == 0 { #expect(field(whole, "distance_m") != nil && field(whole, "beacon") != nil) }
            // Without the JSON value: the same bytes but for the next number.
            let offeredBare = table.offer(record, now: .seconds(n), makingRecord: false)
            let bare = try #require(offeredBare)
            #expect(bare.record == nil)
            #expect(bare.payload == record.json(sequence: table.readings).encodedBytes())
        }
        #expect(table.readings == 10)
    }

    @Test func discoveryConfigurationsAreAnnouncedOncePerSensor() throws {
        var table = DeviceTable(topics: Self.topics, interval: .zero, discoveryPrefix: "homeassistant")
        let record = table.heard(Self.report(2), identity: nil, now: .zero)
        let offered = table.offer(record, now: .zero)
        let first = try #require(offered)
        #expect(!first.discoveries.isEmpty)
        #expect(first.discoveries.allSatisfy { $0.topic.hasPrefix("homeassistant/") })
        let changed = table.heard(Self.report(2, battery: 10), identity: nil, now: .seconds(1))
        let offeredAgain = table.offer(changed, now: .seconds(1))
        let second = try #require(offeredAgain)
        #expect(second.discoveries.isEmpty, "announced already")
    }

    @Test func requestsFindDevicesByAddressOrName() {
        var table = DeviceTable(topics: Self.topics, interval: .zero, discoveryPrefix: nil)
        _ = table.heard(Self.report(3, name: "Kettle"), identity: nil, now: .zero)
        #expect(table.find(Self.address(3).description)?.name == "Kettle")
        #expect(table.find("Kettle")?.address.address == Self.address(3))
        #expect(table.find("Toaster") == nil)
        #expect(table.find(Self.address(4).description) == nil, "an address is looked up as an address only")
    }

    @Test func connectedValuesRepublishOnlyWatchedDevicesWhenTheyChange() throws {
        let fifty = try #require(BatteryLevel(percent: 50)), forty = try #require(BatteryLevel(percent: 40))
        var table = DeviceTable(topics: Self.topics, interval: .seconds(60), discoveryPrefix: nil)
        let record = table.heard(Self.report(5), identity: nil, now: .zero)
        _ = table.offer(record, now: .zero)
        // Not watched: a value is kept but nothing is republished.
        #expect(table.sensed(Self.address(5), characteristic: 0x2A19, value: .batteryLevel(fifty)) == nil)
        table.watch(record)
        let sensed = table.sensed(Self.address(5), characteristic: 0x2A19, value: .batteryLevel(forty))
        let updated = try #require(sensed)
        #expect(!updated.connectedValues.isEmpty)
        #expect(table.sensed(Self.address(5), characteristic: 0x2A19, value: .batteryLevel(forty)) == nil, "unchanged")
        // The changed content passes the rate limiter at once.
        #expect(table.offer(updated, now: .seconds(1)) != nil)
    }

    @Test func aFullTableForgetsWhatItHasNotHeardForAMinute() {
        var table = DeviceTable(topics: Self.topics, interval: .zero, discoveryPrefix: nil)
        _ = table.heard(Self.report(6), identity: nil, now: .zero)
        _ = table.heard(Self.report(7), identity: nil, now: .seconds(90))
        #expect(!table.isFull)
        table.forget(now: .seconds(90), isWatched: { _ in false })
        #expect(table.report(of: Self.address(6)) == nil)
        #expect(table.report(of: Self.address(7)) != nil)
    }

    @Test func requestsOfOneDeviceRunOneAtATimeInOrderOthersBeside() {
        var queue = RequestQueue<Int>()
        var started: [Int?] = []
        started.append(queue.enqueue(1, device: "a"))   // starts at once
        started.append(queue.enqueue(2, device: "a"))   // waits for 1
        started.append(queue.enqueue(3, device: "b"))   // another device runs beside
        started.append(queue.enqueue(4, device: "a"))
        #expect(started == [1, nil, 3, nil])
        #expect(queue.busyDevices == 2 && queue.waitingCount == 2)
        var next: [Int?] = []
        next.append(queue.finished("a"))
        next.append(queue.finished("a"))
        next.append(queue.finished("b"))
        next.append(queue.finished("a"))
        #expect(next == [2, 4, nil, nil])
        #expect(queue.busyDevices == 0 && queue.waitingCount == 0)
        let idle = queue.enqueue(5, device: "a")
        #expect(idle == 5, "idle again")
    }

    @Test func oneConnectionAttemptAtATimeFirstComeFirstServed() {
        var gate = ConnectGate<String>()
        let turns = [gate.acquire(or: "first"), gate.acquire(or: "second"), gate.acquire(or: "third")]
        #expect(turns == [true, false, false])
        let handedOver = [gate.release(), gate.release(), gate.release()]
        #expect(handedOver == ["second", "third", nil])
        let free = gate.acquire(or: "fourth")
        #expect(free, "free again")
    }
}
