import BLETestSupport
import BLEWire
import Testing

@Suite struct HCICommandTests {
    @Test func parameterlessCommands() throws {
        #expect(HCIReset().packet.encoded == [0x03, 0x0C, 0x00])
        #expect(HCILEReadBufferSize().packet.encoded == [0x02, 0x20, 0x00])
        #expect(HCILECreateConnectionCancel().packet.encoded == [0x0E, 0x20, 0x00])
        // A parameterless command with parameters is rejected.
        #expect(throws: WireError.self) { try HCIReset(packet: HCICommandPacket(opcode: .reset, parameters: [0])) }
        // A packet with another opcode is rejected.
        #expect(throws: WireError.self) { try HCIReset(packet: HCICommandPacket(opcode: .leRand)) }
    }

    @Test func setEventMasks() {
        // Set Event Mask: 0x3DBFF807FFFBFFFF (a typical LE host mask)
        expectVector(HCISetEventMask(mask: 0x3DBF_F807_FFFB_FFFF), "fffffbff07f8bf3d")
        expectDripFeed(HCISetEventMask.self, "fffffbff07f8bf3d")
        #expect(HCISetEventMask.bit(for: .disconnectionComplete) == 1 << 4)
        #expect(HCISetEventMask.bit(for: .leMeta) == 1 << 61)
        #expect(HCISetEventMask.bit(for: .commandComplete) == nil)
        // LE Set Event Mask: first 5 subevents
        expectVector(HCILESetEventMask(mask: 0x1F), "1f00000000000000")
        #expect(HCILESetEventMask.bit(for: .longTermKeyRequest) == 1 << 4)
    }

    @Test func setAdvertisingParameters() throws {
        // interval 0x00A0–0x00A0 (100 ms), ADV_IND, own public, peer public 00:00:00:00:00:00, channels 37-39, policy 0
        let command = HCILESetAdvertisingParameters(intervalMin: 0x00A0, intervalMax: 0x00A0)
        expectVector(command, "a000a0000000000000000000000700")
        expectDripFeed(HCILESetAdvertisingParameters.self, "a000a0000000000000000000000700")
        #expect(command.packet.encoded.hexString() == "06200fa000a0000000000000000000000700")
        #expect(command.isValid)
        var bad = command
        bad.intervalMin = 0x0010
        #expect(!bad.isValid)
        bad = command
        bad.channelMap = 0
        #expect(!bad.isValid)
        bad = command
        bad.advertisingType = HCILEAdvertisingType(rawValue: 5)
        #expect(!bad.isValid)
    }

    @Test func advertisingAndScanResponseData() {
        // Length 3, flags AD (02 01 06), padded to 31 octets
        let hex = "03020106" + String(repeating: "00", count: 28)
        expectVector(HCILESetAdvertisingData(data: [0x02, 0x01, 0x06]), hex)
        expectDripFeed(HCILESetAdvertisingData.self, hex)
        expectVector(HCILESetScanResponseData(data: [0x02, 0x01, 0x06]), hex)
        // A significant length over 31 is invalid.
        #expect(decodeErrorCode(HCILESetAdvertisingData.self, "20" + String(repeating: "00", count: 31)) == .invalidValue)
    }

    @Test func enableCommands() {
        // Advertising enable on
        expectVector(HCILESetAdvertisingEnable(isEnabled: true), "01")
        #expect(decodeErrorCode(HCILESetAdvertisingEnable.self, "02") == .invalidValue)
        // Scan enable on, filter duplicates off
        expectVector(HCILESetScanEnable(isEnabled: true, filterDuplicates: false), "0100")
        expectDripFeed(HCILESetScanEnable.self, "0100")
        #expect(decodeErrorCode(HCILESetScanEnable.self, "0102") == .invalidValue)
    }

    @Test func scanParameters() {
        // Active, interval 0x0010, window 0x0010, own public, accept all
        let command = HCILESetScanParameters(scanType: .active, interval: 0x0010, window: 0x0010)
        expectVector(command, "01100010000000")
        expectDripFeed(HCILESetScanParameters.self, "01100010000000")
        #expect(command.isValid)
        #expect(!HCILESetScanParameters(scanType: .active, interval: 0x0010, window: 0x0020).isValid)
    }

    @Test func createConnection() throws {
        // scan 0x0060/0x0030, policy 0, peer random D1:D2:D3:D4:D5:D6, own public, interval 0x0018–0x0028,
        // latency 0, timeout 0x01F4 (5 s), CE 0/0
        let command = HCILECreateConnection(
            scanInterval: 0x0060, scanWindow: 0x0030, peerAddressType: .random,
            peerAddress: try wireAddress("d6d5d4d3d2d1"), connectionIntervalMin: 0x0018, connectionIntervalMax: 0x0028,
            maxLatency: 0, supervisionTimeout: 0x01F4)
        let hex = "6000300000 01 d6d5d4d3d2d1 00 1800 2800 0000 f401 0000 0000"
        expectVector(command, hex)
        expectDripFeed(HCILECreateConnection.self, hex)
        #expect(command.isValid)
        #expect(HCILECreateConnection.completion == .commandStatus)
        // Supervision timeout too short for the interval: 100 ms < 2 × 50 ms × (1 + 1)... invalid.
        var bad = command
        bad.maxLatency = 1
        bad.supervisionTimeout = 0x000A
        #expect(!bad.isValid)
    }

