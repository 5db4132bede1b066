import BLEFiles
import BLEWire

/// A characteristic value decoded by what this module knows of the characteristic: the profile's own value type,
/// printable as text (``description``) and as typed JSON fields (``jsonFields``).
public enum DecodedValue: Sendable, Hashable, CustomStringConvertible {
    /// Heart Rate Measurement (0x2A37).
    case heartRateMeasurement(HeartRateMeasurement)
    /// Body Sensor Location (0x2A38).
    case bodySensorLocation(BodySensorLocation)
    /// Battery Level (0x2A19).
    case batteryLevel(BatteryLevel)
    /// Blood Pressure Measurement (0x2A35), or Intermediate Cuff Pressure (0x2A36) when `intermediate`.
    case bloodPressure(BloodPressureMeasurement, intermediate: Bool)
    /// Temperature Measurement (0x2A1C), or Intermediate Temperature (0x2A1E) when `intermediate`.
    case temperature(TemperatureMeasurement, intermediate: Bool)
    /// Temperature Type (0x2A1D).
    case temperatureType(TemperatureType)
    /// Measurement Interval (0x2A21), in seconds (0: no periodic measurement).
    case measurementInterval(UInt16)
    /// Weight Measurement (0x2A9D).
    case weight(WeightMeasurement)
    /// Body Composition Measurement (0x2A9C).
    case bodyComposition(BodyCompositionMeasurement)
    /// Glucose Measurement (0x2A18).
    case glucose(GlucoseMeasurement)
    /// Glucose Measurement Context (0x2A34).
    case glucoseContext(GlucoseMeasurementContext)
    /// A Record Access Control Point response (0x2A52), as the server indicates it.
    case recordAccessResponse(RACPResponse)
    /// A feature bit field (Blood Pressure 0x2A49, Glucose 0x2A51, Weight Scale 0x2A9E, Body Composition 0x2A9B): the
    /// characteristic and its bits.
    case features(BluetoothUUID, UInt32)
    /// A UTF-8 string: Device Name (0x2A00) and the Device Information strings (0x2A24–0x2A29).
    case text(BluetoothUUID, String)
    /// Appearance (0x2A01).
    case appearance(UInt16)
    /// System ID (0x2A23).
    case systemID(SystemID)
    /// PnP ID (0x2A50).
    case pnpID(PnPID)
    /// Date Time (0x2A08).
    case dateTime(DateTime)
    /// Current Time (0x2A2B).
    case currentTime(CurrentTime)
    /// Local Time Information (0x2A0F).
    case localTime(LocalTimeInformation)
    /// Reference Time Information (0x2A14).
    case referenceTime(ReferenceTimeInformation)
    /// The fitness band's step count (0xFF06).
    case bandSteps(FitnessBandSteps)
    /// The fitness band's battery (0xFF0C).
    case bandBattery(FitnessBandBattery)
    /// The fitness band's device information (0xFF01).
    case bandDeviceInfo(FitnessBandDeviceInfo)
    /// The LED piano's key events (0xFFE2): MIDI note-on and note-off messages.
    case pianoKeys([MIDIMessage])
    /// The health scale's stream (`7D2E0002-…`): the readings the bytes so far completed (none while a frame is still
    /// arriving), framing errors skipped over, and how many bytes wait for the rest of their frame.
    case scaleReadings([HealthScaleReading], framingErrors: [FramingError], buffered: Int)

