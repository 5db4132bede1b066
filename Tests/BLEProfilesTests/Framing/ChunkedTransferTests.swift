import BLEProfiles
import Testing

@Suite struct ChunkedTransferTests {
    @Test func chunksAMessageAndEndsWithTheMarker() throws {
        let message = Array("Hello, Bluetooth!".utf8)
        let chunks = try ChunkedTransfer.chunks(of: message, maximumChunkLength: 5)
        #expect(chunks == [Array("Hello".utf8), Array(", Blu".utf8), Array("etoot".utf8), Array("h!".utf8), Array("EOM".utf8)])
        #expect(try ChunkedTransfer.chunks(of: [], maximumChunkLength: 20) == [Array("EOM".utf8)])
    }

    @Test func invalidMarkersAreRefused() {
        #expect(throws: FramingError.self) { try ChunkedTransfer.chunks(of: [1], maximumChunkLength: 20, endMarker: [0]) }
        #expect(throws: FramingError.self) { try ChunkedTransfer.chunks(of: [1], maximumChunkLength: 2) }
    }

    @Test func theReceiverReassemblesEveryChunkLength() throws {
        let message = (0..<200).map { UInt8(truncatingIfNeeded: $0 * 7) }
        for length in 3...60 {
            var receiver = ChunkedMessageReceiver(maximumMessageLength: 512)
            var delivered: [Result<[UInt8], FramingError>] = []
            for chunk in try ChunkedTransfer.chunks(of: message, maximumChunkLength: length) {
                #expect(chunk.count <= length)
                if let result = receiver.receive(chunk) { delivered.append(result) }
            }
            #expect(delivered == [.success(message)], "chunk length \(length)")
        }
    }

    /// The ambiguity: "ABCDE" + "EOM" chunked by 5 would make "EOM" a data chunk of its own. A plain sender sends it
    /// and the receiver cuts the message there; this sender splits that chunk so the message arrives whole.
    @Test func aLastChunkEqualToTheMarkerIsSplitSoTheMessageArrivesWhole() throws {
        let message = Array("ABCDEEOM".utf8)
        let chunks = try ChunkedTransfer.chunks(of: message, maximumChunkLength: 5)
        #expect(chunks == [Array("ABCDE".utf8), Array("E".utf8), Array("OM".utf8), Array("EOM".utf8)])
        var receiver = ChunkedMessageReceiver(maximumMessageLength: 100)
        #expect(chunks.compactMap { receiver.receive($0) } == [.success(message)])

        // What a plain sender's chunks do to any receiver: two messages, the first cut short, the second empty.
        var plain = ChunkedMessageReceiver(maximumMessageLength: 100)
        let naive = [Array("ABCDE".utf8), Array("EOM".utf8), Array("EOM".utf8)]
        #expect(naive.compactMap { plain.receive($0) } == [.success(Array("ABCDE".utf8)), .success([])])

        // The marker alone as a message, and a middle chunk equal to the marker (chunk length 3).
        var alone = ChunkedMessageReceiver(maximumMessageLength: 100)
        let aloneChunks = try ChunkedTransfer.chunks(of: Array("EOM".utf8), maximumChunkLength: 3)
        #expect(aloneChunks == [Array("E".utf8), Array("OM".utf8), Array("EOM".utf8)])
        #expect(aloneChunks.compactMap { alone.receive($0) } == [.success(Array("EOM".utf8))])
        let middle = Array("xyzEOMuvw".utf8)
        var receiver3 = ChunkedMessageReceiver(maximumMessageLength: 100)
        let middleChunks = try ChunkedTransfer.chunks(of: middle, maximumChunkLength: 3)
        #expect(!middleChunks.dropLast().contains(Array("EOM".utf8)))
        #expect(middleChunks.compactMap { receiver3.receive($0) } == [.success(middle)])
    }

    @Test func theReceiverBoundsItsMemoryAndRecoversAtTheNextMarker() throws {
        var receiver = ChunkedMessageReceiver(maximumMessageLength: 10)
        var results: [Result<[UInt8], FramingError>] = []
        for chunk in try ChunkedTransfer.chunks(of: Array(repeating: 1, count: 25), maximumChunkLength: 4) {
            if let result = receiver.receive(chunk) { results.append(result) }
            #expect(receiver.bufferedCount <= 10)
        }
        #expect(results == [.failure(.messageTooLong(maximum: 10))])
        // The next message is received normally, and one of exactly the maximum fits.
        let next = Array(repeating: UInt8(2), count: 10)
        #expect(try ChunkedTransfer.chunks(of: next, maximumChunkLength: 4).compactMap { receiver.receive($0) } == [.success(next)])
    }
}
