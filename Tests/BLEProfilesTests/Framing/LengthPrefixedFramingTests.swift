import BLEProfiles
import Testing

@Suite struct LengthPrefixedFramingTests {
    /// Marker 0x7E, one field byte, a 2-byte little-endian length counting the payload, a 1-byte trailer.
    static func framing(maximum: Int = 64) throws -> LengthPrefixedFraming {
        try LengthPrefixedFraming(startMarker: [0x7E], lengthOffset: 2, lengthSize: 2, lengthByteOrder: .littleEndian,
                                  overhead: 5, maximumFrameSize: maximum)
    }

    @Test func invalidConfigurationsAreRefused() {
        #expect(throws: FramingError.self) { try LengthPrefixedFraming(lengthOffset: 0, lengthSize: 3, overhead: 0, maximumFrameSize: 10) }
        #expect(throws: FramingError.self) { try LengthPrefixedFraming(startMarker: [1, 2], lengthOffset: 1, lengthSize: 1, overhead: 0, maximumFrameSize: 10) }
        #expect(throws: FramingError.self) { try LengthPrefixedFraming(lengthOffset: 0, lengthSize: 1, overhead: -1, maximumFrameSize: 10) }
        #expect(throws: FramingError.self) { try LengthPrefixedFraming(lengthOffset: 2, lengthSize: 4, overhead: 0, maximumFrameSize: 5) }
        #expect(throws: FramingError.self) {
            try LengthPrefixedFraming(lengthOffset: 0, lengthSize: 4, overhead: 0, maximumFrameSize: LengthPrefixedFraming.frameSizeLimit + 1)
        }
        #expect(throws: Never.self) { try LengthPrefixedFraming(lengthOffset: 0, lengthSize: 4, overhead: 0, maximumFrameSize: 4) }
    }

    @Test func encodesEachSizeAndByteOrderExactly() throws {
        let le1 = try LengthPrefixedFraming(lengthOffset: 0, lengthSize: 1, overhead: 1, maximumFrameSize: 300)
        #expect(try le1.encode(payload: [0xAA, 0xBB]) == [0x02, 0xAA, 0xBB])
        let be2 = try LengthPrefixedFraming(startMarker: [0xA5], lengthOffset: 1, lengthSize: 2, lengthByteOrder: .bigEndian, overhead: 3, maximumFrameSize: 300)
        #expect(try be2.encode(payload: Array(repeating: 1, count: 258)) == [0xA5, 0x01, 0x02] + Array(repeating: 1, count: 258))
        let le2 = try LengthPrefixedFraming(startMarker: [0xA5], lengthOffset: 1, lengthSize: 2, overhead: 3, maximumFrameSize: 300)
        #expect(try le2.encode(payload: Array(repeating: 1, count: 258)) == [0xA5, 0x02, 0x01] + Array(repeating: 1, count: 258))
        // A length counting the whole frame (overhead 0), 4 bytes big-endian, after a 2-byte marker and a field.
        let be4 = try LengthPrefixedFraming(startMarker: [0x55, 0xAA], lengthOffset: 3, lengthSize: 4, lengthByteOrder: .bigEndian, overhead: 0, maximumFrameSize: 100)
        #expect(try be4.encode(payload: [9], fields: [0x10], trailer: [0xFF]) == [0x55, 0xAA, 0x10, 0, 0, 0, 9, 9, 0xFF])
        let le4 = try LengthPrefixedFraming(lengthOffset: 0, lengthSize: 4, overhead: 4, maximumFrameSize: 100)
        #expect(try le4.encode(payload: [1, 2, 3]) == [3, 0, 0, 0, 1, 2, 3])
        // And back: the declared size of each header.
        #expect(be2.declaredFrameSize(header: [0xA5, 0x01, 0x02]) == 258 + 3)
        #expect(le2.declaredFrameSize(header: [0xA5, 0x01, 0x02]) == 513 + 3)
        #expect(be4.declaredFrameSize(header: [0x55, 0xAA, 0x10, 0, 0, 0, 9]) == 9)
        #expect(le4.declaredFrameSize(header: [3, 0, 0]) == nil)
    }

    @Test func encoderRefusesWhatDoesNotFit() throws {
        let framing = try Self.framing(maximum: 10)
        #expect(throws: FramingError.payloadTooLong(length: 6, maximum: 5)) { try framing.encode(payload: Array(repeating: 0, count: 6), fields: [1], trailer: [2]) }
        #expect(throws: FramingError.self) { try framing.encode(payload: [], fields: [], trailer: [2]) }
        let oneByte = try LengthPrefixedFraming(lengthOffset: 0, lengthSize: 1, overhead: 1, maximumFrameSize: 1000)
        #expect(throws: FramingError.payloadTooLong(length: 256, maximum: 255)) { try oneByte.encode(payload: Array(repeating: 0, count: 256)) }
        #expect(try oneByte.encode(payload: Array(repeating: 0, count: 255)).count == 256)
        // A length field that would go negative (the overhead exceeds the frame).
        let whole = try LengthPrefixedFraming(lengthOffset: 0, lengthSize: 1, overhead: 5, maximumFrameSize: 100)
        #expect(throws: FramingError.self) { try whole.encode(payload: [1]) }
    }

    static func frames() throws -> [[UInt8]] {
        let framing = try framing()
        return [try framing.encode(payload: [1, 2, 3], fields: [0x01], trailer: [0xEE]),
                try framing.encode(payload: [], fields: [0x02], trailer: [0xEE]),
                try framing.encode(payload: [0x7E, 0x7E, 0x05], fields: [0x03], trailer: [0xEE]),
                try framing.encode(payload: Array(0..<20), fields: [0x04], trailer: [0xEE])]
    }

    static func frames(in results: [Result<[UInt8], FramingError>]) -> [[UInt8]] {
        results.compactMap { try? $0.get() }
    }

    static func errors(in results: [Result<[UInt8], FramingError>]) -> [FramingError] {
        results.compactMap { if case .failure(let error) = $0 { error } else { nil } }
    }

    @Test func everyFrameOfOneChunkComesOut() throws {
        var reassembler = FrameReassembler(framing: try Self.framing())
        let frames = try Self.frames()
        let results = reassembler.append(frames.joined())
        #expect(Self.frames(in: results) == frames)
        #expect(Self.errors(in: results).isEmpty)
        #expect(reassembler.bufferedCount == 0)
    }

    @Test func everySplitPointOfAMultiFrameBufferGivesTheSameFrames() throws {
        let frames = try Self.frames()
        let stream = Array(frames.joined())
        for split in 0...stream.count {
            var reassembler = FrameReassembler(framing: try Self.framing())
            let results = reassembler.append(stream[..<split]) + reassembler.append(stream[split...])
            #expect(Self.frames(in: results) == frames, "split at \(split)")
            #expect(Self.errors(in: results).isEmpty, "split at \(split)")
        }
        // Every pair of split points too (three chunks).
        for first in 0...stream.count {
            for second in first...stream.count {
                var reassembler = FrameReassembler(framing: try Self.framing())
                let results = reassembler.append(stream[..<first]) + reassembler.append(stream[first..<second]) + reassembler.append(stream[second...])
                #expect(Self.frames(in: results) == frames, "splits at \(first), \(second)")
            }
        }
    }

    @Test func byteByByteGivesTheSameFrames() throws {
        let frames = try Self.frames()
        var reassembler = FrameReassembler(framing: try Self.framing())
        var results: [Result<[UInt8], FramingError>] = []
        for byte in frames.joined() { results += reassembler.append([byte]) }
        #expect(Self.frames(in: results) == frames)
        #expect(Self.errors(in: results).isEmpty)
    }

    @Test func garbageBetweenFramesIsSkippedAndReportedInPlace() throws {
        let frames = try Self.frames()
        var reassembler = FrameReassembler(framing: try Self.framing())
        let stream = [0x00, 0x01] + frames[0] + [0x33, 0x44, 0x55] + frames[1] + frames[2] + [0x99]
        let results = reassembler.append(stream)
        #expect(results == [.failure(.skippedBytes(count: 2)), .success(frames[0]), .failure(.skippedBytes(count: 3)),
                            .success(frames[1]), .success(frames[2]), .failure(.skippedBytes(count: 1))])
        #expect(reassembler.bufferedCount == 0)
        // A partial marker at the end stays buffered; here the marker is one byte, so a trailing 0x7E waits.
        #expect(reassembler.append([0x12, 0x7E]) == [.failure(.skippedBytes(count: 1))])
        #expect(reassembler.bufferedCount == 1)
        #expect(reassembler.append(frames[3].dropFirst()) == [.success(frames[3])])
    }

    @Test func aMultiByteMarkerSplitAcrossChunksIsFound() throws {
        let framing = try LengthPrefixedFraming(startMarker: [0x55, 0xAA], lengthOffset: 2, lengthSize: 1, overhead: 3, maximumFrameSize: 40)
        let frame = try framing.encode(payload: [1, 2], trailer: [])
        #expect(frame == [0x55, 0xAA, 0x02, 1, 2])
        var reassembler = FrameReassembler(framing: framing)
        #expect(reassembler.append([0x55, 0x55]) == [.failure(.skippedBytes(count: 1))])
        #expect(reassembler.append([0xAA, 0x02, 1]) == [])
        #expect(reassembler.append([2, 0x55]) == [.success(frame)])
        #expect(reassembler.append([0x00]) == [.failure(.skippedBytes(count: 2))])
    }

    @Test func anOversizeLengthIsReportedOnceThenTheNextFrameIsFound() throws {
        let framing = try Self.framing(maximum: 32)
        let frames = try Self.frames().prefix(3)
        var reassembler = FrameReassembler(framing: framing)
        // A header declaring 1000 + 5 bytes, then garbage containing a false marker, then good frames.
        let stream = [0x7E, 0x00, 0xE8, 0x03, 0x01, 0x7E, 0xFF, 0xFF] + frames.joined()
        let results = reassembler.append(stream)
        #expect(results == [.failure(.oversizeFrame(size: 1005, maximum: 32))] + frames.map { .success($0) })
        // Split at every point, the error is still reported once and the frames all come out.
        for split in 0...stream.count {
            var reassembler = FrameReassembler(framing: framing)
            let results = reassembler.append(stream[..<split]) + reassembler.append(stream[split...])
            #expect(Self.errors(in: results) == [.oversizeFrame(size: 1005, maximum: 32)], "split at \(split)")
            #expect(Self.frames(in: results) == Array(frames), "split at \(split)")
        }
    }

    @Test func anUndersizeLengthIsAnError() throws {
        // The length counts the whole frame: a declared 2 is shorter than the 3-byte header.
        let framing = try LengthPrefixedFraming(startMarker: [0xA5], lengthOffset: 1, lengthSize: 2, overhead: 0, maximumFrameSize: 40)
        var reassembler = FrameReassembler(framing: framing)
        let good = try framing.encode(payload: [7])
        #expect(good == [0xA5, 0x04, 0x00, 7])
        #expect(reassembler.append([0xA5, 0x02, 0x00] + good) == [.failure(.undersizeFrame(size: 2, minimum: 3)), .success(good)])
    }

    @Test func aFrameSwallowedByACorruptLengthIsRecoveredByTheValidator() throws {
        // A false start whose length covers the next real frame: the validator (trailer must be 0xEE) rejects it,
        // the reassembler drops only the false marker and finds the real frame inside.
        let framing = try Self.framing()
        let frames = try Self.frames()
        var reassembler = FrameReassembler(framing: framing) { frame in
            frame.last == 0xEE ? nil : .badEndMarker(expected: 0xEE, received: frame.last ?? 0)
        }
        let falseStart: [UInt8] = [0x7E, 0x09, 0x04, 0x00]
        let results = reassembler.append(falseStart + frames[0] + frames[1])
        // The false frame is 7E 09 04 00 + the first 5 bytes of frames[0], ending in 0x01.
        #expect(results == [.failure(.badEndMarker(expected: 0xEE, received: 0x01)), .success(frames[0]), .success(frames[1])])
    }

    @Test func withoutAMarkerResynchronisationSlidesAndReportsOnce() throws {
        let framing = try LengthPrefixedFraming(lengthOffset: 0, lengthSize: 1, overhead: 1, maximumFrameSize: 8)
        let frame = try framing.encode(payload: [1, 2])
        var reassembler = FrameReassembler(framing: framing)
        // 0x20 and 0x30 declare frames over the maximum: one error, then the slide reaches the real frame.
        #expect(reassembler.append([0x20, 0x30] + frame + frame) == [.failure(.oversizeFrame(size: 0x21, maximum: 8)), .success(frame), .success(frame)])
    }

    @Test func memoryStaysBoundedByTheMaximumFrameSize() throws {
        let framing = try Self.framing(maximum: 32)
        var reassembler = FrameReassembler(framing: framing)
        // 10 000 bytes of garbage with false markers and oversize lengths in one chunk, then a good frame.
        var garbage: [UInt8] = []
        for i in 0..<10_000 { garbage.append(i % 7 == 0 ? 0x7E : UInt8(truncatingIfNeeded: i &* 31)) }
        let frame = try framing.encode(payload: [5, 6, 7], fields: [1], trailer: [0xEE])
        let results = reassembler.append(garbage) + reassembler.append(frame)
        #expect(reassembler.highWaterMark <= 32)
        #expect(results.last == .success(frame))
        #expect(reassembler.bufferedCount == 0)
        // A frame of exactly the maximum fits.
        var exact = FrameReassembler(framing: framing)
        let largest = try framing.encode(payload: Array(repeating: 0x11, count: 27), fields: [1], trailer: [0xEE])
        #expect(largest.count == 32)
        #expect(exact.append(largest + largest) == [.success(largest), .success(largest)])
        #expect(exact.highWaterMark == 32)
    }
}

@Suite struct FrameReassemblerResetTests {
    @Test func resetForgetsAPartialFrame() throws {
        let framing = try LengthPrefixedFramingTests.framing()
        let frames = try LengthPrefixedFramingTests.frames()
        var reassembler = FrameReassembler(framing: framing)
        #expect(reassembler.append(frames[0].prefix(4)) == [])
        #expect(reassembler.bufferedCount == 4)
        reassembler.reset()
        #expect(reassembler.bufferedCount == 0)
        // The rest of the forgotten frame is garbage now; the next frame comes out.
        #expect(reassembler.append(frames[0].dropFirst(4) + frames[1]) == [.failure(.skippedBytes(count: frames[0].count - 4)), .success(frames[1])])
    }
}