    /// The value in words, units included: `72 bpm, contact detected, energy 120 kJ, RR 0.814 s 0.826 s`.
    public var description: String {
        switch self {
        case .heartRateMeasurement(let m):
            var parts = ["\(m.beatsPerMinute) bpm"]
            switch m.sensorContact {
            case .detected: parts.append("contact detected")
            case .notDetected: parts.append("no contact")
            case .notSupported: break
            }
            if let energy = m.energyExpended { parts.append("energy \(energy) kJ") }
            if let rr = m.rrIntervalSeconds, !rr.isEmpty { parts.append("RR " + rr.map { "\(fixed($0, 3)) s" }.joined(separator: " ")) }
            return parts.joined(separator: ", ")
        case .bodySensorLocation(let location):
            return Self.locationNames[Int(location.rawValue)] ?? "location \(location.rawValue)"
        case .batteryLevel(let level):
            return "battery \(level.percent) %"
        case .bloodPressure(let m, let intermediate):
            let unit = m.unit == .mmHg ? "mmHg" : "kPa"
            var parts = intermediate ? ["cuff \(m.systolic) \(unit)"] : ["\(m.systolic)/\(m.diastolic) \(unit)", "mean \(m.meanArterialPressure) \(unit)"]
            if let pulse = m.pulseRate { parts.append("pulse \(pulse) /min") }
            if let user = m.userID { parts.append("user \(user)") }
            if let time = m.timestamp { parts.append("at \(time)") }
            if let status = m.status, !Self.statusNames(status).isEmpty { parts.append(Self.statusNames(status).joined(separator: ", ")) }
            return parts.joined(separator: ", ")
        case .temperature(let m, let intermediate):
            var parts = ["\(intermediate ? "intermediate " : "")\(m.temperature) \(m.unit == .celsius ? "°C" : "°F")"]
            if let type = m.temperatureType { parts.append(Self.temperatureTypeName(type)) }
            if let time = m.timestamp { parts.append("at \(time)") }
            return parts.joined(separator: ", ")
        case .temperatureType(let type):
            return Self.temperatureTypeName(type)
        case .measurementInterval(let seconds):
            return seconds == 0 ? "no periodic measurement" : "every \(seconds) s"
        case .weight(let m):
            guard let weight = m.weight else { return "measurement unsuccessful" }
            var parts = ["\(fixed(weight, 3)) \(m.units == .si ? "kg" : "lb")"]
            if let bmi = m.bmi { parts.append("BMI \(fixed(bmi, 1))") }
            if let height = m.height { parts.append("height \(fixed(height, m.units == .si ? 3 : 1)) \(m.units == .si ? "m" : "in")") }
            if let user = m.userID { parts.append("user \(user)") }
            if let time = m.timestamp { parts.append("at \(time)") }
            return parts.joined(separator: ", ")
        case .bodyComposition(let m):
            return Self.compositionParts(m).map { "\($0.name.replacingOccurrences(of: "_", with: " ")) \(fixed($0.value, $0.decimals))\($0.unit)" }
                .joined(separator: ", ") + (m.timestamp.map { ", at \($0)" } ?? "")
        case .glucose(let m):
            var parts = ["record #\(m.sequenceNumber) at \(m.baseTime)"]
            if let offset = m.timeOffset, offset != 0 { parts.append("offset \(offset) min") }
            if let c = m.concentration {
                parts.append(c.unit == .kilogramsPerLitre ? "\(fixed(c.milligramsPerDecilitre, 1)) mg/dL" : "\(c.value) mol/L")
                parts.append("sample type \(c.type), location \(c.location)")
            }
            if let status = m.sensorStatus, status.rawValue != 0 { parts.append("sensor status 0x\(hex(UInt32(status.rawValue), 4))") }
            if m.hasContext { parts.append("context follows") }
            return parts.joined(separator: ", ")
        case .glucoseContext(let c):
            var parts = ["context of record #\(c.sequenceNumber)"]
            if let carbohydrate = c.carbohydrate { parts.append("carbohydrate \(carbohydrate.id): \(fixed(carbohydrate.kilograms.doubleValue * 1000, 1)) g") }
            if let meal = c.meal { parts.append("meal \(meal)") }
            if let tester = c.testerAndHealth { parts.append("tester \(tester & 0x0F), health \(tester >> 4)") }
            if let exercise = c.exercise { parts.append("exercise \(exercise.durationSeconds) s at \(exercise.intensityPercent) %") }
            if let medication = c.medication { parts.append("medication \(medication.id): \(medication.amount) \(medication.inLitres ? "L" : "kg")") }
            if let hbA1c = c.hbA1c { parts.append("HbA1c \(hbA1c) %") }
            return parts.joined(separator: ", ")
        case .recordAccessResponse(let response):
            switch response {
            case .numberOfRecords(let count): return "\(count) stored record(s)"
            case .response(let request, let code): return "\(request): \(code)"
            }
        case .features(_, let bits):
            return "features 0x\(hex(bits, 8))"
        case .text(_, let text):
            return "\"\(text)\""
        case .appearance(let value):
            return "appearance 0x\(hex(UInt32(value), 4)) (category \(value >> 6), subcategory \(value & 0x3F))"
        case .systemID(let id):
            return "manufacturer 0x\(hex(UInt32(truncatingIfNeeded: id.manufacturerIdentifier >> 32), 2))\(hex(UInt32(truncatingIfNeeded: id.manufacturerIdentifier), 8)), OUI 0x\(hex(id.organizationallyUniqueIdentifier, 6))"
        case .pnpID(let id):
            let source = id.vendorIDSource == .bluetoothSIG ? "Bluetooth SIG" : id.vendorIDSource == .usbImplementersForum ? "USB-IF" : "source \(id.vendorIDSource.rawValue)"
            return "vendor 0x\(hex(UInt32(id.vendorID), 4)) (\(source)), product 0x\(hex(UInt32(id.productID), 4)), version 0x\(hex(UInt32(id.productVersion), 4))"
        case .dateTime(let time):
            return "\(time)"
        case .currentTime(let time):
            var text = "\(time.dateTime) \(Self.dayNames[Int(time.dayOfWeek.rawValue)] ?? "day \(time.dayOfWeek.rawValue)"), \(time.fractions256)/256 s"
            if !Self.adjustNames(time.adjustReason).isEmpty { text += ", adjusted: " + Self.adjustNames(time.adjustReason).joined(separator: ", ") }
            return text
        case .localTime(let info):
            let offset = info.utcOffsetMinutes.map { "UTC\($0 < 0 ? "-" : "+")\(pad(abs($0) / 60)):\(pad(abs($0) % 60))" } ?? "time zone unknown"
            return offset + (info.dstMinutes.map { ", DST +\($0) min" } ?? ", DST unknown")
        case .referenceTime(let info):
            let accuracy = info.accuracySeconds.map { "accuracy \(fixed($0, 3)) s" } ?? "accuracy unknown"
            return "source \(Self.sourceNames[Int(info.source.rawValue)] ?? "\(info.source.rawValue)"), \(accuracy), updated \(info.daysSinceUpdate) day(s) \(info.hoursSinceUpdate) hour(s) ago"
        case .bandSteps(let steps):
            return "\(steps.count) steps"
        case .bandBattery(let battery):
            let t = battery.lastCharged
            return "battery \(battery.percent) %, \(Self.bandStateName(battery.state)), last charged \(t.year)-\(pad(Int(t.month)))-\(pad(Int(t.day))) \(pad(Int(t.hour))):\(pad(Int(t.minute))):\(pad(Int(t.second))), \(battery.chargeCycles) cycles"
        case .bandDeviceInfo(let info):
            return "device ID \(info.deviceID.hexString()), profile \(Self.dotted(info.profileVersion)), firmware \(Self.dotted(info.firmwareVersion))"
        case .pianoKeys(let messages):
            return messages.map { message in
                switch message {
                case .noteOn(let channel, let note, let velocity): "note on \(Self.noteName(note)) (\(note)) velocity \(velocity) channel \(channel)"
                case .noteOff(let channel, let note, _): "note off \(Self.noteName(note)) (\(note)) channel \(channel)"
                }
            }.joined(separator: "; ")
        case .scaleReadings(let readings, let errors, let buffered):
            var parts = readings.map { "reading #\($0.sequence): \(fixed(Double($0.weightGrams) / 1000, 3)) kg, impedance \($0.impedanceOhms) Ω" }
            parts += errors.map { "framing error: \($0.reason)" }
            if buffered > 0 { parts.append("\(buffered) byte(s) of a frame waiting") }
            return parts.isEmpty ? "no complete frame yet" : parts.joined(separator: "; ")
        }
    }

