import BLE
import BLEBeacons
import BLEGateway
import BLEProfiles
import Testing

/// The rate limiter, the device records' JSON, Home Assistant discovery and the requests: synchronous.
@Suite struct GatewayCodecTests {
    // MARK: Rate limiter

    @Test func changesGoAtOnceJitterOncePerInterval() {
        var limiter = DeviceRateLimiter(interval: .seconds(5))
        #expect(limiter.offer(device: "A", content: "x", now: .zero) == .new)
        #expect(limiter.offer(device: "A", content: "x", now: .seconds(1)) == .suppressed, "RSSI jitter only")
        #expect(limiter.offer(device: "A", content: "y", now: .seconds(2)) == .changed, "a change of content at once")
        #expect(limiter.offer(device: "A", content: "y", now: .seconds(6)) == .suppressed, "4 s after the last publication")
        #expect(limiter.offer(device: "A", content: "y", now: .seconds(7)) == .refresh)
        #expect(limiter.offer(device: "B", content: "y", now: .seconds(7)) == .new, "per device")
        var unlimited = DeviceRateLimiter(interval: .zero)
        #expect(unlimited.offer(device: "A", content: "x", now: .zero) == .new)
        #expect(unlimited.offer(device: "A", content: "x", now: .zero) == .refresh)
    }

    @Test func theLimiterForgetsTheLeastRecentBeyondItsCapacity() {
        var limiter = DeviceRateLimiter(interval: .seconds(5), capacity: 2)
        _ = limiter.offer(device: "A", content: "x", now: .zero)
        _ = limiter.offer(device: "B", content: "x", now: .seconds(1))
        #expect(limiter.offer(device: "C", content: "x", now: .seconds(2)) == .new)
        #expect(limiter.count == 2)
        #expect(limiter.offer(device: "A", content: "x", now: .seconds(3)) == .new, "A was forgotten")
        #expect(limiter.offer(device: "C", content: "x", now: .seconds(3)) == .suppressed)
    }

    // MARK: Device records

    static let address = LEAddress(BluetoothAddress("00:5B:00:00:00:04") ?? BluetoothAddress(0), type: .public)

