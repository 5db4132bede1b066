/// A length-prefixed frame format: an optional start marker, then (at a fixed offset) a 1-, 2- or 4-byte length
/// field in either byte order, whose value plus a constant ``overhead`` is the size of the whole frame.
///
/// Many vendor devices frame their messages this way over a notify characteristic, where one notification can
/// carry several frames or a part of one. ``FrameReassembler`` turns such a byte stream back into frames;
/// ``encode(payload:fields:trailer:)`` builds one.
///
/// ```
/// | start marker | fields | length | payload ... | trailer |
///  <----------- lengthOffset ----->
///  <---------------- headerSize ---------------->
/// frame size = length value + overhead
/// ```
public struct LengthPrefixedFraming: Sendable, Hashable {
    /// The byte order of the length field.
    public enum ByteOrder: Sendable, Hashable {
        /// Least significant byte first.
        case littleEndian
        /// Most significant byte first.
        case bigEndian
    }

    /// The largest ``maximumFrameSize`` accepted (1 MiB): the reassembler buffers up to one frame.
    public static let frameSizeLimit = 1 << 20

    /// The bytes every frame starts with (empty: none, and resynchronisation slides one byte at a time).
    public let startMarker: [UInt8]
    /// Where the length field starts, from the first byte of the frame (at or after the start marker).
    public let lengthOffset: Int
    /// The length field's size: 1, 2 or 4 bytes.
    public let lengthSize: Int
    /// The length field's byte order.
    public let lengthByteOrder: ByteOrder
    /// What to add to the length field's value to get the whole frame's size.
    public let overhead: Int
    /// The largest frame accepted; a header declaring more is an error, and the reassembler never buffers more.
    public let maximumFrameSize: Int

    /// Describes a frame format; throws ``FramingError/invalidConfiguration(_:)`` for one that cannot work (a length
    /// size other than 1, 2 or 4, a length field overlapping the start marker, a negative overhead, or a maximum
    /// frame size smaller than the header or over ``frameSizeLimit``).
    public init(startMarker: [UInt8] = [], lengthOffset: Int, lengthSize: Int, lengthByteOrder: ByteOrder = .littleEndian,
                overhead: Int, maximumFrameSize: Int) throws(FramingError) {
        guard lengthSize == 1 || lengthSize == 2 || lengthSize == 4 else {
            throw .invalidConfiguration("the length field must be 1, 2 or 4 bytes, not \(lengthSize)")
        }
        guard lengthOffset >= startMarker.count else {
            throw .invalidConfiguration("the length field at \(lengthOffset) overlaps the \(startMarker.count)-byte start marker")
        }
        guard overhead >= 0 else { throw .invalidConfiguration("the overhead \(overhead) is negative") }
        guard maximumFrameSize >= lengthOffset + lengthSize, maximumFrameSize <= Self.frameSizeLimit else {
            throw .invalidConfiguration("the maximum frame size \(maximumFrameSize) is not in \(lengthOffset + lengthSize)...\(Self.frameSizeLimit)")
        }
        self.startMarker = startMarker
        self.lengthOffset = lengthOffset
        self.lengthSize = lengthSize
        self.lengthByteOrder = lengthByteOrder
        self.overhead = overhead
        self.maximumFrameSize = maximumFrameSize
    }

    /// A description known to be valid (this module's constants; their tests check them with the throwing init).
    init(checkedStartMarker startMarker: [UInt8], lengthOffset: Int, lengthSize: Int, lengthByteOrder: ByteOrder, overhead: Int,
         maximumFrameSize: Int) {
        self.startMarker = startMarker
        self.lengthOffset = lengthOffset
        self.lengthSize = lengthSize
        self.lengthByteOrder = lengthByteOrder
        self.overhead = overhead
        self.maximumFrameSize = maximumFrameSize
    }

    /// The bytes up to the end of the length field: what must arrive before the frame's size is known.
    public var headerSize: Int { lengthOffset + lengthSize }

    /// The frame size a header declares: the length field's value plus ``overhead``. `header` must hold at least
    /// ``headerSize`` bytes; with fewer it returns `nil`.
    public func declaredFrameSize(header: some Collection<UInt8>) -> Int? {
        guard header.count >= headerSize else { return nil }
        var value = 0
        var index = header.index(header.startIndex, offsetBy: lengthOffset)
        for position in 0..<lengthSize {
            let byte = Int(header[index])
            switch lengthByteOrder {
            case .littleEndian: value |= byte << (8 * position)
            case .bigEndian: value = value << 8 | byte
            }
            index = header.index(after: index)
        }
        return value + overhead
    }

    /// Builds a frame: the start marker, `fields` (exactly the bytes between the marker and the length field), the
    /// length field, `payload` and `trailer`. The length field gets the frame's size minus ``overhead``.
    ///
    /// Throws ``FramingError/invalidConfiguration(_:)`` when `fields` has the wrong size or the sizes do not add up
    /// to a non-negative length, and ``FramingError/payloadTooLong(length:maximum:)`` when the frame would exceed
    /// ``maximumFrameSize`` or the length field.
    public func encode(payload: [UInt8], fields: [UInt8] = [], trailer: [UInt8] = []) throws(FramingError) -> [UInt8] {
        guard fields.count == lengthOffset - startMarker.count else {
            throw .invalidConfiguration("\(fields.count) field byte(s) given, the format has \(lengthOffset - startMarker.count)")
        }
        let size = headerSize + payload.count + trailer.count
        let fixed = headerSize + trailer.count
        let fieldLimit = lengthSize == 4 ? Int(UInt32.max) : (1 << (8 * lengthSize)) - 1
        let maximumPayload = min(maximumFrameSize, fieldLimit + overhead) - fixed
        guard size <= maximumFrameSize, size - overhead <= fieldLimit else {
            throw .payloadTooLong(length: payload.count, maximum: max(0, maximumPayload))
        }
        let value = size - overhead
        guard value >= 0 else {
            throw .invalidConfiguration("a \(size)-byte frame is shorter than the overhead \(overhead)")
        }
        var frame = startMarker + fields
        frame.reserveCapacity(size)
        for position in 0..<lengthSize {
            let shift = switch lengthByteOrder {
            case .littleEndian: 8 * position
            case .bigEndian: 8 * (lengthSize - 1 - position)
            }
            frame.append(UInt8(truncatingIfNeeded: value >> shift))
        }
        return frame + payload + trailer
    }
}