    /// The value as JSON fields in JSON's own types (numbers as numbers, with their units in the field names), with
    /// `"type"` naming what it is: for example `{"type": "heart_rate_measurement", "bpm": 72, "sensor_contact":
    /// "detected", "energy_kj": 120, "rr_intervals_s": [0.814, 0.826]}`.
    public var jsonFields: [(key: String, value: JSONValue)] {
        switch self {
        case .heartRateMeasurement(let m):
            var fields: [(String, JSONValue)] = [("type", "heart_rate_measurement"), ("bpm", .integer(m.beatsPerMinute))]
            switch m.sensorContact {
            case .detected: fields.append(("sensor_contact", "detected"))
            case .notDetected: fields.append(("sensor_contact", "not_detected"))
            case .notSupported: fields.append(("sensor_contact", "not_supported"))
            }
            if let energy = m.energyExpended { fields.append(("energy_kj", .integer(energy))) }
            if let rr = m.rrIntervalSeconds { fields.append(("rr_intervals_s", .array(rr.map { .number($0, decimals: 3) }))) }
            return pairs(fields)
        case .bodySensorLocation(let location):
            return pairs([("type", "body_sensor_location"), ("location", .integer(location.rawValue)),
                          ("name", .string(Self.locationNames[Int(location.rawValue)] ?? "unknown"))])
        case .batteryLevel(let level):
            return pairs([("type", "battery_level"), ("percent", .integer(level.percent))])
        case .bloodPressure(let m, let intermediate):
            var fields: [(String, JSONValue)] = [("type", intermediate ? "intermediate_cuff_pressure" : "blood_pressure_measurement"),
                                                 ("unit", m.unit == .mmHg ? "mmHg" : "kPa")]
            if intermediate {
                fields.append(("cuff_pressure", json(m.systolic)))
            } else {
                fields += [("systolic", json(m.systolic)), ("diastolic", json(m.diastolic)), ("mean_arterial_pressure", json(m.meanArterialPressure))]
            }
            if let pulse = m.pulseRate { fields.append(("pulse_rate", json(pulse))) }
            if let user = m.userID { fields.append(("user", .integer(user))) }
            if let time = m.timestamp { fields.append(("timestamp", json(time))) }
            if let status = m.status { fields.append(("status", .array(Self.statusNames(status).map(JSONValue.string)))) }
            return pairs(fields)
        case .temperature(let m, let intermediate):
            var fields: [(String, JSONValue)] = [("type", intermediate ? "intermediate_temperature" : "temperature_measurement"),
                                                 ("temperature", json(m.temperature)), ("unit", m.unit == .celsius ? "celsius" : "fahrenheit")]
            if let type = m.temperatureType { fields.append(("temperature_type", .string(Self.temperatureTypeName(type)))) }
            if let time = m.timestamp { fields.append(("timestamp", json(time))) }
            return pairs(fields)
        case .temperatureType(let type):
            return pairs([("type", "temperature_type"), ("value", .integer(type.rawValue)), ("name", .string(Self.temperatureTypeName(type)))])
        case .measurementInterval(let seconds):
            return pairs([("type", "measurement_interval"), ("seconds", .integer(seconds))])
        case .weight(let m):
            let si = m.units == .si
            var fields: [(String, JSONValue)] = [("type", "weight_measurement"), ("unit", si ? "kg" : "lb"),
                                                 ("weight", m.weight.map { .number($0, decimals: 3) } ?? .null)]
            if let bmi = m.bmi { fields.append(("bmi", .number(bmi, decimals: 1))) }
            if let height = m.height { fields += [("height", .number(height, decimals: si ? 3 : 1)), ("height_unit", si ? "m" : "in")] }
            if let user = m.userID { fields.append(("user", .integer(user))) }
            if let time = m.timestamp { fields.append(("timestamp", json(time))) }
            return pairs(fields)
        case .bodyComposition(let m):
            var fields: [(String, JSONValue)] = [("type", "body_composition_measurement"), ("units", m.units == .si ? "si" : "imperial")]
            fields += Self.compositionParts(m).map { ($0.name, .number($0.value, decimals: $0.decimals)) }
            if let user = m.userID { fields.append(("user", .integer(user))) }
            if let time = m.timestamp { fields.append(("timestamp", json(time))) }
            return pairs(fields)
        case .glucose(let m):
            var fields: [(String, JSONValue)] = [("type", "glucose_measurement"), ("sequence", .integer(m.sequenceNumber)), ("base_time", json(m.baseTime))]
            if let offset = m.timeOffset { fields.append(("time_offset_min", .integer(offset))) }
            if let c = m.concentration {
                if c.unit == .kilogramsPerLitre {
                    fields.append(("mg_dl", .number(c.milligramsPerDecilitre, decimals: 1)))
                } else {
                    fields.append(("mol_l", json(c.value)))
                }
                fields += [("sample_type", .integer(c.type)), ("sample_location", .integer(c.location))]
            }
            if let status = m.sensorStatus { fields.append(("sensor_status", .integer(status.rawValue))) }
            fields.append(("context_follows", .bool(m.hasContext)))
            return pairs(fields)
        case .glucoseContext(let c):
            var fields: [(String, JSONValue)] = [("type", "glucose_measurement_context"), ("sequence", .integer(c.sequenceNumber))]
            if let carbohydrate = c.carbohydrate {
                fields += [("carbohydrate_id", .integer(carbohydrate.id)), ("carbohydrate_g", .number(carbohydrate.kilograms.doubleValue * 1000, decimals: 1))]
            }
            if let meal = c.meal { fields.append(("meal", .integer(meal))) }
            if let tester = c.testerAndHealth { fields += [("tester", .integer(tester & 0x0F)), ("health", .integer(tester >> 4))] }
            if let exercise = c.exercise { fields += [("exercise_s", .integer(exercise.durationSeconds)), ("exercise_intensity_percent", .integer(exercise.intensityPercent))] }
            if let hbA1c = c.hbA1c { fields.append(("hba1c_percent", json(hbA1c))) }
            return pairs(fields)
        case .recordAccessResponse(let response):
            switch response {
            case .numberOfRecords(let count):
                return pairs([("type", "racp_number_of_records"), ("records", .integer(count))])
            case .response(let request, let code):
                return pairs([("type", "racp_response"), ("request", .string(request.description)), ("request_op_code", .integer(request.rawValue)),
                              ("response", .string(code.description)), ("response_code", .integer(code.rawValue))])
            }
        case .features(let uuid, let bits):
            return pairs([("type", "features"), ("characteristic", .string(uuid.description)), ("bits", .integer(bits))])
        case .text(_, let text):
            return pairs([("type", "text"), ("text", .string(text))])
        case .appearance(let value):
            return pairs([("type", "appearance"), ("value", .integer(value)), ("category", .integer(value >> 6)), ("subcategory", .integer(value & 0x3F))])
        case .systemID(let id):
            return pairs([("type", "system_id"), ("manufacturer_identifier", .integer(id.manufacturerIdentifier)),
                          ("oui", .integer(id.organizationallyUniqueIdentifier))])
        case .pnpID(let id):
            return pairs([("type", "pnp_id"), ("vendor_id_source", .integer(id.vendorIDSource.rawValue)), ("vendor_id", .integer(id.vendorID)),
                          ("product_id", .integer(id.productID)), ("product_version", .integer(id.productVersion))])
        case .dateTime(let time):
            return pairs([("type", "date_time"), ("date_time", json(time))])
        case .currentTime(let time):
            return pairs([("type", "current_time"), ("date_time", json(time.dateTime)), ("day_of_week", .integer(time.dayOfWeek.rawValue)),
                          ("fractions256", .integer(time.fractions256)), ("adjust_reason", .array(Self.adjustNames(time.adjustReason).map(JSONValue.string)))])
        case .localTime(let info):
            return pairs([("type", "local_time_information"), ("utc_offset_min", info.utcOffsetMinutes.map { .int($0) } ?? .null),
                          ("dst_min", info.dstMinutes.map { .int($0) } ?? .null)])
        case .referenceTime(let info):
            return pairs([("type", "reference_time_information"), ("source", .integer(info.source.rawValue)),
                          ("accuracy_s", info.accuracySeconds.map { .number($0, decimals: 3) } ?? .null),
                          ("days_since_update", .integer(info.daysSinceUpdate)), ("hours_since_update", .integer(info.hoursSinceUpdate))])
        case .bandSteps(let steps):
            return pairs([("type", "band_steps"), ("steps", .integer(steps.count))])
        case .bandBattery(let battery):
            return pairs([("type", "band_battery"), ("percent", .integer(battery.percent)), ("state", .string(Self.bandStateName(battery.state))),
                          ("charge_cycles", .integer(battery.chargeCycles))])
        case .bandDeviceInfo(let info):
            return pairs([("type", "band_device_info"), ("device_id", .string(info.deviceID.hexString())),
                          ("profile_version", .string(Self.dotted(info.profileVersion))), ("firmware_version", .string(Self.dotted(info.firmwareVersion)))])
        case .pianoKeys(let messages):
            return pairs([("type", "piano_keys"), ("events", .array(messages.map { message in
                switch message {
                case .noteOn(let channel, let note, let velocity):
                    .object([("event", "note_on"), ("note", .integer(note)), ("name", .string(Self.noteName(note))), ("velocity", .integer(velocity)), ("channel", .integer(channel))])
                case .noteOff(let channel, let note, let velocity):
                    .object([("event", "note_off"), ("note", .integer(note)), ("name", .string(Self.noteName(note))), ("velocity", .integer(velocity)), ("channel", .integer(channel))])
                }
            }))])
        case .scaleReadings(let readings, let errors, let buffered):
            return pairs([("type", "scale_readings"), ("readings", .array(readings.map {
                .object([("sequence", .integer($0.sequence)), ("weight_kg", .number(Double($0.weightGrams) / 1000, decimals: 3)), ("impedance_ohm", .integer($0.impedanceOhms))])
            })), ("framing_errors", .array(errors.map { .string($0.reason) })), ("buffered", .int(buffered))])
        }
    }

