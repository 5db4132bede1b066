import BLEVirtualController
import BLEWire
import Testing

@Suite struct BringUpTests {
    @Test func bringUpSequence() throws {
        let bench = Bench()
        let a = try bench.controller(aclSize: 27, aclCount: 8)
        let b = try bench.controller()
        let version = try bench.call(a, HCIReadLocalVersionInformation())
        #expect(version.status == .success && version.hciVersion >= 0x09)
        let buffers = try bench.call(a, HCILEReadBufferSize())
        #expect(buffers.leACLDataPacketLength == 27 && buffers.totalNumLEACLDataPackets == 8)
        let v2 = try bench.call(a, HCILEReadBufferSizeV2())
        #expect(v2.leACLDataPacketLength == 27 && v2.totalNumLEACLDataPackets == 8)
        let addressA = try bench.call(a, HCIReadBDADDR()).address
        let addressB = try bench.call(b, HCIReadBDADDR()).address
        #expect(addressA != addressB)
        #expect(addressA == a.address)
        let features = try bench.call(a, HCIReadLocalSupportedFeatures()).features
        #expect(features & (1 << 38) != 0, "LE Supported (Controller)")
        let le = try bench.call(a, HCILEReadLocalSupportedFeatures()).features
        #expect(le.contains(.encryption))
        #expect(le.contains(.extendedAdvertising), "extended advertising is implemented, so claimed")
        let r1 = try bench.call(a, HCILERand()).randomNumber
        let r2 = try bench.call(a, HCILERand()).randomNumber
        #expect(r1 != r2)
    }

    @Test(arguments: [ControllerProfile.full, .bluetooth41])
    func supportedCommandsMaskMatchesBehaviour(profile: ControllerProfile) throws {
        let bench = Bench()
        let a = try bench.controller(profile: profile)
        let mask = try bench.call(a, HCIReadLocalSupportedCommands()).supportedCommands
        for opcode in HCISupportedCommands.positions.keys {
            // A parameterless probe: a listed command never answers Unknown HCI Command; an unlisted one always does.
            let events = try bench.send(a, HCICommandPacket(opcode: opcode))
            let status = bench.status(of: opcode, in: events)
            #expect(status != nil, "no answer to \(opcode)")
            if mask.contains(opcode) {
                #expect(status != .unknownCommand, "\(opcode) is listed but unknown")
            } else {
                #expect(status == .unknownCommand, "\(opcode) is not listed but answered \(String(describing: status))")
            }
        }
        #expect(mask.contains(.leCreateConnection) && mask.contains(.leEnableEncryption) && !mask.contains(.leEncrypt))
        #expect(mask.contains(.leSetDataLength) == (profile == .full) && mask.contains(.leSetPHY) == (profile == .full))
        #expect(mask.contains(.leReadBufferSizeV2) == (profile == .full) && mask.contains(.leReadBufferSize))
    }

