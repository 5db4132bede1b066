import BLEWire

/// The bit layout and special values the two IEEE-11073 decimal floating-point types share: a signed mantissa in the
/// low bits, a signed base-10 exponent in the high bits, and five mantissa values reserved with exponent 0.
struct StandardFloatLayout: Sendable {
    let mantissaBits: Int
    let exponentBits: Int

    static let short = StandardFloatLayout(mantissaBits: 12, exponentBits: 4)
    static let long = StandardFloatLayout(mantissaBits: 24, exponentBits: 8)

    var half: UInt32 { UInt32(1) << UInt32(mantissaBits - 1) }
    var nan: UInt32 { half - 1 }
    var notAtThisResolution: UInt32 { half }
    var positiveInfinity: UInt32 { half - 2 }
    var negativeInfinity: UInt32 { half + 2 }
    var reserved: UInt32 { half + 1 }
    /// The largest magnitude of a finite mantissa (the next ones are special values).
    var maximumMantissa: Int { Int(half) - 3 }
    var minimumExponent: Int { -(1 << (exponentBits - 1)) }
    var maximumExponent: Int { (1 << (exponentBits - 1)) - 1 }

    func category(_ raw: UInt32) -> MedicalFloatCategory {
        switch raw {
        case nan: .nan
        case notAtThisResolution: .notAtThisResolution
        case positiveInfinity: .positiveInfinity
        case negativeInfinity: .negativeInfinity
        case reserved: .reserved
        default: .finite
        }
    }

    func mantissa(_ raw: UInt32) -> Int {
        let bits = Int(raw & ((UInt32(1) << UInt32(mantissaBits)) - 1))
        return bits >= Int(half) ? bits - (1 << mantissaBits) : bits
    }

    func exponent(_ raw: UInt32) -> Int {
        let bits = Int((raw >> UInt32(mantissaBits)) & ((UInt32(1) << UInt32(exponentBits)) - 1))
        return bits >= (1 << (exponentBits - 1)) ? bits - (1 << exponentBits) : bits
    }

    /// The raw value of a mantissa and exponent already checked to be in range.
    func raw(mantissa: Int, exponent: Int) -> UInt32 {
        let m = UInt32(truncatingIfNeeded: mantissa) & ((UInt32(1) << UInt32(mantissaBits)) - 1)
        let e = UInt32(truncatingIfNeeded: exponent) & ((UInt32(1) << UInt32(exponentBits)) - 1)
        return (e << UInt32(mantissaBits)) | m
    }

    func isRepresentable(mantissa: Int, exponent: Int) -> Bool {
        abs(mantissa) <= maximumMantissa && exponent >= minimumExponent && exponent <= maximumExponent
    }

    /// The raw value nearest `value` with `fractionDigits` decimal digits after the point; when the mantissa would
    /// overflow, the exponent grows (digits are given up) until it fits, and a value too large for any exponent
    /// becomes an infinity.
    func raw(_ value: Double, fractionDigits: Int) -> UInt32 {
        if value.isNaN { return nan }
        if value == .infinity { return positiveInfinity }
        if value == -.infinity { return negativeInfinity }
        var exponent = max(minimumExponent, min(maximumExponent, -max(-1000, min(1000, fractionDigits))))
        while exponent <= maximumExponent {
            let scaled = exponent < 0 ? value * standardPowerOfTen(-exponent) : value / standardPowerOfTen(exponent)
            let rounded = scaled.rounded(.toNearestOrAwayFromZero)
            if abs(rounded) <= Double(maximumMantissa) {
                return raw(mantissa: Int(rounded), exponent: exponent)
            }
            exponent += 1
        }
        return value > 0 ? positiveInfinity : negativeInfinity
    }

    func doubleValue(_ raw: UInt32) -> Double {
        switch category(raw) {
        case .finite:
            let m = Double(mantissa(raw))
            let e = exponent(raw)
            return e < 0 ? m / standardPowerOfTen(-e) : m * standardPowerOfTen(e)
        case .positiveInfinity: return .infinity
        case .negativeInfinity: return -.infinity
        case .nan, .notAtThisResolution, .reserved: return .nan
        }
    }

