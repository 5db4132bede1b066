/// Hex helpers for logging, tests and the command line.
extension Sequence where Element == UInt8 {
    /// The bytes as lowercase hex, optionally separated (`"0a 1b"`).
    public func hexString(separator: String = "") -> String {
        let digits: [Character] = Array("0123456789abcdef")
        var out = ""
        var first = true
        for byte in self {
            if !first { out += separator }
            first = false
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return out
    }
}

extension Array where Element == UInt8 {
    /// Parses hex text such as `"0a1B"`, `"0a 1b"`, `"0a:1b"` or `"0x0a1b"`; `nil` if it is not hex.
    public init?(hex text: String) {
        let separators: Set<Character> = [" ", ":", "-", "_", "\n", "\t"]
        var digits: [Character] = text.lowercased().filter { !separators.contains($0) }.map { $0 }
        if digits.count >= 2, digits[0] == "0", digits[1] == "x" { digits.removeFirst(2) }
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        var i = 0
        while i < digits.count {
            guard let hi = digits[i].hexDigitValue, let lo = digits[i + 1].hexDigitValue else { return nil }
            out.append(UInt8(hi << 4 | lo))
            i += 2
        }
        self = out
    }
}
