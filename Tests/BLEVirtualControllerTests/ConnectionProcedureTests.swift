import BLEVirtualController
import BLEWire
import Testing

/// Connection establishment corner cases, the Connection Update procedure, and links lost to Reset or removal.
@Suite struct ConnectionProcedureTests {
    @Test func scannersStillHearTheEventAnInitiatorConnectsOn() throws {
        let bench = Bench()
        let peripheral = try bench.controller()
        let central = try bench.controller(at: 1)
        let scanner = try bench.controller(at: 1)
        // One advertising event in the window (10.24 s interval).
        try bench.advertise(peripheral, intervalUnits: 0x4000)
        try bench.scan(scanner, active: false)
        try bench.expectSuccess(central, HCILECreateConnection(peerAddressType: .public, peerAddress: peripheral.address))
        bench.advance(.milliseconds(100))
        #expect(bench.connectionCompletes(try bench.drain(central)).map(\.status) == [.success])
        #expect(bench.reports(try bench.drain(scanner)).map(\.address) == [peripheral.address])
    }

    @Test func directedAdvertisingConnectsOnlyItsTarget() throws {
        let bench = Bench()
        let peripheral = try bench.controller()
        let target = try bench.controller(at: 1)
        let bystander = try bench.controller(at: 1)
        try bench.advertise(peripheral, type: .connectableDirectedLowDuty, peer: target.address)
        try bench.expectSuccess(bystander, HCILECreateConnection(peerAddressType: .public, peerAddress: peripheral.address))
        bench.advance(.seconds(1))
        #expect(try bench.drain(bystander).isEmpty, "the bystander is not addressed")
        #expect(peripheral.isAdvertising)
        try bench.expectSuccess(target, HCILECreateConnection(peerAddressType: .public, peerAddress: peripheral.address))
        bench.advance(.milliseconds(200))
        let t = bench.connectionCompletes(try bench.drain(target))
        let p = bench.connectionCompletes(try bench.drain(peripheral))
        #expect(t.map(\.status) == [.success] && t.first?.role == .central)
        #expect(p.map(\.status) == [.success] && p.first?.peerAddress == target.address)
        #expect(try bench.drain(bystander).isEmpty)
    }

    @Test func connectingWithRandomAddresses() throws {
        let bench = Bench()
        let peripheral = try bench.controller()
        let central = try bench.controller(at: 1)
        let peripheralRandom = BluetoothAddress(0xD1D2_D3D4_D5D6)
        let centralRandom = BluetoothAddress(0xC0C1_C2C3_C4C5)
        try bench.expectSuccess(peripheral, HCILESetRandomAddress(address: peripheralRandom))
        try bench.expectSuccess(central, HCILESetRandomAddress(address: centralRandom))
        try bench.advertise(peripheral, ownAddressType: .random)
        // Asking for the peripheral's public address finds nobody: it advertises with its random one.
        try bench.expectSuccess(central, HCILECreateConnection(peerAddressType: .public, peerAddress: peripheral.address,
                                                               ownAddressType: .random))
        bench.advance(.milliseconds(500))
        #expect(try bench.drain(central).isEmpty)
        _ = try bench.send(central, HCILECreateConnectionCancel())
        try bench.expectSuccess(central, HCILECreateConnection(peerAddressType: .random, peerAddress: peripheralRandom,
                                                               ownAddressType: .random))
        bench.advance(.milliseconds(200))
        let c = try #require(bench.connectionCompletes(try bench.drain(central)).first)
        let p = try #require(bench.connectionCompletes(try bench.drain(peripheral)).first)
        #expect(c.status == .success && c.peerAddressType == .random && c.peerAddress == peripheralRandom)
        #expect(p.status == .success && p.peerAddressType == .random && p.peerAddress == centralRandom)
    }

    @Test func createConnectionOnlyWithTheGivenPeer() throws {
        let bench = Bench()
        let central = try bench.controller()
        // Filter policy 1 (the Filter Accept List) is not implemented.
        let events = try bench.send(central, HCILECreateConnection(initiatorFilterPolicy: 1, peerAddressType: .public,
                                                                   peerAddress: .zero))
        #expect(bench.status(of: .leCreateConnection, in: events) == .unsupportedFeatureOrParameterValue)
        // Own random address without one set.
        let random = try bench.send(central, HCILECreateConnection(peerAddressType: .public, peerAddress: .zero,
                                                                   ownAddressType: .random))
        #expect(bench.status(of: .leCreateConnection, in: random) == .invalidCommandParameters)
    }

    @Test func oneConnectionUpdateAtATime() throws {
        let bench = Bench()
        let central = try bench.controller()
        let peripheral = try bench.controller(at: 1)
        let (ch, ph) = try bench.connect(central, peripheral)
        let update = HCILEConnectionUpdate(handle: ch, intervalMin: 0x10, intervalMax: 0x10, maxLatency: 2, supervisionTimeout: 200)
        try bench.expectSuccess(central, update)
        #expect(bench.status(of: .leConnectionUpdate, in: try bench.send(central, update)) == .commandDisallowed)
        bench.advance(.milliseconds(500))
        let expected = HCILEConnectionUpdateCompleteEvent(handle: ch, connectionInterval: 0x10, peripheralLatency: 2, supervisionTimeout: 200)
        #expect(try bench.drain(central) == [.le(.connectionUpdateComplete(expected))])
        #expect(try bench.drain(peripheral).count == 1)
        // The same parameters again: the central's host hears back, the peripheral's is not told of a non-change.
        try bench.expectSuccess(central, update)
        bench.advance(.milliseconds(500))
        #expect(try bench.drain(central) == [.le(.connectionUpdateComplete(expected))])
        #expect(try bench.drain(peripheral).isEmpty)
        // The peripheral cannot start the procedure (no Connection Parameters Request procedure).
        let fromPeripheral = try bench.send(peripheral, HCILEConnectionUpdate(handle: ph, intervalMin: 0x10, intervalMax: 0x10,
                                                                              maxLatency: 0, supervisionTimeout: 200))
        #expect(bench.status(of: .leConnectionUpdate, in: fromPeripheral) == .unsupportedRemoteFeature)
    }

