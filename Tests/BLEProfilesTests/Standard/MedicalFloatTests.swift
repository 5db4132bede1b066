import BLEProfiles
import Testing

@Suite struct SFloatTests {
    @Test(arguments: [
        (UInt16(0x07FF), MedicalFloatCategory.nan, "NaN"),
        (0x0800, .notAtThisResolution, "NRes"),
        (0x07FE, .positiveInfinity, "+INF"),
        (0x0802, .negativeInfinity, "-INF"),
        (0x0801, .reserved, "reserved"),
    ])
    func specialValues(raw: UInt16, category: MedicalFloatCategory, text: String) throws {
        let value = try SFloat(bytes: [UInt8(raw & 0xFF), UInt8(raw >> 8)])
        #expect(value.rawValue == raw)
        #expect(value.category == category)
        #expect(value.description == text)
        #expect(value.encoded == [UInt8(raw & 0xFF), UInt8(raw >> 8)])
        switch category {
        case .positiveInfinity: #expect(value.doubleValue == .infinity)
        case .negativeInfinity: #expect(value.doubleValue == -.infinity)
        default: #expect(value.doubleValue.isNaN)
        }
    }

    @Test func specialConstantsAreTheSpecValues() {
        #expect(SFloat.nan.rawValue == 0x07FF)
        #expect(SFloat.notAtThisResolution.rawValue == 0x0800)
        #expect(SFloat.positiveInfinity.rawValue == 0x07FE)
        #expect(SFloat.negativeInfinity.rawValue == 0x0802)
        #expect(SFloat.reserved.rawValue == 0x0801)
        #expect(SFloat(.nan, fractionDigits: 1) == .nan)
        #expect(SFloat(.infinity, fractionDigits: 1) == .positiveInfinity)
        #expect(SFloat(-.infinity, fractionDigits: 1) == .negativeInfinity)
    }

    @Test func finiteValuesBothWays() throws {
        // 36.5 = 365 × 10^-1: exponent 0xF, mantissa 0x16D.
        let temperature = SFloat(36.5, fractionDigits: 1)
        #expect(temperature.rawValue == 0xF16D)
        #expect(temperature.encoded == [0x6D, 0xF1])
        #expect(try SFloat(bytes: [0x6D, 0xF1]) == temperature)
        #expect(temperature.mantissa == 365 && temperature.exponent == -1)
        #expect(temperature.doubleValue == 36.5)
        #expect(temperature.description == "36.5")
        // -1.5 = -15 × 10^-1: mantissa 0xFF1 (two's complement in 12 bits).
        let negative = SFloat(-1.5, fractionDigits: 1)
        #expect(negative.rawValue == 0xFFF1)
        #expect(negative.mantissa == -15 && negative.exponent == -1)
        #expect(negative.doubleValue == -1.5)
        #expect(negative.description == "-1.5")
        // 120 mmHg, exponent 0.
        #expect(SFloat(120, fractionDigits: 0).rawValue == 0x0078)
        // 0.005 = 5 × 10^-3.
        let small = try #require(SFloat(mantissa: 5, exponent: -3))
        #expect(small.rawValue == 0xD005)
        #expect(small.description == "0.005")
        #expect(SFloat(rawValue: 0x2003).description == "300")
        #expect(SFloat(rawValue: 0x2003).doubleValue == 300)
    }

    @Test func roundingKeepsThePrecisionAndGivesDigitsUpWhenTheMantissaOverflows() {
        // Halves round away from zero.
        #expect(SFloat(36.25, fractionDigits: 1).mantissa == 363)
        #expect(SFloat(-36.25, fractionDigits: 1).mantissa == -363)
        #expect(SFloat(36.24, fractionDigits: 1).mantissa == 362)
        // 12345 does not fit in 12 bits at exponent 0: 1235 × 10^1.
        let large = SFloat(12345, fractionDigits: 0)
        #expect(large.rawValue == 0x14D3)
        #expect(large.mantissa == 1235 && large.exponent == 1)
        #expect(large.doubleValue == 12350)
        // 204.56 at two digits would be 20456, at one 2046 (+INF's mantissa): two digits are given up.
        let kept = SFloat(204.56, fractionDigits: 2)
        #expect(kept.mantissa == 205 && kept.exponent == 0)
        #expect(SFloat(204.4, fractionDigits: 2).mantissa == 2044)
        #expect(SFloat(204.4, fractionDigits: 2).exponent == -1)
        // The largest mantissa is 2045: 2046 is +INF's.
        #expect(SFloat(2045, fractionDigits: 0).rawValue == 0x07FD)
        #expect(SFloat(2046, fractionDigits: 0).rawValue == 0x10CD)
        // Beyond 2045 × 10^7: infinities.
        #expect(SFloat(1e12, fractionDigits: 0) == .positiveInfinity)
        #expect(SFloat(-1e12, fractionDigits: 0) == .negativeInfinity)
        // More digits than the exponent allows: 10^-8 at most.
        #expect(SFloat(0.00000001234, fractionDigits: 12).exponent == -8)
        #expect(SFloat(0.00000001234, fractionDigits: 12).mantissa == 1)
    }

