import BLEProtocols
import BLEWire
import Testing

/// Closing after the data (issue 23, item 3), with no sockets and time injected: a channel's Disconnection Request and a
/// link's HCI Disconnect wait until the controller completed what was queued before them, bounded by a timer the test
/// fires itself.
@Suite struct ACLDrainTests {
    static let handle: ConnectionHandle = 0x0040
    static let cid = L2CAPChannelID(rawValue: 0x40)
    /// Disconnection Request, identifier 1, DCID 0x0040, SCID 0x0040, on the LE signaling channel.
    static let disconnectionRequest = L2CAPBasicFrame(channelID: .leSignaling, payload: [0x06, 0x01, 0x04, 0x00, 0x40, 0x00, 0x40, 0x00])

    /// The host's glue, in miniature: one link's L2CAP manager (a peripheral with channel 0x0040 the peer opened: the
    /// peer's MTU 100, MPS 30, 5 credits), the controller's buffers (27 octets, 2 buffers), the drain waits, the
    /// channel's ledger, and what went to the controller in order.
    struct Host {
        var l2cap = L2CAPChannelManager(role: .peripheral)
        var flow = ACLFlow(bufferSize: 27, bufferCount: 2)
        var drain = ACLDrain<Int>()
        var ledger = DeliveryLedger()
        /// ACL packets handed to the controller, in order.
        var toController: [HCIACLPacket] = []
        /// Timers running, and waits finished.
        var timers: Set<Int> = []
        var finished: [Int: DeliveryOutcome] = [:]

        init() throws {
            try l2cap.listen(spsm: L2CAPSPSM(rawValue: 0x80), parameters: .init(mtu: 100, mps: 30, initialCredits: 10))
            _ = l2cap.receive(signaling("14 01 0a00 8000 4000 6400 1e00 0500"))
        }

        mutating func perform(_ actions: [L2CAPChannelManager.Action]) {
            for action in actions {
                switch action {
                case .send(let frame): toController += flow.enqueue(handle: ACLDrainTests.handle, pdu: frame.encoded)
                case .readyToSend(let cid):
                    ledger.handedOn(throughPacket: flow.queuedTotal(handle: ACLDrainTests.handle))
                    perform(drain.channelQueueEmptied(cid, handle: ACLDrainTests.handle, flow: flow))
                default: break
                }
            }
        }

        mutating func perform(_ actions: [ACLDrain<Int>.Action]) {
            for action in actions {
                switch action {
                case .startTimer(let key, _): timers.insert(key)
                case .cancelTimer(let key): timers.remove(key)
                case .finish(let key, let outcome): finished[key] = outcome
                }
            }
        }

        mutating func send(_ sdu: [UInt8]) throws {
            perform(try l2cap.send(sdu, on: ACLDrainTests.cid))
            ledger.sent(sdu.count)
            if l2cap.queuedFrameCount(on: ACLDrainTests.cid) == 0 {
                ledger.handedOn(throughPacket: flow.queuedTotal(handle: ACLDrainTests.handle))
            }
        }

        /// The controller completes `count` packets (Number Of Completed Packets).
        mutating func complete(_ count: UInt16) {
            toController += flow.receive(.numberOfCompletedPackets(.init(entries: [.init(handle: ACLDrainTests.handle, completedPackets: count)])))
            perform(drain.completed(flow: flow))
            ledger.confirm(completedThrough: flow.completedTotal(handle: ACLDrainTests.handle))
        }

        /// Completes every packet the controller was given, until nothing is outstanding.
        mutating func completeEverything() {
            while flow.outstandingCount(handle: ACLDrainTests.handle) > 0 { complete(UInt16(flow.inFlightCount(handle: ACLDrainTests.handle))) }
        }

        mutating func beginClose(key: Int) {
            perform(drain.wait(key, handle: ACLDrainTests.handle, after: ACLDrainTests.cid,
                               channelQueued: l2cap.queuedFrameCount(on: ACLDrainTests.cid) > 0, flow: flow, timeout: .seconds(5)))
        }

        /// The Disconnection Request, once the close's wait finished.
        mutating func finishClose() throws {
            perform(try l2cap.disconnect(ACLDrainTests.cid))
        }

