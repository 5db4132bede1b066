import BLETransport
import BLEWire

// The H4 deframer fed a byte stream in chunks of fuzzed sizes. Invariants: chunking does not change what comes out
// (the same packets and errors as one push of the whole stream), every packet re-encodes to a body that decodes to
// itself, and the deframer never holds more than the stream gave it.
enum H4DeframerFuzz {
    static func run(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        let maximum = 4 + Int(input.byte() ?? 0xFF) * 4
        var chunked = H4Deframer(maximumBodyLength: maximum)
        var stream: [UInt8] = []
        var results: [Result<HCIPacket, WireError>] = []
        while let chunk = input.chunk() {
            stream += chunk
            results += chunked.push(chunk)
            invariant(chunked.pendingByteCount <= stream.count, "pending bytes beyond the stream")
        }
        var whole = H4Deframer(maximumBodyLength: maximum)
        let once = whole.push(stream)
        invariant(once.count == results.count, "chunking changed the number of results")
        invariant(whole.pendingByteCount == chunked.pendingByteCount, "chunking changed the pending bytes")
        for (a, b) in zip(once, results) {
            switch (a, b) {
            case (.success(let p), .success(let q)):
                invariant(p == q, "chunking changed a packet")
                invariant((try? HCIPacket(h4: p.h4Bytes)) == p, "a packet does not survive re-encoding")
            case (.failure, .failure): break
            default: invariant(false, "chunking turned a packet into an error or back")
            }
        }
        chunked.reset()
        invariant(chunked.pendingByteCount == 0, "reset left bytes")
    }

    static func seeds() -> [[UInt8]] {
        let packets: [[UInt8]] = [
            hex("04 0E 04 01 03 0C 00"),                                  // Command Complete (Reset)
            hex("04 0F 04 00 01 0D 20"),                                  // Command Status (LE Create Connection)
            hex("04 3E 13 01 00 40 00 00 00 A6 A5 A4 A3 A2 A1 18 00 00 00 48 00 00"), // LE Connection Complete
            hex("02 40 20 07 00 03 00 04 00 0A 03 00"),                    // ACL: ATT Read Request
            hex("02 40 10 05 00 05 00 04 00 02 17"),                      // ACL: first fragment of a longer frame
            hex("01 03 0C 00"),                                           // HCI Reset command
            hex("03 40 00 02 AA BB"),                                     // SCO
            hex("05 40 00 02 00 AA BB"),                                  // ISO
            hex("04 05 04 00 40 00 13"),                                  // Disconnection Complete
            hex("04 13 05 01 40 00 01 00"),                               // Number Of Completed Packets
        ]
        return [
            [0xFF] + packets.flatMap { [UInt8($0.count)] + $0 },
            [0xFF, UInt8(packets.joined().count)] + packets.joined(),
            [0x02, 3] + packets[2].prefix(3) + [UInt8(packets[2].count - 3)] + packets[2].dropFirst(3),
            [0xFF, 4, 0x07, 0x04, 0x0E, 0x01, 7] + packets[0],            // unknown indicator, then a cut event
        ]
    }
}
