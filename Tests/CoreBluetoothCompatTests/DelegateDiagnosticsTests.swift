@testable import CoreBluetoothCompat
import Foundation
import Synchronization
import Testing

/// A scanner whose discovery method has a typo in a label (`RSSI:` where the protocol says `rssi:`), declared in the
/// class body, where the compiler does not look for near misses: it is a method of its own, never called.
final class TypoScanner: NSObject, CBCentralManagerDelegate {
    var manager: CBCentralManager!
    let log: AsyncStream<String>.Continuation

    init(queue: DispatchQueue, log: AsyncStream<String>.Continuation) {
        self.log = log
        super.init()
        manager = CBCentralManager(delegate: self, queue: queue)
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        if central.state == .poweredOn { central.scanForPeripherals(withServices: nil) }
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any], RSSI: NSNumber) {
        log.yield("discovered")
    }
}

@Suite(.serialized) struct DelegateDiagnosticsTests {
    @Test func aDiscoveryReachingTheDefaultImplementationIsReportedOncePerTypeAndMethod() async throws {
        let reports = Mutex<[String]>([])
        CBDelegateDiagnostics.setHandler { message in reports.withLock { $0.append(message) } }
        defer { CBDelegateDiagnostics.setHandler(nil) }
        #expect(CBDelegateDiagnostics.isEnabled, "on in debug builds")
        let (stream, log) = AsyncStream.makeStream(of: String.self)
        let lines = LineQueue(stream)
        let scanner = TypoScanner(queue: DispatchQueue(label: "typo scanner"), log: log)
        // The sample devices advertise several times a second: wait for the report, then a little more.
        let deadline = ContinuousClock.now + .seconds(25)
        while reports.withLock({ $0.isEmpty }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        try await Task.sleep(for: .milliseconds(500))
        scanner.manager.stopScan()
        // (Other suites' delegates run meanwhile: only this scanner's reports count.)
        let seen = reports.withLock { $0 }.filter { $0.contains("TypoScanner") }
        #expect(seen.count == 1, "\(seen)")
        #expect(seen.first?.contains("TypoScanner does not implement CBCentralManagerDelegate.centralManager(_:didDiscover:advertisementData:rssi:)") == true)
        #expect(seen.first?.contains("scanForPeripherals(withServices:options:)") == true)
        // The misspelt method is never called.
        #expect(await lines.next(timeout: .milliseconds(100)) == nil)
        withExtendedLifetime(scanner) {}
    }

    @Test func turnedOffNothingIsReported() async throws {
        let reports = Mutex<[String]>([])
        CBDelegateDiagnostics.setHandler { message in reports.withLock { $0.append(message) } }
        CBDelegateDiagnostics.isEnabled = false
        defer {
            CBDelegateDiagnostics.isEnabled = true
            CBDelegateDiagnostics.setHandler(nil)
        }
        let (_, log) = AsyncStream.makeStream(of: String.self)
        let scanner = TypoScanner(queue: DispatchQueue(label: "quiet typo scanner"), log: log)
        try await Task.sleep(for: .seconds(1))
        scanner.manager.stopScan()
        #expect(reports.withLock { $0 }.filter { $0.contains("TypoScanner") }.isEmpty)
    }
}
