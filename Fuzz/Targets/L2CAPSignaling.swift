import BLEProtocols
import BLEWire

// The L2CAP channel manager (signaling and credit-based channels) driven by a sequence of events: frames from the
// peer on the signaling channel or any CID, and the local side's own calls (connect, send, credits, disconnect,
// reconfigure, timers firing, link loss). Invariants: every frame it sends encodes within L2CAP's limits, every
// signaling frame it sends decodes as signaling commands with a non-zero identifier, open channels use dynamic
// CIDs, and credits stay within 0...65535.
enum L2CAPSignalingFuzz {
    static func run(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        let setup = input.byte() ?? 0
        var manager = L2CAPChannelManager(
            role: setup & 1 == 0 ? .central : .peripheral,
            configuration: .init(creditReturn: setup & 2 == 0 ? .onConsumption : .automatic))
        try? manager.registerFixedChannel(.att)
        try? manager.listen(spsm: L2CAPSPSM(rawValue: 0x0080), parameters: .init(mtu: 100, mps: 50, initialCredits: 2))
        try? manager.listen(spsm: .eatt, parameters: .init(mtu: 64, mps: 64, initialCredits: 1))
        var timers: [L2CAPTimerID] = []

        func check(_ actions: [L2CAPChannelManager.Action]) {
            for action in actions {
                switch action {
                case .send(let frame):
                    invariant(frame.payload.count <= 65_535, "a frame of \(frame.payload.count) bytes")
                    if frame.channelID == .leSignaling {
                        var reader = ByteReader(frame.payload)
                        while !reader.isAtEnd {
                            guard let command = try? L2CAPSignalingCommand(from: &reader) else {
                                invariant(false, "a signaling frame we sent does not decode: \(frame.payload)")
                                return
                            }
                            invariant(command.identifier != 0, "a signaling command with identifier 0: \(command)")
                        }
                    }
                case .startTimer(let id, _): timers.append(id)
                case .cancelTimer(let id): timers.removeAll { $0 == id }
                default: break
                }
            }
            for cid in manager.openChannels {
                invariant(cid.isLEDynamic, "an open channel on \(cid)")
                invariant((0...65_535).contains(manager.sendCredits(on: cid)), "credits out of range on \(cid)")
            }
        }
        func pick(_ selector: UInt8) -> L2CAPChannelID? {
            let open = manager.openChannels
            return open.isEmpty ? nil : open[Int(selector) % open.count]
        }

        while let tag = input.byte(), let chunk = input.chunk() {
            let selector = tag >> 3
            switch tag & 0x07 {
            case 0:
                check(manager.receive(L2CAPBasicFrame(channelID: .leSignaling, payload: chunk)))
            case 1:
                guard chunk.count >= 2 else { continue }
                let cid = L2CAPChannelID(rawValue: UInt16(chunk[0]) | UInt16(chunk[1]) << 8)
                check(manager.receive(L2CAPBasicFrame(channelID: cid, payload: Array(chunk.dropFirst(2)))))
            case 2:
                let parameters = L2CAPChannelParameters(mtu: 64 + UInt16(chunk.first ?? 0), mps: 64, initialCredits: UInt16(selector))
                if selector & 1 == 0 {
                    if let (_, actions) = try? manager.connect(spsm: L2CAPSPSM(rawValue: 0x0080), parameters: parameters) { check(actions) }
                } else {
                    if let (_, actions) = try? manager.connectEnhanced(spsm: .eatt, count: 1 + Int(selector >> 1) % 5,
                                                                       parameters: parameters) { check(actions) }
                }
            case 3:
                if let cid = pick(selector), let actions = try? manager.send(chunk, on: cid) { check(actions) }
            case 4:
                if let cid = pick(selector) {
                    if chunk.count >= 2, let actions = try? manager.grantCredits(UInt16(chunk[0]) | UInt16(chunk[1]) << 8, on: cid) {
                        check(actions)
                    } else {
                        check(manager.consumed(Int(chunk.first ?? 1), on: cid))
                    }
                }
            case 5:
                if let cid = pick(selector), let actions = try? manager.disconnect(cid) { check(actions) }
            case 6:
                if !timers.isEmpty { check(manager.timerFired(timers.remove(at: Int(selector) % timers.count))) }
            default:
                switch selector % 3 {
                case 0:
                    if let actions = try? manager.reconfigure(manager.openChannels, mtu: 64 + UInt16(chunk.first ?? 0), mps: 64) {
                        check(actions)
                    }
                case 1:
                    if let actions = try? manager.requestConnectionParameterUpdate(
                        L2CAPConnectionParameterUpdateRequest(intervalMin: 24, intervalMax: 40, latency: 0, timeout: 400)) {
                        check(actions)
                    }
                default:
                    check(manager.linkClosed())
                    timers.removeAll()
                }
            }
        }
    }

    static func seeds() -> [[UInt8]] {
        // Signaling commands from the peer (Core 5.4, Vol 3, Part A, 4).
        let connectRequest = hex("14 01 0A 00 80 00 40 00 64 00 32 00 05 00")             // LE credit based connection
        let enhancedRequest = hex("17 02 10 00 27 00 40 00 40 00 03 00 40 00 41 00 42 00")  // 3 channels on EATT
        let disconnect = hex("06 03 04 00 40 00 40 00")
        let credits = hex("16 04 04 00 40 00 05 00")
        let parameterUpdate = hex("12 05 08 00 18 00 28 00 00 00 90 01")
        let unknown = hex("FF 06 00 00")
        let reject = hex("01 07 02 00 00 00")
        let echo = hex("08 08 00 00")                                                        // BR/EDR echo request
        let kFrame = hex("40 00 05 00 03 00 61 62 63")                                      // SDU "abc" on CID 0x0040
        let connectResponse = hex("15 01 0A 00 41 00 64 00 32 00 05 00 00 00")
        let enhancedResponse = hex("18 01 0E 00 40 00 40 00 03 00 00 00 42 00")
        let reconfigure = hex("19 09 06 00 80 00 40 00 40 00")
        let timer = (tag: UInt8(6), payload: [UInt8]())
        return [
            [0x00] + FuzzInput.events([(0, connectRequest), (1, kFrame), (0, credits), (0, disconnect)]),
            [0x01] + FuzzInput.events([(0, enhancedRequest), (0, reconfigure), (0, unknown), (0, echo), (0, reject)]),
            [0x00] + FuzzInput.events([(2, [0]), (0, connectResponse), (3, Array("hello".utf8)), (0, credits), (5, []), timer]),
            [0x03] + FuzzInput.events([(2 | 8, [0]), (0, enhancedResponse), (7, [0]), timer, (4, [1, 0])]),
            [0x01] + FuzzInput.events([(7 | 8, []), (0, hex("13 01 02 00 00 00")), (0, parameterUpdate), (7 | 16, [])]),
            [0x00] + FuzzInput.events([(0, parameterUpdate), (0, connectRequest + disconnect), (0, [])]),
        ]
    }
}
