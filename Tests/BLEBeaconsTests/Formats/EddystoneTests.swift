import BLEBeacons
import BLETestSupport
import BLEWire
import Testing

@Suite struct EddystoneTests {
    // UID: frame type 0x00, TX power at 0 m −18 dBm (0xEE), namespace EDD1EBEAC04E5DEFA017, instance 0123456789AB,
    // reserved 0000.
    let uidHex = "00 ee edd1ebeac04e5defa017 0123456789ab 0000"
    // TLM: frame type 0x20, version 0, battery 3000 mV (0BB8), temperature 24.5 °C (0x1880 in 8.8), 100 advertising
    // PDUs (00000064), uptime 10000 × 0.1 s = 1000 s (00002710).
    let tlmHex = "20 00 0bb8 1880 00000064 00002710"
    // EID: frame type 0x30, TX power −18, ephemeral identifier 0102030405060708.
    let eidHex = "30 ee 0102030405060708"

    func uid() throws -> EddystoneUID {
        try EddystoneUID(txPowerAt0m: -18, namespace: [UInt8](hex: "edd1ebeac04e5defa017") ?? [], instance: [UInt8](hex: "0123456789ab") ?? [])
    }

    @Test func uidVector() throws {
        expectVector(try uid(), uidHex)
        expectVector(EddystoneFrame.uid(try uid()), uidHex)
        expectDripFeed(EddystoneUID.self, uidHex)
        #expect(decodeErrorCode(EddystoneUID.self, uidHex + "00") == .trailingBytes)
        #expect(throws: WireError.self) { try EddystoneUID(namespace: [1, 2, 3], instance: [0, 0, 0, 0, 0, 0]) }
    }

    @Test func tlmVector() throws {
        let tlm = EddystoneTLM(batteryMillivolts: 3000, temperature: 24.5, advertisingPDUCount: 100, uptimeDeciseconds: 10000)
        expectVector(tlm, tlmHex)
        expectVector(EddystoneFrame.tlm(tlm), tlmHex)
        #expect(tlm.temperature == 24.5)
        #expect(tlm.uptime == .seconds(1000))
        expectDripFeed(EddystoneTLM.self, tlmHex)
        #expect(decodeErrorCode(EddystoneTLM.self, tlmHex + "00") == .trailingBytes)
    }

    @Test func tlmNegativeAndUnsupportedTemperature() throws {
        // −0.5 °C is 0xFF80 in signed 8.8; 0x8000 means "not supported"; battery 0 means not measured.
        let cold = EddystoneTLM(batteryMillivolts: 0, temperature: -0.5, advertisingPDUCount: 0x01020304, uptimeDeciseconds: 0x0A0B0C0D)
        expectVector(cold, "20 00 0000 ff80 01020304 0a0b0c0d")
        let unknown = EddystoneTLM(batteryMillivolts: 2900, temperature: nil, advertisingPDUCount: 0, uptimeDeciseconds: 0)
        expectVector(unknown, "20 00 0b54 8000 00000000 00000000")
        #expect(unknown.temperature == nil)
    }

    @Test func encryptedTLMIsRecognised() throws {
        // Version 0x01: encrypted TLM, kept as bytes.
        expectVector(EddystoneFrame.encryptedTLM([UInt8](hex: "00112233445566778899aabb0102a1a2") ?? []),
                     "20 01 00112233445566778899aabb0102a1a2")
        #expect(decodeErrorCode(EddystoneTLM.self, "20 01 0bb8 1880 00000064 00002710") == .unknownType)
    }

    @Test func eidVector() throws {
        let eid = try EddystoneEID(txPowerAt0m: -18, ephemeralID: [1, 2, 3, 4, 5, 6, 7, 8])
        expectVector(eid, eidHex)
        expectVector(EddystoneFrame.eid(eid), eidHex)
        expectDripFeed(EddystoneEID.self, eidHex)
        #expect(BeaconFrame.eddystone(.eid(eid)).identifier == .eddystoneEID([1, 2, 3, 4, 5, 6, 7, 8]))
    }

    @Test func unknownFrameTypeIsKept() {
        expectVector(EddystoneFrame.unknown(frameType: EddystoneFrameType(rawValue: 0x40), payload: [0xAB]), "40 ab")
    }

    @Test func uidInAdvertisingData() throws {
        // Flags; complete 16-bit service UUIDs FEAA; service data FEAA + the UID frame (AD length 0x17 = 1 + 2 + 20).
        let full = "020106 0303aafe 1716aafe" + uidHex
        let frame = BeaconFrame.eddystone(.uid(try uid()))
        #expect(frame.advertisingData.encoded.hexString() == ([UInt8](hex: full) ?? []).hexString())
        #expect(try BeaconFrame(advertisingData: AdvertisingData(bytes: [UInt8](hex: full) ?? [])) == frame)
        #expect(frame.measuredPowerAt1m == -59)
        #expect(frame.identifier?.description == "eddystone-uid:edd1ebeac04e5defa017:0123456789ab")
    }

