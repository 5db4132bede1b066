import BLE
import BLEBeacons
import BLEFiles
import BLEProfiles

/// What a gateway publishes about one device on `PREFIX/ID/devices/ADDRESS`: everything its advertisements say, with
/// beacon frames and the values of known services decoded.
///
/// The record is made from a scan report (``init(_:identity:)``); bytes from the air never trap: a malformed beacon
/// frame or service data value is reported in ``problems`` and the rest of the record stands.
///
/// ``contentKey`` is the record without its signal (RSSI, distance): two reports with the same key differ only by
/// RSSI jitter, which the ``DeviceRateLimiter`` holds back; a change of content goes out at once.
public struct DeviceRecord: Sendable {
    /// The address the device is known by: its identity address when ``resolvedFrom`` is set.
    public var address: LEAddress
    /// The resolvable private address the device advertised from, when a bond's IRK resolved it to ``address``.
    public var resolvedFrom: LEAddress?
    /// The advertised local name.
    public var name: String?
    /// The RSSI of the report, in dBm.
    public var rssi: Int
    /// The advertised TX Power Level, in dBm.
    public var txPower: Int?
    /// Whether the device accepts connections.
    public var connectable: Bool
    /// The advertised service UUIDs.
    public var services: [BluetoothUUID]
    /// The manufacturer specific data.
    public var manufacturerData: [ManufacturerData]
    /// The service data, by UUID, in ascending order of UUID text.
    public var serviceData: [(uuid: BluetoothUUID, data: [UInt8])]
    /// The beacon frame that identifies the device (iBeacon, AltBeacon, Eddystone UID, URL or EID).
    public var beacon: BeaconFrame?
    /// Eddystone telemetry (TLM), when the device sent it.
    public var telemetry: EddystoneTLM?
    /// Values decoded from service data by the profile of the service (``DeviceRecord/decodeServiceData(uuid:data:)``).
    public var values: [DecodedValue]
    /// Values read from the device over a link (``ActiveSensorPlan``, ``ProfileValues``), by name; they join the
    /// values decoded from service data in the record's `values` object, and replace one of the same name.
    public var connectedValues: [(key: String, value: JSONValue)] = []
    /// What could not be decoded, in words (a malformed beacon frame, service data too short for its profile).
    public var problems: [String]
    /// The device table's mark of the content this record was made with (0: none): records of one device with the
    /// same non-zero stamp have the same content, so the table encodes their ``contentKey`` once.
    var stamp: UInt64 = 0

    /// A record of one scan report. `identity` is the identity address a bond resolved the report's address to.
    public init(_ report: DiscoveredPeripheral, identity: LEAddress? = nil) {
        let data = report.advertisementData
        address = identity ?? report.address
        resolvedFrom = identity == nil ? nil : report.address
        name = data.localName
        rssi = Int(report.rssi)
        connectable = report.isConnectable
        problems = []
        do { txPower = try data.txPowerLevel().map(Int.init) } catch { txPower = nil; problems.append("TX power: \(error.reason)") }
        do { services = try data.serviceUUIDs() } catch { services = []; problems.append("services: \(error.reason)") }
        do { manufacturerData = try data.manufacturerData() } catch { manufacturerData = []; problems.append("manufacturer data: \(error.reason)") }
        var serviceData: [(uuid: BluetoothUUID, data: [UInt8])] = []
        do {
            serviceData = try data.serviceData().map { (uuid: $0.key, data: $0.value) }.sorted { $0.uuid.description < $1.uuid.description }
        } catch {
            problems.append("service data: \(error.reason)")
        }
        self.serviceData = serviceData
        beacon = nil
        telemetry = nil
        for structure in data.structures {
            do {
                switch try BeaconFrame(structure: structure) {
                case .eddystone(.tlm(let tlm)): telemetry = tlm
                case .some(let frame) where frame.identifier != nil && beacon == nil: beacon = frame
                default: break
                }
            } catch {
                problems.append("beacon frame: \(error.reason)")
            }
        }
        values = []
        for (uuid, bytes) in serviceData where uuid != BluetoothUUID(0xFEAA) {
            do {
                if let value = try Self.decodeServiceData(uuid: uuid, data: bytes) { values.append(value) }
            } catch {
                problems.append("service data \(uuid): \(error.reason)")
            }
        }
    }