    @Test func connectionUpdateAndDisconnect() {
        // handle 0x0040, interval 0x0006–0x0006, latency 0, timeout 0x0064, CE 0/0
        let update = HCILEConnectionUpdate(handle: 0x0040, intervalMin: 6, intervalMax: 6, maxLatency: 0,
                                           supervisionTimeout: 0x0064)
        expectVector(update, "4000060006000000640000000000")
        expectDripFeed(HCILEConnectionUpdate.self, "4000060006000000640000000000")
        #expect(update.isValid)
        // Disconnect handle 0x0040, reason 0x13
        expectVector(HCIDisconnect(handle: 0x0040, reason: .remoteUserTerminatedConnection), "400013")
        expectDripFeed(HCIDisconnect.self, "400013")
    }

    @Test func securityCommands() {
        // LE Enable Encryption: handle 0x0040, Rand 0x1122334455667788, EDIV 0x1234, LTK 00..0f
        let ltk = Array(UInt8(0)...UInt8(15))
        let hex = "4000" + "8877665544332211" + "3412" + ltk.hexString()
        expectVector(HCILEEnableEncryption(handle: 0x40, randomNumber: 0x1122_3344_5566_7788, encryptedDiversifier: 0x1234,
                                           longTermKey: ltk), hex)
        expectDripFeed(HCILEEnableEncryption.self, hex)
        expectVector(HCILELongTermKeyRequestReply(handle: 0x40, longTermKey: ltk), "4000" + ltk.hexString())
        expectVector(HCILELongTermKeyRequestNegativeReply(handle: 0x40), "4000")
        // Return parameters: status 0, handle 0x0040
        expectVector(HCIHandleReturnParameters(status: .success, handle: 0x40), "004000")
    }

    @Test func returnParameters() throws {
        // LE Read Buffer Size: status 0, 27-byte packets, 8 buffers
        expectVector(HCILEReadBufferSize.ReturnParameters(leACLDataPacketLength: 27, totalNumLEACLDataPackets: 8), "001b0008")
        expectDripFeed(HCILEReadBufferSize.ReturnParameters.self, "001b0008")
        // Read BD_ADDR: status 0, 00:BB:00:00:00:01
        expectVector(HCIReadBDADDR.ReturnParameters(address: try wireAddress("0100000000bb")), "000100000000bb")
        // Read RSSI: status 0, handle 0x0040, -60 dBm
        expectVector(HCIReadRSSI.ReturnParameters(handle: 0x40, rssi: -60), "004000c4")
        // Read Local Version: HCI 5.4 (0x0D), subversion 1, LMP 0x0D, company 0xFFFF, LMP subversion 2
        expectVector(HCIReadLocalVersionInformation.ReturnParameters(hciVersion: 0x0D, hciSubversion: 1, lmpVersion: 0x0D,
                                                                     companyIdentifier: 0xFFFF, lmpSubversion: 2),
                     "000d01000dffff0200")
        // LE Rand: 0x0102030405060708
        expectVector(HCILERand.ReturnParameters(randomNumber: 0x0102_0304_0506_0708), "000807060504030201")
        // LE Read Maximum Data Length: 251 / 2120 µs both ways
        expectVector(HCILEReadMaximumDataLength.ReturnParameters(supportedMaxTxOctets: 251, supportedMaxTxTime: 2120,
                                                                 supportedMaxRxOctets: 251, supportedMaxRxTime: 2120),
                     "00fb004808fb004808")
    }

    @Test func supportedCommandsMask() throws {
        var mask = HCISupportedCommands()
        mask.insert(.reset)
        mask.insert(.leCreateConnection)
        #expect(mask.contains(.reset))
        #expect(mask.contains(.leCreateConnection))
        #expect(!mask.contains(.leEncrypt))
        // Reset is octet 5 bit 7; LE Create Connection is octet 26 bit 4.
        #expect(mask.octets[5] == 0x80)
        #expect(mask.octets[26] == 0x10)
        let ret = HCIReadLocalSupportedCommands.ReturnParameters(supportedCommands: mask)
        let decoded = try HCIReadLocalSupportedCommands.ReturnParameters(bytes: ret.encoded)
        #expect(decoded == ret)
        #expect(ret.encoded.count == 65)
    }
}
