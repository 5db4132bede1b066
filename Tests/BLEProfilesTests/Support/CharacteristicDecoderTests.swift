import BLE
import BLEFiles
import BLEProfiles
import BLEWire
import Testing

/// The characteristic decoder against byte vectors: what each value decodes to, as text and as typed JSON, and the
/// typed error of malformed bytes.
@Suite struct CharacteristicDecoderTests {
    func decode(_ uuid: BluetoothUUID, _ bytes: [UInt8]) throws -> DecodedValue {
        try #require(try CharacteristicDecoder.decode(uuid: uuid, value: bytes))
    }

    func json(_ value: DecodedValue) -> String { JSONValue.object(value.jsonFields).encoded(sortingKeys: true) }

    @Test func heartRateWithContactEnergyAndRRIntervals() throws {
        // Flags 0x1E: 8-bit rate, contact supported and detected, energy and RR present; 72 bpm, 120 kJ, RR 1024/1024 and 512/1024 s.
        let value = try decode(0x2A37, [0x1E, 0x48, 0x78, 0x00, 0x00, 0x04, 0x00, 0x02])
        #expect(value == .heartRateMeasurement(HeartRateMeasurement(beatsPerMinute: 72, sensorContact: .detected, energyExpended: 120,
                                                                     rrIntervals: [1024, 512])))
        #expect(value.description == "72 bpm, contact detected, energy 120 kJ, RR 1.000 s 0.500 s")
        #expect(json(value) == #"{"bpm":72,"energy_kj":120,"rr_intervals_s":[1.000,0.500],"sensor_contact":"detected","type":"heart_rate_measurement"}"#)
        // The lab device's plain measurement: flags 0, 60 bpm.
        #expect(try decode(0x2A37, [0x00, 0x3C]).description == "60 bpm")
    }

    @Test func bloodPressureWithUnits() throws {
        // mmHg; 120, 80, 93 (SFLOATs, exponent 0).
        let value = try decode(0x2A35, [0x00, 0x78, 0x00, 0x50, 0x00, 0x5D, 0x00])
        #expect(value.description == "120/80 mmHg, mean 93 mmHg")
        #expect(json(value) == #"{"diastolic":80,"mean_arterial_pressure":93,"systolic":120,"type":"blood_pressure_measurement","unit":"mmHg"}"#)
        // kPa, intermediate cuff pressure 16.0 (mantissa 160, exponent -1).
        #expect(try decode(0x2A36, [0x01, 0xA0, 0xF0, 0xFF, 0x07, 0xFF, 0x07]).description == "cuff 16.0 kPa")
    }

    @Test func temperatureWeightAndBattery() throws {
        // 36.8 °C: FLOAT mantissa 368, exponent -1.
        let temperature = try decode(0x2A1C, [0x00, 0x70, 0x01, 0x00, 0xFF])
        #expect(temperature.description == "36.8 °C")
        #expect(json(temperature) == #"{"temperature":36.8,"type":"temperature_measurement","unit":"celsius"}"#)
        // SI, 72.4 kg = 14480 × 0.005 kg.
        let weight = try decode(0x2A9D, [0x00, 0x90, 0x38])
        #expect(weight.description == "72.400 kg")
        #expect(json(weight) == #"{"type":"weight_measurement","unit":"kg","weight":72.400}"#)
        #expect(try decode(0x2A19, [87]).description == "battery 87 %")
        #expect(json(try decode(0x2A19, [87])) == #"{"percent":87,"type":"battery_level"}"#)
    }

    @Test func deviceInformationAndTimes() throws {
        #expect(try decode(0x2A29, Array("Acme".utf8)) == .text(0x2A29, "Acme"))
        #expect(try decode(0x2A29, Array("Acme".utf8) + [0]) == .text(0x2A29, "Acme"))
        let pnp = try decode(0x2A50, [0x01, 0x5F, 0x00, 0x34, 0x12, 0x00, 0x01])
        #expect(pnp.description == "vendor 0x005F (Bluetooth SIG), product 0x1234, version 0x0100")
        #expect(json(pnp) == #"{"product_id":4660,"product_version":256,"type":"pnp_id","vendor_id":95,"vendor_id_source":1}"#)
        let system = try decode(0x2A23, [0x05, 0x04, 0x03, 0x02, 0x01, 0xCC, 0xBB, 0xAA])
        #expect(system.description == "manufacturer 0x0102030405, OUI 0xAABBCC")
        #expect(try decode(0x2A08, [0xEA, 0x07, 0x0B, 0x17, 0x16, 0x00, 0x05]).description == "2026-11-23 22:00:05")
        let now = try decode(0x2A2B, [0xEA, 0x07, 0x0B, 0x17, 0x16, 0x00, 0x05, 0x01, 0x80, 0x02])
        #expect(now.description == "2026-11-23 22:00:05 Monday, 128/256 s, adjusted: external reference")
        #expect(json(now) == #"{"adjust_reason":["external reference"],"date_time":"2026-11-23T22:00:05","day_of_week":1,"fractions256":128,"type":"current_time"}"#)
        #expect(try decode(0x2A0F, [0x04, 0x04]).description == "UTC+01:00, DST +60 min")
    }

    @Test func glucoseRecordAndControlPointResponses() throws {
        // Time offset and concentration present (kg/L), sequence 1, 2026-01-01 11:00:00, 112 mg/dL (SFLOAT 112 × 10^-5), capillary whole blood at a finger.
        let record = try decode(0x2A18, [0x03, 0x01, 0x00, 0xEA, 0x07, 0x01, 0x01, 0x0B, 0x00, 0x00, 0x00, 0x00, 0x70, 0xB0, 0x11])
        #expect(record.description == "record #1 at 2026-01-01 11:00:00, 112.0 mg/dL, sample type 1, location 1")
        #expect(json(record) == #"{"base_time":"2026-01-01T11:00:00","context_follows":false,"mg_dl":112.0,"sample_location":1,"sample_type":1,"sequence":1,"time_offset_min":0,"type":"glucose_measurement"}"#)
        #expect(try decode(0x2A52, [0x06, 0x00, 0x01, 0x01]).description == "report stored records: success")
        #expect(try decode(0x2A52, [0x05, 0x00, 0x0C, 0x00]).description == "12 stored record(s)")
    }

    @Test func vendorDevices() throws {
        #expect(try decode(0xFF06, [0xD2, 0x04, 0x00, 0x00]).description == "1234 steps")
        let keys = try decode(0xFFE2, [0x90, 0x40, 0x45, 0x80, 0x3C, 0x00])
        #expect(keys.description == "note on E4 (64) velocity 69 channel 0; note off C4 (60) channel 0")
    }

    @Test func theScaleStreamIsReassembledAcrossValues() throws {
        let frame: [UInt8] = [0xA5, 0x01, 0x10, 0x00, 0x08, 0x01, 0x00, 0x06, 0x1B, 0x01, 0x00, 0x0D, 0x02, 0x4B, 0x5A]
        let stream = BluetoothUUID("7D2E0002-5C3A-4B8E-9F41-5357424C4553") ?? 0
        var decoder = CharacteristicDecoder()
        let partial = try #require(try decoder.decode(uuid: stream, value: Array(frame.prefix(6))))
        #expect(partial == .scaleReadings([], framingErrors: [], buffered: 6))
        #expect(partial.description == "6 byte(s) of a frame waiting")
        let whole = try #require(try decoder.decode(uuid: stream, value: Array(frame.dropFirst(6))))
        #expect(whole == .scaleReadings([HealthScaleReading(sequence: 1, weightGrams: 72_454, impedanceOhms: 525)], framingErrors: [], buffered: 0))
        #expect(whole.description == "reading #1: 72.454 kg, impedance 525 Ω")
        // On its own, without a decoder that remembers, the stream is not decoded.
        #expect(try CharacteristicDecoder.decode(uuid: stream, value: frame) == nil)
    }

    @Test func malformedBytesThrowTypedErrors() {
        let malformed: [(BluetoothUUID, [UInt8])] = [
            (0x2A37, []), (0x2A37, [0x01, 0x48]), (0x2A19, [101]), (0x2A19, [1, 2]), (0x2A35, [0x00, 0x78]),
            (0x2A29, [0xFF, 0xFE]), (0x2A50, [0x01, 0x5F]), (0x2A2B, [0xEA, 0x07]), (0xFFE2, [0x90, 0x80, 0x00]),
            (0xFFE2, [0x90, 0x40]), (0x2A52, [0x06, 0x01, 0x01, 0x01]), (0x2A18, [0x03, 0x01]),
        ]
        for (uuid, bytes) in malformed {
            #expect(throws: WireError.self, "\(uuid) \(bytes.hexString())") { _ = try CharacteristicDecoder.decode(uuid: uuid, value: bytes) }
        }
        // Every strict prefix of a valid heart-rate measurement with all its fields throws, never traps.
        let full: [UInt8] = [0x1F, 0x48, 0x00, 0x78, 0x00, 0x00, 0x04]
        for count in 0..<5 {
            #expect(throws: WireError.self) { _ = try CharacteristicDecoder.decode(uuid: 0x2A37, value: Array(full.prefix(count))) }
        }
    }

    @Test func unknownCharacteristicsAreLeftAlone() throws {
        #expect(try CharacteristicDecoder.decode(uuid: 0xFFF1, value: [1, 2, 3]) == nil)
        #expect(!CharacteristicDecoder.knows(0xFFF1))
        #expect(CharacteristicDecoder.knows(0x2A37))
    }
}
