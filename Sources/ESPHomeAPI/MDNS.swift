/// A DNS message as multicast DNS uses it (RFC 1035, section 4; RFC 6762): questions and resource records, with
/// names read through compression pointers (bounded, loops refused) and written whole.
public struct DNSMessage: Sendable, Hashable {
    /// The message ID (0 in multicast DNS; a legacy unicast query's ID is echoed).
    public var id: UInt16 = 0
    /// Whether it is a response (QR).
    public var isResponse = false
    /// Whether the answer is authoritative (AA; multicast DNS responses set it).
    public var isAuthoritative = false
    /// The questions.
    public var questions: [Question] = []
    /// The answer records.
    public var answers: [Record] = []
    /// The authority records (a probe's proposed records).
    public var authorities: [Record] = []
    /// The additional records.
    public var additionals: [Record] = []

    /// A question: a name, a type and whether a unicast response is asked for (the top bit of the class).
    public struct Question: Sendable, Hashable {
        /// The name asked about, as dotted labels without the final dot (`_esphomelib._tcp.local`).
        public var name: String
        /// The record type asked for.
        public var type: RecordType
        /// Whether the querier asks for a unicast response (the QU bit).
        public var unicastResponse: Bool
        /// Creates a question (class IN).
        public init(name: String, type: RecordType, unicastResponse: Bool = false) {
            self.name = name
            self.type = type
            self.unicastResponse = unicastResponse
        }
    }

    /// A record type.
    public struct RecordType: RawRepresentable, Sendable, Hashable {
        public var rawValue: UInt16
        /// Creates a type from its number.
        public init(rawValue: UInt16) { self.rawValue = rawValue }
        /// An IPv4 address.
        public static let a = Self(rawValue: 1)
        /// A pointer (service instances of a type).
        public static let ptr = Self(rawValue: 12)
        /// Text attributes.
        public static let txt = Self(rawValue: 16)
        /// An IPv6 address.
        public static let aaaa = Self(rawValue: 28)
        /// A service's host and port.
        public static let srv = Self(rawValue: 33)
        /// Any type (questions only).
        public static let any = Self(rawValue: 255)
    }

    /// A resource record's data, decoded for the types a service announcement uses.
    public enum RecordData: Sendable, Hashable {
        /// An IPv4 address.
        case a([UInt8])
        /// A name.
        case ptr(String)
        /// Text strings.
        case txt([String])
        /// Priority, weight, port and target host.
        case srv(priority: UInt16, weight: UInt16, port: UInt16, target: String)
        /// The raw data of another type.
        case other(type: UInt16, [UInt8])

        var type: RecordType {
            switch self {
            case .a: .a
            case .ptr: .ptr
            case .txt: .txt
            case .srv: .srv
            case .other(let type, _): RecordType(rawValue: type)
            }
        }
    }

    /// A resource record (class IN).
    public struct Record: Sendable, Hashable {
        /// The owner name.
        public var name: String
        /// The data (its case gives the type).
        public var data: RecordData
        /// Seconds it may be cached (0: goodbye).
        public var ttl: UInt32
        /// Whether the record is unique to this responder (the cache-flush bit).
        public var cacheFlush: Bool
        /// Creates a record.
        public init(name: String, data: RecordData, ttl: UInt32, cacheFlush: Bool) {
            self.name = name
            self.data = data
            self.ttl = ttl
            self.cacheFlush = cacheFlush
        }
    }

    /// Creates a message.
    public init(id: UInt16 = 0, isResponse: Bool = false, isAuthoritative: Bool = false, questions: [Question] = [],
                answers: [Record] = [], authorities: [Record] = [], additionals: [Record] = []) {
        self.id = id
        self.isResponse = isResponse
        self.isAuthoritative = isAuthoritative
        self.questions = questions
        self.answers = answers
        self.authorities = authorities
        self.additionals = additionals
    }

    // MARK: Decoding

