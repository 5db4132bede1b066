import Foundation

/// A JSON value for `--json` output lines: numbers stay numbers.
enum JSONValue {
    case string(String)
    case int(Int)
    case number(Double, decimals: Int)
    case bool(Bool)
    case null

    var text: String {
        switch self {
        case .string(let s): "\"\(escape(s))\""
        case .int(let i): String(i)
        case .number(let d, let decimals): d.isFinite ? String(format: "%.\(decimals)f", d) : "null"
        case .bool(let b): b ? "true" : "false"
        case .null: "null"
        }
    }
}

/// Writes one JSON object per line, keys in the order given.
func writeJSONLine(_ fields: [(String, JSONValue)]) {
    writeLine("{" + fields.map { "\"\(escape($0.0))\":\($0.1.text)" }.joined(separator: ",") + "}")
}

/// Whether standard output is a terminal (the live table then redraws in place).
var standardOutputIsTerminal: Bool { isatty(STDOUT_FILENO) != 0 }
