import BLEVirtualController
import BLEWire
import Testing

@Suite struct ConnectionTests {
    @Test func connectGivesBothSidesTheRightRoles() throws {
        let bench = Bench()
        let central = try bench.controller()
        let peripheral = try bench.controller(at: 3)
        try bench.advertise(peripheral)
        try bench.expectSuccess(central, HCILECreateConnection(peerAddressType: .public, peerAddress: peripheral.address,
                                                               connectionIntervalMin: 0x18, connectionIntervalMax: 0x28,
                                                               supervisionTimeout: 0x01F4))
        bench.advance(.milliseconds(200))
        let c = try #require(try bench.drain(central).compactMap { if case .le(.connectionComplete(let e)) = $0 { e } else { nil } }.first)
        let p = try #require(try bench.drain(peripheral).compactMap { if case .le(.connectionComplete(let e)) = $0 { e } else { nil } }.first)
        #expect(c.status == .success && p.status == .success)
        #expect(c.role == .central && p.role == .peripheral)
        #expect(c.peerAddress == peripheral.address && p.peerAddress == central.address)
        #expect(c.connectionInterval == 0x28 && p.connectionInterval == 0x28 && c.supervisionTimeout == 0x01F4)
        // The peripheral stopped advertising when the link came up.
        let scanner = try bench.controller(at: 1)
        try bench.scan(scanner, active: false)
        bench.advance(.seconds(1))
        #expect(bench.reports(try bench.drain(scanner)).isEmpty)
        #expect(central.connectionCount == 1 && peripheral.connectionCount == 1)
    }

    /// A host that unmasks LE Enhanced Connection Complete gets it instead of LE Connection Complete, on both sides and
    /// for a cancelled creation (Core 5.4, Vol 4, Part E, 7.7.65.10: with both unmasked, only the enhanced event is
    /// sent). Linux unmasks both and, after LE Extended Create Connection, waits for the enhanced event alone: given
    /// the legacy one it cancelled a connection that had completed and then could not disconnect it
    /// (scripts/bluez-test).
    @Test func enhancedConnectionCompleteReplacesTheLegacyEventWhenUnmasked() throws {
        let bench = Bench()
        let central = try bench.controller()
        let peripheral = try bench.controller(at: 3)
        let both: UInt64 = 0xFFFF_FFFF
        try bench.expectSuccess(central, HCILESetEventMask(mask: both))
        try bench.expectSuccess(peripheral, HCILESetEventMask(mask: both))
        try bench.advertise(peripheral)
        try bench.expectSuccess(central, HCILECreateConnection(peerAddressType: .public, peerAddress: peripheral.address,
                                                               connectionIntervalMin: 0x18, connectionIntervalMax: 0x28,
                                                               supervisionTimeout: 0x01F4))
        bench.advance(.milliseconds(200))
        let centralEvents = try bench.drain(central)
        let peripheralEvents = try bench.drain(peripheral)
        for events in [centralEvents, peripheralEvents] {
            #expect(!events.contains { if case .le(.connectionComplete) = $0 { true } else { false } })
        }
        let c = try #require(centralEvents.compactMap { if case .le(.enhancedConnectionComplete(let e)) = $0 { e } else { nil } }.first)
        let p = try #require(peripheralEvents.compactMap { if case .le(.enhancedConnectionComplete(let e)) = $0 { e } else { nil } }.first)
        #expect(c.status == .success && p.status == .success)
        #expect(c.role == .central && p.role == .peripheral)
        #expect(c.peerAddress == peripheral.address && c.peerAddressType == .public && p.peerAddress == central.address)
        #expect(c.handle != 0 && c.connectionInterval == 0x28 && c.supervisionTimeout == 0x01F4)
        #expect(c.localResolvablePrivateAddress == .zero && c.peerResolvablePrivateAddress == .zero)

        // A cancelled creation ends with the enhanced event too.
        let other = try bench.controller(at: 1)
        try bench.expectSuccess(other, HCILESetEventMask(mask: both))
        try bench.expectSuccess(other, HCILECreateConnection(peerAddressType: .public, peerAddress: BluetoothAddress(0x1234)))
        let events = try bench.send(other, HCILECreateConnectionCancel())
        let cancelled: [HCIStatus] = events.compactMap { if case .le(.enhancedConnectionComplete(let e)) = $0 { e.status } else { nil } }
        #expect(cancelled == [.unknownConnectionIdentifier])
        #expect(!events.contains { if case .le(.connectionComplete) = $0 { true } else { false } })

        // Only the legacy event unmasked: the legacy event, as before.
        let legacy = try bench.controller(at: 2)
        try bench.expectSuccess(legacy, HCILESetEventMask(mask: 0x1F))
        try bench.expectSuccess(legacy, HCILECreateConnection(peerAddressType: .public, peerAddress: BluetoothAddress(0x1234)))
        let legacyEvents = try bench.send(legacy, HCILECreateConnectionCancel())
        let legacyCancelled: [HCIStatus] = legacyEvents.compactMap { if case .le(.connectionComplete(let e)) = $0 { e.status } else { nil } }
        #expect(legacyCancelled == [.unknownConnectionIdentifier])
    }

