import BLETestSupport
import BLEWire
import Testing

@Suite struct AdvertisingDataTests {
    // Flags 0x06; complete 16-bit UUIDs 0x180D, 0x180F; complete local name "HRM"
    let heartRateHex = "020106 05030d180f18 040948524d"

    @Test func heartRateSensorVector() throws {
        let value = AdvertisingData(flags: .leOnlyGeneralDiscoverable, localName: "HRM", serviceUUIDs: [0x180D, 0x180F])
        expectVector(value, heartRateHex)
        let decoded = try AdvertisingData(bytes: [UInt8](hex: heartRateHex) ?? [])
        #expect(try decoded.flags() == [.leGeneralDiscoverable, .brEDRNotSupported])
        #expect(try decoded.serviceUUIDs() == [BluetoothUUID(0x180D), BluetoothUUID(0x180F)])
        #expect(decoded.localName == "HRM" && decoded.isLocalNameComplete)
    }

    @Test func iBeaconVector() throws {
        // Flags 0x06; manufacturer data: Apple (0x004C), type 0x02 length 0x15, proximity UUID
        // E2C56DB5-DFFB-48D2-B060-D0F5A71096E0, major 1, minor 2, measured power −59 (0xC5)
        let hex = "020106 1aff4c000215 e2c56db5dffb48d2b060d0f5a71096e0 0001 0002 c5"
        let ad = try AdvertisingData(bytes: [UInt8](hex: hex) ?? [])
        let m = try #require(try ad.manufacturerData().first)
        #expect(m.companyID == .apple)
        #expect(m.data.prefix(2) == [0x02, 0x15])
        #expect(m.data.count == 23)
        #expect(m.data.last == 0xC5)
        let built = AdvertisingData(flags: .leOnlyGeneralDiscoverable, manufacturerData: m)
        #expect(built == ad)
        #expect(try built.encodedLegacy().count == 30)
    }

