import BLEProtocols
import BLEWire
import Testing

/// Ping-pong tests: a central and a peripheral manager fed each other's frames.
@Suite struct L2CAPChannelManagerTests {
    let spsm = L2CAPSPSM(rawValue: 0x0080)

    /// Opens one LE credit based channel from the central; returns (central CID, peripheral CID).
    func open(_ link: inout L2CAPLinkPair, central: L2CAPChannelParameters, peripheral: L2CAPChannelParameters) throws
        -> (L2CAPChannelID, L2CAPChannelID) {
        try link.peripheral.listen(spsm: spsm, parameters: peripheral)
        let (cid, actions) = try link.central.connect(spsm: spsm, parameters: central)
        link.run(actions, from: .central)
        let remote = try #require(link.opened(.peripheral).last)
        #expect(link.opened(.central).last?.localCID == cid)
        return (cid, remote.localCID)
    }

    @Test func opensAnLECreditBasedChannel() throws {
        var link = L2CAPLinkPair()
        try link.peripheral.listen(spsm: spsm, parameters: .init(mtu: 1000, mps: 50, initialCredits: 4))
        let (cid, actions) = try link.central.connect(spsm: spsm, parameters: .init(mtu: 2000, mps: 100, initialCredits: 3))
        #expect(cid == L2CAPChannelID(rawValue: 0x0040))
        // LE Credit Based Connection Request, id 1: SPSM 0x0080, SCID 0x0040, MTU 2000, MPS 100, 3 credits
        #expect(sentFrames(actions) == ["5: 14 01 0a 00 80 00 40 00 d0 07 64 00 03 00"])
        #expect(startedTimers(actions).count == 1)
        link.run(actions, from: .central)
        // Response, id 1: DCID 0x0040, MTU 1000, MPS 50, 4 credits, success
        #expect(link.peripheralFrames.map { $0.payload.hexString(separator: " ") } == ["15 01 0a 00 40 00 e8 03 32 00 04 00 00 00"])
        let central = try #require(link.opened(.central).first)
        let peripheral = try #require(link.opened(.peripheral).first)
        #expect(central == L2CAPChannelInfo(localCID: cid, remoteCID: .init(rawValue: 0x40), spsm: spsm,
                                            local: .init(mtu: 2000, mps: 100, initialCredits: 3), peerMTU: 1000,
                                            peerMPS: 50, isEnhanced: false, initiatedLocally: true))
        #expect(peripheral.initiatedLocally == false && peripheral.peerMTU == 2000 && peripheral.peerMPS == 100)
        #expect(link.centralEvents.contains { if case .cancelTimer = $0 { true } else { false } })
        #expect(link.central.outstandingRequestCount == 0)
        #expect(link.central.sendCredits(on: cid) == 4 && link.peripheral.sendCredits(on: peripheral.localCID) == 3)
    }

    @Test func segmentsSDUsLargerThanMPSAndCarriesTheSDULengthFirst() throws {
        var link = L2CAPLinkPair()
        let (cid, remote) = try open(&link, central: .init(mtu: 2000, mps: 100, initialCredits: 10),
                                     peripheral: .init(mtu: 1000, mps: 50, initialCredits: 40))
        link.clearEvents()
        let sdu = pattern(900)
        let actions = try link.central.send(sdu, on: cid)
        let frames = actions.compactMap { if case .send(let f) = $0 { f } else { nil } }
        // 2-byte length + 48 bytes, then 17 frames of 50 and one of 2: 19 K-frames, each at most the peer's MPS.
        #expect(frames.count == 19)
        #expect(frames.allSatisfy { $0.channelID == remote && $0.payload.count <= 50 })
        #expect(frames.first?.payload.prefix(2) == [0x84, 0x03])
        link.run(actions, from: .central)
        #expect(link.delivered(to: .peripheral, on: remote) == [sdu])
        // An SDU above the peer's MTU is refused locally; an empty SDU is one K-frame of its length field.
        #expect(throws: L2CAPError(.sduTooLarge, "")) { try link.central.send(pattern(1001), on: cid) }
        let empty = try link.central.send([], on: cid)
        #expect(sentFrames(empty) == ["40: 00 00"])
        link.run(empty, from: .central)
        #expect(link.delivered(to: .peripheral, on: remote).last == [])
    }

    @Test func senderWaitsForCreditsAndResumes() throws {
        var link = L2CAPLinkPair()
        // The peripheral grants 4 credits and MPS 30: a 300-byte SDU takes 11 K-frames.
        let (cid, remote) = try open(&link, central: .init(mtu: 512, mps: 64, initialCredits: 8),
                                     peripheral: .init(mtu: 512, mps: 30, initialCredits: 4))
        link.clearEvents()
        let sdu = pattern(300, seed: 7)
        let first = try link.central.send(sdu, on: cid)
        #expect(sentFrames(first).count == 4, "only as many K-frames as credits")
        #expect(link.central.queuedFrameCount(on: cid) == 7 && link.central.sendCredits(on: cid) == 0)
        // Feed the peripheral two K-frames: its peer's credits fall to half, so it returns two.
        var credits: [Action] = []
        for action in first.prefix(2) {
            guard case .send(let frame) = action else { continue }
            credits += link.peripheral.receive(frame)
        }
        // Flow Control Credit, id 1 (the peripheral's first own identifier), its CID 0x0040, 2 credits.
        #expect(sentFrames(credits) == ["5: 16 01 04 00 40 00 02 00"])
        let resumed = link.central.receive(try #require(credits.compactMap { if case .send(let f) = $0 { f } else { nil } }.first))
        #expect(sentFrames(resumed).count == 2 && link.central.queuedFrameCount(on: cid) == 5)
        #expect(!resumed.contains(.readyToSend(cid)))
        // Let the link run the rest: the SDU arrives whole and the sender is told its queue drained.
        link.run(Array(first.dropFirst(2)) + resumed, from: .central)
        #expect(link.delivered(to: .peripheral, on: remote) == [sdu])
        #expect(link.centralEvents.contains(.readyToSend(cid)))
        #expect(link.central.queuedFrameCount(on: cid) == 0)
    }

    @Test func hundredKilobytesByteIdenticalBothWays() throws {
        var link = L2CAPLinkPair()
        let (cid, remote) = try open(&link, central: .init(mtu: 700, mps: 64, initialCredits: 5),
                                     peripheral: .init(mtu: 1500, mps: 247, initialCredits: 3))
        let up = pattern(100_000, seed: 1)
        let down = pattern(100_000, seed: 2)
        let sizes = [1, 2, 45, 46, 47, 245, 246, 247, 333, 0, 1500, 999, 700]
        var upOffset = 0
        var downOffset = 0
        var round = 0
        while upOffset < up.count || downOffset < down.count {
            let upSize = min(sizes[round % sizes.count], up.count - upOffset)
            link.run(try link.central.send(Array(up[upOffset..<upOffset + upSize]), on: cid), from: .central)
            upOffset += upSize
            let downSize = min(sizes[(round + 5) % sizes.count], 700, down.count - downOffset)
            link.run(try link.peripheral.send(Array(down[downOffset..<downOffset + downSize]), on: remote), from: .peripheral)
            downOffset += downSize
            round += 1
        }
        #expect(Array(link.delivered(to: .peripheral, on: remote).joined()) == up)
        #expect(Array(link.delivered(to: .central, on: cid).joined()) == down)
        #expect(link.central.queuedFrameCount(on: cid) == 0 && link.peripheral.queuedFrameCount(on: remote) == 0)
        #expect(link.centralFrames.filter { $0.channelID == remote }.allSatisfy { $0.payload.count <= 247 })
        #expect(link.peripheralFrames.filter { $0.channelID == cid }.allSatisfy { $0.payload.count <= 64 })
        let closed = (link.centralEvents + link.peripheralEvents).filter { if case .channelClosed = $0 { true } else { false } }
        #expect(closed.isEmpty)
    }

    @Test func enhancedConnectOfFiveChannels() throws {
        var link = L2CAPLinkPair()
        try link.peripheral.listen(spsm: .eatt, parameters: .init(mtu: 300, mps: 64, initialCredits: 2))
        let (cids, actions) = try link.central.connectEnhanced(spsm: .eatt, count: 5,
                                                               parameters: .init(mtu: 256, mps: 100, initialCredits: 3))
        #expect(cids.map(\.rawValue) == [0x40, 0x41, 0x42, 0x43, 0x44])
        // Credit Based Connection Request, id 1: SPSM 0x0027, MTU 256, MPS 100, 3 credits, SCIDs 0x0040...0x0044
        #expect(sentFrames(actions) == ["5: 17 01 12 00 27 00 00 01 64 00 03 00 40 00 41 00 42 00 43 00 44 00"])
        link.run(actions, from: .central)
        // Response: MTU 300, MPS 64, 2 credits, success, DCIDs 0x0040...0x0044
        #expect(link.peripheralFrames.map { $0.payload.hexString(separator: " ") }
                == ["18 01 12 00 2c 01 40 00 02 00 00 00 40 00 41 00 42 00 43 00 44 00"])
        #expect(link.opened(.central).map(\.localCID) == cids)
        #expect(link.opened(.central).allSatisfy { $0.isEnhanced && $0.peerMTU == 300 && $0.peerMPS == 64 })
        #expect(link.opened(.peripheral).count == 5)
        // Each channel carries its own data.
        for (index, cid) in cids.enumerated() {
            link.run(try link.central.send(pattern(256, seed: index), on: cid), from: .central)
        }
        for (index, info) in link.opened(.peripheral).enumerated() {
            #expect(link.delivered(to: .peripheral, on: info.localCID) == [pattern(256, seed: index)])
        }
        #expect(link.central.openChannels == cids)
        // Six channels, or MTU/MPS under 64, are refused locally.
        #expect(throws: L2CAPError(.invalidParameters, "")) { try link.central.connectEnhanced(spsm: .eatt, count: 6) }
        #expect(throws: L2CAPError(.invalidParameters, "")) {
            try link.central.connectEnhanced(spsm: .eatt, count: 1, parameters: .init(mtu: 63, mps: 64, initialCredits: 1))
        }
    }

    @Test func disconnectFromEitherSide() throws {
        var link = L2CAPLinkPair()
        let (a, remoteA) = try open(&link, central: .init(), peripheral: .init())
        let (b, remoteB) = try open(&link, central: .init(), peripheral: .init())
        link.clearEvents()
        // The central closes A: closed at once, Disconnection Request (DCID = the peer's CID, SCID = ours).
        let actions = try link.central.disconnect(a)
        #expect(events(actions).first == .channelClosed(a, .localRequest))
        #expect(sentFrames(actions) == ["5: 06 03 04 00 40 00 40 00"])
        #expect(throws: L2CAPError(.channelNotOpen, "")) { try link.central.send([1], on: a) }
        link.run(actions, from: .central)
        #expect(link.peripheralEvents == [.channelClosed(remoteA, .remoteRequest)])
        #expect(link.peripheralFrames.map { $0.payload.hexString(separator: " ") } == ["07 03 04 00 40 00 40 00"])
        #expect(link.centralEvents.contains { if case .cancelTimer = $0 { true } else { false } })
        #expect(link.central.outstandingRequestCount == 0 && link.central.openChannels == [b])
        // The peripheral closes B.
        link.clearEvents()
        link.run(try link.peripheral.disconnect(remoteB), from: .peripheral)
        #expect(link.centralEvents == [.channelClosed(b, .remoteRequest)])
        #expect(link.central.openChannels.isEmpty && link.peripheral.openChannels.isEmpty)
        // Both CIDs are free again.
        let (again, _) = try link.central.connect(spsm: spsm)
        #expect(again == a)
    }

    @Test func crossingDisconnectionRequests() throws {
        var link = L2CAPLinkPair()
        let (cid, remote) = try open(&link, central: .init(), peripheral: .init())
        link.clearEvents()
        let fromCentral = try link.central.disconnect(cid)
        let fromPeripheral = try link.peripheral.disconnect(remote)
        // Each receives the other's request while waiting for its own response: both answer and stop waiting.
        let centralAnswer = link.central.receive(try #require(fromPeripheral.compactMap { if case .send(let f) = $0 { f } else { nil } }.first))
        let peripheralAnswer = link.peripheral.receive(try #require(fromCentral.compactMap { if case .send(let f) = $0 { f } else { nil } }.first))
        #expect(sentFrames(centralAnswer).count == 1 && sentFrames(peripheralAnswer).count == 1)
        #expect(events(centralAnswer).allSatisfy { if case .cancelTimer = $0 { true } else { false } })
        #expect(link.central.outstandingRequestCount == 0 && link.peripheral.outstandingRequestCount == 0)
        // The responses then arrive unsolicited and change nothing.
        link.run(centralAnswer.filter { if case .send = $0 { true } else { false } }, from: .central)
        link.run(peripheralAnswer.filter { if case .send = $0 { true } else { false } }, from: .peripheral)
        #expect(link.centralEvents.isEmpty && link.peripheralEvents.isEmpty)
    }

    @Test func connectionParameterUpdateFromThePeripheral() throws {
        var link = L2CAPLinkPair()
        let request = L2CAPConnectionParameterUpdateRequest(intervalMin: 24, intervalMax: 40, latency: 0, timeout: 400)
        let actions = try link.peripheral.requestConnectionParameterUpdate(request)
        #expect(sentFrames(actions) == ["5: 12 01 08 00 18 00 28 00 00 00 90 01"])
        link.run(actions, from: .peripheral)
        #expect(link.centralEvents == [.updateConnectionParameters(request)])
        #expect(link.centralFrames.map { $0.payload.hexString(separator: " ") } == ["13 01 02 00 00 00"])
        #expect(link.peripheralEvents.contains(.connectionParameterUpdateFinished(.answered(.accepted))))
        // Invalid values are refused by the central (result 0x0001) and never reach the controller.
        link.clearEvents()
        let invalid = L2CAPConnectionParameterUpdateRequest(intervalMin: 40, intervalMax: 24, latency: 0, timeout: 400)
        link.run(link.central.receive(signaling("12 07 0800 2800 1800 0000 9001")), from: .central)
        #expect(link.centralFrames.map { $0.payload.hexString(separator: " ") } == ["13 07 02 00 01 00"])
        #expect(!link.centralEvents.contains(.updateConnectionParameters(invalid)))
        // Only a peripheral asks.
        #expect(throws: L2CAPError(.wrongRole, "")) { try link.central.requestConnectionParameterUpdate(request) }
    }

    @Test func signalingTimeouts() throws {
        var manager = L2CAPChannelManager(role: .peripheral, configuration: .init(signalingTimeout: .seconds(7)))
        // A connection request nobody answers fails when its RTX timer fires.
        let (cid, connect) = try manager.connect(spsm: spsm)
        #expect(connect.contains { if case .startTimer(_, .seconds(7)) = $0 { true } else { false } })
        let timer = try #require(startedTimers(connect).first)
        #expect(manager.timerFired(timer) == [.connectionFailed(cid, .timedOut)])
        #expect(manager.timerFired(timer) == [], "a timer fires once")
        // A late response is unsolicited: ignored.
        #expect(manager.receive(signaling("15 01 0a00 4000 1700 1700 0100 0000")).isEmpty)
        #expect(manager.channel(cid) == nil)
        // Enhanced: every channel of the request fails.
        let (cids, enhanced) = try manager.connectEnhanced(spsm: spsm, count: 3, parameters: .init(mtu: 64, mps: 64))
        #expect(manager.timerFired(try #require(startedTimers(enhanced).first)) == cids.map { .connectionFailed($0, .timedOut) })
        // A parameter update request times out.
        let update = try manager.requestConnectionParameterUpdate(.init(intervalMin: 6, intervalMax: 12, latency: 0, timeout: 100))
        #expect(manager.timerFired(try #require(startedTimers(update).first)) == [.connectionParameterUpdateFinished(.timedOut)])
        #expect(manager.outstandingRequestCount == 0)
    }

    @Test func disconnectionWithoutResponseFreesTheCIDOnTimeout() throws {
        var link = L2CAPLinkPair()
        let (cid, _) = try open(&link, central: .init(), peripheral: .init())
        let actions = try link.central.disconnect(cid)
        // The peer never answers: the CID stays reserved...
        let (next, _) = try link.central.connect(spsm: spsm)
        #expect(next != cid)
        // ...until the RTX timer fires.
        #expect(link.central.timerFired(try #require(startedTimers(actions).first)) == [])
        let (reused, _) = try link.central.connect(spsm: spsm)
        #expect(reused == cid)
    }

    @Test func linkLossClosesEverything() throws {
        var link = L2CAPLinkPair()
        let (open, _) = try open(&link, central: .init(), peripheral: .init())
        let (connecting, actions) = try link.central.connect(spsm: spsm)
        let timer = try #require(startedTimers(actions).first)
        let closed = link.central.linkClosed()
        #expect(closed.contains(.cancelTimer(timer)))
        #expect(closed.contains(.channelClosed(open, .linkClosed)))
        #expect(closed.contains(.connectionFailed(connecting, .linkClosed)))
        #expect(link.central.openChannels.isEmpty && link.central.outstandingRequestCount == 0)
    }

    @Test func aSlowConsumerHoldsThePeerBack() throws {
        var link = L2CAPLinkPair()
        link.peripheral = L2CAPChannelManager(role: .peripheral, configuration: .init(creditReturn: .onConsumption))
        let (cid, remote) = try open(&link, central: .init(), peripheral: .init(mtu: 100, mps: 30, initialCredits: 4))
        link.clearEvents()
        // Ten one-frame SDUs: the four the credits cover arrive, the rest wait at the sender.
        for index in 0..<10 { link.run(try link.central.send([UInt8(index)], on: cid), from: .central) }
        #expect(link.delivered(to: .peripheral, on: remote) == (0..<4).map { [UInt8($0)] })
        #expect(link.central.queuedFrameCount(on: cid) == 6)
        #expect(link.peripheralFrames.isEmpty, "no credits while nothing was consumed")
        // The consumer takes one SDU: its credit is held back until half the window (2) can go at once.
        link.run(link.peripheral.consumed(on: remote), from: .peripheral)
        #expect(link.peripheralFrames.isEmpty)
        // A second one: Flow Control Credit of 2, and two more SDUs arrive.
        link.run(link.peripheral.consumed(on: remote), from: .peripheral)
        #expect(link.peripheralFrames.map { $0.payload.hexString(separator: " ") } == ["16 01 04 00 40 00 02 00"])
        #expect(link.delivered(to: .peripheral, on: remote).count == 6)
        // Taking everything lets the rest through.
        for _ in 0..<8 { link.run(link.peripheral.consumed(on: remote), from: .peripheral) }
        #expect(link.delivered(to: .peripheral, on: remote) == (0..<10).map { [UInt8($0)] })
        #expect(link.central.queuedFrameCount(on: cid) == 0 && link.centralEvents.contains(.readyToSend(cid)))
    }

    @Test func anSDULongerThanTheGrantCompletesWithoutConsumption() throws {
        var link = L2CAPLinkPair()
        link.peripheral = L2CAPChannelManager(role: .peripheral, configuration: .init(creditReturn: .onConsumption))
        let (cid, remote) = try open(&link, central: .init(), peripheral: .init(mtu: 300, mps: 30, initialCredits: 2))
        link.clearEvents()
        // 250 bytes take 9 K-frames against 2 credits: released as the peer runs dry mid-SDU.
        let sdu = pattern(250, seed: 3)
        link.run(try link.central.send(sdu, on: cid), from: .central)
        #expect(link.delivered(to: .peripheral, on: remote) == [sdu])
        // Every unconsumed SDU holds at least the credit of its last K-frame: the peer has one credit left, so of
        // three one-frame SDUs the first arrives and the others wait for the consumer.
        for index in 0..<3 { link.run(try link.central.send([UInt8(index)], on: cid), from: .central) }
        #expect(link.delivered(to: .peripheral, on: remote).count == 2)
        link.run(link.peripheral.consumed(on: remote), from: .peripheral)
        #expect(link.delivered(to: .peripheral, on: remote).count == 3)
        link.run(link.peripheral.consumed(2, on: remote), from: .peripheral)
        #expect(link.delivered(to: .peripheral, on: remote).dropFirst() == [[0], [1], [2]])
        // In automatic mode, consumed() changes nothing.
        #expect(link.central.consumed(on: cid).isEmpty)
    }

    @Test func reconfigurationRaisesTheMTU() throws {
        var link = L2CAPLinkPair()
        try link.peripheral.listen(spsm: .eatt, parameters: .init(mtu: 300, mps: 64, initialCredits: 10))
        let (cids, actions) = try link.central.connectEnhanced(spsm: .eatt, count: 2,
                                                               parameters: .init(mtu: 256, mps: 64, initialCredits: 10))
        link.run(actions, from: .central)
        let remotes = link.opened(.peripheral).map(\.localCID)
        #expect(throws: L2CAPError(.sduTooLarge, "")) { try link.peripheral.send(pattern(1000), on: remotes[0]) }
        link.clearEvents()
        // Reconfigure Request, id 2: MTU 1000, MPS 100, our CIDs 0x0040 0x0041.
        let request = try link.central.reconfigure(cids, mtu: 1000, mps: 100)
        #expect(sentFrames(request) == ["5: 19 02 08 00 e8 03 64 00 40 00 41 00"])
        link.run(request, from: .central)
        #expect(link.peripheralFrames.map { $0.payload.hexString(separator: " ") } == ["1a 02 02 00 00 00"])
        #expect(link.centralEvents.contains(.reconfigurationFinished(cids, .answered(.success))))
        #expect(link.central.channel(cids[0])?.local.mtu == 1000 && link.central.channel(cids[1])?.local.mps == 100)
        #expect(link.peripheral.channel(remotes[1])?.peerMTU == 1000)
        // The peer may now send 1000-byte SDUs in 100-byte K-frames.
        link.run(try link.peripheral.send(pattern(1000, seed: 9), on: remotes[0]), from: .peripheral)
        #expect(link.delivered(to: .central, on: cids[0]) == [pattern(1000, seed: 9)])
        // Refused locally: a smaller MTU, a smaller MPS on two channels, an LE channel, six channels.
        #expect(throws: L2CAPError(.invalidParameters, "")) { try link.central.reconfigure(cids, mtu: 999, mps: 100) }
        #expect(throws: L2CAPError(.invalidParameters, "")) { try link.central.reconfigure(cids, mtu: 1000, mps: 64) }
        #expect(throws: L2CAPError(.invalidParameters, "")) {
            try link.central.reconfigure(Array(repeating: cids[0], count: 2), mtu: 1000, mps: 100)
        }
        _ = try link.central.reconfigure([cids[0]], mtu: 1000, mps: 64)
        try link.peripheral.listen(spsm: spsm)
        let (le, open) = try link.central.connect(spsm: spsm)
        link.run(open, from: .central)
        #expect(throws: L2CAPError(.channelNotOpen, "")) { try link.central.reconfigure([le], mtu: 1000, mps: 100) }
    }

    @Test func reconfigurationRefusedRejectedOrUnanswered() throws {
        var link = L2CAPLinkPair()
        try link.peripheral.listen(spsm: .eatt, parameters: .init(mtu: 300, mps: 64, initialCredits: 10))
        let (cids, actions) = try link.central.connectEnhanced(spsm: .eatt, count: 1, parameters: .init(mtu: 256, mps: 64))
        link.run(actions, from: .central)
        var manager = link.central
        // Refused (0x0004): nothing changes.
        _ = try manager.reconfigure(cids, mtu: 512, mps: 64)
        #expect(events(manager.receive(signaling("1a 02 0200 0400"))).last == .reconfigurationFinished(cids, .answered(.unacceptableParameters)))
        #expect(manager.channel(cids[0])?.local.mtu == 256)
        // Command Reject.
        _ = try manager.reconfigure(cids, mtu: 512, mps: 64)
        #expect(events(manager.receive(signaling("01 03 0200 0000"))).last == .reconfigurationFinished(cids, .rejected(.commandNotUnderstood)))
        // No answer.
        let unanswered = try manager.reconfigure(cids, mtu: 512, mps: 64)
        #expect(manager.timerFired(try #require(startedTimers(unanswered).first)) == [.reconfigurationFinished(cids, .timedOut)])
        // Link loss.
        _ = try manager.reconfigure(cids, mtu: 512, mps: 64)
        #expect(manager.linkClosed().contains(.reconfigurationFinished(cids, .linkClosed)))
    }

    @Test(arguments: [1, 2, 3, 4, 7])
    func noMoreSDUsThanTheGrantWaitForTheConsumer(framesPerSDU: Int) throws {
        var link = L2CAPLinkPair()
        link.peripheral = L2CAPChannelManager(role: .peripheral, configuration: .init(creditReturn: .onConsumption))
        let (cid, remote) = try open(&link, central: .init(), peripheral: .init(mtu: 500, mps: 30, initialCredits: 4))
        // SDUs of `framesPerSDU` K-frames each (the first carries 28 bytes, the others 30).
        let size = 28 + 30 * (framesPerSDU - 1)
        for index in 0..<20 { link.run(try link.central.send(pattern(size, seed: index), on: cid), from: .central) }
        let waiting = link.delivered(to: .peripheral, on: remote).count
        #expect(waiting >= 1 && waiting <= 4, "\(waiting) SDUs delivered without any consumption")
        // Consuming them one by one lets all twenty through, in order.
        var consumed = 0
        while consumed < link.delivered(to: .peripheral, on: remote).count {
            link.run(link.peripheral.consumed(on: remote), from: .peripheral)
            consumed += 1
            #expect(link.delivered(to: .peripheral, on: remote).count - consumed <= 4)
        }
        #expect(link.delivered(to: .peripheral, on: remote) == (0..<20).map { pattern(size, seed: $0) })
    }
}
