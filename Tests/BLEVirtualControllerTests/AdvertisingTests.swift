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

    @Test func aScanWindowShorterThanTheIntervalHearsAShareOfTheEvents() throws {
        let bench = Bench()
        let a = try bench.controller()
        let full = try bench.controller(at: 1)
        let quarter = try bench.controller(at: 1)
        try bench.advertise(a, intervalUnits: 0x00A0)
        try bench.scan(full, active: false)
        try bench.expectSuccess(quarter, HCILESetScanParameters(scanType: .passive, interval: 0x40, window: 0x10))
        try bench.expectSuccess(quarter, HCILESetScanEnable(isEnabled: true, filterDuplicates: false))
        bench.advance(.seconds(20))
        let all = bench.reports(try bench.drain(full)).count
        let some = bench.reports(try bench.drain(quarter)).count
        // Each advertising event is heard with probability window / interval = 1/4.
        #expect((174...192).contains(all))
        #expect(Double(some) > 0.15 * Double(all) && Double(some) < 0.35 * Double(all), "\(some) of \(all)")
    }

    @Test func advertisingWithTheRandomAddress() throws {
        let bench = Bench()
        let a = try bench.controller()
        let b = try bench.controller(at: 1)
        let random = BluetoothAddress(0xC1C2_C3C4_C5C6)
        try bench.expectSuccess(a, HCILESetRandomAddress(address: random))
        try bench.advertise(a, ownAddressType: .random)
        try bench.scan(b, active: false)
        bench.advance(.milliseconds(300))
        let reports = bench.reports(try bench.drain(b))
        #expect(!reports.isEmpty && reports.allSatisfy { $0.address == random && $0.addressType == .random })
        // The random address cannot change while it is on the air.
        #expect(try bench.call(a, HCILESetRandomAddress(address: BluetoothAddress(0xC0_0000_0001))).status == .commandDisallowed)
    }

    @Test func randomAddressChangesOnlyWhileAdvertisingScanningAndInitiatingAreOff() throws {
        // Core 5.4, Vol 4, Part E, 7.8.4: Command Disallowed while legacy advertising, scanning or initiating is
        // enabled, even with the public address as own address.
        let bench = Bench()
        let a = try bench.controller()
        let random = BluetoothAddress(0x4A4B_4C4D_4E4F)
        try bench.advertise(a, ownAddressType: .public)
        #expect(try bench.call(a, HCILESetRandomAddress(address: random)).status == .commandDisallowed)
        try bench.expectSuccess(a, HCILESetAdvertisingEnable(isEnabled: false))
        try bench.scan(a, active: true)
        #expect(try bench.call(a, HCILESetRandomAddress(address: random)).status == .commandDisallowed)
        try bench.expectSuccess(a, HCILESetScanEnable(isEnabled: false, filterDuplicates: false))
        _ = try bench.send(a, HCILECreateConnection(peerAddressType: .public, peerAddress: BluetoothAddress(0x00AB_CDEF_0002)))
        #expect(try bench.call(a, HCILESetRandomAddress(address: random)).status == .commandDisallowed)
        _ = try bench.send(a, HCILECreateConnectionCancel())
        // All off: the address changes, and the next advertising uses it.
        try bench.expectSuccess(a, HCILESetRandomAddress(address: random))
        let b = try bench.controller(at: 1)
        try bench.advertise(a, ownAddressType: .random)
        try bench.scan(b, active: false)
        bench.advance(.milliseconds(300))
        let reports = bench.reports(try bench.drain(b))
        #expect(!reports.isEmpty && reports.allSatisfy { $0.address == random && $0.addressType == .random })
    }

    @Test func highDutyCycleDirectedAdvertisingTimesOut() throws {
        let bench = Bench()
        let a = try bench.controller()
        let absent = BluetoothAddress(0x00AB_CDEF_0001)
        try bench.advertise(a, type: .connectableDirectedHighDuty, peer: absent)
        bench.advance(.milliseconds(1270))
        #expect(try bench.drain(a).isEmpty)
        #expect(a.isAdvertising)
        bench.advance(.milliseconds(20))
        // Core 5.4, Vol 4, Part E, 7.8.9: after 1.28 s, LE Connection Complete with Advertising Timeout.
        let complete = bench.connectionCompletes(try bench.drain(a))
        #expect(complete.map(\.status) == [.advertisingTimeout])
        #expect(complete.first?.role == .peripheral && complete.first?.peerAddress == absent)
        #expect(!a.isAdvertising)
    }

    @Test func resetStopsAdvertisingAndANewStartDoesNotDoubleIt() throws {
        let bench = Bench()
        let a = try bench.controller()
        let b = try bench.controller(at: 1)
        try bench.advertise(a, intervalUnits: 0x00A0)
        try bench.scan(b, active: false)
        bench.advance(.seconds(1))
        #expect(!bench.reports(try bench.drain(b)).isEmpty)
        try bench.expectSuccess(a, HCIReset())
        #expect(!a.isAdvertising)
        bench.advance(.seconds(1))
        #expect(bench.reports(try bench.drain(b)).isEmpty, "Reset stops advertising")
        // Advertise, then reset and start again at once, while the old advertising event is still scheduled.
        try bench.advertise(a, intervalUnits: 0x00A0)
        bench.advance(.milliseconds(50))
        try bench.expectSuccess(a, HCIReset())
        try bench.advertise(a, intervalUnits: 0x00A0)
        _ = try bench.drain(b)
        bench.advance(.seconds(10))
        let count = bench.reports(try bench.drain(b)).count
        #expect((87...96).contains(count), "one advertising chain, not two: \(count) reports in 10 s")
    }

    @Test func aRemovedControllerStopsAdvertisingAndIgnoresItsHost() throws {
        let bench = Bench()
        let a = try bench.controller()
        let b = try bench.controller(at: 1)
        try bench.advertise(a)
        try bench.scan(b, active: false)
        bench.advance(.milliseconds(300))
        #expect(!bench.reports(try bench.drain(b)).isEmpty)
        a.remove()
        #expect(!a.isAdvertising)
        bench.advance(.seconds(1))
        #expect(bench.reports(try bench.drain(b)).isEmpty)
        a.receive(fromHost: .command(HCIReset().packet))
        #expect(a.drainToHost().isEmpty)
    }

    @Test func duplicateFilteringKeysOnAddressAndEventTypeNotOnData() throws {
        let bench = Bench()
        let a = try bench.controller()
        let b = try bench.controller(at: 1)
        try bench.advertise(a, data: [2, 1, 6])
        try bench.scan(b, active: false, filterDuplicates: true)
        bench.advance(.seconds(1))
        #expect(bench.reports(try bench.drain(b)).map(\.data) == [[2, 1, 6]])
        // New advertising data from the same address is filtered too, until scanning is enabled again.
        try bench.expectSuccess(a, HCILESetAdvertisingData(data: [2, 1, 4]))
        bench.advance(.seconds(1))
        #expect(bench.reports(try bench.drain(b)).isEmpty)
        try bench.expectSuccess(b, HCILESetScanEnable(isEnabled: false))
        try bench.expectSuccess(b, HCILESetScanEnable(isEnabled: true, filterDuplicates: true))
        bench.advance(.seconds(1))
        #expect(bench.reports(try bench.drain(b)).map(\.data) == [[2, 1, 4]])
    }
}
