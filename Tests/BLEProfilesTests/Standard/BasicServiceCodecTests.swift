import BLEProfiles
import Testing

@Suite struct BatteryAndDeviceInformationCodecTests {
    @Test func batteryLevel() throws {
        #expect(try BatteryLevel(bytes: [0x64]).percent == 100)
        #expect(try BatteryLevel(bytes: [0x00]).percent == 0)
        #expect(BatteryLevel(percent: 42)?.encoded == [0x2A])
        #expect(BatteryLevel(percent: 101) == nil)
        #expect(standardThrows(BatteryLevel.self, [0x65], .invalidValue))
        #expect(standardThrows(BatteryLevel.self, [0xFF], .invalidValue))
        #expect(standardThrows(BatteryLevel.self, [], .truncated))
        #expect(standardThrows(BatteryLevel.self, [0x01, 0x02], .trailingBytes))
    }

    @Test func systemID() throws {
        let bytes: [UInt8] = [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08]
        let id = SystemID(manufacturerIdentifier: 0x05_0403_0201, organizationallyUniqueIdentifier: 0x08_0706)
        #expect(id.encoded == bytes)
        #expect(try SystemID(bytes: bytes) == id)
        #expect(standardThrows(SystemID.self, Array(bytes.prefix(7)), .truncated))
    }

    @Test func pnpID() throws {
        let bytes: [UInt8] = [0x02, 0x5E, 0x04, 0x34, 0x12, 0x00, 0x01]
        let id = PnPID(vendorIDSource: .usbImplementersForum, vendorID: 0x045E, productID: 0x1234, productVersion: 0x0100)
        #expect(id.encoded == bytes)
        #expect(try PnPID(bytes: bytes) == id)
        // A reserved source is kept as sent.
        #expect(try PnPID(bytes: [0x07, 0, 0, 0, 0, 0, 0]).vendorIDSource.rawValue == 7)
        #expect(standardThrows(PnPID.self, Array(bytes.prefix(6)), .truncated))
    }

    @Test func stringsDropNULPaddingAndSurviveInvalidUTF8() {
        #expect(DeviceInformation.decodeString(Array("ACME".utf8) + [0, 0]) == "ACME")
        #expect(DeviceInformation.decodeString([]) == "")
        #expect(DeviceInformation.decodeString([0x41, 0xFF, 0x42]) == "A\u{FFFD}B")
    }
}

@Suite struct HeartRateCodecTests {
    @Test func vectors() throws {
        let vectors: [([UInt8], HeartRateMeasurement)] = [
            ([0x00, 0x48], HeartRateMeasurement(beatsPerMinute: 72)),
            ([0x01, 0x48, 0x00], HeartRateMeasurement(beatsPerMinute: 72, valueFormat: .uint16)),
            ([0x01, 0x2C, 0x01], HeartRateMeasurement(beatsPerMinute: 300)),
            ([0x04, 0x48], HeartRateMeasurement(beatsPerMinute: 72, sensorContact: .notDetected)),
            ([0x06, 0x48], HeartRateMeasurement(beatsPerMinute: 72, sensorContact: .detected)),
            ([0x0E, 0x48, 0x34, 0x12], HeartRateMeasurement(beatsPerMinute: 72, sensorContact: .detected, energyExpended: 0x1234)),
            ([0x16, 0x48, 0x55, 0x03, 0x66, 0x03], HeartRateMeasurement(beatsPerMinute: 72, sensorContact: .detected, rrIntervals: [0x355, 0x366])),
            ([0x10, 0x48], HeartRateMeasurement(beatsPerMinute: 72, rrIntervals: [])),
            ([0x1F, 0x48, 0x00, 0xFF, 0xFF, 0x00, 0x04], HeartRateMeasurement(beatsPerMinute: 72, valueFormat: .uint16, sensorContact: .detected,
                                                                              energyExpended: 0xFFFF, rrIntervals: [1024])),
        ]
        for (bytes, measurement) in vectors {
            #expect(measurement.encoded == bytes, "\(measurement)")
            #expect(try HeartRateMeasurement(bytes: bytes) == measurement, "\(bytes)")
        }
        #expect(try HeartRateMeasurement(bytes: [0x10, 0x48, 0x00, 0x04]).rrIntervalSeconds == [1.0])
    }

