/// MQTT 3.1.1 control packets (OASIS Standard, 29 October 2014), their encoding and a strict decoder.
///
/// Section numbers in the comments are the standard's. The decoder checks everything the standard calls malformed
/// (reserved flags, QoS 3, a DUP flag on QoS 0, wildcards in a topic name, empty subscription lists, zero packet
/// identifiers, invalid UTF-8 or U+0000 in strings, lengths that do not add up) and returns an ``MQTTDecodingError``;
/// it never traps on any input.

/// Quality of service of a message. Section 4.3.
public enum MQTTQoS: UInt8, Sendable, Hashable, Comparable, CaseIterable {
    /// Fire and forget: at most once.
    case atMostOnce = 0
    /// Acknowledged (PUBACK): at least once.
    case atLeastOnce = 1
    /// Four-way handshake (PUBREC, PUBREL, PUBCOMP): exactly once.
    case exactlyOnce = 2

    public static func < (lhs: MQTTQoS, rhs: MQTTQoS) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Why bytes are not a valid MQTT packet.
public typealias MQTTDecodingError = BLEFailure<MQTTDecodingErrorCode>

/// The kind of fault of an ``MQTTDecodingError``: an open struct, so a release may add kinds. Every kind is a
/// ``BLEErrorCategory/protocolError``: bytes that break MQTT 3.1.1.
public struct MQTTDecodingErrorCode: BLEErrorCode {
    private enum Backing: Hashable, Sendable {
        case truncated
        case malformedRemainingLength
        case packetTooLarge
        case reservedPacketType
        case invalidFlags
        case invalidString
        case invalidTopic
        case protocolViolation
    }

    private let backing: Backing
    private init(_ backing: Backing) { self.backing = backing }

    /// The bytes end inside the packet.
    public static let truncated = MQTTDecodingErrorCode(.truncated)
    /// The Remaining Length takes more than four bytes. Section 2.2.3.
    public static let malformedRemainingLength = MQTTDecodingErrorCode(.malformedRemainingLength)
    /// The packet is larger than the decoder accepts.
    public static let packetTooLarge = MQTTDecodingErrorCode(.packetTooLarge)
    /// Packet type 0 or 15 (reserved). Section 2.2.1.
    public static let reservedPacketType = MQTTDecodingErrorCode(.reservedPacketType)
    /// Flags the standard fixes have other values. Section 2.2.2.
    public static let invalidFlags = MQTTDecodingErrorCode(.invalidFlags)
    /// A string is not well-formed UTF-8 or holds U+0000. Section 1.5.3.
    public static let invalidString = MQTTDecodingErrorCode(.invalidString)
    /// A topic name or filter breaks the rules of section 4.7.
    public static let invalidTopic = MQTTDecodingErrorCode(.invalidTopic)
    /// Anything else the standard calls a protocol violation.
    public static let protocolViolation = MQTTDecodingErrorCode(.protocolViolation)

    public var category: BLEErrorCategory {
        switch backing {
        case .truncated, .malformedRemainingLength, .packetTooLarge, .reservedPacketType, .invalidFlags, .invalidString, .invalidTopic, .protocolViolation: .protocolError
        }
    }

    /// The kind's name: `truncated`, `invalidTopic`...
    public var description: String {
        switch backing {
        case .truncated: "truncated"
        case .malformedRemainingLength: "malformedRemainingLength"
        case .packetTooLarge: "packetTooLarge"
        case .reservedPacketType: "reservedPacketType"
        case .invalidFlags: "invalidFlags"
        case .invalidString: "invalidString"
        case .invalidTopic: "invalidTopic"
        case .protocolViolation: "protocolViolation"
        }
    }
}

/// A CONNECT return code. Section 3.2.2.3.
public struct MQTTConnectReturnCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Connection accepted.
    public static let accepted = MQTTConnectReturnCode(rawValue: 0)
    /// The server does not support the protocol level.
    public static let unacceptableProtocolVersion = MQTTConnectReturnCode(rawValue: 1)
    /// The client identifier is not allowed.
    public static let identifierRejected = MQTTConnectReturnCode(rawValue: 2)
    /// The MQTT service is unavailable.
    public static let serverUnavailable = MQTTConnectReturnCode(rawValue: 3)
    /// The user name or password is malformed or wrong.
    public static let badUserNameOrPassword = MQTTConnectReturnCode(rawValue: 4)
    /// The client is not authorized to connect.
    public static let notAuthorized = MQTTConnectReturnCode(rawValue: 5)

