import BLEVirtualController
import BLEWire
import Testing

/// The air-time model on a manual clock, through raw HCI: packet times per PHY, connection events filled back to
/// back, one acknowledged operation per two events, the PHY and Data Length Update procedures, faults.
@Suite struct AirTimeTests {
    let model = AirTimeModel()

    @Test func packetTimesFollowThePHYs() {
        // Core 5.4, Vol 6, Part B, 4.5.10: the maximum times for 27 and 251 octets (with a MIC) on each PHY.
        #expect(model.packetMicroseconds(payload: 27, phy: .le1M, encrypted: true) == 328)
        #expect(model.packetMicroseconds(payload: 251, phy: .le1M, encrypted: true) == 2120)
        #expect(model.packetMicroseconds(payload: 27, phy: .le2M, encrypted: true) == 168)     // a 2-octet preamble
        #expect(model.packetMicroseconds(payload: 251, phy: .le2M, encrypted: true) == 1064)
        #expect(model.packetMicroseconds(payload: 27, phy: .leCoded, encrypted: true) == 2704)
        #expect(model.packetMicroseconds(payload: 251, phy: .leCoded, encrypted: true) == 17040)
        // Empty packets; no MIC on an empty payload or an unencrypted link.
        #expect(model.packetMicroseconds(payload: 0, phy: .le1M, encrypted: true) == 80)
        #expect(model.packetMicroseconds(payload: 0, phy: .le2M) == 44)
        #expect(model.packetMicroseconds(payload: 251, phy: .le2M) == 1048)
        // 244-octet notifications in 251-octet packets at 2M: 244 × 8 bits per 1048 + 150 + 44 + 150 µs.
        let ceiling = model.ceilingBitsPerSecond(octets: 251, payloadPerPacket: 244, phy: .le2M)
        #expect(abs(ceiling - 1_402_298.85) < 1)
        // A 7.5 ms event holds 5 such exchanges; a 100 ms one 71.
        #expect(model.exchangesPerEvent(interval: 6, centralOctets: 0, centralPHY: .le2M, peripheralOctets: 251, peripheralPHY: .le2M) == 5)
        #expect(model.exchangesPerEvent(interval: 80, centralOctets: 0, centralPHY: .le2M, peripheralOctets: 251, peripheralPHY: .le2M) == 71)
    }

    /// Two controllers linked at a 7.5 ms interval on an air with the model; their handles.
    func linked(_ bench: Bench, interval: UInt16 = 6) throws -> (VirtualController, VirtualController, ConnectionHandle, ConnectionHandle) {
        let central = try bench.controller(aclSize: 251)
        let peripheral = try bench.controller(at: 1, aclSize: 251)
        try bench.advertise(peripheral)
        try bench.expectSuccess(central, HCILECreateConnection(peerAddressType: .public, peerAddress: peripheral.address,
                                                               connectionIntervalMin: interval, connectionIntervalMax: interval))
        bench.advance(.milliseconds(200))
        let c = try #require(bench.connectionCompletes(try bench.drain(central)).first)
        let p = try #require(bench.connectionCompletes(try bench.drain(peripheral)).first)
        return (central, peripheral, c.handle, p.handle)
    }

    /// Steps the clock by `step` until `count` ACL packets reached `c` (or `limit` passed); returns when each came.
    func arrivals(_ bench: Bench, _ c: VirtualController, count: Int, step: Duration = .microseconds(2),
                  limit: Duration = .seconds(1)) -> [(time: Duration, packet: HCIACLPacket)] {
        var got: [(Duration, HCIACLPacket)] = []
        let end = bench.air.now + limit
        while got.count < count, bench.air.now < end {
            bench.advance(step)
            for packet in bench.drainACL(c) { got.append((bench.air.now, packet)) }
        }
        return got
    }