    @Test func mantissaAndExponentRanges() {
        #expect(SFloat(mantissa: 2045, exponent: 7) != nil)
        #expect(SFloat(mantissa: -2045, exponent: -8) != nil)
        #expect(SFloat(mantissa: 2046, exponent: 0) == nil)
        #expect(SFloat(mantissa: -2046, exponent: 0) == nil)
        #expect(SFloat(mantissa: 1, exponent: 8) == nil)
        #expect(SFloat(mantissa: 1, exponent: -9) == nil)
        // A special mantissa with a non-zero exponent is no special value: taken as a number.
        #expect(SFloat(rawValue: 0x17FF).category == .finite)
        #expect(SFloat(rawValue: 0x17FF).doubleValue == 20470)
    }

    @Test func truncatedAndTrailingInputThrows() {
        #expect(standardThrows(SFloat.self, [0x01], .truncated))
        #expect(standardThrows(SFloat.self, [], .truncated))
        #expect(standardThrows(SFloat.self, [0x01, 0x02, 0x03], .trailingBytes))
    }
}

@Suite struct MedFloatTests {
    @Test(arguments: [
        (UInt32(0x007F_FFFF), MedicalFloatCategory.nan, "NaN"),
        (0x0080_0000, .notAtThisResolution, "NRes"),
        (0x007F_FFFE, .positiveInfinity, "+INF"),
        (0x0080_0002, .negativeInfinity, "-INF"),
        (0x0080_0001, .reserved, "reserved"),
    ])
    func specialValues(raw: UInt32, category: MedicalFloatCategory, text: String) throws {
        let bytes = [UInt8(raw & 0xFF), UInt8(raw >> 8 & 0xFF), UInt8(raw >> 16 & 0xFF), UInt8(raw >> 24)]
        let value = try MedFloat(bytes: bytes)
        #expect(value.rawValue == raw)
        #expect(value.category == category)
        #expect(value.description == text)
        #expect(value.encoded == bytes)
        switch category {
        case .positiveInfinity: #expect(value.doubleValue == .infinity)
        case .negativeInfinity: #expect(value.doubleValue == -.infinity)
        default: #expect(value.doubleValue.isNaN)
        }
    }

    @Test func specialConstantsAreTheSpecValues() {
        #expect(MedFloat.nan.rawValue == 0x007F_FFFF)
        #expect(MedFloat.notAtThisResolution.rawValue == 0x0080_0000)
        #expect(MedFloat.positiveInfinity.rawValue == 0x007F_FFFE)
        #expect(MedFloat.negativeInfinity.rawValue == 0x0080_0002)
        #expect(MedFloat.reserved.rawValue == 0x0080_0001)
        #expect(MedFloat(.nan, fractionDigits: 2) == .nan)
        #expect(MedFloat(.infinity, fractionDigits: 2) == .positiveInfinity)
        #expect(MedFloat(-.infinity, fractionDigits: 2) == .negativeInfinity)
    }

