@testable import BLEFiles
import BLEVirtualController
import Foundation
import Testing

extension SplitMix64 {
    /// A number in `0..<n`.
    fileprivate mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}

/// `JSONValue(strictJSON:)` (the strict reader of device files, which the gateway reads its broker's JSON with)
/// against Foundation's `JSONDecoder` (the gateway's reader before it): the same values for valid text, refused where
/// `JSONDecoder` refuses, on fixed cases and on seeded random texts and their mutations; and the cases RFC 8259
/// settles where `JSONDecoder` is lenient.
@Suite struct StrictJSONValueTests {
    /// The strict reader's value, `nil` for what it refuses.
    static func ours(_ bytes: [UInt8]) -> JSONValue? { try? JSONValue(strictJSON: bytes) }

    /// Foundation's reading, as the gateway did it before: `JSONDecoder` into `JSONValue`, members sorted by key.
    private struct Reference: Decodable {
        var value: JSONValue

        private struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        init(from decoder: any Decoder) throws {
            if var array = try? decoder.unkeyedContainer() {
                var values: [JSONValue] = []
                while !array.isAtEnd { values.append(try array.decode(Reference.self).value) }
                value = .array(values)
                return
            }
            if let object = try? decoder.container(keyedBy: Key.self) {
                var members: [(key: String, value: JSONValue)] = []
                for key in object.allKeys.sorted(by: { $0.stringValue < $1.stringValue }) {
                    members.append((key.stringValue, try object.decode(Reference.self, forKey: key).value))
                }
                value = .object(members)
                return
            }
            let single = try decoder.singleValueContainer()
            if single.decodeNil() {
                value = .null
            } else if let b = try? single.decode(Bool.self) {
                value = .bool(b)
            } else if let i = try? single.decode(Int.self) {
                value = .int(i)
            } else if let d = try? single.decode(Double.self) {
                value = .number(d)
            } else {
                value = .string(try single.decode(String.self))
            }
        }

        static func parse(_ bytes: [UInt8]) -> JSONValue? {
            try? JSONDecoder().decode(Reference.self, from: Data(bytes)).value
        }
    }

