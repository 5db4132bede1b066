import BLEProtocols
import BLEWire
import Synchronization

/// A value as the specification prints it: hex, most significant octet first, spaces ignored.
func smpSpec(_ text: String) -> [UInt8] { [UInt8](hex: String(text.filter { $0 != " " })) ?? [] }

/// A seeded random source (SplitMix64), shared safely by a machine's closure.
func seededRandom(_ seed: UInt64) -> @Sendable (Int) -> [UInt8] {
    let state = Mutex(seed)
    return { count in
        state.withLock { s in
            (0..<count).map { _ in
                s &+= 0x9E37_79B9_7F4A_7C15
                var z = s
                z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
                z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
                return UInt8(truncatingIfNeeded: z ^ (z >> 31))
            }
        }
    }
}

enum SMPFixtures {
    /// Core 5.4, Vol 3, Part H, Appendix D.1: the two sample private keys.
    static let privateKeyA = smpSpec("3f49f6d4 a3c55f38 74c9b3e3 d2103f50 4aff607b eb40b799 5899b8a6 cd3c1abd")
    static let privateKeyB = smpSpec("55188b3d 32f6bb9a 900afcfb eed4e72a 59cb9ac2 f19d7cfb 6b4fdd49 f47fc5fd")
    static let initiatorAddress = LEAddress(BluetoothAddress(0xA1A2_A3A4_A5A6), type: .random)
    static let responderAddress = LEAddress(BluetoothAddress(0xB1B2_B3B4_B5B6), type: .public)

    static func initiator(_ configuration: SMPPairing.Configuration = .init(), seed: UInt64 = 1) throws -> SMPPairing {
        SMPPairing(role: .initiator, configuration: configuration, initiatorAddress: initiatorAddress,
                   responderAddress: responderAddress, keyPair: try SMPKeyPair(privateKey: privateKeyA), random: seededRandom(seed))
    }

    static func responder(_ configuration: SMPPairing.Configuration = .init(), seed: UInt64 = 2) throws -> SMPPairing {
        SMPPairing(role: .responder, configuration: configuration, initiatorAddress: initiatorAddress,
                   responderAddress: responderAddress, keyPair: try SMPKeyPair(privateKey: privateKeyB), random: seededRandom(seed))
    }
}

/// Two machines ping-ponging PDUs synchronously, with a scripted user and controller.
struct SMPLink {
    typealias Role = SMPPairing.Role
    typealias Action = SMPPairing.Action

    var initiator: SMPPairing
    var responder: SMPPairing
    /// Every action, with the role that produced it.
    var log: [(role: Role, action: Action)] = []
    /// PDUs on their way, to the given role.
    var inFlight: [(to: Role, bytes: [UInt8])] = []
    /// Answer user prompts automatically.
    var user = true
    /// The passkey typed when nobody displays one (both sides input).
    var typedPasskey: UInt32 = 123_456
    /// Changes a PDU on its way (tests of tampering): role it goes to, bytes in, bytes out.
    var tamper: ((Role, [UInt8]) -> [UInt8])?
    /// The key size the controller reports.
    var reportedKeySize = 16
    /// PDUs delivered to a machine before each PDU on its way (reserved codes the machines must ignore).
    var interleaved: [[UInt8]] = []
    private var displayed: UInt32?
    private var passkeyRequests: [Role] = []
    private var numbers: [Role: UInt32] = [:]
    /// How each side's user answers a Just Works confirmation (``SMPPairing/Action/confirmJustWorks``).
    var justWorksAnswers: [Role: Bool] = [.initiator: true, .responder: true]
    private var justWorksPrompts: [Role] = []
    private var providedKey: [UInt8]?
    private var encryptWith: [UInt8]?

    init(initiator: SMPPairing, responder: SMPPairing) {
        self.initiator = initiator
        self.responder = responder
    }

