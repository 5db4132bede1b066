import BLEWire
import Testing

/// `[UInt8](hex:strict:)`: the strict form accepts only ASCII hex digits, two for each octet.
@Suite struct StrictHexTests {
    /// Text, and the octets strict parsing gives (`nil`: refused).
    struct Vector: Sendable, CustomTestStringConvertible {
        var text: String
        var octets: [UInt8]?
        init(_ text: String, _ octets: [UInt8]?) {
            self.text = text
            self.octets = octets
        }
        var testDescription: String { "\"\(text)\"" }
    }

    static let vectors: [Vector] = [
        Vector("", []),
        Vector("00", [0x00]),
        Vector("0a1B", [0x0A, 0x1B]),
        Vector("ABCDEF", [0xAB, 0xCD, 0xEF]),
        Vector("abcdef", [0xAB, 0xCD, 0xEF]),
        Vector("0123456789", [0x01, 0x23, 0x45, 0x67, 0x89]),
        Vector("fedcba9876543210", [0xFE, 0xDC, 0xBA, 0x98, 0x76, 0x54, 0x32, 0x10]),
        Vector("000102030405060708090a0b0c0d0e0f", Array(0...15)),
        // An odd number of digits.
        Vector("a", nil),
        Vector("abc", nil),
        // Separators, prefixes and space, which the lenient form skips.
        Vector("0a 1b", nil),
        Vector("0a:1b", nil),
        Vector("0a-1b", nil),
        Vector("0x0a1b", nil),
        Vector("0X0a1b", nil),
        Vector(" 0a1b", nil),
        Vector("0a1b\n", nil),
        // Not hex digits at all.
        Vector("zz", nil),
        Vector("0g", nil),
        Vector("g0", nil),
        Vector("+1", nil),
        Vector("/0", nil),
        Vector(":0", nil),
        Vector("@0", nil),
        Vector("G0", nil),
        Vector("`0", nil),
        // Non-ASCII digits that `Character.hexDigitValue` accepts: fullwidth forms.
        Vector("\u{FF12}\u{FF10}", nil),
        Vector("\u{FF41}0", nil),
        Vector("é0", nil),
    ]

    @Test(arguments: vectors)
    func strictParsing(vector: Vector) {
        #expect([UInt8](hex: vector.text, strict: true) == vector.octets)
    }

    @Test func notStrictIsTheLenientForm() {
        for text in ["0a 1B:ff", "0x0102", "abc", "zz", "", "0a1b"] {
            #expect([UInt8](hex: text, strict: false) == [UInt8](hex: text), "\(text)")
        }
    }

    @Test func everyOctetRoundTrips() {
        let all = (0...255).map { UInt8($0) }
        #expect([UInt8](hex: all.hexString(), strict: true) == all)
        #expect([UInt8](hex: all.hexString().uppercased(), strict: true) == all)
    }
}