    public var description: String {
        switch self {
        case .accepted: "accepted"
        case .unacceptableProtocolVersion: "unacceptable protocol version"
        case .identifierRejected: "identifier rejected"
        case .serverUnavailable: "server unavailable"
        case .badUserNameOrPassword: "bad user name or password"
        case .notAuthorized: "not authorized"
        default: "reserved return code \(rawValue)"
        }
    }
}

/// A message: what PUBLISH carries, and what a Will is made of.
public struct MQTTMessage: Sendable, Hashable {
    /// The topic name (no wildcards).
    public var topic: String
    /// The application payload.
    public var payload: [UInt8]
    /// The quality of service.
    public var qos: MQTTQoS
    /// Whether the server keeps it as the topic's last known value. Section 3.3.1.3.
    public var retain: Bool

    /// Creates a message.
    public init(topic: String, payload: [UInt8], qos: MQTTQoS = .atMostOnce, retain: Bool = false) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
    }

    /// Creates a message with a UTF-8 text payload.
    public init(topic: String, text: String, qos: MQTTQoS = .atMostOnce, retain: Bool = false) {
        self.init(topic: topic, payload: Array(text.utf8), qos: qos, retain: retain)
    }
}

/// An MQTT 3.1.1 control packet.
public enum MQTTPacket: Sendable, Hashable {
    /// CONNECT. Section 3.1.
    case connect(Connect)
    /// CONNACK. Section 3.2.
    case connack(sessionPresent: Bool, returnCode: MQTTConnectReturnCode)
    /// PUBLISH. Section 3.3.
    case publish(Publish)
    /// PUBACK. Section 3.4.
    case puback(packetID: UInt16)
    /// PUBREC. Section 3.5.
    case pubrec(packetID: UInt16)
    /// PUBREL. Section 3.6.
    case pubrel(packetID: UInt16)
    /// PUBCOMP. Section 3.7.
    case pubcomp(packetID: UInt16)
    /// SUBSCRIBE. Section 3.8.
    case subscribe(packetID: UInt16, filters: [(filter: String, qos: MQTTQoS)])
    /// SUBACK: per filter the granted QoS, or `nil` for a failure (0x80). Section 3.9.
    case suback(packetID: UInt16, granted: [MQTTQoS?])
    /// UNSUBSCRIBE. Section 3.10.
    case unsubscribe(packetID: UInt16, filters: [String])
    /// UNSUBACK. Section 3.11.
    case unsuback(packetID: UInt16)
    /// PINGREQ. Section 3.12.
    case pingreq
    /// PINGRESP. Section 3.13.
    case pingresp
    /// DISCONNECT. Section 3.14.
    case disconnect

    /// CONNECT's contents.
    public struct Connect: Sendable, Hashable {
        /// The client identifier (may be empty with a clean session: the server assigns one). Section 3.1.3.1.
        public var clientID: String
        /// Start a new session (true) or resume the stored one (false). Section 3.1.2.4.
        public var cleanSession: Bool
        /// Seconds of silence after which the client pings; 0 turns keep-alive off. Section 3.1.2.10.
        public var keepAlive: UInt16
        /// The message the server publishes if the client goes away without DISCONNECT. Section 3.1.2.5.
        public var will: MQTTMessage?
        /// The user name.
        public var userName: String?
        /// The password (binary data; only with a user name in 3.1.1).
        public var password: [UInt8]?

        /// Creates a CONNECT.
        public init(clientID: String, cleanSession: Bool = true, keepAlive: UInt16 = 60, will: MQTTMessage? = nil,
                    userName: String? = nil, password: [UInt8]? = nil) {
            self.clientID = clientID
            self.cleanSession = cleanSession
            self.keepAlive = keepAlive
            self.will = will
            self.userName = userName
            self.password = password
        }
    }

