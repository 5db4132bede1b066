import BLEWire

// ATT PDU decoding. Invariant: decode → encode → decode gives the same PDU, and the re-encoding is stable.
enum ATTPDUFuzz {
    static func run(_ bytes: [UInt8]) {
        guard let pdu = try? ATTPDU(bytes: bytes) else { return }
        let encoded = pdu.encoded
        guard let again = try? ATTPDU(bytes: encoded) else {
            invariant(false, "the encoding of \(pdu) does not decode")
            return
        }
        invariant(again == pdu, "\(pdu) became \(again)")
        invariant(again.encoded == encoded, "the encoding of \(pdu) is not stable")
    }

    static func seeds() -> [[UInt8]] { attSeeds }

    /// Requests, responses, notifications and commands of every kind (Core 5.4, Vol 3, Part F, 3.4).
    static let attSeeds: [[UInt8]] = [
        "01 0A 03 00 0A",                         // Error Response: Read Request, handle 3, Attribute Not Found
        "02 F7 00", "03 17 00",                   // Exchange MTU
        "04 01 00 FF FF", "05 01 01 00 00 28 02 00 03 28",       // Find Information (16-bit)
        "05 02 10 00 F0 DE BC 9A 78 56 34 12 78 56 34 12 78 56 34 12", // Find Information (128-bit)
        "06 01 00 FF FF 00 28 0F 18", "07 01 00 05 00",           // Find By Type Value
        "08 01 00 FF FF 03 28", "09 07 02 00 02 03 00 00 2A",     // Read By Type
        "08 01 00 FF FF F0 DE BC 9A 78 56 34 12 78 56 34 12 78 56 34 12",
        "0A 03 00", "0B 6C 61 62",                                // Read
        "0C 03 00 16 00", "0D 01 02 03",                          // Read Blob
        "0E 03 00 05 00", "0F 01 02",                             // Read Multiple
        "10 01 00 FF FF 00 28", "11 06 01 00 05 00 0F 18",        // Read By Group Type
        "12 0F 00 01 00", "13",                                   // Write
        "52 20 00 01 02",                                         // Write Command
        "D2 20 00 01 02 00 01 02 03 04 05 06 07 08 09 0A 0B",     // Signed Write Command
        "16 20 00 00 00 01 02 03", "17 20 00 00 00 01 02 03",     // Prepare Write
        "18 01", "18 00", "19",                                   // Execute Write
        "1B 20 00 01", "1D 20 00 01", "1E",                       // Notification, Indication, Confirmation
        "20 03 00 05 00", "21 02 00 01 02 01 00 03",             // Read Multiple Variable Length
        "23 03 00 01 00 AA 05 00 01 00 BB",                       // Multiple Handle Value Notification
    ].map(hex)
}
