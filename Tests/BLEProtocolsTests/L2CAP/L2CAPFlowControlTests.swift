import BLEProtocols
import BLEWire
import Testing

/// A peer breaking LE credit based flow control (Core 5.4, Vol 3, Part A, 3.4.3, 4.24 and 10.1), and fixed-channel
/// routing.
@Suite struct L2CAPFlowControlTests {
    let cid = L2CAPChannelID(rawValue: 0x40)

    /// A peripheral with one channel opened by the peer: local and remote CID 0x0040, our MTU 100, MPS 30 and
    /// `credits` initial credits; the peer's MTU 100, MPS 30, 5 credits.
    func opened(credits: UInt16) throws -> L2CAPChannelManager {
        var manager = L2CAPChannelManager(role: .peripheral)
        try manager.listen(spsm: L2CAPSPSM(rawValue: 0x80), parameters: .init(mtu: 100, mps: 30, initialCredits: credits))
        let reply = manager.receive(signaling("14 01 0a00 8000 4000 6400 1e00 0500"))
        #expect(events(reply).count == 1)
        return manager
    }

    func kFrame(_ hex: String) -> L2CAPBasicFrame { L2CAPBasicFrame(channelID: cid, payload: [UInt8](hex: hex) ?? []) }

    /// The reply to a violation: the channel closes and a Disconnection Request (id 1, DCID 0x0040, SCID 0x0040)
    /// goes out with its RTX timer.
    func expectDisconnect(_ reply: [Action], _ violation: L2CAPChannelViolation,
                          sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(events(reply).first == .channelClosed(cid, .protocolViolation(violation)), sourceLocation: sourceLocation)
        #expect(sentFrames(reply) == ["5: 06 01 04 00 40 00 40 00"], sourceLocation: sourceLocation)
        #expect(startedTimers(reply).count == 1, sourceLocation: sourceLocation)
    }

    @Test func kFrameWithoutCredits() throws {
        var manager = try opened(credits: 0)
        expectDisconnect(manager.receive(kFrame("0100 aa")), .kFrameWithoutCredit)
        // After the one credit granted explicitly is spent (no automatic top-up with 0 initial credits), again.
        var second = try opened(credits: 0)
        #expect(sentFrames(try second.grantCredits(1, on: cid)) == ["5: 16 01 04 00 40 00 01 00"])
        #expect(events(second.receive(kFrame("0200 aa"))).isEmpty)
        let reply = second.receive(kFrame("bb"))
        #expect(events(reply).first == .channelClosed(cid, .protocolViolation(.kFrameWithoutCredit)))
        #expect(sentFrames(reply) == ["5: 06 02 04 00 40 00 40 00"])
    }

    @Test func kFrameLongerThanOurMPS() throws {
        var manager = try opened(credits: 10)
        // 31 bytes against MPS 30.
        expectDisconnect(manager.receive(kFrame("1d00" + String(repeating: "ab", count: 29))), .kFrameExceedsMPS)
    }

    @Test func sduLongerThanOurMTU() throws {
        var manager = try opened(credits: 10)
        // SDU Length 101 against MTU 100.
        expectDisconnect(manager.receive(kFrame("6500 0102")), .sduExceedsMTU)
    }

    @Test func sduOfExactlyTheMTUInKFramesOfExactlyTheMPS() throws {
        var manager = try opened(credits: 10)
        // SDU Length 100 (the MTU): 28 + 30 + 30 + 12 bytes, the first three K-frames exactly MPS 30 long.
        let sdu = pattern(100, seed: 5)
        let frames = [[100, 0] + Array(sdu[0..<28]), Array(sdu[28..<58]), Array(sdu[58..<88]), Array(sdu[88..<100])]
        var delivered: [Action] = []
        for payload in frames {
            delivered += events(manager.receive(L2CAPBasicFrame(channelID: cid, payload: payload.map { UInt8($0) })))
        }
        #expect(delivered == [.deliverSDU(cid, sdu)])
    }

    @Test func kFramesCarryingMoreThanTheSDULength() throws {
        var manager = try opened(credits: 10)
        #expect(events(manager.receive(kFrame("0300 aabb"))).isEmpty)
        expectDisconnect(manager.receive(kFrame("ccdd")), .sduLengthExceeded)
        var single = try opened(credits: 10)
        expectDisconnect(single.receive(kFrame("0100 aabb")), .sduLengthExceeded)
    }

    @Test func firstKFrameWithoutSDULength() throws {
        var manager = try opened(credits: 10)
        expectDisconnect(manager.receive(kFrame("01")), .missingSDULength)
    }

    @Test func creditsPushedPast65535() throws {
        var manager = try opened(credits: 10)
        // The peer granted 5; 65530 more makes exactly 65535: accepted.
        #expect(manager.receive(signaling("16 02 0400 4000 faff")).isEmpty)
        #expect(manager.sendCredits(on: cid) == 65535)
        // One more: disconnect.
        expectDisconnect(manager.receive(signaling("16 03 0400 4000 0100")), .creditOverflow)
    }

    @Test func creditsForAnUnknownCIDAreIgnored() throws {
        var manager = try opened(credits: 10)
        #expect(manager.receive(signaling("16 02 0400 7000 0100")).isEmpty)
        #expect(manager.receive(signaling("16 03 0400 0400 0100")).isEmpty)
        #expect(manager.sendCredits(on: cid) == 5)
    }