    @Test func aCore41ProfileSaysSoAndKeepsItsLinksWithinIt() throws {
        let bench = Bench()
        let old = try bench.controller(profile: .bluetooth41)
        let new = try bench.controller(at: 1)
        let version = try bench.call(old, HCIReadLocalVersionInformation())
        #expect(version.hciVersion == 0x07 && version.lmpVersion == 0x07)
        #expect(try bench.call(old, HCILEReadLocalSupportedFeatures()).features == [.encryption])
        #expect(bench.status(of: .leSetDataLength, in: try bench.send(old, HCILESetDataLength(handle: 1, txOctets: 251, txTime: 2120)))
                == .unknownCommand)
        // The full controller asks for longer packets on a link with the 4.1 one: the peer has no Data Length
        // Extension, so nothing changes (no LE Data Length Change on either side).
        let (handle, _) = try bench.connect(new, old)
        let answer = try bench.send(new, HCILESetDataLength(handle: handle, txOctets: 251, txTime: 2120))
        #expect(bench.status(of: .leSetDataLength, in: answer) == .success && answer.count == 1)
        bench.advance(.seconds(1))
        #expect(try bench.drain(old).isEmpty)
    }

    @Test func unknownCommandsAnsweredInBothStyles() throws {
        let bench = Bench()
        let a = try bench.controller()
        // A vendor command: Command Complete with 0x01.
        let vendor = try bench.send(a, HCICommandPacket(opcode: HCIOpcode(ogf: 0x3F, ocf: 0x0001), parameters: [1, 2]))
        #expect(vendor == [.commandComplete(.init(opcode: HCIOpcode(ogf: 0x3F, ocf: 0x0001), returnParameters: [0x01]))])
        // LE Extended Create Connection [v2] completes with Command Status: its Unknown HCI Command comes the same way.
        let extended = HCIOpcode(ogf: 0x08, ocf: 0x0085)
        let phy = try bench.send(a, HCICommandPacket(opcode: extended, parameters: [0, 1, 1, 0, 0, 0, 0]))
        #expect(phy == [.commandStatus(.init(status: .unknownCommand, opcode: extended))])
    }

    @Test func malformedParametersGetInvalidParameters() throws {
        let bench = Bench()
        let a = try bench.controller()
        // Truncated Set Event Mask.
        #expect(bench.status(of: .setEventMask, in: try bench.send(a, HCICommandPacket(opcode: .setEventMask, parameters: [1, 2])))
                == .invalidCommandParameters)
        // Trailing byte on LE Set Scan Enable.
        #expect(bench.status(of: .leSetScanEnable, in: try bench.send(a, HCICommandPacket(opcode: .leSetScanEnable, parameters: [1, 0, 0])))
                == .invalidCommandParameters)
        // Advertising interval below 0x0020.
        let params = HCILESetAdvertisingParameters(intervalMin: 0x10, intervalMax: 0x10)
        #expect(try bench.call(a, params).status == .invalidCommandParameters)
        // Scan window larger than the interval.
        #expect(try bench.call(a, HCILESetScanParameters(interval: 0x10, window: 0x20)).status == .invalidCommandParameters)
        // Advertising data length byte of 32.
        let tooLong = HCICommandPacket(opcode: .leSetAdvertisingData, parameters: [32] + [UInt8](repeating: 0, count: 31))
        #expect(bench.status(of: .leSetAdvertisingData, in: try bench.send(a, tooLong)) == .invalidCommandParameters)
        // Command Status-style command with bad parameters answers with Command Status.
        let events = try bench.send(a, HCICommandPacket(opcode: .leCreateConnection, parameters: [0]))
        #expect(events == [.commandStatus(.init(status: .invalidCommandParameters, opcode: .leCreateConnection))])
        // And the controller keeps serving.
        #expect(try bench.call(a, HCILERand()).status == .success)
    }

    @Test func commandsDisallowedInTheWrongState() throws {
        let bench = Bench()
        let a = try bench.controller()
        try bench.advertise(a)
        #expect(try bench.call(a, HCILESetAdvertisingParameters()).status == .commandDisallowed)
        #expect(try bench.call(a, HCILECreateConnectionCancel()).status == .commandDisallowed)
        // Random own address without LE Set Random Address.
        let b = try bench.controller()
        try bench.expectSuccess(b, HCILESetAdvertisingParameters(ownAddressType: .random))
        #expect(try bench.call(b, HCILESetAdvertisingEnable(isEnabled: true)).status == .invalidCommandParameters)
    }

    @Test func eventMasksAreHonoured() throws {
        let bench = Bench()
        let a = try bench.controller()
        let b = try bench.controller(at: 1)
        // B masks LE Meta off entirely: it scans but no report reaches its host.
        try bench.expectSuccess(b, HCISetEventMask(mask: HCISetEventMask.defaultMask))
        try bench.advertise(a)
        try bench.scan(b, active: false)
        bench.advance(.seconds(1))
        #expect(bench.reports(try bench.drain(b)).isEmpty)
        // With LE Meta on but the Advertising Report subevent masked off: still nothing.
        try bench.expectSuccess(b, HCISetEventMask(mask: 0x3FFF_FFFF_FFFF_FFFF))
        try bench.expectSuccess(b, HCILESetEventMask(mask: 0x1F & ~0x02))
        bench.advance(.seconds(1))
        #expect(bench.reports(try bench.drain(b)).isEmpty)
        try bench.expectSuccess(b, HCILESetEventMask(mask: 0x1F))
        bench.advance(.seconds(1))
        #expect(!bench.reports(try bench.drain(b)).isEmpty)
    }

    @Test func hardwareErrorInjection() throws {
        let bench = Bench()
        let a = try bench.controller()
        a.injectHardwareError(code: 0x42)
        #expect(try bench.drain(a) == [.hardwareError(.init(hardwareCode: 0x42))])
    }
}