    @Test func allCommonTypes() throws {
        // TX power −8; appearance 0x0340 (generic heart rate sensor); advertising interval 0x00A0;
        // LE role 0x00; service data 0x180F → 0x57; 128-bit service UUID; 32-bit UUID 0x0000FEAA? no: 0x12345678
        let uuid128 = try #require(BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF0"))
        let ad = AdvertisingData(structures: [
            ADStructure(type: .txPowerLevel, data: [0xF8]),
            ADStructure(type: .appearance, data: [0x40, 0x03]),
            ADStructure(type: .advertisingInterval, data: [0xA0, 0x00]),
            ADStructure(type: .leRole, data: [0x00]),
            ADStructure(type: .serviceData16BitUUID, data: [0x0F, 0x18, 0x57]),
            ADStructure(type: .incomplete128BitServiceUUIDs, data: uuid128.wireBytes128),
            ADStructure(type: .complete32BitServiceUUIDs, data: [0x78, 0x56, 0x34, 0x12]),
            ADStructure(type: .solicitation16BitUUIDs, data: [0x0A, 0x18]),
            ADStructure(type: .uri, data: [0x17] + Array("//example.com".utf8)),
            ADStructure(type: .shortenedLocalName, data: Array("Sen".utf8)),
        ])
        let decoded = try AdvertisingData(bytes: ad.encoded)
        #expect(decoded == ad)
        #expect(try decoded.txPowerLevel() == -8)
        #expect(try decoded.appearance() == 0x0340)
        #expect(try decoded.advertisingInterval() == 0x00A0)
        #expect(try decoded.leRole() == 0)
        #expect(try decoded.serviceData() == [BluetoothUUID(0x180F): [0x57]])
        #expect(try decoded.serviceUUIDs() == [uuid128, BluetoothUUID(uint32: 0x1234_5678)])
        #expect(try decoded.solicitedServiceUUIDs() == [BluetoothUUID(0x180A)])
        #expect(try decoded.uri() == "https://example.com")
        #expect(decoded.localName == "Sen" && !decoded.isLocalNameComplete)
        // The encoding of the 128-bit list is little-endian.
        #expect(ADStructure(type: .complete128BitServiceUUIDs, data: uuid128.wireBytes128).encoded.hexString()
                == "1107f0debc9a785634127856341278563412")
    }

    @Test func structureDripFeedAndBadLengths() throws {
        expectVector(ADStructure(type: .completeLocalName, data: Array("HRM".utf8)), "0409 48524d")
        expectDripFeed(ADStructure.self, "040948524d")
        // Length running past the end.
        #expect(decodeErrorCode(AdvertisingData.self, "0509484d") == .truncated)
        #expect(decodeErrorCode(AdvertisingData.self, "02") == .truncated)
        // A zero length ends the significant part: the padding after it is ignored.
        #expect(try AdvertisingData(bytes: [0x02, 0x01, 0x06, 0x00, 0xFF, 0xFF]).structures == [ADStructure(type: .flags, data: [6])])
        #expect(try AdvertisingData(bytes: []).structures.isEmpty)
    }

    @Test func malformedTypedPayloadsThrow() throws {
        func ad(_ hex: String) throws -> AdvertisingData { try AdvertisingData(bytes: [UInt8](hex: hex) ?? []) }
        // 16-bit UUID list of odd length.
        #expect(throws: WireError.self) { try ad("04030d180f").serviceUUIDs() }
        // TX power of two bytes.
        #expect(throws: WireError.self) { try ad("030af800").txPowerLevel() }
        // Manufacturer data without a full company identifier.
        #expect(throws: WireError.self) { try ad("02ff4c").manufacturerData() }
        // Service data shorter than its UUID.
        #expect(throws: WireError.self) { try ad("02160f").serviceData() }
        // Flags with two bytes.
        #expect(throws: WireError.self) { try ad("03010600").flags() }
        // URI without scheme code.
        #expect(throws: WireError.self) { try ad("0124").uri() }
        // A structure with an unknown type is kept, not rejected.
        #expect(try ad("03ee0102").structures == [ADStructure(type: ADType(rawValue: 0xEE), data: [1, 2])])
    }

    @Test func legacyLimitAndNameShortening() throws {
        var ad = AdvertisingData(flags: .leOnlyGeneralDiscoverable,
                                 serviceUUIDs: [try #require(BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF0"))])
        #expect(ad.encoded.count == 21)
        ad.appendLocalName("A rather long device name")
        // 31 − 21 − 2 = 8 bytes of name fit: shortened.
        #expect(ad.localName == "A rather")
        #expect(!ad.isLocalNameComplete)
        #expect(try ad.encodedLegacy().count == 31)
        var short = AdvertisingData(flags: .leOnlyGeneralDiscoverable)
        short.appendLocalName("Tag")
        #expect(short.localName == "Tag" && short.isLocalNameComplete)
        // Multi-byte characters are never cut in half.
        var unicode = AdvertisingData(structures: [ADStructure(type: .manufacturerSpecificData, data: Array(repeating: 0, count: 23))])
        unicode.appendLocalName("ééé")   // 25 used, room for 4 bytes: "éé"
        #expect(unicode.localName == "éé")
        let tooBig = AdvertisingData(structures: [ADStructure(type: .manufacturerSpecificData, data: Array(repeating: 0, count: 30))])
        do {
            _ = try tooBig.encodedLegacy()
            Issue.record("32 bytes must not fit")
        } catch {
            #expect(error.code == .oversized)
        }
    }

    @Test func mergingWithTheScanResponse() throws {
        let adv = AdvertisingData(flags: .leOnlyGeneralDiscoverable, serviceUUIDs: [0x180D])
        let response = AdvertisingData(localName: "Bumble")
        let merged = adv.merged(withScanResponse: response)
        #expect(merged.localName == "Bumble")
        #expect(try merged.serviceUUIDs() == [BluetoothUUID(0x180D)])
    }

    /// Bumble's virtual controller answers scan requests with a copy of the advertising data: merging must not double
    /// every structure, and a UUID listed in both packets is one service.
    @Test func anEchoedScanResponseAddsNothing() throws {
        var adv = AdvertisingData(flags: .leOnlyGeneralDiscoverable, serviceUUIDs: [0x180D, 0x180F],
                                  manufacturerData: ManufacturerData(companyID: .testing, data: [1, 2]))
        adv.appendLocalName("Echo")
        let merged = adv.merged(withScanResponse: adv)
        #expect(merged == adv)
        #expect(merged.encoded == adv.encoded)
        #expect(try merged.manufacturerData().count == 1)

        let response = AdvertisingData(serviceUUIDs: [0x180F, 0x1816], manufacturerData: ManufacturerData(companyID: .testing, data: [3]))
        let both = adv.merged(withScanResponse: response)
        #expect(try both.serviceUUIDs() == [BluetoothUUID(0x180D), 0x180F, 0x1816])
        #expect(try both.manufacturerData().map(\.data) == [[1, 2], [3]])
    }
}
