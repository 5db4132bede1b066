import BLEProfiles
import Testing

@Suite struct WeightScaleCodecTests {
    static let time = DateTime(year: 2026, month: 5, day: 6, hours: 7, minutes: 8, seconds: 9)
    static let timeBytes: [UInt8] = [0xEA, 0x07, 5, 6, 7, 8, 9]

    @Test func vectors() throws {
        // 72.4 kg = 14480 steps of 0.005 kg.
        let si = WeightMeasurement(weightSteps: MeasurementUnitSystem.si.massSteps(72.4))
        #expect(si.encoded == [0x00, 0x90, 0x38])
        #expect(try WeightMeasurement(bytes: [0x00, 0x90, 0x38]) == si)
        #expect(abs((si.weight ?? 0) - 72.4) < 1e-9)
        // 159.6 lb = 15960 steps of 0.01 lb.
        let imperial = WeightMeasurement(units: .imperial, weightSteps: MeasurementUnitSystem.imperial.massSteps(159.6))
        #expect(imperial.encoded == [0x01, 0x58, 0x3E])
        #expect(try WeightMeasurement(bytes: [0x01, 0x58, 0x3E]) == imperial)
        // Everything: time, user 1, BMI 22.8, height 1.780 m.
        let full = WeightMeasurement(weightSteps: 14480, timestamp: Self.time, userID: 1,
                                     bmiAndHeight: .init(bmiSteps: 228, heightSteps: MeasurementUnitSystem.si.heightSteps(1.78)))
        let fullBytes: [UInt8] = [0x0E, 0x90, 0x38] + Self.timeBytes + [0x01, 0xE4, 0x00, 0xF4, 0x06]
        #expect(full.encoded == fullBytes)
        #expect(try WeightMeasurement(bytes: fullBytes) == full)
        #expect(full.bmi == 22.8 && abs((full.height ?? 0) - 1.78) < 1e-9)
        // Imperial height: 70.1 in = 701 steps of 0.1 in.
        #expect(MeasurementUnitSystem.imperial.heightSteps(70.1) == 701)
        // Unsuccessful.
        #expect(try WeightMeasurement(bytes: [0x00, 0xFF, 0xFF]).weight == nil)
        #expect(MeasurementUnitSystem.si.massSteps(1000) == 0xFFFE)
    }

    @Test func everyFlagCombinationRoundTripsAndTruncationThrows() throws {
        for flags in UInt8(0)...15 {
            let measurement = WeightMeasurement(units: flags & 1 != 0 ? .imperial : .si, weightSteps: 12345,
                                                timestamp: flags & 2 != 0 ? Self.time : nil, userID: flags & 4 != 0 ? 3 : nil,
                                                bmiAndHeight: flags & 8 != 0 ? .init(bmiSteps: 250, heightSteps: 1700) : nil)
            let bytes = measurement.encoded
            #expect(bytes.first == flags)
            #expect(bytes.count == 3 + (flags & 2 != 0 ? 7 : 0) + (flags & 4 != 0 ? 1 : 0) + (flags & 8 != 0 ? 4 : 0))
            #expect(try WeightMeasurement(bytes: bytes) == measurement)
            #expect(try WeightMeasurement(bytes: [flags | 0xF0] + bytes.dropFirst()) == measurement)
            for length in 0..<bytes.count { #expect(standardThrows(WeightMeasurement.self, Array(bytes.prefix(length)), .truncated)) }
        }
    }

    @Test func feature() throws {
        var feature: WeightScaleFeature = [.timeStamp, .bmi]
        feature.weightResolution = 7
        feature.heightResolution = 3
        #expect(feature.rawValue == 0x0000_01BD)
        #expect(feature.encoded == [0xBD, 0x01, 0x00, 0x00])
        let decoded = try WeightScaleFeature(bytes: [0xBD, 0x01, 0x00, 0x80])
        #expect(decoded.weightResolution == 7 && decoded.heightResolution == 3 && decoded.contains(.bmi))
        #expect(decoded.rawValue & 0x8000_0000 != 0)
        #expect(standardThrows(WeightScaleFeature.self, [0xBD, 0x01, 0x00], .truncated))
    }
}

@Suite struct BodyCompositionCodecTests {
    static let time = DateTime(year: 2026, month: 5, day: 6, hours: 7, minutes: 8, seconds: 9)
    static let timeBytes: [UInt8] = [0xEA, 0x07, 5, 6, 7, 8, 9]

