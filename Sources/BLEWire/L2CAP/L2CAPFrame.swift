/// An L2CAP channel identifier. Core 5.4, Vol 3, Part A, 2.1. Open code.
public struct L2CAPChannelID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// Null (0x0000).
    public static let null = L2CAPChannelID(rawValue: 0x0000)
    /// The Attribute Protocol fixed channel.
    public static let att = L2CAPChannelID(rawValue: 0x0004)
    /// The LE signaling channel.
    public static let leSignaling = L2CAPChannelID(rawValue: 0x0005)
    /// The Security Manager Protocol fixed channel.
    public static let smp = L2CAPChannelID(rawValue: 0x0006)
    /// Whether the CID is in the LE dynamic range 0x0040–0x007F.
    public var isLEDynamic: Bool { (0x0040...0x007F).contains(rawValue) }
    public var description: String { "CID 0x" + [UInt8(rawValue >> 8), UInt8(truncatingIfNeeded: rawValue)].hexString() }
}

/// An L2CAP basic information frame (B-frame). Core 5.4, Vol 3, Part A, 3.1.
public struct L2CAPBasicFrame: Hashable, Sendable, WireCodable {
    /// `L2CAP channel ID`.
    public var channelID: L2CAPChannelID
    /// Payload.
    public var payload: [UInt8]

    /// Creates a B-frame carrying `payload` on the channel `channelID`.
    public init(channelID: L2CAPChannelID, payload: [UInt8]) {
        self.channelID = channelID
        self.payload = payload
    }

    public init(from r: inout ByteReader) throws(WireError) {
        let length = Int(try r.readUInt16("L2CAP length"))
        channelID = L2CAPChannelID(rawValue: try r.readUInt16("L2CAP channel ID"))
        guard r.remainingCount == length else {
            throw WireError(.lengthMismatch, "L2CAP length \(length) but \(r.remainingCount) payload byte(s)")
        }
        payload = r.readRemaining()
    }

    public func encode(into w: inout ByteWriter) {
        w.write(UInt16(truncatingIfNeeded: payload.count))
        w.write(channelID.rawValue)
        w.write(payload)
    }

    /// Splits the frame into ACL payloads of at most `maximumFragmentSize` bytes (first, then continuations).
    public func fragments(maximumFragmentSize: Int) -> [[UInt8]] {
        let bytes = encoded
        let size = max(1, maximumFragmentSize)
        return stride(from: 0, to: bytes.count, by: size).map { Array(bytes[$0..<min($0 + size, bytes.count)]) }
    }
}

/// Rebuilds L2CAP B-frames from ACL fragments. Core 5.4, Vol 3, Part A, 7.2.
///
/// Fragments may be smaller than the header (a first fragment of one byte) or carry a whole frame. A continuation
/// with nothing started, data past the announced length, or a frame above ``maximumPDULength`` throws. A new start
/// while a frame is incomplete replaces the unfinished frame (lost, as when a controller flushes it) and is counted
/// in ``droppedIncompleteFrames``.
public struct L2CAPReassembler: Sendable {
    /// The largest L2CAP payload accepted.
    public var maximumPDULength: Int
    private var buffer: [UInt8] = []
    private var inProgress = false
    /// Frames abandoned because a new one started before they were complete.
    public private(set) var droppedIncompleteFrames = 0

    /// Creates an empty reassembler that accepts frames whose payload is at most `maximumPDULength` octets.
    public init(maximumPDULength: Int = 65_535) { self.maximumPDULength = maximumPDULength }

    /// Whether part of a frame is waiting for continuations.
    public var isReassembling: Bool { inProgress }

    /// Adds one ACL fragment; returns the frame it completes, if any.
    public mutating func append(isStart: Bool, data: [UInt8]) throws(WireError) -> L2CAPBasicFrame? {
        if isStart {
            if inProgress { droppedIncompleteFrames += 1 }
            buffer = data
            inProgress = true
        } else {
            guard inProgress else {
                throw WireError(.invalidValue, "L2CAP: continuation fragment without a start")
            }
            buffer.append(contentsOf: data)
        }
        return try complete()
    }

    private mutating func complete() throws(WireError) -> L2CAPBasicFrame? {
        guard buffer.count >= 4 else { return nil }
        let length = Int(buffer[0]) | Int(buffer[1]) << 8
        guard length <= maximumPDULength else {
            reset()
            throw WireError(.oversized, "L2CAP frame of \(length) byte(s) exceeds \(maximumPDULength)")
        }
        guard buffer.count >= 4 + length else { return nil }
        guard buffer.count == 4 + length else {
            let extra = buffer.count - 4 - length
            reset()
            throw WireError(.lengthMismatch, "L2CAP: \(extra) byte(s) beyond the announced length \(length)")
        }
        let frame = L2CAPBasicFrame(channelID: L2CAPChannelID(rawValue: UInt16(buffer[2]) | UInt16(buffer[3]) << 8),
                                    payload: Array(buffer[4...]))
        reset()
        return frame
    }

    /// Drops any partial frame.
    public mutating func reset() {
        buffer = []
        inProgress = false
    }
}
