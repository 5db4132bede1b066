import BLETestSupport
import BLEWire
import Testing

@Suite struct HCIEventTests {
    /// Decodes a whole event packet (code, length, parameters) given as hex.
    func event(_ hex: String) throws -> HCIEvent {
        try HCIEvent(packet: HCIEventPacket(bytes: [UInt8](hex: hex) ?? []))
    }

    @Test func commandCompleteAndStatus() throws {
        // Command Complete: 1 credit, LE Read Buffer Size (0x2002), status 0, 27 bytes, 8 packets
        let complete = HCICommandCompleteEvent(opcode: .leReadBufferSize, returnParameters: [0x00, 0x1B, 0x00, 0x08])
        expectVector(complete, "0102200 01b0008")
        #expect(try event("0e0701022000 1b0008") == .commandComplete(complete))
        #expect(complete.status == .success)
        let ret = try complete.decode(HCILEReadBufferSize.self)
        #expect(ret.leACLDataPacketLength == 27 && ret.totalNumLEACLDataPackets == 8)
        expectDripFeed(HCICommandCompleteEvent.self, "010220")
        // Command Status: status 0, 1 credit, LE Create Connection (0x200D)
        let status = HCICommandStatusEvent(status: .success, opcode: .leCreateConnection)
        expectVector(status, "00010d20")
        expectDripFeed(HCICommandStatusEvent.self, "00010d20")
        #expect(try event("0f0400010d20") == .commandStatus(status))
        #expect(status.packet.encoded == [0x0F, 0x04, 0x00, 0x01, 0x0D, 0x20])
    }

    @Test func linkEvents() throws {
        // Disconnection Complete: status 0, handle 0x0040, reason 0x13
        let disconnected = HCIDisconnectionCompleteEvent(handle: 0x40, reason: .remoteUserTerminatedConnection)
        expectVector(disconnected, "00400013")
        expectDripFeed(HCIDisconnectionCompleteEvent.self, "00400013")
        #expect(try event("050400400013") == .disconnectionComplete(disconnected))
        // Encryption Change: status 0, handle 0x0040, on
        expectVector(HCIEncryptionChangeEvent(handle: 0x40, encryptionEnabled: 1), "00400001")
        expectDripFeed(HCIEncryptionChangeEvent.self, "00400001")
        // Number Of Completed Packets: 2 handles: 0x0040 → 2, 0x0041 → 1 (handles first, then counts)
        let nocp = HCINumberOfCompletedPacketsEvent(entries: [.init(handle: 0x40, completedPackets: 2),
                                                              .init(handle: 0x41, completedPackets: 1)])
        expectVector(nocp, "02400041000200 0100")
        expectDripFeed(HCINumberOfCompletedPacketsEvent.self, "0240004100020001 00")
        // Hardware Error code 0x05; Data Buffer Overflow ACL
        expectVector(HCIHardwareErrorEvent(hardwareCode: 5), "05")
        expectVector(HCIDataBufferOverflowEvent(linkType: 1), "01")
    }

    @Test func numberOfCompletedPacketsRejectsInconsistentCount() {
        // Claims 2 handles but carries one entry.
        #expect(decodeErrorCode(HCINumberOfCompletedPacketsEvent.self, "0240000100") == .lengthMismatch)
    }

    @Test func leConnectionComplete() throws {
        // LE Connection Complete: status 0, handle 0x0040, role peripheral, peer random D1:D2:D3:D4:D5:D6,
        // interval 0x0028 (50 ms), latency 0, timeout 0x01F4 (5 s), clock accuracy 0
        let value = HCILEConnectionCompleteEvent(handle: 0x40, role: .peripheral, peerAddressType: .random,
                                                 peerAddress: try wireAddress("d6d5d4d3d2d1"), connectionInterval: 0x28,
                                                 peripheralLatency: 0, supervisionTimeout: 0x01F4)
        let hex = "00400001 01 d6d5d4d3d2d1 2800 0000 f401 00"
        expectVector(value, hex)
        expectDripFeed(HCILEConnectionCompleteEvent.self, hex)
        #expect(try event("3e1301" + hex) == .le(.connectionComplete(value)))
        #expect(value.packet.encoded.hexString() == "3e1301" + hex.filter { $0 != " " })
    }

    @Test func leEnhancedConnectionComplete() throws {
        // As above with local and peer RPAs of zero
        let value = HCILEEnhancedConnectionCompleteEvent(handle: 0x40, role: .central, peerAddressType: .public,
                                                         peerAddress: try wireAddress("0100000000bb"),
                                                         connectionInterval: 0x18, peripheralLatency: 0,
                                                         supervisionTimeout: 0x48)
        let hex = "004000 00 00 0100000000bb 000000000000 000000000000 1800 0000 4800 00"
        expectVector(value, hex)
        expectDripFeed(HCILEEnhancedConnectionCompleteEvent.self, hex)
    }