        /// Whether the Disconnection Request has gone to the controller (whole, in one packet).
        var disconnectionRequestSent: Bool {
            toController.contains { $0.data == ACLDrainTests.disconnectionRequest.encoded }
        }
    }

    @Test func aCloseWaitsForTheControllerToCompleteTheChannelsDataBeforeTheDisconnectionRequest() throws {
        var host = try Host()
        try host.send(pattern(100, seed: 1))              // 4 K-frames, all under the peer's 5 credits
        #expect(host.flow.outstandingCount(handle: Self.handle) > 2, "more packets than controller buffers")
        host.beginClose(key: 1)
        #expect(host.timers == [1])
        #expect(host.finished.isEmpty)
        // The controller completes some of them: still waiting, no Disconnection Request.
        host.complete(2)
        #expect(host.finished.isEmpty)
        #expect(host.ledger.confirmedOctets == 0)
        // All of them: the wait finishes and its timer stops; then the request goes, after every K-frame.
        host.completeEverything()
        #expect(host.finished[1] == .completed)
        #expect(host.timers.isEmpty)
        #expect(!host.disconnectionRequestSent)
        let kFramePackets = host.toController.count
        try host.finishClose()
        #expect(host.disconnectionRequestSent)
        #expect(host.toController.count == kFramePackets + 1)
        #expect(host.ledger.sentOctets == 100 && host.ledger.confirmedOctets == 100)
    }

    @Test func aCloseWaitsForKFramesStillWaitingForCreditsFirst() throws {
        var host = try Host()
        try host.send(pattern(100, seed: 1))              // 4 K-frames: 1 credit left
        try host.send(pattern(100, seed: 2))              // 1 K-frame goes, 3 wait for credits
        #expect(host.l2cap.queuedFrameCount(on: Self.cid) == 3)
        host.beginClose(key: 7)
        // Everything in the flow completes, but three K-frames have not even left: the wait goes on.
        host.completeEverything()
        #expect(host.finished.isEmpty)
        #expect(host.ledger.confirmedOctets == 100)
        // The peer grants credits: the K-frames join the flow (the queue runs empty), then complete.
        host.perform(host.l2cap.receive(signaling("16 01 0400 4000 0a00")))
        #expect(host.l2cap.queuedFrameCount(on: Self.cid) == 0)
        #expect(host.finished.isEmpty, "the mark now covers the K-frames just queued")
        host.completeEverything()
        #expect(host.finished[7] == .completed)
        #expect(host.ledger.confirmedOctets == 200)
    }

    @Test func theWaitRunsOutAndSaysWhatWasNotConfirmed() throws {
        var host = try Host()
        try host.send(pattern(100, seed: 1))
        host.completeEverything()                         // the first SDU is confirmed
        try host.send(pattern(60, seed: 2))               // 1 credit: 1 K-frame goes, 1 waits
        host.beginClose(key: 3)
        host.complete(1)
        #expect(host.finished.isEmpty)
        // The time runs out (the test fires the timer): the close goes ahead, with what was not confirmed.
        host.perform(host.drain.timerFired(3, flow: host.flow))
        guard case .timedOut(let packets)? = host.finished[3] else {
            Issue.record("the wait did not time out: \(String(describing: host.finished[3]))")
            return
        }
        #expect(packets == host.flow.outstandingCount(handle: Self.handle))
        #expect(packets > 0)
        try host.finishClose()
        #expect(host.disconnectionRequestSent)
        #expect(host.l2cap.queuedFrameCount(on: Self.cid) == 0, "what still waited for credits is dropped")
        #expect(host.ledger.sentOctets == 160 && host.ledger.confirmedOctets == 100 && host.ledger.unconfirmedOctets == 60)
        // A timer that fires after its wait ended does nothing.
        #expect(host.drain.timerFired(3, flow: host.flow).isEmpty)
    }