    /// PUBLISH's contents.
    public struct Publish: Sendable, Hashable {
        /// The message.
        public var message: MQTTMessage
        /// The packet identifier (QoS 1 and 2 only).
        public var packetID: UInt16?
        /// A re-delivery of an earlier attempt. Section 3.3.1.1.
        public var duplicate: Bool

        /// Creates a PUBLISH.
        public init(message: MQTTMessage, packetID: UInt16? = nil, duplicate: Bool = false) {
            self.message = message
            self.packetID = packetID
            self.duplicate = duplicate
        }
    }

    public static func == (lhs: MQTTPacket, rhs: MQTTPacket) -> Bool { lhs.encoded() == rhs.encoded() }
    public func hash(into hasher: inout Hasher) { hasher.combine(encoded()) }

    /// The packet's bytes: fixed header, variable header, payload.
    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        encode(into: &out)
        return out
    }

    /// Appends the packet's bytes to `out`. A PUBLISH (what a client sends most) is written straight in, its
    /// length counted first: no body of its own to copy.
    public func encode(into out: inout [UInt8]) {
        if case .publish(let p) = self {
            let topic = p.message.topic.utf8
            let topicCount = Swift.min(topic.count, 0xFFFF)
            let length = 2 + topicCount + (p.message.qos != .atMostOnce ? 2 : 0) + p.message.payload.count
            out.reserveCapacity(out.count + 5 + length)
            out.append(0x30 | (p.duplicate ? 0x08 : 0) | p.message.qos.rawValue << 1 | (p.message.retain ? 1 : 0))
            MQTTRemainingLength.append(length, to: &out)
            out.appendUInt16(UInt16(topicCount))
            if topicCount == topic.count { out.append(contentsOf: topic) } else { out.append(contentsOf: topic.prefix(topicCount)) }
            if p.message.qos != .atMostOnce { out.appendUInt16(p.packetID ?? 0) }
            out.append(contentsOf: p.message.payload)
            return
        }
        var body: [UInt8] = []
        let first: UInt8
        switch self {
        case .connect(let c):
            first = 0x10
            body.appendString("MQTT")
            body.append(4)      // protocol level 4 = 3.1.1
            var flags: UInt8 = c.cleanSession ? 0x02 : 0
            if let will = c.will { flags |= 0x04 | will.qos.rawValue << 3 | (will.retain ? 0x20 : 0) }
            if c.password != nil { flags |= 0x40 }
            if c.userName != nil { flags |= 0x80 }
            body.append(flags)
            body.appendUInt16(c.keepAlive)
            body.appendString(c.clientID)
            if let will = c.will {
                body.appendString(will.topic)
                body.appendBinary(will.payload)
            }
            if let user = c.userName { body.appendString(user) }
            if let password = c.password { body.appendBinary(password) }
        case .connack(let present, let code):
            first = 0x20
            body = [present ? 1 : 0, code.rawValue]
        case .publish(let p):
            first = 0x30 | (p.duplicate ? 0x08 : 0) | p.message.qos.rawValue << 1 | (p.message.retain ? 1 : 0)
            body.appendString(p.message.topic)
            if p.message.qos != .atMostOnce { body.appendUInt16(p.packetID ?? 0) }
            body += p.message.payload
        case .puback(let id): first = 0x40; body.appendUInt16(id)
        case .pubrec(let id): first = 0x50; body.appendUInt16(id)
        case .pubrel(let id): first = 0x62; body.appendUInt16(id)
        case .pubcomp(let id): first = 0x70; body.appendUInt16(id)
        case .subscribe(let id, let filters):
            first = 0x82
            body.appendUInt16(id)
            for f in filters {
                body.appendString(f.filter)
                body.append(f.qos.rawValue)
            }
        case .suback(let id, let granted):
            first = 0x90
            body.appendUInt16(id)
            body += granted.map { $0?.rawValue ?? 0x80 }
        case .unsubscribe(let id, let filters):
            first = 0xA2
            body.appendUInt16(id)
            for f in filters { body.appendString(f) }
        case .unsuback(let id): first = 0xB0; body.appendUInt16(id)
        case .pingreq: first = 0xC0
        case .pingresp: first = 0xD0
        case .disconnect: first = 0xE0
        }
        out.append(first)
        MQTTRemainingLength.append(body.count, to: &out)
        out.append(contentsOf: body)
    }

    /// Decodes one whole packet (exactly the bytes of one packet).
    public init(bytes: [UInt8]) throws(MQTTDecodingError) {
        guard let first = bytes.first else { throw MQTTDecodingError(.truncated, "no fixed header") }
        guard let (length, headerLength) = try MQTTRemainingLength.decode(bytes, from: 1) else {
            throw MQTTDecodingError(.truncated, "the Remaining Length is cut short")
        }
        guard bytes.count == headerLength + length else {
            throw MQTTDecodingError(.truncated, "Remaining Length \(length), \(bytes.count - headerLength) byte(s) follow")
        }
        try self.init(first: first, body: Array(bytes[headerLength...]))
    }

    /// Decodes a packet from its first byte and the `body` its Remaining Length covers.
    init(first: UInt8, body: [UInt8]) throws(MQTTDecodingError) {
        let type = first >> 4
        let flags = first & 0x0F
        var r = MQTTReader(body)
        func fixedFlags(_ expected: UInt8, _ name: String) throws(MQTTDecodingError) {
            guard flags == expected else {
                throw MQTTDecodingError(.invalidFlags, "\(name) with flags 0x\(String(flags, radix: 16)) (must be 0x\(String(expected, radix: 16)))")
            }
        }
        func identifier(_ name: String) throws(MQTTDecodingError) -> UInt16 {
            let id = try r.uint16(name)
            guard id != 0 else { throw MQTTDecodingError(.protocolViolation, "\(name): packet identifier 0") }
            return id
        }
        func end(_ name: String) throws(MQTTDecodingError) {
            guard r.isAtEnd else { throw MQTTDecodingError(.protocolViolation, "\(name): \(r.remaining) unexpected byte(s) at the end") }
        }
        switch type {
        case 1:
            try fixedFlags(0, "CONNECT")
            let name = try r.string("CONNECT protocol name")
            let level = try r.uint8("CONNECT protocol level")
            guard name == "MQTT" else { throw MQTTDecodingError(.protocolViolation, "CONNECT protocol name '\(name)' (must be 'MQTT')") }
            guard level == 4 else { throw MQTTDecodingError(.protocolViolation, "CONNECT protocol level \(level) (this decoder reads 4, MQTT 3.1.1)") }
            let connectFlags = try r.uint8("CONNECT flags")
            guard connectFlags & 0x01 == 0 else { throw MQTTDecodingError(.invalidFlags, "CONNECT reserved flag set") }
            let keepAlive = try r.uint16("CONNECT keep alive")
            let clientID = try r.string("CONNECT client identifier")
            let hasWill = connectFlags & 0x04 != 0
            guard let willQoS = MQTTQoS(rawValue: (connectFlags >> 3) & 0x03) else { throw MQTTDecodingError(.invalidFlags, "CONNECT Will QoS 3") }
            let willRetain = connectFlags & 0x20 != 0
            guard hasWill || (willQoS == .atMostOnce && !willRetain) else {
                throw MQTTDecodingError(.invalidFlags, "CONNECT Will QoS or Retain without the Will flag")
            }
            var will: MQTTMessage?
            if hasWill {
                let topic = try r.string("CONNECT Will topic")
                try MQTTTopic.validateName(topic)
                will = MQTTMessage(topic: topic, payload: try r.binary("CONNECT Will message"), qos: willQoS, retain: willRetain)
            }
            let hasUser = connectFlags & 0x80 != 0
            let hasPassword = connectFlags & 0x40 != 0
            guard hasUser || !hasPassword else { throw MQTTDecodingError(.invalidFlags, "CONNECT password flag without the user name flag") }
            let user = hasUser ? try r.string("CONNECT user name") : nil
            let password = hasPassword ? try r.binary("CONNECT password") : nil
            try end("CONNECT")
            self = .connect(Connect(clientID: clientID, cleanSession: connectFlags & 0x02 != 0, keepAlive: keepAlive, will: will,
                                    userName: user, password: password))
        case 2:
            try fixedFlags(0, "CONNACK")
            let acknowledge = try r.uint8("CONNACK flags")
            guard acknowledge & 0xFE == 0 else { throw MQTTDecodingError(.invalidFlags, "CONNACK reserved acknowledge flags set") }
            let code = MQTTConnectReturnCode(rawValue: try r.uint8("CONNACK return code"))
            try end("CONNACK")
            guard code == .accepted || acknowledge == 0 else {
                throw MQTTDecodingError(.protocolViolation, "CONNACK refusing with Session Present set")
            }
            self = .connack(sessionPresent: acknowledge == 1, returnCode: code)
        case 3:
            guard let qos = MQTTQoS(rawValue: (flags >> 1) & 0x03) else { throw MQTTDecodingError(.invalidFlags, "PUBLISH with QoS 3") }
            let duplicate = flags & 0x08 != 0
            guard qos != .atMostOnce || !duplicate else { throw MQTTDecodingError(.invalidFlags, "PUBLISH QoS 0 with DUP set") }
            let topic = try r.string("PUBLISH topic name")
            try MQTTTopic.validateName(topic)
            let id = qos == .atMostOnce ? nil : try identifier("PUBLISH")
            self = .publish(Publish(message: MQTTMessage(topic: topic, payload: r.rest(), qos: qos, retain: flags & 0x01 != 0),
                                    packetID: id, duplicate: duplicate))
        case 4:
            try fixedFlags(0, "PUBACK")
            self = .puback(packetID: try identifier("PUBACK"))
            try end("PUBACK")
        case 5:
            try fixedFlags(0, "PUBREC")
            self = .pubrec(packetID: try identifier("PUBREC"))
            try end("PUBREC")
        case 6:
            try fixedFlags(2, "PUBREL")
            self = .pubrel(packetID: try identifier("PUBREL"))
            try end("PUBREL")
        case 7:
            try fixedFlags(0, "PUBCOMP")
            self = .pubcomp(packetID: try identifier("PUBCOMP"))
            try end("PUBCOMP")
        case 8:
            try fixedFlags(2, "SUBSCRIBE")
            let id = try identifier("SUBSCRIBE")
            var filters: [(filter: String, qos: MQTTQoS)] = []
            while !r.isAtEnd {
                let filter = try r.string("SUBSCRIBE topic filter")
                try MQTTTopic.validateFilter(filter)
                let requested = try r.uint8("SUBSCRIBE requested QoS")
                guard requested & 0xFC == 0, let qos = MQTTQoS(rawValue: requested) else {
                    throw MQTTDecodingError(.protocolViolation, "SUBSCRIBE requested QoS byte 0x\(String(requested, radix: 16))")
                }
                filters.append((filter, qos))
            }
            guard !filters.isEmpty else { throw MQTTDecodingError(.protocolViolation, "SUBSCRIBE with no topic filter") }
            self = .subscribe(packetID: id, filters: filters)
        case 9:
            try fixedFlags(0, "SUBACK")
            let id = try identifier("SUBACK")
            var granted: [MQTTQoS?] = []
            while !r.isAtEnd {
                let code = try r.uint8("SUBACK return code")
                if code == 0x80 {
                    granted.append(nil)
                } else if let qos = MQTTQoS(rawValue: code) {
                    granted.append(qos)
                } else {
                    throw MQTTDecodingError(.protocolViolation, "SUBACK return code 0x\(String(code, radix: 16))")
                }
            }
            guard !granted.isEmpty else { throw MQTTDecodingError(.protocolViolation, "SUBACK with no return code") }
            self = .suback(packetID: id, granted: granted)
        case 10:
            try fixedFlags(2, "UNSUBSCRIBE")
            let id = try identifier("UNSUBSCRIBE")
            var filters: [String] = []
            while !r.isAtEnd {
                let filter = try r.string("UNSUBSCRIBE topic filter")
                try MQTTTopic.validateFilter(filter)
                filters.append(filter)
            }
            guard !filters.isEmpty else { throw MQTTDecodingError(.protocolViolation, "UNSUBSCRIBE with no topic filter") }
            self = .unsubscribe(packetID: id, filters: filters)
        case 11:
            try fixedFlags(0, "UNSUBACK")
            self = .unsuback(packetID: try identifier("UNSUBACK"))
            try end("UNSUBACK")
        case 12:
            try fixedFlags(0, "PINGREQ")
            try end("PINGREQ")
            self = .pingreq
        case 13:
            try fixedFlags(0, "PINGRESP")
            try end("PINGRESP")
            self = .pingresp
        case 14:
            try fixedFlags(0, "DISCONNECT")
            try end("DISCONNECT")
            self = .disconnect
        default:
            throw MQTTDecodingError(.reservedPacketType, "packet type \(type) is reserved")
        }
    }
}

