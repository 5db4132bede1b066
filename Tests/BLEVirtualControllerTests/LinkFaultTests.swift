import BLEVirtualController
import BLEWire
import Testing

/// Faults on the air, on a manual clock: lost and corrupted transmissions are repeated by the link layer (the host
/// sees latency, never loss or reordering), deterministically from a seed; a link where nothing gets through is lost
/// at its supervision timeout.
@Suite struct LinkFaultTests {
    /// Sends `count` numbered 20-byte packets from the central's host, respecting its 8 buffers, stepping the clock
    /// 5 ms at a time; returns the packets the peripheral's host received, the simulated time each arrived at, and
    /// the buffers returned.
    func stream(_ bench: Bench, _ central: VirtualController, _ peripheral: VirtualController, _ ch: ConnectionHandle,
                count: Int) throws -> (received: [[UInt8]], times: [Duration], completed: Int) {
        var sent = 0, inFlight = 0, completed = 0
        var received: [[UInt8]] = [], times: [Duration] = []
        var steps = 0
        while received.count < count, steps < 20_000 {
            while sent < count, inFlight < 8 {
                central.receive(fromHost: .acl(HCIACLPacket(handle: ch, boundary: .firstNonFlushable,
                                                            data: [UInt8(sent)] + Array(repeating: 0xA5, count: 19))))
                sent += 1
                inFlight += 1
            }
            bench.advance(.milliseconds(5))
            steps += 1
            let done = bench.completedPackets(try bench.drain(central))
            inFlight -= done
            completed += done
            for packet in bench.drainACL(peripheral) {
                received.append(packet.data)
                times.append(bench.air.now)
            }
        }
        return (received, times, completed)
    }

    @Test func lostAndCorruptedPacketsArriveLateInOrderAndDeterministically() throws {
        func run(seed: UInt64?) throws -> (received: [[UInt8]], times: [Duration], completed: Int, retransmissions: Int) {
            let bench = Bench()
            let central = try bench.controller()
            let peripheral = try bench.controller(at: 1)
            if let seed { bench.air.setFaults(LinkFaults(packetLoss: 0.3, crcErrors: 0.1, seed: seed), between: central, peripheral) }
            let (ch, _) = try bench.connect(central, peripheral)
            let result = try stream(bench, central, peripheral, ch, count: 40)
            return (result.received, result.times, result.completed, bench.air.retransmissionCount)
        }
        let clean = try run(seed: nil)
        let faulty = try run(seed: 9)
        let again = try run(seed: 9)
        let other = try run(seed: 10)
        // Everything arrives, in order, and every buffer comes back.
        for outcome in [clean, faulty, again, other] {
            #expect(outcome.received.map { $0.first } == (0..<40).map { UInt8($0) })
            #expect(outcome.completed == 40)
        }
        // Clean: no retransmission, each packet within the 5 ms step it was sent in.
        #expect(clean.retransmissions == 0)
        // Faulty: about 37% of attempts fail (1 − 0.7 · 0.9), each costing a 50 ms connection interval.
        #expect(faulty.retransmissions > 5 && faulty.retransmissions < 60, "\(faulty.retransmissions)")
        #expect((faulty.times.last ?? .zero) - (faulty.times.first ?? .zero) > (clean.times.last ?? .zero) - (clean.times.first ?? .zero))
        // The same seed replays the same faults at the same instants; another seed does not.
        #expect(again.retransmissions == faulty.retransmissions && again.times == faulty.times)
        #expect(other.times != faulty.times)
    }

    @Test func aLinkWhereNothingGetsThroughIsLostAtItsSupervisionTimeout() throws {
        let bench = Bench()
        let central = try bench.controller()
        let peripheral = try bench.controller(at: 1)
        let (ch, ph) = try bench.connect(central, peripheral, timeoutUnits: 0x0064)   // 1 s
        bench.air.setFaults(LinkFaults(packetLoss: 1, seed: 3), between: central, peripheral)
        central.receive(fromHost: .acl(HCIACLPacket(handle: ch, boundary: .firstNonFlushable, data: [1, 2, 3])))
        bench.advance(.milliseconds(990))
        #expect(bench.disconnections(try bench.drain(central)).isEmpty, "not before the timeout")
        #expect(bench.drainACL(peripheral).isEmpty)
        bench.advance(.milliseconds(20))
        #expect(bench.disconnections(try bench.drain(central)) == [.init(handle: ch, reason: .connectionTimeout)])
        #expect(bench.disconnections(try bench.drain(peripheral)) == [.init(handle: ph, reason: .connectionTimeout)])
        #expect(bench.air.linksLostToFaultsCount == 1)
        // Faults removed, the next link works at once.
        bench.air.setFaults(nil, between: central, peripheral)
        let (ch2, _) = try bench.connect(central, peripheral)
        central.receive(fromHost: .acl(HCIACLPacket(handle: ch2, boundary: .firstNonFlushable, data: [4, 5])))
        #expect(bench.drainACL(peripheral).map(\.data) == [[4, 5]])
    }
}
