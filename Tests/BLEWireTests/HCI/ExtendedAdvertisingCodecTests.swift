import BLETestSupport
import BLEWire
import Testing

/// The extended advertising commands and events, byte for byte as Core 5.4, Vol 4, Part E, 7.8.52–7.8.66 and
/// 7.7.65.13/17/18 lay them out (little-endian fields in the order of the parameter tables; array parameters element
/// by element).
@Suite struct ExtendedAdvertisingCodecTests {
    let address = BluetoothAddress(0x6655_4433_2211)

    @Test func opcodesAndSupportedCommandBits() {
        // OCFs 0x0035-0x003D and 0x0041-0x0043 of OGF 0x08.
        #expect(HCIOpcode.leSetAdvertisingSetRandomAddress.rawValue == 0x2035)
        #expect(HCIOpcode.leSetExtendedAdvertisingParameters.rawValue == 0x2036)
        #expect(HCIOpcode.leSetExtendedAdvertisingData.rawValue == 0x2037)
        #expect(HCIOpcode.leSetExtendedScanResponseData.rawValue == 0x2038)
        #expect(HCIOpcode.leSetExtendedAdvertisingEnable.rawValue == 0x2039)
        #expect(HCIOpcode.leRemoveAdvertisingSet.rawValue == 0x203C)
        #expect(HCIOpcode.leClearAdvertisingSets.rawValue == 0x203D)
        #expect(HCIOpcode.leExtendedCreateConnection.rawValue == 0x2043)
        // Supported_Commands octet 36 bits 1-7, octet 37 bits 0, 1, 5, 6, 7 (Vol 4, Part E, 6.27).
        var mask = HCISupportedCommands()
        let inserted = mask.insert(.leSetExtendedAdvertisingParameters)
        #expect(inserted)
        #expect(mask.contains(octet: 36, bit: 2))
        let position = HCISupportedCommands.positions[.leExtendedCreateConnection]
        #expect(position?.octet == 37 && position?.bit == 7)
        #expect(HCISupportedCommands.name(of: .leClearAdvertisingSets) == "LE Clear Advertising Sets")
        #expect(HCISupportedCommands.name(of: .leSetAdvertisingSetRandomAddress) == "LE Set Advertising Set Random Address")
    }

    @Test func setExtendedAdvertisingParameters() throws {
        // Handle 1, properties 0x0001 (connectable), intervals 0x0000A0 / 0x000140 (3 octets each), channels 0x07,
        // own public, peer public 00:00:00:00:00:00, filter 0, TX power 0x7F, primary LE Coded (3), max skip 0,
        // secondary LE Coded, SID 5, no scan request notification: 25 octets.
        let command = HCILESetExtendedAdvertisingParameters(handle: 1, properties: .connectable, intervalMin: 0xA0, intervalMax: 0x140,
                                                            primaryPHY: .leCoded, secondaryPHY: .leCoded, sid: 5)
        let hex = "01 0100 a00000 400100 07 00 00 000000000000 00 7f 03 00 03 05 00"
        expectVector(command, hex)
        expectDripFeed(HCILESetExtendedAdvertisingParameters.self, hex)
        #expect(command.encoded.count == 25)
        #expect(command.isValid)
        #expect(decodeErrorCode(HCILESetExtendedAdvertisingParameters.self, "01 0100 a00000 400100 07 00 00 000000000000 00 7f 03 00 03 05 02") == .invalidValue)
        // Return parameters: status, Selected_TX_Power (signed).
        expectVector(HCILESetExtendedAdvertisingParameters.ReturnParameters(selectedTxPower: -4), "00 fc")
        // Legacy PDUs only in their five combinations and on LE 1M.
        #expect(HCILEAdvertisingEventProperties(rawValue: 0b0010011).isValid)
        #expect(!HCILEAdvertisingEventProperties(rawValue: 0b0010001).isValid)
        #expect(!HCILEAdvertisingEventProperties([.connectable, .scannable]).isValid)
        #expect(!HCILESetExtendedAdvertisingParameters(properties: .legacyNonConnectable, primaryPHY: .leCoded).isValid)
        #expect(!HCILESetExtendedAdvertisingParameters(properties: [], sid: 16).isValid)
    }

