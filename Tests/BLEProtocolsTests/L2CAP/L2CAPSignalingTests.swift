import BLEProtocols
import BLEWire
import Testing

/// Malformed and hostile signaling, each with the exact reply the specification requires (Core 5.4, Vol 3, Part A, 4).
@Suite struct L2CAPSignalingTests {
    let spsm = L2CAPSPSM(rawValue: 0x0080)

    func listening(_ configuration: L2CAPChannelManager.Configuration = .init()) throws -> L2CAPChannelManager {
        var manager = L2CAPChannelManager(role: .peripheral, configuration: configuration)
        try manager.listen(spsm: spsm)
        try manager.listen(spsm: .eatt, parameters: .init(mtu: 100, mps: 64, initialCredits: 4))
        return manager
    }

    @Test func identifierZeroIsDroppedNeverAnswered() {
        var manager = L2CAPChannelManager(role: .central)
        // Unknown code, Disconnection Request, LE connection request: identifier 0.
        #expect(manager.receive(signaling("7e 00 0000")).isEmpty)
        #expect(manager.receive(signaling("06 00 0400 4000 4000")).isEmpty)
        #expect(manager.receive(signaling("14 00 0a00 8000 4000 1700 1700 0100")).isEmpty)
        // Too short for a header: nothing to answer with.
        #expect(manager.receive(signaling("12")).isEmpty)
        #expect(manager.receive(signaling("")).isEmpty)
        #expect(manager.droppedFrames == 5)
    }

    @Test func unknownAndBREDROnlyCommandsAreNotUnderstood() {
        var manager = L2CAPChannelManager(role: .central)
        // Connection Req/Rsp, Configuration Req/Rsp, Echo Req/Rsp, Information Req/Rsp, Create Channel, Move Channel
        // Confirmation Rsp: BR/EDR only. 0x1B, 0x7E, 0xFF: undefined.
        for code: UInt8 in [0x02, 0x03, 0x04, 0x05, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x11, 0x1B, 0x7E, 0xFF] {
            let reply = manager.receive(L2CAPBasicFrame(channelID: .leSignaling, payload: [code, 0x09, 0x02, 0x00, 0x40, 0x00]))
            // Command Reject, id 9, reason 0x0000 (command not understood)
            #expect(sentFrames(reply) == ["5: 01 09 02 00 00 00"], "code \(code)")
        }
    }

    @Test func truncatedOrMalformedRequestsAreNotUnderstood() {
        var manager = L2CAPChannelManager(role: .central)
        let cases: [(String, String)] = [
            ("12 0a 0200 0600", "5: 01 0a 02 00 00 00"),                        // parameter update, 2 of 8 bytes
            ("14 0b 0400 8000 4000", "5: 01 0b 02 00 00 00"),                   // LE connection request, 4 of 10 bytes
            ("06 0c 0400 4000 40", "5: 01 0c 02 00 00 00"),                     // length 4, 3 bytes follow
            ("16 0d 0200 4000", "5: 01 0d 02 00 00 00"),                        // flow control credit, 2 of 4 bytes
            ("17 0e 0900 2700 4000 4000 0100 40", "5: 01 0e 02 00 00 00"),      // half a Source CID
            ("19 0f 0300 4000 40", "5: 01 0f 02 00 00 00"),                     // reconfigure, 3 bytes
            ("06 10 0500 4000 4000 00", "5: 01 10 02 00 00 00"),                // trailing byte
        ]
        for (input, reply) in cases {
            #expect(sentFrames(manager.receive(signaling(input))) == [reply], "\(input)")
        }
    }

    @Test func unsolicitedResponsesAreIgnored() {
        var manager = L2CAPChannelManager(role: .peripheral)
        for input in [
            "01 05 0200 0000",                          // Command Reject
            "07 05 0400 4000 4000",                     // Disconnection Response
            "13 05 0200 0000",                          // Connection Parameter Update Response
            "15 05 0a00 4000 1700 1700 0100 0000",      // LE Credit Based Connection Response
            "18 05 0a00 4000 4000 0100 0000 4000",      // Credit Based Connection Response
            "1a 05 0200 0000",                          // Credit Based Reconfigure Response
            "15 05 0200 0000",                          // a malformed response: not answered either
            "01 05 0300 0000 00",                       // a malformed Command Reject
        ] {
            #expect(manager.receive(signaling(input)).isEmpty, "\(input)")
        }
    }

