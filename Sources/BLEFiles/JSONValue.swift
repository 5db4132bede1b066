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
        String(decoding: encodedBytes(sortingKeys: sortingKeys), as: UTF8.self)
    }

    /// The value as JSON text in UTF-8, exactly the bytes of ``encoded(sortingKeys:)``, written straight into an
    /// array (what goes on the wire: an MQTT payload, a line of output), without a `String` on the way.
    public func encodedBytes(sortingKeys: Bool = false) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(128)
        write(into: &out, sortingKeys: sortingKeys)
        return out
    }

    private func write(into out: inout [UInt8], sortingKeys: Bool) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .int(let i): out.append(contentsOf: String(i).utf8)
        case .number(let d, let decimals):
            guard d.isFinite else { out.append(contentsOf: "null".utf8); return }
            if let decimals { Self.writeFixed(d, decimals: max(0, decimals), into: &out) } else { out.append(contentsOf: Self.shortest(d).utf8) }
        case .string(let s): Self.quote(s, into: &out)
        case .array(let values):
            out.append(UInt8(ascii: "["))
            for (i, value) in values.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                value.write(into: &out, sortingKeys: sortingKeys)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            let ordered = sortingKeys
                ? members.sorted { $0.key.unicodeScalars.lexicographicallyPrecedes($1.key.unicodeScalars) { $0.value < $1.value } }
                : members
            out.append(UInt8(ascii: "{"))
            for (i, member) in ordered.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                Self.quote(member.key, into: &out)
                out.append(UInt8(ascii: ":"))
                member.value.write(into: &out, sortingKeys: sortingKeys)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Writes `s` as a JSON string: quotation mark, reverse solidus and control characters escaped (RFC 8259, 7), and
    /// DEL and the line/paragraph separators U+2028 and U+2029, which some readers take for line ends. Runs of bytes
    /// that need no escape are copied whole.
    private static func quote(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var s = s
        s.withUTF8 { bytes in
            var run = 0
            var i = 0
            func escape(_ text: String, skipping count: Int) {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<i]))
                out.append(contentsOf: text.utf8)
                i += count
                run = i
            }
            while i < bytes.count {
                let b = bytes[i]
                switch b {
                case 0x22: escape("\\\"", skipping: 1)
                case 0x5C: escape("\\\\", skipping: 1)
                case 0x0A: escape("\\n", skipping: 1)
                case 0x0D: escape("\\r", skipping: 1)
                case 0x09: escape("\\t", skipping: 1)
                case 0x08: escape("\\b", skipping: 1)
                case 0x0C: escape("\\f", skipping: 1)
                case 0x00..<0x20, 0x7F:
                    let digits = Array("0123456789abcdef".utf8)
                    escape("\\u00" + String(decoding: [digits[Int(b >> 4)], digits[Int(b & 0x0F)]], as: UTF8.self), skipping: 1)
                case 0xE2 where i + 2 < bytes.count && bytes[i + 1] == 0x80 && (bytes[i + 2] == 0xA8 || bytes[i + 2] == 0xA9):
                    escape(bytes[i + 2] == 0xA8 ? "\\u2028" : "\\u2029", skipping: 3)
                default:
                    i += 1
                }
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<bytes.count]))
        }
        out.append(UInt8(ascii: "\""))
    }

    /// `d` with `decimals` places, rounded half away from zero, without Foundation.
    private static func writeFixed(_ d: Double, decimals: Int, into out: inout [UInt8]) {
        let places = min(decimals, 15)
        var scale = 1.0
        for _ in 0..<places { scale *= 10 }
        let scaled = (abs(d) * scale).rounded(.toNearestOrAwayFromZero)
        guard scaled < 9e15 else {
            // Beyond exact integers: the shortest form is as precise.
            out.append(contentsOf: shortest(d).utf8)
            return
        }
        var value = UInt64(scaled)
        if d < 0 && value != 0 { out.append(UInt8(ascii: "-")) }
        // The digits, least significant first, at least one before the point: 16 for the value, 16 for the places.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { digits in
            var count = 0
            repeat {
                digits[count] = UInt8(ascii: "0") + UInt8(value % 10)
                value /= 10
                count += 1
            } while value > 0 || count <= places
            for index in stride(from: count - 1, through: 0, by: -1) {
                if index == places - 1 { out.append(UInt8(ascii: ".")) }
                out.append(digits[index])
            }
        }
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