/// Reassembles the frames of a ``LengthPrefixedFraming`` from chunks split anywhere (notifications, writes, reads
/// of a stream): several frames in one chunk, one frame over many, garbage between frames.
///
/// - Resynchronisation: bytes that cannot start a frame (before the start marker) are discarded and reported as
///   ``FramingError/skippedBytes(count:)``. A header declaring a frame over the maximum (or under the header size),
///   or a complete frame the validator rejects, is reported and then only its first byte is dropped: the search for
///   the next start marker begins right after it, so a real frame swallowed by a corrupt length is not lost.
/// - Errors are reported once per lost stretch: after an error, further skipped bytes and errors are silent until
///   the next good frame (a stream of garbage yields one error, not one per byte).
/// - Memory: never more than ``LengthPrefixedFraming/maximumFrameSize`` bytes are buffered, whatever the chunks'
///   sizes (``highWaterMark`` records the most there ever were).
public struct FrameReassembler: Sendable {
    /// Checks a complete frame (a checksum, an end byte); returns why it is bad, or `nil` to accept it.
    public typealias Validator = @Sendable (_ frame: [UInt8]) -> FramingError?

    /// The frame format.
    public let framing: LengthPrefixedFraming
    private let validate: Validator?
    private var buffer: [UInt8] = []
    private var recovering = false
    /// The most bytes ever buffered (at most the framing's maximum frame size).
    public private(set) var highWaterMark = 0

    /// A reassembler for `framing`, checking each complete frame with `validate` when given.
    public init(framing: LengthPrefixedFraming, validate: Validator? = nil) {
        self.framing = framing
        self.validate = validate
    }

    /// The bytes held now: the start of a frame (or of a start marker) waiting for the rest.
    public var bufferedCount: Int { buffer.count }

    /// Adds the next bytes of the stream; returns, in stream order, the frames they completed and the errors met.
    public mutating func append(_ chunk: some Collection<UInt8>) -> [Result<[UInt8], FramingError>] {
        var results: [Result<[UInt8], FramingError>] = []
        var skipped = 0
        var index = chunk.startIndex
        while index != chunk.endIndex {
            // After each pass at most maximumFrameSize − 1 bytes stay buffered, so there is always room.
            let room = max(1, framing.maximumFrameSize - buffer.count)
            let end = chunk.index(index, offsetBy: room, limitedBy: chunk.endIndex) ?? chunk.endIndex
            buffer.append(contentsOf: chunk[index..<end])
            highWaterMark = max(highWaterMark, buffer.count)
            index = end
            extract(into: &results, skipped: &skipped)
        }
        if skipped > 0 { results.append(.failure(.skippedBytes(count: skipped))) }
        return results
    }

    /// Forgets the buffered bytes (for example after the link went down).
    public mutating func reset() {
        buffer = []
        recovering = false
    }

    private mutating func extract(into results: inout [Result<[UInt8], FramingError>], skipped: inout Int) {
        // Works from `head` and drops the consumed bytes once at the end: one copy per pass, however many frames,
        // errors or skipped bytes the pass goes through.
        var head = 0
        defer { buffer.removeFirst(head) }
        func report(_ error: FramingError, _ results: inout [Result<[UInt8], FramingError>], _ skipped: inout Int) {
            if skipped > 0 { results.append(.failure(.skippedBytes(count: skipped))) }
            skipped = 0
            if !recovering { results.append(.failure(error)) }
            recovering = true
        }
        while true {
            let marker = framing.startMarker
            if !marker.isEmpty {
                let start = markerCandidate(from: head)
                if !recovering { skipped += start - head }
                head = start
                guard buffer.count - head >= marker.count else { return }
            }
            guard let size = framing.declaredFrameSize(header: buffer[head...]) else { return }
            if size > framing.maximumFrameSize {
                report(.oversizeFrame(size: size, maximum: framing.maximumFrameSize), &results, &skipped)
                head += 1
                continue
            }
            if size < framing.headerSize {
                report(.undersizeFrame(size: size, minimum: framing.headerSize), &results, &skipped)
                head += 1
                continue
            }
            guard buffer.count - head >= size else { return }
            let frame = Array(buffer[head..<(head + size)])
            if let error = validate?(frame) {
                report(error, &results, &skipped)
                head += 1
                continue
            }
            if skipped > 0 { results.append(.failure(.skippedBytes(count: skipped))) }
            skipped = 0
            results.append(.success(frame))
            head += size
            recovering = false
        }
    }

    /// The first index from `head` on where the start marker begins, or where a part of it runs to the end of the
    /// buffer (the buffer's end when there is none).
    private func markerCandidate(from head: Int) -> Int {
        let marker = framing.startMarker
        var start = head
        while start < buffer.count {
            let length = min(marker.count, buffer.count - start)
            if buffer[start..<(start + length)].elementsEqual(marker.prefix(length)) { return start }
            start += 1
        }
        return buffer.count
    }
}