    @Test func dataCommandsAndFragments() throws {
        expectVector(HCILESetExtendedAdvertisingData(handle: 2, operation: .first, data: [0x02, 0x01, 0x06]), "02 01 00 03 020106")
        expectVector(HCILESetExtendedScanResponseData(handle: 0, operation: .complete, minimizeFragmentation: true, data: []), "00 03 01 00")
        expectDripFeed(HCILESetExtendedAdvertisingData.self, "02 01 00 03 020106")
        // Advertising_Data_Length is at most 251; Fragment_Preference 0 or 1.
        #expect(decodeErrorCode(HCILESetExtendedAdvertisingData.self, [0, 3, 0, 252] + [UInt8](repeating: 0, count: 252)) == .invalidValue)
        #expect(decodeErrorCode(HCILESetExtendedAdvertisingData.self, "00 03 02 00") == .invalidValue)
        let fragments = HCILEAdvertisingDataOperation.fragments(of: [UInt8](repeating: 7, count: 600))
        #expect(fragments.map(\.0) == [.first, .intermediate, .last])
        #expect(fragments.map(\.1.count) == [251, 251, 98])
        #expect(HCILEAdvertisingDataOperation.fragments(of: [1, 2]).map(\.0) == [.complete])
    }

    @Test func setExtendedAdvertisingEnableLaysSetsOutOneAfterAnother() throws {
        // Enable, Num_Sets 2, then handle/duration/max events of set 0, then of set 3.
        let command = HCILESetExtendedAdvertisingEnable(isEnabled: true, sets: [.init(handle: 0, duration: 0x0064, maxEvents: 0),
                                                                                .init(handle: 3, duration: 0, maxEvents: 5)])
        expectVector(command, "01 02 00 6400 00 03 0000 05")
        expectDripFeed(HCILESetExtendedAdvertisingEnable.self, "01 02 00 6400 00 03 0000 05")
        expectVector(HCILESetExtendedAdvertisingEnable(isEnabled: false, sets: []), "00 00")
        #expect(decodeErrorCode(HCILESetExtendedAdvertisingEnable.self, "02 00") == .invalidValue)
    }

    @Test func smallCommandsAndTheirReturnParameters() throws {
        expectVector(HCILESetAdvertisingSetRandomAddress(handle: 4, address: address), "04 112233445566")
        expectVector(HCILERemoveAdvertisingSet(handle: 0xEF), "ef")
        #expect(HCILEClearAdvertisingSets().encoded.isEmpty)
        #expect(HCILEReadMaximumAdvertisingDataLength().encoded.isEmpty)
        expectVector(HCILEReadMaximumAdvertisingDataLength.ReturnParameters(maximumLength: 1650), "00 7206")
        expectVector(HCILEReadNumberOfSupportedAdvertisingSets.ReturnParameters(count: 8), "00 08")
    }

    @Test func extendedScanParametersCarryOneEntryPerScannedPHY() throws {
        // Own address random (1), filter 0, Scanning_PHYs 0x05 (1M and Coded), then 1M's type/interval/window, then Coded's.
        let command = HCILESetExtendedScanParameters(ownAddressType: .random,
                                                     le1M: .init(scanType: .active, interval: 0x0060, window: 0x0030),
                                                     leCoded: .init(scanType: .passive, interval: 0x0120, window: 0x0090))
        let hex = "01 00 05 01 6000 3000 00 2001 9000"
        expectVector(command, hex)
        expectDripFeed(HCILESetExtendedScanParameters.self, hex)
        #expect(command.phys == [.le1M, .leCoded])
        expectVector(HCILESetExtendedScanParameters(le1M: nil, leCoded: .init()), "00 00 04 01 6000 3000")
        // LE 2M (bit 1) is reserved for scanning.
        #expect(decodeErrorCode(HCILESetExtendedScanParameters.self, "00 00 02 01 6000 3000") == .invalidValue)
        #expect(!HCILESetExtendedScanParameters(le1M: nil, leCoded: nil).isValid)
        #expect(!HCILESetExtendedScanParameters(le1M: .init(interval: 0x10, window: 0x20)).isValid)
        // Enable, Filter_Duplicates, Duration (10 ms), Period (1.28 s).
        expectVector(HCILESetExtendedScanEnable(isEnabled: true, filterDuplicates: 1, duration: 0x01F4, period: 0), "01 01 f401 0000")
    }

