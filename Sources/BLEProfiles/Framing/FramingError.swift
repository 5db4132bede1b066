import BLEWire

/// Why a framing helper refused a configuration, skipped bytes or dropped a frame or message.
///
/// The reassemblers report these as values (``FrameReassembler/append(_:)`` returns them among the frames) and
/// go on: bytes from a peer never stop a stream. The encoders and configurations throw them.
public typealias FramingError = BLEFailure<FramingErrorCode>

/// The kind of a ``FramingError``, with its figures: an open struct, so a release may add kinds. The accessors
/// (``skippedByteCount``, ``size``, ``limit``...) read the figures back.
public struct FramingErrorCode: BLEErrorCode {
    private enum Backing: Hashable, Sendable {
        case invalidConfiguration(String)
        case skippedBytes(Int)
        case oversizeFrame(Int, Int)
        case undersizeFrame(Int, Int)
        case checksumMismatch(UInt8, UInt8)
        case badEndMarker(UInt8, UInt8)
        case payloadTooLong(Int, Int)
        case messageTooLong(Int)
    }

    private let backing: Backing
    private init(_ backing: Backing) { self.backing = backing }

    /// A framing description that cannot work (for example a 3-byte length field), and why.
    /// ``BLEErrorCategory/invalidInput``.
    public static func invalidConfiguration(_ why: String) -> FramingErrorCode { FramingErrorCode(.invalidConfiguration(why)) }
    /// Bytes that could not start a frame were discarded while looking for the start marker.
    /// ``BLEErrorCategory/protocolError``.
    public static func skippedBytes(count: Int) -> FramingErrorCode { FramingErrorCode(.skippedBytes(count)) }
    /// A header declared a frame larger than the framing's maximum; the reassembler resynchronised.
    /// ``BLEErrorCategory/protocolError``.
    public static func oversizeFrame(size: Int, maximum: Int) -> FramingErrorCode { FramingErrorCode(.oversizeFrame(size, maximum)) }
    /// A header declared a frame shorter than its own header; the reassembler resynchronised.
    /// ``BLEErrorCategory/protocolError``.
    public static func undersizeFrame(size: Int, minimum: Int) -> FramingErrorCode { FramingErrorCode(.undersizeFrame(size, minimum)) }
    /// A frame's checksum did not match its bytes; the reassembler resynchronised. ``BLEErrorCategory/protocolError``.
    public static func checksumMismatch(expected: UInt8, received: UInt8) -> FramingErrorCode { FramingErrorCode(.checksumMismatch(expected, received)) }
    /// A frame did not end with the end byte its format requires; the reassembler resynchronised.
    /// ``BLEErrorCategory/protocolError``.
    public static func badEndMarker(expected: UInt8, received: UInt8) -> FramingErrorCode { FramingErrorCode(.badEndMarker(expected, received)) }
    /// A payload too long for the frame's length field or maximum frame size (encoder side).
    /// ``BLEErrorCategory/invalidInput``.
    public static func payloadTooLong(length: Int, maximum: Int) -> FramingErrorCode { FramingErrorCode(.payloadTooLong(length, maximum)) }
    /// A chunked message grew past the receiver's maximum; its chunks are dropped until the next end marker.
    /// ``BLEErrorCategory/protocolError``.
    public static func messageTooLong(maximum: Int) -> FramingErrorCode { FramingErrorCode(.messageTooLong(maximum)) }

    public var category: BLEErrorCategory {
        switch backing {
        case .invalidConfiguration, .payloadTooLong: .invalidInput
        case .skippedBytes, .oversizeFrame, .undersizeFrame, .checksumMismatch, .badEndMarker, .messageTooLong: .protocolError
        }
    }

    /// What went wrong, in words (the reason an error of this code gets by default).
    public var description: String {
        switch backing {
        case .invalidConfiguration(let why): "invalid framing: \(why)"
        case .skippedBytes(let count): "skipped \(count) byte(s) looking for a frame"
        case .oversizeFrame(let size, let maximum): "a frame of \(size) bytes is over the maximum \(maximum)"
        case .undersizeFrame(let size, let minimum): "a frame of \(size) bytes is under the minimum \(minimum)"
        case .checksumMismatch(let expected, let received): "checksum 0x\([received].hexString()) where 0x\([expected].hexString()) was expected"
        case .badEndMarker(let expected, let received): "end byte 0x\([received].hexString()) where 0x\([expected].hexString()) was expected"
        case .payloadTooLong(let length, let maximum): "a payload of \(length) bytes is over the maximum \(maximum)"
        case .messageTooLong(let maximum): "a message grew past the maximum \(maximum) bytes"
        }
    }

    /// Why the framing of ``invalidConfiguration(_:)`` cannot work.
    public var configurationProblem: String? {
        switch backing {
        case .invalidConfiguration(let x): x
        default: nil
        }
    }

    /// How many bytes ``skippedBytes(count:)`` discarded.
    public var skippedByteCount: Int? {
        switch backing {
        case .skippedBytes(let x): x
        default: nil
        }
    }

    /// The declared frame size of ``oversizeFrame(size:maximum:)`` and ``undersizeFrame(size:minimum:)``.
    public var size: Int? {
        switch backing {
        case .oversizeFrame(let x, _): x
        case .undersizeFrame(let x, _): x
        default: nil
        }
    }

    /// The payload length of ``payloadTooLong(length:maximum:)``.
    public var length: Int? {
        switch backing {
        case .payloadTooLong(let x, _): x
        default: nil
        }
    }

    /// The maximum (or, for ``undersizeFrame(size:minimum:)``, the minimum) the figure broke.
    public var limit: Int? {
        switch backing {
        case .oversizeFrame(_, let x): x
        case .undersizeFrame(_, let x): x
        case .payloadTooLong(_, let x): x
        case .messageTooLong(let x): x
        default: nil
        }
    }

    /// The byte expected, of ``checksumMismatch(expected:received:)`` and ``badEndMarker(expected:received:)``.
    public var expectedByte: UInt8? {
        switch backing {
        case .checksumMismatch(let x, _): x
        case .badEndMarker(let x, _): x
        default: nil
        }
    }

    /// The byte received, of ``checksumMismatch(expected:received:)`` and ``badEndMarker(expected:received:)``.
    public var receivedByte: UInt8? {
        switch backing {
        case .checksumMismatch(_, let x): x
        case .badEndMarker(_, let x): x
        default: nil
        }
    }
}

extension BLEFailure where Code == FramingErrorCode {
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
