import BLE
import BLEFiles

/// Reading JSON from the broker (other gateways' views and presence decisions, requests): strict RFC 8259 into
/// `JSONValue`, by a parser of its own (every decision and view a fleet shares passes here, the gateway's own
/// decisions among them, echoed by the broker: MQTT 3.1.1 has no No Local). Malformed text is `nil`, never a trap.
///
/// What it accepts is what RFC 8259 allows: one value (a scalar too) between optional whitespace; strings of valid
/// UTF-8 without unescaped control characters, escapes as section 7 lists them (`\u` escapes of surrogates in pairs);
/// numbers by section 6's grammar. An integer that fits `Int` is `.int`; any other number, `.number` (the nearest
/// `Double`). An object's members come sorted by key; a repeated key keeps its first value. Nesting
/// deeper than ``maximumDepth`` is refused, so hostile text cannot exhaust the stack.
enum GatewayJSON {
    /// Arrays and objects nested deeper than this are refused.
    static let maximumDepth = 256

    /// The value of JSON text; `nil` when it is not JSON.
    static func parse(_ bytes: [UInt8]) -> JSONValue? {
        var parser = Parser(bytes: bytes)
        guard let value = parser.value(depth: 0) else { return nil }
        parser.skipWhitespace()
        guard parser.index == bytes.count else { return Optional.none }    // (JSONValue takes nil for null)
        return value
    }

    /// A recursive-descent parser over the bytes (every read bounds-checked).
    private struct Parser {
        let bytes: [UInt8]
        var index = 0

        var next: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipWhitespace() {
            while let byte = next, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
        }

        mutating func value(depth: Int) -> JSONValue? {
            skipWhitespace()
            guard let byte = next else { return nil }
            switch byte {
            case UInt8(ascii: "{"): return object(depth: depth + 1)
            case UInt8(ascii: "["): return array(depth: depth + 1)
            case UInt8(ascii: "\""): return string().map(JSONValue.string)
            case UInt8(ascii: "t"): return literal("true") ? JSONValue.bool(true) : Optional.none
            case UInt8(ascii: "f"): return literal("false") ? JSONValue.bool(false) : Optional.none
            case UInt8(ascii: "n"): return literal("null") ? JSONValue.null : Optional.none
            default: return number()
            }
        }

        mutating func literal(_ word: StaticString) -> Bool {
            let count = word.utf8CodeUnitCount
            guard bytes.count - index >= count else { return false }
            for k in 0..<count where bytes[index + k] != word.utf8Start[k] { return false }
            index += count
            return true
        }

        mutating func object(depth: Int) -> JSONValue? {
            guard depth <= GatewayJSON.maximumDepth else { return nil }
            index += 1    // {
            var members: [(key: String, value: JSONValue)] = []
            skipWhitespace()
            if next == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            while true {
                skipWhitespace()
                guard next == UInt8(ascii: "\""), let key = string() else { return nil }
                skipWhitespace()
                guard next == UInt8(ascii: ":") else { return nil }
                index += 1
                guard let value = value(depth: depth) else { return nil }
                // A repeated key keeps its first value (RFC 8259 leaves it to the reader; JSONDecoder does this).
                if !members.contains(where: { $0.key == key }) { members.append((key, value)) }
                skipWhitespace()
                switch next {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "}"):
                    index += 1
                    // Sorted by key, as readers of these objects have always had them.
                    members.sort { $0.key < $1.key }
                    return .object(members)
                default: return nil
                }
            }
        }

        mutating func array(depth: Int) -> JSONValue? {
            guard depth <= GatewayJSON.maximumDepth else { return nil }
            index += 1    // [
            var values: [JSONValue] = []
            skipWhitespace()
            if next == UInt8(ascii: "]") {
                index += 1
                return .array(values)
            }
            while true {
                guard let value = value(depth: depth) else { return nil }
                values.append(value)
                skipWhitespace()
                switch next {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "]"):
                    index += 1
                    return .array(values)
                default: return nil
                }
            }
        }

        /// A string from its opening quote: escapes decoded, UTF-8 validated.
        mutating func string() -> String? {
            index += 1    // "
            var utf8: [UInt8] = []
            while true {
                guard let byte = next else { return nil }
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    // Valid UTF-8 only: String(validating:) refuses what String(decoding:) would repair.
                    return String(validating: utf8, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard let escaped = next else { return nil }
                    index += 1
                    switch escaped {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(escaped)
                    case UInt8(ascii: "b"): utf8.append(0x08)
                    case UInt8(ascii: "f"): utf8.append(0x0C)
                    case UInt8(ascii: "n"): utf8.append(0x0A)
                    case UInt8(ascii: "r"): utf8.append(0x0D)
                    case UInt8(ascii: "t"): utf8.append(0x09)
                    case UInt8(ascii: "u"):
                        guard let scalar = unicodeEscape() else { return nil }
                        utf8.append(contentsOf: String(Character(scalar)).utf8)
                    default: return nil
                    }
                case 0x00..<0x20:
                    return nil    // control characters must be escaped (RFC 8259, section 7)
                default:
                    utf8.append(byte)
                }
            }
        }

        /// The scalar of a `\uXXXX` escape (after the `u`), or of a surrogate pair of two.
        mutating func unicodeEscape() -> Unicode.Scalar? {
            guard let first = hex4() else { return nil }
            switch first {
            case 0xD800..<0xDC00:
                guard literal("\\u"), let second = hex4(), (0xDC00..<0xE000).contains(second) else { return nil }
                return Unicode.Scalar(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))
            case 0xDC00..<0xE000:
                return nil
            default:
                return Unicode.Scalar(first)
            }
        }

        mutating func hex4() -> UInt32? {
            guard bytes.count - index >= 4 else { return nil }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: return nil
                }
                value = value << 4 | UInt32(digit)
                index += 1
            }
            return value
        }

        /// A number by RFC 8259's grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
        mutating func number() -> JSONValue? {
            let start = index
            if next == UInt8(ascii: "-") { index += 1 }
            guard let lead = next, isDigit(lead) else { return nil }
            index += 1
            if lead != UInt8(ascii: "0") { while let d = next, isDigit(d) { index += 1 } }
            var integral = true
            if next == UInt8(ascii: ".") {
                integral = false
                index += 1
                guard let d = next, isDigit(d) else { return nil }
                while let d = next, isDigit(d) { index += 1 }
            }
            if next == UInt8(ascii: "e") || next == UInt8(ascii: "E") {
                integral = false
                index += 1
                if next == UInt8(ascii: "+") || next == UInt8(ascii: "-") { index += 1 }
                guard let d = next, isDigit(d) else { return nil }
                while let d = next, isDigit(d) { index += 1 }
            }
            var text = ""
            text.reserveCapacity(index - start)
            for k in start..<index { text.unicodeScalars.append(Unicode.Scalar(bytes[k])) }
            if integral, let int = Int(text) { return .int(int) }
            guard let double = Double(text), double.isFinite else { return nil }
            return .number(double)
        }

        func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
    }

    /// The members of a JSON object; `nil` when the text is not one.
    static func object(_ bytes: [UInt8]) -> [String: JSONValue]? {
        guard case .object(let members) = parse(bytes) else { return nil }
        var result: [String: JSONValue] = [:]
        for member in members where result[member.key] == nil { result[member.key] = member.value }
        return result
    }

    /// A number as a `Double`.
    static func double(_ value: JSONValue?) -> Double? {
        switch value {
        case .int(let i): Double(i)
        case .number(let d, _): d
        default: nil
        }
    }
}