    @Test func notificationsFillEachConnectionEventBackToBack() throws {
        let bench = Bench(airTime: model)
        let (central, peripheral, ch, ph) = try linked(bench)
        // 2M both ways and 251-octet packets from the peripheral.
        try bench.expectSuccess(central, HCILESetPHY(handle: ch, txPHYs: .le2M, rxPHYs: .le2M))
        try bench.expectSuccess(peripheral, HCILESetDataLength(handle: ph, txOctets: 251, txTime: 2120))
        bench.advance(.milliseconds(100))
        _ = try bench.drain(central)
        _ = try bench.drain(peripheral)
        for n in 0..<8 {
            peripheral.receive(fromHost: .acl(HCIACLPacket(handle: ph, boundary: .firstNonFlushable,
                                                           data: [UInt8](repeating: UInt8(n), count: 251))))
        }
        let got = arrivals(bench, central, count: 8)
        #expect(got.map { $0.packet.data.first } == (0..<8).map { UInt8($0) })
        #expect(got.allSatisfy { $0.packet.data.count == 251 && $0.packet.boundary == .firstFlushable })
        // Five per 7.5 ms event, 1,392 µs apart (1,048 + 150 + 44 + 150); the sixth waits for the next anchor,
        // 7,500 - 4 × 1,392 = 1,932 µs after the fifth.
        let gaps = zip(got.dropFirst(), got).map { ($0.time - $1.time) / .microseconds(1) }
        let expected: [Double] = [1392, 1392, 1392, 1392, 1932, 1392, 1392]
        for (gap, want) in zip(gaps, expected) { #expect(abs(gap - want) <= 4, "\(gaps)") }
        // Every buffer came back.
        bench.advance(.milliseconds(20))
        #expect(bench.completedPackets(try bench.drain(peripheral)) == 8)
    }

    /// Writes from the central: after each packet it reserves room for the longest the peripheral may send back, so
    /// a peripheral allowed 251-octet packets leaves room for 4 exchanges per 7.5 ms event, one held at 27 for 5.
    @Test(arguments: [(UInt16(251), 4), (UInt16(27), 5)])
    func theCentralReservesRoomForThePeripheralsLongestPacket(peripheralOctets: UInt16, perEvent: Int) throws {
        let bench = Bench(airTime: model)
        let (central, peripheral, ch, ph) = try linked(bench)
        try bench.expectSuccess(central, HCILESetPHY(handle: ch, txPHYs: .le2M, rxPHYs: .le2M))
        try bench.expectSuccess(central, HCILESetDataLength(handle: ch, txOctets: 251, txTime: 2120))
        if peripheralOctets != 27 { try bench.expectSuccess(peripheral, HCILESetDataLength(handle: ph, txOctets: peripheralOctets, txTime: 2120)) }
        bench.advance(.milliseconds(100))
        _ = try bench.drain(peripheral)
        for _ in 0..<8 {
            central.receive(fromHost: .acl(HCIACLPacket(handle: ch, boundary: .firstNonFlushable, data: [UInt8](repeating: 3, count: 251))))
        }
        let got = arrivals(bench, peripheral, count: 8)
        let gaps = zip(got.dropFirst(), got).map { ($0.time - $1.time) / .microseconds(1) }
        // Within an event 1,392 µs apart; the first gap longer than that ends the first event.
        let firstEvent = (gaps.firstIndex { $0 > 1400 } ?? gaps.count) + 1
        #expect(firstEvent == perEvent, "\(gaps)")
        #expect(model.exchangesPerEvent(interval: 6, centralOctets: 251, centralPHY: .le2M, peripheralOctets: 0, peripheralPHY: .le2M,
                                        peripheralMaximumOctets: Int(peripheralOctets)) == perEvent)
    }

    @Test func anAcknowledgedOperationTakesTwoConnectionEvents() throws {
        let bench = Bench(airTime: model)
        let (central, peripheral, ch, ph) = try linked(bench)
        _ = try bench.drain(central)
        let start = bench.air.now
        // Ten request/response pairs, each answered the instant it arrives (as a write and its response).
        for n in 0..<10 {
            central.receive(fromHost: .acl(HCIACLPacket(handle: ch, boundary: .firstNonFlushable, data: [0x12, UInt8(n)])))
            let request = arrivals(bench, peripheral, count: 1)
            #expect(request.first?.packet.data == [0x12, UInt8(n)])
            peripheral.receive(fromHost: .acl(HCIACLPacket(handle: ph, boundary: .firstNonFlushable, data: [0x13])))
            #expect(arrivals(bench, central, count: 1).first?.packet.data == [0x13])
        }
        // The request goes in one event, the response in the next, the next request in the one after: 20 events.
        let events = (bench.air.now - start) / .microseconds(7500)
        #expect(events > 19 && events <= 20.5, "\(events) events")
    }

    @Test func thePHYAndDataLengthProceduresReachBothHosts() throws {
        let bench = Bench(airTime: model)
        let (central, peripheral, ch, ph) = try linked(bench)
        _ = try bench.drain(central)
        _ = try bench.drain(peripheral)
        // Bad preferences: no PHY where the host leaves no choice; a PHY that does not exist.
        #expect(bench.status(of: HCILESetPHY.opcode, in: try bench.send(central, HCILESetPHY(handle: ch, txPHYs: [], rxPHYs: .le2M)))
                == .invalidCommandParameters)
        #expect(bench.status(of: HCILESetPHY.opcode, in: try bench.send(central, HCILESetPHY(handle: ch, txPHYs: LEPHYs(rawValue: 0x08), rxPHYs: .le2M)))
                == .unsupportedFeatureOrParameterValue)
        // The peripheral accepts only 1M for receiving: the central transmits on 1M, receives on 2M.
        try bench.expectSuccess(peripheral, HCILESetDefaultPHY(allPHYs: 0, txPHYs: 0x07, rxPHYs: 0x01))
        try bench.expectSuccess(central, HCILESetPHY(handle: ch, txPHYs: [.le2M, .le1M], rxPHYs: .le2M))
        bench.advance(.milliseconds(60))
        let centralUpdate = try bench.drain(central).compactMap { if case .le(.phyUpdateComplete(let e)) = $0 { e } else { nil } }
        let peripheralUpdate = try bench.drain(peripheral).compactMap { if case .le(.phyUpdateComplete(let e)) = $0 { e } else { nil } }
        #expect(centralUpdate == [HCILEPHYUpdateCompleteEvent(handle: ch, txPHY: .le1M, rxPHY: .le2M)])
        #expect(peripheralUpdate == [HCILEPHYUpdateCompleteEvent(handle: ph, txPHY: .le2M, rxPHY: .le1M)])
        #expect(try bench.call(peripheral, HCILEReadPHY(handle: ph)) == .init(handle: ph, txPHY: .le2M, rxPHY: .le1M))
        // Asked again for the same: only the asking host hears (nothing changed).
        try bench.expectSuccess(central, HCILESetPHY(handle: ch, txPHYs: [.le2M, .le1M], rxPHYs: .le2M))
        bench.advance(.milliseconds(60))
        #expect(try bench.drain(central).contains { if case .le(.phyUpdateComplete) = $0 { true } else { false } })
        #expect(try !bench.drain(peripheral).contains { if case .le(.phyUpdateComplete) = $0 { true } else { false } })
        // Data length: both hosts hear the new maximum.
        try bench.expectSuccess(central, HCILESetDataLength(handle: ch, txOctets: 200, txTime: 1712))
        let change = try bench.drain(peripheral).compactMap { if case .le(.dataLengthChange(let e)) = $0 { e } else { nil } }
        #expect(change.first?.maxRxOctets == 200 && change.first?.maxTxOctets == 27)
        // A 200-octet packet now crosses in one PDU: it arrives in one piece, 80 + 150 µs... after its anchor.
        central.receive(fromHost: .acl(HCIACLPacket(handle: ch, boundary: .firstNonFlushable, data: [UInt8](repeating: 7, count: 200))))
        #expect(arrivals(bench, peripheral, count: 1).first?.packet.data.count == 200)
    }

    @Test func theSameTransferTakesLongerOnSlowerPHYs() throws {
        var durations: [LEPHY: Duration] = [:]
        for phy in [LEPHY.le2M, .le1M, .leCoded] {
            let bench = Bench(airTime: model)
            let (central, peripheral, ch, ph) = try linked(bench, interval: 80)
            try bench.expectSuccess(central, HCILESetPHY(handle: ch, txPHYs: LEPHYs(phy), rxPHYs: LEPHYs(phy)))
            try bench.expectSuccess(peripheral, HCILESetDataLength(handle: ph, txOctets: 251, txTime: 0x4290))
            bench.advance(.seconds(1))
            _ = try bench.drain(central)
            let start = bench.air.now
            for _ in 0..<8 {
                peripheral.receive(fromHost: .acl(HCIACLPacket(handle: ph, boundary: .firstNonFlushable, data: [UInt8](repeating: 1, count: 251))))
            }
            let got = arrivals(bench, central, count: 8, step: .microseconds(20), limit: .seconds(2))
            #expect(got.count == 8)
            // From the first packet's arrival to the last's: the air time of seven exchanges (and an event gap on Coded).
            durations[phy] = (got.last?.time ?? start) - (got.first?.time ?? start)
        }
        let fast = try #require(durations[.le2M]), middle = try #require(durations[.le1M]), slow = try #require(durations[.leCoded])
        #expect(fast < middle && middle < slow, "\(durations)")
        // 2,500 µs per exchange on 1M against 1,392 on 2M; Coded S=8 fits five 17.7 ms exchanges in a 100 ms event, so
        // eight packets need a second event.
        #expect(middle / fast > 1.7 && slow / middle > 5, "\(durations)")
    }

    @Test func faultsCostRetransmissionsAndNothingGetsThroughLosesTheLink() throws {
        let bench = Bench(airTime: model)
        let (central, peripheral, ch, ph) = try linked(bench)
        bench.air.setFaults(LinkFaults(packetLoss: 0.3, seed: 9), between: central, peripheral)
        for n in 0..<20 {
            peripheral.receive(fromHost: .acl(HCIACLPacket(handle: ph, boundary: .firstNonFlushable, data: [UInt8(n)])))
            if n % 6 == 5 { bench.advance(.milliseconds(100)) }
        }
        let got = arrivals(bench, central, count: 20, step: .microseconds(50))
        #expect(got.map { $0.packet.data } == (0..<20).map { [UInt8($0)] })
        #expect(bench.air.retransmissionCount > 0)
        // Nothing gets through any more: the link is lost at its supervision timeout (5 s), on both sides.
        bench.air.setFaults(LinkFaults(packetLoss: 1, seed: 9), between: central, peripheral)
        central.receive(fromHost: .acl(HCIACLPacket(handle: ch, boundary: .firstNonFlushable, data: [1])))
        bench.advance(.seconds(4))
        #expect(bench.disconnections(try bench.drain(peripheral)).isEmpty)
        bench.advance(.seconds(2))
        #expect(bench.disconnections(try bench.drain(central)).map(\.reason) == [.connectionTimeout])
        #expect(bench.disconnections(try bench.drain(peripheral)).map(\.reason) == [.connectionTimeout])
        #expect(bench.air.linksLostToFaultsCount == 1)
    }
}