    @Test func leAdvertisingReport() throws {
        // One report: ADV_IND, random D1:D2:D3:D4:D5:D6, data 02 01 06, RSSI -50 (0xCE)
        let report = HCILEAdvertisingReportEvent.Report(eventType: .advInd, addressType: .random,
                                                        address: try wireAddress("d6d5d4d3d2d1"), data: [2, 1, 6], rssi: -50)
        let value = HCILEAdvertisingReportEvent(reports: [report])
        expectVector(value, "010001d6d5d4d3d2d103020106ce")
        expectDripFeed(HCILEAdvertisingReportEvent.self, "010001d6d5d4d3d2d103020106ce")
        #expect(try event("3e0f02010001d6d5d4d3d2d103020106ce") == .le(.advertisingReport(value)))
        // Two reports back to back (second is a scan response with no data, RSSI -60)
        var second = report
        second.eventType = .scanResponse
        second.data = []
        second.rssi = -60
        expectVector(HCILEAdvertisingReportEvent(reports: [report, second]),
                     "020001d6d5d4d3d2d103020106ce" + "0401d6d5d4d3d2d100c4")
        // Zero reports and a 32-byte data length are invalid.
        #expect(decodeErrorCode(HCILEAdvertisingReportEvent.self, "00") == .invalidValue)
        #expect(decodeErrorCode(HCILEAdvertisingReportEvent.self, "010001d6d5d4d3d2d120" + String(repeating: "00", count: 33))
                == .invalidValue)
        // Data length running past the end.
        #expect(decodeErrorCode(HCILEAdvertisingReportEvent.self, "010001d6d5d4d3d2d1050201") == .truncated)
    }

    @Test func leExtendedAdvertisingReport() throws {
        // One legacy ADV_IND as extended: event type 0x0013 (connectable|scannable|legacy), random D1..D6,
        // primary PHY 1M, secondary none, SID 0xFF, TX 127, RSSI -50, no periodic, direct none, data 02 01 06
        let report = HCILEExtendedAdvertisingReportEvent.Report(
            eventType: [.connectable, .scannable, .legacy], addressType: .random,
            address: try wireAddress("d6d5d4d3d2d1"), rssi: -50, data: [2, 1, 6])
        let hex = "01 1300 01 d6d5d4d3d2d1 01 00 ff 7f ce 0000 00 000000000000 03 020106"
        expectVector(HCILEExtendedAdvertisingReportEvent(reports: [report]), hex)
        expectDripFeed(HCILEExtendedAdvertisingReportEvent.self, hex)
        #expect(report.eventType.dataStatus == 0)
    }

    @Test func leSecurityAndLinkSubevents() throws {
        // LTK Request: handle 0x0040, Rand 0x1122334455667788, EDIV 0x1234
        let ltk = HCILELongTermKeyRequestEvent(handle: 0x40, randomNumber: 0x1122_3344_5566_7788, encryptedDiversifier: 0x1234)
        expectVector(ltk, "400088776655443322113412")
        expectDripFeed(HCILELongTermKeyRequestEvent.self, "400088776655443322113412")
        #expect(try event("3e0d05400088776655443322113412") == .le(.longTermKeyRequest(ltk)))
        // Connection Update Complete: status 0, handle 0x0040, interval 6, latency 0, timeout 100
        expectVector(HCILEConnectionUpdateCompleteEvent(handle: 0x40, connectionInterval: 6, peripheralLatency: 0,
                                                        supervisionTimeout: 100), "00400006000000 6400")
        // Read Remote Features Complete: status 0, handle 0x0040, features encryption | DLE
        expectVector(HCILEReadRemoteFeaturesCompleteEvent(handle: 0x40, features: [.encryption, .dataPacketLengthExtension]),
                     "0040002100000000000000")
        // Data Length Change: 251/2120 both ways
        expectVector(HCILEDataLengthChangeEvent(handle: 0x40, maxTxOctets: 251, maxTxTime: 2120, maxRxOctets: 251,
                                                maxRxTime: 2120), "4000fb004808fb004808")
    }

    @Test func unknownCodesAreRepresentable() throws {
        // Vendor event 0xFF and LE subevent 0x3F decode to unknown cases and re-encode unchanged.
        let vendor = try event("ff02abcd")
        #expect(vendor == .unknown(HCIEventPacket(code: .vendorSpecific, parameters: [0xAB, 0xCD])))
        #expect(vendor.packet.encoded.hexString() == "ff02abcd")
        let le = try event("3e023f01")
        #expect(le == .le(.unknown(subevent: HCILESubeventCode(rawValue: 0x3F), parameters: [0x01])))
        #expect(le.packet.encoded.hexString() == "3e023f01")
        // Known codes with malformed parameters throw.
        #expect(throws: WireError.self) { try event("0f03000100") }
        #expect(throws: WireError.self) { try event("3e00") }
    }
}
