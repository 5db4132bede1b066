import BLE
import BLEVirtualController
import BLEWire
import Foundation
import Synchronization
import Testing

/// A scanner among many advertisers: what it remembers stays within its limit, every device is still discovered,
/// duplicates and scan responses behave as before for the devices it remembers.
@Suite(.timeLimit(.minutes(10))) struct ScannerLoadTests {
    static func report(_ n: UInt64, _ data: AdvertisingData, scanResponse: Bool = false) -> AdvertisementReport {
        AdvertisementReport(address: LEAddress(BluetoothAddress(0xC000_0000_0000 | n), type: .random), rssi: -50,
                            eventType: scanResponse ? .scanResponse : .advInd, data: data, rawData: data.encoded)
    }

    @Test func theTrackerReportsOncePerChangeAndMergesScanResponses() {
        var tracker = ScanTracker()
        let ad = AdvertisingData(flags: .leOnlyGeneralDiscoverable, localName: "A")
        #expect(tracker.receive(Self.report(1, ad))?.name == "A")
        #expect(tracker.receive(Self.report(1, ad)) == nil)
        let response = AdvertisingData(serviceUUIDs: [0x180D])
        let merged = tracker.receive(Self.report(1, response, scanResponse: true))
        #expect(merged?.name == "A" && merged?.serviceUUIDs == [0x180D] && merged?.isConnectable == true)
        #expect(tracker.receive(Self.report(1, ad)) == nil)
        var everything = ScanTracker(allowDuplicates: true)
        #expect(everything.receive(Self.report(1, ad)) != nil && everything.receive(Self.report(1, ad)) != nil)
    }

    /// An extended scan response without ADI (SID 0xFF, as RootCanal sends AUX_SCAN_RSP) merges with the
    /// advertisement of the set just heard from that address, and the discovery keeps that set's SID.
    @Test func anExtendedScanResponseWithoutSIDJoinsTheSetJustHeard() {
        let address = LEAddress(BluetoothAddress(0xC000_0000_0042), type: .random)
        func extended(_ type: HCILEAdvertisingReportEventType, sid: UInt8?, _ data: AdvertisingData) -> AdvertisementReport {
            var report = AdvertisementReport(address: address, rssi: -40, eventType: type, data: data, rawData: data.encoded)
            report.isLegacy = false
            report.advertisingSID = sid
            report.isScannable = true
            return report
        }
        var tracker = ScanTracker()
        let first = tracker.receive(extended(.advScanInd, sid: 3, AdvertisingData()))
        #expect(first?.advertisingSID == 3 && first?.advertisementData == AdvertisingData())
        let response = AdvertisingData(localName: "scannable")
        let merged = tracker.receive(extended(.scanResponse, sid: nil, response))
        #expect(merged?.name == "scannable")
        #expect(merged?.advertisingSID == 3 && merged?.isScannable == true)
        #expect(tracker.count == 1)
        // Another set of the same device: its response joins it, not set 3.
        _ = tracker.receive(extended(.advScanInd, sid: 5, AdvertisingData()))
        let other = tracker.receive(extended(.scanResponse, sid: nil, AdvertisingData(localName: "other")))
        #expect(other?.advertisingSID == 5 && other?.name == "other")
        #expect(tracker.count == 2)
    }

    /// Ten thousand devices through a tracker of 1,024: never more than 1,024 remembered, each first sighting
    /// reported, a forgotten device reported again, a remembered one not.
    @Test func theTrackerStaysWithinItsLimit() {
        var tracker = ScanTracker(limit: 1024)
        var reported = 0
        for n in 0..<10_000 {
            if tracker.receive(Self.report(UInt64(n), AdvertisingData(localName: "d\(n)"))) != nil { reported += 1 }
            #expect(tracker.count <= 1024)
            // The most recent device heard again is remembered: no second report.
            if n % 1000 == 999 { #expect(tracker.receive(Self.report(UInt64(n), AdvertisingData(localName: "d\(n)"))) == nil) }
        }
        #expect(reported == 10_000)
        #expect(tracker.forgotten >= 10_000 - 1024)
        // The first device was forgotten long ago: heard again, it is reported again.
        #expect(tracker.receive(Self.report(0, AdvertisingData(localName: "d0"))) != nil)
    }

    /// Advertisers on the virtual air (300 in CI; `SWIFT_BLE_SOAK_ADVERTISERS=10000` for the full load), each
    /// advertising every second, and one central scanning (a 50% duty cycle: an advertisement falls in its window
    /// about every other time) with a tracking limit of 128: every advertiser is discovered, though the scan
    /// remembers few of them at a time.
    @Test func aScannerAmongThousandsOfAdvertisersFindsThemAll() async throws {
        let environment = ProcessInfo.processInfo.environment
        let count = Int(environment["SWIFT_BLE_SOAK_ADVERTISERS"] ?? "") ?? 300
        // The advertising interval, in 0.625 ms units (20 ms to 10.24 s): 1 s unless SWIFT_BLE_SOAK_ADVERTISING_MS says.
        let units = UInt16(clamping: max(0x20, min(0x4000, (Int(environment["SWIFT_BLE_SOAK_ADVERTISING_MS"] ?? "") ?? 1000) * 8 / 5)))
        let air = VirtualAir(clock: .realTime, seed: 77)
        defer { air.shutdown() }
        for n in 0..<count {
            let c = air.addController(.init(position: Position(x: 1 + Double(n % 50) * 0.2, y: Double(n / 50) * 0.2)), buffered: true)
            c.receive(fromHost: .command(HCILESetAdvertisingParameters(intervalMin: units, intervalMax: units,
                                                                       advertisingType: .nonConnectableUndirected).packet))
            c.receive(fromHost: .command(HCILESetAdvertisingData(data: AdvertisingData(localName: "n\(n)").encoded).packet))
            c.receive(fromHost: .command(HCILESetAdvertisingEnable(isEnabled: true).packet))
            _ = c.drainToHost()
        }
        let adapter = try await Adapter(transport: air.addController(.init()).makeHostTransport())
        let central = Central(adapter: adapter)
        let startRSS = LoadTests.residentKB()
        var seen = Set<BluetoothAddress>()
        let clock = ContinuousClock()
        let start = clock.now
        for try await device in try await central.scan(active: false, timeout: .milliseconds(Int(units) * 5 / 8 * 40 + 30_000), trackingLimit: 128) {
            seen.insert(device.address.address)
            if seen.count == count { break }
        }
        let elapsed = clock.now - start
        print("SCANNER advertisers=\(count) interval_ms=\(Int(units) * 5 / 8) discovered=\(seen.count) seconds=\(elapsed) rss_start_kB=\(startRSS) rss_end_kB=\(LoadTests.residentKB())")
        #expect(seen.count == count)
        await central.stopScan()
    }
}
