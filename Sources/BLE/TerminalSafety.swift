extension String {
    /// The string with everything that could act on a terminal or forge output written as a visible escape: C0
    /// control characters (newline `\n`, carriage return `\r`, tab `\t`, escape and the rest as `\u{1B}`), DEL and C1
    /// controls (`\u{7F}`, `\u{9B}`), and the bidirectional overrides and isolates that reorder what is shown
    /// (U+202A–U+202E, U+2066–U+2069); a backslash is doubled so that an escape is never ambiguous. Anything else
    /// printable, in any script, is kept.
    ///
    /// Names and strings from the air (a device's advertised name, a characteristic's text) are chosen by whoever
    /// transmits them: printed raw, `"\u{1B}[2J"` would clear the screen and `"ok\nconnected to …"` would forge a
    /// line. Print them through this; JSON output needs no such step (JSON escapes control characters itself).
    public var escapingControlCharacters: String {
        var out = ""
        out.reserveCapacity(utf8.count)
        for scalar in unicodeScalars {
            switch scalar.value {
            case 0x0A: out += "\\n"
            case 0x0D: out += "\\r"
            case 0x09: out += "\\t"
            case 0x5C: out += "\\\\"
            case 0x00...0x1F, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069:
                out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
