/// Who may use a ``WebServer``: the secret token every request must carry (in the `ble_web_token` cookie, or once in
/// the `?token=` query of the address that was printed), and the `Origin` a WebSocket handshake must come from.
///
/// These checks are pure functions of the request's parts, so they are tested without a socket.
public struct WebAccess: Sendable {
    /// The name of the cookie that carries the token once the page was opened with `?token=`.
    public static let cookieName = "ble_web_token"

    /// The secret, or `nil` when the server needs none (it listens on loopback and no token was given).
    public let token: String?

    /// Access with `token` as the secret (`nil`: every request is allowed).
    public init(token: String?) {
        self.token = token
    }

    /// What a request gets.
    public enum Decision: Sendable, Equatable {
        /// The request carries the token (or none is needed).
        case allowed
        /// The request carried the token in its query: answer with a redirect to `location` (the same address without
        /// the token, so that it leaves the address bar and the history) that sets the cookie `setCookie`.
        case redirect(location: String, setCookie: String)
        /// No token or a wrong one: 401.
        case denied
    }

    /// Decides on a request for `uri` (path and query) with the `Cookie` header values `cookies`.
    public func decide(uri: String, cookies: [String]) -> Decision {
        guard let token else { return .allowed }
        let (path, query) = Self.split(uri)
        if let given = Self.queryValue("token", in: query) {
            guard Self.constantTimeEqual(given, token) else { return .denied }
            let rest = Self.removingQueryItem("token", from: query)
            let location = rest.isEmpty ? path : path + "?" + rest
            return .redirect(location: location,
                             setCookie: "\(Self.cookieName)=\(token); Path=/; HttpOnly; SameSite=Strict")
        }
        for header in cookies {
            for part in header.split(separator: ";") {
                let pair = part.split(separator: "=", maxSplits: 1)
                guard pair.count == 2, pair[0].trimmingSpaces == Self.cookieName else { continue }
                if Self.constantTimeEqual(String(pair[1].trimmingSpaces), token) { return .allowed }
            }
        }
        return .denied
    }

    /// Whether a WebSocket handshake's `Origin` is the page this server served: `http://` and the request's own
    /// `Host` (compared without regard to case). A handshake without `Origin`, or from another site, is refused:
    /// a page elsewhere must not drive the radio through the user's browser.
    public static func originMatches(origin: String?, host: String?) -> Bool {
        guard let origin, let host, !host.isEmpty else { return false }
        return origin.lowercased() == "http://" + host.lowercased()
    }

    /// Whether `host` (an address to listen on) is a loopback address: `127.x.x.x`, `::1` or `localhost`.
    public static func isLoopback(_ host: String) -> Bool {
        let host = host.lowercased()
        return host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
    }

    /// The path and the query (without `?`) of a request URI.
    static func split(_ uri: String) -> (path: String, query: String) {
        guard let mark = uri.firstIndex(of: "?") else { return (uri, "") }
        return (String(uri[..<mark]), String(uri[uri.index(after: mark)...]))
    }

    /// The value of `name` in a query (`a=1&token=x`), percent-decoded; `nil` when absent.
    static func queryValue(_ name: String, in query: String) -> String? {
        for item in query.split(separator: "&") {
            let pair = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if pair.first.map(String.init) == name { return percentDecoded(pair.count > 1 ? String(pair[1]) : "") }
        }
        return nil
    }

    /// The query without the items named `name`.
    static func removingQueryItem(_ name: String, from query: String) -> String {
        query.split(separator: "&").filter { $0.split(separator: "=", maxSplits: 1).first.map(String.init) != name }.joined(separator: "&")
    }

    /// `%41` → `A`, `+` → space; a malformed escape is kept as it is.
    static func percentDecoded(_ text: String) -> String {
        var bytes: [UInt8] = []
        var utf8 = Array(text.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%"), utf8.count >= 2,
                      let high = HexBytes.nibble(utf8[utf8.startIndex]), let low = HexBytes.nibble(utf8[utf8.startIndex + 1]) {
                bytes.append(high << 4 | low)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Compares two secrets in time that depends on their lengths only, not on where they differ.
    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var difference: UInt8 = 0
        for (p, q) in zip(x, y) { difference |= p ^ q }
        return difference == 0
    }
}

extension Substring {
    var trimmingSpaces: Substring {
        var s = self
        while s.first == " " { s = s.dropFirst() }
        while s.last == " " { s = s.dropLast() }
        return s
    }
}

/// Hexadecimal text and bytes, for what the page sends: spaces, colons and dashes between bytes are allowed.
public enum HexBytes {
    /// The bytes `text` spells (`"01 a0"`, `"01:A0"`, `"01a0"`), or `nil` when it is not whole bytes of hex.
    public static func parse(_ text: String) -> [UInt8]? {
        let digits = text.utf8.filter { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: ":") && $0 != UInt8(ascii: "-") }
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    /// The value of one hex digit.
    static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// Lower-case hex without separators.
    public static func string(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// Where a ``WebServer`` listens: `127.0.0.1:8080`, `[::1]:8080`, `0.0.0.0:80`, `localhost:8080`.
public struct WebListenAddress: Sendable, Equatable, CustomStringConvertible {
    /// The host (an address or `localhost`), without brackets.
    public var host: String
    /// The TCP port (0: any free port).
    public var port: Int

    /// An address from its parts.
    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT` (`[IPv6]:PORT` for IPv6); `nil` when it is not one.
    public init?(parsing text: String) {
        let host: Substring, port: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[close...].hasPrefix("]:") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            port = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else { return nil }
            host = text[..<colon]
            port = text[text.index(after: colon)...]
        }
        guard !host.isEmpty, let number = Int(port), (0...65535).contains(number) else { return nil }
        self.host = String(host)
        self.port = number
    }

    /// Whether it is a loopback address (reachable from this machine only).
    public var isLoopback: Bool { WebAccess.isLoopback(host) }

    /// `127.0.0.1:8080`, `[::1]:8080`.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
