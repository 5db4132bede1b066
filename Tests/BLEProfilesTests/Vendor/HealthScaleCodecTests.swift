import BLEProfiles
import Testing

@Suite struct HealthScaleCodecTests {
    @Test func theVendorUUIDsParse() {
        #expect(HealthScale.service.bigEndianBytes == [0x7D, 0x2E, 0x00, 0x01, 0x5C, 0x3A, 0x4B, 0x8E, 0x9F, 0x41, 0x53, 0x57, 0x42, 0x4C, 0x45, 0x53])
        #expect(HealthScale.stream.bigEndianBytes.prefix(4) == [0x7D, 0x2E, 0x00, 0x02])
    }

    @Test func readingsBothWaysAndInTheirFrame() throws {
        let reading = HealthScaleReading(sequence: 0x0102, weightGrams: 72_400, impedanceOhms: 500)
        let bytes: [UInt8] = [0x02, 0x01, 0xD0, 0x1A, 0x01, 0x00, 0xF4, 0x01]
        #expect(reading.encoded == bytes)
        #expect(try HealthScaleReading(bytes: bytes) == reading)
        for length in 0..<8 { #expect(throws: WireError.self) { try HealthScaleReading(bytes: Array(bytes.prefix(length))) } }
        let frame = try reading.frame.encoded()
        #expect(frame.prefix(5) == [0xA5, 0x01, 0x10, 0x00, 0x08])
        #expect(try HealthScaleReading(frame: try HealthFrame(frame: frame)) == reading)
        #expect(throws: WireError.self) { try HealthScaleReading(frame: HealthFrame(deviceType: 2, command: 0x10, payload: bytes)) }
        #expect(throws: WireError.self) { try HealthScaleReading(frame: HealthFrame(deviceType: 1, command: 0x11, payload: bytes)) }
        #expect(throws: WireError.self) { try HealthScaleReading(frame: HealthFrame(deviceType: 1, command: 0x10, payload: bytes + [0])) }
    }
}
