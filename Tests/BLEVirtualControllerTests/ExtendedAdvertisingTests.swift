import BLEVirtualController
import BLEWire
import Testing

/// Extended advertising, scanning and connection creation on the virtual controller, in raw HCI on a manual clock.
/// Core 5.4, Vol 4, Part E, 7.8.52–7.8.66 and 3.1.1.
@Suite struct ExtendedAdvertisingTests {
    /// Creates set `handle` on `c` with `properties` on `primary`, gives it `data` (in fragments when long) and
    /// `scanResponse`, and enables it.
    func advertiseSet(_ bench: Bench, _ c: VirtualController, handle: UInt8 = 0,
                      properties: HCILEAdvertisingEventProperties, primary: LEPHY = .le1M, secondary: LEPHY = .le1M,
                      sid: UInt8 = 0, data: [UInt8] = [], scanResponse: [UInt8] = []) throws {
        try bench.expectSuccess(c, HCILESetExtendedAdvertisingParameters(handle: handle, properties: properties, intervalMin: 0xA0,
                                                                         intervalMax: 0xA0, primaryPHY: primary,
                                                                         secondaryPHY: secondary, sid: sid))
        for (operation, fragment) in HCILEAdvertisingDataOperation.fragments(of: data) {
            try bench.expectSuccess(c, HCILESetExtendedAdvertisingData(handle: handle, operation: operation, data: fragment))
        }
        if !scanResponse.isEmpty {
            for (operation, fragment) in HCILEAdvertisingDataOperation.fragments(of: scanResponse) {
                try bench.expectSuccess(c, HCILESetExtendedScanResponseData(handle: handle, operation: operation, data: fragment))
            }
        }
        try bench.expectSuccess(c, HCILESetExtendedAdvertisingEnable(isEnabled: true, sets: [.init(handle: handle)]))
    }

    func extendedScan(_ bench: Bench, _ c: VirtualController, phys: LEPHYs, active: Bool = false) throws {
        let p = HCILESetExtendedScanParameters.PHYParameters(scanType: active ? .active : .passive, interval: 0x10, window: 0x10)
        try bench.expectSuccess(c, HCILESetExtendedScanParameters(le1M: phys.contains(.le1M) ? p : nil,
                                                                  leCoded: phys.contains(.leCoded) ? p : nil))
        try bench.expectSuccess(c, HCILESetExtendedScanEnable(isEnabled: true))
    }

    func extendedReports(_ events: [HCIEvent]) -> [HCILEExtendedAdvertisingReportEvent.Report] {
        events.flatMap { event -> [HCILEExtendedAdvertisingReportEvent.Report] in
            if case .le(.extendedAdvertisingReport(let e)) = event { e.reports } else { [] }
        }
    }

