import BLEFixtures
import BLEHost
import BLEProtocols
import BLETestSupport
import BLETransport
import BLEVirtualController
import BLEWire
import Testing

/// Nothing lost at close (issue 23, item 3): data a channel's sender was told went out reaches the peer even when the
/// channel is closed, and the link disconnected, right after the last send.
@Suite(.timeLimit(.minutes(2))) struct L2CAPCloseDeliveryTests {
    let spsm = L2CAPSPSM(rawValue: 0x0080)

    @Test func closingAndDisconnectingRightAfterTheLastSendLosesNothing() async throws {
        let world = World()
        let (peripheral, pc) = try await world.host(aclSize: 27, aclCount: 4)
        let (central, _) = try await world.host(at: 1, aclSize: 27, aclCount: 4)
        let incoming = try await peripheral.listen(spsm: spsm, parameters: .init(mtu: 2048, mps: 247, initialCredits: 16))
        let (c, _) = try await connect(central, peripheral, peripheralAddress: pc.address)
        let sender = try await withTimeout { try await central.openL2CAPChannel(spsm: self.spsm, on: c) }
        let receiver = try await withTimeout { () -> L2CAPChannel in
            for await channel in incoming { return channel }
            throw TimedOut()
        }
        // The receiving side takes everything until its channel (or link) closes.
        let received = Task { () -> [UInt8] in
            var all: [UInt8] = []
            for await sdu in receiver.incoming { all += sdu }
            return all
        }
        let data = L2CAPChannelTests.data(256 << 10, seed: 0x3C)
        try await withTimeout(60) { try await L2CAPChannelTests.sendAll(data, on: sender, mtu: sender.peerMTU) }
        // No pause: close the channel and drop the link at once, as `ble l2cap connect --send` does.
        let delivery = try await sender.close()
        #expect(delivery == L2CAPDelivery(sentOctets: data.count, confirmedOctets: data.count))
        #expect(try await central.disconnect(c) == .completed)
        let got = try await withTimeout(30) { await received.value }
        #expect(got.count == data.count)
        let identical = got == data
        #expect(identical, "the bytes received differ from those sent")
    }

    /// The link's disconnection alone (no channel close) waits for the link's data too.
    @Test func disconnectingRightAfterTheLastSendLosesNothing() async throws {
        let world = World()
        let (peripheral, pc) = try await world.host(aclSize: 27, aclCount: 4)
        let (central, _) = try await world.host(at: 1, aclSize: 27, aclCount: 4)
        let incoming = try await peripheral.listen(spsm: spsm, parameters: .init(mtu: 2048, mps: 247, initialCredits: 16))
        let (c, _) = try await connect(central, peripheral, peripheralAddress: pc.address)
        let sender = try await withTimeout { try await central.openL2CAPChannel(spsm: self.spsm, on: c) }
        let receiver = try await withTimeout { () -> L2CAPChannel in
            for await channel in incoming { return channel }
            throw TimedOut()
        }
        let received = Task { () -> [UInt8] in
            var all: [UInt8] = []
            for await sdu in receiver.incoming { all += sdu }
            return all
        }
        let data = L2CAPChannelTests.data(64 << 10, seed: 0x77)
        try await withTimeout(60) { try await L2CAPChannelTests.sendAll(data, on: sender, mtu: sender.peerMTU) }
        #expect(try await central.disconnect(c) == .completed)
        let got = try await withTimeout(30) { await received.value }
        #expect(got.count == data.count)
        let identical = got == data
        #expect(identical, "the bytes received differ from those sent")
        // The channel closed with its link, after everything was confirmed: closing it now says so.
        #expect(try await sender.close() == L2CAPDelivery(sentOctets: data.count, confirmedOctets: data.count))
    }

    /// A close whose data cannot be delivered in time closes anyway and says how much was not confirmed.
    @Test func aCloseThatRunsOutOfTimeSaysWhatWasNotConfirmed() async throws {
        let world = World()
        let (peripheral, pc) = try await world.host()
        let (central, _) = try await world.host(at: 1)
        // The receiver grants no credits (its consumer would grant them, and never does): the K-frames wait for ever.
        let incoming = try await peripheral.listen(spsm: spsm, parameters: .init(mtu: 512, mps: 64, initialCredits: 0))
        let (c, _) = try await connect(central, peripheral, peripheralAddress: pc.address)
        let sender = try await withTimeout { try await central.openL2CAPChannel(spsm: self.spsm, on: c) }
        let receiver = try await withTimeout { () -> L2CAPChannel in
            for await channel in incoming { return channel }
            throw TimedOut()
        }
        let stuck = Task { try await sender.send(Array(repeating: 0xAB, count: 500)) }   // 8 K-frames, no credit
        try await Task.sleep(for: .milliseconds(100))
        stuck.cancel()
        _ = await stuck.result
        let clock = ContinuousClock()
        let start = clock.now
        do {
            let delivery = try await sender.close(within: .milliseconds(300))
            Issue.record("the close reported everything delivered: \(delivery)")
        } catch let error as HostError {
            guard let delivery = error.code.delivery else {
                Issue.record("unexpected error \(error)")
                return
            }
            #expect(delivery.sentOctets == 500 && delivery.confirmedOctets == 0 && delivery.unconfirmedOctets == 500)
        }
        #expect(clock.now - start >= .milliseconds(300))
        #expect(clock.now - start < .seconds(3))
        // The channel is closed all the same: the receiver's stream finishes.
        try await withTimeout { for await _ in receiver.incoming {} }
    }
}
