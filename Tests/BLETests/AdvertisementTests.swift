import BLE
import BLEHost
import BLEProtocols
import BLEVirtualController
import Testing

/// `PeripheralManager.startAdvertising(_:)`: arbitrary data, a chosen interval, non-connectable, checked as a scanner
/// on the air sees it. Manual clock: time moves only when the test says, and the scanner reads exactly the reports
/// its controller sent (``VirtualController/advertisingReportCount``).
@Suite(.timeLimit(.minutes(1))) struct AdvertisementTests {
    /// Flags 0x06; manufacturer data 0xFFFF "beacon".
    let data = AdvertisingData(flags: .leOnlyGeneralDiscoverable,
                               manufacturerData: ManufacturerData(companyID: .testing, data: Array("beacon".utf8)))

    /// Advertises `advertisement` for `seconds` of simulated time and returns what a scanner listening all the time
    /// (window = interval) reported.
    func reports(_ advertisement: Advertisement, seconds: Int) async throws -> [AdvertisementReport] {
        let air = VirtualAir(clock: .manual, seed: 7)
        let manager = try await PeripheralManager(transport: air.addController().makeHostTransport())
        try await manager.startAdvertising(advertisement)
        let scannerController = air.addController(.init(position: Position(x: 2)))
        let scanner = HCIHost(transport: scannerController.makeHostTransport())
        try await scanner.powerOn()
        var options = HCIHost.ScanOptions(active: true)
        options.window = options.interval
        var stream = try await scanner.scan(options).makeAsyncIterator()
        air.advance(by: .seconds(seconds))
        var out: [AdvertisementReport] = []
        while out.count < scannerController.advertisingReportCount, let report = try await stream.next() { out.append(report) }
        await scanner.stopScan()
        return out
    }

    @Test func nonConnectableWithAChosenInterval() async throws {
        let seen = try await reports(Advertisement(data: data, interval: .milliseconds(200), kind: .nonConnectable), seconds: 10)
        // 10 s at 200 ms plus the 0–10 ms advertising delay: 48 to 50 events, each one ADV_NONCONN_IND and no scan
        // response although the scan is active.
        #expect((48...50).contains(seen.count), "\(seen.count) reports")
        #expect(seen.allSatisfy { $0.eventType == .advNonconnInd && !$0.isConnectable })
        #expect(seen.first?.rawData.hexString() == "020106 09ffffff626561636f6e".replacingOccurrences(of: " ", with: ""))
    }

    @Test func aLongerIntervalSendsFewerPackets() async throws {
        let seen = try await reports(Advertisement(data: data, interval: .seconds(1)), seconds: 10)
        #expect((9...10).contains(seen.count), "\(seen.count) reports")
    }

    @Test func scannableSendsItsScanResponse() async throws {
        let response = AdvertisingData(localName: "Scannable")
        let seen = try await reports(Advertisement(data: data, scanResponse: response, interval: .milliseconds(500), kind: .scannable), seconds: 2)
        #expect(seen.contains { $0.eventType == .advScanInd })
        #expect(seen.contains { $0.isScanResponse && $0.data.localName == "Scannable" })
    }

    @Test func intervalUnitsAndLimits() async throws {
        #expect(Advertisement(data: data, interval: .milliseconds(100)).intervalUnits == 0x00A0)
        #expect(Advertisement(data: data, interval: .milliseconds(20)).intervalUnits == 0x0020)
        #expect(Advertisement(data: data, interval: .milliseconds(10_240)).intervalUnits == 0x4000)
        #expect(Advertisement(data: data, interval: .milliseconds(19)).intervalUnits == nil)
        let air = VirtualAir(clock: .manual)
        let manager = try await PeripheralManager(transport: air.addController().makeHostTransport())
        await #expect(throws: HostError.self) {
            try await manager.startAdvertising(Advertisement(data: self.data, interval: .seconds(11)))
        }
        let tooLong = AdvertisingData(structures: [ADStructure(type: .manufacturerSpecificData, data: Array(repeating: 0x41, count: 30))])
        await #expect(throws: WireError.self) { try await manager.startAdvertising(Advertisement(data: tooLong)) }
    }
}
