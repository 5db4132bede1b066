import BLETestSupport
import BLEWire
import Testing

@Suite struct L2CAPTests {
    @Test func basicFrameVector() {
        // Length 3, CID 0x0004 (ATT), payload: Exchange MTU Request 247
        expectVector(L2CAPBasicFrame(channelID: .att, payload: [0x02, 0xF7, 0x00]), "0300 0400 02f700")
        expectDripFeed(L2CAPBasicFrame.self, "0300 0400 02f700")
        #expect(decodeErrorCode(L2CAPBasicFrame.self, "0400 0400 02f700") == .lengthMismatch)
        #expect(decodeErrorCode(L2CAPBasicFrame.self, "0200 0400 02f700") == .lengthMismatch)
        #expect(L2CAPChannelID(rawValue: 0x40).isLEDynamic && !L2CAPChannelID.att.isLEDynamic)
    }

    @Test func reassemblesA251ByteFrameFrom27ByteFragments() throws {
        let frame = L2CAPBasicFrame(channelID: .att, payload: (0..<247).map { UInt8(truncatingIfNeeded: $0) })
        let fragments = frame.fragments(maximumFragmentSize: 27)
        #expect(fragments.count == 10 && fragments.first?.count == 27 && fragments.last?.count == 8)
        var reassembler = L2CAPReassembler()
        var result: [L2CAPBasicFrame] = []
        for (i, fragment) in fragments.enumerated() {
            if let f = try reassembler.append(isStart: i == 0, data: fragment) { result.append(f) }
        }
        #expect(result == [frame])
        #expect(!reassembler.isReassembling)
    }

    @Test func roundTripAtEveryFragmentSize() throws {
        let frames = [L2CAPBasicFrame(channelID: .att, payload: []),
                      L2CAPBasicFrame(channelID: .smp, payload: [1, 2, 3]),
                      L2CAPBasicFrame(channelID: .leSignaling, payload: Array(repeating: 0x5A, count: 296))]
        for size in 1...300 {
            var reassembler = L2CAPReassembler()
            var out: [L2CAPBasicFrame] = []
            for frame in frames {
                for (i, fragment) in frame.fragments(maximumFragmentSize: size).enumerated() {
                    if let f = try reassembler.append(isStart: i == 0, data: fragment) { out.append(f) }
                }
            }
            #expect(out == frames, "fragment size \(size)")
        }
    }

    @Test func headerSplitAcrossFragments() throws {
        var reassembler = L2CAPReassembler()
        #expect(try reassembler.append(isStart: true, data: [0x01]) == nil)
        #expect(try reassembler.append(isStart: false, data: [0x00, 0x04]) == nil)
        #expect(try reassembler.append(isStart: false, data: [0x00, 0x1E]) == L2CAPBasicFrame(channelID: .att, payload: [0x1E]))
    }

