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
}
