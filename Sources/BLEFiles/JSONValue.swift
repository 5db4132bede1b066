/// A JSON value (RFC 8259) that keeps JSON's own types, for machine-readable output such as one object per line:
/// numbers as numbers, booleans as booleans, lists as arrays, and strings only for text.
///
/// Objects keep their members in the order given (a dictionary literal's order), and ``encoded(sortingKeys:)`` can
/// sort them instead. Literals make values short to write:
///
/// ```swift
/// let line: JSONValue = ["event": "connected", "mtu": 247, "services": ["180D", "180F"], "connectable": true]
/// print(line.encoded())   // {"event":"connected","mtu":247,"services":["180D","180F"],"connectable":true}
/// ```
public enum JSONValue: Sendable, Equatable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// An integer.
    case int(Int)
    /// A floating-point number, written with `decimals` fixed decimal places, or as Swift's shortest exact form when
    /// `decimals` is `nil`. A number that is not finite is written as `null` (JSON has no infinities or NaN).
    case number(Double, decimals: Int? = nil)
    /// A string (escaped as JSON requires).
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object: its members in order (a key should appear once).
    case object([(key: String, value: JSONValue)])

    /// An integer value of any integer type (an integer beyond `Int`'s range is written as `null`).
    public static func integer(_ value: some BinaryInteger) -> JSONValue {
        Int(exactly: value).map(JSONValue.int) ?? .null
    }

    /// The value as JSON text on one line, with no insignificant whitespace. With `sortingKeys`, the members of every
    /// object are written in ascending order of their keys (compared by Unicode scalars), so the text does not depend
    /// on the order the members were given in.
    public func encoded(sortingKeys: Bool = false) -> String {
        var out = ""
        write(into: &out, sortingKeys: sortingKeys)
        return out
    }

    private func write(into out: inout String, sortingKeys: Bool) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i): out += String(i)
        case .number(let d, let decimals):
            guard d.isFinite else { out += "null"; return }
            if let decimals { out += Self.fixed(d, decimals: max(0, decimals)) } else { out += Self.shortest(d) }
        case .string(let s): Self.quote(s, into: &out)
        case .array(let values):
            out += "["
            for (i, value) in values.enumerated() {
                if i > 0 { out += "," }
                value.write(into: &out, sortingKeys: sortingKeys)
            }
            out += "]"
        case .object(let members):
            let ordered = sortingKeys
                ? members.sorted { $0.key.unicodeScalars.lexicographicallyPrecedes($1.key.unicodeScalars) { $0.value < $1.value } }
                : members
            out += "{"
            for (i, member) in ordered.enumerated() {
                if i > 0 { out += "," }
                Self.quote(member.key, into: &out)
                out += ":"
                member.value.write(into: &out, sortingKeys: sortingKeys)
            }
            out += "}"
        }
    }

    /// Writes `s` as a JSON string: quotation mark, reverse solidus and control characters escaped (RFC 8259, 7).
    private static func quote(_ s: String, into out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F || scalar.value == 0x2028 || scalar.value == 0x2029:
                // Other control characters, DEL and the line/paragraph separators that some readers take for line ends.
                let hex = String(scalar.value, radix: 16, uppercase: false)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }

    /// `d` with `decimals` places, rounded half away from zero, without Foundation.
    private static func fixed(_ d: Double, decimals: Int) -> String {
        let places = min(decimals, 15)
        var scale = 1.0
        for _ in 0..<places { scale *= 10 }
        let scaled = (abs(d) * scale).rounded(.toNearestOrAwayFromZero)
        guard scaled < 9e15 else { return shortest(d) }   // beyond exact integers: the shortest form is as precise
        let digits = String(UInt64(scaled))
        let padded = String(repeating: "0", count: max(0, places + 1 - digits.count)) + digits
        let whole = padded.dropLast(places)
        let fraction = padded.suffix(places)
        let negative = d < 0 && scaled != 0
        return (negative ? "-" : "") + whole + (places > 0 ? "." + fraction : "")
    }

    /// The shortest form that reads back as `d` (`0.1`, `5.0`, `1e+20`: each in JSON's number grammar).
    private static func shortest(_ d: Double) -> String { d.description }
}

extension JSONValue {
    /// Members equal in the same order; numbers equal when they are written the same way.
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.int(let a), .int(let b)): a == b
        case (.number(let a, let da), .number(let b, let db)): da == db && (a == b || (!a.isFinite && !b.isFinite && a.isNaN == b.isNaN))
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: false
        }
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
                     ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral {
    /// A string.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An integer.
    public init(integerLiteral value: Int) { self = .int(value) }
    /// A number, written in its shortest form.
    public init(floatLiteral value: Double) { self = .number(value) }
    /// A boolean.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// An array.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// An object, its members in the literal's order.
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(elements.map { (key: $0.0, value: $0.1) }) }
    /// `null`.
    public init(nilLiteral: ()) { self = .null }
}

extension JSONValue: CustomStringConvertible {
    /// The JSON text (``encoded(sortingKeys:)`` without sorting).
    public var description: String { encoded() }
}