    @Test func aRecordCarriesEverythingTheAdvertisementSays() throws {
        let data = AdvertisingData(flags: ADFlags(rawValue: 0x06), localName: "SwiftBLE Battery", serviceUUIDs: [0x180F, 0x180A], txPowerLevel: -4,
                                   manufacturerData: ManufacturerData(companyID: CompanyIdentifier(rawValue: 0x0059), data: [0x01, 0x02]),
                                   serviceData: [(BluetoothUUID(0x180F), [87])])
        let record = DeviceRecord(DiscoveredPeripheral(address: Self.address, advertisementData: data, rssi: -61, isConnectable: true))
        #expect(record.json(sequence: 7).encoded() == """
            {"address":"00:5B:00:00:00:04","address_type":"public","name":"SwiftBLE Battery","tx_power":-4,"connectable":true,\
            "services":["180F","180A"],"manufacturer_data":[{"company_id":89,"data":"0102"}],"service_data":{"180F":"57"},\
            "values":{"battery_level":{"percent":87}},"rssi":-61,"distance_m":6.31,"seq":7}
            """)
        // The content without the signal: the same for another RSSI, not for another value.
        let jitter = DeviceRecord(DiscoveredPeripheral(address: Self.address, advertisementData: data, rssi: -75, isConnectable: true))
        #expect(jitter.contentKey == record.contentKey)
        let drained = AdvertisingData(flags: ADFlags(rawValue: 0x06), localName: "SwiftBLE Battery", serviceUUIDs: [0x180F, 0x180A], txPowerLevel: -4,
                                      manufacturerData: ManufacturerData(companyID: CompanyIdentifier(rawValue: 0x0059), data: [0x01, 0x02]),
                                      serviceData: [(BluetoothUUID(0x180F), [86])])
        #expect(DeviceRecord(DiscoveredPeripheral(address: Self.address, advertisementData: drained, rssi: -61, isConnectable: true)).contentKey != record.contentKey)
    }

    @Test func beaconsAreDecodedWithTheirDistance() throws {
        let beacon = IBeacon(proximityUUID: BluetoothUUID("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0") ?? 0, major: 1, minor: 2, measuredPower: -59)
        let frame = BeaconFrame.iBeacon(beacon)
        let record = DeviceRecord(DiscoveredPeripheral(address: Self.address, advertisementData: frame.advertisingData, rssi: -79, isConnectable: false))
        let json = record.json().encoded()
        #expect(json.contains(#""beacon":{"type":"ibeacon","uuid":"E2C56DB5-DFFB-48D2-B060-D0F5A71096E0","major":1,"minor":2,"#), "\(json)")
        #expect(json.contains(#""measured_power":-59}"#), "\(json)")
        #expect(json.hasSuffix(#""rssi":-79,"distance_m":10.00}"#), "20 dB below the measured power: 10 m at exponent 2; \(json)")
        let tlm = BeaconFrame.eddystone(.tlm(EddystoneTLM(batteryMillivolts: 3000, temperature: 21.5, advertisingPDUCount: 10, uptimeDeciseconds: 25)))
        let telemetry = DeviceRecord(DiscoveredPeripheral(address: Self.address, advertisementData: tlm.advertisingData, rssi: -60, isConnectable: false))
        #expect(telemetry.json().encoded().contains(#""telemetry":{"battery_mv":3000,"temperature_c":21.50,"advertisements":10,"uptime_s":2.5}"#))
    }

    /// Bytes from the air that claim a format and break it: the record stands, with the problem named.
    @Test func malformedDataIsReportedNotTrapped() {
        let broken = AdvertisingData(structures: [
            ADStructure(type: .manufacturerSpecificData, data: [0x4C, 0x00, 0x02, 0x15, 0x01]),   // an iBeacon cut short
            ADStructure(type: .serviceData16BitUUID, data: [0x0D, 0x18]),                           // Heart Rate with no value
            ADStructure(type: .txPowerLevel, data: []),
            ADStructure(type: .completeLocalName, data: [0xFF, 0xFE]),
        ])
        let record = DeviceRecord(DiscoveredPeripheral(address: Self.address, advertisementData: broken, rssi: -50, isConnectable: true))
        #expect(record.beacon == nil)
        #expect(record.problems.count >= 2, "\(record.problems)")
        #expect(record.json().encoded().contains(#""problems":["#))
        // Every prefix of a real advertisement, and a byte flipped anywhere: no trap.
        let frame = BeaconFrame.iBeacon(IBeacon(proximityUUID: 0x1234, major: 1, minor: 2)).advertisingData
        let bytes = (try? frame.encodedLegacy()) ?? []
        for cut in 0...bytes.count {
            for flip in 0..<max(1, cut) {
                var mutated = Array(bytes.prefix(cut))
                if flip < mutated.count { mutated[flip] ^= 0x5A }
                _ = DeviceRecord(DiscoveredPeripheral(address: Self.address, advertisementData: AdvertisingData(validPrefixOf: mutated), rssi: -50,
                                                      isConnectable: false)).json().encoded()
            }
        }
    }

    @Test func homeAssistantSensorsForWhatIsDecoded() {
        let data = AdvertisingData(localName: "Thermo", serviceData: [(BluetoothUUID(0x180F), [55]), (BluetoothUUID(0x1809), [0x00, 0xD7, 0x00, 0x00, 0xFF])])
        let record = DeviceRecord(DiscoveredPeripheral(address: Self.address, advertisementData: data, rssi: -50, isConnectable: true))
        let sensors = HomeAssistantDiscovery.sensors(for: record, topics: GatewayTopics(gatewayID: "kitchen"))
        #expect(sensors.map(\.topic) == ["homeassistant/sensor/swift_ble_kitchen_005b00000004/temperature/config",
                                         "homeassistant/sensor/swift_ble_kitchen_005b00000004/battery/config"])
        let battery = sensors.last?.payload ?? ""
        #expect(battery.contains(#""unique_id":"swift_ble_kitchen_005b00000004_battery""#))
        #expect(battery.contains(#""state_topic":"swift-ble/kitchen/devices/00:5B:00:00:00:04""#))
        #expect(battery.contains(#""value_template":"{{ value_json['values']['battery_level']['percent'] }}""#))
        #expect(battery.contains(#""availability_topic":"swift-ble/kitchen/status""#))
        #expect(battery.contains(#""device":{"identifiers":["swift_ble_005b00000004"]"#))
        #expect(record.json().encoded().contains(#""temperature_measurement":{"temperature":21.5"#), "\(record.json().encoded())")
        let plain = DeviceRecord(DiscoveredPeripheral(address: Self.address, advertisementData: AdvertisingData(localName: "x"), rssi: -50, isConnectable: true))
        #expect(HomeAssistantDiscovery.sensors(for: plain, topics: GatewayTopics(gatewayID: "kitchen")).isEmpty)
    }

    // MARK: Topics

    @Test func topicsParse() {
        let topics = GatewayTopics(prefix: "swift-ble", gatewayID: "hall")
        #expect(topics.parse("swift-ble/kitchen/rssi/00:5B:00:00:00:04") == .view(gateway: "kitchen", device: "00:5B:00:00:00:04"))
        #expect(topics.parse("swift-ble/kitchen/status") == .status(gateway: "kitchen"))
        #expect(topics.parse("swift-ble/presence/00:5B:00:00:00:04") == .presence(device: "00:5B:00:00:00:04"))
        #expect(topics.parse("swift-ble/hall/command") == .command)
        #expect(topics.parse("swift-ble/kitchen/command") == nil, "another gateway's commands")
        #expect(topics.parse("other/hall/command") == nil)
        #expect(topics.parse("swift-ble//status") == nil)
    }

    // MARK: Requests

    @Test func requestsParse() throws {
        let read = try GatewayRequest.parse(Array(#"{"id":"r1","op":"read","device":"SwiftBLELab","characteristic":"FF06"}"#.utf8)).get()
        #expect(read == GatewayRequest(id: "r1", operation: .read, device: "SwiftBLELab", characteristic: 0xFF06))
        let write = try GatewayRequest.parse(Array(#"{"id":"w","op":"write","device":"00:5B:00:00:00:02","characteristic":"2A06","value":"0A0b","withResponse":false,"timeout":2.5}"#.utf8)).get()
        #expect(write.value == [0x0A, 0x0B])
        #expect(write.withResponse == false)
        #expect(write.timeout == .milliseconds(2500))
        let service = try GatewayRequest.parse(Array(#"{"id":"s","op":"subscribe","device":"x","service":"180D","characteristic":"2A37"}"#.utf8)).get()
        #expect(service.service == 0x180D)
    }

    @Test(arguments: [
        ("", nil, "malformed_request"),
        ("not json", nil, "malformed_request"),
        ("[1,2]", nil, "malformed_request"),
        (#"{"op":"read"}"#, nil, "malformed_request"),
        (#"{"id":"a/b","op":"read"}"#, nil, "malformed_request"),
        (#"{"id":7,"op":"read"}"#, nil, "malformed_request"),
        (#"{"id":"r","op":"fly","device":"x"}"#, "r", "unknown_op"),
        (#"{"id":"r","device":"x"}"#, "r", "malformed_request"),
        (#"{"id":"r","op":"read","device":"x"}"#, "r", "malformed_request"),
        (#"{"id":"r","op":"read","device":"x","characteristic":"zz"}"#, "r", "malformed_request"),
        (#"{"id":"r","op":"read","characteristic":"2A19"}"#, "r", "malformed_request"),
        (#"{"id":"r","op":"write","device":"x","characteristic":"2A19"}"#, "r", "malformed_request"),
        (#"{"id":"r","op":"write","device":"x","characteristic":"2A19","value":"0g"}"#, "r", "malformed_request"),
        (#"{"id":"r","op":"write","device":"x","characteristic":"2A19","value":"00","withResponse":"yes"}"#, "r", "malformed_request"),
        (#"{"id":"r","op":"connect","device":"x","timeout":-1}"#, "r", "malformed_request"),
    ] as [(String, String?, String)])
    func malformedRequestsGetAnErrorNeverATrap(_ text: String, _ id: String?, _ code: String) {
        switch GatewayRequest.parse(Array(text.utf8)) {
        case .success(let request):
            Issue.record("accepted \(request)")
        case .failure(let error):
            #expect(GatewayRequest.requestID(of: Array(text.utf8)) == id)
            #expect(error.code.rawValue == code)
            let response = GatewayResponse.failure(error, id: GatewayRequest.requestID(of: Array(text.utf8))).encoded()
            #expect(response.hasPrefix(id.map { #"{"id":"\#($0)","ok":false,"error":{"code":"\#(code)","reason":"# } ?? #"{"id":null,"ok":false"#), "\(response)")
        }
    }

    @Test func responses() {
        #expect(GatewayResponse.success(id: "r1", [("value", "0102")]).encoded() == #"{"id":"r1","ok":true,"value":"0102"}"#)
        #expect(GatewayResponse.failure(GatewayError.attError(2, "read not permitted"), id: "r2").encoded()
                == #"{"id":"r2","ok":false,"error":{"code":"att_error","reason":"read not permitted","att_error":2}}"#)
        #expect(GatewayResponse.topicLevel(nil) == "_")
    }
}