    func description(_ raw: UInt32) -> String {
        switch category(raw) {
        case .nan: return "NaN"
        case .notAtThisResolution: return "NRes"
        case .positiveInfinity: return "+INF"
        case .negativeInfinity: return "-INF"
        case .reserved: return "reserved"
        case .finite: break
        }
        let m = mantissa(raw)
        let e = exponent(raw)
        let digits = String(abs(m))
        let sign = m < 0 ? "-" : ""
        if e >= 0 { return sign + digits + (m == 0 ? "" : String(repeating: "0", count: e)) }
        let padded = String(repeating: "0", count: max(0, -e + 1 - digits.count)) + digits
        let point = padded.index(padded.endIndex, offsetBy: e)
        return sign + padded[..<point] + "." + padded[point...]
    }
}

/// 10 to the power `n` (n ≥ 0), exact up to 10^22.
func standardPowerOfTen(_ n: Int) -> Double {
    var result = 1.0
    for _ in 0..<max(0, n) { result *= 10 }
    return result
}

/// ISO/IEEE 11073-20601, as the GATT Specification Supplement uses it for medfloat16 and medfloat32: what an SFLOAT
/// or FLOAT holds, a finite number or one of the special values.
public enum MedicalFloatCategory: Sendable, Hashable {
    /// A number: mantissa × 10^exponent.
    case finite
    /// Not a Number (SFLOAT 0x07FF, FLOAT 0x007FFFFF).
    case nan
    /// Not at this resolution: a value the exponent cannot express (SFLOAT 0x0800, FLOAT 0x00800000).
    case notAtThisResolution
    /// Positive infinity (SFLOAT 0x07FE, FLOAT 0x007FFFFE).
    case positiveInfinity
    /// Negative infinity (SFLOAT 0x0802, FLOAT 0x00800002).
    case negativeInfinity
    /// Reserved for future use (SFLOAT 0x0801, FLOAT 0x00800001).
    case reserved
}

/// GATT Specification Supplement (medfloat16), after ISO/IEEE 11073-20601 SFLOAT-Type: a 16-bit decimal
/// floating-point number, a 12-bit signed mantissa and a 4-bit signed base-10 exponent (value = mantissa × 10^exponent),
/// little-endian on the wire, with the special values NaN, NRes, ±INF and a reserved value.
public struct SFloat: Sendable, Hashable, WireCodable, CustomStringConvertible {
    /// The 16 bits as sent (exponent in the high nibble).
    public var rawValue: UInt16

    static let layout = StandardFloatLayout.short

    /// A value from its 16 bits.
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// The finite value `mantissa` × 10^`exponent`, or `nil` when the mantissa is outside −2045...2045 (the
    /// mantissas beyond are special values) or the exponent outside −8...7.
    public init?(mantissa: Int, exponent: Int) {
        guard Self.layout.isRepresentable(mantissa: mantissa, exponent: exponent) else { return nil }
        rawValue = UInt16(truncatingIfNeeded: Self.layout.raw(mantissa: mantissa, exponent: exponent))
    }

    /// The value nearest `value` kept to `fractionDigits` decimal digits after the point (exponent −fractionDigits),
    /// or with as many as fit when the mantissa would overflow; NaN and ±infinity map to NaN and ±INF, values beyond
    /// the largest exponent to ±INF. `SFloat(36.25, fractionDigits: 1)` is 363 × 10⁻¹ (halves round away from zero).
    public init(_ value: Double, fractionDigits: Int) {
        rawValue = UInt16(truncatingIfNeeded: Self.layout.raw(value, fractionDigits: fractionDigits))
    }

    /// Not a Number (0x07FF).
    public static let nan = SFloat(rawValue: 0x07FF)
    /// Not at this resolution (0x0800).
    public static let notAtThisResolution = SFloat(rawValue: 0x0800)
    /// Positive infinity (0x07FE).
    public static let positiveInfinity = SFloat(rawValue: 0x07FE)
    /// Negative infinity (0x0802).
    public static let negativeInfinity = SFloat(rawValue: 0x0802)
    /// The reserved value (0x0801).
    public static let reserved = SFloat(rawValue: 0x0801)

