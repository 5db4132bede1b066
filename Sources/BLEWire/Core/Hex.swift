/// Hex helpers for logging, tests and the command line.
extension Sequence where Element == UInt8 {
    /// The bytes as lowercase hex, optionally separated (`"0a 1b"`).
    public func hexString(separator: String = "") -> String {
        // Contiguous bytes (an array, a slice, data) are read as a buffer: one call through the protocol, not one per
        // byte (this generic function is not specialized in other modules).
        if let text = withContiguousStorageIfAvailable({ hexText($0, separator: separator) }) { return text }
        return Array(self).withUnsafeBufferPointer { hexText($0, separator: separator) }
    }
}

/// `bytes` as lowercase hex, separated by `separator`.
func hexText(_ bytes: UnsafeBufferPointer<UInt8>, separator: String) -> String {
    if separator.isEmpty {
        return String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            var at = 0
            for byte in bytes {
                out[at] = hexDigit(byte >> 4, uppercase: false)
                out[at + 1] = hexDigit(byte & 0x0F, uppercase: false)
                at += 2
            }
            return at
        }
    }
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count * (2 + separator.utf8.count))
    var first = true
    for byte in bytes {
        if !first { out.append(contentsOf: separator.utf8) }
        first = false
        out.append(hexDigit(byte >> 4, uppercase: false))
        out.append(hexDigit(byte & 0x0F, uppercase: false))
    }
    return String(decoding: out, as: UTF8.self)
}

/// The ASCII hex digit of `nibble` (0–15).
@inline(__always) func hexDigit(_ nibble: UInt8, uppercase: Bool) -> UInt8 {
    nibble < 10 ? 0x30 + nibble : (uppercase ? 0x37 : 0x57) + nibble
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

    /// Parses hex text; with `strict`, only text that is nothing but hex digits, two for each octet: ASCII `0-9`,
    /// `a-f` and `A-F`, with no separators, no `0x` prefix and no other characters (formats meant for files, where
    /// anything else is an error). Without `strict`, as ``init(hex:)``. `nil` if it is not hex.
    ///
    /// `""` is the empty array. To require a length, compare `count` afterwards.
    public init?(hex text: String, strict: Bool) {
        guard strict else {
            self.init(hex: text)
            return
        }
        let units = text.utf8
        guard units.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(units.count / 2)
        var high: UInt8?
        for unit in units {
            guard let nibble = asciiHexValue(unit) else { return nil }
            if let first = high {
                out.append(first << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        self = out
    }
}

/// The value of one ASCII hex digit (`0-9`, `a-f`, `A-F`), `nil` for any other code unit.
private func asciiHexValue(_ unit: UInt8) -> UInt8? {
    switch unit {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): unit - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): unit - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): unit - UInt8(ascii: "A") + 10
    default: nil
    }
}
