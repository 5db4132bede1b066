/// Messages longer than one write or notification, sent as chunks followed by an end-of-message marker sent as a
/// chunk of its own (as Apple's BTLE Transfer sample does with the three bytes "EOM").
///
/// The ambiguity: a receiver takes any chunk equal to the marker as the end of the message, so a message whose
/// chunking produces a data chunk equal to the marker (for example one ending in "EOM" just after a chunk
/// boundary) would be cut there, and the real marker would then end an empty message. A receiver cannot tell the
/// two apart, so ``chunks(of:maximumChunkLength:endMarker:)`` never produces such a chunk: a data chunk that would
/// equal the marker is sent as two chunks (its first byte, then the rest), neither of which equals the marker.
/// This needs a marker of at least two bytes. The receiver (``ChunkedMessageReceiver``) is unchanged, so it also
/// understands senders that chunk plainly (except for the messages those cannot send unambiguously).
public enum ChunkedTransfer {
    /// The end-of-message marker of Apple's BTLE Transfer sample: the ASCII bytes "EOM".
    public static let endOfMessage: [UInt8] = Array("EOM".utf8)

    /// The chunks that carry `message`, each at most `maximumChunkLength` bytes, followed by `endMarker`.
    ///
    /// Throws ``FramingError/invalidConfiguration(_:)`` when the marker is shorter than two bytes or longer than a
    /// chunk.
    public static func chunks(of message: [UInt8], maximumChunkLength: Int,
                              endMarker: [UInt8] = endOfMessage) throws(FramingError) -> [[UInt8]] {
        guard endMarker.count >= 2 else { throw .invalidConfiguration("the end marker must have at least 2 bytes") }
        guard maximumChunkLength >= endMarker.count else {
            throw .invalidConfiguration("a \(maximumChunkLength)-byte chunk cannot carry the \(endMarker.count)-byte end marker")
        }
        var chunks: [[UInt8]] = []
        var start = 0
        while start < message.count {
            let end = min(message.count, start + maximumChunkLength)
            let chunk = Array(message[start..<end])
            if chunk == endMarker {
                chunks.append(Array(chunk.prefix(1)))
                chunks.append(Array(chunk.dropFirst()))
            } else {
                chunks.append(chunk)
            }
            start = end
        }
        chunks.append(endMarker)
        return chunks
    }
}

/// Reassembles messages sent as chunks and an end-of-message marker (see ``ChunkedTransfer``).
///
/// Memory is bounded: a message growing past ``maximumMessageLength`` is reported once as
/// ``FramingError/messageTooLong(maximum:)`` and its remaining chunks are dropped up to the next marker; the message
/// after it is received normally.
public struct ChunkedMessageReceiver: Sendable {
    /// The longest message accepted.
    public let maximumMessageLength: Int
    /// The end-of-message marker.
    public let endMarker: [UInt8]
    private var buffer: [UInt8] = []
    private var overflowed = false

    /// A receiver of messages up to `maximumMessageLength` bytes ending with `endMarker`.
    public init(maximumMessageLength: Int, endMarker: [UInt8] = ChunkedTransfer.endOfMessage) {
        self.maximumMessageLength = max(0, maximumMessageLength)
        self.endMarker = endMarker
    }

    /// The bytes of the message under way (at most ``maximumMessageLength``).
    public var bufferedCount: Int { buffer.count }

    /// Takes the next chunk: returns the message it completed, the error it caused, or `nil` when the message goes
    /// on.
    public mutating func receive(_ chunk: [UInt8]) -> Result<[UInt8], FramingError>? {
        if chunk == endMarker {
            defer { buffer = []; overflowed = false }
            return overflowed ? nil : .success(buffer)
        }
        if overflowed { return nil }
        guard chunk.count <= maximumMessageLength - buffer.count else {
            buffer = []
            overflowed = true
            return .failure(.messageTooLong(maximum: maximumMessageLength))
        }
        buffer += chunk
        return nil
    }
}