    @Test func everyFlagCombinationRoundTrips() throws {
        for format in [HeartRateMeasurement.ValueFormat.uint8, .uint16] {
            for contact in [HeartRateMeasurement.SensorContact.notSupported, .notDetected, .detected] {
                for energy in [nil, UInt16(512)] {
                    for intervals in [nil, [UInt16](), [800, 790, 810]] {
                        let measurement = HeartRateMeasurement(beatsPerMinute: 75, valueFormat: format, sensorContact: contact,
                                                               energyExpended: energy, rrIntervals: intervals)
                        let bytes = measurement.encoded
                        let contactBits: UInt8 = switch contact { case .notSupported: 0; case .notDetected: 0x04; case .detected: 0x06 }
                        let flags: UInt8 = (format == .uint16 ? 1 : 0) | contactBits | (energy != nil ? 0x08 : 0) | (intervals != nil ? 0x10 : 0)
                        #expect(bytes.first == flags)
                        #expect(bytes.count == 1 + (format == .uint16 ? 2 : 1) + (energy != nil ? 2 : 0) + 2 * (intervals?.count ?? 0))
                        #expect(try HeartRateMeasurement(bytes: bytes) == measurement)
                        // Every strict prefix that cuts a field the flags announce is refused.
                        let fixed = 1 + (format == .uint16 ? 2 : 1) + (energy != nil ? 2 : 0)
                        for length in 0..<fixed { #expect(throws: WireError.self) { try HeartRateMeasurement(bytes: bytes.prefix(length)) } }
                    }
                }
            }
        }
    }

    @Test func reservedBitsAndContactWithoutSupportAreTolerated() throws {
        #expect(try HeartRateMeasurement(bytes: [0xE0, 0x3C]) == HeartRateMeasurement(beatsPerMinute: 60))
        #expect(try HeartRateMeasurement(bytes: [0x02, 0x3C]).sensorContact == .notSupported)
    }

    @Test func malformedInputThrows() {
        #expect(standardThrows(HeartRateMeasurement.self, [], .truncated))
        #expect(standardThrows(HeartRateMeasurement.self, [0x01, 0x48], .truncated))
        #expect(standardThrows(HeartRateMeasurement.self, [0x08, 0x48, 0x01], .truncated))
        #expect(standardThrows(HeartRateMeasurement.self, [0x10, 0x48, 0x01, 0x02, 0x03], .lengthMismatch))
        #expect(standardThrows(HeartRateMeasurement.self, [0x00, 0x48, 0x00], .trailingBytes))
    }

    @Test func intervalsThatDoNotFitAreLeftForTheNextMeasurement() throws {
        let measurement = HeartRateMeasurement(beatsPerMinute: 72, energyExpended: 10, rrIntervals: Array(1...10))
        #expect(measurement.encoded.count == 24)
        // 20 bytes (ATT_MTU 23): flags, rate and energy take 4, eight intervals the rest; the oldest go first.
        let (first, leftOver) = measurement.split(maximumLength: 20)
        #expect(first.encoded.count == 20)
        #expect(try HeartRateMeasurement(bytes: first.encoded).rrIntervals == Array(1...8))
        #expect(leftOver == [9, 10])
        // Without energy and with a one-byte rate, nine fit.
        #expect(HeartRateMeasurement(beatsPerMinute: 72, rrIntervals: Array(1...12)).split(maximumLength: 20).leftOver == [10, 11, 12])
        // Everything fits, or there are no intervals: whole.
        #expect(measurement.split(maximumLength: 244) == (measurement, []))
        #expect(HeartRateMeasurement(beatsPerMinute: 72).split(maximumLength: 2) == (HeartRateMeasurement(beatsPerMinute: 72), []))
    }

    @Test func bodySensorLocation() throws {
        #expect(try BodySensorLocation(bytes: [0x01]) == .chest)
        #expect(BodySensorLocation.foot.encoded == [0x06])
        #expect(try BodySensorLocation(bytes: [0x42]).rawValue == 0x42)
        #expect(standardThrows(BodySensorLocation.self, [], .truncated))
    }
}

@Suite struct HealthThermometerCodecTests {
    static let time = DateTime(year: 2026, month: 3, day: 14, hours: 9, minutes: 26, seconds: 53)
    static let timeBytes: [UInt8] = [0xEA, 0x07, 3, 14, 9, 26, 53]

