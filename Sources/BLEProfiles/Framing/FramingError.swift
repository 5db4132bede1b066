import BLEWire

/// Why a framing helper refused a configuration, skipped bytes or dropped a frame or message.
///
/// The reassemblers report these as values (``FrameReassembler/append(_:)`` returns them among the frames) and
/// go on: bytes from a peer never stop a stream. The encoders and configurations throw them.
public struct FramingError: BLEError {
    /// What went wrong.
    public enum Code: Sendable, Hashable, CustomStringConvertible {
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

        /// What went wrong, in words.
        public var description: String {
            switch self {
            case .invalidConfiguration(let why): "invalid framing: \(why)"
            case .skippedBytes(let count): "skipped \(count) byte(s) looking for a frame"
            case .oversizeFrame(let size, let maximum): "a frame of \(size) bytes is over the maximum \(maximum)"
            case .undersizeFrame(let size, let minimum): "a frame of \(size) bytes is under the minimum \(minimum)"
            case .checksumMismatch(let expected, let received):
                "checksum 0x\([received].hexString()) where 0x\([expected].hexString()) was expected"
            case .badEndMarker(let expected, let received):
                "end byte 0x\([received].hexString()) where 0x\([expected].hexString()) was expected"
            case .payloadTooLong(let length, let maximum): "a payload of \(length) bytes is over the maximum \(maximum)"
            case .messageTooLong(let maximum): "a message grew past the maximum \(maximum) bytes"
            }
        }
    }

    /// What went wrong.
    public var code: Code
    /// A human-readable explanation.
    public var reason: String
    /// The source file that raised the error.
    public var file: String
    /// The source line that raised the error.
    public var line: Int

    /// Creates an error; the reason defaults to the code's description.
    public init(_ code: Code, _ reason: String? = nil, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.reason = reason ?? code.description
        self.file = file
        self.line = line
    }

    /// A framing description that cannot work, and why.
    public static func invalidConfiguration(_ why: String, file: String = #fileID, line: Int = #line) -> FramingError {
        FramingError(.invalidConfiguration(why), file: file, line: line)
    }
    /// Bytes discarded while looking for the start marker.
    public static func skippedBytes(count: Int, file: String = #fileID, line: Int = #line) -> FramingError {
        FramingError(.skippedBytes(count: count), file: file, line: line)
    }
    /// A frame declared larger than the maximum.
    public static func oversizeFrame(size: Int, maximum: Int, file: String = #fileID, line: Int = #line) -> FramingError {
        FramingError(.oversizeFrame(size: size, maximum: maximum), file: file, line: line)
    }
    /// A frame declared shorter than its own header.
    public static func undersizeFrame(size: Int, minimum: Int, file: String = #fileID, line: Int = #line) -> FramingError {
        FramingError(.undersizeFrame(size: size, minimum: minimum), file: file, line: line)
    }
    /// A frame whose checksum does not match its bytes.
    public static func checksumMismatch(expected: UInt8, received: UInt8, file: String = #fileID, line: Int = #line) -> FramingError {
        FramingError(.checksumMismatch(expected: expected, received: received), file: file, line: line)
    }
    /// A frame without the end byte its format requires.
    public static func badEndMarker(expected: UInt8, received: UInt8, file: String = #fileID, line: Int = #line) -> FramingError {
        FramingError(.badEndMarker(expected: expected, received: received), file: file, line: line)
    }
    /// A payload too long for the frame (encoder side).
    public static func payloadTooLong(length: Int, maximum: Int, file: String = #fileID, line: Int = #line) -> FramingError {
        FramingError(.payloadTooLong(length: length, maximum: maximum), file: file, line: line)
    }
    /// A chunked message grown past the maximum.
    public static func messageTooLong(maximum: Int, file: String = #fileID, line: Int = #line) -> FramingError {
        FramingError(.messageTooLong(maximum: maximum), file: file, line: line)
    }
}
