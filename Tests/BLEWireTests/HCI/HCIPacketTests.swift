import BLETestSupport
import BLEWire
import Testing

@Suite struct HCIPacketTests {
    @Test func commandPacketVector() {
        // Command: opcode 0x0C03 (Reset), no parameters
        expectVector(HCICommandPacket(opcode: .reset), "030c00")
        expectDripFeed(HCICommandPacket.self, "030c00")
        // LE Set Scan Enable (0x200C): enable, filter duplicates
        expectVector(HCICommandPacket(opcode: .leSetScanEnable, parameters: [1, 1]), "0c20020101")
        expectDripFeed(HCICommandPacket.self, "0c20020101")
    }

    @Test func eventPacketVector() {
        // Event 0x0E (Command Complete), 4 bytes: credits 1, opcode 0x0C03, status 0
        expectVector(HCIEventPacket(code: .commandComplete, parameters: [0x01, 0x03, 0x0C, 0x00]), "0e0401030c00")
        expectDripFeed(HCIEventPacket.self, "0e0401030c00")
    }

    @Test func aclPacketVector() {
        // ACL: handle 0x040, PB=0b10 (first flushable), BC=0, length 5: L2CAP len 1, CID 4, ATT opcode 0x0A..
        expectVector(HCIACLPacket(handle: 0x040, boundary: .firstFlushable, data: [0x01, 0x00, 0x04, 0x00, 0x0A]),
                     "40200500010004000a")
        expectDripFeed(HCIACLPacket.self, "40200500010004000a")
        // Continuation fragment: handle 0x001, PB=0b01
        expectVector(HCIACLPacket(handle: 0x001, boundary: .continuing, data: [0xAA]), "01100100aa")
    }

    @Test func lengthFieldsMustMatch() {
        // Command claims 3 parameter bytes, has 2.
        #expect(decodeErrorCode(HCICommandPacket.self, "0c20030101") == .lengthMismatch)
        // Command claims 1, has 2: trailing byte.
        #expect(decodeErrorCode(HCICommandPacket.self, "0c20010101") == .trailingBytes)
        // ACL claims 4 bytes, has 2.
        #expect(decodeErrorCode(HCIACLPacket.self, "402004000100") == .lengthMismatch)
        // Event claims 0 bytes, has 1.
        #expect(decodeErrorCode(HCIEventPacket.self, "0e0001") == .trailingBytes)
    }

    @Test func h4FramingOfEachType() throws {
        let packet = HCIPacket.event(HCIEventPacket(code: .hardwareError, parameters: [0x05]))
        #expect(packet.h4Bytes == [0x04, 0x10, 0x01, 0x05])
        #expect(try HCIPacket(h4: [0x04, 0x10, 0x01, 0x05]) == packet)
        #expect(throws: WireError.self) { try HCIPacket(h4: [0x07, 0x00]) }
        #expect(throws: WireError.self) { try HCIPacket(h4: []) }
        #expect(try HCIPacket(h4: [0x05, 0x01, 0x00, 0x00, 0x00]).type == .iso)
        #expect(HCIPacketType.acl.payloadLength(header: [0x40, 0x20, 0x05, 0x01]) == 0x0105)
        #expect(HCIPacketType.event.payloadLength(header: [0x0E, 0xFF]) == 255)
        #expect(HCIPacketType(rawValue: 0x09).headerLength == nil)
    }

    @Test func opcodeFields() {
        #expect(HCIOpcode.leCreateConnection.rawValue == 0x200D)
        #expect(HCIOpcode.leCreateConnection.ogf == 0x08)
        #expect(HCIOpcode.leCreateConnection.ocf == 0x000D)
        #expect(HCIOpcode.reset.rawValue == 0x0C03)
        #expect(HCIOpcode.readBDADDR.rawValue == 0x1009)
        #expect(HCIOpcode.disconnect.rawValue == 0x0406)
    }
}