    @Test func malformedFragmentSequences() throws {
        var reassembler = L2CAPReassembler(maximumPDULength: 100)
        // Continuation without a start.
        #expect(throws: WireError.self) { try reassembler.append(isStart: false, data: [1, 2]) }
        // Data past the announced length.
        do {
            _ = try reassembler.append(isStart: true, data: [0x01, 0x00, 0x04, 0x00, 0xAA, 0xBB])
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .lengthMismatch)
        }
        #expect(!reassembler.isReassembling)
        // Announced length above the maximum.
        do {
            _ = try reassembler.append(isStart: true, data: [0xFF, 0x00, 0x04, 0x00])
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .oversized)
        }
        // A new start abandons an unfinished frame, which is counted, and the new frame completes.
        _ = try reassembler.append(isStart: true, data: [0x05, 0x00, 0x04, 0x00, 0x01])
        let frame = try reassembler.append(isStart: true, data: [0x01, 0x00, 0x04, 0x00, 0x1E])
        #expect(frame == L2CAPBasicFrame(channelID: .att, payload: [0x1E]))
        #expect(reassembler.droppedIncompleteFrames == 1)
    }

    @Test func signalingVectors() throws {
        let vectors: [(L2CAPSignalingPDU, String)] = [
            // Command Reject, id 1, reason 0x0000
            (.commandReject(identifier: 1, reason: .commandNotUnderstood), "01 01 0200 0000"),
            // Command Reject, id 2, signaling MTU exceeded, actual 23
            (.commandReject(identifier: 2, reason: .signalingMTUExceeded(actualMTU: 23)), "01 02 0400 0100 1700"),
            // Command Reject, id 3, invalid CID 0x0040 / 0x0041
            (.commandReject(identifier: 3, reason: .invalidCID(local: 0x40, remote: 0x41)), "01 03 0600 0200 4000 4100"),
            // Disconnection Request/Response, id 4, dcid 0x0040, scid 0x0041
            (.disconnectionRequest(identifier: 4, destinationCID: 0x40, sourceCID: 0x41), "06 04 0400 4000 4100"),
            (.disconnectionResponse(identifier: 4, destinationCID: 0x40, sourceCID: 0x41), "07 04 0400 4000 4100"),
            // Connection Parameter Update Request, id 5: 7.5–15 ms, latency 0, timeout 2 s
            (.connectionParameterUpdateRequest(identifier: 5, .init(intervalMin: 6, intervalMax: 12, latency: 0, timeout: 200)),
             "12 05 0800 0600 0c00 0000 c800"),
            (.connectionParameterUpdateResponse(identifier: 5, result: .accepted), "13 05 0200 0000"),
            // LE Credit Based Connection Request, id 6: SPSM 0x0080, scid 0x0040, MTU 512, MPS 247, 10 credits
            (.leCreditBasedConnectionRequest(identifier: 6, .init(spsm: L2CAPSPSM(rawValue: 0x80), sourceCID: 0x40, mtu: 512, mps: 247, initialCredits: 10)),
             "14 06 0a00 8000 4000 0002 f700 0a00"),
            (.leCreditBasedConnectionResponse(identifier: 6, .init(destinationCID: 0x41, mtu: 512, mps: 247, initialCredits: 10, result: .success)),
             "15 06 0a00 4100 0002 f700 0a00 0000"),
            (.flowControlCredit(identifier: 7, cid: 0x40, credits: 5), "16 07 0400 4000 0500"),
        ]
        for (value, hex) in vectors {
            let bytes = [UInt8](hex: hex) ?? []
            #expect(value.encoded == bytes, "encode \(hex)")
            #expect(try L2CAPSignalingPDU(bytes: bytes) == value, "decode \(hex)")
            for length in 0..<bytes.count {
                #expect(throws: WireError.self, "prefix \(length) of \(hex)") { try L2CAPSignalingPDU(bytes: Array(bytes.prefix(length))) }
            }
        }
    }

    @Test func signalingBadInput() throws {
        // Unknown code: decodes to unknown, with its identifier for the Command Reject.
        let unknown = try L2CAPSignalingPDU(bytes: [0x7E, 0x09, 0x01, 0x00, 0xFF])
        #expect(unknown == .unknown(L2CAPSignalingCommand(code: L2CAPSignalingCode(rawValue: 0x7E), identifier: 9, data: [0xFF])))
        // Known code, data too short: throws, identifier still recoverable.
        let short: [UInt8] = [0x12, 0x0A, 0x02, 0x00, 0x06, 0x00]
        #expect(throws: WireError.self) { try L2CAPSignalingPDU(bytes: short) }
        #expect(L2CAPSignalingPDU.identifier(of: short) == 0x0A)
        // Trailing data after a known command's fields.
        #expect(throws: WireError.self) { try L2CAPSignalingPDU(bytes: [0x13, 0x05, 0x03, 0x00, 0x00, 0x00, 0x00]) }
        // Invalid connection parameters are representable but flagged.
        #expect(!L2CAPConnectionParameterUpdateRequest(intervalMin: 6, intervalMax: 12, latency: 0, timeout: 1).isValid)
    }
}