/// The Remaining Length: 1 to 4 bytes, 7 bits each, least significant first. Section 2.2.3.
public enum MQTTRemainingLength {
    /// The largest length four bytes can say: 268,435,455.
    public static let maximum = 268_435_455

    /// The encoding of `length` (0 ... ``maximum``).
    public static func encode(_ length: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        append(length, to: &bytes)
        return bytes
    }

    /// Appends the encoding of `length` (clamped to 0...``maximum``) to `bytes`.
    static func append(_ length: Int, to bytes: inout [UInt8]) {
        var value = max(0, min(length, maximum))
        repeat {
            var byte = UInt8(value % 128)
            value /= 128
            if value > 0 { byte |= 0x80 }
            bytes.append(byte)
        } while value > 0
    }

    /// Decodes the length that starts at `offset`: the length and the index after it, `nil` when the bytes end
    /// first; throws when a fifth byte would be needed.
    public static func decode(_ bytes: [UInt8], from offset: Int) throws(MQTTDecodingError) -> (length: Int, end: Int)? {
        var value = 0
        var multiplier = 1
        var index = offset
        for _ in 0..<4 {
            guard index < bytes.count else { return nil }
            let byte = bytes[index]
            index += 1
            value += Int(byte & 0x7F) * multiplier
            if byte & 0x80 == 0 { return (value, index) }
            multiplier *= 128
        }
        throw MQTTDecodingError(.malformedRemainingLength, "the Remaining Length runs past four bytes")
    }
}

