import BLEBeacons
import BLETestSupport
import BLEWire
import Testing

@Suite struct AltBeaconTests {
    // Manufacturer data: company 0x0118 (18 01), beacon code BE AC, beacon ID 2F234454-CF6D-4A0F-ADF2-F4911BA9FFA6 0001 0002,
    // reference RSSI −59 (0xC5), reserved 0x00.
    let hex = "1801 beac 2f234454cf6d4a0fadf2f4911ba9ffa6 0001 0002 c5 00"
    let id1 = BluetoothUUID("2F234454-CF6D-4A0F-ADF2-F4911BA9FFA6") ?? BluetoothUUID(0)

    @Test func vector() {
        expectVector(AltBeacon(companyID: CompanyIdentifier(rawValue: 0x0118), id1: id1, id2: 1, id3: 2, referenceRSSI: -59), hex)
    }

    @Test func dripFeed() { expectDripFeed(AltBeacon.self, hex) }

    @Test func malformed() {
        #expect(decodeErrorCode(AltBeacon.self, "1801 beab 2f234454cf6d4a0fadf2f4911ba9ffa6 0001 0002 c5 00") == .unknownType)
        #expect(decodeErrorCode(AltBeacon.self, hex + "ff") == .trailingBytes)
    }

    @Test func inAdvertisingData() throws {
        // Flags; manufacturer specific data with AD length 0x1B, as the AltBeacon specification fixes it.
        let full = "020106 1bff" + hex
        let frame = BeaconFrame.altBeacon(AltBeacon(companyID: CompanyIdentifier(rawValue: 0x0118), id1: id1, id2: 1, id3: 2, referenceRSSI: -59))
        #expect(frame.advertisingData.encoded.hexString() == ([UInt8](hex: full) ?? []).hexString())
        #expect(try BeaconFrame(advertisingData: AdvertisingData(bytes: [UInt8](hex: full) ?? [])) == frame)
        #expect(frame.identifier == .altBeacon(id1: id1, id2: 1, id3: 2))
    }
}
