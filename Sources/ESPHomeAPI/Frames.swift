/// One message on the wire: its type number and protobuf body.
public struct ESPHomeAPIFrame: Sendable, Hashable {
    /// The message type.
    public var type: UInt32
    /// The protobuf body.
    public var payload: [UInt8]
    /// Creates a frame.
    public init(type: UInt32, payload: [UInt8]) {
        self.type = type
        self.payload = payload
    }
    /// The frame of a message.
    public init(_ message: some ESPHomeAPIMessage) { self.init(type: Swift.type(of: message).typeID, payload: message.encoded()) }
}

/// The plaintext framing: `0x00`, the body's length as a varint, the type as a varint, the body.
public enum ESPHomeAPIPlaintextFraming {
    /// Encodes a frame.
    public static func encode(_ frame: ESPHomeAPIFrame) -> [UInt8] {
        var w = ProtoWriter()
        w.writeVarint(0)
        w.writeVarint(UInt64(frame.payload.count))
        w.writeVarint(UInt64(frame.type))
        return w.bytes + frame.payload
    }
}

/// Splits a byte stream of plaintext frames; bytes of a frame not yet whole are kept for the next push.
public struct ESPHomeAPIPlaintextDecoder: Sendable {
    private var buffer: [UInt8] = []
    /// The largest body accepted.
    public let maximumPayload: Int

    /// Creates a decoder.
    public init(maximumPayload: Int = 65_536) { self.maximumPayload = maximumPayload }

    /// Takes bytes and returns the frames they complete; throws on a bad indicator, an oversized length or a varint
    /// that is too long (the connection is then to be closed).
    public mutating func push(_ bytes: some Sequence<UInt8>) throws(ESPHomeAPIError) -> [ESPHomeAPIFrame] {
        buffer.append(contentsOf: bytes)
        var frames: [ESPHomeAPIFrame] = []
        var start = 0
        while start < buffer.count {
            guard buffer[start] == 0x00 else {
                throw ESPHomeAPIError(.malformed, buffer[start] == 0x01
                    ? "the client speaks the encrypted protocol; this server is plaintext"
                    : "bad frame indicator 0x\(String(buffer[start], radix: 16))")
            }
            var index = start + 1
            guard let length = try Self.varint(buffer, &index) else { break }
            guard length <= UInt64(maximumPayload) else { throw ESPHomeAPIError(.malformed, "a frame of \(length) bytes (at most \(maximumPayload))") }
            guard let type = try Self.varint(buffer, &index) else { break }
            guard type <= UInt64(UInt32.max) else { throw ESPHomeAPIError(.malformed, "message type \(type) is out of range") }
            guard buffer.count - index >= Int(length) else { break }
            frames.append(ESPHomeAPIFrame(type: UInt32(type), payload: Array(buffer[index..<index + Int(length)])))
            start = index + Int(length)
        }
        buffer.removeFirst(start)
        return frames
    }

    /// A varint at `index` (advanced past it); `nil` when it is not complete yet.
    private static func varint(_ bytes: [UInt8], _ index: inout Int) throws(ESPHomeAPIError) -> UInt64? {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        var i = index
        while i < bytes.count {
            let byte = bytes[i]
            i += 1
            guard shift < 35 else { throw ESPHomeAPIError(.malformed, "a frame header varint is longer than five bytes") }
            result |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 {
                index = i
                return result
            }
            shift += 7
        }
        return nil
    }
}

/// The encrypted framing's outer layer: `0x01`, the length as two bytes big-endian, the body.
public enum ESPHomeAPINoiseFraming {
    /// Wraps a body in a frame header; throws for a body over 65,535 bytes.
    public static func encode(_ body: [UInt8]) throws(ESPHomeAPIError) -> [UInt8] {
        guard body.count <= 0xFFFF else { throw ESPHomeAPIError(.invalidInput, "an encrypted frame of \(body.count) bytes (at most 65535)") }
        return [0x01, UInt8(body.count >> 8), UInt8(body.count & 0xFF)] + body
    }

    /// The plaintext inside an encrypted data frame: the type and the length as two bytes big-endian each, the body.
    public static func inner(_ frame: ESPHomeAPIFrame) throws(ESPHomeAPIError) -> [UInt8] {
        guard frame.type <= 0xFFFF, frame.payload.count <= 0xFFFF - 4 - 16 else {
            throw ESPHomeAPIError(.malformed, "message type \(frame.type) of \(frame.payload.count) bytes does not fit an encrypted frame")
        }
        return [UInt8(frame.type >> 8), UInt8(frame.type & 0xFF), UInt8(frame.payload.count >> 8), UInt8(frame.payload.count & 0xFF)]
            + frame.payload
    }

    /// Reads the plaintext of an encrypted data frame back into a message frame.
    public static func parseInner(_ bytes: [UInt8]) throws(ESPHomeAPIError) -> ESPHomeAPIFrame {
        guard bytes.count >= 4 else { throw ESPHomeAPIError(.malformed, "an encrypted message of \(bytes.count) bytes has no header") }
        let type = UInt32(bytes[0]) << 8 | UInt32(bytes[1])
        let length = Int(bytes[2]) << 8 | Int(bytes[3])
        guard length == bytes.count - 4 else { throw ESPHomeAPIError(.malformed, "an encrypted message says \(length) bytes and has \(bytes.count - 4)") }
        return ESPHomeAPIFrame(type: type, payload: Array(bytes[4...]))
    }
}

/// Splits a byte stream of encrypted-protocol frames (`0x01`, length, body) into their bodies.
public struct ESPHomeAPINoiseDecoder: Sendable {
    private var buffer: [UInt8] = []

    /// Creates a decoder.
    public init() {}

    /// Takes bytes and returns the frame bodies they complete; throws on a bad indicator (`0x00`: a plaintext client).
    public mutating func push(_ bytes: some Sequence<UInt8>) throws(ESPHomeAPIError) -> [[UInt8]] {
        buffer.append(contentsOf: bytes)
        var bodies: [[UInt8]] = []
        var start = 0
        while buffer.count - start >= 3 {
            guard buffer[start] == 0x01 else {
                throw ESPHomeAPIError(.malformed, buffer[start] == 0x00
                    ? "the client speaks plaintext; this server requires encryption"
                    : "bad frame indicator 0x\(String(buffer[start], radix: 16))")
            }
            let length = Int(buffer[start + 1]) << 8 | Int(buffer[start + 2])
            guard buffer.count - start - 3 >= length else { break }
            bodies.append(Array(buffer[start + 3..<start + 3 + length]))
            start += 3 + length
        }
        buffer.removeFirst(start)
        return bodies
    }
}