/// Topic names and filters. Section 4.7.
public enum MQTTTopic {
    /// Checks a topic name (what PUBLISH carries): not empty, no wildcards.
    public static func validateName(_ topic: String) throws(MQTTDecodingError) {
        guard !topic.isEmpty else { throw MQTTDecodingError(.invalidTopic, "an empty topic name") }
        // Octets, not characters: every wildcard and U+0000 is one octet in UTF-8 (a scan of a name per PUBLISH, so
        // the cheap one).
        for octet in topic.utf8 {
            switch octet {
            case UInt8(ascii: "+"), UInt8(ascii: "#"):
                throw MQTTDecodingError(.invalidTopic, "topic name '\(topic)' holds a wildcard")
            case 0:
                throw MQTTDecodingError(.invalidTopic, "a topic name holds U+0000")
            default:
                continue
            }
        }
    }

    /// Checks a topic filter: not empty; `+` fills a whole level; `#` fills a whole level and is the last one.
    public static func validateFilter(_ filter: String) throws(MQTTDecodingError) {
        guard !filter.isEmpty else { throw MQTTDecodingError(.invalidTopic, "an empty topic filter") }
        let levels = filter.split(separator: "/", omittingEmptySubsequences: false)
        for (index, level) in levels.enumerated() {
            if level.contains("#") && (level != "#" || index != levels.count - 1) {
                throw MQTTDecodingError(.invalidTopic, "topic filter '\(filter)': '#' must be a whole level and the last")
            }
            if level.contains("+") && level != "+" {
                throw MQTTDecodingError(.invalidTopic, "topic filter '\(filter)': '+' must be a whole level")
            }
        }
    }

