import BLEProtocols
import BLEWire
import Testing

@Suite struct HCICommandFlowTests {
    func sent(_ actions: [HCICommandFlow.Action]) -> [HCIOpcode] {
        actions.compactMap { if case .send(let p) = $0 { p.opcode } else { nil } }
    }
    func finished(_ actions: [HCICommandFlow.Action]) -> [HCICommandFlow.Token: HCICommandFlow.Outcome] {
        var result: [HCICommandFlow.Token: HCICommandFlow.Outcome] = [:]
        for case .finish(let token, let outcome) in actions { result[token] = outcome }
        return result
    }

    @Test func respectsCreditsAndQueues() {
        var flow = HCICommandFlow()
        let (reset, a1) = flow.submit(HCIReset())
        let (read, a2) = flow.submit(HCILEReadBufferSize())
        #expect(sent(a1) == [.reset])
        #expect(sent(a2).isEmpty, "second command must wait for a credit")
        #expect(flow.queuedCount == 1)
        // Command Complete for Reset grants one credit: the queued command goes out.
        let (consumed, a3) = flow.receive(.commandComplete(.init(opcode: .reset, returnParameters: [0])))
        #expect(consumed)
        #expect(finished(a3)[reset] == .complete(returnParameters: [0]))
        #expect(sent(a3) == [.leReadBufferSize])
        let (_, a4) = flow.receive(.commandComplete(.init(opcode: .leReadBufferSize, returnParameters: [0, 27, 0, 8])))
        #expect(finished(a4)[read] == .complete(returnParameters: [0, 27, 0, 8]))
        #expect(flow.outstandingCount == 0)
    }

    @Test func zeroCreditsStopSending() {
        var flow = HCICommandFlow()
        _ = flow.submit(HCIReset())
        let (_, a) = flow.receive(.commandComplete(.init(numHCICommandPackets: 0, opcode: .reset, returnParameters: [0])))
        #expect(sent(a).isEmpty)
        let (_, b) = flow.submit(HCILERand())
        #expect(sent(b).isEmpty, "no credit")
        // A NOP Command Complete (opcode 0) restores credits.
        let (_, c) = flow.receive(.commandComplete(.init(numHCICommandPackets: 1, opcode: HCIOpcode(rawValue: 0), returnParameters: [])))
        #expect(sent(c) == [.leRand])
    }

    @Test func commandStatusOutcomes() {
        var flow = HCICommandFlow()
        let (create, _) = flow.submit(HCILECreateConnection(peerAddressType: .public, peerAddress: .zero))
        let (_, a) = flow.receive(.commandStatus(.init(status: .success, opcode: .leCreateConnection)))
        #expect(finished(a)[create] == .pending)
        // Unknown command answered by Command Status 0x01 fails a Command Complete-style command.
        let (rand, _) = flow.submit(HCILERand())
        let (_, b) = flow.receive(.commandStatus(.init(status: .unknownCommand, opcode: .leRand)))
        #expect(finished(b)[rand] == .failed(.unknownCommand))
        // Error status in Command Complete fails the command.
        let (adv, _) = flow.submit(HCILESetAdvertisingEnable(isEnabled: true))
        let (_, c) = flow.receive(.commandComplete(.init(opcode: .leSetAdvertisingEnable, returnParameters: [0x0C])))
        #expect(finished(c)[adv] == .failed(.commandDisallowed))
    }

    @Test func timeoutFailsAndRestoresCredit() {
        var flow = HCICommandFlow(timeout: .seconds(2))
        let (phy, a) = flow.submit(HCICommandPacket(opcode: .leSetPHY, parameters: [0, 1, 1, 0, 0]), completion: .commandStatus)
        #expect(a.contains(.startTimer(phy, .seconds(2))))
        let (next, b) = flow.submit(HCIReset())
        #expect(sent(b).isEmpty)
        let c = flow.timerFired(phy)
        #expect(finished(c)[phy] == .timedOut)
        #expect(sent(c) == [.reset], "the queued command goes out after the timeout")
        #expect(flow.timerFired(phy).isEmpty, "a stale timer does nothing")
        let (_, d) = flow.receive(.commandComplete(.init(opcode: .reset, returnParameters: [0])))
        #expect(finished(d)[next] == .complete(returnParameters: [0]))
    }

    @Test func unrelatedEventsAreNotConsumedAndResetCancelsAll() {
        var flow = HCICommandFlow()
        let (consumed, _) = flow.receive(.hardwareError(.init(hardwareCode: 1)))
        #expect(!consumed)
        let (t1, _) = flow.submit(HCIReset())
        let (t2, _) = flow.submit(HCILERand())
        let outcomes = finished(flow.reset())
        #expect(outcomes[t1] == .cancelled && outcomes[t2] == .cancelled)
        #expect(flow.credits == 1 && flow.outstandingCount == 0 && flow.queuedCount == 0)
        // A late Command Complete for a cancelled command is ignored.
        let (_, late) = flow.receive(.commandComplete(.init(opcode: .reset, returnParameters: [0])))
        #expect(finished(late).isEmpty)
    }
}
