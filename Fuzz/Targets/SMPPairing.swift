import BLEProtocols
import BLEWire

// The Security Manager's pairing machine in either role and a configuration picked by the first byte, fed a
// sequence of events: PDUs from the peer, the timer, the user's passkey and numeric-comparison answers, the
// controller's encryption change, aborts. Invariants: the machine ends at most once (one complete or fail), does
// nothing once finished, and every PDU it sends re-encodes to itself.
enum SMPPairingFuzz {
    static func run(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        var pairing = machine(input.byte() ?? 0)
        var endings = 0
        func check(_ actions: [SMPPairing.Action], wasFinished: Bool) {
            invariant(!wasFinished || actions.isEmpty, "a finished pairing acted: \(actions)")
            for action in actions {
                switch action {
                case .send(let pdu): invariant((try? SMPPDU(bytes: pdu.encoded)) == pdu, "\(pdu) does not re-encode")
                case .complete, .fail: endings += 1
                default: break
                }
            }
            invariant(endings <= 1, "the pairing ended \(endings) times")
            invariant(endings == 0 || pairing.isFinished, "the pairing ended but is not finished")
        }
        while let tag = input.byte(), let chunk = input.chunk() {
            let wasFinished = pairing.isFinished
            let actions: [SMPPairing.Action]
            switch tag & 0x07 {
            case 1: actions = pairing.timerFired()
            case 2: actions = pairing.passkeyEntered(chunk.count >= 3 ? UInt32(chunk[0]) << 16 | UInt32(chunk[1]) << 8 | UInt32(chunk[2]) : nil)
            case 3: actions = pairing.numericComparisonConfirmed(tag & 0x08 != 0)
            case 4: actions = pairing.encryptionChanged(success: tag & 0x08 != 0, keySize: Int(chunk.first ?? 16))
            case 5: actions = pairing.abort(SMPPairingFailedReason(rawValue: chunk.first ?? 8))
            case 6: actions = pairing.start()
            default: actions = pairing.receive(chunk)
            }
            check(actions, wasFinished: wasFinished)
        }
    }

    /// The sample key pairs of Core 5.4, Vol 3, Part H, Appendix D.1 (computed once: P-256 is slow).
    static let keyA = try? SMPKeyPair(privateKey: hex("3f49f6d4 a3c55f38 74c9b3e3 d2103f50 4aff607b eb40b799 5899b8a6 cd3c1abd"))
    static let keyB = try? SMPKeyPair(privateKey: hex("55188b3d 32f6bb9a 900afcfb eed4e72a 59cb9ac2 f19d7cfb 6b4fdd49 f47fc5fd"))
    static let initiatorAddress = LEAddress(BluetoothAddress(0xA1A2_A3A4_A5A6), type: .random)
    static let responderAddress = LEAddress(BluetoothAddress(0xB1B2_B3B4_B5B6), type: .public)

    /// A deterministic "random" source: the same input always drives the machine the same way.
    static let counting: @Sendable (Int) -> [UInt8] = { count in (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) } }

    /// The machine `setup` describes: bit 0 the role, then the IO capability, MITM, Secure Connections (only), bonding.
    static func machine(_ setup: UInt8) -> SMPPairing {
        let configuration = SMPPairing.Configuration(
            ioCapability: SMPIOCapability(rawValue: (setup >> 1) % 5), bonding: setup & 0x80 != 0, mitm: setup & 0x10 != 0,
            secureConnections: setup & 0x20 != 0, secureConnectionsOnly: setup & 0x40 != 0, minimumKeySize: 7,
            fixedPasskey: setup & 0x08 != 0 ? 123_456 : nil)
        let initiator = setup & 1 == 0
        guard let keyPair = initiator ? keyA : keyB else { preconditionFailure("the sample private keys are valid") }
        return SMPPairing(role: initiator ? .initiator : .responder, configuration: configuration,
                          initiatorAddress: initiatorAddress, responderAddress: responderAddress, keyPair: keyPair,
                          random: counting)
    }

    /// Two machines pairing with each other; each side's events (in this target's input format) are one seed.
    static func converse(_ initiatorSetup: UInt8, _ responderSetup: UInt8) -> [[UInt8]] {
        var sides = [machine(initiatorSetup), machine(responderSetup)]
        var events: [[(tag: UInt8, payload: [UInt8])]] = [[(6, [])], [(6, [])]]
        var queue: [(side: Int, tag: UInt8, payload: [UInt8])] = [(0, 6, []), (1, 6, [])]
        var steps = 0
        while !queue.isEmpty, steps < 200 {
            steps += 1
            let (side, tag, payload) = queue.removeFirst()
            if tag != 6 { events[side].append((tag, payload)) }
            let actions: [SMPPairing.Action]
            switch tag {
            case 0: actions = sides[side].receive(payload)
            case 2: actions = sides[side].passkeyEntered(123_456)
            case 3 | 0x08: actions = sides[side].numericComparisonConfirmed(true)
            case 4 | 0x08: actions = sides[side].encryptionChanged(success: true, keySize: 16)
            default: actions = sides[side].start()
            }
            for action in actions {
                switch action {
                case .send(let pdu): queue.append((1 - side, 0, pdu.encoded))
                case .requestPasskey: queue.append((side, 2, [0x01, 0xE2, 0x40]))
                case .confirmNumber: queue.append((side, 3 | 0x08, []))
                case .startEncryption, .provideLongTermKey: queue.append((side, 4 | 0x08, [16]))
                default: break
                }
            }
        }
        return [[initiatorSetup] + FuzzInput.events(events[0]), [responderSetup] + FuzzInput.events(events[1])]
    }

    static func seeds() -> [[UInt8]] {
        // Pairs of configurations (see `machine`): Secure Connections and legacy pairing, with and without MITM,
        // bonding and a fixed passkey, across IO capabilities.
        [(0xA6, 0xA7), (0x06, 0x07), (0xB8, 0xB3), (0x1A, 0x19), (0x32, 0x33), (0x24, 0x35), (0x94, 0x83)]
            .flatMap { converse($0.0, $0.1) }
    }
}