    /// Whether `topic` (a name) matches `filter`. Topics starting with `$` are not matched by a filter starting
    /// with a wildcard (section 4.7.2).
    public static func matches(_ topic: String, filter: String) -> Bool {
        let names = topic.split(separator: "/", omittingEmptySubsequences: false)
        let parts = filter.split(separator: "/", omittingEmptySubsequences: false)
        if topic.hasPrefix("$"), let first = parts.first, first == "+" || first == "#" { return false }
        var i = 0
        while i < parts.count {
            if parts[i] == "#" { return true }
            guard i < names.count else { return false }
            if parts[i] != "+" && parts[i] != names[i] { return false }
            i += 1
        }
        return names.count == parts.count
    }
}

/// Cuts a byte stream into packets: bytes in as they come from the network, whole packets out.
public struct MQTTFrameDecoder: Sendable {
    private var buffer: [UInt8] = []
    /// The largest packet accepted (fixed header included); larger ones are an error, not a wait.
    public var maximumPacketSize: Int

    /// Creates a decoder.
    public init(maximumPacketSize: Int = 1 << 20) { self.maximumPacketSize = maximumPacketSize }

    /// Appends bytes and returns the packets they complete. After an error the stream cannot be trusted: close it.
    public mutating func push(_ bytes: some Sequence<UInt8>) throws(MQTTDecodingError) -> [MQTTPacket] {
        buffer += bytes
        var packets: [MQTTPacket] = []
        var start = 0
        while start < buffer.count {
            guard let (length, bodyStart) = try MQTTRemainingLength.decode(buffer, from: start + 1) else { break }
            guard bodyStart - start + length <= maximumPacketSize else {
                throw MQTTDecodingError(.packetTooLarge, "a packet of \(bodyStart - start + length) bytes (the limit is \(maximumPacketSize))")
            }
            guard buffer.count - bodyStart >= length else { break }
            packets.append(try MQTTPacket(first: buffer[start], body: Array(buffer[bodyStart..<(bodyStart + length)])))
            start = bodyStart + length
        }
        buffer.removeFirst(start)
        return packets
    }

