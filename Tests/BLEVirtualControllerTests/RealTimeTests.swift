import BLETransport
import BLEVirtualController
import BLEWire
import Testing

@Suite struct RealTimeTests {
    /// Sends a command over a transport and waits for its Command Complete or Status.
    func roundTrip<C: HCICommand>(_ transport: any HCITransport, _ iterator: inout AsyncThrowingStream<HCIPacket, any Error>.Iterator,
                                  _ command: C) async throws -> HCIEvent {
        try await transport.send(.command(command.packet))
        while let packet = try await iterator.next() {
            guard case .event(let e) = packet else { continue }
            let event = try HCIEvent(packet: e)
            switch event {
            case .commandComplete(let c) where c.opcode == C.opcode: return event
            case .commandStatus(let s) where s.opcode == C.opcode: return event
            default: continue
            }
        }
        throw WireError(.truncated, "transport ended")
    }

    @Test(.timeLimit(.minutes(1))) func connectionOverHostTransportsInRealTime() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let a = air.addController()
        let b = air.addController(.init(position: Position(x: 2)))
        let ta = a.makeHostTransport()
        let tb = b.makeHostTransport()
        var ia = ta.incoming.makeAsyncIterator()
        var ib = tb.incoming.makeAsyncIterator()
        for (t, _) in [(ta, 0), (tb, 1)] {
            try await t.send(.command(HCISetEventMask(mask: 0x3FFF_FFFF_FFFF_FFFF).packet))
        }
        _ = try await ia.next()
        _ = try await ib.next()
        _ = try await roundTrip(tb, &ib, HCILESetAdvertisingParameters(intervalMin: 0x20, intervalMax: 0x20))
        _ = try await roundTrip(tb, &ib, HCILESetAdvertisingEnable(isEnabled: true))
        let status = try await roundTrip(ta, &ia, HCILECreateConnection(peerAddressType: .public, peerAddress: b.address))
        #expect(status == .commandStatus(.init(status: .success, opcode: .leCreateConnection)))
        while let packet = try await ia.next() {
            if case .event(let e) = packet, case .le(.connectionComplete(let c)) = try HCIEvent(packet: e) {
                #expect(c.status == .success && c.peerAddress == b.address)
                break
            }
        }
        await ta.close()
        await tb.close()
    }
}