    init(_ initiator: SMPPairing.Configuration = .init(), _ responder: SMPPairing.Configuration = .init(),
         seeds: (UInt64, UInt64) = (1, 2)) throws {
        self.init(initiator: try SMPFixtures.initiator(initiator, seed: seeds.0),
                  responder: try SMPFixtures.responder(responder, seed: seeds.1))
    }

    mutating func handle(_ actions: [Action], from role: Role) {
        for action in actions {
            log.append((role, action))
            switch action {
            case .send(let pdu): inFlight.append((role == .initiator ? .responder : .initiator, pdu.encoded))
            case .requestPasskey: passkeyRequests.append(role)
            case .displayPasskey(let passkey): displayed = passkey
            case .confirmNumber(let value): numbers[role] = value
            case .confirmJustWorks: justWorksPrompts.append(role)
            case .provideLongTermKey(let key): providedKey = key
            case .startEncryption(let key, _, _): encryptWith = key
            default: break
            }
        }
    }

    mutating func deliver(_ bytes: [UInt8], to role: Role) {
        let bytes = tamper?(role, bytes) ?? bytes
        for extra in interleaved {
            switch role {
            case .initiator: handle(initiator.receive(extra), from: .initiator)
            case .responder: handle(responder.receive(extra), from: .responder)
            }
        }
        switch role {
        case .initiator: handle(initiator.receive(bytes), from: .initiator)
        case .responder: handle(responder.receive(bytes), from: .responder)
        }
    }

    /// Runs until nothing moves.
    mutating func run() {
        for _ in 0..<10_000 {
            if !inFlight.isEmpty {
                let (to, bytes) = inFlight.removeFirst()
                deliver(bytes, to: to)
                continue
            }
            if let key = encryptWith {
                encryptWith = nil
                let same = key == providedKey
                handle(responder.encryptionChanged(success: same, keySize: reportedKeySize), from: .responder)
                handle(initiator.encryptionChanged(success: same, keySize: reportedKeySize), from: .initiator)
                continue
            }
            guard user else { return }
            if !passkeyRequests.isEmpty {
                let role = passkeyRequests.removeFirst()
                let passkey = displayed ?? typedPasskey
                switch role {
                case .initiator: handle(initiator.passkeyEntered(passkey), from: .initiator)
                case .responder: handle(responder.passkeyEntered(passkey), from: .responder)
                }
                continue
            }
            if !justWorksPrompts.isEmpty {
                let role = justWorksPrompts.removeFirst()
                let answer = justWorksAnswers[role] ?? true
                switch role {
                case .initiator: handle(initiator.justWorksConfirmed(answer), from: .initiator)
                case .responder: handle(responder.justWorksConfirmed(answer), from: .responder)
                }
                continue
            }
            if let a = numbers[.initiator], let b = numbers[.responder] {
                numbers = [:]
                handle(initiator.numericComparisonConfirmed(a == b), from: .initiator)
                handle(responder.numericComparisonConfirmed(a == b), from: .responder)
                continue
            }
            return
        }
    }

    /// Starts the initiator and runs.
    mutating func pair() {
        handle(initiator.start(), from: .initiator)
        run()
    }

    func result(_ role: Role) -> SMPPairingResult? {
        for entry in log where entry.role == role {
            if case .complete(let result) = entry.action { return result }
        }
        return nil
    }

    func failure(_ role: Role) -> SMPPairingFailure? {
        for entry in log where entry.role == role {
            if case .fail(let failure) = entry.action { return failure }
        }
        return nil
    }

    /// The PDUs a role sent, in order.
    func sent(_ role: Role) -> [SMPPDU] {
        log.compactMap { entry in
            guard entry.role == role, case .send(let pdu) = entry.action else { return nil }
            return pdu
        }
    }

    /// The key the initiator encrypted with and the responder's answer to the LTK request.
    var encryptionKeys: (initiator: [UInt8]?, responder: [UInt8]?) {
        var i: [UInt8]?, r: [UInt8]?
        for entry in log {
            if case .startEncryption(let key, _, _) = entry.action { i = key }
            if case .provideLongTermKey(let key) = entry.action { r = key }
        }
        return (i, r)
    }
}