    @Test func theUpdatedSupervisionTimeoutApplies() throws {
        let bench = Bench()
        let central = try bench.controller()
        let peripheral = try bench.controller(at: 1)
        let (ch, _) = try bench.connect(central, peripheral, timeoutUnits: 0x0064)     // 1 s
        try bench.expectSuccess(central, HCILEConnectionUpdate(handle: ch, intervalMin: 0x18, intervalMax: 0x18, maxLatency: 0,
                                                               supervisionTimeout: 0x01F4))   // 5 s
        bench.advance(.milliseconds(500))
        _ = try bench.drain(central)
        peripheral.position = Position(x: 5000)
        bench.advance(.milliseconds(4990))
        #expect(bench.disconnections(try bench.drain(central)).isEmpty)
        bench.advance(.milliseconds(20))
        #expect(bench.disconnections(try bench.drain(central)) == [.init(handle: ch, reason: .connectionTimeout)])
    }

    @Test func disconnectingFromOutOfRangeLeavesThePeerToTimeOut() throws {
        let bench = Bench()
        let central = try bench.controller()
        let peripheral = try bench.controller(at: 1)
        let (ch, ph) = try bench.connect(central, peripheral, timeoutUnits: 0x0064)
        peripheral.position = Position(x: 5000)
        let events = try bench.send(central, HCIDisconnect(handle: ch))
        #expect(bench.disconnections(events) == [.init(handle: ch, reason: .connectionTerminatedByLocalHost)])
        bench.advance(.milliseconds(990))
        #expect(try bench.drain(peripheral).isEmpty)
        bench.advance(.milliseconds(20))
        #expect(bench.disconnections(try bench.drain(peripheral)) == [.init(handle: ph, reason: .connectionTimeout)])
    }

    @Test func resetLosesTheLinksAndKeepsTheBufferAccountRight() throws {
        let bench = Bench()
        let central = try bench.controller(aclSize: 27, aclCount: 2)
        let peripheral = try bench.controller(at: 1)
        let (ch, ph) = try bench.connect(central, peripheral, timeoutUnits: 0x0064)
        // Two packets wait in the central's buffers while the peripheral is away; then the central's host resets.
        peripheral.position = Position(x: 5000)
        for _ in 0..<2 { central.receive(fromHost: .acl(HCIACLPacket(handle: ch, boundary: .firstNonFlushable, data: [1]))) }
        #expect(try bench.drain(central).isEmpty)
        try bench.expectSuccess(central, HCIReset())
        #expect(central.connectionCount == 0)
        // The peripheral never hears of it: its link times out.
        bench.advance(.milliseconds(1010))
        #expect(bench.disconnections(try bench.drain(peripheral)) == [.init(handle: ph, reason: .connectionTimeout)])
        #expect(try bench.drain(central).isEmpty, "nothing about the forgotten link reaches the reset host")
        // After the reset the central has exactly its two buffers again: a third queued packet overflows.
        try bench.expectSuccess(central, HCISetEventMask(mask: 0x3FFF_FFFF_FFFF_FFFF))
        peripheral.position = Position(x: 1)
        let (ch2, _) = try bench.connect(central, peripheral, timeoutUnits: 0x0064)
        peripheral.position = Position(x: 5000)
        for _ in 0..<3 { central.receive(fromHost: .acl(HCIACLPacket(handle: ch2, boundary: .firstNonFlushable, data: [2]))) }
        #expect(try bench.drain(central) == [.dataBufferOverflow(.init(linkType: 1))])
    }

    @Test func aRemovedCentralTimesOutOnThePeripheral() throws {
        let bench = Bench()
        let central = try bench.controller()
        let peripheral = try bench.controller(at: 1)
        let (_, ph) = try bench.connect(central, peripheral, timeoutUnits: 0x0032)   // 500 ms
        central.remove()
        #expect(central.connectionCount == 0 && peripheral.connectionCount == 1)
        bench.advance(.milliseconds(490))
        #expect(try bench.drain(peripheral).isEmpty)
        bench.advance(.milliseconds(20))
        #expect(bench.disconnections(try bench.drain(peripheral)) == [.init(handle: ph, reason: .connectionTimeout)])
        #expect(peripheral.connectionCount == 0)
    }

    @Test func completedPacketsArePerHandle() throws {
        let bench = Bench()
        let central = try bench.controller()
        let p1 = try bench.controller(at: 1)
        let p2 = try bench.controller(at: 2)
        let (h1, _) = try bench.connect(central, p1)
        let (h2, _) = try bench.connect(central, p2)
        #expect(h1 != h2)
        var completed: [ConnectionHandle: Int] = [:]
        for (handle, count) in [(h1, 3), (h2, 2)] {
            for _ in 0..<count {
                central.receive(fromHost: .acl(HCIACLPacket(handle: handle, boundary: .firstNonFlushable, data: [0])))
            }
        }
        for case .numberOfCompletedPackets(let e) in try bench.drain(central) {
            for entry in e.entries { completed[entry.handle, default: 0] += Int(entry.completedPackets) }
        }
        #expect(completed == [h1: 3, h2: 2])
        #expect(bench.drainACL(p1).count == 3 && bench.drainACL(p2).count == 2)
    }
}