    /// Whether the value is a number or which special value it is.
    public var category: MedicalFloatCategory { Self.layout.category(UInt32(rawValue)) }
    /// The signed 12-bit mantissa.
    public var mantissa: Int { Self.layout.mantissa(UInt32(rawValue)) }
    /// The signed 4-bit base-10 exponent.
    public var exponent: Int { Self.layout.exponent(UInt32(rawValue)) }
    /// The value as a `Double`: ±infinity for ±INF, NaN for NaN, NRes and the reserved value.
    public var doubleValue: Double { Self.layout.doubleValue(UInt32(rawValue)) }

    /// Decodes the two bytes.
    public init(from reader: inout ByteReader) throws(WireError) {
        rawValue = try reader.readUInt16("SFLOAT")
    }

    /// Appends the two bytes.
    public func encode(into writer: inout ByteWriter) { writer.write(rawValue) }

    /// The exact decimal value (for example `36.5`), or `NaN`, `NRes`, `+INF`, `-INF`, `reserved`.
    public var description: String { Self.layout.description(UInt32(rawValue)) }
}

/// GATT Specification Supplement (medfloat32), after ISO/IEEE 11073-20601 FLOAT-Type: a 32-bit decimal
/// floating-point number, a 24-bit signed mantissa and an 8-bit signed base-10 exponent (value = mantissa ×
/// 10^exponent), little-endian on the wire, with the special values NaN, NRes, ±INF and a reserved value.
public struct MedFloat: Sendable, Hashable, WireCodable, CustomStringConvertible {
    /// The 32 bits as sent (exponent in the high byte).
    public var rawValue: UInt32

    static let layout = StandardFloatLayout.long

    /// A value from its 32 bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The finite value `mantissa` × 10^`exponent`, or `nil` when the mantissa is outside −8388605...8388605 (the
    /// mantissas beyond are special values) or the exponent outside −128...127.
    public init?(mantissa: Int, exponent: Int) {
        guard Self.layout.isRepresentable(mantissa: mantissa, exponent: exponent) else { return nil }
        rawValue = Self.layout.raw(mantissa: mantissa, exponent: exponent)
    }

    /// The value nearest `value` kept to `fractionDigits` decimal digits after the point (exponent −fractionDigits),
    /// or with as many as fit when the mantissa would overflow; NaN and ±infinity map to NaN and ±INF, values beyond
    /// the largest exponent to ±INF.
    public init(_ value: Double, fractionDigits: Int) {
        rawValue = Self.layout.raw(value, fractionDigits: fractionDigits)
    }

    /// Not a Number (0x007FFFFF).
    public static let nan = MedFloat(rawValue: 0x007F_FFFF)
    /// Not at this resolution (0x00800000).
    public static let notAtThisResolution = MedFloat(rawValue: 0x0080_0000)
    /// Positive infinity (0x007FFFFE).
    public static let positiveInfinity = MedFloat(rawValue: 0x007F_FFFE)
    /// Negative infinity (0x00800002).
    public static let negativeInfinity = MedFloat(rawValue: 0x0080_0002)
    /// The reserved value (0x00800001).
    public static let reserved = MedFloat(rawValue: 0x0080_0001)

    /// Whether the value is a number or which special value it is.
    public var category: MedicalFloatCategory { Self.layout.category(rawValue) }
    /// The signed 24-bit mantissa.
    public var mantissa: Int { Self.layout.mantissa(rawValue) }
    /// The signed 8-bit base-10 exponent.
    public var exponent: Int { Self.layout.exponent(rawValue) }
    /// The value as a `Double`: ±infinity for ±INF, NaN for NaN, NRes and the reserved value.
    public var doubleValue: Double { Self.layout.doubleValue(rawValue) }

    /// Decodes the four bytes.
    public init(from reader: inout ByteReader) throws(WireError) {
        rawValue = try reader.readUInt32("FLOAT")
    }

    /// Appends the four bytes.
    public func encode(into writer: inout ByteWriter) { writer.write(rawValue) }

    /// The exact decimal value (for example `36.55`), or `NaN`, `NRes`, `+INF`, `-INF`, `reserved`.
    public var description: String { Self.layout.description(rawValue) }
}