    @Test func finiteValuesBothWays() throws {
        // 36.4 °C = 364 × 10^-1.
        let temperature = MedFloat(36.4, fractionDigits: 1)
        #expect(temperature.rawValue == 0xFF00_016C)
        #expect(temperature.encoded == [0x6C, 0x01, 0x00, 0xFF])
        #expect(try MedFloat(bytes: [0x6C, 0x01, 0x00, 0xFF]) == temperature)
        #expect(temperature.doubleValue == 36.4)
        #expect(temperature.description == "36.4")
        // -273.15 = -27315 × 10^-2.
        let negative = MedFloat(-273.15, fractionDigits: 2)
        #expect(negative.rawValue == 0xFEFF_954D)
        #expect(negative.mantissa == -27315 && negative.exponent == -2)
        #expect(negative.doubleValue == -273.15)
        #expect(negative.description == "-273.15")
        #expect(MedFloat(rawValue: 0x0300_0007).doubleValue == 7000)
        #expect(MedFloat(rawValue: 0x0300_0007).description == "7000")
    }

    @Test func roundingAndOverflow() {
        // 123456789 needs more than 23 bits: 1234568 × 10^2.
        let large = MedFloat(123_456_789, fractionDigits: 0)
        #expect(large.rawValue == 0x0212_D688)
        #expect(large.doubleValue == 123_456_800)
        #expect(MedFloat(8_388_605, fractionDigits: 0).rawValue == 0x007F_FFFD)
        #expect(MedFloat(1e200, fractionDigits: 0) == .positiveInfinity)
        #expect(MedFloat(-1e200, fractionDigits: 0) == .negativeInfinity)
        #expect(MedFloat(mantissa: 8_388_606, exponent: 0) == nil)
        #expect(MedFloat(mantissa: -8_388_605, exponent: -128) != nil)
        #expect(MedFloat(mantissa: 1, exponent: 128) == nil)
    }

    @Test func truncatedInputThrows() {
        #expect(standardThrows(MedFloat.self, [0x01, 0x02, 0x03], .truncated))
        #expect(standardThrows(MedFloat.self, [0x01, 0x02, 0x03, 0x04, 0x05], .trailingBytes))
    }
}

@Suite struct DateTimeTests {
    @Test func bothWays() throws {
        let bytes: [UInt8] = [0xE2, 0x07, 12, 31, 23, 59, 58]
        let value = DateTime(year: 2018, month: 12, day: 31, hours: 23, minutes: 59, seconds: 58)
        #expect(value.encoded == bytes)
        #expect(try DateTime(bytes: bytes) == value)
        #expect(value.description == "2018-12-31 23:59:58")
        // Unknown year, month and day.
        #expect(try DateTime(bytes: [0, 0, 0, 0, 12, 0, 0]) == DateTime(year: 0, month: 0, day: 0, hours: 12))
    }

    @Test func outOfRangeAndTruncatedThrow() {
        #expect(standardThrows(DateTime.self, [0xE2, 0x07, 13, 1, 0, 0, 0], .invalidValue))
        #expect(standardThrows(DateTime.self, [0xE2, 0x07, 1, 32, 0, 0, 0], .invalidValue))
        #expect(standardThrows(DateTime.self, [0xE2, 0x07, 1, 1, 24, 0, 0], .invalidValue))
        #expect(standardThrows(DateTime.self, [0xE2, 0x07, 1, 1, 0, 60, 0], .invalidValue))
        #expect(standardThrows(DateTime.self, [0xE2, 0x07, 1, 1, 0, 0, 60], .invalidValue))
        #expect(standardThrows(DateTime.self, [0xE2, 0x07, 1, 1, 0, 0], .truncated))
    }

    @Test func addingCrossesDaysMonthsAndYears() {
        #expect(DateTime(year: 2024, month: 2, day: 28, hours: 23, minutes: 59, seconds: 30).adding(seconds: 60)
                == DateTime(year: 2024, month: 2, day: 29, hours: 0, minutes: 0, seconds: 30))
        #expect(DateTime(year: 2023, month: 2, day: 28, hours: 23, minutes: 59, seconds: 30).adding(seconds: 60)
                == DateTime(year: 2023, month: 3, day: 1, hours: 0, minutes: 0, seconds: 30))
        #expect(DateTime(year: 2023, month: 12, day: 31, hours: 23, minutes: 59, seconds: 59).adding(seconds: 1)
                == DateTime(year: 2024, month: 1, day: 1))
        #expect(DateTime(year: 2024, month: 1, day: 1).adding(seconds: -1)
                == DateTime(year: 2023, month: 12, day: 31, hours: 23, minutes: 59, seconds: 59))
    }
}
