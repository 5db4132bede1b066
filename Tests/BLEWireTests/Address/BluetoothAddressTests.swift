import BLETestSupport
import BLEWire
import Testing

@Suite struct BluetoothAddressTests {
    @Test func textAndWireForms() throws {
        let address = try #require(BluetoothAddress("d1:D2:d3:D4:d5:D6"))
        #expect(address.description == "D1:D2:D3:D4:D5:D6")
        // Wire form is little-endian.
        expectVector(address, "d6d5d4d3d2d1")
        expectDripFeed(BluetoothAddress.self, "d6d5d4d3d2d1")
        #expect(BluetoothAddress(0xD1D2_D3D4_D5D6) == address)
        #expect(address.uint64 == 0xD1D2_D3D4_D5D6)
        #expect(BluetoothAddress("D1-D2-D3-D4-D5-D6") == address)
        #expect(BluetoothAddress(bigEndian: [0xD1, 0xD2, 0xD3, 0xD4, 0xD5, 0xD6]) == address)
    }

    @Test func rejectsMalformedText() {
        for text in ["", "D1:D2:D3:D4:D5", "D1:D2:D3:D4:D5:D6:D7", "D1:D2:D3:D4:D5:G6", "D1:D2:D3:D4:D5:D", "D1D2D3D4D5D6", "+1:D2:D3:D4:D5:D6", "D1:D2:D3:D4:D5:-6"] {
            #expect(BluetoothAddress(text) == nil, "\(text)")
        }
        #expect(BluetoothAddress(bigEndian: [1, 2, 3]) == nil)
    }

    @Test func kinds() throws {
        func kind(_ text: String, _ type: LEAddressType = .random) -> LEAddress.Kind? {
            BluetoothAddress(text).map { LEAddress($0, type: type).kind }
        }
        #expect(kind("00:BB:00:00:00:01", .public) == .public)
        #expect(kind("D1:D2:D3:D4:D5:D6") == .randomStatic)        // 0b11
        #expect(kind("4A:12:34:56:78:9A") == .randomResolvable)    // 0b01
        #expect(kind("12:34:56:78:9A:BC") == .randomNonResolvable) // 0b00
        #expect(kind("8A:12:34:56:78:9A") == .invalid)             // 0b10 reserved
        #expect(kind("FF:FF:FF:FF:FF:FF") == .invalid)             // static, all ones
        #expect(kind("C0:00:00:00:00:00") == .invalid)             // static, all zeros
        #expect(kind("40:00:00:12:34:56") == .invalid)             // resolvable with prand all zeros
        let forced = try #require(LEAddress.randomStatic([0x01, 2, 3, 4, 5, 6]))
        #expect(forced.address.description == "C1:02:03:04:05:06")
        #expect(forced.kind == .randomStatic)
        #expect(forced.description == "C1:02:03:04:05:06 (random static)")
    }

    @Test func addressTypeCodes() {
        #expect(LEAddressType.public.rawValue == 0 && LEAddressType.random.rawValue == 1)
        #expect(LEAddressType.randomIdentity.isRandom && !LEAddressType.publicIdentity.isRandom)
        #expect(LEAddressType(rawValue: 9).description == "type 0x09")
    }
}
