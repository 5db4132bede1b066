import BLETransport
import BLEWire
import Foundation
import Testing

@Suite struct BTSnoopTests {
    @Test func writesHeaderAndRecordsByteExact() throws {
        let path = NSTemporaryDirectory() + "ble-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).btsnoop"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try BTSnoopWriter(path: path, now: { 1_000_000 })   // 1 s after the Unix epoch
        writer.write(.command(HCIReset().packet), direction: .sent)
        writer.write(.event(HCICommandCompleteEvent(opcode: .reset, returnParameters: [0]).packet), direction: .received)
        writer.write(.acl(HCIACLPacket(handle: 0x40, boundary: .firstFlushable, data: [1, 2])), direction: .received)
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        // "btsnoop\0", version 1, datalink 1002 (0x3EA)
        #expect(Array(bytes.prefix(16)).hexString() == "6274736e6f6f7000 00000001 000003ea".filter { $0 != " " })
        // Record 1: lengths 4/4, flags 2 (sent, command), drops 0, timestamp 0x00DCDDB30F2F8000 + 1_000_000, 01 03 0c 00
        let ts = UInt64(0x00DC_DDB3_0F2F_8000 + 1_000_000)
        let tsHex = (0..<8).reversed().map { [UInt8(truncatingIfNeeded: ts >> (8 * UInt64($0)))].hexString() }.joined()
        #expect(Array(bytes[16..<44]).hexString() == "00000004" + "00000004" + "00000002" + "00000000" + tsHex + "01030c00")
        let records = try BTSnoopReader.parse(bytes)
        #expect(records.count == 3)
        #expect(records.map(\.direction) == [.sent, .received, .received])
        #expect(records[1].h4Bytes == [0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00])
        #expect(records.allSatisfy { $0.timestamp == 1_000_000 })
        // The ACL record's flags say data (bit 1 clear) and received (bit 0 set).
        let third = 44 + 31
        #expect(Array(bytes[third + 8..<third + 12]) == [0, 0, 0, 1])
    }

    @Test func snoopingTransportRecordsBothDirections() async throws {
        let path = NSTemporaryDirectory() + "ble-test-snoop-\(getpid()).btsnoop"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (host, controller) = HCIPipe.makePair()
        let snooped = SnoopingTransport(host, writer: try BTSnoopWriter(path: path), role: .host)
        try await snooped.send(samplePackets[0])
        _ = try await collect(controller, 1)
        try await controller.send(samplePackets[1])
        #expect(try await collect(snooped, 1) == [samplePackets[1]])
        let records = try BTSnoopReader.parse([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
        #expect(records.map(\.direction) == [.sent, .received])
        #expect(records.map(\.h4Bytes) == [samplePackets[0].h4Bytes, samplePackets[1].h4Bytes])
    }

    @Test func readerRejectsForeignFiles() {
        #expect(throws: WireError.self) { try BTSnoopReader.parse(Array("not a capture".utf8)) }
        #expect(throws: WireError.self) { try BTSnoopReader.parse(BTSnoopWriter.header + [0, 0]) }
    }
}