    @Test func connectionParameterUpdateRequestToAPeripheralIsRejected() {
        var manager = L2CAPChannelManager(role: .peripheral)
        #expect(sentFrames(manager.receive(signaling("12 03 0800 0600 0c00 0000 c800"))) == ["5: 01 03 02 00 00 00"])
    }

    @Test func disconnectionRequestForACIDThatIsNotOpen() throws {
        var manager = try listening()
        // Command Reject, reason 0x0002 (invalid CID), local 0x0045, remote 0x0041 (the request's DCID and SCID).
        #expect(sentFrames(manager.receive(signaling("06 04 0400 4500 4100"))) == ["5: 01 04 06 00 02 00 45 00 41 00"])
        // An open channel, but the Source CID is not its peer's: silently discarded.
        _ = manager.receive(signaling("14 01 0a00 8000 4000 1700 1700 0100"))
        #expect(manager.receive(signaling("06 05 0400 4000 4100")).isEmpty)
        #expect(manager.openChannels == [L2CAPChannelID(rawValue: 0x40)])
        // The right pair: Disconnection Response echoing both CIDs.
        let reply = manager.receive(signaling("06 06 0400 4000 4000"))
        #expect(sentFrames(reply) == ["5: 07 06 04 00 40 00 40 00"])
        #expect(events(reply) == [.channelClosed(L2CAPChannelID(rawValue: 0x40), .remoteRequest)])
    }