    @Test func extendedCreateConnectionCarriesOneEntryPerInitiatingPHY() throws {
        let coded = HCILEExtendedCreateConnection.PHYParameters(scanInterval: 0x0120, scanWindow: 0x0120, connectionIntervalMin: 0x0030,
                                                                connectionIntervalMax: 0x0040, maxLatency: 0, supervisionTimeout: 0x0200)
        let command = HCILEExtendedCreateConnection(ownAddressType: .public, peerAddressType: .random, peerAddress: address,
                                                    le1M: .init(), leCoded: coded)
        let hex = "00 00 01 112233445566 05"
            + " 6000 6000 1800 2800 0000 f401 0000 0000"
            + " 2001 2001 3000 4000 0000 0002 0000 0000"
        expectVector(command, hex)
        expectDripFeed(HCILEExtendedCreateConnection.self, hex)
        #expect(HCILEExtendedCreateConnection.completion == .commandStatus)
        #expect(command.isValid)
        // Only LE 2M: nothing to scan on.
        #expect(!HCILEExtendedCreateConnection(peerAddressType: .public, peerAddress: address, le1M: nil, le2M: .init()).isValid)
        #expect(decodeErrorCode(HCILEExtendedCreateConnection.self, "00 00 00 112233445566 08") == .invalidValue)
    }

    @Test func advertisingSetTerminatedAndScanTimeoutEvents() throws {
        // Subevent 0x12: status, handle, connection handle, completed events.
        let event = HCILEAdvertisingSetTerminatedEvent(status: .success, handle: 2, connectionHandle: 0x0041, completedEvents: 7)
        expectVector(event, "00 02 4100 07")
        expectDripFeed(HCILEAdvertisingSetTerminatedEvent.self, "00 02 4100 07")
        #expect(try HCILEMetaEvent(parameters: [0x12, 0x3C, 0x01, 0x00, 0x00, 0x10])
                == .advertisingSetTerminated(.init(status: .advertisingTimeout, handle: 1, connectionHandle: 0, completedEvents: 16)))
        // Subevent 0x11 has no parameters.
        #expect(try HCILEMetaEvent(parameters: [0x11]) == .scanTimeout)
        #expect(HCILEMetaEvent.scanTimeout.packet.parameters == [0x11])
        #expect(throws: WireError.self) { _ = try HCILEMetaEvent(parameters: [0x12, 0x00, 0x01]) }
    }

    @Test func extendedReportDataStatusAndLength() throws {
        // Event_Type 0x0020: non-connectable extended, data status 1 (more to come).
        let type = HCILEExtendedAdvertisingEventType(rawValue: 0x0020)
        #expect(type.dataStatus == 1 && !type.contains(.legacy))
        #expect(type.with(dataStatus: 2).rawValue == 0x0040)
        #expect(HCILEExtendedAdvertisingEventType(rawValue: 0x0013).with(dataStatus: 0).rawValue == 0x0013)
        // Data_Length beyond 229 does not fit an event: refused rather than read past what a report may hold.
        var bytes: [UInt8] = [0x01, 0x00, 0x00, 0x00] + address.encoded + [0x01, 0x00, 0xFF, 0x7F, 0xC0, 0x00, 0x00, 0x00]
        bytes += BluetoothAddress.zero.encoded + [230] + [UInt8](repeating: 0, count: 230)
        #expect(decodeErrorCode(HCILEExtendedAdvertisingReportEvent.self, bytes) == .invalidValue)
    }
}