    /// Numbers compared by value (`1.0` may come as `.int(1)` from one reader and `.number(1)` from the other); an
    /// object's members in key order (the reference sorts them; ours keeps the text's order).
    static func same(_ a: JSONValue?, _ b: JSONValue?) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case (.int(let x)?, .int(let y)?): return x == y
        case (.int(let x)?, .number(let y, _)?), (.number(let y, _)?, .int(let x)?): return Double(x) == y
        case (.number(let x, _)?, .number(let y, _)?): return x == y
        case (.array(let x)?, .array(let y)?): return x.count == y.count && zip(x, y).allSatisfy { same($0, $1) }
        case (.object(let x)?, .object(let y)?):
            let (x, y) = (x.sorted { $0.key < $1.key }, y.sorted { $0.key < $1.key })
            return x.count == y.count && zip(x, y).allSatisfy { $0.key == $1.key && same($0.value, $1.value) }
        default: return a == b
        }
    }

    static let fixed: [String] = [
        #"{"gateway":"kitchen","device":"00:5B:00:00:00:04","rssi":-61.5,"at":12}"#,
        #"{"id":"r1","op":"read","address":"AA:BB:CC:DD:EE:FF","characteristic":"2A19"}"#,
        #" [1, -2, 3.5, 1e3, -0.25E-2, 0, -0, 12345678901234567890, true, false, null, "x"] "#,
        #"{"a":{"b":[{"c":[]},{}]},"z":"\u00e9\ud83d\ude00\n\t\"\\\/\b\f\r"}"#,
        #""top-level string""#, "42", "-7", "3.25", "true", "null",
        // Refused: not JSON by RFC 8259.
        "", " ", "{", "[1,]", "{\"a\":1,}", "[01]", "[1.]", "[.5]", "[+1]", "[1e]", "[--1]", "[NaN]", "[Infinity]",
        "{'a':1}", "{a:1}", "[\"\\x\"]", "[\"\\u12\"]", "[\"\\ud800\"]", "[\"\\udc00\"]", "[\"a\u{01}b\"]",
        "[1] [2]", "[1]x", "tru", "nul", "falsey", "[\"unterminated]", "{\"a\" 1}", "[1 2]",
    ]

    /// Where `JSONDecoder` accepts what RFC 8259's grammar does not (section 2: `value-separator` only between
    /// values): a trailing comma in an array or object. The strict reader follows the RFC.
    static func isTrailingComma(_ bytes: [UInt8]) -> Bool {
        var previous: UInt8?
        for byte in bytes where ![0x20, 0x09, 0x0A, 0x0D].contains(byte) {
            if previous == UInt8(ascii: ","), byte == UInt8(ascii: "]") || byte == UInt8(ascii: "}") { return true }
            previous = byte
        }
        return false
    }

    /// What `JSONDecoder` takes and the strict reader refuses: what RFC 8259's grammar does not allow (trailing commas,
    /// a NUL before or after the value, an invalid escape or number in a repeated member that `JSONDecoder` never reads),
    /// and any repeated member name (section 4: names SHOULD be unique; readers differ on which value counts, so a
    /// message that repeats one is not read at all).
    @Test func refusesWhatJSONDecoderTakesAndRFC8259DoesNot() {
        for text in ["[1,]", "{\"a\":1,}", "[[],]", " [ 1 , ] ", "\u{0}1", "9\u{0}", #"{"a":1,"a":"\q"}"#, #"{"a":1,"a":1E-}"#,
                     #"{"a":1,"a":2}"#, "[1e999]"] {
            #expect(Self.ours(Array(text.utf8)) == nil, "\(text)")
        }
    }

    @Test func readsWhatJSONDecoderReads() {
        for text in Self.fixed where !Self.isTrailingComma(Array(text.utf8)) {
            let bytes = Array(text.utf8)
            let ours = Self.ours(bytes), reference = Reference.parse(bytes)
            #expect(Self.same(ours, reference), "\(text): ours \(String(describing: ours)), JSONDecoder's \(String(describing: reference))")
        }
    }

    /// Past 16 members the names are kept in a set: a repeated name is found there as in the first sixteen.
    @Test func findsARepeatedNameInAnObjectOfManyMembers() {
        let members = (0..<20_000).map { "\"k\($0)\":\($0)" }
        let object = "{" + members.joined(separator: ",") + "}"
        guard case .object(let read)? = Self.ours(Array(object.utf8)) else {
            Issue.record("an object of 20,000 distinct members was refused")
            return
        }
        #expect(read.count == 20_000 && read.last?.key == "k19999")
        for repeated in ["k3", "k17", "k19998"] {
            let text = "{" + members.joined(separator: ",") + ",\"\(repeated)\":0}"
            #expect(Self.ours(Array(text.utf8)) == nil, "\(repeated)")
        }
        #expect(Self.ours(Array(#"{"a":1,"b":2,"a":3}"#.utf8)) == nil)
    }

    @Test func refusesInvalidUTF8AndLoneSurrogates() {
        #expect(Self.ours([0x22, 0xFF, 0x22]) == nil)
        #expect(Self.ours([0x22, 0xC3, 0x22]) == nil)
        #expect(Self.ours(Array(#"["\ud83d x"]"#.utf8)) == nil)
        #expect(Self.ours(Array(#""\ud83d\ude00""#.utf8)) == .string("😀"))
    }

    @Test func refusesNestingDeeperThanItsLimitWithoutExhaustingTheStack() {
        let deep = Array(repeating: UInt8(ascii: "["), count: 100_000) + Array(repeating: UInt8(ascii: "]"), count: 100_000)
        #expect(Self.ours(deep) == nil)
        let limit = StrictJSONParser.maximumDepth
        let atLimit = Array(repeating: UInt8(ascii: "["), count: limit) + Array(repeating: UInt8(ascii: "]"), count: limit)
        #expect(Self.ours(atLimit) != nil)
        let over = [UInt8(ascii: "[")] + atLimit + [UInt8(ascii: "]")]
        #expect(Self.ours(over) == nil)
    }


    static func text(_ random: inout SplitMix64, depth: Int) -> String {
        let pieces = ["0", "-1", "17", "2.5", "-0.125", "6.02e23", "1E-3", "true", "false", "null",
                      #""""#, #""name""#, #""é\u00e9\n""#, #""\ud83d\ude00""#, #""a\"b\\c""#]
        switch depth > 3 ? 0 : random.below(4) {
        case 1:
            return "[" + (0..<random.below(4)).map { _ in text(&random, depth: depth + 1) }.joined(separator: ",") + "]"
        case 2:
            // Each key once (a repeated one is refused by the strict reader, and JSONDecoder takes the first).
            var keys = ["a", "b", "rssi", "gateway", "é"]
            return "{" + (0..<random.below(4)).map { _ in "\"\(keys.remove(at: random.below(keys.count)))\":" + text(&random, depth: depth + 1) }
                .joined(separator: ",") + "}"
        default:
            return pieces[random.below(pieces.count)]
        }
    }

    @Test(arguments: [1, 2, 3] as [UInt64])
    func randomTextsAndTheirMutationsReadAsJSONDecoderReadsThem(seed: UInt64) {
        var random = SplitMix64(seed: seed)    // seeded, so a failure replays
        // No NUL: JSONDecoder takes one before or after a value ("\0" "1", "9" "\0"), which RFC 8259 does not.
        let alphabet = Array(#"{}[]:,"\ -+.eE0159tfnul/"#.utf8) + [0x01, 0x1F, 0xC3, 0xA9, 0xFF]
        for _ in 0..<400 {
            var bytes = Array(Self.text(&random, depth: 0).utf8)
            let ours = Self.ours(bytes), reference = Reference.parse(bytes)
            #expect(ours != nil)
            #expect(Self.same(ours, reference), "\(String(decoding: bytes, as: UTF8.self))")
            // Mutations: a byte replaced, inserted or removed.
            for _ in 0..<4 where !bytes.isEmpty {
                let at = random.below(bytes.count)
                switch random.below(3) {
                case 0: bytes[at] = alphabet[random.below(alphabet.count)]
                case 1: bytes.insert(alphabet[random.below(alphabet.count)], at: at)
                default: bytes.remove(at: at)
                }
                let ours = Self.ours(bytes)
                // Left out: a trailing comma (one before a closing bracket inside a string too: such texts are few), a
                // mutation that repeats a member name (refused here, read by JSONDecoder).
                var repeatsName = false
                do { _ = try JSONValue(strictJSON: bytes) } catch { repeatsName = error.reason.contains("appears twice") }
                let reference = Self.isTrailingComma(bytes) || repeatsName ? ours : Reference.parse(bytes)
                #expect(Self.same(ours, reference), "\(bytes.map { String(format: "%02X", $0) }.joined()): ours \(String(describing: ours)), JSONDecoder's \(String(describing: reference))")
            }
        }
    }
}
