import MQTT
import Testing

/// The codec against the MQTT 3.1.1 standard's encodings (section numbers are the standard's).
@Suite struct MQTTPacketTests {
    func hex(_ text: String) -> [UInt8] {
        let digits = Array(text.filter { !$0.isWhitespace })
        return stride(from: 0, to: digits.count - 1, by: 2).compactMap { UInt8(String(digits[$0...$0 + 1]), radix: 16) }
    }

    /// Table 2.4: the boundaries of one to four bytes.
    @Test func remainingLengthBoundaries() throws {
        let table: [(Int, String)] = [(0, "00"), (127, "7F"), (128, "8001"), (16_383, "FF7F"), (16_384, "808001"),
                                      (2_097_151, "FFFF7F"), (2_097_152, "80808001"), (268_435_455, "FFFFFF7F")]
        for (length, bytes) in table {
            #expect(MQTTRemainingLength.encode(length) == hex(bytes), "\(length)")
            let decoded = try MQTTRemainingLength.decode(hex(bytes), from: 0)
            #expect(decoded?.length == length)
            #expect(decoded?.end == hex(bytes).count)
        }
        #expect(throws: MQTTDecodingError.self) { try MQTTRemainingLength.decode(hex("FFFFFFFF01"), from: 0) }
        #expect(try MQTTRemainingLength.decode(hex("FF"), from: 0) == nil, "cut short: wait for more")
    }

    /// Section 3.1: protocol name, level 4, flags, keep-alive, then the payload fields in order.
    @Test func connectEncodesAsTheStandardLaysItOut() throws {
        let plain = MQTTPacket.connect(.init(clientID: "swift-ble", cleanSession: true, keepAlive: 60))
        #expect(plain.encoded() == hex("10 15 0004 4D515454 04 02 003C 0009") + Array("swift-ble".utf8))
        let full = MQTTPacket.connect(.init(clientID: "gw", cleanSession: false, keepAlive: 10,
                                            will: MQTTMessage(topic: "s/gw/status", text: "offline", qos: .atLeastOnce, retain: true),
                                            userName: "u", password: [0x70]))
        // Flags: user 0x80 | password 0x40 | will retain 0x20 | will QoS 1 0x08 | will 0x04 = 0xEC.
        let expected = hex("0004 4D515454 04 EC 000A 0002") + Array("gw".utf8) + hex("000B") + Array("s/gw/status".utf8)
            + hex("0007") + Array("offline".utf8) + hex("0001 75 0001 70")
        #expect(full.encoded() == [0x10, UInt8(expected.count)] + expected)
        #expect(try MQTTPacket(bytes: full.encoded()) == full)
        #expect(try MQTTPacket(bytes: plain.encoded()) == plain)
    }

    /// The examples of sections 3.8.3 (SUBSCRIBE) and 3.9.3 (SUBACK), packet identifier 10.
    @Test func subscribeAndSubackExamples() throws {
        let subscribe = MQTTPacket.subscribe(packetID: 10, filters: [("a/b", .atLeastOnce), ("c/d", .exactlyOnce)])
        #expect(subscribe.encoded() == hex("82 0E 000A 0003 612F62 01 0003 632F64 02"))
        #expect(try MQTTPacket(bytes: hex("82 0E 000A 0003 612F62 01 0003 632F64 02")) == subscribe)
        let suback = try MQTTPacket(bytes: hex("90 06 000A 00 01 02 80"))
        #expect(suback == .suback(packetID: 10, granted: [.atMostOnce, .atLeastOnce, .exactlyOnce, nil]))
        #expect(MQTTPacket.unsubscribe(packetID: 10, filters: ["a/b", "c/d"]).encoded() == hex("A2 0C 000A 0003 612F62 0003 632F64"))
    }

