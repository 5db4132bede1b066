import BLETestSupport
import BLEWire
import Testing

/// The codecs and tables a host reads a controller's capabilities with.
@Suite struct ControllerInformationTests {
    @Test func listSizeCommands() {
        #expect(HCILEReadFilterAcceptListSize().packet.encoded == [0x0F, 0x20, 0x00])
        #expect(HCILEReadResolvingListSize().packet.encoded == [0x2A, 0x20, 0x00])
        // Status success, 12 entries.
        expectVector(HCIListSizeReturnParameters(size: 12), "000c")
        expectDripFeed(HCIListSizeReturnParameters.self, "000c")
        #expect(decodeErrorCode(HCIListSizeReturnParameters.self, "000c00") != nil, "a trailing byte is refused")
    }

    @Test func leReadSupportedStates() {
        #expect(HCILEReadSupportedStates().packet.encoded == [0x1C, 0x20, 0x00])
        // Status success, LE_States with bits 0-41 set (eight octets, little-endian).
        expectVector(HCILEReadSupportedStates.ReturnParameters(states: 0x0000_03FF_FFFF_FFFF), "00ffffffffff030000")
        expectDripFeed(HCILEReadSupportedStates.ReturnParameters.self, "00ffffffffff030000")
        #expect(decodeErrorCode(HCILEReadSupportedStates.ReturnParameters.self, "00ffff") != nil, "a short answer is refused")
    }

    @Test func versionReturnParametersAndNames() {
        // Status 0, HCI 5.3 (0x0C) revision 0x1234, LMP 5.3 subversion 0x5678, Broadcom (0x000F).
        let parameters = HCIReadLocalVersionInformation.ReturnParameters(hciVersion: 0x0C, hciSubversion: 0x1234, lmpVersion: 0x0C,
                                                                         companyIdentifier: 0x000F, lmpSubversion: 0x5678)
        expectVector(parameters, "000c34120c0f007856")
        expectDripFeed(HCIReadLocalVersionInformation.ReturnParameters.self, "000c34120c0f007856")
        #expect(HCIVersion(rawValue: 0x0C).description == "5.3")
        #expect(HCIVersion(rawValue: 0x06).description == "4.0")
        #expect(HCIVersion(rawValue: 0x07) == .v4_1 && HCIVersion.v6_0.description == "6.0")
        #expect(HCIVersion(rawValue: 0x03).description == "2.0 + EDR")
        #expect(HCIVersion(rawValue: 0x2A).name == nil && HCIVersion(rawValue: 0x2A).description == "0x2A")
        #expect(HCIVersion.v4_1 < .v5_0)
    }

    @Test func companyNames() {
        #expect(CompanyIdentifier(rawValue: 0x000F).name == "Broadcom Corporation")
        #expect(CompanyIdentifier(rawValue: 0x0002).name == "Intel Corp.")
        #expect(CompanyIdentifier(rawValue: 0x001D).name == "Qualcomm")
        #expect(CompanyIdentifier.nordicSemiconductor.name == "Nordic Semiconductor ASA")
        #expect(CompanyIdentifier(rawValue: 0x005D).name == "Realtek Semiconductor Corporation")
        #expect(CompanyIdentifier(rawValue: 0x02E5).name == "Espressif Incorporated")
        #expect(CompanyIdentifier(rawValue: 0x05F1).name == "The Linux Foundation")
        #expect(CompanyIdentifier.testing.name == "reserved for internal use and testing")
        #expect(CompanyIdentifier(rawValue: 0x7A7A).name == nil && CompanyIdentifier(rawValue: 0x7A7A).description == "0x7A7A")
    }

    @Test func leFeatureNames() throws {
        let features = LEFeatures(rawValue: 0x0000_0000_0000_0921)
        #expect(features == [.encryption, .dataPacketLengthExtension, .le2MPHY, .leCodedPHY])
        #expect(features.names == ["LE Encryption", "LE Data Packet Length Extension", "LE 2M PHY", "LE Coded PHY"])
        #expect(LEFeatures(rawValue: 1 << 42 | 1 << 12).names == ["LE Extended Advertising", "bit 42"])
        for bit in 0...41 { #expect(LEFeatures.bitNames[bit] != nil, "bit \(bit) has no name") }
        #expect(LEFeatures.bitNames[14] == "Channel Selection Algorithm #2")
        // The LE Read Local Supported Features return parameters: status, 8 octets of features.
        expectVector(HCILEReadLocalSupportedFeatures.ReturnParameters(features: features), "002109000000000000")
        expectDripFeed(HCILEReadLocalSupportedFeatures.ReturnParameters.self, "002109000000000000")
    }

    @Test func supportedCommandNamesAgreeWithPositions() throws {
        #expect(HCISupportedCommands.names.count == 47 && HCISupportedCommands.names.allSatisfy { $0.count == 8 })
        // Spot checks against Core 5.4, Vol 4, Part E, 6.27.
        #expect(HCISupportedCommands.name(octet: 33, bit: 6) == "LE Set Data Length")
        #expect(HCISupportedCommands.name(octet: 35, bit: 3) == "LE Read Maximum Data Length")
        #expect(HCISupportedCommands.name(octet: 35, bit: 6) == "LE Set PHY")
        #expect(HCISupportedCommands.name(octet: 41, bit: 5) == "LE Read Buffer Size [v2]")
        #expect(HCISupportedCommands.name(octet: 26, bit: 6) == "LE Read Filter Accept List Size")
        #expect(HCISupportedCommands.name(octet: 34, bit: 6) == "LE Read Resolving List Size")
        #expect(HCISupportedCommands.name(octet: 5, bit: 7) == "Reset")
        #expect(HCISupportedCommands.name(octet: 14, bit: 4) == nil && HCISupportedCommands.name(octet: 64, bit: 0) == nil)
        // Every position this library knows names the same command as its opcode's constant.
        let expected: [HCIOpcode: String] = [
            .leSetDataLength: "LE Set Data Length", .leReadMaximumDataLength: "LE Read Maximum Data Length", .leSetPHY: "LE Set PHY",
            .leReadBufferSizeV2: "LE Read Buffer Size [v2]", .leReadBufferSize: "LE Read Buffer Size [v1]",
            .readBufferSize: "Read Buffer Size", .leReadFilterAcceptListSize: "LE Read Filter Accept List Size",
            .leReadResolvingListSize: "LE Read Resolving List Size", .readLocalVersionInformation: "Read Local Version Information",
            .leReadLocalSupportedFeatures: "LE Read Local Supported Features", .leSetDefaultPHY: "LE Set Default PHY",
            .leReadPHY: "LE Read PHY", .readBDADDR: "Read BD_ADDR", .readRSSI: "Read RSSI",
        ]
        for (opcode, name) in expected { #expect(HCISupportedCommands.name(of: opcode) == name, "\(opcode)") }
        for opcode in HCISupportedCommands.positions.keys {
            #expect(HCISupportedCommands.name(of: opcode) != nil, "\(opcode) sits on a bit the table does not name")
        }
    }

    @Test func listedCommandsByName() {
        var mask = HCISupportedCommands()
        mask.insert(.reset)
        mask.insert(.leSetPHY)
        mask.insert(octet: 63, bit: 7)
        #expect(mask.listed.map { [$0.octet, $0.bit] } == [[5, 7], [35, 6], [63, 7]])
        #expect(mask.listedNames == ["Reset", "LE Set PHY", "octet 63 bit 7"])
    }
}
