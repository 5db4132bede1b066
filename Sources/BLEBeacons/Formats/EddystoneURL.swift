import BLEWire

/// The URL compression of Eddystone-URL frames: a scheme prefix byte, then printable ASCII in which the bytes
/// 0x00–0x0D stand for common top-level-domain endings. From the Eddystone-URL specification.
public enum EddystoneURLCoding {
    /// The scheme prefixes, indexed by their code (0x00–0x03).
    public static let schemes = ["http://www.", "https://www.", "http://", "https://"]
    /// The expansions, indexed by their code (0x00–0x0D).
    public static let expansions = [".com/", ".org/", ".edu/", ".net/", ".info/", ".biz/", ".gov/",
                                    ".com", ".org", ".edu", ".net", ".info", ".biz", ".gov"]
    /// The most bytes the encoded URL (after the scheme byte) may take in a frame.
    public static let maximumEncodedLength = 17

    /// Expands a scheme code and encoded bytes into the URL. Throws `WireError` with `invalidValue` for an
    /// unknown scheme code or a reserved byte (0x0E–0x20, 0x7F–0xFF).
    public static func decode(scheme: UInt8, _ encoded: [UInt8]) throws(WireError) -> String {
        guard let prefix = schemes.element(at: Int(scheme)) else {
            throw WireError(.invalidValue, "Eddystone-URL scheme code 0x\([scheme].hexString()) is not assigned")
        }
        var url = prefix
        for byte in encoded {
            if let expansion = expansions.element(at: Int(byte)) {
                url += expansion
            } else if (0x21...0x7E).contains(byte) {
                url.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                throw WireError(.invalidValue, "Eddystone-URL byte 0x\([byte].hexString()) is reserved")
            }
        }
        return url
    }

    /// Compresses a URL: the longest scheme prefix that matches, then the longest expansion at each position.
    /// Throws `WireError` with `invalidValue` when the URL has no known scheme or a character outside printable
    /// ASCII, `oversized` when the result is longer than 17 bytes.
    public static func encode(_ url: String) throws(WireError) -> (scheme: UInt8, encoded: [UInt8]) {
        let bytes = Array(url.utf8)
        // Longest matching scheme first (https://www. before https://).
        let candidates = schemes.enumerated().sorted { $0.element.utf8.count > $1.element.utf8.count }
        guard let (code, prefix) = candidates.first(where: { bytes.starts(with: Array($0.element.utf8)) }) else {
            throw WireError(.invalidValue, "URL '\(url)' does not start with http:// or https://")
        }
        var encoded: [UInt8] = []
        var i = prefix.utf8.count
        let ordered = expansions.enumerated().sorted { $0.element.utf8.count > $1.element.utf8.count }
        while i < bytes.count {
            let rest = bytes[i...]
            if let (expansionCode, expansion) = ordered.first(where: { rest.starts(with: Array($0.element.utf8)) }) {
                encoded.append(UInt8(expansionCode))
                i += expansion.utf8.count
                continue
            }
            let byte = bytes[i]
            guard (0x21...0x7E).contains(byte) else {
                throw WireError(.invalidValue, "URL '\(url)' has a character Eddystone-URL cannot carry (0x\([byte].hexString()))")
            }
            encoded.append(byte)
            i += 1
        }
        guard encoded.count <= maximumEncodedLength else {
            throw WireError(.oversized, "URL '\(url)' compresses to \(encoded.count) bytes; Eddystone-URL carries at most 17")
        }
        return (UInt8(code), encoded)
    }
}

extension Array {
    /// The element at `index`, or `nil` when it is out of bounds.
    func element(at index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