    // MARK: Names

    static let locationNames = [0: "other", 1: "chest", 2: "wrist", 3: "finger", 4: "hand", 5: "ear lobe", 6: "foot"]
    static let dayNames = [1: "Monday", 2: "Tuesday", 3: "Wednesday", 4: "Thursday", 5: "Friday", 6: "Saturday", 7: "Sunday"]
    static let sourceNames = [0: "unknown", 1: "NTP", 2: "GPS", 3: "radio time signal", 4: "manual", 5: "atomic clock", 6: "cellular network"]

    static func temperatureTypeName(_ type: TemperatureType) -> String {
        let names = [1: "armpit", 2: "body", 3: "ear", 4: "finger", 5: "gastro-intestinal tract", 6: "mouth", 7: "rectum", 8: "toe", 9: "tympanum"]
        return names[Int(type.rawValue)] ?? "type \(type.rawValue)"
    }

    static func statusNames(_ status: BloodPressureMeasurementStatus) -> [String] {
        var names: [String] = []
        if status.contains(.bodyMovement) { names.append("body movement") }
        if status.contains(.cuffTooLoose) { names.append("cuff too loose") }
        if status.contains(.irregularPulse) { names.append("irregular pulse") }
        if status.contains(.improperPosition) { names.append("improper position") }
        switch status.pulseRateRange {
        case .withinRange: names.append("pulse within range")
        case .exceedsUpperLimit: names.append("pulse over the upper limit")
        case .belowLowerLimit: names.append("pulse under the lower limit")
        default: break
        }
        return names
    }

