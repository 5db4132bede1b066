import BLEFixtures
import BLEHost
import BLEProtocols
import BLETestSupport
import BLETransport
import BLEVirtualController
import BLEWire
import Testing

/// LE credit based channels between two hosts on virtual controllers: real HCI bytes, ACL fragmentation, the
/// signaling exchange and credits, end to end.
@Suite(.timeLimit(.minutes(2))) struct L2CAPChannelTests {
    let spsm = L2CAPSPSM(rawValue: 0x0080)

    /// Bytes that differ with position and seed.
    static func data(_ count: Int, seed: UInt8) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) ^ seed }
    }

    /// Sends `data` in SDUs of at most `mtu` bytes.
    static func sendAll(_ data: [UInt8], on channel: L2CAPChannel, mtu: Int) async throws {
        var offset = 0
        while offset < data.count {
            let end = min(data.count, offset + mtu)
            try await channel.send(Array(data[offset..<end]))
            offset = end
        }
    }

    /// Collects SDUs until `count` bytes arrived.
    static func receiveAll(_ channel: L2CAPChannel, count: Int) async -> [UInt8] {
        var received: [UInt8] = []
        received.reserveCapacity(count)
        for await sdu in channel.incoming {
            received += sdu
            if received.count >= count { break }
        }
        return received
    }

    @Test func oneMegabyteEachWayByteIdentical() async throws {
        let world = World()
        let (peripheral, pc) = try await world.host(aclSize: 251, aclCount: 8)
        let (central, _) = try await world.host(at: 1, aclSize: 251, aclCount: 8)
        let incoming = try await peripheral.listen(spsm: spsm, parameters: .init(mtu: 2048, mps: 247, initialCredits: 8))
        let (c, _) = try await connect(central, peripheral, peripheralAddress: pc.address)
        let centralSide = try await withTimeout {
            try await central.openL2CAPChannel(spsm: spsm, on: c, parameters: .init(mtu: 1024, mps: 200, initialCredits: 5))
        }
        let peripheralSide = try await withTimeout { () -> L2CAPChannel in
            for await channel in incoming { return channel }
            throw TimedOut()
        }
        #expect(centralSide.info.peerMTU == 2048 && centralSide.info.peerMPS == 247)
        #expect(peripheralSide.info.peerMTU == 1024 && peripheralSide.info.remoteCID == centralSide.localCID)

        let up = Self.data(1 << 20, seed: 0x5A)
        let down = Self.data(1 << 20, seed: 0xA5)
        let result = try await withTimeout(100) {
            try await withThrowingTaskGroup(of: (String, [UInt8]).self) { group in
                group.addTask { try await Self.sendAll(up, on: centralSide, mtu: 2048); return ("sent up", []) }
                group.addTask { try await Self.sendAll(down, on: peripheralSide, mtu: 1024); return ("sent down", []) }
                group.addTask { ("up", await Self.receiveAll(peripheralSide, count: up.count)) }
                group.addTask { ("down", await Self.receiveAll(centralSide, count: down.count)) }
                var out: [String: [UInt8]] = [:]
                for try await (name, bytes) in group { out[name] = bytes }
                return out
            }
        }
        #expect(result["up"]?.count == up.count && result["up"] == up)
        #expect(result["down"]?.count == down.count && result["down"] == down)

        // The central closes: the peripheral's stream finishes, and sending there fails.
        try await centralSide.close()
        try await withTimeout { for await _ in peripheralSide.incoming {} }
        await #expect(throws: HostError.self) { try await peripheralSide.send([1]) }
    }

    @Test func refusedWhenNobodyListensAndClosedWithTheLink() async throws {
        let world = World()
        let (peripheral, pc) = try await world.host()
        let (central, _) = try await world.host(at: 1)
        let (c, p) = try await connect(central, peripheral, peripheralAddress: pc.address)
        // Nobody listens on the SPSM: refused with 0x0002.
        do {
            _ = try await withTimeout { try await central.openL2CAPChannel(spsm: self.spsm, on: c) }
            Issue.record("the channel opened")
        } catch let error as HostError {
            #expect(error.code == .l2capConnectionFailed(.refused(.spsmNotSupported)))
        }
        // The peripheral opens one to the central; the link drops; both streams finish.
        let incoming = try await central.listen(spsm: spsm)
        let channel = try await withTimeout { try await peripheral.openL2CAPChannel(spsm: self.spsm, on: p) }
        let other = try await withTimeout { () -> L2CAPChannel in
            for await channel in incoming { return channel }
            throw TimedOut()
        }
        try await channel.send(Array("hello".utf8))
        var iterator = other.incoming.makeAsyncIterator()
        #expect(await iterator.next() == Array("hello".utf8))
        try await central.disconnect(c)
        try await withTimeout { for await _ in channel.incoming {} }
        #expect(await iterator.next() == nil)
    }

    @Test func anUnansweredRequestFailsAfterTheSignalingTimeout() async throws {
        let world = World()
        var quick = HCIHost.Configuration()
        quick.l2capSignalingTimeout = .milliseconds(200)
        let (peripheral, pc) = try await world.host()
        let (central, _) = try await world.host(at: 1, configuration: quick)
        let (c, p) = try await connect(central, peripheral, peripheralAddress: pc.address)
        // The peripheral's signaling channel is taken over by a consumer that never answers.
        let silent = try await peripheral.openFixedChannel(.leSignaling, on: p)
        let clock = ContinuousClock()
        let start = clock.now
        do {
            _ = try await withTimeout { try await central.openL2CAPChannel(spsm: self.spsm, on: c) }
            Issue.record("the channel opened")
        } catch let error as HostError {
            #expect(error.code == .l2capConnectionFailed(.timedOut))
        }
        #expect(clock.now - start >= .milliseconds(200))
        // The request did reach the peer: an LE Credit Based Connection Request for SPSM 0x0080.
        var iterator = silent.makeAsyncIterator()
        let request = try L2CAPSignalingPDU(bytes: await iterator.next() ?? [])
        guard case .leCreditBasedConnectionRequest(_, let fields) = request else {
            Issue.record("unexpected \(request)")
            return
        }
        #expect(fields.spsm == spsm && fields.sourceCID == 0x0040)
    }

    actor Flag {
        var isSet = false
        func set() { isSet = true }
    }

    @Test func aReceiverThatStopsReadingStopsTheSender() async throws {
        let world = World()
        let (peripheral, pc) = try await world.host()
        let (central, _) = try await world.host(at: 1)
        // Four credits, and every SDU fits one K-frame.
        let incoming = try await peripheral.listen(spsm: spsm, parameters: .init(mtu: 100, mps: 100, initialCredits: 4))
        let (c, _) = try await connect(central, peripheral, peripheralAddress: pc.address)
        let sender = try await withTimeout { try await central.openL2CAPChannel(spsm: self.spsm, on: c) }
        let receiver = try await withTimeout { () -> L2CAPChannel in
            for await channel in incoming { return channel }
            throw TimedOut()
        }
        for index in 0..<4 { try await withTimeout { try await sender.send([UInt8(index)]) } }
        // The fifth waits: nobody has read anything, so no credit came back.
        let sent = Flag()
        let fifth = Task {
            try await sender.send([4])
            await sent.set()
        }
        try await Task.sleep(for: .milliseconds(300))
        #expect(await sent.isSet == false)
        // Reading two SDUs returns two credits (half the grant): the fifth goes out and arrives.
        var iterator = receiver.incoming.makeAsyncIterator()
        #expect(await iterator.next() == [0])
        #expect(await iterator.next() == [1])
        try await withTimeout { try await fifth.value }
        #expect(await sent.isSet)
        for expected: UInt8 in 2...4 { #expect(await iterator.next() == [expected]) }
    }

    @Test func aPeerBreakingFlowControlIsDisconnected() async throws {
        let world = World()
        let (peripheral, pc) = try await world.host()
        let (central, _) = try await world.host(at: 1)
        let incoming = try await peripheral.listen(spsm: spsm, parameters: .init(mtu: 100, mps: 50, initialCredits: 4))
        let (c, _) = try await connect(central, peripheral, peripheralAddress: pc.address)
        let channel = try await withTimeout { try await central.openL2CAPChannel(spsm: self.spsm, on: c) }
        let accepted = try await withTimeout { () -> L2CAPChannel in
            for await channel in incoming { return channel }
            throw TimedOut()
        }
        // Bypassing the central's manager: a K-frame announcing a 101-byte SDU against the peripheral's MTU 100.
        try await central.sendL2CAP([0x65, 0x00, 0x01, 0x02], channel: channel.info.remoteCID, on: c)
        // The peripheral disconnects the channel: both sides' streams finish.
        try await withTimeout { for await _ in accepted.incoming {} }
        try await withTimeout { for await _ in channel.incoming {} }
        await #expect(throws: HostError.self) { try await channel.send([1]) }
        // The link itself stays up.
        #expect(await central.connections.map(\.handle) == [c.handle])
    }

    @Test func fiveEnhancedChannelsCarryTheirOwnData() async throws {
        let world = World()
        let (peripheral, pc) = try await world.host(aclSize: 251)
        let (central, _) = try await world.host(at: 1, aclSize: 251)
        let incoming = try await peripheral.listen(spsm: .eatt, parameters: .init(mtu: 600, mps: 128, initialCredits: 6))
        let (c, _) = try await connect(central, peripheral, peripheralAddress: pc.address)
        let channels = try await withTimeout {
            try await central.openL2CAPChannels(spsm: .eatt, count: 5, on: c,
                                                parameters: .init(mtu: 300, mps: 64, initialCredits: 3))
        }
        #expect(channels.count == 5 && channels.allSatisfy { $0.info.isEnhanced && $0.info.peerMTU == 600 && $0.link == c.link })
        let accepted = try await withTimeout { () -> [L2CAPChannel] in
            var out: [L2CAPChannel] = []
            for await channel in incoming {
                out.append(channel)
                if out.count == 5 { break }
            }
            return out
        }
        // 20 KB up and down on every channel at once.
        try await withTimeout(60) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (index, channel) in channels.enumerated() {
                    let peer = try #require(accepted.first { $0.info.remoteCID == channel.localCID })
                    let up = Self.data(20_000, seed: UInt8(index))
                    let down = Self.data(20_000, seed: UInt8(0x80 + index))
                    group.addTask { try await Self.sendAll(up, on: channel, mtu: 600) }
                    group.addTask { try await Self.sendAll(down, on: peer, mtu: 300) }
                    group.addTask { #expect(await Self.receiveAll(peer, count: up.count) == up) }
                    group.addTask { #expect(await Self.receiveAll(channel, count: down.count) == down) }
                }
                try await group.waitForAll()
            }
        }
    }

    @Test func aSenderWaitingForCreditsCanBeCancelled() async throws {
        let world = World()
        let (peripheral, pc) = try await world.host()
        let (central, _) = try await world.host(at: 1)
        let incoming = try await peripheral.listen(spsm: spsm, parameters: .init(mtu: 100, mps: 100, initialCredits: 2))
        let (c, _) = try await connect(central, peripheral, peripheralAddress: pc.address)
        let sender = try await withTimeout { try await central.openL2CAPChannel(spsm: self.spsm, on: c) }
        let receiver = try await withTimeout { () -> L2CAPChannel in
            for await channel in incoming { return channel }
            throw TimedOut()
        }
        for index: UInt8 in 0..<2 { try await withTimeout { try await sender.send([index]) } }
        // The third waits for a credit nobody returns; cancelling the task ends the wait.
        let third = Task { try await sender.send([2]) }
        try await Task.sleep(for: .milliseconds(200))
        third.cancel()
        let outcome = try await withTimeout { await third.result }
        #expect(throws: CancellationError.self) { try outcome.get() }
        // The cancelled SDU was not cut: reading returns credits and all three arrive whole.
        var iterator = receiver.incoming.makeAsyncIterator()
        for expected: UInt8 in 0..<3 { #expect(await iterator.next() == [expected]) }
        try await withTimeout { try await sender.send([3]) }
        #expect(await iterator.next() == [3])
    }

    @Test func dynamicSPSMsAreHandedOutAndGivenBack() async throws {
        let world = World()
        let (peripheral, pc) = try await world.host()
        let (central, _) = try await world.host(at: 1)
        let (first, channels) = try await peripheral.listen()
        let (second, _) = try await peripheral.listen()
        #expect(first == L2CAPSPSM(rawValue: 0x0080) && second == L2CAPSPSM(rawValue: 0x0081))
        let (c, _) = try await connect(central, peripheral, peripheralAddress: pc.address)
        let channel = try await withTimeout { try await central.openL2CAPChannel(spsm: first, on: c) }
        #expect(channel.info.spsm == first)
        var accepted = channels.makeAsyncIterator()
        #expect(await accepted.next()?.info.remoteCID == channel.localCID)
        // Once it stops listening, the SPSM is refused (0x0002) and handed out again.
        await peripheral.stopListening(spsm: first)
        #expect(await accepted.next() == nil)
        do {
            _ = try await withTimeout { try await central.openL2CAPChannel(spsm: first, on: c) }
            Issue.record("the channel opened")
        } catch let error as HostError {
            #expect(error.code == .l2capConnectionFailed(.refused(.spsmNotSupported)))
        }
        #expect(try await peripheral.listen().spsm == first)
        // The channel already open stays open.
        try await withTimeout { try await channel.send([1, 2, 3]) }
    }
}
