/// A JSON value read from text (RFC 8259), with the line and column where it starts, so that a file's mistakes can be
/// named by place. Only what ``GATTDeviceDescription`` needs: it is not a general JSON library.
struct PositionedJSON: Sendable {
    /// What the value is. Numbers keep their text (RFC 8259 does not bound them; the reader decides).
    enum Kind: Sendable {
        case null
        case bool(Bool)
        case number(String)
        case string(String)
        case array([PositionedJSON])
        case object([(key: String, value: PositionedJSON)])
    }
    var kind: Kind
    /// 1-based line and column (in Unicode scalars... counted as UTF-8 octets past the line start, plus one).
    var line: Int
    var column: Int

    /// The name of the value's type, for messages.
    var typeName: String {
        switch kind {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// A JSON syntax error: where and why.
package struct JSONSyntaxError: Error, Sendable, Hashable {
    package var line: Int
    package var column: Int
    /// The JSON path of the value being read when the error was found.
    package var path: String
    package var reason: String
}

/// A strict RFC 8259 parser over UTF-8 bytes: no comments, no trailing commas, no leading zeros, no control
/// characters in strings, no duplicate member names (the RFC says names SHOULD be unique; a file that repeats one is
/// almost surely a mistake, and a message that does is read differently by different readers), at most 64 levels of
/// nesting, and nothing but whitespace after the value. Device files and the JSON a gateway receives from its broker
/// are read by it.
struct StrictJSONParser {
    private let bytes: [UInt8]
    private var index = 0
    private var line = 1
    private var lineStart = 0
    private var depth = 0
    /// Where the parser is: the members and elements entered from the root, spelt out (`$.a[0].b`) only for an error.
    private var path: [Step] = []
    private enum Step {
        case member(String)
        case element(Int)
    }
    static let maximumDepth = 64

    static func parse(_ bytes: [UInt8]) throws(JSONSyntaxError) -> PositionedJSON {
        var parser = StrictJSONParser(bytes: bytes)
        // A UTF-8 byte order mark may open the text (RFC 8259, 8.1 lets parsers ignore it).
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            parser.index = 3
            parser.lineStart = 3
        }
        parser.skipWhitespace()
        let value = try parser.value()
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.error("unexpected \(parser.describeNext()) after the JSON value") }
        return value
    }

    private init(bytes: [UInt8]) { self.bytes = bytes }

    private var column: Int { index - lineStart + 1 }

    private func error(_ reason: String) -> JSONSyntaxError {
        var text = "$"
        for step in path {
            switch step {
            case .member(let key): text += "." + key
            case .element(let n): text += "[\(n)]"
            }
        }
        return JSONSyntaxError(line: line, column: column, path: text, reason: reason)
    }

    private func describeNext() -> String {
        guard index < bytes.count else { return "end of file" }
        let b = bytes[index]
        if b >= 0x21 && b < 0x7F { return "'\(Character(Unicode.Scalar(b)))'" }
        return "byte 0x\(String(b, radix: 16, uppercase: true))"
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0D: index += 1
            case 0x0A:
                index += 1
                line += 1
                lineStart = index
            default: return
            }
        }
    }

    private mutating func value() throws(JSONSyntaxError) -> PositionedJSON {
        let (startLine, startColumn) = (line, column)
        guard index < bytes.count else { throw error("expected a value, found end of file") }
        let kind: PositionedJSON.Kind
        switch bytes[index] {
        case UInt8(ascii: "{"): kind = try object()
        case UInt8(ascii: "["): kind = try array()
        case UInt8(ascii: "\""): kind = .string(try string())
        case UInt8(ascii: "t"): try literal("true"); kind = .bool(true)
        case UInt8(ascii: "f"): try literal("false"); kind = .bool(false)
        case UInt8(ascii: "n"): try literal("null"); kind = .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): kind = .number(try number())
        default: throw error("expected a value, found \(describeNext())")
        }
        return PositionedJSON(kind: kind, line: startLine, column: startColumn)
    }

    private mutating func literal(_ word: StaticString) throws(JSONSyntaxError) {
        let count = word.utf8CodeUnitCount
        guard bytes.count - index >= count,
              word.withUTF8Buffer({ bytes[index..<index + count].elementsEqual($0) }) else {
            throw error("expected a value, found \(describeNext())")
        }
        index += count
    }

    private mutating func enter() throws(JSONSyntaxError) {
        depth += 1
        guard depth <= Self.maximumDepth else { throw error("nested deeper than \(Self.maximumDepth) levels") }
    }

    private mutating func object() throws(JSONSyntaxError) -> PositionedJSON.Kind {
        try enter()
        index += 1
        var members: [(key: String, value: PositionedJSON)] = []
        // The names so far, once the object has 16 members (a scan of the members until then): an object of many
        // members from a hostile sender costs linear time, not quadratic.
        var names: Set<String> = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw error("expected a member name in double quotes, found \(describeNext())")
            }
            let key = try string()
            path.append(.member(key))
            let repeated: Bool
            if members.count < 16 {
                repeated = members.contains { $0.key == key }
            } else {
                if names.isEmpty { names = Set(members.map(\.key)) }
                repeated = !names.insert(key).inserted
            }
            if repeated { throw error("the member \"\(key)\" appears twice in this object") }
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':' after the member name, found \(describeNext())") }
            index += 1
            skipWhitespace()
            members.append((key, try value()))
            path.removeLast()
            skipWhitespace()
            guard index < bytes.count else { throw error("expected ',' or '}', found end of file") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                skipWhitespace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "}") { throw error("a trailing ',' before '}' (JSON allows none)") }
                continue
            }
            guard bytes[index] == UInt8(ascii: "}") else { throw error("expected ',' or '}' after a member, found \(describeNext())") }
            index += 1
            depth -= 1
            return .object(members)
        }
    }

    private mutating func array() throws(JSONSyntaxError) -> PositionedJSON.Kind {
        try enter()
        index += 1
        var elements: [PositionedJSON] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            path.append(.element(elements.count))
            elements.append(try value())
            path.removeLast()
            skipWhitespace()
            guard index < bytes.count else { throw error("expected ',' or ']', found end of file") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                skipWhitespace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "]") { throw error("a trailing ',' before ']' (JSON allows none)") }
                continue
            }
            guard bytes[index] == UInt8(ascii: "]") else { throw error("expected ',' or ']' after an element, found \(describeNext())") }
            index += 1
            depth -= 1
            return .array(elements)
        }
    }

    private mutating func number() throws(JSONSyntaxError) -> String {
        let start = index
        func digits() -> Int {
            let from = index
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") { index += 1 }
            return index - from
        }
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") else {
            throw error("expected a digit after '-'")
        }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                throw error("a number may not start with a leading zero")
            }
        } else {
            _ = digits()
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { throw error("expected a digit after the decimal point") }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { throw error("expected a digit in the exponent") }
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    private mutating func hex4() throws(JSONSyntaxError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("expected 4 hex digits after \\u") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let b = bytes[index]
            let d: UInt8
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = b - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = b - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = b - UInt8(ascii: "A") + 10
            default: throw error("expected 4 hex digits after \\u, found \(describeNext())")
            }
            v = v << 4 | UInt32(d)
            index += 1
        }
        return v
    }

    /// A string at `index` (which is at its opening quote).
    private mutating func string() throws(JSONSyntaxError) -> String {
        index += 1
        var scalars = String.UnicodeScalarView()
        var run = index
        func flush(_ end: Int) throws(JSONSyntaxError) {
            guard run < end else { return }
            // Validates the raw UTF-8 between escapes.
            guard let text = String(validating: bytes[run..<end], as: UTF8.self) else {
                throw error("the string is not valid UTF-8")
            }
            scalars.append(contentsOf: text.unicodeScalars)
        }
        while true {
            guard index < bytes.count else { throw error("the string is not closed (end of file)") }
            let b = bytes[index]
            if b == UInt8(ascii: "\"") {
                try flush(index)
                index += 1
                return String(scalars)
            }
            if b < 0x20 { throw error("a control character (0x\(String(b, radix: 16, uppercase: true))) in a string: escape it") }
            guard b == UInt8(ascii: "\\") else {
                index += 1
                continue
            }
            try flush(index)
            index += 1
            guard index < bytes.count else { throw error("the string is not closed (end of file)") }
            let e = bytes[index]
            index += 1
            switch e {
            case UInt8(ascii: "\""): scalars.append("\"")
            case UInt8(ascii: "\\"): scalars.append("\\")
            case UInt8(ascii: "/"): scalars.append("/")
            case UInt8(ascii: "b"): scalars.append("\u{08}")
            case UInt8(ascii: "f"): scalars.append("\u{0C}")
            case UInt8(ascii: "n"): scalars.append("\n")
            case UInt8(ascii: "r"): scalars.append("\r")
            case UInt8(ascii: "t"): scalars.append("\t")
            case UInt8(ascii: "u"):
                var code = try hex4()
                if code >= 0xD800 && code < 0xDC00 {
                    guard index + 2 <= bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                        throw error("a high surrogate \\u\(String(code, radix: 16, uppercase: true)) without its low surrogate")
                    }
                    index += 2
                    let low = try hex4()
                    guard low >= 0xDC00 && low < 0xE000 else { throw error("a high surrogate followed by \\u\(String(low, radix: 16, uppercase: true)), not a low one") }
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let scalar = Unicode.Scalar(code) else { throw error("a lone low surrogate \\u\(String(code, radix: 16, uppercase: true))") }
                scalars.append(scalar)
            default:
                index -= 1
                throw error("an invalid escape '\\\(Character(Unicode.Scalar(e)))'")
            }
            run = index
        }
    }
}