    @Test func aLinkDisconnectionWaitsForTheLinksOutstandingPacketsOnly() throws {
        var host = try Host()
        // Notifications on ATT: 3 PDUs of 30 octets, 2 packets each, 2 controller buffers.
        for value in 0..<3 {
            host.toController += host.flow.enqueue(handle: Self.handle, pdu: L2CAPBasicFrame(channelID: .att, payload: pattern(30, seed: value)).encoded)
        }
        #expect(host.flow.outstandingCount(handle: Self.handle) == 6)
        host.perform(host.drain.wait(9, handle: Self.handle, flow: host.flow, timeout: .seconds(5)))
        #expect(host.timers == [9])
        // What is queued after the disconnection was asked for does not extend the wait.
        host.toController += host.flow.enqueue(handle: Self.handle, pdu: L2CAPBasicFrame(channelID: .att, payload: [1, 2, 3]).encoded)
        host.complete(2)
        host.complete(2)
        #expect(host.finished.isEmpty)
        host.complete(2)
        #expect(host.finished[9] == .completed)
        #expect(host.timers.isEmpty)
        #expect(host.flow.outstandingCount(handle: Self.handle) == 1)
        // With nothing outstanding a wait finishes at once, with no timer.
        host.complete(1)
        #expect(host.drain.wait(10, handle: Self.handle, flow: host.flow, timeout: .seconds(5)) == [.finish(10, .completed)])
    }

    @Test func aPeerDisconnectionEndsEveryWaitAtOnce() throws {
        var host = try Host()
        try host.send(pattern(100, seed: 1))
        host.beginClose(key: 1)
        host.perform(host.drain.wait(2, handle: Self.handle, flow: host.flow, timeout: .seconds(5)))
        host.perform(host.drain.wait(3, handle: 0x0041, flow: host.flow, timeout: .seconds(5)))   // another link: nothing there
        #expect(host.finished == [3: .completed])
        host.complete(1)
        let outstanding = host.flow.outstandingCount(handle: Self.handle)
        // The peer ends the link (Disconnection Complete): the waits end now, not when their timers would fire.
        host.perform(host.drain.linkClosed(handle: Self.handle, flow: host.flow))
        #expect(host.finished[1] == .linkClosed(unconfirmedPackets: outstanding))
        #expect(host.finished[2] == .linkClosed(unconfirmedPackets: outstanding))
        #expect(host.timers.isEmpty)
        #expect(host.drain.isEmpty)
        _ = host.flow.connectionClosed(handle: Self.handle)
        #expect(host.flow.queuedTotal(handle: Self.handle) == 0 && host.flow.completedTotal(handle: Self.handle) == 0)
    }

    @Test func aCancelledWaitStopsItsTimerAndFinishesNothing() throws {
        var host = try Host()
        try host.send(pattern(100, seed: 1))
        host.beginClose(key: 4)
        host.perform(host.drain.cancel(4))
        #expect(host.timers.isEmpty && host.finished.isEmpty && host.drain.isEmpty)
        host.completeEverything()
        #expect(host.finished.isEmpty)
    }
}

@Suite struct DeliveryLedgerTests {
    @Test func octetsAreConfirmedMarkByMarkAndNeverOverstated() {
        var ledger = DeliveryLedger()
        ledger.sent(100)
        ledger.handedOn(throughPacket: 5)
        ledger.sent(50)
        ledger.handedOn(throughPacket: 8)
        ledger.sent(10)                                   // not in the flow yet: no mark covers it
        ledger.confirm(completedThrough: 4)
        #expect(ledger.confirmedOctets == 0)
        ledger.confirm(completedThrough: 7)
        #expect(ledger.confirmedOctets == 100)
        ledger.confirm(completedThrough: 100)
        #expect(ledger.confirmedOctets == 150)
        #expect(ledger.sentOctets == 160 && ledger.unconfirmedOctets == 10)
        // Once the last octets join the flow, they are confirmed with the packets that carry them.
        ledger.handedOn(throughPacket: 101)
        ledger.handedOn(throughPacket: 101)
        ledger.confirm(completedThrough: 100)
        #expect(ledger.confirmedOctets == 150)
        ledger.confirm(completedThrough: 101)
        #expect(ledger.confirmedOctets == 160 && ledger.unconfirmedOctets == 0)
    }
}
