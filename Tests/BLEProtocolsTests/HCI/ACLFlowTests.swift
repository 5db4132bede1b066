import BLEProtocols
import BLEWire
import Testing

@Suite struct ACLFlowTests {
    func completed(_ pairs: (ConnectionHandle, UInt16)...) -> HCIEvent {
        .numberOfCompletedPackets(.init(entries: pairs.map { .init(handle: $0.0, completedPackets: $0.1) }))
    }

    @Test func fragmentsToBufferSizeAndStopsAtBufferCount() {
        var flow = ACLFlow(bufferSize: 27, bufferCount: 3)
        let pdu = Array(repeating: UInt8(0xAB), count: 100)   // 27+27+27+19
        let first = flow.enqueue(handle: 0x40, pdu: pdu)
        #expect(first.map(\.data.count) == [27, 27, 27])
        #expect(first.map(\.boundary) == [.firstNonFlushable, .continuing, .continuing])
        #expect(flow.freeBuffers == 0)
        #expect(flow.queuedCount(handle: 0x40) == 1)
        let next = flow.receive(completed((0x40, 1)))
        #expect(next.map(\.data.count) == [19])
        #expect(next.first?.boundary == .continuing)
        #expect(Array(first.flatMap(\.data) + next.flatMap(\.data)) == pdu)
    }

    @Test func emptyPDUIsOnePacket() {
        var flow = ACLFlow(bufferSize: 27, bufferCount: 1)
        #expect(flow.enqueue(handle: 1, pdu: []).count == 1)
        #expect(flow.fragmentCount(forPDULength: 251) == 10)
    }

    @Test func roundRobinAcrossConnections() {
        var flow = ACLFlow(bufferSize: 10, bufferCount: 2)
        _ = flow.enqueue(handle: 1, pdu: Array(repeating: 1, count: 40))  // 4 packets, 2 go now
        _ = flow.enqueue(handle: 2, pdu: Array(repeating: 2, count: 20))  // 2 packets, queued
        let next = flow.receive(completed((1, 2)))
        #expect(Set(next.map(\.handle)) == [1, 2], "the second connection is served, not starved")
    }

    @Test func bogusCompletionsNeverInflateCredits() {
        var flow = ACLFlow(bufferSize: 27, bufferCount: 2)
        _ = flow.enqueue(handle: 1, pdu: [1])
        _ = flow.receive(completed((1, 50), (9, 3)))
        #expect(flow.freeBuffers == 2)
    }

    @Test func disconnectionReturnsCreditsAndDropsQueue() {
        var flow = ACLFlow(bufferSize: 5, bufferCount: 2)
        _ = flow.enqueue(handle: 1, pdu: Array(repeating: 1, count: 20))
        _ = flow.enqueue(handle: 2, pdu: [2])
        #expect(flow.freeBuffers == 0)
        let after = flow.receive(.disconnectionComplete(.init(handle: 1, reason: .connectionTimeout)))
        #expect(after.map(\.handle) == [2])
        #expect(flow.queuedCount(handle: 1) == 0 && flow.inFlightCount(handle: 1) == 0)
        #expect(flow.freeBuffers == 1)
    }

    /// A gateway's many links (past the flow's small table of 16): each keeps its own queue and counts, links served
    /// in turn, and one going down takes only its own packets and credits.
    @Test func manyLinksKeepTheirOwnQueuesAndCounts() {
        var flow = ACLFlow(bufferSize: 10, bufferCount: 8)
        let handles = (1...40).map { ConnectionHandle(rawValue: UInt16($0)) }
        var sent: [HCIACLPacket] = []
        for handle in handles { sent += flow.enqueue(handle: handle, pdu: Array(repeating: UInt8(handle.rawValue), count: 25)) }
        // 40 links × 3 fragments queued, 8 sent at once (the controller has 8 buffers), the rest waiting.
        #expect(sent.count == 8 && flow.freeBuffers == 0 && flow.queuedPacketCount == 112)
        #expect(handles.allSatisfy { flow.queuedTotal(handle: $0) == 3 && flow.outstandingCount(handle: $0) == 3 })
        // Complete everything sent, a round at a time, until every packet went out.
        var rounds = 0
        while flow.queuedPacketCount > 0, rounds < 100 {
            let byHandle = Dictionary(grouping: sent, by: \.handle).map { ($0.key, UInt16($0.value.count)) }
            sent = flow.receive(.numberOfCompletedPackets(.init(entries: byHandle.map { .init(handle: $0.0, completedPackets: $0.1) })))
            rounds += 1
        }
        #expect(flow.queuedPacketCount == 0 && sent.count <= 8)
        let lastRound = Dictionary(grouping: sent, by: \.handle).map { ($0.key, UInt16($0.value.count)) }
        // Link 7 goes down with its last packets in flight (if any): only its credits come back.
        let inFlight7 = flow.inFlightCount(handle: 7)
        let free = flow.freeBuffers
        _ = flow.receive(.disconnectionComplete(.init(handle: 7, reason: .connectionTimeout)))
        #expect(flow.freeBuffers == free + inFlight7 && flow.queuedTotal(handle: 7) == 0)
        _ = flow.receive(.numberOfCompletedPackets(.init(entries: lastRound.filter { $0.0 != 7 }.map { .init(handle: $0.0, completedPackets: $0.1) })))
        #expect(flow.freeBuffers == 8)
        #expect(handles.filter { $0 != 7 }.allSatisfy { flow.completedTotal(handle: $0) == 3 && flow.outstandingCount(handle: $0) == 0 })
    }
}
