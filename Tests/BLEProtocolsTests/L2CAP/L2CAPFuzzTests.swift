import BLEProtocols
import BLEWire
import Testing

/// Random and mutated input against a manager with open channels: it never traps, never answers with identifier 0,
/// answers a request with its own identifier, and keeps its credit counts within 0...65535.
@Suite struct L2CAPFuzzTests {
    /// SplitMix64: deterministic bytes for reproducible runs.
    struct Random {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(max(1, bound))) }
        mutating func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) } }
    }

    /// Valid commands to mutate.
    static let seeds: [String] = [
        "14 01 0a00 8000 4000 1700 1700 0100",
        "17 02 0c00 2700 4000 4000 0100 4100 4200",
        "06 03 0400 4000 4000",
        "16 04 0400 4000 0500",
        "19 05 0600 8000 4000 4100",
        "12 06 0800 0600 0c00 0000 c800",
        "15 07 0a00 4000 1700 1700 0100 0000",
        "18 08 0a00 4000 4000 0100 0000 4000",
        "01 09 0600 0200 4000 4100",
        "07 0a 0400 4000 4000",
    ]

    @Test(arguments: [HCIRole.central, HCIRole.peripheral],
          [L2CAPChannelManager.Configuration.CreditReturn.automatic, .onConsumption])
    func randomAndMutatedSignalingAndKFrames(role: HCIRole, creditReturn: L2CAPChannelManager.Configuration.CreditReturn) throws {
        var random = Random(state: UInt64(role.rawValue) &+ (creditReturn == .automatic ? 2026 : 4052))
        var manager = L2CAPChannelManager(role: role, configuration: .init(creditReturn: creditReturn))
        try manager.listen(spsm: L2CAPSPSM(rawValue: 0x80), parameters: .init(mtu: 100, mps: 30, initialCredits: 3))
        try manager.listen(spsm: .eatt, parameters: .init(mtu: 100, mps: 64, initialCredits: 3))
        var timers: [L2CAPTimerID] = []
        var opened = 0
        var violations = 0
        var delivered = 0
        for round in 0..<20_000 {
            let frame: L2CAPBasicFrame
            var input: [UInt8] = []
            switch random.below(4) {
            case 0:
                input = random.bytes(random.below(24))
                frame = L2CAPBasicFrame(channelID: .leSignaling, payload: input)
            case 1, 2:
                input = [UInt8](hex: Self.seeds[random.below(Self.seeds.count)]) ?? []
                for _ in 0..<(1 + random.below(3)) where !input.isEmpty {
                    switch random.below(3) {
                    case 0: input[random.below(input.count)] = UInt8(truncatingIfNeeded: random.next())
                    case 1: input.removeLast(min(input.count, random.below(3)))
                    default: input += random.bytes(random.below(4))
                    }
                }
                frame = L2CAPBasicFrame(channelID: .leSignaling, payload: input)
            default:
                let cid = L2CAPChannelID(rawValue: UInt16(0x3E + random.below(8)))
                // Half of them whole single-frame SDUs, the others random.
                let length = random.below(29)
                let payload = random.below(2) == 0 ? [UInt8(length), 0] + random.bytes(length) : random.bytes(random.below(40))
                frame = L2CAPBasicFrame(channelID: cid, payload: payload)
            }
            let actions = manager.receive(frame)
            for action in actions {
                switch action {
                case .send(let sent) where sent.channelID == .leSignaling:
                    let identifier = try #require(L2CAPSignalingPDU.identifier(of: sent.payload), "round \(round)")
                    #expect(identifier != 0, "round \(round): identifier 0 sent for \(input.hexString())")
                    let reply = try L2CAPSignalingPDU(bytes: sent.payload)
                    if case .commandReject(let id, _) = reply {
                        #expect(id == L2CAPSignalingPDU.identifier(of: input), "round \(round)")
                    }
                case .startTimer(let timer, _):
                    timers.append(timer)
                case .channelOpened:
                    opened += 1
                case .channelClosed(_, .protocolViolation):
                    violations += 1
                case .deliverSDU:
                    delivered += 1
                default:
                    break
                }
            }
            for cid in manager.openChannels {
                #expect((0...65535).contains(manager.sendCredits(on: cid)))
            }
            // Now and then, the consumer takes what arrived, and time passes.
            if random.below(5) == 0, let cid = manager.openChannels.first {
                _ = manager.consumed(random.below(3), on: cid)
            }
            if random.below(50) == 0, !timers.isEmpty {
                _ = manager.timerFired(timers.remove(at: random.below(timers.count)))
            }
        }
        #expect(manager.openChannels.count <= 64)
        // The run reached the interesting paths.
        #expect(opened > 10 && violations > 10 && delivered > 10, "opened \(opened), violations \(violations), delivered \(delivered)")
    }
}