    @Test func aClosingChannelDropsDataAndFinishesOnTheResponse() throws {
        var manager = try opened(credits: 10)
        let reply = manager.receive(kFrame("01"))
        let timer = try #require(startedTimers(reply).first)
        let before = manager.droppedFrames
        #expect(manager.receive(kFrame("0100 aa")).isEmpty)
        #expect(manager.droppedFrames == before + 1)
        #expect(throws: L2CAPError(.channelNotOpen, "")) { try manager.send([1], on: cid) }
        // Disconnection Response, id 1, DCID 0x0040 (the peer's), SCID 0x0040 (ours).
        #expect(manager.receive(signaling("07 01 0400 4000 4000")) == [.cancelTimer(timer)])
        #expect(manager.outstandingRequestCount == 0)
        // The CID is gone: frames for it are dropped, a Disconnection Request for it is rejected.
        #expect(manager.receive(kFrame("0100 aa")).isEmpty)
        #expect(sentFrames(manager.receive(signaling("06 09 0400 4000 4000"))) == ["5: 01 09 06 00 02 00 40 00 40 00"])
    }

    @Test func automaticCreditReturnKeepsThePeerGoing() throws {
        var manager = try opened(credits: 4)
        var returned = 0
        // 20 single-frame SDUs: the peer never runs dry, since credits come back at half the window.
        for index in 0..<20 {
            let reply = manager.receive(kFrame("0100 \([UInt8(index)].hexString())"))
            #expect(events(reply) == [.deliverSDU(cid, [UInt8(index)])])
            for frame in sentFrames(reply) {
                #expect(frame == "5: 16 \([UInt8(returned + 1)].hexString()) 04 00 40 00 02 00")
                returned += 1
            }
        }
        #expect(returned == 10)
    }

    @Test func fixedChannelsByRegistration() throws {
        var manager = L2CAPChannelManager(role: .central)
        let att = L2CAPBasicFrame(channelID: .att, payload: [0x02, 0x17, 0x00])
        let smp = L2CAPBasicFrame(channelID: .smp, payload: [0x05, 0x05])
        // Nobody registered: dropped and counted.
        #expect(manager.receive(att).isEmpty && manager.receive(smp).isEmpty)
        #expect(manager.droppedFrames == 2)
        try manager.registerFixedChannel(.att)
        try manager.registerFixedChannel(.smp)
        #expect(manager.receive(att) == [.deliverFixed(.att, [0x02, 0x17, 0x00])])
        #expect(manager.receive(smp) == [.deliverFixed(.smp, [0x05, 0x05])])
        // BR/EDR signaling (0x0001), an undefined fixed CID, a CID past the LE dynamic range, an unknown dynamic CID.
        for raw: UInt16 in [0x0001, 0x0003, 0x0080, 0xFFFF, 0x0041] {
            #expect(manager.receive(L2CAPBasicFrame(channelID: .init(rawValue: raw), payload: [1])).isEmpty)
        }
        #expect(manager.droppedFrames == 7)
        // The signaling channel belongs to the manager; dynamic CIDs are not fixed channels.
        #expect(throws: L2CAPError(.invalidFixedChannel, "")) { try manager.registerFixedChannel(.leSignaling) }
        #expect(throws: L2CAPError(.invalidFixedChannel, "")) { try manager.registerFixedChannel(.init(rawValue: 0x40)) }
        manager.unregisterFixedChannel(.att)
        #expect(manager.receive(att).isEmpty)
        // Each channel is on its own: SMP still delivered; the highest fixed CID (0x003F) registers and delivers.
        #expect(manager.receive(smp) == [.deliverFixed(.smp, [0x05, 0x05])])
        try manager.registerFixedChannel(.init(rawValue: 0x3F))
        #expect(manager.receive(L2CAPBasicFrame(channelID: .init(rawValue: 0x3F), payload: [9])) == [.deliverFixed(.init(rawValue: 0x3F), [9])])
        manager.unregisterFixedChannel(.init(rawValue: 0x1234))   // not a fixed channel: nothing changes
        #expect(manager.receive(smp) == [.deliverFixed(.smp, [0x05, 0x05])])
        #expect(manager.sendFixed([0x03, 0x17, 0x00], on: .att) == [.send(L2CAPBasicFrame(channelID: .att, payload: [0x03, 0x17, 0x00]))])
    }

    @Test func localMisuseThrows() throws {
        var manager = L2CAPChannelManager(role: .central)
        #expect(throws: L2CAPError(.invalidSPSM, "")) { try manager.connect(spsm: L2CAPSPSM(rawValue: 0x100)) }
        #expect(throws: L2CAPError(.invalidSPSM, "")) { try manager.listen(spsm: L2CAPSPSM(rawValue: 0)) }
        #expect(throws: L2CAPError(.invalidParameters, "")) {
            try manager.connect(spsm: L2CAPSPSM(rawValue: 0x80), parameters: .init(mtu: 22, mps: 23, initialCredits: 1))
        }
        #expect(throws: L2CAPError(.channelNotOpen, "")) { try manager.disconnect(L2CAPChannelID(rawValue: 0x40)) }
        var full = L2CAPChannelManager(role: .central, configuration: .init(maximumDynamicChannels: 2))
        _ = try full.connect(spsm: L2CAPSPSM(rawValue: 0x80))
        #expect(throws: L2CAPError(.noFreeChannel, "")) { try full.connectEnhanced(spsm: .eatt, count: 2, parameters: .init(mtu: 64, mps: 64)) }
    }
}