    @Test func vectors() throws {
        let vectors: [([UInt8], TemperatureMeasurement)] = [
            ([0x00, 0x6C, 0x01, 0x00, 0xFF], TemperatureMeasurement(temperature: MedFloat(36.4, fractionDigits: 1))),
            ([0x01, 0xDA, 0x03, 0x00, 0xFF], TemperatureMeasurement(temperature: MedFloat(98.6, fractionDigits: 1), unit: .fahrenheit)),
            ([0x02, 0x6C, 0x01, 0x00, 0xFF] + Self.timeBytes, TemperatureMeasurement(temperature: MedFloat(36.4, fractionDigits: 1), timestamp: Self.time)),
            ([0x04, 0x6C, 0x01, 0x00, 0xFF, 0x09], TemperatureMeasurement(temperature: MedFloat(36.4, fractionDigits: 1), temperatureType: .tympanum)),
            ([0x07, 0xDA, 0x03, 0x00, 0xFF] + Self.timeBytes + [0x06],
             TemperatureMeasurement(temperature: MedFloat(98.6, fractionDigits: 1), unit: .fahrenheit, timestamp: Self.time, temperatureType: .mouth)),
            ([0x00, 0xFF, 0xFF, 0x7F, 0x00], TemperatureMeasurement(temperature: .nan)),
        ]
        for (bytes, measurement) in vectors {
            #expect(measurement.encoded == bytes)
            #expect(try TemperatureMeasurement(bytes: bytes) == measurement)
        }
        #expect(abs(try TemperatureMeasurement(bytes: [0x01, 0xDA, 0x03, 0x00, 0xFF]).celsius - 37) < 1e-9)
    }

    @Test func everyFlagCombinationRoundTripsAndTruncationThrows() throws {
        for flags in UInt8(0)...7 {
            let measurement = TemperatureMeasurement(temperature: MedFloat(37.2, fractionDigits: 1), unit: flags & 1 != 0 ? .fahrenheit : .celsius,
                                                     timestamp: flags & 2 != 0 ? Self.time : nil, temperatureType: flags & 4 != 0 ? .armpit : nil)
            let bytes = measurement.encoded
            #expect(bytes.first == flags)
            #expect(bytes.count == 5 + (flags & 2 != 0 ? 7 : 0) + (flags & 4 != 0 ? 1 : 0))
            #expect(try TemperatureMeasurement(bytes: bytes) == measurement)
            for length in 0..<bytes.count { #expect(standardThrows(TemperatureMeasurement.self, Array(bytes.prefix(length)), .truncated)) }
            // Reserved flag bits are ignored.
            #expect(try TemperatureMeasurement(bytes: [flags | 0xF8] + bytes.dropFirst()) == measurement)
        }
    }
}

@Suite struct BloodPressureCodecTests {
    static let time = DateTime(year: 2026, month: 1, day: 2, hours: 7, minutes: 45)
    static let timeBytes: [UInt8] = [0xEA, 0x07, 1, 2, 7, 45, 0]