    @Test func createConnectionCancel() throws {
        let bench = Bench()
        let central = try bench.controller()
        try bench.expectSuccess(central, HCILECreateConnection(peerAddressType: .public, peerAddress: BluetoothAddress(0x1234)))
        // Nobody advertises: still pending after a while; a second create is disallowed.
        bench.advance(.seconds(1))
        #expect(try bench.drain(central).isEmpty)
        let again = try bench.send(central, HCILECreateConnection(peerAddressType: .public, peerAddress: BluetoothAddress(0x1234)))
        #expect(bench.status(of: .leCreateConnection, in: again) == .commandDisallowed)
        let events = try bench.send(central, HCILECreateConnectionCancel())
        #expect(bench.status(of: .leCreateConnectionCancel, in: events) == .success)
        let complete = events.compactMap { if case .le(.connectionComplete(let e)) = $0 { e } else { nil } }
        #expect(complete.map(\.status) == [.unknownConnectionIdentifier])
        // The Command Complete comes before the LE Connection Complete.
        if case .commandComplete = events.first {} else { Issue.record("order: \(events)") }
    }

    @Test func aclBothWaysWithFragmentationAndFlowControl() throws {
        let bench = Bench()
        let central = try bench.controller(aclSize: 27, aclCount: 4)
        let peripheral = try bench.controller(at: 1, aclSize: 251, aclCount: 2)
        let (ch, ph) = try bench.connect(central, peripheral)
        // A 251-byte L2CAP PDU from the central host in 27-byte fragments (flow control: 4 at a time).
        let pdu = (0..<251).map { UInt8(truncatingIfNeeded: $0) }
        var fragments: [HCIACLPacket] = []
        var offset = 0
        while offset < pdu.count {
            let end = min(offset + 27, pdu.count)
            fragments.append(HCIACLPacket(handle: ch, boundary: offset == 0 ? .firstNonFlushable : .continuing, data: Array(pdu[offset..<end])))
            offset = end
        }
        #expect(fragments.count == 10)
        var completed = 0
        for fragment in fragments {
            central.receive(fromHost: .acl(fragment))
            completed += bench.completedPackets(try bench.drain(central))
        }
        #expect(completed == 10, "every packet's buffer is returned with Number Of Completed Packets")
        let received = bench.drainACL(peripheral)
        // The peripheral's controller fragments to its own buffer size (251), so each 27-byte fragment passes as is.
        #expect(received.allSatisfy { $0.handle == ph })
        #expect(received.first?.boundary == .firstFlushable)
        #expect(received.dropFirst().allSatisfy { $0.boundary == .continuing })
        #expect(received.flatMap(\.data) == pdu)
        // The other way: one 251-byte host packet arrives at the central as 27-byte fragments.
        peripheral.receive(fromHost: .acl(HCIACLPacket(handle: ph, boundary: .firstNonFlushable, data: pdu)))
        #expect(bench.completedPackets(try bench.drain(peripheral)) == 1)
        let back = bench.drainACL(central)
        #expect(back.map(\.data.count) == [27, 27, 27, 27, 27, 27, 27, 27, 27, 8])
        #expect(back.flatMap(\.data) == pdu)
    }

