import BLEWire

/// The tutorials' health devices: the frame that scales and similar devices stream over a notify characteristic.
///
/// Given by the device: the payload length is big-endian at bytes 3–4 of the header, and the whole frame is the
/// payload plus 7 bytes. The other bytes are this module's choice (the tutorials do not define them):
///
/// | Byte         | Field                                                                    |
/// |--------------|--------------------------------------------------------------------------|
/// | 0            | start marker ``startMarker`` (0xA5)                                      |
/// | 1            | device type (for example ``HealthScaleReading/deviceType``)              |
/// | 2            | command: what the payload is (for example ``HealthScaleReading/command``) |
/// | 3–4          | payload length, big-endian (from the device)                             |
/// | 5 ..< 5+n    | payload                                                                  |
/// | 5+n          | checksum: the sum, modulo 256, of bytes 1 ..< 5+n                        |
/// | 6+n          | end byte ``endMarker`` (0x5A)                                            |
public struct HealthFrame: Sendable, Hashable {
    /// The first byte of every frame (this module's choice).
    public static let startMarker: UInt8 = 0xA5
    /// The last byte of every frame (this module's choice).
    public static let endMarker: UInt8 = 0x5A
    /// The bytes a frame adds to its payload (given by the device).
    public static let overhead = 7
    /// The longest payload accepted (this module's choice; the length field could say up to 65535).
    public static let maximumPayloadLength = 512

    /// The frame format, for ``FrameReassembler``.
    public static let framing = LengthPrefixedFraming(checkedStartMarker: [startMarker], lengthOffset: 3, lengthSize: 2,
                                                      lengthByteOrder: .bigEndian, overhead: overhead,
                                                      maximumFrameSize: maximumPayloadLength + overhead)

    /// The device type (byte 1).
    public var deviceType: UInt8
    /// The command (byte 2): what the payload holds.
    public var command: UInt8
    /// The payload.
    public var payload: [UInt8]

    /// A frame.
    public init(deviceType: UInt8, command: UInt8, payload: [UInt8]) {
        self.deviceType = deviceType
        self.command = command
        self.payload = payload
    }

    /// The checksum of a frame's bytes 1 ..< 5+n (everything between the start marker and the checksum).
    public static func checksum(_ bytes: some Sequence<UInt8>) -> UInt8 {
        bytes.reduce(0) { $0 &+ $1 }
    }

    /// The frame's bytes; throws ``FramingError/payloadTooLong(length:maximum:)`` over ``maximumPayloadLength``.
    public func encoded() throws(FramingError) -> [UInt8] {
        var frame = try Self.framing.encode(payload: payload, fields: [deviceType, command], trailer: [0, Self.endMarker])
        let checksumIndex = frame.count - 2
        frame[checksumIndex] = Self.checksum(frame[1..<checksumIndex])
        return frame
    }

    /// Checks a complete frame's checksum and end byte (the reassembler's validator): `nil` when it is good.
    public static func problem(in frame: [UInt8]) -> FramingError? {
        guard frame.count >= overhead else { return .undersizeFrame(size: frame.count, minimum: overhead) }
        let checksumIndex = frame.count - 2
        let expected = checksum(frame[1..<checksumIndex])
        guard frame[checksumIndex] == expected else { return .checksumMismatch(expected: expected, received: frame[checksumIndex]) }
        guard frame[frame.count - 1] == endMarker else { return .badEndMarker(expected: endMarker, received: frame[frame.count - 1]) }
        return nil
    }

    /// Decodes one complete frame; throws ``WireError`` when it is truncated, its length disagrees with its size, or
    /// a marker or the checksum is wrong.
    public init(frame: [UInt8]) throws(WireError) {
        var reader = ByteReader(frame)
        guard try reader.readUInt8("health frame start") == Self.startMarker else {
            throw WireError(.invalidValue, "health frame: no start marker 0xA5")
        }
        deviceType = try reader.readUInt8("health frame device type")
        command = try reader.readUInt8("health frame command")
        let length = Int(try reader.readUInt16BE("health frame length"))
        guard frame.count == length + Self.overhead else {
            throw WireError(.lengthMismatch, "health frame: length \(length) in a \(frame.count)-byte frame")
        }
        payload = try reader.readBytes(length, "health frame payload")
        _ = try reader.readUInt8("health frame checksum")
        _ = try reader.readUInt8("health frame end")
        try reader.expectEnd("health frame")
        if let problem = Self.problem(in: frame) { throw WireError(.invalidValue, "health frame: \(problem)") }
    }
}

/// Reassembles ``HealthFrame``s from a notified byte stream: ``FrameReassembler`` over ``HealthFrame/framing``,
/// checking each frame's checksum and end byte (a bad one is an error and a resynchronisation).
public struct HealthFrameReassembler: Sendable {
    private var reassembler = FrameReassembler(framing: HealthFrame.framing, validate: HealthFrame.problem(in:))

    /// An empty reassembler.
    public init() {}

    /// The bytes held now (at most the largest frame).
    public var bufferedCount: Int { reassembler.bufferedCount }
    /// The most bytes ever buffered.
    public var highWaterMark: Int { reassembler.highWaterMark }

    /// Adds the next notified bytes; returns the frames they completed and the errors met, in stream order.
    public mutating func append(_ chunk: some Collection<UInt8>) -> [Result<HealthFrame, FramingError>] {
        // The reassembler only yields frames of at least 7 bytes whose marker, length, checksum and end byte are good.
        reassembler.append(chunk).map { result in
            result.map { bytes in
                HealthFrame(deviceType: bytes.dropFirst(1).first ?? 0, command: bytes.dropFirst(2).first ?? 0,
                            payload: Array(bytes.dropFirst(5).dropLast(2)))
            }
        }
    }
}