    /// Decodes a message; throws on anything truncated, a bad label, or a compression loop.
    public init(bytes: [UInt8]) throws(ESPHomeAPIError) {
        var r = DNSReader(bytes)
        id = try r.u16()
        let flags = try r.u16()
        isResponse = flags & 0x8000 != 0
        isAuthoritative = flags & 0x0400 != 0
        let counts = (try r.u16(), try r.u16(), try r.u16(), try r.u16())
        for _ in 0..<counts.0 {
            let name = try r.name()
            let type = try r.u16()
            let klass = try r.u16()
            questions.append(Question(name: name, type: RecordType(rawValue: type), unicastResponse: klass & 0x8000 != 0))
        }
        for _ in 0..<counts.1 { answers.append(try r.record()) }
        for _ in 0..<counts.2 { authorities.append(try r.record()) }
        for _ in 0..<counts.3 { additionals.append(try r.record()) }
    }

    // MARK: Encoding

    /// Encodes the message (names written whole, without compression). Throws for a label over 63 bytes.
    public func encoded() throws(ESPHomeAPIError) -> [UInt8] {
        var out: [UInt8] = []
        func u16(_ v: UInt16) { out += [UInt8(v >> 8), UInt8(v & 0xFF)] }
        u16(id)
        u16((isResponse ? 0x8000 : 0) | (isAuthoritative ? 0x0400 : 0))
        for count in [questions.count, answers.count, authorities.count, additionals.count] {
            guard count <= 0xFFFF else { throw ESPHomeAPIError(.invalidInput, "too many DNS entries") }
            u16(UInt16(count))
        }
        for q in questions {
            out += try Self.encodeName(q.name)
            u16(q.type.rawValue)
            u16(q.unicastResponse ? 0x8001 : 0x0001)
        }
        for record in answers + authorities + additionals {
            out += try Self.encodeName(record.name)
            u16(record.data.type.rawValue)
            u16(record.cacheFlush ? 0x8001 : 0x0001)
            out += [UInt8(record.ttl >> 24), UInt8((record.ttl >> 16) & 0xFF), UInt8((record.ttl >> 8) & 0xFF), UInt8(record.ttl & 0xFF)]
            let rdata: [UInt8]
            switch record.data {
            case .a(let address): rdata = address
            case .ptr(let name): rdata = try Self.encodeName(name)
            case .txt(let strings):
                var t: [UInt8] = []
                for s in strings {
                    let bytes = Array(s.utf8)
                    guard bytes.count <= 255 else { throw ESPHomeAPIError(.invalidInput, "a TXT string of \(bytes.count) bytes") }
                    t += [UInt8(bytes.count)] + bytes
                }
                rdata = t.isEmpty ? [0] : t
            case .srv(let priority, let weight, let port, let target):
                rdata = [UInt8(priority >> 8), UInt8(priority & 0xFF), UInt8(weight >> 8), UInt8(weight & 0xFF),
                         UInt8(port >> 8), UInt8(port & 0xFF)] + (try Self.encodeName(target))
            case .other(_, let bytes): rdata = bytes
            }
            guard rdata.count <= 0xFFFF else { throw ESPHomeAPIError(.invalidInput, "record data of \(rdata.count) bytes") }
            u16(UInt16(rdata.count))
            out += rdata
        }
        return out
    }

    static func encodeName(_ name: String) throws(ESPHomeAPIError) -> [UInt8] {
        var out: [UInt8] = []
        for label in name.split(separator: ".", omittingEmptySubsequences: true) {
            let bytes = Array(label.utf8)
            guard (1...63).contains(bytes.count) else { throw ESPHomeAPIError(.invalidInput, "the DNS label '\(label)' is longer than 63 bytes") }
            out += [UInt8(bytes.count)] + bytes
        }
        guard out.count < 255 else { throw ESPHomeAPIError(.invalidInput, "the DNS name '\(name)' is longer than 255 bytes") }
        return out + [0]
    }
}

/// Reads DNS fields with bounds checks on every byte.
struct DNSReader {
    let bytes: [UInt8]
    var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func u8() throws(ESPHomeAPIError) -> UInt8 {
        guard index < bytes.count else { throw ESPHomeAPIError(.malformed, "a DNS message is cut short") }
        defer { index += 1 }
        return bytes[index]
    }

    mutating func u16() throws(ESPHomeAPIError) -> UInt16 { UInt16(try u8()) << 8 | UInt16(try u8()) }

    mutating func u32() throws(ESPHomeAPIError) -> UInt32 { UInt32(try u16()) << 16 | UInt32(try u16()) }

