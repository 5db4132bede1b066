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
struct JSONSyntaxError: Error, Sendable, Hashable {
    var line: Int
    var column: Int
    /// The JSON path of the value being read when the error was found.
    var path: String
    var reason: String
}

/// A strict RFC 8259 parser over UTF-8 bytes: no comments, no trailing commas, no leading zeros, no control
/// characters in strings, no duplicate member names (the RFC says names SHOULD be unique; a file that repeats one is
/// almost surely a mistake), at most 64 levels of nesting, and nothing but whitespace after the value.
struct StrictJSONParser {
    private let bytes: [UInt8]
    private var index = 0
    private var line = 1
    private var lineStart = 0
    private var depth = 0
    static let maximumDepth = 64

    static func parse(_ bytes: [UInt8]) throws(JSONSyntaxError) -> PositionedJSON {
        var parser = StrictJSONParser(bytes: bytes)
        // A UTF-8 byte order mark may open the text (RFC 8259, 8.1 lets parsers ignore it).
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            parser.index = 3
            parser.lineStart = 3
        }
        parser.skipWhitespace()
        let value = try parser.value(path: "$")
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.error("$", "unexpected \(parser.describeNext()) after the JSON value") }
        return value
    }

    private init(bytes: [UInt8]) { self.bytes = bytes }

    private var column: Int { index - lineStart + 1 }

    private func error(_ path: String, _ reason: String) -> JSONSyntaxError {
        JSONSyntaxError(line: line, column: column, path: path, reason: reason)
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

    private mutating func value(path: String) throws(JSONSyntaxError) -> PositionedJSON {
        let (startLine, startColumn) = (line, column)
        guard index < bytes.count else { throw error(path, "expected a value, found end of file") }
        let kind: PositionedJSON.Kind
        switch bytes[index] {
        case UInt8(ascii: "{"): kind = try object(path: path)
        case UInt8(ascii: "["): kind = try array(path: path)
        case UInt8(ascii: "\""): kind = .string(try string(path: path))
        case UInt8(ascii: "t"): try literal("true", path: path); kind = .bool(true)
        case UInt8(ascii: "f"): try literal("false", path: path); kind = .bool(false)
        case UInt8(ascii: "n"): try literal("null", path: path); kind = .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): kind = .number(try number(path: path))
        default: throw error(path, "expected a value, found \(describeNext())")
        }
        return PositionedJSON(kind: kind, line: startLine, column: startColumn)
    }

    private mutating func literal(_ word: String, path: String) throws(JSONSyntaxError) {
        let w = Array(word.utf8)
        guard index + w.count <= bytes.count, Array(bytes[index..<index + w.count]) == w else {
            throw error(path, "expected a value, found \(describeNext())")
        }
        index += w.count
    }

    private mutating func enter(_ path: String) throws(JSONSyntaxError) {
        depth += 1
        guard depth <= Self.maximumDepth else { throw error(path, "nested deeper than \(Self.maximumDepth) levels") }
    }

    private mutating func object(path: String) throws(JSONSyntaxError) -> PositionedJSON.Kind {
        try enter(path)
        index += 1
        var members: [(key: String, value: PositionedJSON)] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw error(path, "expected a member name in double quotes, found \(describeNext())")
            }
            let key = try string(path: path)
            let memberPath = path + "." + key
            if members.contains(where: { $0.key == key }) { throw error(memberPath, "the member \"\(key)\" appears twice in this object") }
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error(memberPath, "expected ':' after the member name, found \(describeNext())") }
            index += 1
            skipWhitespace()
            members.append((key, try value(path: memberPath)))
            skipWhitespace()
            guard index < bytes.count else { throw error(path, "expected ',' or '}', found end of file") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                skipWhitespace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "}") { throw error(path, "a trailing ',' before '}' (JSON allows none)") }
                continue
            }
            guard bytes[index] == UInt8(ascii: "}") else { throw error(path, "expected ',' or '}' after a member, found \(describeNext())") }
            index += 1
            depth -= 1
            return .object(members)
        }
    }

    private mutating func array(path: String) throws(JSONSyntaxError) -> PositionedJSON.Kind {
        try enter(path)
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
            elements.append(try value(path: "\(path)[\(elements.count)]"))
            skipWhitespace()
            guard index < bytes.count else { throw error(path, "expected ',' or ']', found end of file") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                skipWhitespace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "]") { throw error(path, "a trailing ',' before ']' (JSON allows none)") }
                continue
            }
            guard bytes[index] == UInt8(ascii: "]") else { throw error(path, "expected ',' or ']' after an element, found \(describeNext())") }
            index += 1
            depth -= 1
            return .array(elements)
        }
    }

    private mutating func number(path: String) throws(JSONSyntaxError) -> String {
        let start = index
        func digits() -> Int {
            let from = index
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") { index += 1 }
            return index - from
        }
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") else {
            throw error(path, "expected a digit after '-'")
        }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                throw error(path, "a number may not start with a leading zero")
            }
        } else {
            _ = digits()
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { throw error(path, "expected a digit after the decimal point") }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { throw error(path, "expected a digit in the exponent") }
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    private mutating func hex4(path: String) throws(JSONSyntaxError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw error(path, "expected 4 hex digits after \\u") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let b = bytes[index]
            let d: UInt8
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = b - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = b - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = b - UInt8(ascii: "A") + 10
            default: throw error(path, "expected 4 hex digits after \\u, found \(describeNext())")
            }
            v = v << 4 | UInt32(d)
            index += 1
        }
        return v
    }

    /// A string at `index` (which is at its opening quote).
    private mutating func string(path: String) throws(JSONSyntaxError) -> String {
        index += 1
        var scalars = String.UnicodeScalarView()
        var run = index
        func flush(_ end: Int) throws(JSONSyntaxError) {
            guard run < end else { return }
            // Validates the raw UTF-8 between escapes.
            guard let text = String(validating: bytes[run..<end], as: UTF8.self) else {
                throw error(path, "the string is not valid UTF-8")
            }
            scalars.append(contentsOf: text.unicodeScalars)
        }
        while true {
            guard index < bytes.count else { throw error(path, "the string is not closed (end of file)") }
            let b = bytes[index]
            if b == UInt8(ascii: "\"") {
                try flush(index)
                index += 1
                return String(scalars)
            }
            if b < 0x20 { throw error(path, "a control character (0x\(String(b, radix: 16, uppercase: true))) in a string: escape it") }
            guard b == UInt8(ascii: "\\") else {
                index += 1
                continue
            }
            try flush(index)
            index += 1
            guard index < bytes.count else { throw error(path, "the string is not closed (end of file)") }
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
                var code = try hex4(path: path)
                if code >= 0xD800 && code < 0xDC00 {
                    guard index + 2 <= bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                        throw error(path, "a high surrogate \\u\(String(code, radix: 16, uppercase: true)) without its low surrogate")
                    }
                    index += 2
                    let low = try hex4(path: path)
                    guard low >= 0xDC00 && low < 0xE000 else { throw error(path, "a high surrogate followed by \\u\(String(low, radix: 16, uppercase: true)), not a low one") }
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let scalar = Unicode.Scalar(code) else { throw error(path, "a lone low surrogate \\u\(String(code, radix: 16, uppercase: true))") }
                scalars.append(scalar)
            default:
                index -= 1
                throw error(path, "an invalid escape '\\\(Character(Unicode.Scalar(e)))'")
            }
            run = index
        }
    }
}
