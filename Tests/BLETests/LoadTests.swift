import BLE
import BLEVirtualController
import Foundation
import Synchronization
import Testing

/// One peripheral serving many centrals at once, each subscribed to a periodic stream and writing its own sequence:
/// nothing lost, nothing out of order, every write attributed to the central that sent it, memory flat. The CI run is
/// short; `scripts/soak` runs the same test for minutes (SWIFT_BLE_SOAK_SECONDS, SWIFT_BLE_SOAK_CENTRALS,
/// SWIFT_BLE_SOAK_RATE) and prints the figures.
@Suite(.timeLimit(.minutes(20))) struct LoadTests {
    /// The resident set size of this process, in kB (Linux), or 0.
    static func residentKB() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    /// What one central saw.
    final class Tally: Sendable {
        struct State {
            var first: UInt32?
            var last: UInt32?
            var received = 0
            var gaps = 0
            var writes = 0
        }
        let state = Mutex(State())
        func heard(_ value: [UInt8]) {
            guard value.count >= 4 else { return }
            let seq = UInt32(value[0]) | UInt32(value[1]) << 8 | UInt32(value[2]) << 16 | UInt32(value[3]) << 24
            state.withLock { s in
                if s.first == nil { s.first = seq }
                if let last = s.last, seq != last &+ 1 { s.gaps += 1 }
                s.last = seq
                s.received += 1
            }
        }
    }

    /// A flag several tasks read.
    final class Flag: Sendable {
        let raised = Mutex(false)
    }

    /// What the peripheral saw of the writes.
    final class WriteLog: Sendable {
        let state = Mutex(Writes())
    }

    struct Writes {
        var owner: [LinkID: UInt8] = [:]
        var next: [UInt8: UInt32] = [:]
        var accepted = 0
        var misattributed = 0
        var outOfOrder = 0
    }

    @Test func manyCentralsStreamAndWriteWithNothingLostOrMisattributed() async throws {
        let environment = ProcessInfo.processInfo.environment
        let count = Int(environment["SWIFT_BLE_SOAK_CENTRALS"] ?? "") ?? 32
        let rate = Double(environment["SWIFT_BLE_SOAK_RATE"] ?? "") ?? 100
        let seconds = Double(environment["SWIFT_BLE_SOAK_SECONDS"] ?? "") ?? 1
        let writeInterval = Duration.milliseconds(100)

        let air = VirtualAir(clock: .realTime, seed: 32)
        defer { air.shutdown() }
        let peripheralController = air.addController(.init(aclBufferSize: 251, aclBufferCount: 16))
        let peripheralAdapter = try await Adapter(transport: peripheralController.makeHostTransport())
        let manager = await PeripheralManager(adapter: peripheralAdapter, deviceName: "Soak")
        try await manager.add(GATTServiceDefinition(uuid: 0xFF00, characteristics: [
            GATTCharacteristicDefinition(uuid: 0xFF01, properties: .notify),
            GATTCharacteristicDefinition(uuid: 0xFF02, properties: .write, permissions: .writeable, source: .application),
        ]))
        let requests = await manager.requests()
        let writes = WriteLog()
        let answering = Task {
            for await event in requests {
                guard case .application(let request) = event.kind else { continue }
                guard case .write(let value, _) = request.kind, value.count == 5 else {
                    await request.refuse(.requestNotSupported)
                    continue
                }
                let index = value[0]
                let seq = UInt32(value[1]) | UInt32(value[2]) << 8 | UInt32(value[3]) << 16 | UInt32(value[4]) << 24
                writes.state.withLock { w in
                    // The first write of a link names its central; every later one must come from the same link.
                    let owner = w.owner[request.central.link] ?? index
                    w.owner[request.central.link] = owner
                    if owner != index { w.misattributed += 1 }
                    if seq != w.next[index, default: 0] { w.outOfOrder += 1 }
                    w.next[index] = seq &+ 1
                    w.accepted += 1
                }
                await request.accept()
            }
        }
        defer { answering.cancel() }
        try await manager.startAdvertising(name: "Soak", restartAfterConnection: true)
        let address = try #require(await peripheralAdapter.address)

        // The centrals connect one after the other, subscribe, and start writing.
        var centrals: [Central] = []
        var peripherals: [RemotePeripheral] = []
        var tallies: [Tally] = []
        var tasks: [Task<Void, Never>] = []
        let stop = Flag()
        for i in 0..<count {
            let adapter = try await Adapter(transport: air.addController(.init(position: Position(x: 1 + Double(i % 8), y: Double(i / 8)))).makeHostTransport())
            let central = Central(adapter: adapter)
            let device = try await central.connect(address, timeout: .seconds(10))
            let service = try #require(try await device.discoverServices([0xFF00]).first)
            let characteristics = try await device.discoverCharacteristics(for: service)
            let stream = try #require(characteristics.first { $0.uuid == BluetoothUUID(0xFF01) })
            let sink = try #require(characteristics.first { $0.uuid == BluetoothUUID(0xFF02) })
            let tally = Tally()
            let values = try await device.notifications(for: stream)
            tasks.append(Task { for await value in values { tally.heard(value) } })
            tasks.append(Task {
                var seq: UInt32 = 0
                while !stop.raised.withLock({ $0 }) {
                    let value = [UInt8(i)] + [UInt8(truncatingIfNeeded: seq), UInt8(truncatingIfNeeded: seq >> 8),
                                              UInt8(truncatingIfNeeded: seq >> 16), UInt8(truncatingIfNeeded: seq >> 24)]
                    do { try await device.writeValue(value, for: sink, type: .withResponse) } catch { break }
                    tally.state.withLock { $0.writes += 1 }
                    seq &+= 1
                    try? await Task.sleep(for: writeInterval)
                }
            })
            centrals.append(central)
            peripherals.append(device)
            tallies.append(tally)
        }

        // The stream: one 20-byte notification per tick to every subscriber, numbered.
        let clock = ContinuousClock()
        let startRSS = Self.residentKB()
        let start = clock.now
        var sent: UInt32 = 0
        var samples: [Int] = []
        let tick = Duration.seconds(1 / rate)
        var deadline = start
        while clock.now - start < .seconds(seconds) {
            let value = [UInt8(truncatingIfNeeded: sent), UInt8(truncatingIfNeeded: sent >> 8), UInt8(truncatingIfNeeded: sent >> 16),
                         UInt8(truncatingIfNeeded: sent >> 24)] + Array(repeating: 0x5A, count: 16)
            let reached = try await manager.updateValue(value, for: 0xFF01)
            #expect(reached.count == count)
            sent += 1
            if sent % UInt32(max(1, rate * 10)) == 0 { samples.append(Self.residentKB()) }
            deadline = deadline.advanced(by: tick)
            if deadline > clock.now { try await Task.sleep(until: deadline, clock: clock) }
        }
        let elapsed = clock.now - start
        stop.raised.withLock { $0 = true }
        // Let the last notifications and writes land.
        for _ in 0..<200 where tallies.contains(where: { $0.state.withLock { $0.last } != sent - 1 }) {
            try await Task.sleep(for: .milliseconds(10))
        }
        let endRSS = Self.residentKB()

        var lost = 0, gaps = 0, written = 0
        for tally in tallies {
            let s = tally.state.withLock { $0 }
            gaps += s.gaps
            written += s.writes
            if let first = s.first { lost += Int(sent - first) - s.received } else { lost += Int(sent) }
        }
        let w = writes.state.withLock { $0 }
        let achieved = Double(sent) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        print("SOAK centrals=\(count) seconds=\(seconds) rate_asked=\(Int(rate))Hz rate_achieved=\(String(format: "%.1f", achieved))Hz "
              + "notifications_sent=\(sent)x\(count) lost=\(lost) gaps=\(gaps) writes=\(written) writes_accepted=\(w.accepted) "
              + "misattributed=\(w.misattributed) out_of_order=\(w.outOfOrder) rss_start_kB=\(startRSS) rss_end_kB=\(endRSS) "
              + "rss_samples_kB=\(samples.map(String.init).joined(separator: ","))")
        #expect(lost == 0 && gaps == 0)
        #expect(w.misattributed == 0 && w.outOfOrder == 0)
        #expect(w.owner.count == count)
        #expect(written > 0 && w.accepted >= written)
        for task in tasks { task.cancel() }
        withExtendedLifetime((centrals, peripherals, manager)) {}
    }
}