    /// The characteristic whose value format a service's service data carries, for the services whose profiles the
    /// gateway decodes (Battery → Battery Level, Heart Rate → Heart Rate Measurement, Health Thermometer →
    /// Temperature Measurement, Weight Scale → Weight Measurement, Body Composition → Body Composition Measurement,
    /// Blood Pressure → Blood Pressure Measurement, Glucose → Glucose Measurement).
    public static let serviceDataCharacteristics: [BluetoothUUID: BluetoothUUID] = [
        BatteryService.uuid: BatteryService.batteryLevel,
        HeartRateService.uuid: HeartRateService.measurement,
        HealthThermometerService.uuid: HealthThermometerService.temperatureMeasurement,
        WeightScaleService.uuid: WeightScaleService.measurement,
        BodyCompositionService.uuid: BodyCompositionService.measurement,
        BloodPressureService.uuid: BloodPressureService.measurement,
        GlucoseService.uuid: GlucoseService.measurement,
    ]

    /// Decodes service data: as the value of the service's main characteristic (``serviceDataCharacteristics``), or as
    /// the value of the characteristic the UUID names when `CharacteristicDecoder` knows it; `nil` otherwise.
    public static func decodeServiceData(uuid: BluetoothUUID, data: [UInt8]) throws(WireError) -> DecodedValue? {
        let characteristic = serviceDataCharacteristics[uuid] ?? uuid
        guard characteristic != HealthScale.stream, CharacteristicDecoder.knows(characteristic) else { return nil }
        return try CharacteristicDecoder.decode(uuid: characteristic, value: data)
    }

    /// The RSSI at 1 m: a beacon's measured power, else the advertised TX power less 41 dB (the loss over the first
    /// metre at 2.4 GHz); `nil` when the device says neither.
    public var measuredPowerAt1m: Int? {
        if let power = beacon?.measuredPowerAt1m { return power }
        return txPower.map { $0 - BeaconFrame.eddystoneLossAt1m }
    }

    /// The distance the RSSI suggests, in metres, by the log-distance model (exponent 2); `nil` without a measured
    /// power.
    public func distance(rssi: Double, model: PathLossModel = PathLossModel()) -> Double? {
        measuredPowerAt1m.map { model.distance(rssi: rssi, measuredPower: Double($0)) }
    }

    /// The decoded values by their JSON type (`"battery_level": {"percent": 87}`): those of the service data, then the
    /// ``connectedValues`` (a connected value replaces an advertised one of the same name).
    public var valueFields: [(key: String, value: JSONValue)] {
        var fields = advertisedValueFields
        for value in connectedValues {
            if let index = fields.firstIndex(where: { $0.key == value.key }) { fields[index] = value } else { fields.append(value) }
        }
        return fields
    }

    var advertisedValueFields: [(key: String, value: JSONValue)] {
        values.map { value in
            let fields = value.jsonFields
            var type = "value"
            var rest: [(key: String, value: JSONValue)] = []
            for field in fields {
                if field.key == "type", case .string(let name) = field.value { type = name } else { rest.append(field) }
            }
            return (key: type, value: .object(rest))
        }
    }

