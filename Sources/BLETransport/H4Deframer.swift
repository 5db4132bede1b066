import BLEWire

/// Splits an H4 byte stream (packet indicator + HCI packet, back to back) into packets. Core 5.4, Vol 4, Part A.
///
/// Sans-I/O: feed it bytes as they arrive, split at any boundary; it returns every packet completed so far, in
/// order. An unknown packet indicator yields a ``WireError`` and the deframer resyncs by discarding that one byte
/// and trying the next as an indicator; a packet whose body does not decode yields an error and the stream goes on.
public struct H4Deframer: Sendable {
    /// The largest packet body accepted (larger announced lengths are impossible for an H4 header anyway: ACL
    /// lengths are 16-bit). Kept as a guard for callers that lower it.
    public var maximumBodyLength: Int
    private var buffer: [UInt8] = []
    private var start = 0

    /// Creates a deframer.
    public init(maximumBodyLength: Int = 4 + 65_535) {
        self.maximumBodyLength = maximumBodyLength
    }

    /// Bytes received and not yet part of a complete packet.
    public var pendingByteCount: Int { buffer.count - start }

    /// Appends bytes and returns the packets (or framing errors) they complete.
    public mutating func push(_ bytes: some Sequence<UInt8>) -> [Result<HCIPacket, WireError>] {
        buffer.append(contentsOf: bytes)
        var out: [Result<HCIPacket, WireError>] = []
        while start < buffer.count {
            let type = HCIPacketType(rawValue: buffer[start])
            guard let headerLength = type.headerLength else {
                out.append(.failure(Self.unknownIndicator[Int(buffer[start])]))
                start += 1
                continue
            }
            guard buffer.count - start >= 1 + headerLength else { break }
            let header = buffer[(start + 1)..<(start + 1 + headerLength)]
            guard let payload = type.payloadLength(header: header) else { break }
            let bodyLength = headerLength + payload
            if bodyLength > maximumBodyLength {
                out.append(.failure(WireError(.oversized, "H4: \(type) packet of \(bodyLength) bytes exceeds \(maximumBodyLength); skipping one byte")))
                start += 1
                continue
            }
            guard buffer.count - start >= 1 + bodyLength else { break }
            let body = buffer[(start + 1)..<(start + 1 + bodyLength)]
            start += 1 + bodyLength
            do {
                out.append(.success(try HCIPacket(type: type, body: body)))
            } catch {
                out.append(.failure(error))
            }
        }
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        } else if start > 4096 {
            buffer.removeFirst(start)
            start = 0
        }
        return out
    }

    /// The error for each unknown indicator octet, made once: a burst of line noise costs no formatting per octet.
    private static let unknownIndicator: [WireError] = (0...255).map { (octet: Int) in
        WireError(.unknownType, "H4: unknown packet indicator 0x\([UInt8(octet)].hexString()); skipping one byte")
    }

    /// Discards any partial packet.
    public mutating func reset() {
        buffer.removeAll()
        start = 0
    }
}