@Suite struct ControllerSettingsTests {
    @Test func dataLengthDefaultsAndLimits() throws {
        let bench = Bench()
        let a = try bench.controller()
        let maximum = try bench.call(a, HCILEReadMaximumDataLength())
        #expect(maximum.supportedMaxTxOctets == 251 && maximum.supportedMaxRxOctets == 251)
        #expect(maximum.supportedMaxTxTime == 2120 && maximum.supportedMaxRxTime == 2120)
        let initial = try bench.call(a, HCILEReadSuggestedDefaultDataLength())
        #expect(initial.suggestedMaxTxOctets == 27 && initial.suggestedMaxTxTime == 328)
        try bench.expectSuccess(a, HCILEWriteSuggestedDefaultDataLength(suggestedMaxTxOctets: 251, suggestedMaxTxTime: 2120))
        let written = try bench.call(a, HCILEReadSuggestedDefaultDataLength())
        #expect(written.suggestedMaxTxOctets == 251 && written.suggestedMaxTxTime == 2120)
        // Outside 27...251 octets or 328...17040 µs.
        #expect(try bench.call(a, HCILEWriteSuggestedDefaultDataLength(suggestedMaxTxOctets: 26, suggestedMaxTxTime: 328)).status
                == .invalidCommandParameters)
        #expect(try bench.call(a, HCILEWriteSuggestedDefaultDataLength(suggestedMaxTxOctets: 27, suggestedMaxTxTime: 0x4291)).status
                == .invalidCommandParameters)
        // Reset restores the default.
        try bench.expectSuccess(a, HCIReset())
        #expect(try bench.call(a, HCILEReadSuggestedDefaultDataLength()).suggestedMaxTxOctets == 27)
    }

    @Test func setDataLengthChecksHandleAndRange() throws {
        let bench = Bench()
        let central = try bench.controller()
        let peripheral = try bench.controller(at: 1)
        let (ch, _) = try bench.connect(central, peripheral)
        #expect(try bench.call(central, HCILESetDataLength(handle: 0x0123, txOctets: 251, txTime: 2120)).status == .unknownConnectionIdentifier)
        #expect(try bench.call(central, HCILESetDataLength(handle: ch, txOctets: 252, txTime: 2120)).status == .invalidCommandParameters)
        // Asking for what is already in use changes nothing: no Data Length Change.
        let same = try bench.send(central, HCILESetDataLength(handle: ch, txOctets: 27, txTime: 328))
        #expect(bench.status(of: .leSetDataLength, in: same) == .success && same.count == 1)
        #expect(try bench.drain(peripheral).isEmpty)
    }

    @Test func defaultPHYPreferences() throws {
        let bench = Bench()
        let a = try bench.controller()
        try bench.expectSuccess(a, HCILESetDefaultPHY())                                  // 1M both ways
        try bench.expectSuccess(a, HCILESetDefaultPHY(allPHYs: 0x03, txPHYs: 0, rxPHYs: 0))  // no preference
        #expect(try bench.call(a, HCILESetDefaultPHY(allPHYs: 0x04)).status == .invalidCommandParameters)
        #expect(try bench.call(a, HCILESetDefaultPHY(allPHYs: 0, txPHYs: 0, rxPHYs: 1)).status == .invalidCommandParameters)
        // LE 1M, 2M and Coded are supported; a reserved PHY bit is not.
        try bench.expectSuccess(a, HCILESetDefaultPHY(allPHYs: 0, txPHYs: 0x07, rxPHYs: 0x03))
        #expect(try bench.call(a, HCILESetDefaultPHY(allPHYs: 0, txPHYs: 0x09, rxPHYs: 1)).status == .unsupportedFeatureOrParameterValue)
        #expect(try bench.call(a, HCILEReadLocalSupportedFeatures()).features.isSuperset(of: [.le2MPHY, .leCodedPHY]))
    }

    @Test func acceptedHostSettings() throws {
        let bench = Bench()
        let a = try bench.controller()
        try bench.expectSuccess(a, HCIWriteLEHostSupport())
        try bench.expectSuccess(a, HCISetEventMaskPage2(mask: 0x0000_0000_0200_0000))
        let buffers = try bench.call(a, HCIReadBufferSize())
        #expect(buffers.aclDataPacketLength == 27 && buffers.totalNumACLDataPackets == 8)
        #expect(try bench.call(a, HCIReadRSSI(handle: 0x0042)).status == .unknownConnectionIdentifier)
    }
}
