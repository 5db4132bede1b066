import BLE
import BLEFiles
import BLEGateway
import BLEProfiles
import Testing

/// The connected sensors' logic without radios or clocks: the policy, the link budget and retry delays of the
/// scheduler, the plan of a discovered database, and the change detection of the values.
@Suite struct ActiveSensorTests {
    static func address(_ last: UInt8) -> BluetoothAddress { BluetoothAddress("00:5B:00:00:00:\(String(format: "%02X", last))") ?? BluetoothAddress(0) }
    static let heartRate: [BluetoothUUID] = [HeartRateService.uuid, BatteryService.uuid]

    // MARK: Policy

    @Test func thePolicyParsesAndAdmits() {
        #expect(ConnectPolicy(argument: "known") == .known)
        #expect(ConnectPolicy(argument: "none") == ConnectPolicy.none)
        #expect(ConnectPolicy(argument: "00:5B:00:00:00:01,00:5B:00:00:00:02") == .addresses([Self.address(1), Self.address(2)]))
        #expect(ConnectPolicy(argument: "00:5B:00:00:00:01,") == nil)
        #expect(ConnectPolicy(argument: "kitchen") == nil)
        #expect(ConnectPolicy(argument: "") == nil)

        #expect(ConnectPolicy.known.admits(Self.address(1), services: Self.heartRate, connectable: true))
        #expect(!ConnectPolicy.known.admits(Self.address(1), services: Self.heartRate, connectable: false), "not connectable")
        #expect(!ConnectPolicy.known.admits(Self.address(1), services: [BluetoothUUID(0xFE95)], connectable: true), "no service it reads")
        #expect(!ConnectPolicy.none.admits(Self.address(1), services: Self.heartRate, connectable: true))
        let listed = ConnectPolicy.addresses([Self.address(2)])
        #expect(listed.admits(Self.address(2), services: [], connectable: true), "a listed device whatever it advertises")
        #expect(!listed.admits(Self.address(1), services: Self.heartRate, connectable: true))
    }

    // MARK: Scheduler

