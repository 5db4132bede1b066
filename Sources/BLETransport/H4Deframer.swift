import BLEWire

/// Splits an H4 byte stream (packet indicator + HCI packet, back to back) into packets. Core 5.4, Vol 4, Part A.
///
/// Sans-I/O: feed it bytes as they arrive, split at any boundary; it returns every packet completed so far, in
/// order. An unknown packet indicator yields a `WireError` and the deframer resyncs by discarding that one byte
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
        push(ArraySlice(bytes))
    }

    /// Appends bytes and returns the packets (or framing errors) they complete.
    public mutating func push(_ bytes: [UInt8]) -> [Result<HCIPacket, WireError>] {
        push(bytes[...])
    }

    /// Appends bytes and returns the packets (or framing errors) they complete. When nothing is pending — a read
    /// that starts at a packet boundary, the usual case — packets are decoded straight from `bytes`, and only an
    /// incomplete packet at the end is kept.
    public mutating func push(_ bytes: ArraySlice<UInt8>) -> [Result<HCIPacket, WireError>] {
        var out: [Result<HCIPacket, WireError>] = []
        if start == buffer.count {
            let consumed = frame(bytes, into: &out)
            buffer.removeAll(keepingCapacity: true)
            start = 0
            if consumed < bytes.endIndex { buffer.append(contentsOf: bytes[consumed...]) }
            return out
        }
        buffer.append(contentsOf: bytes)
        start = frame(buffer[start...], into: &out)
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        } else if start > 4096 {
            buffer.removeFirst(start)
            start = 0
        }
        return out
    }

    /// Decodes the complete packets at the front of `data` into `out`; returns the index where the first incomplete
    /// one starts (`data.endIndex` when none is).
    private func frame(_ data: ArraySlice<UInt8>, into out: inout [Result<HCIPacket, WireError>]) -> Int {
        var at = data.startIndex
        let end = data.endIndex
        while at < end {
            let type = HCIPacketType(rawValue: data[at])
            guard let headerLength = type.headerLength else {
                out.append(.failure(Self.unknownIndicator[Int(data[at])]))
                at += 1
                continue
            }
            guard end - at >= 1 + headerLength else { break }
            let h = at + 1
            guard let payload = type.payloadLength(header: data[h..<(h + headerLength)]) else { break }
            let bodyLength = headerLength + payload
            if bodyLength > maximumBodyLength {
                out.append(.failure(WireError(.oversized, "H4: \(type) packet of \(bodyLength) bytes exceeds \(maximumBodyLength); skipping one byte")))
                at += 1
                continue
            }
            guard end - at >= 1 + bodyLength else { break }
            let body = data[h..<(h + bodyLength)]
            at = h + bodyLength
            // The framing checked every length: ACL data and events are built straight from the bytes (the packets
            // a host receives); the rest go through their decoders.
            switch type.rawValue {
            case 0x02:    // ACL
                let word = UInt16(body[h]) | UInt16(body[h + 1]) << 8
                out.append(.success(.acl(HCIACLPacket(handle: ConnectionHandle(rawValue: word & 0x0FFF),
                                                      boundary: HCIACLPacket.Boundary(rawValue: UInt8(truncatingIfNeeded: word >> 12)),
                                                      broadcast: UInt8(truncatingIfNeeded: word >> 14), data: Array(body[(h + 4)...])))))
            case 0x04:    // event
                out.append(.success(.event(HCIEventPacket(code: HCIEventCode(rawValue: body[h]), parameters: Array(body[(h + 2)...])))))
            default:
                do {
                    out.append(.success(try HCIPacket(type: type, body: body)))
                } catch {
                    out.append(.failure(error))
                }
            }
        }
        return at
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