    @Test func everyPacketRoundTrips() throws {
        let packets: [MQTTPacket] = [
            .connect(.init(clientID: "", cleanSession: true, keepAlive: 0)),
            .connack(sessionPresent: true, returnCode: .accepted),
            .connack(sessionPresent: false, returnCode: .notAuthorized),
            .publish(.init(message: MQTTMessage(topic: "a/b", payload: []))),
            .publish(.init(message: MQTTMessage(topic: "é/ß", payload: Array(0...255), qos: .atLeastOnce, retain: true), packetID: 65_535, duplicate: true)),
            .publish(.init(message: MQTTMessage(topic: "t", payload: Array(repeating: 7, count: 20_000), qos: .exactlyOnce), packetID: 1)),
            .puback(packetID: 1), .pubrec(packetID: 2), .pubrel(packetID: 3), .pubcomp(packetID: 4),
            .subscribe(packetID: 5, filters: [("#", .atMostOnce), ("+/x/+", .atLeastOnce), ("$SYS/#", .exactlyOnce)]),
            .suback(packetID: 5, granted: [nil]),
            .unsubscribe(packetID: 6, filters: ["a/+"]), .unsuback(packetID: 6),
            .pingreq, .pingresp, .disconnect,
        ]
        for packet in packets {
            #expect(try MQTTPacket(bytes: packet.encoded()) == packet, "\(packet.name)")
        }
        // PUBLISH QoS 0: fixed header 0x30, topic, payload, no packet identifier (section 3.3.2.2).
        #expect(MQTTPacket.publish(.init(message: MQTTMessage(topic: "a/b", text: "hi"))).encoded() == hex("30 07 0003 612F62 6869"))
        #expect(MQTTPacket.publish(.init(message: MQTTMessage(topic: "a", text: "x", qos: .atLeastOnce, retain: true), packetID: 2)).encoded()
            == hex("33 06 0001 61 0002 78"))
        #expect(MQTTPacket.pingreq.encoded() == hex("C000"))
        #expect(MQTTPacket.disconnect.encoded() == hex("E000"))
    }

    /// What the standard calls malformed is refused with the right kind of error.
    @Test func malformedPacketsAreRefused() {
        let cases: [(String, MQTTDecodingError.Code, String)] = [
            ("00 00", .reservedPacketType, "type 0"),
            ("F0 00", .reservedPacketType, "type 15"),
            ("60 02 0001", .invalidFlags, "PUBREL with flags 0 (must be 2)"),
            ("82 02 0001", .protocolViolation, "SUBSCRIBE with no filter"),
            ("80 08 0001 0003 612F62 01", .invalidFlags, "SUBSCRIBE with flags 0"),
            ("82 08 0001 0003 612F62 03", .protocolViolation, "SUBSCRIBE QoS 3"),
            ("82 08 0001 0003 612362 00", .invalidTopic, "filter a#b"),
            ("82 0A 0001 0005 612F232F62 00", .invalidTopic, "filter a/#/b"),
            ("82 07 0001 0002 612B 00", .invalidTopic, "filter a+"),
            ("36 05 0001 61 0001", .invalidFlags, "PUBLISH QoS 3"),
            ("38 03 0001 61", .invalidFlags, "PUBLISH QoS 0 with DUP"),
            ("30 05 0003 612F23", .invalidTopic, "PUBLISH to a/#"),
            ("30 02 0000", .invalidTopic, "PUBLISH to an empty topic"),
            ("32 05 0001 61 0000", .protocolViolation, "PUBLISH QoS 1 with packet identifier 0"),
            ("30 04 0002 C328", .invalidString, "invalid UTF-8"),
            ("30 04 0002 6100", .invalidString, "U+0000 in a topic"),
            ("40 02 0000", .protocolViolation, "PUBACK 0"),
            ("40 03 000100", .protocolViolation, "PUBACK with a byte too many"),
            ("40 01 00", .truncated, "PUBACK cut short"),
            ("20 02 02 00", .invalidFlags, "CONNACK reserved flags"),
            ("20 02 01 05", .protocolViolation, "CONNACK refusing with Session Present"),
            ("10 0C 0004 4D515454 05 02 003C 0000", .protocolViolation, "CONNECT level 5"),
            ("10 0C 0004 4D515445 04 02 003C 0000", .protocolViolation, "CONNECT protocol name MQTE"),
            ("10 0C 0004 4D515454 04 03 003C 0000", .invalidFlags, "CONNECT reserved flag"),
            ("10 0C 0004 4D515454 04 42 003C 0000", .invalidFlags, "CONNECT password without user name"),
            ("10 0C 0004 4D515454 04 1A 003C 0000", .invalidFlags, "CONNECT Will QoS 3"),
            ("10 0C 0004 4D515454 04 22 003C 0000", .invalidFlags, "CONNECT Will Retain without Will"),
            ("C0 01 00", .protocolViolation, "PINGREQ with a body"),
            ("C1 00", .invalidFlags, "PINGREQ with flags"),
            ("30 05 0009 61 62", .truncated, "a topic longer than the packet"),
        ]
        for (bytes, code, label) in cases {
            do {
                let packet = try MQTTPacket(bytes: hex(bytes))
                Issue.record("\(label): decoded as \(packet.name)")
            } catch {
                #expect(error.code == code, "\(label): \(error.reason)")
            }
        }
    }

    /// The stream decoder: packets split anywhere, several in one read, a size limit that is an error, not a wait.
    @Test func frameDecoderCutsAStreamIntoPackets() throws {
        let packets: [MQTTPacket] = [.connack(sessionPresent: false, returnCode: .accepted),
                                     .publish(.init(message: MQTTMessage(topic: "a/b", payload: Array(repeating: 1, count: 300), qos: .atLeastOnce), packetID: 9)),
                                     .pingresp, .suback(packetID: 2, granted: [.atLeastOnce])]
        let stream = packets.flatMap { $0.encoded() }
        for chunk in [1, 2, 3, 7, 64, stream.count] {
            var decoder = MQTTFrameDecoder()
            var out: [MQTTPacket] = []
            var index = 0
            while index < stream.count {
                out += try decoder.push(stream[index..<min(stream.count, index + chunk)])
                index += chunk
            }
            #expect(out == packets, "chunks of \(chunk)")
            #expect(decoder.pendingByteCount == 0)
        }
        var small = MQTTFrameDecoder(maximumPacketSize: 100)
        #expect(throws: MQTTDecodingError.self) { try small.push(hex("30 E807")) }
    }

    /// Noise and mutations of valid packets: an error or a packet, never a trap (a deterministic generator, so a
    /// failure repeats).
    @Test func noiseAndMutationsNeverTrap() {
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return seed >> 33
        }
        let valid: [[UInt8]] = [
            MQTTPacket.connect(.init(clientID: "c", will: MQTTMessage(topic: "w", text: "x"), userName: "u", password: [1])).encoded(),
            MQTTPacket.subscribe(packetID: 3, filters: [("a/+/#", .atLeastOnce)]).encoded(),
            MQTTPacket.publish(.init(message: MQTTMessage(topic: "t/u", text: "payload", qos: .atLeastOnce), packetID: 4)).encoded(),
            MQTTPacket.suback(packetID: 3, granted: [.atLeastOnce, nil]).encoded(),
        ]
        var decoded = 0
        for round in 0..<20_000 {
            var bytes: [UInt8]
            if round % 2 == 0 {
                bytes = (0..<Int(next() % 40)).map { _ in UInt8(truncatingIfNeeded: next()) }
            } else {
                bytes = valid[Int(next() % UInt64(valid.count))]
                for _ in 0...Int(next() % 3) where !bytes.isEmpty {
                    bytes[Int(next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: next())
                }
            }
            if (try? MQTTPacket(bytes: bytes)) != nil { decoded += 1 }
            var stream = MQTTFrameDecoder(maximumPacketSize: 1024)
            _ = try? stream.push(bytes)
        }
        #expect(decoded > 0, "some mutations stay valid packets")
    }

    @Test func topicMatching() throws {
        #expect(MQTTTopic.matches("a/b/c", filter: "a/+/c"))
        #expect(MQTTTopic.matches("a/b/c", filter: "a/#"))
        #expect(MQTTTopic.matches("a", filter: "a/#"), "# also matches the parent level (section 4.7.1.2)")
        #expect(!MQTTTopic.matches("a/b", filter: "a/+/c"))
        #expect(!MQTTTopic.matches("a/b/c", filter: "a/+"))
        #expect(!MQTTTopic.matches("$SYS/x", filter: "#"))
        #expect(MQTTTopic.matches("$SYS/x", filter: "$SYS/#"))
        #expect(MQTTTopic.matches("/x", filter: "+/x"))
    }
}
