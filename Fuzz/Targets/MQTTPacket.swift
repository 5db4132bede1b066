import MQTT

// The MQTT 3.1.1 codec and the client session, fed bytes from a broker. The first byte sets the chunk size (1...32)
// in which the rest is pushed. Invariants:
// - `MQTTPacket(bytes:)`: a packet that decodes re-encodes to bytes that decode to the same packet, and that
//   encoding is stable;
// - `MQTTFrameDecoder`: pushing the stream in chunks gives the same error as pushing it at once, and without an
//   error the same packets; every packet it gives re-encodes and decodes again;
// - `MQTTSession` (connected by a CONNACK first, then fed the stream, with ticks and publishes between chunks):
//   every packet it sends decodes; no more than its in-flight window is unacknowledged; nothing traps.
enum MQTTPacketFuzz {
    static func run(_ bytes: [UInt8]) {
        guard let first = bytes.first else { return }
        let chunkSize = Int(first & 0x1F) + 1
        let stream = Array(bytes.dropFirst())

        // One packet.
        if let packet = try? MQTTPacket(bytes: stream) {
            let encoded = packet.encoded()
            if let again = try? MQTTPacket(bytes: encoded) {
                invariant(again == packet, "\(packet) became \(again)")
                invariant(again.encoded() == encoded, "the encoding of \(packet) is not stable")
            } else {
                invariant(false, "the encoding of \(packet) does not decode")
            }
        }

        // A stream, at once and in chunks.
        let whole = frames(stream, chunkSize: stream.count)
        let chunked = frames(stream, chunkSize: chunkSize)
        // (A push that throws gives none of its packets: with an error, the packets before it depend on the chunks.)
        if whole.error == nil && chunked.error == nil {
            invariant(whole.packets == chunked.packets, "chunks of \(chunkSize) changed the packets")
        }
        invariant(whole.error == chunked.error, "chunks of \(chunkSize) changed the error: \(String(describing: whole.error)) / \(String(describing: chunked.error))")
        for packet in whole.packets {
            invariant((try? MQTTPacket(bytes: packet.encoded())) == packet, "\(packet) does not survive its encoding")
        }

        // A session: connected, then fed the stream.
        var session = MQTTSession(.init(clientID: "fuzz", keepAlive: 5, maximumInFlight: 4, queueLimit: 8))
        var now = Duration.zero
        check(session.connectionOpened(now: now))
        check(session.received([0x20, 0x02, 0x00, 0x00], now: now))
        var offset = 0
        var round = 0
        while offset < stream.count {
            let end = min(stream.count, offset + chunkSize)
            check(session.received(stream[offset..<end], now: now))
            offset = end
            round += 1
            now += .milliseconds(700 * (round % 4))
            check(session.tick(now: now))
            if round % 3 == 0, let result = try? session.publish(MQTTMessage(topic: "fuzz/\(round)", text: "x", qos: .atLeastOnce), now: now) {
                check(result.actions)
            }
            invariant(session.inFlightCount <= 4, "\(session.inFlightCount) messages in flight past a window of 4")
            invariant(session.queuedCount <= 8, "\(session.queuedCount) messages queued past a limit of 8")
        }
        check(session.connectionClosed(reason: "end of input"))
    }

    /// The packets and the error of a stream pushed in chunks of `chunkSize` (the decoder stops at its first error).
    static func frames(_ stream: [UInt8], chunkSize: Int) -> (packets: [MQTTPacket], error: MQTTDecodingError?) {
        var decoder = MQTTFrameDecoder(maximumPacketSize: 4096)
        var packets: [MQTTPacket] = []
        var offset = 0
        repeat {
            let end = min(stream.count, offset + max(1, chunkSize))
            do {
                packets += try decoder.push(stream[offset..<end])
            } catch {
                return (packets, error)
            }
            offset = end
        } while offset < stream.count
        return (packets, nil)
    }

    /// What a session sends must decode.
    static func check(_ actions: [MQTTSession.Action]) {
        for case .send(let bytes) in actions {
            var decoder = MQTTFrameDecoder()
            let packets = try? decoder.push(bytes)
            invariant(packets?.isEmpty == false && decoder.pendingByteCount == 0, "the session sent bytes that are not whole packets: \(bytes)")
        }
    }

    /// A broker's packets (MQTT 3.1.1, section 3), one per seed, then a few in one stream; the first byte of each is
    /// the chunk size.
    static func seeds() -> [[UInt8]] {
        let packets = [
            "20 02 00 00", "20 02 01 00", "20 02 00 05",                 // CONNACK: accepted, session present, refused
            "30 07 0003 612F62 6869",                                    // PUBLISH QoS 0 "a/b" "hi"
            "32 09 0003 612F62 0001 6869",                               // PUBLISH QoS 1, packet 1
            "3B 09 0003 612F62 0002 6869",                               // PUBLISH QoS 1, DUP, retained
            "40 02 0001", "50 02 0001", "62 02 0001", "70 02 0001",      // PUBACK, PUBREC, PUBREL, PUBCOMP
            "90 06 000A 00 01 02 80", "B0 02 000A",                      // SUBACK, UNSUBACK
            "D0 00", "C0 00", "E0 00",                                   // PINGRESP, PINGREQ, DISCONNECT
            "10 15 0004 4D515454 04 02 003C 0009 73776966742D626C65",    // CONNECT "swift-ble"
            "82 0E 000A 0003 612F62 01 0003 632F64 02",                  // SUBSCRIBE
            "A2 0C 000A 0003 612F62 0003 632F64",                        // UNSUBSCRIBE
            "30 80 01" + String(repeating: " 00", count: 128),           // a two-byte remaining length
        ]
        var seeds = packets.map { [0x03] + hex($0) }
        seeds.append([0x00] + hex("20 02 00 00 32 09 0003 612F62 0001 6869 40 02 0001 90 03 0001 01 D0 00"))
        seeds.append([0x07] + hex("30 07 0003 612F62 6869 30 07 0003 612F62 6869 FF"))
        return seeds
    }
}