    static func bytes(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) } }

    @Test func theFullProfileListsTheExtendedCommandsAndTheCore41OneAnswersUnknownCommand() throws {
        let bench = Bench()
        let full = try bench.controller()
        let old = try bench.controller(at: 1, profile: .bluetooth41)
        let listed = try bench.call(full, HCIReadLocalSupportedCommands()).supportedCommands
        let oldListed = try bench.call(old, HCIReadLocalSupportedCommands()).supportedCommands
        for opcode in [HCIOpcode.leSetExtendedAdvertisingParameters, .leSetExtendedAdvertisingData, .leSetExtendedScanResponseData,
                       .leSetExtendedAdvertisingEnable, .leSetAdvertisingSetRandomAddress, .leReadMaximumAdvertisingDataLength,
                       .leReadNumberOfSupportedAdvertisingSets, .leRemoveAdvertisingSet, .leClearAdvertisingSets,
                       .leSetExtendedScanParameters, .leSetExtendedScanEnable, .leExtendedCreateConnection] {
            #expect(listed.contains(opcode), "\(opcode)")
            #expect(!oldListed.contains(opcode), "\(opcode)")
        }
        #expect(try bench.call(full, HCILEReadLocalSupportedFeatures()).features.contains(.extendedAdvertising))
        #expect(!(try bench.call(old, HCILEReadLocalSupportedFeatures()).features.contains(.extendedAdvertising)))
        #expect(try bench.call(full, HCILEReadMaximumAdvertisingDataLength()).maximumLength == 1650)
        #expect(try bench.call(full, HCILEReadNumberOfSupportedAdvertisingSets()).count >= 4)
        #expect(bench.status(of: .leSetExtendedScanEnable, in: try bench.send(old, HCILESetExtendedScanEnable(isEnabled: true))) == .unknownCommand)
    }

    @Test func legacyAndExtendedCommandsDoNotMixUntilReset() throws {
        let bench = Bench()
        let c = try bench.controller()
        try bench.expectSuccess(c, HCILESetScanParameters())
        // Vol 4, Part E, 3.1.1: after a legacy advertising command, an extended one is Command Disallowed...
        #expect(bench.status(of: .leSetExtendedScanParameters, in: try bench.send(c, HCILESetExtendedScanParameters())) == .commandDisallowed)
        #expect(bench.status(of: .leExtendedCreateConnection,
                             in: try bench.send(c, HCILEExtendedCreateConnection(peerAddressType: .public, peerAddress: .zero))) == .commandDisallowed)
        // ...until reset; then the other way round.
        try bench.expectSuccess(c, HCIReset())
        try bench.expectSuccess(c, HCILEReadNumberOfSupportedAdvertisingSets())
        #expect(bench.status(of: .leSetAdvertisingParameters, in: try bench.send(c, HCILESetAdvertisingParameters())) == .commandDisallowed)
        #expect(bench.status(of: .leCreateConnection,
                             in: try bench.send(c, HCILECreateConnection(peerAddressType: .public, peerAddress: .zero))) == .commandDisallowed)
        // Commands in neither list stay available.
        try bench.expectSuccess(c, HCILESetRandomAddress(address: try BluetoothAddress(bytes: [1, 2, 3, 4, 5, 0xC6])))
    }

    @Test func dataUpToTheMaximumArrivesInFragmentsAndNoMore() throws {
        let bench = Bench()
        let c = try bench.controller()
        try bench.expectSuccess(c, HCILESetExtendedAdvertisingParameters(handle: 1, properties: []))
        let fragments = HCILEAdvertisingDataOperation.fragments(of: Self.bytes(1650))
        #expect(fragments.map(\.0) == [.first, .intermediate, .intermediate, .intermediate, .intermediate, .intermediate, .last])
        for (operation, fragment) in fragments {
            try bench.expectSuccess(c, HCILESetExtendedAdvertisingData(handle: 1, operation: operation, data: fragment))
        }
        // One octet more: Memory Capacity Exceeded.
        try bench.expectSuccess(c, HCILESetExtendedAdvertisingData(handle: 1, operation: .first, data: Self.bytes(251)))
        for _ in 0..<5 { try bench.expectSuccess(c, HCILESetExtendedAdvertisingData(handle: 1, operation: .intermediate, data: Self.bytes(251))) }
        #expect(bench.status(of: .leSetExtendedAdvertisingData,
                             in: try bench.send(c, HCILESetExtendedAdvertisingData(handle: 1, operation: .last, data: Self.bytes(145)))) == .memoryCapacityExceeded)
        // An intermediate fragment with no first one; a set that does not exist; legacy PDUs with 32 octets.
        #expect(bench.status(of: .leSetExtendedAdvertisingData,
                             in: try bench.send(c, HCILESetExtendedAdvertisingData(handle: 1, operation: .intermediate, data: [1]))) == .invalidCommandParameters)
        #expect(bench.status(of: .leSetExtendedAdvertisingData,
                             in: try bench.send(c, HCILESetExtendedAdvertisingData(handle: 9, data: [1]))) == .unknownAdvertisingIdentifier)
        try bench.expectSuccess(c, HCILESetExtendedAdvertisingParameters(handle: 2, properties: .legacyNonConnectable))
        #expect(bench.status(of: .leSetExtendedAdvertisingData,
                             in: try bench.send(c, HCILESetExtendedAdvertisingData(handle: 2, data: Self.bytes(32)))) == .invalidCommandParameters)
        // Scannable extended advertising carries no advertising data, and cannot start without a scan response.
        try bench.expectSuccess(c, HCILESetExtendedAdvertisingParameters(handle: 3, properties: .scannable))
        #expect(bench.status(of: .leSetExtendedAdvertisingData,
                             in: try bench.send(c, HCILESetExtendedAdvertisingData(handle: 3, data: [2, 1, 6]))) == .invalidCommandParameters)
        #expect(bench.status(of: .leSetExtendedAdvertisingEnable,
                             in: try bench.send(c, HCILESetExtendedAdvertisingEnable(isEnabled: true, sets: [.init(handle: 3)]))) == .commandDisallowed)
        // Connectable extended advertising sends its data in one AUX_ADV_IND: 245 octets at most without TxPower or
        // TargetA (Core 5.4, Vol 6, Part B, 2.3.4); more cannot be enabled (Vol 4, Part E, 7.8.56), nor set while
        // enabled (Packet Too Long, 7.8.54).
        try bench.expectSuccess(c, HCILESetExtendedAdvertisingParameters(handle: 5, properties: .connectable))
        try bench.expectSuccess(c, HCILESetExtendedAdvertisingData(handle: 5, data: Self.bytes(246)))
        #expect(bench.status(of: .leSetExtendedAdvertisingEnable,
                             in: try bench.send(c, HCILESetExtendedAdvertisingEnable(isEnabled: true, sets: [.init(handle: 5)]))) == .invalidCommandParameters)
        try bench.expectSuccess(c, HCILESetExtendedAdvertisingData(handle: 5, data: Self.bytes(245)))
        try bench.expectSuccess(c, HCILESetExtendedAdvertisingEnable(isEnabled: true, sets: [.init(handle: 5)]))
        #expect(bench.status(of: .leSetExtendedAdvertisingData,
                             in: try bench.send(c, HCILESetExtendedAdvertisingData(handle: 5, data: Self.bytes(246)))) == .packetTooLong)
        // Connectable and scannable at once is not an extended PDU.
        #expect(bench.status(of: .leSetExtendedAdvertisingParameters,
                             in: try bench.send(c, HCILESetExtendedAdvertisingParameters(handle: 4, properties: [.connectable, .scannable]))) == .invalidCommandParameters)
    }

    @Test func eachPrimaryPHYReachesOnlyScannersOfThatPHYAndLongDataComesInParts() throws {
        let bench = Bench()
        let advertiser1M = try bench.controller()
        let advertiserCoded = try bench.controller(at: 1)
        let scanner1M = try bench.controller(at: 2)
        let scannerCoded = try bench.controller(at: 3)
        let scannerBoth = try bench.controller(at: 4)
        let legacyScanner = try bench.controller(at: 5)
        let long = Self.bytes(1000)
        try advertiseSet(bench, advertiser1M, properties: [], sid: 3, data: long)
        try advertiseSet(bench, advertiserCoded, properties: [], primary: .leCoded, secondary: .leCoded, sid: 5, data: [2, 1, 6])
        try extendedScan(bench, scanner1M, phys: .le1M)
        try extendedScan(bench, scannerCoded, phys: .leCoded)
        try extendedScan(bench, scannerBoth, phys: [.le1M, .leCoded])
        try bench.scan(legacyScanner, active: false)
        bench.advance(.milliseconds(150))

        let on1M = extendedReports(try bench.drain(scanner1M))
        let onCoded = extendedReports(try bench.drain(scannerCoded))
        let onBoth = extendedReports(try bench.drain(scannerBoth))
        #expect(Set(on1M.map(\.address)) == [advertiser1M.address])
        #expect(Set(onCoded.map(\.address)) == [advertiserCoded.address])
        #expect(Set(onBoth.map(\.address)) == [advertiser1M.address, advertiserCoded.address])
        #expect(onCoded.allSatisfy { $0.primaryPHY == 3 && $0.secondaryPHY == 3 && $0.advertisingSID == 5 && !$0.eventType.contains(.legacy) })
        // ADV_EXT_IND means nothing to a legacy scan.
        #expect(bench.reports(try bench.drain(legacyScanner)).isEmpty)

        // 1000 octets: 229-octet parts, "more to come" on all but the last of each advertising event.
        let first = Array(on1M.prefix(5))
        #expect(first.map { $0.data.count } == [229, 229, 229, 229, 84])
        #expect(first.map(\.eventType.dataStatus) == [1, 1, 1, 1, 0])
        #expect(first.flatMap(\.data) == long)
        #expect(first.allSatisfy { $0.primaryPHY == 1 && $0.advertisingSID == 3 })
    }

    @Test func legacyPDUsFromASetReachBothKindsOfScanners() throws {
        let bench = Bench()
        let advertiser = try bench.controller()
        let extendedScanner = try bench.controller(at: 1)
        let legacyScanner = try bench.controller(at: 2)
        try advertiseSet(bench, advertiser, properties: .legacyConnectableScannable, data: [2, 1, 6], scanResponse: [3, 9, 0x41, 0x42])
        try extendedScan(bench, extendedScanner, phys: .le1M, active: true)
        try bench.scan(legacyScanner, active: true)
        bench.advance(.milliseconds(50))
        let extended = extendedReports(try bench.drain(extendedScanner))
        // ADV_IND as 0b0010011, its SCAN_RSP as 0b0011011. Core 5.4, Vol 4, Part E, 7.7.65.13.
        #expect(extended.contains { $0.eventType.rawValue == 0b0010011 && $0.data == [2, 1, 6] })
        #expect(extended.contains { $0.eventType.rawValue == 0b0011011 && $0.data == [3, 9, 0x41, 0x42] })
        let legacy = bench.reports(try bench.drain(legacyScanner))
        #expect(legacy.contains { $0.eventType == .advInd && $0.data == [2, 1, 6] })
        #expect(legacy.contains { $0.eventType == .scanResponse })
    }

    @Test func anExtendedCreateConnectionOnCodedEndsOnlyThatSet() throws {
        let bench = Bench()
        let peripheral = try bench.controller()
        let central = try bench.controller(at: 1)
        try advertiseSet(bench, peripheral, handle: 0, properties: .connectable, primary: .leCoded, secondary: .leCoded, data: [2, 1, 6])
        try advertiseSet(bench, peripheral, handle: 1, properties: [], data: [2, 1, 4])
        // Initiating on LE 1M only does not reach the Coded advertiser.
        try bench.expectSuccess(central, HCILEExtendedCreateConnection(peerAddressType: .public, peerAddress: peripheral.address))
        bench.advance(.milliseconds(300))
        #expect(bench.connectionCompletes(try bench.drain(central)).isEmpty)
        try bench.expectSuccess(central, HCILECreateConnectionCancel())
        _ = try bench.drain(central)
        try bench.expectSuccess(central, HCILEExtendedCreateConnection(peerAddressType: .public, peerAddress: peripheral.address,
                                                                        le1M: .init(), leCoded: .init(connectionIntervalMin: 0x30, connectionIntervalMax: 0x30)))
        bench.advance(.milliseconds(300))
        let centralEvents = try bench.drain(central)
        let peripheralEvents = try bench.drain(peripheral)
        let complete = try #require(bench.connectionCompletes(centralEvents).first)
        #expect(complete.status == .success && complete.connectionInterval == 0x30)
        let peripheralComplete = try #require(bench.connectionCompletes(peripheralEvents).first)
        let terminated = peripheralEvents.compactMap { if case .le(.advertisingSetTerminated(let e)) = $0 { e } else { nil } }
        #expect(terminated.count == 1)
        #expect(terminated.first?.status == .success && terminated.first?.handle == 0
                && terminated.first?.connectionHandle == peripheralComplete.handle)
        // Connection Complete comes before Advertising Set Terminated.
        let order = peripheralEvents.compactMap { event -> Int? in
            switch event {
            case .le(.connectionComplete): 0
            case .le(.advertisingSetTerminated): 1
            default: nil
            }
        }
        #expect(order == [0, 1])
        #expect(peripheral.enabledAdvertisingSets == [1])
        // The link is on LE Coded both ways.
        let phy = try bench.call(central, HCILEReadPHY(handle: complete.handle))
        #expect(phy.txPHY == .leCoded && phy.rxPHY == .leCoded)
    }

    @Test func setsAreLimitedAndRemovable() throws {
        let bench = Bench()
        let c = try bench.controller()
        let count = try bench.call(c, HCILEReadNumberOfSupportedAdvertisingSets()).count
        for handle in 0..<count { try bench.expectSuccess(c, HCILESetExtendedAdvertisingParameters(handle: handle, properties: [])) }
        #expect(bench.status(of: .leSetExtendedAdvertisingParameters,
                             in: try bench.send(c, HCILESetExtendedAdvertisingParameters(handle: count, properties: []))) == .memoryCapacityExceeded)
        try bench.expectSuccess(c, HCILESetExtendedAdvertisingEnable(isEnabled: true, sets: [.init(handle: 0)]))
        #expect(bench.status(of: .leRemoveAdvertisingSet, in: try bench.send(c, HCILERemoveAdvertisingSet(handle: 0))) == .commandDisallowed)
        #expect(bench.status(of: .leClearAdvertisingSets, in: try bench.send(c, HCILEClearAdvertisingSets())) == .commandDisallowed)
        try bench.expectSuccess(c, HCILESetExtendedAdvertisingEnable(isEnabled: false, sets: []))
        try bench.expectSuccess(c, HCILERemoveAdvertisingSet(handle: 0))
        #expect(bench.status(of: .leRemoveAdvertisingSet, in: try bench.send(c, HCILERemoveAdvertisingSet(handle: 0))) == .unknownAdvertisingIdentifier)
        try bench.expectSuccess(c, HCILEClearAdvertisingSets())
        // A random own address needs the set's random address before the set starts.
        try bench.expectSuccess(c, HCILESetExtendedAdvertisingParameters(handle: 0, properties: [], ownAddressType: .random))
        #expect(bench.status(of: .leSetExtendedAdvertisingEnable,
                             in: try bench.send(c, HCILESetExtendedAdvertisingEnable(isEnabled: true, sets: [.init(handle: 0)]))) == .invalidCommandParameters)
        try bench.expectSuccess(c, HCILESetAdvertisingSetRandomAddress(handle: 0, address: try BluetoothAddress(bytes: [6, 5, 4, 3, 2, 0xC1])))
        try bench.expectSuccess(c, HCILESetExtendedAdvertisingEnable(isEnabled: true, sets: [.init(handle: 0)]))
    }

    @Test func aSetWithAnEventLimitAndAScanWithADurationEndByThemselves() throws {
        let bench = Bench()
        let advertiser = try bench.controller()
        let scanner = try bench.controller(at: 1)
        try bench.expectSuccess(advertiser, HCILESetExtendedAdvertisingParameters(handle: 2, properties: []))
        try bench.expectSuccess(advertiser, HCILESetExtendedAdvertisingEnable(isEnabled: true, sets: [.init(handle: 2, maxEvents: 3)]))
        try bench.expectSuccess(scanner, HCILESetExtendedScanParameters(le1M: .init(scanType: .passive, interval: 0x10, window: 0x10)))
        try bench.expectSuccess(scanner, HCILESetExtendedScanEnable(isEnabled: true, duration: 50))   // 500 ms
        bench.advance(.seconds(1))
        let terminated = try bench.drain(advertiser).compactMap { if case .le(.advertisingSetTerminated(let e)) = $0 { e } else { nil } }
        #expect(terminated == [HCILEAdvertisingSetTerminatedEvent(status: .limitReached, handle: 2, connectionHandle: 0, completedEvents: 3)])
        let scannerEvents = try bench.drain(scanner)
        #expect(extendedReports(scannerEvents).count == 3)
        #expect(scannerEvents.contains { if case .le(.scanTimeout) = $0 { true } else { false } })
        #expect(!scanner.isScanning)
    }
}
