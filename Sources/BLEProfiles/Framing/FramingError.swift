/// Why a framing helper refused a configuration, skipped bytes or dropped a frame or message.
///
/// The reassemblers report these as values (``FrameReassembler/append(_:)`` returns them among the frames) and
/// go on: bytes from a peer never stop a stream.
public enum FramingError: Error, Sendable, Hashable {
    /// A framing description that cannot work (for example a 3-byte length field), and why.
    case invalidConfiguration(String)
    /// Bytes that could not start a frame were discarded while looking for the start marker.
    case skippedBytes(count: Int)
    /// A header declared a frame larger than the framing's maximum; the reassembler resynchronised.
    case oversizeFrame(size: Int, maximum: Int)
    /// A header declared a frame shorter than its own header; the reassembler resynchronised.
    case undersizeFrame(size: Int, minimum: Int)
    /// A frame's checksum did not match its bytes; the reassembler resynchronised.
    case checksumMismatch(expected: UInt8, received: UInt8)
    /// A frame did not end with the end byte its format requires; the reassembler resynchronised.
    case badEndMarker(expected: UInt8, received: UInt8)
    /// A payload too long for the frame's length field or maximum frame size (encoder side).
    case payloadTooLong(length: Int, maximum: Int)
    /// A chunked message grew past the receiver's maximum; its chunks are dropped until the next end marker.
    case messageTooLong(maximum: Int)
}