    @Test func vectors() throws {
        let full = BloodPressureMeasurement(systolic: SFloat(121, fractionDigits: 0), diastolic: SFloat(81, fractionDigits: 0),
                                            meanArterialPressure: SFloat(95, fractionDigits: 0), timestamp: Self.time,
                                            pulseRate: SFloat(72, fractionDigits: 0), userID: 1, status: .irregularPulse)
        let fullBytes: [UInt8] = [0x1E, 0x79, 0x00, 0x51, 0x00, 0x5F, 0x00] + Self.timeBytes + [0x48, 0x00, 0x01, 0x04, 0x00]
        #expect(full.encoded == fullBytes)
        #expect(try BloodPressureMeasurement(bytes: fullBytes) == full)
        // kPa, one decimal: 16.1 / 10.8 / 12.7.
        let kPa = BloodPressureMeasurement(systolic: SFloat(16.1, fractionDigits: 1), diastolic: SFloat(10.8, fractionDigits: 1),
                                           meanArterialPressure: SFloat(12.7, fractionDigits: 1), unit: .kPa)
        let kPaBytes: [UInt8] = [0x01, 0xA1, 0xF0, 0x6C, 0xF0, 0x7F, 0xF0]
        #expect(kPa.encoded == kPaBytes)
        #expect(try BloodPressureMeasurement(bytes: kPaBytes) == kPa)
        // An intermediate cuff pressure: diastolic and mean NaN.
        let cuff = BloodPressureMeasurement.cuffPressure(SFloat(150, fractionDigits: 0))
        #expect(cuff.encoded == [0x00, 0x96, 0x00, 0xFF, 0x07, 0xFF, 0x07])
    }

    @Test func everyFlagCombinationRoundTripsAndTruncationThrows() throws {
        for flags in UInt8(0)...31 {
            let measurement = BloodPressureMeasurement(
                systolic: SFloat(118, fractionDigits: 0), diastolic: SFloat(76, fractionDigits: 0), meanArterialPressure: SFloat(90, fractionDigits: 0),
                unit: flags & 1 != 0 ? .kPa : .mmHg, timestamp: flags & 2 != 0 ? Self.time : nil,
                pulseRate: flags & 4 != 0 ? SFloat(64, fractionDigits: 0) : nil, userID: flags & 8 != 0 ? 255 : nil,
                status: flags & 16 != 0 ? [.bodyMovement, .cuffTooLoose] : nil)
            let bytes = measurement.encoded
            #expect(bytes.first == flags)
            let expectedLength = 7 + (flags & 2 != 0 ? 7 : 0) + (flags & 4 != 0 ? 2 : 0) + (flags & 8 != 0 ? 1 : 0) + (flags & 16 != 0 ? 2 : 0)
            #expect(bytes.count == expectedLength)
            #expect(try BloodPressureMeasurement(bytes: bytes) == measurement)
            for length in 0..<bytes.count { #expect(standardThrows(BloodPressureMeasurement.self, Array(bytes.prefix(length)), .truncated)) }
            #expect(try BloodPressureMeasurement(bytes: [flags | 0xE0] + bytes.dropFirst()) == measurement)
        }
    }

    @Test func statusAndFeatureBits() throws {
        var status = BloodPressureMeasurementStatus(rawValue: 0xFFC0)
        #expect(status.pulseRateRange == .withinRange)
        status.pulseRateRange = .belowLowerLimit
        #expect(status.rawValue == 0xFFD0)
        #expect(BloodPressureMeasurementStatus(rawValue: 0x0018).pulseRateRange == .reserved)
        #expect(BloodPressureMeasurementStatus(rawValue: 0x0008).pulseRateRange == .exceedsUpperLimit)
        #expect(try BloodPressureFeature(bytes: [0x21, 0x00]) == [.bodyMovementDetection, .multipleBonds])
        #expect(BloodPressureFeature([.cuffFitDetection, .irregularPulseDetection]).encoded == [0x06, 0x00])
        #expect(standardThrows(BloodPressureFeature.self, [0x01], .truncated))
    }
}