extension JSONValue {
    /// Reads JSON text as ``StrictJSONParser`` does (RFC 8259; no repeated member names; 64 levels at most): an
    /// integer that fits `Int` is `.int`, any other number `.number` (the nearest `Double`; one beyond its range is an
    /// error), an object's members in the text's order.
    package init(strictJSON bytes: [UInt8]) throws(JSONSyntaxError) {
        self = try Self.converting(StrictJSONParser.parse(bytes), path: "$")
    }

    private static func converting(_ value: PositionedJSON, path: @autoclosure () -> String) throws(JSONSyntaxError) -> JSONValue {
        switch value.kind {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .string(let s): return .string(s)
        case .number(let text):
            if !text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }), let int = Int(text) { return .int(int) }
            guard let double = Double(text), double.isFinite else {
                throw JSONSyntaxError(line: value.line, column: value.column, path: path(),
                                      reason: "the number \(text) is beyond the range of a 64-bit floating-point number")
            }
            return .number(double)
        case .array(let elements):
            var values: [JSONValue] = []
            values.reserveCapacity(elements.count)
            for (n, element) in elements.enumerated() { values.append(try converting(element, path: path() + "[\(n)]")) }
            return .array(values)
        case .object(let members):
            var converted: [(key: String, value: JSONValue)] = []
            converted.reserveCapacity(members.count)
            for member in members { converted.append((member.key, try converting(member.value, path: path() + "." + member.key))) }
            return .object(converted)
        }
    }
}