    @Test func tlmHasNoIdentity() throws {
        let frame = BeaconFrame.eddystone(.tlm(EddystoneTLM(batteryMillivolts: 1, temperatureFixedPoint: 0, advertisingPDUCount: 0, uptimeDeciseconds: 0)))
        #expect(frame.identifier == nil)
        #expect(frame.measuredPowerAt1m == nil)
    }
}

@Suite struct EddystoneURLTests {
    @Test func httpsExampleCom() throws {
        // Frame type 0x10, TX power −18, scheme 0x03 (https://), "example" then 0x00 (.com/).
        let hex = "10 ee 03 6578616d706c65 00"
        expectVector(try EddystoneURL(txPowerAt0m: -18, url: "https://example.com/"), hex)
        // In advertising data: service data of AD length 0x0E (1 + 2 + 11).
        let full = "020106 0303aafe 0e16aafe" + hex
        let frame = BeaconFrame.eddystone(.url(try EddystoneURL(txPowerAt0m: -18, url: "https://example.com/")))
        #expect(frame.advertisingData.encoded.hexString() == ([UInt8](hex: full) ?? []).hexString())
        #expect(try BeaconFrame(advertisingData: AdvertisingData(bytes: [UInt8](hex: full) ?? [])) == frame)
    }

    @Test func everySchemeAndExpansion() throws {
        // http://www. (0x00) "swift" .org (0x08); https://www. (0x01) "a" .info/ (0x04) "x"; http:// (0x02) "b" .gov (0x0D).
        expectVector(try EddystoneURL(txPowerAt0m: 0, url: "http://www.swift.org"), "10 00 00 7377696674 08")
        expectVector(try EddystoneURL(txPowerAt0m: 0, url: "https://www.a.info/x"), "10 00 01 61 04 78")
        expectVector(try EddystoneURL(txPowerAt0m: 0, url: "http://b.gov"), "10 00 02 62 0d")
        for (code, expansion) in EddystoneURLCoding.expansions.enumerated() {
            let url = "https://x" + expansion
            let (scheme, encoded) = try EddystoneURLCoding.encode(url)
            #expect(scheme == 0x03 && encoded == [0x78, UInt8(code)], "\(expansion)")
            #expect(try EddystoneURLCoding.decode(scheme: scheme, encoded) == url)
        }
    }

    @Test func malformedURLs() {
        // Reserved byte 0x0E, reserved byte 0x7F, unassigned scheme 0x04, nothing after the TX power.
        #expect(decodeErrorCode(EddystoneURL.self, "10 ee 03 61 0e") == .invalidValue)
        #expect(decodeErrorCode(EddystoneURL.self, "10 ee 03 61 7f") == .invalidValue)
        #expect(decodeErrorCode(EddystoneURL.self, "10 ee 04 61") == .invalidValue)
        #expect(decodeErrorCode(EddystoneURL.self, "10 ee") == .truncated)
        // 18 encoded bytes: one too many.
        #expect(decodeErrorCode(EddystoneURL.self, "10 ee 03" + String(repeating: "61", count: 18)) == .oversized)
        #expect(throws: WireError.self) { try EddystoneURL(url: "ftp://example.com") }
        #expect(throws: WireError.self) { try EddystoneURL(url: "https://a-very-long-domain-name.example/") }
        #expect(throws: WireError.self) { try EddystoneURL(url: "https://exa mple.com") }
    }

    @Test func dripFeedOfTheADStructure() throws {
        // A URL frame's length comes from its AD structure: every strict prefix of the structure fails to decode.
        let bytes = [UInt8](hex: "0e16aafe 10ee036578616d706c6500") ?? []
        #expect(try BeaconFrame(structure: ADStructure(bytes: bytes)) != nil)
        for length in 0..<bytes.count {
            #expect(throws: WireError.self, "prefix \(length)") { _ = try BeaconFrame(structure: ADStructure(bytes: bytes.prefix(length))) }
        }
    }

    @Test func longestURLFitsExactly31Bytes() throws {
        // 17 encoded bytes: the advertising data is exactly 31 bytes.
        let frame = BeaconFrame.eddystone(.url(try EddystoneURL(url: "https://abcdefghijklmnopq")))
        #expect(try frame.advertisingData.encodedLegacy().count == 31)
    }
}