    @Test func theLinkBudgetIsKeptFirstHeardFirstServed() {
        var s = ActiveSensorScheduler(policy: .known, configuration: .init(maximumLinks: 2))
        for i: UInt8 in 1...4 { let result = s.heard(Self.address(i), services: Self.heartRate, connectable: true, now: .seconds(Int(i))); #expect(result) }
        do { let result = s.heard(Self.address(9), services: [], connectable: true, now: .seconds(5)); #expect(!result, "not a candidate") }
        #expect(s.count == 4)
        do { let result = s.due(now: .seconds(5)); #expect(result == [Self.address(1), Self.address(2)]) }
        #expect(s.linkCount == 2)
        do { let result = s.due(now: .seconds(5)); #expect(result.isEmpty, "the budget is spent while they connect") }
        s.connected(Self.address(1))
        s.connected(Self.address(2))
        #expect(s.state(of: Self.address(1)) == .connected)
        do { let result = s.due(now: .seconds(6)); #expect(result.isEmpty) }
        // A link drops: a place for the next one heard first; the lost one waits for its retry.
        s.lost(Self.address(1), now: .seconds(10))
        #expect(s.state(of: Self.address(1)) == .backingOff(until: .seconds(12), failures: 0))
        for i: UInt8 in 1...4 { s.heard(Self.address(i), services: Self.heartRate, connectable: true, now: .seconds(10)) }
        do { let result = s.due(now: .seconds(10)); #expect(result == [Self.address(3)]) }
        s.failed(Self.address(3), now: .seconds(11))
        do { let result = s.due(now: .seconds(11)); #expect(result == [Self.address(4)], "the lost one is not due before its delay") }
        s.failed(Self.address(4), now: .seconds(11))
        do { let result = s.due(now: .seconds(12)); #expect(result == [Self.address(1)], "due at its delay") }
    }

    @Test func onlyAllowedDevicesAreHandedOut() {
        var s = ActiveSensorScheduler(policy: .known)
        for i: UInt8 in 1...3 { s.heard(Self.address(i), services: Self.heartRate, connectable: true, now: .zero) }
        // Another gateway holds the presence of 1 and 3.
        do { let result = s.due(now: .seconds(1), allowed: { $0 == Self.address(2) }); #expect(result == [Self.address(2)]) }
        #expect(s.state(of: Self.address(1)) == .waiting)
        do { let result = s.due(now: .seconds(2)); #expect(result == [Self.address(1), Self.address(3)], "once allowed") }
    }

    @Test func failuresBackOffRefusalsWaitLonger() {
        let configuration = ActiveSensorScheduler.Configuration(maximumLinks: 4, firstRetry: .seconds(2), maximumRetry: .seconds(30),
                                                                refusalRetry: .seconds(300), freshness: .seconds(1000))
        var s = ActiveSensorScheduler(policy: .known, configuration: configuration)
        #expect([1, 2, 3, 4, 5, 6, 50].map { s.delay(afterFailures: $0) } == [.seconds(2), .seconds(4), .seconds(8), .seconds(16), .seconds(30), .seconds(30), .seconds(30)])
        let device = Self.address(1)
        s.heard(device, services: Self.heartRate, connectable: true, now: .zero)
        var t = Duration.zero
        var delays: [Duration] = []
        for _ in 0..<6 {
            do { let result = s.due(now: t); #expect(result == [device]) }
            let until = s.failed(device, now: t) ?? .zero
            delays.append(until - t)
            do { let result = s.due(now: until - .milliseconds(1)); #expect(result.isEmpty, "not before its time") }
            #expect(s.nextRetry() == until)
            t = until
        }
        #expect(delays == [.seconds(2), .seconds(4), .seconds(8), .seconds(16), .seconds(30), .seconds(30)])
        // Connected: the count of failures starts again.
        do { let result = s.due(now: t); #expect(result == [device]) }
        s.connected(device)
        s.lost(device, now: t)
        t += .seconds(2)
        do { let result = s.due(now: t); #expect(result == [device]) }
        do { let result = s.failed(device, now: t); #expect(result == t + .seconds(2)) }
        // A refusal: marked, tried again after the refusal delay.
        t += .seconds(2)
        do { let result = s.due(now: t); #expect(result == [device]) }
        s.failed(device, refused: true, reason: "Insufficient Authentication", now: t)
        #expect(s.state(of: device) == .refused(until: t + .seconds(300), reason: "Insufficient Authentication"))
        do { let result = s.due(now: t + .seconds(299)); #expect(result.isEmpty) }
        do { let result = s.due(now: t + .seconds(300)); #expect(result == [device]) }
    }

    @Test func onlyDevicesHeardLatelyAreConnectedAndMemoryIsBounded() {
        var s = ActiveSensorScheduler(policy: .known, configuration: .init(maximumLinks: 4, freshness: .seconds(15), capacity: 3))
        s.heard(Self.address(1), services: Self.heartRate, connectable: true, now: .zero)
        do { let result = s.due(now: .seconds(16)); #expect(result.isEmpty, "gone quiet: not tried") }
        s.heard(Self.address(1), services: [], connectable: true, now: .seconds(16))
        do { let result = s.due(now: .seconds(16)); #expect(result == [Self.address(1)], "heard again (services need not be in every report)") }
        s.connected(Self.address(1))
        for i: UInt8 in 2...6 { s.heard(Self.address(i), services: Self.heartRate, connectable: true, now: .seconds(16 + Int(i))) }
        #expect(s.count == 3)
        #expect(s.state(of: Self.address(1)) == .connected, "a linked device is never forgotten")
        #expect(s.state(of: Self.address(6)) == .waiting)
        #expect(s.state(of: Self.address(2)) == nil)
    }

    // MARK: Plan

    @Test func thePlanSubscribesToWhatNotifiesAndPollsTheRest() {
        typealias Item = ActiveSensorPlan.Item
        let items = [
            Item(service: HeartRateService.uuid, characteristic: HeartRateService.measurement, properties: [.notify]),
            Item(service: HeartRateService.uuid, characteristic: HeartRateService.bodySensorLocation, properties: [.read]),
            Item(service: HeartRateService.uuid, characteristic: HeartRateService.controlPoint, properties: [.write]),
            Item(service: BatteryService.uuid, characteristic: BatteryService.batteryLevel, properties: [.read, .notify]),
            Item(service: HealthThermometerService.uuid, characteristic: HealthThermometerService.temperatureMeasurement, properties: [.indicate]),
            Item(service: DeviceInformationService.uuid, characteristic: BluetoothUUID(0x2A29), properties: [.read]),
            Item(service: BluetoothUUID(0xFF00), characteristic: BluetoothUUID(0x2A19), properties: [.read, .notify]),   // not a sensed service
            Item(service: DeviceInformationService.uuid, characteristic: BluetoothUUID(0xABCD), properties: [.read]),   // no decoder
        ]
        let plan = ActiveSensorPlan(items)
        #expect(plan.subscribe.map(\.characteristic) == [HeartRateService.measurement, BatteryService.batteryLevel,
                                                          HealthThermometerService.temperatureMeasurement])
        #expect(plan.readOnce.map(\.characteristic) == [BatteryService.batteryLevel])
        #expect(plan.poll.map(\.characteristic) == [HeartRateService.bodySensorLocation, BluetoothUUID(0x2A29)])
        #expect(!plan.glucoseRecords)
        #expect(!plan.isEmpty)

        let meter = ActiveSensorPlan([
            Item(service: GlucoseService.uuid, characteristic: GlucoseService.measurement, properties: [.notify]),
            Item(service: GlucoseService.uuid, characteristic: GlucoseService.measurementContext, properties: [.notify]),
            Item(service: GlucoseService.uuid, characteristic: GlucoseService.feature, properties: [.read]),
            Item(service: GlucoseService.uuid, characteristic: GlucoseService.recordAccessControlPoint, properties: [.write, .indicate]),
        ])
        #expect(meter.glucoseRecords, "records through the control point")
        #expect(meter.subscribe.isEmpty, "measurements are fetched with the control point, not followed")
        #expect(meter.poll.map(\.characteristic) == [GlucoseService.feature])
        #expect(ActiveSensorPlan([]).isEmpty)
    }

    // MARK: Values

    @Test func valuesGoOutOnChangeOnly() throws {
        var values = ProfileValues()
        let device = Self.address(1)
        let bpm72 = try #require(try CharacteristicDecoder.decode(uuid: HeartRateService.measurement, value: [0x00, 72]))
        let bpm73 = try #require(try CharacteristicDecoder.decode(uuid: HeartRateService.measurement, value: [0x00, 73]))
        let battery = try #require(try CharacteristicDecoder.decode(uuid: BatteryService.batteryLevel, value: [87]))
        let maker = try #require(try CharacteristicDecoder.decode(uuid: BluetoothUUID(0x2A29), value: Array("Acme".utf8)))
        do { let result = values.update(device, characteristic: HeartRateService.measurement, value: bpm72); #expect(result) }
        do { let result = values.update(device, characteristic: HeartRateService.measurement, value: bpm72); #expect(!result, "the same value") }
        do { let result = values.update(device, characteristic: HeartRateService.measurement, value: bpm73); #expect(result) }
        do { let result = values.update(device, characteristic: BatteryService.batteryLevel, value: battery); #expect(result) }
        do { let result = values.update(device, characteristic: BluetoothUUID(0x2A29), value: maker); #expect(result) }
        do { let result = values.update(Self.address(2), characteristic: BatteryService.batteryLevel, value: battery); #expect(result, "another device's first value") }
        #expect(JSONValue.object(values.values(of: device)).encoded() == """
            {"battery_level":{"percent":87},"heart_rate_measurement":{"bpm":73,"sensor_contact":"not_supported"},\
            "manufacturer_name":{"text":"Acme"}}
            """)
        values.forget(device)
        #expect(values.values(of: device).isEmpty)
        do { let result = values.update(device, characteristic: BatteryService.batteryLevel, value: battery); #expect(result, "after forgetting, new again") }
    }

    /// Connected values join the record's `values`, replace an advertised one of the same name, change its content key,
    /// and give Home Assistant sensors whose template reads them from the record topic.
    @Test func connectedValuesAreInTheRecordAndAnnounced() throws {
        let data = AdvertisingData(localName: "SwiftBLE HRM", serviceUUIDs: [0x180D, 0x180F], serviceData: [(BluetoothUUID(0x180F), [90])])
        let address = LEAddress(Self.address(4), type: .public)
        var record = DeviceRecord(DiscoveredPeripheral(address: address, advertisementData: data, rssi: -50, isConnectable: true))
        let before = record.contentKey
        var values = ProfileValues()
        values.update(address.address, characteristic: HeartRateService.measurement,
                      value: try #require(try CharacteristicDecoder.decode(uuid: HeartRateService.measurement, value: [0x00, 64])))
        values.update(address.address, characteristic: BatteryService.batteryLevel,
                      value: try #require(try CharacteristicDecoder.decode(uuid: BatteryService.batteryLevel, value: [88])))
        record.connectedValues = values.values(of: address.address)
        #expect(record.contentKey != before)
        let json = record.json().encoded()
        #expect(json.contains(#""values":{"battery_level":{"percent":88},"heart_rate_measurement":{"bpm":64,"sensor_contact":"not_supported"}}"#), "\(json)")
        let sensors = HomeAssistantDiscovery.sensors(for: record, topics: GatewayTopics(gatewayID: "gw"))
        #expect(sensors.map { $0.topic.split(separator: "/").dropLast().last.map(String.init) ?? "" } == ["battery", "heart_rate"])
        let heart = sensors.last?.payload ?? ""
        #expect(heart.contains(#""state_topic":"swift-ble/gw/devices/00:5B:00:00:00:04""#))
        #expect(heart.contains(#""value_template":"{{ value_json['values']['heart_rate_measurement']['bpm'] }}""#))
    }
}