    mutating func take(_ count: Int) throws(ESPHomeAPIError) -> [UInt8] {
        guard count >= 0, count <= bytes.count - index else { throw ESPHomeAPIError(.malformed, "a DNS field runs past the end") }
        defer { index += count }
        return Array(bytes[index..<index + count])
    }

    /// A name at the current position, following compression pointers (at most 32 of them: a loop is refused).
    mutating func name() throws(ESPHomeAPIError) -> String {
        var labels: [String] = []
        var position = index
        var jumped = false
        var jumps = 0
        var length = 0
        while true {
            guard position < bytes.count else { throw ESPHomeAPIError(.malformed, "a DNS name runs past the end") }
            let byte = bytes[position]
            if byte == 0 {
                position += 1
                break
            }
            switch byte & 0xC0 {
            case 0xC0:
                guard position + 1 < bytes.count else { throw ESPHomeAPIError(.malformed, "a DNS name pointer runs past the end") }
                jumps += 1
                guard jumps <= 32 else { throw ESPHomeAPIError(.malformed, "a DNS name's pointers loop") }
                let target = Int(byte & 0x3F) << 8 | Int(bytes[position + 1])
                if !jumped { index = position + 2 }
                jumped = true
                position = target
            case 0x00:
                let count = Int(byte)
                guard position + 1 + count <= bytes.count else { throw ESPHomeAPIError(.malformed, "a DNS label runs past the end") }
                length += count + 1
                guard length <= 255 else { throw ESPHomeAPIError(.malformed, "a DNS name longer than 255 bytes") }
                labels.append(String(decoding: bytes[(position + 1)..<(position + 1 + count)], as: UTF8.self))
                position += 1 + count
            default:
                throw ESPHomeAPIError(.malformed, "a DNS label of a reserved kind (0x\(String(byte, radix: 16)))")
            }
        }
        if !jumped { index = position }
        return labels.joined(separator: ".")
    }

    mutating func record() throws(ESPHomeAPIError) -> DNSMessage.Record {
        let name = try name()
        let type = try u16()
        let klass = try u16()
        let ttl = try u32()
        let length = Int(try u16())
        guard length <= bytes.count - index else { throw ESPHomeAPIError(.malformed, "DNS record data runs past the end") }
        let end = index + length
        let data: DNSMessage.RecordData
        switch DNSMessage.RecordType(rawValue: type) {
        case .a where length == 4: data = .a(try take(4))
        case .ptr: data = .ptr(try self.name())
        case .srv:
            let priority = try u16(), weight = try u16(), port = try u16()
            data = .srv(priority: priority, weight: weight, port: port, target: try self.name())
        case .txt:
            var strings: [String] = []
            while index < end {
                let count = Int(try u8())
                guard index + count <= end else { throw ESPHomeAPIError(.malformed, "a TXT string runs past its record") }
                if count > 0 { strings.append(String(decoding: try take(count), as: UTF8.self)) }
            }
            data = .txt(strings)
        default: data = .other(type: type, try take(length))
        }
        guard index <= end else { throw ESPHomeAPIError(.malformed, "DNS record data longer than its length") }
        index = end
        return DNSMessage.Record(name: name, data: data, ttl: ttl, cacheFlush: klass & 0x8000 != 0)
    }
}

/// Announces an ESPHome API server over multicast DNS (RFC 6762) and DNS-SD (RFC 6763) as ESPHome nodes do:
/// `NAME._esphomelib._tcp.local` with its port, host, addresses and TXT attributes. A machine without I/O: it
/// makes the announcement and the goodbye, and answers queries.
public struct ESPHomeMDNSResponder: Sendable {
    /// The service type ESPHome nodes register.
    public static let serviceType = "_esphomelib._tcp.local"
    /// The DNS-SD service type enumeration name.
    public static let servicesName = "_services._dns-sd._udp.local"

    /// The instance and host label (the node name).
    public let name: String
    /// The API port.
    public let port: UInt16
    /// The IPv4 addresses announced.
    public let addresses: [[UInt8]]
    /// The TXT attributes (`key=value`).
    public let txt: [String]
    /// How long the records may be cached, in seconds.
    public let ttl: UInt32

