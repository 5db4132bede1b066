import BLETransport
import BLEWire
import Testing

@Suite struct H4DeframerTests {
    let stream: [UInt8] = samplePackets.flatMap(\.h4Bytes)

    func packets(_ results: [Result<HCIPacket, WireError>]) -> [HCIPacket] {
        results.compactMap { try? $0.get() }
    }

    @Test func wholeStream() {
        var deframer = H4Deframer()
        #expect(packets(deframer.push(stream)) == samplePackets)
        #expect(deframer.pendingByteCount == 0)
    }

    @Test func oneByteAtATime() {
        var deframer = H4Deframer()
        var out: [HCIPacket] = []
        for byte in stream { out += packets(deframer.push([byte])) }
        #expect(out == samplePackets)
    }

    @Test func everySplitPoint() {
        for split in 0...stream.count {
            var deframer = H4Deframer()
            let out = packets(deframer.push(stream[..<split])) + packets(deframer.push(stream[split...]))
            #expect(out == samplePackets, "split at \(split)")
        }
    }

    @Test func randomChunks() {
        var state: UInt64 = 0x1234_5678
        for _ in 0..<50 {
            var deframer = H4Deframer()
            var out: [HCIPacket] = []
            var offset = 0
            while offset < stream.count {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                let size = Int(state >> 33) % 40 + 1
                let end = min(stream.count, offset + size)
                out += packets(deframer.push(stream[offset..<end]))
                offset = end
            }
            #expect(out == samplePackets)
        }
    }

    @Test func garbageIndicatorsResync() {
        var deframer = H4Deframer()
        let garbage: [UInt8] = [0x00, 0xFF, 0x42]
        let results = deframer.push(garbage + samplePackets[0].h4Bytes + [0x09] + samplePackets[1].h4Bytes)
        let errors = results.filter { if case .failure = $0 { true } else { false } }
        #expect(errors.count == 4)
        #expect(packets(results) == [samplePackets[0], samplePackets[1]])
    }

    @Test func truncatedTailWaits() {
        var deframer = H4Deframer()
        let bytes = samplePackets[2].h4Bytes
        #expect(deframer.push(bytes.dropLast()).isEmpty)
        #expect(deframer.pendingByteCount == bytes.count - 1)
        #expect(packets(deframer.push([bytes[bytes.count - 1]])) == [samplePackets[2]])
    }

    @Test func oversizedPacketIsSkipped() {
        var deframer = H4Deframer(maximumBodyLength: 64)
        let results = deframer.push(samplePackets[3].h4Bytes + samplePackets[0].h4Bytes)
        #expect(results.contains { if case .failure(let e) = $0 { e.code == .oversized } else { false } })
        #expect(packets(results).last == samplePackets[0])
    }

    /// The deframer builds ACL data and events straight from the bytes: what it returns equals what the packets'
    /// own decoders make of each one, for every flag combination and length, whole or split anywhere.
    @Test func packetsBuiltInPlaceEqualTheirDecoders() throws {
        var seed: UInt64 = 0x5EED_B1E
        func next() -> Int {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return Int(truncatingIfNeeded: seed >> 33)
        }
        var stream: [UInt8] = []
        var expected: [HCIPacket] = []
        for _ in 0..<2_000 {
            var framed: [UInt8]
            switch next() % 5 {
            case 0:  // ACL: any handle, boundary and broadcast bits, 0-300 octets
                let length = next() % 301
                framed = [0x02, UInt8(truncatingIfNeeded: next()), UInt8(truncatingIfNeeded: next()), UInt8(length & 0xFF), UInt8(length >> 8)]
                framed += (0..<length).map { _ in UInt8(truncatingIfNeeded: next()) }
            case 1:  // event: any code, 0-255 octets
                let length = next() % 256
                framed = [0x04, UInt8(truncatingIfNeeded: next()), UInt8(length)] + (0..<length).map { _ in UInt8(truncatingIfNeeded: next()) }
            case 2:  // command
                let length = next() % 256
                framed = [0x01, UInt8(truncatingIfNeeded: next()), UInt8(truncatingIfNeeded: next()), UInt8(length)]
                framed += (0..<length).map { _ in UInt8(truncatingIfNeeded: next()) }
            case 3:  // SCO
                let length = next() % 256
                framed = [0x03, UInt8(truncatingIfNeeded: next()), UInt8(truncatingIfNeeded: next()), UInt8(length)]
                framed += (0..<length).map { _ in UInt8(truncatingIfNeeded: next()) }
            default:  // ISO, with the two top bits of the length word set
                let length = next() % 300
                framed = [0x05, UInt8(truncatingIfNeeded: next()), UInt8(truncatingIfNeeded: next()), UInt8(length & 0xFF), UInt8(length >> 8) | 0xC0]
                framed += (0..<length).map { _ in UInt8(truncatingIfNeeded: next()) }
            }
            expected.append(try HCIPacket(h4: framed))
            stream += framed
        }
        var whole = H4Deframer()
        #expect(packets(whole.push(stream)) == expected)
        var split = H4Deframer()
        var out: [HCIPacket] = []
        var at = 0
        while at < stream.count {
            let n = min(stream.count - at, 1 + next() % 700)
            out += packets(split.push(stream[at..<(at + n)]))
            at += n
        }
        #expect(out == expected && split.pendingByteCount == 0)
    }
}