    /// The content: every member but the signal, in a fixed order.
    public var contentFields: [(key: String, value: JSONValue)] {
        var fields: [(key: String, value: JSONValue)] = [("address", .string(address.address.description)),
                                                         ("address_type", .string(Self.typeName(address)))]
        if let resolvedFrom { fields.append(("resolved_from", .string(resolvedFrom.address.description))) }
        if let name { fields.append(("name", .string(name))) }
        if let txPower { fields.append(("tx_power", .int(txPower))) }
        fields.append(("connectable", .bool(connectable)))
        if !services.isEmpty { fields.append(("services", .array(services.map { .string($0.description) }))) }
        if !manufacturerData.isEmpty {
            fields.append(("manufacturer_data", .array(manufacturerData.map {
                .object([("company_id", .int(Int($0.companyID.rawValue))), ("data", .string($0.data.hexString()))])
            })))
        }
        if !serviceData.isEmpty {
            fields.append(("service_data", .object(serviceData.map { (key: $0.uuid.description, value: .string($0.data.hexString())) })))
        }
        if let beacon { fields.append(("beacon", Self.beaconJSON(beacon))) }
        if let telemetry {
            var t: [(key: String, value: JSONValue)] = [("battery_mv", .int(Int(telemetry.batteryMillivolts)))]
            if let temperature = telemetry.temperature { t.append(("temperature_c", .number(temperature, decimals: 2))) }
            t.append(("advertisements", .int(Int(telemetry.advertisingPDUCount))))
            t.append(("uptime_s", .number(Double(telemetry.uptimeDeciseconds) / 10, decimals: 1)))
            fields.append(("telemetry", .object(t)))
        }
        let values = valueFields
        if !values.isEmpty { fields.append(("values", .object(values))) }
        if !problems.isEmpty { fields.append(("problems", .array(problems.map { .string($0) }))) }
        return fields
    }

    /// A key equal for two records that differ only in signal (RSSI, distance).
    public var contentKey: String { JSONValue.object(contentFields).encoded() }

    /// The record as published: the content, then `rssi`, `distance_m` (when a measured power is known), and the
    /// gateway's reading number `seq` (consecutive over all devices, so that a subscriber can count what it missed).
    public func json(sequence: UInt64? = nil) -> JSONValue {
        .object(contentFields + signalFields(sequence: sequence))
    }

    /// The members of ``json(sequence:)`` after the content: `rssi`, `distance_m` and `seq`.
    func signalFields(sequence: UInt64?) -> [(key: String, value: JSONValue)] {
        var fields: [(key: String, value: JSONValue)] = [("rssi", .int(rssi))]
        if let distance = distance(rssi: Double(rssi)) { fields.append(("distance_m", .number(distance, decimals: 2))) }
        if let sequence { fields.append(("seq", .integer(sequence))) }
        return fields
    }

    static func typeName(_ address: LEAddress) -> String {
        switch address.type {
        case .public, .publicIdentity: "public"
        default: "random"
        }
    }

    static func beaconJSON(_ frame: BeaconFrame) -> JSONValue {
        var fields: [(key: String, value: JSONValue)] = []
        switch frame {
        case .iBeacon(let b):
            fields = [("type", "ibeacon"), ("uuid", .string(b.proximityUUID.fullString)), ("major", .int(Int(b.major))), ("minor", .int(Int(b.minor)))]
        case .altBeacon(let b):
            fields = [("type", "altbeacon"), ("id1", .string(b.id1.fullString)), ("id2", .int(Int(b.id2))), ("id3", .int(Int(b.id3)))]
        case .eddystone(.uid(let f)):
            fields = [("type", "eddystone_uid"), ("namespace", .string(f.namespace.hexString())), ("instance", .string(f.instance.hexString()))]
        case .eddystone(.url(let f)):
            fields = [("type", "eddystone_url"), ("url", .string(f.url))]
        case .eddystone(.eid(let f)):
            fields = [("type", "eddystone_eid"), ("eid", .string(f.ephemeralID.hexString()))]
        case .eddystone(let other):
            fields = [("type", .string("eddystone_\(other.frameType.rawValue)"))]
        }
        if let id = frame.identifier { fields.append(("id", .string(id.description))) }
        if let power = frame.measuredPowerAt1m { fields.append(("measured_power", .int(power))) }
        return .object(fields)
    }
}
