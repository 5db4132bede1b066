import BLE
import BLEFiles
import Foundation
import Testing

/// `JSONValue`: JSON's own types, escaping as RFC 8259 asks, members in order or sorted, numbers fixed or shortest.
@Suite struct JSONValueTests {
    @Test func keepsJSONTypesAndTheMembersOrder() {
        let line: JSONValue = ["event": "connected", "mtu": 247, "rssi": -42, "connectable": true, "services": ["180D", "180F"],
                               "name": nil, "distance": .number(1.5, decimals: 2), "nested": ["b": 1, "a": []]]
        #expect(line.encoded() == #"{"event":"connected","mtu":247,"rssi":-42,"connectable":true,"services":["180D","180F"],"name":null,"distance":1.50,"nested":{"b":1,"a":[]}}"#)
    }

    @Test func sortsKeysAtEveryLevelWhenAsked() {
        let value: JSONValue = ["z": 1, "a": ["y": true, "b": false], "m": [["d": 1, "c": 2]]]
        #expect(value.encoded(sortingKeys: true) == #"{"a":{"b":false,"y":true},"m":[{"c":2,"d":1}],"z":1}"#)
    }

    @Test func escapesWhatJSONRequires() {
        let text = "quote \" backslash \\ newline \n tab \t return \r bell \u{07} del \u{7F} separator \u{2028} é 🎧"
        #expect(JSONValue.string(text).encoded()
                == #""quote \" backslash \\ newline \n tab \t return \r bell \u0007 del \u007f separator \u2028 é 🎧""#)
        // Keys too.
        #expect(JSONValue.object([(key: "a\"b", value: .null)]).encoded() == #"{"a\"b":null}"#)
    }

    @Test func bytesAreTheTextsUTF8() {
        let value: JSONValue = ["s": "x\u{01}\u{1F}\"\\/\u{2029}\u{2028}\u{E2}é🎧\u{7F}", "k\n": [1, .number(0.5, decimals: 1), true, nil],
                                "": "", "plain": "abc"]
        #expect(value.encodedBytes() == Array(value.encoded().utf8))
        #expect(value.encoded() == #"{"s":"x\u0001\u001f\"\\/\u2029\u2028âé🎧\u007f","k\n":[1,0.5,true,null],"":"","plain":"abc"}"#)
    }

    @Test func writesNumbersFixedOrShortestAndNonFiniteAsNull() {
        #expect(JSONValue.number(22.5, decimals: 2).encoded() == "22.50")
        #expect(JSONValue.number(-3.14159, decimals: 3).encoded() == "-3.142")
        #expect(JSONValue.number(0.25, decimals: 0).encoded() == "0")
        #expect(JSONValue.number(-0.001, decimals: 1).encoded() == "0.0")
        #expect(JSONValue.number(7, decimals: 1).encoded() == "7.0")
        #expect(JSONValue.number(0.1).encoded() == "0.1")
        #expect(JSONValue.number(1e20).encoded() == "1e+20")
        #expect(JSONValue.number(.nan).encoded() == "null")
        #expect(JSONValue.number(-.infinity, decimals: 2).encoded() == "null")
        #expect(JSONValue.integer(UInt16.max) == .int(65535))
        #expect(JSONValue.integer(Int8(-59)) == .int(-59))
        #expect(JSONValue.integer(UInt64.max) == .null)
    }

    /// Fixed decimals are written digit by digit; the text is what the definition gives: the value rounded half away
    /// from zero at the place asked, as an integer, its digits with the point that many places from the right.
    @Test func fixedDecimalsAreTheRoundedValueWithItsPoint() {
        func reference(_ d: Double, _ places: Int) -> String {
            var scale = 1.0
            for _ in 0..<places { scale *= 10 }
            let scaled = (abs(d) * scale).rounded(.toNearestOrAwayFromZero)
            if scaled >= 9e15 { return d.description }
            let digits = String(UInt64(scaled))
            let padded = String(repeating: "0", count: max(0, places + 1 - digits.count)) + digits
            let sign = d < 0 && scaled != 0 ? "-" : ""
            return sign + padded.dropLast(places) + (places > 0 ? "." + padded.suffix(places) : "")
        }
        var values: [Double] = [0, -0.0, 0.5, -0.5, 0.05, 1.005, 9.995, 99.5, -54.25, 5.01, 123_456.789, 8.9e15, 9.1e15, 1e-9, -1e-9]
        var seed: UInt64 = 0x2545_F491_4F6C_DD1D
        for _ in 0..<2000 {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let mantissa = Double(seed >> 11) / Double(1 << 53)
            values.append((mantissa - 0.5) * pow(10, Double(Int(seed % 13)) - 4))
        }
        for value in values {
            for places in [0, 1, 2, 3, 6, 15] {
                #expect(JSONValue.number(value, decimals: places).encoded() == reference(value, places), "\(value) to \(places)")
            }
        }
        #expect(JSONValue.number(-54.25, decimals: 1).encoded() == "-54.3")
        #expect(JSONValue.number(0.004, decimals: 2).encoded() == "0.00")
        #expect(JSONValue.number(-7, decimals: 20).encoded() == "-7.000000000000000", "at most 15 places")
    }

    @Test func everyEncodingParsesBackWithTheSameTypes() throws {
        let value: JSONValue = ["s": "x\u{01}\"\\/", "i": -7, "d": .number(0.125), "f": .number(2, decimals: 3), "b": false, "n": nil,
                                "a": [1, "two", [3]], "o": ["k": "v"], "big": .number(1e300), "tiny": .number(-2.5e-300)]
        let parsed = try JSONSerialization.jsonObject(with: Data(value.encoded().utf8), options: [.fragmentsAllowed])
        let object = try #require(parsed as? [String: Any])
        #expect(object["s"] as? String == "x\u{01}\"\\/")
        #expect(object["i"] as? Int == -7)
        #expect(object["d"] as? Double == 0.125)
        #expect(object["f"] as? Double == 2)
        #expect(object["b"] as? Bool == false)
        #expect(object["n"] is NSNull)
        #expect((object["a"] as? [Any])?.count == 3)
        #expect((object["o"] as? [String: Any])?["k"] as? String == "v")
        #expect(object["big"] as? Double == 1e300)
    }

    @Test func equalityComparesMembersInOrder() {
        let ab: JSONValue = ["a": 1, "b": 2]
        #expect(ab == ["a": 1, "b": 2])
        #expect(ab != ["b": 2, "a": 1])
        #expect(JSONValue.number(1, decimals: 2) != .number(1))
        #expect(JSONValue.int(1) != .number(1))
    }
}