    /// Bytes received that do not make a whole packet yet.
    public var pendingByteCount: Int { buffer.count }
}

/// Reads the fields of a packet body.
struct MQTTReader {
    private let bytes: [UInt8]
    private var index = 0
    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { index >= bytes.count }
    var remaining: Int { bytes.count - index }

    mutating func uint8(_ what: String) throws(MQTTDecodingError) -> UInt8 {
        guard index < bytes.count else { throw MQTTDecodingError(.truncated, "\(what): the packet ends") }
        defer { index += 1 }
        return bytes[index]
    }

    mutating func uint16(_ what: String) throws(MQTTDecodingError) -> UInt16 {
        let high = try uint8(what)
        return UInt16(high) << 8 | UInt16(try uint8(what))
    }

    mutating func binary(_ what: String) throws(MQTTDecodingError) -> [UInt8] {
        let length = Int(try uint16(what))
        guard remaining >= length else { throw MQTTDecodingError(.truncated, "\(what): \(length) byte(s) said, \(remaining) present") }
        defer { index += length }
        return Array(bytes[index..<(index + length)])
    }

    /// A UTF-8 string: well formed, without U+0000. Section 1.5.3.
    mutating func string(_ what: String) throws(MQTTDecodingError) -> String {
        let raw = try binary(what)
        guard let text = String(validating: raw, as: UTF8.self) else { throw MQTTDecodingError(.invalidString, "\(what): not UTF-8") }
        guard !raw.contains(0) else { throw MQTTDecodingError(.invalidString, "\(what): holds U+0000") }
        return text
    }

    mutating func rest() -> [UInt8] {
        defer { index = bytes.count }
        return Array(bytes[min(index, bytes.count)...])
    }
}

extension [UInt8] {
    mutating func appendUInt16(_ value: UInt16) {
        append(UInt8(value >> 8))
        append(UInt8(truncatingIfNeeded: value))
    }
    mutating func appendBinary(_ data: [UInt8]) {
        appendUInt16(UInt16(truncatingIfNeeded: Swift.min(data.count, 0xFFFF)))
        append(contentsOf: data.prefix(0xFFFF))
    }
    mutating func appendString(_ text: String) {
        let count = Swift.min(text.utf8.count, 0xFFFF)
        appendUInt16(UInt16(count))
        if count == text.utf8.count { append(contentsOf: text.utf8) } else { append(contentsOf: text.utf8.prefix(count)) }
    }
}
