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
}