    static func adjustNames(_ reason: CurrentTime.AdjustReason) -> [String] {
        [(CurrentTime.AdjustReason.manualTimeUpdate, "manual"), (.externalReferenceTimeUpdate, "external reference"),
         (.timeZoneChange, "time zone"), (.dstChange, "DST")].filter { reason.contains($0.0) }.map(\.1)
    }

    static func bandStateName(_ state: FitnessBandBattery.State) -> String {
        switch state {
        case .low: "low"
        case .charging: "charging"
        case .full: "full"
        case .notCharging: "not charging"
        case .other(let value): "state \(value)"
        }
    }

    /// `0x01020304` as `1.2.3.4`.
    static func dotted(_ version: UInt32) -> String {
        [version >> 24, version >> 16 & 0xFF, version >> 8 & 0xFF, version & 0xFF].map(String.init).joined(separator: ".")
    }

    /// MIDI note 60 is C4.
    static func noteName(_ note: UInt8) -> String {
        let names = ["C", "C#", "D", "D#", "E", "F", "F#", "G", "G#", "A", "A#", "B"]
        return "\(names[Int(note % 12)])\(Int(note / 12) - 1)"
    }

    /// A body composition measurement's fields: name, value, decimals and unit (text).
    static func compositionParts(_ m: BodyCompositionMeasurement) -> [(name: String, value: Double, decimals: Int, unit: String)] {
        let si = m.units == .si
        let mass = si ? " kg" : " lb"
        func massValue(_ steps: UInt16) -> Double { Double(steps) * m.units.massResolution }
        var parts: [(String, Double, Int, String)] = [("body_fat_percent", Double(m.bodyFatPercentage) / 10, 1, " %")]
        if let v = m.basalMetabolism { parts.append(("basal_metabolism_kj", Double(v), 0, " kJ")) }
        if let v = m.musclePercentage { parts.append(("muscle_percent", Double(v) / 10, 1, " %")) }
        if let v = m.muscleMass { parts.append(("muscle_mass", massValue(v), 2, mass)) }
        if let v = m.fatFreeMass { parts.append(("fat_free_mass", massValue(v), 2, mass)) }
        if let v = m.softLeanMass { parts.append(("soft_lean_mass", massValue(v), 2, mass)) }
        if let v = m.bodyWaterMass { parts.append(("body_water_mass", massValue(v), 2, mass)) }
        if let v = m.impedance { parts.append(("impedance_ohm", Double(v) / 10, 1, " Ω")) }
        if let v = m.weight { parts.append(("weight", massValue(v), 2, mass)) }
        if let v = m.height { parts.append(("height", Double(v) * m.units.heightResolution, si ? 3 : 1, si ? " m" : " in")) }
        return parts
    }
}

