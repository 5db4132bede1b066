import BLE
import BLEFiles

/// Home Assistant MQTT discovery for what a gateway decodes: a retained config message per sensor on
/// `homeassistant/sensor/<node_id>/<object_id>/config`, whose state is read from the device's record topic.
///
/// One sensor per decoded quantity, whether advertised (service data) or read over a link (``ActiveSensorPlan``):
/// heart rate (bpm), battery (%), temperature, weight, body fat (%), blood pressure (systolic and diastolic), glucose
/// (mg/dL), and the distance of devices that advertise a measured power (beacons). Each config
/// names the gateway's status topic as its `availability_topic` (`online`/`offline`), so the sensors go unavailable
/// with the gateway. The `node_id` is `swift_ble_<gateway>_<address hex>` and the `unique_id`
/// `<node_id>_<object_id>`: each gateway contributes its own entities, attached to one Home Assistant device per
/// Bluetooth device (the device block's identifier is the device's address).
public enum HomeAssistantDiscovery {
    /// One sensor's discovery message.
    public struct Sensor: Sendable, Hashable {
        /// `homeassistant/sensor/<node_id>/<object_id>/config`.
        public var topic: String
        /// The config, JSON.
        public var payload: String
    }

    /// What a sensor reads from a record.
    struct Quantity {
        var objectID: String
        var name: String
        var template: String
        var unit: String
        var deviceClass: String?
    }

    /// The sensors a record has values for.
    static func quantities(of record: DeviceRecord) -> [Quantity] {
        var result: [Quantity] = []
        for value in record.valueFields {
            let fields = Dictionary(value.value.members, uniquingKeysWith: { a, _ in a })
            let path = "value_json['values']['\(value.key)']"
            switch value.key {
            case "heart_rate_measurement":
                result.append(Quantity(objectID: "heart_rate", name: "Heart rate", template: "{{ \(path)['bpm'] }}", unit: "bpm", deviceClass: nil))
            case "battery_level":
                result.append(Quantity(objectID: "battery", name: "Battery", template: "{{ \(path)['percent'] }}", unit: "%", deviceClass: "battery"))
            case "temperature_measurement":
                let unit = fields["unit"] == .string("fahrenheit") ? "°F" : "°C"
                result.append(Quantity(objectID: "temperature", name: "Temperature", template: "{{ \(path)['temperature'] }}", unit: unit,
                                       deviceClass: "temperature"))
            case "weight_measurement":
                let unit = fields["unit"] == .string("lb") ? "lb" : "kg"
                result.append(Quantity(objectID: "weight", name: "Weight", template: "{{ \(path)['weight'] }}", unit: unit, deviceClass: "weight"))
            case "blood_pressure_measurement":
                let unit = fields["unit"] == .string("kPa") ? "kPa" : "mmHg"
                result.append(Quantity(objectID: "systolic", name: "Systolic pressure", template: "{{ \(path)['systolic'] }}", unit: unit,
                                       deviceClass: "pressure"))
                result.append(Quantity(objectID: "diastolic", name: "Diastolic pressure", template: "{{ \(path)['diastolic'] }}", unit: unit,
                                       deviceClass: "pressure"))
            case "body_composition_measurement" where fields["body_fat_percent"] != nil:
                result.append(Quantity(objectID: "body_fat", name: "Body fat", template: "{{ \(path)['body_fat_percent'] }}", unit: "%", deviceClass: nil))
            case "glucose_measurement" where fields["mg_dl"] != nil:
                result.append(Quantity(objectID: "glucose", name: "Glucose", template: "{{ \(path)['mg_dl'] }}", unit: "mg/dL", deviceClass: nil))
            default:
                break
            }
        }
        if record.measuredPowerAt1m != nil {
            result.append(Quantity(objectID: "distance", name: "Distance", template: "{{ value_json['distance_m'] }}", unit: "m", deviceClass: "distance"))
        }
        return result
    }

    /// The discovery messages for the sensors of `record`, as published by the gateway of `topics`.
    public static func sensors(for record: DeviceRecord, topics: GatewayTopics, discoveryPrefix: String = "homeassistant") -> [Sensor] {
        let hex = record.address.address.bytes.hexString()   // the address's 12 digits, lowercase, no colons
        let node = "swift_ble_\(sanitized(topics.gatewayID))_\(hex)"
        let address = record.address.address.description
        return quantities(of: record).map { q in
            var fields: [(key: String, value: JSONValue)] = [
                ("name", .string(q.name)),
                ("unique_id", .string("\(node)_\(q.objectID)")),
                ("object_id", .string("\(node)_\(q.objectID)")),
                ("state_topic", .string(topics.device(address))),
                ("value_template", .string(q.template)),
                ("unit_of_measurement", .string(q.unit)),
            ]
            if let deviceClass = q.deviceClass { fields.append(("device_class", .string(deviceClass))) }
            fields += [
                ("state_class", "measurement"),
                ("availability_topic", .string(topics.status)),
                ("payload_available", "online"),
                ("payload_not_available", "offline"),
                ("device", .object([
                    ("identifiers", .array([.string("swift_ble_\(hex)")])),
                    ("connections", .array([.array(["bluetooth", .string(address.lowercased())])])),
                    ("name", .string(record.name ?? address)),
                    ("manufacturer", "swift-ble gateway"),
                    ("via_device", .string("swift_ble_gateway_\(sanitized(topics.gatewayID))")),
                ])),
            ]
            return Sensor(topic: "\(discoveryPrefix)/sensor/\(node)/\(q.objectID)/config", payload: JSONValue.object(fields).encoded())
        }
    }

    /// Home Assistant's node and object identifiers take `[a-zA-Z0-9_-]`.
    static func sanitized(_ text: String) -> String {
        String(text.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") ? $0 : "_" })
    }
}

extension JSONValue {
    /// An object's members (empty for anything else).
    var members: [(String, JSONValue)] {
        if case .object(let members) = self { return members.map { ($0.key, $0.value) } }
        return []
    }
}
