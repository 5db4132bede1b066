import BLEWire
import Testing

@Suite struct BluetoothUUIDTests {
    @Test func shortFormsEqualTheirBaseForms() throws {
        let battery = BluetoothUUID(0x180F)
        let full = try #require(BluetoothUUID("0000180F-0000-1000-8000-00805F9B34FB"))
        #expect(battery == full)
        #expect(battery.hashValue == full.hashValue)
        #expect(full.uuidString == "180F")
        #expect(full.fullString == "0000180F-0000-1000-8000-00805F9B34FB")
        #expect(BluetoothUUID(uint32: 0x0000_180F) == battery)
        #expect(BluetoothUUID(uint32: 0x1234_5678).uuidString == "12345678")
        let custom = try #require(BluetoothUUID("12345678-1234-5678-1234-56789abcdef0"))
        #expect(custom.uint16 == nil && custom.uint32 == nil && !custom.isBased)
        #expect(custom.uuidString == "12345678-1234-5678-1234-56789ABCDEF0")
    }

    @Test func parsingLikeCBUUID() {
        #expect(BluetoothUUID("180f") == BluetoothUUID(0x180F))
        #expect(BluetoothUUID("0x180F") == BluetoothUUID(0x180F))
        #expect(BluetoothUUID("0000180F") == BluetoothUUID(0x180F))
        #expect(BluetoothUUID("0000180F00001000800000805F9B34FB") == BluetoothUUID(0x180F))
        for junk in ["", "18F", "180FF", "xyzw", "+18F", "-18F", "+000180F", "0x+18F", "18-F", "0000180F-0000-1000-8000_00805F9B34FB", "0000180F-0000-1000-8000-00805F9B34F"] {
            #expect(BluetoothUUID(junk) == nil, "\(junk)")
        }
    }

    @Test func wireForms() throws {
        // 16-bit: 0f 18; 128-bit: little-endian
        #expect(BluetoothUUID(0x180F).attWireBytes == [0x0F, 0x18])
        #expect(try BluetoothUUID(littleEndian: [0x0F, 0x18]) == BluetoothUUID(0x180F))
        #expect(try BluetoothUUID(littleEndian: [0x78, 0x56, 0x34, 0x12]) == BluetoothUUID(uint32: 0x1234_5678))
        let custom = try #require(BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF0"))
        #expect(custom.attWireBytes.hexString() == "f0debc9a785634127856341278563412")
        #expect(try BluetoothUUID(littleEndian: custom.attWireBytes) == custom)
        // A 32-bit UUID travels as 128 bits in ATT.
        #expect(BluetoothUUID(uint32: 0x1234_5678).attWireBytes.count == 16)
        #expect(throws: WireError.self) { try BluetoothUUID(littleEndian: [1, 2, 3]) }
        let literal: BluetoothUUID = 0x2A37
        #expect(literal == BluetoothUUID(0x2A37))
    }
}
