import BLEWire

// SMP PDU decoding. Invariant: decode → encode → decode gives the same PDU, and the re-encoding is stable.
enum SMPPDUFuzz {
    static func run(_ bytes: [UInt8]) {
        guard let pdu = try? SMPPDU(bytes: bytes) else { return }
        let encoded = pdu.encoded
        guard let again = try? SMPPDU(bytes: encoded) else {
            invariant(false, "the encoding of \(pdu) does not decode")
            return
        }
        invariant(again == pdu, "\(pdu) became \(again)")
        invariant(again.encoded == encoded, "the encoding of \(pdu) is not stable")
    }

    static let key16 = "00 11 22 33 44 55 66 77 88 99 AA BB CC DD EE FF"

    /// One PDU of each code (Core 5.4, Vol 3, Part H, 3.5 and 3.6).
    static func seeds() -> [[UInt8]] {
        [
            "01 03 00 0D 10 07 07", "02 04 00 0D 10 03 03",       // Pairing Request / Response
            "03 " + key16, "04 " + key16,                         // Pairing Confirm / Random
            "05 04", "05 FF",                                     // Pairing Failed
            "06 " + key16, "07 34 12 01 02 03 04 05 06 07 08",    // Encryption Information, Central Identification
            "08 " + key16, "09 01 A6 A5 A4 A3 A2 C1",             // Identity Information, Identity Address
            "0A " + key16, "0B 0D",                               // Signing Information, Security Request
            "0C " + String(repeating: key16 + " ", count: 4),     // Pairing Public Key
            "0D " + key16, "0E 02",                               // DHKey Check, Keypress Notification
            "0F 00",                                              // unknown code
        ].map(hex)
    }
}