/// Decodes characteristic values by their UUID, with what this module's profiles know: the SIG's standard
/// characteristics of the services it implements (Heart Rate, Battery, Blood Pressure, Health Thermometer, Weight Scale,
/// Body Composition, Glucose with its Record Access Control Point, Device Information, Current Time, Device Name and
/// Appearance) and the tutorials' vendor devices (the fitness band's steps, battery and device information, the LED
/// piano's key events, the health scale's framed stream, reassembled across values).
///
/// ```swift
/// var decoder = CharacteristicDecoder()
/// for await value in try await peripheral.notifications(for: measurement) {
///     if let decoded = try? decoder.decode(uuid: measurement.uuid, value: value) { print(decoded) }   // 72 bpm, contact detected, …
/// }
/// ```
///
/// Malformed bytes throw the ``WireError`` of the profile's codec; nothing traps on a peer's bytes.
public struct CharacteristicDecoder: Sendable {
    private var scale = HealthFrameReassembler()

    /// A decoder; it keeps the health scale's partial frames between values.
    public init() {}

    /// Whether the decoder knows `uuid`.
    public static func knows(_ uuid: BluetoothUUID) -> Bool {
        uuid == HealthScale.stream || stateless.contains(uuid)
    }

    /// Decodes one value of characteristic `uuid`; `nil` when the decoder does not know the characteristic. Values of
    /// the health scale's stream are appended to the frames in progress (use ``decode(uuid:value:)`` on one decoder for
    /// one stream).
    public mutating func decode(uuid: BluetoothUUID, value: [UInt8]) throws(WireError) -> DecodedValue? {
        guard uuid == HealthScale.stream else { return try Self.decode(uuid: uuid, value: value) }
        var readings: [HealthScaleReading] = []
        var errors: [FramingError] = []
        for result in scale.append(value) {
            switch result {
            case .success(let frame):
                readings.append(try HealthScaleReading(frame: frame))
            case .failure(let error):
                errors.append(error)
            }
        }
        return .scaleReadings(readings, framingErrors: errors, buffered: scale.bufferedCount)
    }

