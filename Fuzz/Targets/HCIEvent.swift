import BLEWire

// The HCI event decoder fed an event packet's body (code, length, parameters). Invariants: a decoded packet
// re-encodes to the input; a decoded event re-encodes to a packet that decodes to the same event.
enum HCIEventFuzz {
    static func run(_ bytes: [UInt8]) {
        guard let packet = try? HCIEventPacket(bytes: bytes) else { return }
        invariant(packet.encoded == bytes, "an event packet does not re-encode to its bytes")
        guard let event = try? HCIEvent(packet: packet) else { return }
        invariant((try? HCIEvent(packet: event.packet)) == event, "an event does not survive re-encoding: \(event)")
        if case .le(let meta) = event {
            invariant((try? HCILEMetaEvent(parameters: meta.packet.parameters)) == meta, "an LE event changed")
        }
    }

    /// An event packet's body: code, parameter length, parameters.
    static func event(_ code: UInt8, _ parameters: String) -> [UInt8] {
        let p = hex(parameters)
        return [code, UInt8(p.count)] + p
    }

    static func seeds() -> [[UInt8]] {
        [
            event(0x0E, "01 03 0C 00"),                                          // Command Complete: Reset
            event(0x0E, "01 02 20 00 FB 00 0F"),                                 // Command Complete: LE Read Buffer Size
            event(0x0F, "00 01 0D 20"),                                          // Command Status: LE Create Connection
            event(0x05, "00 40 00 13"),                                          // Disconnection Complete
            event(0x08, "00 40 00 01"),                                          // Encryption Change
            event(0x30, "00 40 00"),                                             // Encryption Key Refresh Complete
            event(0x13, "02 40 00 01 00 41 00 03 00"),                           // Number Of Completed Packets, 2 handles
            event(0x10, "2A"),                                                   // Hardware Error
            event(0x1A, "01"),                                                   // Data Buffer Overflow
            event(0x3E, "01 00 40 00 00 00 A6 A5 A4 A3 A2 A1 18 00 00 00 48 00 00"), // LE Connection Complete
            event(0x3E, "0A 00 40 00 01 01 A6 A5 A4 A3 A2 A1 00 00 00 00 00 00 00 00 00 00 00 00 18 00 00 00 48 00 00"),
            event(0x3E, "02 01 00 00 A6 A5 A4 A3 A2 A1 0A 02 01 06 06 09 6C 61 62 2D 31 C4"), // LE Advertising Report
            event(0x3E, "0D 01 13 00 00 A6 A5 A4 A3 A2 A1 01 00 FF 7F C4 00 00 00 00 00 00 00 00 00 00 03 02 01 06"),
            event(0x3E, "03 00 40 00 18 00 00 00 48 00"),                        // LE Connection Update Complete
            event(0x3E, "04 00 40 00 FF 00 00 00 00 00 00 00"),                  // LE Read Remote Features Complete
            event(0x3E, "05 40 00 01 02 03 04 05 06 07 08 34 12"),               // LE Long Term Key Request
            event(0x3E, "07 40 00 FB 00 48 08 FB 00 48 08"),                     // LE Data Length Change
            event(0x3E, "7F 01 02"),                                             // unknown LE subevent
            event(0xFF, "01 02 03"),                                             // vendor event
        ]
    }
}
