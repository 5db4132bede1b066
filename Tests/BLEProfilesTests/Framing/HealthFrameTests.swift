import BLEProfiles
import Testing

@Suite struct HealthFrameTests {
    @Test func theFramingDescriptionIsValid() throws {
        let checked = try LengthPrefixedFraming(startMarker: [0xA5], lengthOffset: 3, lengthSize: 2, lengthByteOrder: .bigEndian,
                                                overhead: 7, maximumFrameSize: HealthFrame.maximumPayloadLength + 7)
        #expect(HealthFrame.framing == checked)
    }

    @Test func encodesAndDecodesExactBytes() throws {
        let frame = HealthFrame(deviceType: 0x01, command: 0x10, payload: [0x10, 0x27, 0x00, 0x00])
        // Checksum: 01 + 10 + 00 + 04 + 10 + 27 = 0x4C.
        let bytes: [UInt8] = [0xA5, 0x01, 0x10, 0x00, 0x04, 0x10, 0x27, 0x00, 0x00, 0x4C, 0x5A]
        #expect(try frame.encoded() == bytes)
        #expect(try HealthFrame(frame: bytes) == frame)
        // The empty payload, and a payload over 255 bytes (the length's high byte comes first).
        #expect(try HealthFrame(deviceType: 2, command: 3, payload: []).encoded() == [0xA5, 0x02, 0x03, 0x00, 0x00, 0x05, 0x5A])
        let long = try HealthFrame(deviceType: 0, command: 0, payload: Array(repeating: 1, count: 300)).encoded()
        #expect(long.count == 307)
        #expect(Array(long[3...4]) == [0x01, 0x2C])
        #expect(long[305] == UInt8(truncatingIfNeeded: 0x01 + 0x2C + 300))
        #expect(try HealthFrame(frame: long).payload.count == 300)
    }

    @Test func aPayloadOverTheMaximumIsRefused() {
        #expect(throws: FramingError.payloadTooLong(length: 513, maximum: 512)) {
            try HealthFrame(deviceType: 0, command: 0, payload: Array(repeating: 0, count: 513)).encoded()
        }
    }

    @Test func malformedFramesThrow() throws {
        let bytes: [UInt8] = [0xA5, 0x01, 0x10, 0x00, 0x04, 0x10, 0x27, 0x00, 0x00, 0x4C, 0x5A]
        for length in 0..<bytes.count { #expect(throws: WireError.self) { try HealthFrame(frame: Array(bytes.prefix(length))) } }
        #expect(throws: WireError.self) { try HealthFrame(frame: bytes + [0]) }
        var badMarker = bytes; badMarker[0] = 0xA4
        var badChecksum = bytes; badChecksum[9] = 0x4D
        var badEnd = bytes; badEnd[10] = 0x5B
        var badLength = bytes; badLength[4] = 0x03
        for bad in [badMarker, badChecksum, badEnd, badLength] { #expect(throws: WireError.self) { try HealthFrame(frame: bad) } }
        #expect(HealthFrame.problem(in: badChecksum) == .checksumMismatch(expected: 0x4C, received: 0x4D))
        #expect(HealthFrame.problem(in: badEnd) == .badEndMarker(expected: 0x5A, received: 0x5B))
        #expect(HealthFrame.problem(in: bytes) == nil)
    }

    @Test func aChecksumMismatchIsAnErrorAndAResynchronisation() throws {
        let first = try HealthFrame(deviceType: 1, command: 0x10, payload: [1, 2, 3, 4]).encoded()
        let second = try HealthFrame(deviceType: 1, command: 0x10, payload: [0xA5, 0xA5]).encoded()
        var corrupt = first
        corrupt[6] ^= 0xFF
        var reassembler = HealthFrameReassembler()
        let results = reassembler.append(corrupt + second)
        #expect(results.count == 2)
        #expect(results.first.flatMap { if case .failure(let e) = $0 { e } else { nil } } == .checksumMismatch(expected: HealthFrame.checksum(corrupt[1..<9]), received: corrupt[9]))
        #expect(try results.last?.get() == HealthFrame(deviceType: 1, command: 0x10, payload: [0xA5, 0xA5]))
    }

    @Test func everySplitOfAStreamWithGarbageGivesTheFrames() throws {
        let frames = (0..<4).map { HealthFrame(deviceType: 1, command: 0x10, payload: Array(repeating: UInt8($0), count: $0 * 3)) }
        let encoded = try frames.map { try $0.encoded() }
        let stream = [0x00, 0x13] + encoded[0] + encoded[1] + [0x5A, 0x00, 0x13] + encoded[2] + encoded[3]
        for split in 0...stream.count {
            var reassembler = HealthFrameReassembler()
            let results = reassembler.append(stream[..<split]) + reassembler.append(stream[split...])
            #expect(results.compactMap { try? $0.get() } == frames, "split at \(split)")
            #expect(reassembler.highWaterMark <= HealthFrame.maximumPayloadLength + 7)
        }
    }

    /// A false marker in garbage whose length is not over the maximum makes the reassembler wait for that many
    /// bytes; the frames after it are delayed, not lost: once the false frame is complete its checksum fails and
    /// they are found in what was buffered.
    @Test func aFalseMarkerDelaysButDoesNotLoseFrames() throws {
        let frames = (0..<30).map { HealthFrame(deviceType: 1, command: 0x10, payload: Array(repeating: UInt8($0), count: 8)) }
        let encoded = try frames.map { try $0.encoded() }
        var reassembler = HealthFrameReassembler()
        // A5 00 A5 01 10: a false frame of 0x0110 + 7 = 279 bytes.
        var results = reassembler.append([0xA5, 0x00])
        for frame in encoded { results += reassembler.append(frame) }
        #expect(results.compactMap { try? $0.get() } == frames)
        #expect(results.count == 31)
        #expect(reassembler.highWaterMark <= 519)
    }

    @Test func anOversizeLengthIsReportedOnce() throws {
        let frame = try HealthFrame(deviceType: 1, command: 0x10, payload: [9]).encoded()
        var reassembler = HealthFrameReassembler()
        let results = reassembler.append([0xA5, 0x01, 0x10, 0xFF, 0xFF, 0x00] + frame)
        #expect(results.count == 2)
        #expect(results.first.flatMap { if case .failure(let e) = $0 { e } else { nil } } == .oversizeFrame(size: 0xFFFF + 7, maximum: 519))
        #expect(try results.last?.get().payload == [9])
    }
}