    @Test func vectors() throws {
        let minimal = BodyCompositionMeasurement(bodyFatPercentage: 180)
        #expect(minimal.encoded == [0x00, 0x00, 0xB4, 0x00])
        #expect(try BodyCompositionMeasurement(bytes: [0x00, 0x00, 0xB4, 0x00]) == minimal)
        #expect(minimal.bodyFat == 18)
        // What the simulated scale sends: time, user, muscle %, body water, weight, height.
        let scale = BodyCompositionMeasurement(bodyFatPercentage: 180, timestamp: Self.time, userID: 1, musclePercentage: 420,
                                               bodyWaterMass: 7964, weight: 14480, height: 1780)
        let bytes: [UInt8] = [0x16, 0x0D, 0xB4, 0x00] + Self.timeBytes + [0x01, 0xA4, 0x01, 0x1C, 0x1F, 0x90, 0x38, 0xF4, 0x06]
        #expect(scale.encoded == bytes)
        #expect(bytes.count == 20)
        #expect(try BodyCompositionMeasurement(bytes: bytes) == scale)
        // Every field, imperial, continued in another packet.
        let all = BodyCompositionMeasurement(units: .imperial, bodyFatPercentage: 1, timestamp: Self.time, userID: 2, basalMetabolism: 3,
                                             musclePercentage: 4, muscleMass: 5, fatFreeMass: 6, softLeanMass: 7, bodyWaterMass: 8,
                                             impedance: 9, weight: 10, height: 11, isMultiplePacket: true)
        let allBytes: [UInt8] = [0xFF, 0x1F, 0x01, 0x00] + Self.timeBytes + [0x02, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 8, 0, 9, 0, 10, 0, 11, 0]
        #expect(all.encoded == allBytes)
        #expect(try BodyCompositionMeasurement(bytes: allBytes) == all)
    }

    @Test func everyFlagRoundTripsAloneAndTruncationThrows() throws {
        // Each of the 13 flag bits alone, then every optional UInt16 field present together with each other pattern.
        for bit in 0..<13 {
            let flags = UInt16(1) << UInt16(bit)
            func present(_ b: Int) -> UInt16? { flags & (1 << UInt16(b)) != 0 ? UInt16(100 + b) : nil }
            let measurement = BodyCompositionMeasurement(
                units: flags & 1 != 0 ? .imperial : .si, bodyFatPercentage: 222, timestamp: flags & 2 != 0 ? Self.time : nil,
                userID: flags & 4 != 0 ? 9 : nil, basalMetabolism: present(3), musclePercentage: present(4), muscleMass: present(5),
                fatFreeMass: present(6), softLeanMass: present(7), bodyWaterMass: present(8), impedance: present(9), weight: present(10),
                height: present(11), isMultiplePacket: flags & 0x1000 != 0)
            let bytes = measurement.encoded
            #expect(bytes.prefix(2) == [UInt8(flags & 0xFF), UInt8(flags >> 8)])
            #expect(try BodyCompositionMeasurement(bytes: bytes) == measurement)
            #expect(try BodyCompositionMeasurement(bytes: [bytes[0], bytes[1] | 0xE0] + bytes.dropFirst(2)) == measurement)
            for length in 0..<bytes.count { #expect(standardThrows(BodyCompositionMeasurement.self, Array(bytes.prefix(length)), .truncated)) }
        }
        for pattern in UInt16(0)..<512 {
            func present(_ index: Int) -> UInt16? { pattern & (1 << UInt16(index)) != 0 ? UInt16(1000 + index) : nil }
            let measurement = BodyCompositionMeasurement(bodyFatPercentage: 5, basalMetabolism: present(0), musclePercentage: present(1),
                                                         muscleMass: present(2), fatFreeMass: present(3), softLeanMass: present(4),
                                                         bodyWaterMass: present(5), impedance: present(6), weight: present(7), height: present(8))
            let bytes = measurement.encoded
            #expect(measurement.flags == pattern << 3)
            #expect(bytes.count == 4 + 2 * pattern.nonzeroBitCount)
            #expect(try BodyCompositionMeasurement(bytes: bytes) == measurement)
        }
    }

    @Test func feature() throws {
        var feature: BodyCompositionFeature = [.timeStamp, .weight, .height]
        feature.massResolution = 7
        feature.heightResolution = 3
        #expect(feature.rawValue == 0x0001_BE01)
        #expect(try BodyCompositionFeature(bytes: feature.encoded) == feature)
        #expect(standardThrows(BodyCompositionFeature.self, [0x01], .truncated))
    }
}
