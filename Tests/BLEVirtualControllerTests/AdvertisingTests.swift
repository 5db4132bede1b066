import BLEVirtualController
import BLEWire
import Foundation
import Testing

@Suite struct AdvertisingTests {
    @Test func passiveScanSeesReportWithGeometricRSSI() throws {
        let bench = Bench()
        let a = try bench.controller(at: 0, txPower: 4)
        let b = try bench.controller(at: 10)
        try bench.advertise(a, data: [2, 1, 6, 4, 9, 0x41, 0x42, 0x43], scanResponse: [3, 0xFF, 0xFF, 0xFF])
        try bench.scan(b, active: false)
        bench.advance(.milliseconds(500))
        let reports = bench.reports(try bench.drain(b))
        #expect(!reports.isEmpty)
        let first = try #require(reports.first)
        #expect(first.eventType == .advInd)
        #expect(first.address == a.address && first.addressType == .public)
        #expect(first.data == [2, 1, 6, 4, 9, 0x41, 0x42, 0x43])
        // 4 dBm − (40 dB + 20·log10(10 m)) = −56 dBm, no noise.
        #expect(reports.allSatisfy { $0.rssi == -56 })
        #expect(!reports.contains { $0.eventType == .scanResponse }, "passive scans send no scan requests")
    }

    @Test func activeScanGetsTheRealScanResponse() throws {
        let bench = Bench()
        let a = try bench.controller()
        let b = try bench.controller(at: 2)
        try bench.advertise(a, data: [2, 1, 6], scanResponse: [5, 0xFF, 0x4C, 0x00, 0x01, 0x02])
        try bench.scan(b, active: true)
        bench.advance(.milliseconds(300))
        let reports = bench.reports(try bench.drain(b))
        let responses = reports.filter { $0.eventType == .scanResponse }
        #expect(!responses.isEmpty)
        #expect(responses.allSatisfy { $0.data == [5, 0xFF, 0x4C, 0x00, 0x01, 0x02] && $0.address == a.address })
    }

    @Test func advertisingTypes() throws {
        let bench = Bench()
        let scanner = try bench.controller(at: 1)
        let nonconn = try bench.controller(at: 0)
        let scannable = try bench.controller(at: 0)
        try bench.advertise(nonconn, type: .nonConnectableUndirected, scanResponse: [2, 9, 0x58])
        try bench.advertise(scannable, type: .scannableUndirected, scanResponse: [2, 9, 0x59])
        try bench.scan(scanner, active: true)
        bench.advance(.milliseconds(400))
        let reports = bench.reports(try bench.drain(scanner))
        let fromNonconn = reports.filter { $0.address == nonconn.address }
        let fromScannable = reports.filter { $0.address == scannable.address }
        #expect(Set(fromNonconn.map(\.eventType)) == [.advNonconnInd], "non-scannable: no scan response")
        #expect(Set(fromScannable.map(\.eventType)) == [.advScanInd, .scanResponse])
        #expect(!HCILEAdvertisingReportEventType.advScanInd.isConnectable)
    }

    @Test func directedAdvertisingReachesOnlyItsTarget() throws {
        let bench = Bench()
        let advertiser = try bench.controller()
        let target = try bench.controller(at: 1)
        let bystander = try bench.controller(at: 1)
        try bench.advertise(advertiser, type: .connectableDirectedLowDuty, peer: target.address)
        try bench.scan(target, active: false)
        try bench.scan(bystander, active: false)
        bench.advance(.milliseconds(400))
        let seen = bench.reports(try bench.drain(target))
        #expect(!seen.isEmpty && seen.allSatisfy { $0.eventType == .advDirectInd && $0.data.isEmpty })
        #expect(bench.reports(try bench.drain(bystander)).isEmpty)
    }

    @Test func duplicateFiltering() throws {
        let bench = Bench()
        let a = try bench.controller()
        let b = try bench.controller(at: 1)
        let c = try bench.controller(at: 1)
        try bench.advertise(a, scanResponse: [2, 9, 0x41])
        try bench.scan(b, active: true, filterDuplicates: true)
        try bench.scan(c, active: true, filterDuplicates: false)
        bench.advance(.seconds(2))
        let filtered = bench.reports(try bench.drain(b))
        #expect(filtered.map(\.eventType) == [.advInd, .scanResponse], "one of each per device")
        #expect(bench.reports(try bench.drain(c)).count > 10)
        // Re-enabling the scan resets the filter.
        try bench.expectSuccess(b, HCILESetScanEnable(isEnabled: false))
        try bench.expectSuccess(b, HCILESetScanEnable(isEnabled: true, filterDuplicates: true))
        bench.advance(.seconds(1))
        #expect(bench.reports(try bench.drain(b)).count == 2)
    }

    @Test func advertisingIntervalIsHonoured() throws {
        let bench = Bench()
        let a = try bench.controller()
        let b = try bench.controller(at: 1)
        try bench.advertise(a, intervalUnits: 0x00A0)  // 100 ms + 0–10 ms delay → about 9 events per second
        try bench.scan(b, active: false)
        bench.advance(.seconds(10))
        let count = bench.reports(try bench.drain(b)).count
        #expect((87...96).contains(count), "\(count) reports in 10 s")
    }

    @Test func outOfRangeIsNotSeen() throws {
        let bench = Bench()
        let a = try bench.controller()
        // 0 dBm − (40 + 20·log10(d)) < −100 dBm beyond 1000 m.
        let far = try bench.controller(at: 2000)
        try bench.advertise(a)
        try bench.scan(far, active: true)
        bench.advance(.seconds(1))
        #expect(bench.reports(try bench.drain(far)).isEmpty)
        far.position = Position(x: 500)
        bench.advance(.seconds(1))
        #expect(!bench.reports(try bench.drain(far)).isEmpty)
    }

    @Test func noiseIsReproducibleForASeed() throws {
        func rssiSeries(seed: UInt64) throws -> [Int8] {
            let bench = Bench(seed: seed, radio: RadioModel(noiseSigma: 4))
            let a = try bench.controller()
            let b = try bench.controller(at: 5)
            try bench.advertise(a)
            try bench.scan(b, active: false)
            bench.advance(.seconds(2))
            return bench.reports(try bench.drain(b)).map(\.rssi)
        }
        let first = try rssiSeries(seed: 42)
        #expect(try rssiSeries(seed: 42) == first)
        #expect(try rssiSeries(seed: 43) != first)
        // Mean near −40 − 20·log10(5) ≈ −54 dBm, with spread.
        let mean = Double(first.map(Int.init).reduce(0, +)) / Double(first.count)
        #expect(abs(mean - (-54)) < 3)
        #expect(Set(first).count > 3)
    }
}