    @Test func overrunningBuffersIsReported() throws {
        let bench = Bench()
        let central = try bench.controller(aclSize: 27, aclCount: 2)
        let peripheral = try bench.controller(at: 2000 /* out of range once connected */)
        peripheral.position = Position(x: 1)
        let (ch, _) = try bench.connect(central, peripheral)
        // Too long for the buffer: overflow event and the packet is dropped.
        central.receive(fromHost: .acl(HCIACLPacket(handle: ch, boundary: .firstNonFlushable, data: Array(repeating: 1, count: 28))))
        #expect(try bench.drain(central) == [.dataBufferOverflow(.init(linkType: 1))])
        // Peer out of reach: packets wait in the buffers; the third has no buffer.
        peripheral.position = Position(x: 5000)
        for _ in 0..<3 {
            central.receive(fromHost: .acl(HCIACLPacket(handle: ch, boundary: .firstNonFlushable, data: [1, 2, 3])))
        }
        #expect(try bench.drain(central) == [.dataBufferOverflow(.init(linkType: 1))])
        // Back in reach before the supervision timeout: the two buffered packets go out.
        peripheral.position = Position(x: 1)
        #expect(bench.completedPackets(try bench.drain(central)) == 2)
        #expect(bench.drainACL(peripheral).count == 2)
        // Unknown handle: dropped and counted.
        central.receive(fromHost: .acl(HCIACLPacket(handle: 0x0EEE, boundary: .firstNonFlushable, data: [1])))
        #expect(bench.air.droppedACLPacketCount == 1)
    }

    @Test func connectionUpdateReachesBothSides() throws {
        let bench = Bench()
        let central = try bench.controller()
        let peripheral = try bench.controller(at: 1)
        let (ch, ph) = try bench.connect(central, peripheral)
        let status = try bench.send(central, HCILEConnectionUpdate(handle: ch, intervalMin: 6, intervalMax: 6, maxLatency: 0,
                                                                   supervisionTimeout: 100))
        #expect(status == [.commandStatus(.init(status: .success, opcode: .leConnectionUpdate))])
        bench.advance(.milliseconds(500))
        let c = try bench.drain(central)
        let p = try bench.drain(peripheral)
        #expect(c == [.le(.connectionUpdateComplete(.init(handle: ch, connectionInterval: 6, peripheralLatency: 0, supervisionTimeout: 100)))])
        #expect(p == [.le(.connectionUpdateComplete(.init(handle: ph, connectionInterval: 6, peripheralLatency: 0, supervisionTimeout: 100)))])
        // Invalid parameters and unknown handles are refused.
        let bad = try bench.send(central, HCILEConnectionUpdate(handle: ch, intervalMin: 6, intervalMax: 6, maxLatency: 0, supervisionTimeout: 1))
        #expect(bench.status(of: .leConnectionUpdate, in: bad) == .invalidCommandParameters)
        let unknown = try bench.send(central, HCILEConnectionUpdate(handle: 0x0777, intervalMin: 6, intervalMax: 6, maxLatency: 0, supervisionTimeout: 100))
        #expect(bench.status(of: .leConnectionUpdate, in: unknown) == .unknownConnectionIdentifier)
    }

    @Test func disconnectFromEitherSide() throws {
        for fromCentral in [true, false] {
            let bench = Bench()
            let central = try bench.controller()
            let peripheral = try bench.controller(at: 1)
            let (ch, ph) = try bench.connect(central, peripheral)
            let (local, remote, localHandle, remoteHandle) = fromCentral ? (central, peripheral, ch, ph) : (peripheral, central, ph, ch)
            let events = try bench.send(local, HCIDisconnect(handle: localHandle, reason: .remoteUserTerminatedConnection))
            #expect(bench.status(of: .disconnect, in: events) == .success)
            #expect(bench.disconnections(events) == [.init(handle: localHandle, reason: .connectionTerminatedByLocalHost)])
            #expect(bench.disconnections(try bench.drain(remote)) == [.init(handle: remoteHandle, reason: .remoteUserTerminatedConnection)])
            #expect(central.connectionCount == 0 && peripheral.connectionCount == 0)
            let again = try bench.send(local, HCIDisconnect(handle: localHandle))
            #expect(bench.status(of: .disconnect, in: again) == .unknownConnectionIdentifier)
        }
    }

    @Test func disconnectWithAForbiddenReasonIsRefused() throws {
        let bench = Bench()
        let central = try bench.controller()
        let peripheral = try bench.controller(at: 1)
        let (ch, _) = try bench.connect(central, peripheral)
        let events = try bench.send(central, HCIDisconnect(handle: ch, reason: .connectionTimeout))
        #expect(bench.status(of: .disconnect, in: events) == .invalidCommandParameters)
        #expect(central.connectionCount == 1)
    }