    /// Decodes one value of characteristic `uuid` on its own; `nil` when the decoder does not know the characteristic
    /// (the health scale's stream needs a decoder that remembers: ``decode(uuid:value:)``, the instance method).
    public static func decode(uuid: BluetoothUUID, value: [UInt8]) throws(WireError) -> DecodedValue? {
        try decodeKnown(uuid, value)
    }

    /// The characteristics a value of which decodes on its own.
    private static let textCharacteristics: Set<BluetoothUUID> = [
        BluetoothUUID(0x2A00), DeviceInformationService.manufacturerName, DeviceInformationService.modelNumber,
        DeviceInformationService.serialNumber, DeviceInformationService.hardwareRevision,
        DeviceInformationService.firmwareRevision, DeviceInformationService.softwareRevision,
    ]

    private static let stateless: Set<BluetoothUUID> = textCharacteristics.union([
        HeartRateService.measurement,
        HeartRateService.bodySensorLocation,
        BatteryService.batteryLevel,
        BloodPressureService.measurement,
        BloodPressureService.intermediateCuffPressure,
        HealthThermometerService.temperatureMeasurement,
        HealthThermometerService.intermediateTemperature,
        HealthThermometerService.temperatureType,
        HealthThermometerService.measurementInterval,
        WeightScaleService.measurement,
        BodyCompositionService.measurement,
        GlucoseService.measurement,
        GlucoseService.measurementContext,
        GlucoseService.recordAccessControlPoint,
        BloodPressureService.feature,
        GlucoseService.feature,
        WeightScaleService.feature,
        BodyCompositionService.feature,
        BluetoothUUID(0x2A01),
        DeviceInformationService.systemID,
        DeviceInformationService.pnpID,
        DateTime.uuid,
        CurrentTimeService.currentTime,
        CurrentTimeService.localTimeInformation,
        CurrentTimeService.referenceTimeInformation,
        FitnessBand.steps,
        FitnessBand.battery,
        FitnessBand.deviceInfo,
        LEDPiano.keyEvents,
    ])

