import BLEProtocols
import BLEWire
import Testing

/// Extended advertising reports split by the controller, put back together. Core 5.4, Vol 4, Part E, 7.7.65.13.
@Suite struct ExtendedReportAssemblerTests {
    static let a = BluetoothAddress(0x0000_0000_00A1)
    static let b = BluetoothAddress(0x0000_0000_00B2)

    static func part(_ address: BluetoothAddress = a, sid: UInt8 = 1, status: UInt8, _ data: [UInt8],
                     type: HCILEExtendedAdvertisingEventType = []) -> HCILEExtendedAdvertisingReportEvent.Report {
        .init(eventType: type.with(dataStatus: status), addressType: .public, address: address, primaryPHY: 3, secondaryPHY: 3,
              advertisingSID: sid, rssi: -40, data: data)
    }

    @Test func partsFromSeveralAdvertisersAndSetsAreJoinedSeparately() {
        var assembler = ExtendedReportAssembler()
        #expect(assembler.receive(Self.part(status: 1, [1, 2])) == nil)
        #expect(assembler.receive(Self.part(Self.b, status: 1, [9])) == nil)
        #expect(assembler.receive(Self.part(sid: 2, status: 0, [7])).map(\.report.data) == [7])
        #expect(assembler.receive(Self.part(status: 1, [3])) == nil)
        let whole = assembler.receive(Self.part(status: 0, [4]))
        #expect(whole?.report.data == [1, 2, 3, 4] && whole?.isTruncated == false)
        #expect(whole?.report.eventType.dataStatus == 0 && whole?.report.primaryPHY == 3)
        let other = assembler.receive(Self.part(Self.b, status: 2, [8]))
        #expect(other?.report.data == [9, 8] && other?.isTruncated == true)
        #expect(assembler.pendingCount == 0)
    }

    @Test func legacyPDUsAreAlwaysWholeAndScanResponsesAreKeptApart() {
        var assembler = ExtendedReportAssembler()
        let legacy = Self.part(status: 0, [2, 1, 6], type: [.legacy, .connectable, .scannable])
        #expect(assembler.receive(legacy)?.report == legacy)
        #expect(assembler.receive(Self.part(status: 1, [1])) == nil)
        #expect(assembler.receive(Self.part(status: 0, [5], type: [.scannable, .scanResponse]))?.report.data == [5])
        #expect(assembler.receive(Self.part(status: 0, [2]))?.report.data == [1, 2])
    }

    @Test func itStaysBoundedWhatEverTheControllerSends() {
        var assembler = ExtendedReportAssembler(maximumPending: 4, maximumLength: 100)
        // Beyond the maximum length: handed out truncated at the maximum.
        #expect(assembler.receive(Self.part(status: 1, [UInt8](repeating: 1, count: 60))) == nil)
        let cut = assembler.receive(Self.part(status: 1, [UInt8](repeating: 2, count: 60)))
        #expect(cut?.isTruncated == true && cut?.report.data.count == 100)
        // Many advertisers never finishing: at most four pending.
        for i in 0..<50 {
            _ = assembler.receive(Self.part(BluetoothAddress(UInt64(0x100 + i)), status: 1, [UInt8(truncatingIfNeeded: i)]))
        }
        #expect(assembler.pendingCount == 4)
        // A reserved data status (3) ends the advertisement as truncated.
        _ = assembler.receive(Self.part(status: 1, [1]))
        #expect(assembler.receive(Self.part(status: 3, [2]))?.isTruncated == true)
        assembler.reset()
        #expect(assembler.pendingCount == 0)
    }
}
