import BLETestSupport
import BLEWire
import Testing

/// The specification prints multi-byte values most significant byte first; the wire is least significant first.
func msbFirst(_ hex: String) -> String { ([UInt8](hex: hex) ?? []).reversed().hexString() }

@Suite struct SMPTests {
    @Test func pairingRequestAndResponseFromTheSpecSampleData() throws {
        // Core 5.4, Vol 3, Part H, Appendix D (c1 sample): preq = 0x07071000000101, pres = 0x05000800000302 (MSB first).
        let request = SMPPDU.pairingRequest(.init(ioCapability: .displayYesNo, authRequirements: [],
                                                  maximumEncryptionKeySize: 16,
                                                  initiatorKeyDistribution: [.encryptionKey, .identityKey, .signingKey],
                                                  responderKeyDistribution: [.encryptionKey, .identityKey, .signingKey]))
        expectVector(request, msbFirst("07071000000101"))
        expectDripFeed(SMPPDU.self, msbFirst("07071000000101"))
        let response = SMPPDU.pairingResponse(.init(ioCapability: .noInputNoOutput, authRequirements: [],
                                                    maximumEncryptionKeySize: 8, initiatorKeyDistribution: [],
                                                    responderKeyDistribution: [.encryptionKey, .signingKey]))
        expectVector(response, msbFirst("05000800000302"))
    }

    @Test func everyPDU() {
        let key = Array(UInt8(0)..<16)
        let vectors: [(SMPPDU, String)] = [
            (.pairingConfirm(key), "03" + key.hexString()),
            (.pairingRandom(key), "04" + key.hexString()),
            // Pairing Failed: Pairing Not Supported
            (.pairingFailed(.pairingNotSupported), "05 05"),
            (.encryptionInformation(longTermKey: key), "06" + key.hexString()),
            // Central Identification: EDIV 0x1234, Rand 0x1122334455667788
            (.centralIdentification(ediv: 0x1234, rand: 0x1122_3344_5566_7788), "07 3412 8877665544332211"),
            (.identityInformation(identityResolvingKey: key), "08" + key.hexString()),
            // Identity Address Information: random D1:D2:D3:D4:D5:D6
            (.identityAddressInformation(LEAddress(BluetoothAddress(0xD1D2_D3D4_D5D6), type: .random)), "09 01 d6d5d4d3d2d1"),
            (.signingInformation(signatureKey: key), "0a" + key.hexString()),
            // Security Request: bonding + MITM + SC
            (.securityRequest([.bonding, .mitm, .secureConnections]), "0b 0d"),
            (.pairingPublicKey(x: Array(repeating: 0x11, count: 32), y: Array(repeating: 0x22, count: 32)),
             "0c" + String(repeating: "11", count: 32) + String(repeating: "22", count: 32)),
            (.pairingDHKeyCheck(key), "0d" + key.hexString()),
            (.keypressNotification(4), "0e 04"),
        ]
        for (value, hex) in vectors {
            expectVector(value, hex)
            expectDripFeed(SMPPDU.self, hex)
        }
    }

    @Test func badInput() throws {
        // Maximum key size 6 and 17.
        #expect(decodeErrorCode(SMPPDU.self, "01 03 00 01 06 00 00") == .invalidValue)
        #expect(decodeErrorCode(SMPPDU.self, "01 03 00 01 11 00 00") == .invalidValue)
        // Trailing bytes.
        #expect(decodeErrorCode(SMPPDU.self, "05 05 00") == .trailingBytes)
        #expect(decodeErrorCode(SMPPDU.self, "03" + String(repeating: "00", count: 17)) == .trailingBytes)
        // Identity address type 2.
        #expect(decodeErrorCode(SMPPDU.self, "09 02 d6d5d4d3d2d1") == .invalidValue)
        // Unknown code.
        #expect(try SMPPDU(bytes: [0x1F, 0x01]) == .unknown(code: SMPCode(rawValue: 0x1F), data: [0x01]))
        #expect(SMPPairingFailedReason.keyRejected.description == "Key Rejected (0x0f)")
    }
}