    @Test func movingOutOfRangeDropsTheLinkAfterTheSupervisionTimeout() throws {
        let bench = Bench()
        let central = try bench.controller()
        let peripheral = try bench.controller(at: 1)
        let (ch, ph) = try bench.connect(central, peripheral, timeoutUnits: 0x0064)   // 1 s
        peripheral.position = Position(x: 5000)
        bench.advance(.milliseconds(990))
        #expect(bench.disconnections(try bench.drain(central)).isEmpty, "not before the timeout")
        bench.advance(.milliseconds(20))
        #expect(bench.disconnections(try bench.drain(central)) == [.init(handle: ch, reason: .connectionTimeout)])
        #expect(bench.disconnections(try bench.drain(peripheral)) == [.init(handle: ph, reason: .connectionTimeout)])
    }

    @Test func comingBackInTimeKeepsTheLink() throws {
        let bench = Bench()
        let central = try bench.controller()
        let peripheral = try bench.controller(at: 1)
        _ = try bench.connect(central, peripheral, timeoutUnits: 0x0064)
        peripheral.position = Position(x: 5000)
        bench.advance(.milliseconds(500))
        peripheral.position = Position(x: 1)
        bench.advance(.seconds(3))
        #expect(bench.disconnections(try bench.drain(central)).isEmpty)
        #expect(central.connectionCount == 1)
    }

    @Test func vanishedHostTimesOutOnThePeer() throws {
        let bench = Bench()
        let central = try bench.controller()
        let peripheral = try bench.controller(at: 1)
        let (ch, _) = try bench.connect(central, peripheral, timeoutUnits: 0x00C8)   // 2 s
        peripheral.remove()
        bench.advance(.milliseconds(1990))
        #expect(bench.disconnections(try bench.drain(central)).isEmpty)
        bench.advance(.milliseconds(20))
        #expect(bench.disconnections(try bench.drain(central)) == [.init(handle: ch, reason: .connectionTimeout)])
    }

    @Test func severalLinksOnOneController() throws {
        let bench = Bench()
        let peripheral = try bench.controller()
        var centralHandles: [ConnectionHandle] = []
        var peripheralHandles: [ConnectionHandle] = []
        var centrals: [VirtualController] = []
        for i in 0..<3 {
            let central = try bench.controller(at: Double(i + 1))
            let (ch, ph) = try bench.connect(central, peripheral)
            centrals.append(central)
            centralHandles.append(ch)
            peripheralHandles.append(ph)
        }
        #expect(peripheral.connectionCount == 3)
        #expect(Set(peripheralHandles).count == 3)
        // Data from each central reaches the peripheral on that central's handle.
        for (i, central) in centrals.enumerated() {
            central.receive(fromHost: .acl(HCIACLPacket(handle: centralHandles[i], boundary: .firstNonFlushable, data: [UInt8(i)])))
        }
        let received = bench.drainACL(peripheral)
        #expect(received.map(\.handle) == peripheralHandles)
        #expect(received.map(\.data) == [[0], [1], [2]])
        // Read RSSI per link follows geometry: centrals at 1, 2, 3 m → −40, −46, −50 dBm.
        let rssi = try peripheralHandles.map { try bench.call(peripheral, HCIReadRSSI(handle: $0)).rssi }
        #expect(rssi == [-40, -46, -50])
    }

    @Test func readRemoteFeaturesAndDataLength() throws {
        let bench = Bench()
        let central = try bench.controller()
        let peripheral = try bench.controller(at: 1)
        let (ch, ph) = try bench.connect(central, peripheral)
        let events = try bench.send(central, HCILEReadRemoteFeatures(handle: ch))
        #expect(events.contains(.le(.readRemoteFeaturesComplete(.init(handle: ch, features: [.encryption, .dataPacketLengthExtension, .le2MPHY, .leCodedPHY,
                                                                                              .extendedAdvertising])))))
        let dl = try bench.send(central, HCILESetDataLength(handle: ch, txOctets: 251, txTime: 2120))
        #expect(bench.status(of: .leSetDataLength, in: dl) == .success)
        #expect(dl.contains(.le(.dataLengthChange(.init(handle: ch, maxTxOctets: 251, maxTxTime: 2120, maxRxOctets: 27, maxRxTime: 328)))))
        #expect(try bench.drain(peripheral).contains(.le(.dataLengthChange(.init(handle: ph, maxTxOctets: 27, maxTxTime: 328, maxRxOctets: 251, maxRxTime: 2120)))))
    }
}