    @Test func leCreditBasedConnectionRequestRefusals() throws {
        var manager = try listening()
        let cases: [(String, String)] = [
            // SPSM 0x0081 not registered → 0x0002
            ("14 01 0a00 8100 4000 1700 1700 0100", "5: 15 01 0a 00 00 00 00 00 00 00 00 00 02 00"),
            // SCID 0x003F, 0x0080 outside the dynamic range → 0x0009
            ("14 02 0a00 8000 3f00 1700 1700 0100", "5: 15 02 0a 00 00 00 00 00 00 00 00 00 09 00"),
            ("14 03 0a00 8000 8000 1700 1700 0100", "5: 15 03 0a 00 00 00 00 00 00 00 00 00 09 00"),
            // MTU 22, MPS 22, MPS 65534 → 0x000B
            ("14 04 0a00 8000 4000 1600 1700 0100", "5: 15 04 0a 00 00 00 00 00 00 00 00 00 0b 00"),
            ("14 05 0a00 8000 4000 1700 1600 0100", "5: 15 05 0a 00 00 00 00 00 00 00 00 00 0b 00"),
            ("14 06 0a00 8000 4000 ffff feff 0100", "5: 15 06 0a 00 00 00 00 00 00 00 00 00 0b 00"),
            // Accepted: DCID 0x0040, MTU 512, MPS 247, 16 credits
            ("14 07 0a00 8000 4000 1700 1700 0100", "5: 15 07 0a 00 40 00 00 02 f7 00 10 00 00 00"),
            // SCID 0x0040 again → 0x000A
            ("14 08 0a00 8000 4000 1700 1700 0100", "5: 15 08 0a 00 00 00 00 00 00 00 00 00 0a 00"),
            // SPSM 0x0027 (EATT) listened on, but an LE credit based channel there is no ATT bearer → 0x0002
            ("14 09 0a00 2700 4100 4000 4000 0100", "5: 15 09 0a 00 00 00 00 00 00 00 00 00 02 00"),
        ]
        for (input, reply) in cases {
            #expect(sentFrames(manager.receive(signaling(input))) == [reply], "\(input)")
        }
        // No free local CID → 0x0004.
        var full = try listening(.init(maximumDynamicChannels: 1))
        _ = full.receive(signaling("14 01 0a00 8000 4000 1700 1700 0100"))
        #expect(sentFrames(full.receive(signaling("14 02 0a00 8000 4100 1700 1700 0100")))
                == ["5: 15 02 0a 00 00 00 00 00 00 00 00 00 04 00"])
    }

    @Test func enhancedConnectionRequestRefusals() throws {
        var manager = try listening()
        let cases: [(String, String)] = [
            // Six Source CIDs → all refused, 0x000C, six zero Destination CIDs
            ("17 01 1400 2700 4000 4000 0100 4000 4100 4200 4300 4400 4500",
             "5: 18 01 14 00 00 00 00 00 00 00 0c 00 00 00 00 00 00 00 00 00 00 00 00 00"),
            // No Source CID → 0x000C
            ("17 02 0800 2700 4000 4000 0100", "5: 18 02 08 00 00 00 00 00 00 00 0c 00"),
            // SPSM 0x0081 not registered → 0x0002
            ("17 03 0a00 8100 4000 4000 0100 4000", "5: 18 03 0a 00 00 00 00 00 00 00 02 00 00 00"),
            // MTU 63 or MPS 63 → 0x000C
            ("17 04 0a00 2700 3f00 4000 0100 4000", "5: 18 04 0a 00 00 00 00 00 00 00 0c 00 00 00"),
            ("17 05 0a00 2700 4000 3f00 0100 4000", "5: 18 05 0a 00 00 00 00 00 00 00 0c 00 00 00"),
            // SCIDs 0x0040, 0x0030 (invalid), 0x0040 (again), 0x0041: some refused, the first reason 0x0009;
            // MTU 100, MPS 64, 4 credits, DCIDs 0x0040, 0, 0, 0x0041
            ("17 06 1000 2700 4000 4000 0100 4000 3000 4000 4100",
             "5: 18 06 10 00 64 00 40 00 04 00 09 00 40 00 00 00 00 00 41 00"),
        ]
        for (input, reply) in cases {
            #expect(sentFrames(manager.receive(signaling(input))) == [reply], "\(input)")
        }
        #expect(manager.openChannels.map(\.rawValue) == [0x40, 0x41])
        // Not enough local CIDs: the channels that fit open, the rest are refused with 0x0004.
        var small = try listening(.init(maximumDynamicChannels: 2))
        let reply = small.receive(signaling("17 01 0e00 2700 4000 4000 0100 4000 4100 4200"))
        #expect(sentFrames(reply) == ["5: 18 01 0e 00 64 00 40 00 04 00 04 00 40 00 41 00 00 00"])
        #expect(events(reply).count == 2)
    }

    @Test func answersToOurConnectionRequests() throws {
        var manager = L2CAPChannelManager(role: .central)
        // Command Reject: the connection fails with its reason.
        var (cid, actions) = try manager.connect(spsm: spsm)
        var reply = manager.receive(signaling("01 01 0200 0000"))
        #expect(events(reply) == [.cancelTimer(try #require(startedTimers(actions).first)),
                                  .connectionFailed(cid, .rejected(.commandNotUnderstood))])
        // Refused: the result is reported and the CID is free again.
        (cid, actions) = try manager.connect(spsm: spsm)
        #expect(cid.rawValue == 0x40)
        reply = manager.receive(signaling("15 02 0a00 0000 0000 0000 0000 0200"))
        #expect(events(reply).last == .connectionFailed(cid, .refused(.spsmNotSupported)))
        // Success with a DCID outside the dynamic range, or MTU 22: invalid.
        (cid, _) = try manager.connect(spsm: spsm)
        reply = manager.receive(signaling("15 03 0a00 2000 1700 1700 0100 0000"))
        #expect(events(reply).last == .connectionFailed(cid, .invalidResponse))
        (cid, _) = try manager.connect(spsm: spsm)
        reply = manager.receive(signaling("15 04 0a00 4000 1600 1700 0100 0000"))
        #expect(events(reply).last == .connectionFailed(cid, .invalidResponse))
        // A truncated response: the connection fails, and nothing is sent back.
        (cid, _) = try manager.connect(spsm: spsm)
        reply = manager.receive(signaling("15 05 0400 4000 1700"))
        #expect(sentFrames(reply).isEmpty)
        #expect(events(reply).last == .connectionFailed(cid, .invalidResponse))
        // A response carrying another request's identifier is ignored.
        (cid, _) = try manager.connect(spsm: spsm)
        #expect(manager.receive(signaling("18 06 0a00 4000 4000 0100 0000 4000")).isEmpty)
        #expect(manager.outstandingRequestCount == 1)
    }

    @Test func pendingEnhancedResponseWaitsLonger() throws {
        var manager = L2CAPChannelManager(role: .central, configuration: .init(signalingTimeout: .seconds(2),
                                                                               extendedSignalingTimeout: .seconds(90)))
        let (cids, actions) = try manager.connectEnhanced(spsm: .eatt, count: 2, parameters: .init(mtu: 64, mps: 64))
        let rtx = try #require(startedTimers(actions).first)
        // 0x000E: all connections pending, authentication pending. The RTX timer is replaced by ERTX.
        let pending = manager.receive(signaling("18 01 0c00 4000 4000 0100 0e00 0000 0000"))
        #expect(pending.first == .cancelTimer(rtx))
        let ertx = try #require(startedTimers(pending).first)
        #expect(pending.contains(.startTimer(ertx, .seconds(90))))
        #expect(manager.timerFired(rtx).isEmpty)
        // The final response opens both.
        let final = manager.receive(signaling("18 01 0c00 4000 4000 0100 0000 5000 5100"))
        #expect(final.first == .cancelTimer(ertx))
        #expect(events(final).filter { if case .channelOpened = $0 { true } else { false } }.count == 2)
        #expect(manager.openChannels == cids)
    }

    @Test func enhancedResponseWithSomeChannelsRefused() throws {
        var manager = L2CAPChannelManager(role: .central)
        let (cids, _) = try manager.connectEnhanced(spsm: .eatt, count: 3, parameters: .init(mtu: 64, mps: 64))
        // Some refused (0x0004): DCIDs 0x0050, 0, 0x0051.
        let reply = manager.receive(signaling("18 01 0e00 8000 4000 0200 0400 5000 0000 5100"))
        let outcome = events(reply).filter { if case .cancelTimer = $0 { false } else { true } }
        #expect(outcome.count == 3)
        #expect(outcome[1] == .connectionFailed(cids[1], .refused(.noResourcesAvailable)))
        #expect(manager.channel(cids[0])?.remoteCID.rawValue == 0x50 && manager.channel(cids[2])?.remoteCID.rawValue == 0x51)
        #expect(manager.channel(cids[0])?.peerMTU == 128)
    }

    @Test func reconfigureRequests() throws {
        var manager = try listening()
        _ = manager.receive(signaling("17 01 0c00 2700 4000 4000 0100 5000 5100"))
        #expect(manager.openChannels.count == 2)
        let cases: [(String, String)] = [
            // MTU 63 → 0x0004; unknown CID 0x0052 → 0x0003
            ("19 02 0600 3f00 4000 5000", "5: 1a 02 02 00 04 00"),
            ("19 03 0600 8000 4000 5200", "5: 1a 03 02 00 03 00"),
            // MPS 63 → 0x0004
            ("19 04 0800 4000 3f00 5000 5100", "5: 1a 04 02 00 04 00"),
            // Both channels: MTU 64 → 128, MPS 64 unchanged → success
            ("19 05 0800 8000 4000 5000 5100", "5: 1a 05 02 00 00 00"),
            // MTU reduced from 128 → 0x0001
            ("19 06 0600 7f00 4000 5000", "5: 1a 06 02 00 01 00"),
        ]
        for (input, reply) in cases {
            #expect(sentFrames(manager.receive(signaling(input))) == [reply], "\(input)")
        }
        let first = L2CAPChannelID(rawValue: 0x40)
        #expect(manager.channel(first)?.peerMTU == 128)
        // Raise MPS for both, then lowering it for two channels is refused, for one allowed.
        _ = manager.receive(signaling("19 07 0800 8000 8000 5000 5100"))
        #expect(sentFrames(manager.receive(signaling("19 08 0800 8000 7000 5000 5100"))) == ["5: 1a 08 02 00 02 00"])
        #expect(sentFrames(manager.receive(signaling("19 09 0600 8000 7000 5000"))) == ["5: 1a 09 02 00 00 00"])
        #expect(manager.channel(first)?.peerMPS == 0x70)
        // LE (not enhanced) channels cannot be reconfigured.
        _ = manager.receive(signaling("14 0a 0a00 8000 6000 1700 1700 0100"))
        #expect(sentFrames(manager.receive(signaling("19 0b 0600 8000 4000 6000"))) == ["5: 1a 0b 02 00 03 00"])
    }

    @Test func identifiersCycleThroughOneTo255AndSkipOutstandingOnes() throws {
        var manager = L2CAPChannelManager(role: .peripheral)
        let request = L2CAPConnectionParameterUpdateRequest(intervalMin: 6, intervalMax: 12, latency: 0, timeout: 100)
        // The first request stays outstanding (identifier 1).
        let held = try manager.requestConnectionParameterUpdate(request)
        #expect(sentFrames(held).first?.hasPrefix("5: 12 01") == true)
        var seen: [String] = []
        for _ in 0..<300 {
            let actions = try manager.requestConnectionParameterUpdate(request)
            seen.append(String(sentFrames(actions).first?.dropFirst(6).prefix(2) ?? ""))
            _ = manager.timerFired(try #require(startedTimers(actions).first))
        }
        #expect(seen.prefix(3) == ["02", "03", "04"])
        #expect(!seen.contains("00") && !seen.contains("01"), "0 never used, 1 skipped while outstanding")
        #expect(seen[253] == "ff" && seen[254] == "02", "after 0xFF comes 0x01, which is outstanding, so 0x02")
    }
}