    /// Creates a responder; throws for a name that is not one DNS label (1 to 63 bytes, no dot).
    public init(name: String, port: UInt16, addresses: [[UInt8]], txt: [String], ttl: UInt32 = 120) throws(ESPHomeAPIError) {
        guard (1...63).contains(name.utf8.count), !name.contains(".") else { throw ESPHomeAPIError(.invalidInput, "'\(name)' is not one DNS label") }
        self.name = name
        self.port = port
        self.addresses = addresses.filter { $0.count == 4 }
        self.txt = txt
        self.ttl = ttl
    }

    /// The instance's full name.
    public var instance: String { "\(name).\(Self.serviceType)" }
    /// The host's full name.
    public var host: String { "\(name).local" }

    private func records(ttl: UInt32) -> (ptr: DNSMessage.Record, srv: DNSMessage.Record, txt: DNSMessage.Record, a: [DNSMessage.Record],
                                          services: DNSMessage.Record) {
        (DNSMessage.Record(name: Self.serviceType, data: .ptr(instance), ttl: ttl, cacheFlush: false),
         DNSMessage.Record(name: instance, data: .srv(priority: 0, weight: 0, port: port, target: host), ttl: ttl, cacheFlush: true),
         DNSMessage.Record(name: instance, data: .txt(txt), ttl: ttl, cacheFlush: true),
         addresses.map { DNSMessage.Record(name: host, data: .a($0), ttl: ttl, cacheFlush: true) },
         DNSMessage.Record(name: Self.servicesName, data: .ptr(Self.serviceType), ttl: ttl, cacheFlush: false))
    }

    /// The unsolicited response announcing every record (send it twice, a second apart); with `goodbye`, the same
    /// records with TTL 0, which tells caches to forget them.
    public func announcement(goodbye: Bool = false) throws(ESPHomeAPIError) -> [UInt8] {
        let r = records(ttl: goodbye ? 0 : ttl)
        return try DNSMessage(isResponse: true, isAuthoritative: true, answers: [r.ptr, r.srv, r.txt] + r.a).encoded()
    }

    /// The answer to a query, or `nil` when it asks nothing of this responder (or is not a query, or is malformed).
    /// `legacyUnicast`: the query came from a port other than 5353 (RFC 6762, 6.7): the answer echoes its ID and
    /// questions, goes back to the sender, and carries no cache-flush bits.
    public func answer(_ bytes: [UInt8], legacyUnicast: Bool = false) -> [UInt8]? {
        guard let query = try? DNSMessage(bytes: bytes), !query.isResponse else { return nil }
        let r = records(ttl: ttl)
        var answers: [DNSMessage.Record] = []
        var additionals: [DNSMessage.Record] = []
        func add(_ record: DNSMessage.Record, to list: inout [DNSMessage.Record]) {
            if !list.contains(record) { list.append(record) }
        }
        for q in query.questions {
            let name = q.name.lowercased()
            let any = q.type == .any
            if name == Self.serviceType.lowercased() && (q.type == .ptr || any) {
                add(r.ptr, to: &answers)
                for record in [r.srv, r.txt] + r.a { add(record, to: &additionals) }
            } else if name == Self.servicesName.lowercased() && (q.type == .ptr || any) {
                add(r.services, to: &answers)
            } else if name == instance.lowercased() {
                if q.type == .srv || any { add(r.srv, to: &answers) }
                if q.type == .txt || any { add(r.txt, to: &answers) }
                if q.type == .srv || any { for a in r.a { add(a, to: &additionals) } }
            } else if name == host.lowercased() && (q.type == .a || any) {
                for a in r.a { add(a, to: &answers) }
            }
        }
        additionals.removeAll { answers.contains($0) }
        guard !answers.isEmpty else { return nil }
        if legacyUnicast {
            func plain(_ list: [DNSMessage.Record]) -> [DNSMessage.Record] {
                list.map { DNSMessage.Record(name: $0.name, data: $0.data, ttl: min($0.ttl, 10), cacheFlush: false) }
            }
            return try? DNSMessage(id: query.id, isResponse: true, isAuthoritative: true, questions: query.questions, answers: plain(answers),
                                   additionals: plain(additionals)).encoded()
        }
        return try? DNSMessage(isResponse: true, isAuthoritative: true, answers: answers, additionals: additionals).encoded()
    }
}
