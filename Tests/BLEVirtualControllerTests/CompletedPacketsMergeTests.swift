@testable import BLEVirtualController
import BLEWire
import Testing

/// A batch for a host merges each run of Number Of Completed Packets events into one, and nothing else changes.
@Suite struct CompletedPacketsMergeTests {
    static func completed(_ entries: [(UInt16, UInt16)]) -> HCIPacket {
        .event(HCINumberOfCompletedPacketsEvent(entries: entries.map { .init(handle: ConnectionHandle(rawValue: $0.0), completedPackets: $0.1) }).packet)
    }

    static let disconnection = HCIPacket.event(HCIDisconnectionCompleteEvent(status: .success, handle: ConnectionHandle(rawValue: 1),
                                                                              reason: .remoteUserTerminatedConnection).packet)

    @Test func runsMergeWithCountsSummedPerHandleInFirstReportedOrder() {
        let batch = [Self.completed([(1, 1)]), Self.completed([(2, 1)]), Self.completed([(1, 2)]), Self.completed([(1, 1)])]
        #expect(HostSink.mergingCompletedPackets(batch) == [Self.completed([(1, 4), (2, 1)])])
    }

    @Test func otherPacketsSplitRunsAndKeepTheirPlace() {
        let data = HCIPacket.acl(HCIACLPacket(handle: ConnectionHandle(rawValue: 1), boundary: .firstFlushable, data: [1, 2, 3]))
        let batch = [Self.completed([(1, 1)]), Self.completed([(1, 1)]), Self.disconnection, Self.completed([(1, 1)]), data,
                     Self.completed([(2, 1)]), Self.completed([(2, 3)])]
        #expect(HostSink.mergingCompletedPackets(batch)
            == [Self.completed([(1, 2)]), Self.disconnection, Self.completed([(1, 1)]), data, Self.completed([(2, 4)])])
    }

    /// A packet gathered for a writer that never started (an attach that found its transport already reading, then
    /// served it through its stream) goes to the next writer, which is woken for it: the answer to the host's first
    /// command is not lost between the two (a flaky `ControllerFaultTests` case, 2026-12-06).
    @Test func packetsGatheredBeforeAWriterChangeGoToTheNextWriter() async {
        let sink = HostSink(mode: .stream)
        let first = sink.startBatching(byReaders: true)
        sink.deliver(Self.disconnection)
        withExtendedLifetime(first) {}
        let wakes = sink.startBatching()
        #expect(sink.takeBatch() == [Self.disconnection])
        #expect(sink.takeBatch() == [])
        // Woken for it (within two seconds: a missing wake-up fails here rather than hanging the run).
        let woken = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                var iterator = wakes.makeAsyncIterator()
                return await iterator.next() != nil
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(2))
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        #expect(woken, "woken for the packet carried over")
    }

    @Test func loneEventsAndOtherBatchesAreUntouched() {
        #expect(HostSink.mergingCompletedPackets([]) == [])
        #expect(HostSink.mergingCompletedPackets([Self.completed([(1, 1), (2, 2)])]) == [Self.completed([(1, 1), (2, 2)])])
        #expect(HostSink.mergingCompletedPackets([Self.disconnection, Self.disconnection]) == [Self.disconnection, Self.disconnection])
        // A sum beyond 16 bits is reported in events a host can read.
        let big = [Self.completed([(1, 0xFFFF)]), Self.completed([(1, 2)])]
        let merged = HostSink.mergingCompletedPackets(big)
        let total = merged.compactMap { packet -> Int? in
            guard case .event(let e) = packet, let c = try? HCINumberOfCompletedPacketsEvent(bytes: e.parameters) else { return nil }
            return c.entries.reduce(0) { $0 + Int($1.completedPackets) }
        }.reduce(0, +)
        #expect(total == 0x10001 && merged.count == 2)
    }
}
