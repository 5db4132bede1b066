import BLEWire
import Foundation
import Testing

@Suite struct ByteReaderTests {
    @Test func readsLittleEndianAndThrowsWhenShort() throws {
        var reader = ByteReader([0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07])
        #expect(try reader.readUInt8() == 0x01)
        #expect(try reader.readUInt16() == 0x0302)
        #expect(try reader.readUInt24() == 0x060504)
        #expect(reader.remainingCount == 1)
        #expect(throws: WireError.self) { try reader.readUInt16() }
        #expect(try reader.readUInt8() == 0x07)
        #expect(reader.isAtEnd)
    }

    @Test func subReaderIsBounded() throws {
        var reader = ByteReader([0xAA, 0xBB, 0xCC])
        var sub = try reader.readSubReader(2)
        #expect(try sub.readUInt16() == 0xBBAA)
        #expect(throws: WireError.self) { try sub.readUInt8() }
        #expect(try reader.readUInt8() == 0xCC)
    }

    @Test func expectEndRejectsTrailingBytes() throws {
        var reader = ByteReader([0x01, 0x02])
        _ = try reader.readUInt8()
        do {
            try reader.expectEnd()
            Issue.record("expected trailing-bytes error")
        } catch {
            #expect(error.code == .trailingBytes)
        }
    }

    @Test func negativeCountThrows() {
        var reader = ByteReader([0x01])
        #expect(throws: WireError.self) { try reader.readBytes(-1) }
    }

    @Test func writerRoundTrip() throws {
        var writer = ByteWriter()
        writer.write(UInt8(0x01))
        writer.write(UInt16(0x0302))
        writer.writeUInt24(0x060504)
        writer.write(UInt32(0x0A090807))
        writer.writeBE(UInt16(0x0B0C))
        #expect(writer.bytes == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0x0B, 0x0C])
    }

    @Test func hexParsing() {
        #expect([UInt8](hex: "0a 1B:ff") == [0x0A, 0x1B, 0xFF])
        #expect([UInt8](hex: "0x0102") == [1, 2])
        #expect([UInt8](hex: "abc") == nil)
        #expect([UInt8](hex: "zz") == nil)
        #expect([0x0A, 0xFF].hexString(separator: " ") == "0a ff")
        // Contiguous or not, separated or not: the same text.
        let all = (0...255).map { UInt8($0) }
        let expected = all.map { String(format: "%02x", $0) }
        #expect(all.hexString() == expected.joined())
        #expect(all[16...].hexString(separator: ":") == expected[16...].joined(separator: ":"))
        #expect(all.reversed().hexString(separator: "--") == expected.reversed().joined(separator: "--"))
        #expect(all.lazy.filter { $0 % 3 == 0 }.hexString() == expected.enumerated().filter { $0.offset % 3 == 0 }.map(\.element).joined())
        #expect([UInt8]().hexString() == "" && [UInt8]().hexString(separator: " ") == "")
    }
}