    private static func decodeKnown(_ uuid: BluetoothUUID, _ value: [UInt8]) throws(WireError) -> DecodedValue? {
        if textCharacteristics.contains(uuid) { return .text(uuid, try utf8(value)) }
        switch uuid {
        case HeartRateService.measurement: return .heartRateMeasurement(try HeartRateMeasurement(bytes: value))
        case HeartRateService.bodySensorLocation: return .bodySensorLocation(try BodySensorLocation(bytes: value))
        case BatteryService.batteryLevel: return .batteryLevel(try BatteryLevel(bytes: value))
        case BloodPressureService.measurement: return .bloodPressure(try BloodPressureMeasurement(bytes: value), intermediate: false)
        case BloodPressureService.intermediateCuffPressure: return .bloodPressure(try BloodPressureMeasurement(bytes: value), intermediate: true)
        case HealthThermometerService.temperatureMeasurement: return .temperature(try TemperatureMeasurement(bytes: value), intermediate: false)
        case HealthThermometerService.intermediateTemperature: return .temperature(try TemperatureMeasurement(bytes: value), intermediate: true)
        case HealthThermometerService.temperatureType: return .temperatureType(try TemperatureType(bytes: value))
        case HealthThermometerService.measurementInterval: return .measurementInterval(try uint16(value, "Measurement Interval"))
        case WeightScaleService.measurement: return .weight(try WeightMeasurement(bytes: value))
        case BodyCompositionService.measurement: return .bodyComposition(try BodyCompositionMeasurement(bytes: value))
        case GlucoseService.measurement: return .glucose(try GlucoseMeasurement(bytes: value))
        case GlucoseService.measurementContext: return .glucoseContext(try GlucoseMeasurementContext(bytes: value))
        case GlucoseService.recordAccessControlPoint: return .recordAccessResponse(try RACPResponse(bytes: value))
        case BloodPressureService.feature: return .features(BloodPressureService.feature, UInt32(try uint16(value, "Blood Pressure Feature")))
        case GlucoseService.feature: return .features(GlucoseService.feature, UInt32(try uint16(value, "Glucose Feature")))
        case WeightScaleService.feature: return .features(WeightScaleService.feature, try uint32(value, "Weight Scale Feature"))
        case BodyCompositionService.feature: return .features(BodyCompositionService.feature, try uint32(value, "Body Composition Feature"))
        case BluetoothUUID(0x2A01): return .appearance(try uint16(value, "Appearance"))
        case DeviceInformationService.systemID: return .systemID(try SystemID(bytes: value))
        case DeviceInformationService.pnpID: return .pnpID(try PnPID(bytes: value))
        case DateTime.uuid: return .dateTime(try DateTime(bytes: value))
        case CurrentTimeService.currentTime: return .currentTime(try CurrentTime(bytes: value))
        case CurrentTimeService.localTimeInformation: return .localTime(try LocalTimeInformation(bytes: value))
        case CurrentTimeService.referenceTimeInformation: return .referenceTime(try ReferenceTimeInformation(bytes: value))
        case FitnessBand.steps: return .bandSteps(try FitnessBandSteps(bytes: value))
        case FitnessBand.battery: return .bandBattery(try FitnessBandBattery(bytes: value))
        case FitnessBand.deviceInfo: return .bandDeviceInfo(try FitnessBandDeviceInfo(bytes: value))
        case LEDPiano.keyEvents: return .pianoKeys(try MIDIMessage.messages(in: value))
        default: return nil
        }
    }
}

// MARK: Helpers

private func uint16(_ bytes: [UInt8], _ what: String) throws(WireError) -> UInt16 {
    var reader = ByteReader(bytes)
    let value = try reader.readUInt16(what)
    try reader.expectEnd(what)
    return value
}

private func uint32(_ bytes: [UInt8], _ what: String) throws(WireError) -> UInt32 {
    var reader = ByteReader(bytes)
    let value = try reader.readUInt32(what)
    try reader.expectEnd(what)
    return value
}

/// A UTF-8 string (a trailing NUL, as some devices send, dropped); invalid UTF-8 is an error.
private func utf8(_ bytes: [UInt8]) throws(WireError) -> String {
    var bytes = bytes
    while bytes.last == 0 { bytes.removeLast() }
    guard let text = String(validating: bytes, as: UTF8.self) else { throw WireError(.invalidValue, "string: not UTF-8: \(bytes.hexString())") }
    return text
}

private func pairs(_ fields: [(String, JSONValue)]) -> [(key: String, value: JSONValue)] {
    fields.map { (key: $0.0, value: $0.1) }
}

/// A medical float as a JSON number (NaN, NRes and the infinities, which JSON has no number for, as their names).
private func json(_ value: SFloat) -> JSONValue {
    value.category == .finite ? .number(value.doubleValue, decimals: max(0, -value.exponent)) : .string(value.description)
}

private func json(_ value: MedFloat) -> JSONValue {
    value.category == .finite ? .number(value.doubleValue, decimals: max(0, -value.exponent)) : .string(value.description)
}

/// A date-time as ISO 8601 text (`2026-01-01T07:30:00`; zero fields as sent).
private func json(_ time: DateTime) -> JSONValue {
    .string("\(time.year)-\(pad(Int(time.month)))-\(pad(Int(time.day)))T\(pad(Int(time.hours))):\(pad(Int(time.minutes))):\(pad(Int(time.seconds)))")
}

private func pad(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }

private func hex(_ value: UInt32, _ digits: Int) -> String {
    let text = String(value, radix: 16, uppercase: true)
    return String(repeating: "0", count: max(0, digits - text.count)) + text
}

/// `value` with `decimals` digits after the point.
private func fixed(_ value: Double, _ decimals: Int) -> String {
    guard value.isFinite else { return "\(value)" }
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let scaled = (abs(value) * scale).rounded()
    guard scaled < 1e15 else { return "\(value)" }
    let whole = Int(scaled)
    let integer = whole / Int(scale)
    let fraction = whole % Int(scale)
    let sign = value < 0 && whole != 0 ? "-" : ""
    guard decimals > 0 else { return "\(sign)\(integer)" }
    let digits = String(fraction)
    return "\(sign)\(integer).\(String(repeating: "0", count: decimals - digits.count))\(digits)"
}
