import BLEBeacons
import BLETestSupport
import BLEWire
import Testing

@Suite struct IBeaconTests {
    // Manufacturer data: Apple (4C 00), type 0x02, length 0x15, proximity UUID E2C56DB5-DFFB-48D2-B060-D0F5A71096E0,
    // major 1, minor 2 (big-endian), measured power −59 dBm (0xC5).
    let hex = "4c00 0215 e2c56db5dffb48d2b060d0f5a71096e0 0001 0002 c5"
    let uuid = BluetoothUUID("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0") ?? BluetoothUUID(0)

    @Test func vector() {
        expectVector(IBeacon(proximityUUID: uuid, major: 1, minor: 2, measuredPower: -59), hex)
    }

    @Test func bigEndianMajorMinorAndPositivePower() {
        // major 0x1234, minor 0xABCD, measured power +4 dBm.
        expectVector(IBeacon(proximityUUID: uuid, major: 0x1234, minor: 0xABCD, measuredPower: 4),
                     "4c00 0215 e2c56db5dffb48d2b060d0f5a71096e0 1234 abcd 04")
    }

    @Test func dripFeed() { expectDripFeed(IBeacon.self, hex) }

    @Test func malformed() {
        // Length byte 0x14 instead of 0x15.
        #expect(decodeErrorCode(IBeacon.self, "4c00 0214 e2c56db5dffb48d2b060d0f5a71096e0 0001 0002 c5") == .lengthMismatch)
        // One byte too many.
        #expect(decodeErrorCode(IBeacon.self, hex + "00") == .trailingBytes)
        // Another company, another Apple type.
        #expect(decodeErrorCode(IBeacon.self, "4d00 0215 e2c56db5dffb48d2b060d0f5a71096e0 0001 0002 c5") == .unknownType)
        #expect(decodeErrorCode(IBeacon.self, "4c00 1005 0118a3b2c1") == .unknownType)
    }

    @Test func advertisingDataIsTheUsual30Bytes() throws {
        // Flags 0x06; manufacturer specific data of 26 bytes (AD length 0x1A).
        let full = "020106 1aff" + hex
        let frame = BeaconFrame.iBeacon(IBeacon(proximityUUID: uuid, major: 1, minor: 2, measuredPower: -59))
        #expect(frame.advertisingData.encoded.hexString() == ([UInt8](hex: full) ?? []).hexString())
        let decoded = try BeaconFrame(advertisingData: AdvertisingData(bytes: [UInt8](hex: full) ?? []))
        #expect(decoded == frame)
        #expect(frame.identifier == .iBeacon(uuid: uuid, major: 1, minor: 2))
        #expect(frame.measuredPowerAt1m == -59)
        #expect(frame.identifier?.description == "ibeacon:E2C56DB5-DFFB-48D2-B060-D0F5A71096E0:1:2")
    }

    @Test func otherAppleDataIsNotABeacon() throws {
        // Apple manufacturer data of type 0x10 (not an iBeacon) and a name.
        let ad = try AdvertisingData(bytes: [UInt8](hex: "020106 07ff4c0010020b00 0409414243") ?? [])
        #expect(try BeaconFrame(advertisingData: ad) == nil)
        #expect(try BeaconFrame(advertisingData: AdvertisingData()) == nil)
    }

    @Test func malformedIBeaconInAdvertisingDataThrows() throws {
        // A truncated iBeacon (the measured power is missing): AD length 0x19.
        let ad = try AdvertisingData(bytes: [UInt8](hex: "020106 19ff4c000215e2c56db5dffb48d2b060d0f5a71096e000010002") ?? [])
        #expect(throws: WireError.self) { try BeaconFrame(advertisingData: ad) }
    }
}
