import BLEProtocols
import BLEWire
import Synchronization
import Testing

/// Malformed and random input into both roles: never a trap; a malformed PDU gets Pairing Failed Invalid Parameters;
/// after Pairing Failed the machine accepts nothing more. Core 5.4, Vol 3, Part H, 3.5.5.
@Suite struct SMPPairingRobustnessTests {
    static let key = Array(UInt8(0)..<16)
    static let validPDUs: [SMPPDU] = [
        .pairingRequest(SMPPairingFeatures(ioCapability: .displayYesNo, authRequirements: [.bonding, .mitm],
                                           initiatorKeyDistribution: [.encryptionKey], responderKeyDistribution: [.identityKey])),
        .pairingResponse(SMPPairingFeatures(ioCapability: .keyboardOnly, authRequirements: [.secureConnections],
                                            initiatorKeyDistribution: [], responderKeyDistribution: [])),
        .pairingConfirm(key), .pairingRandom(key), .pairingFailed(.confirmValueFailed),
        .encryptionInformation(longTermKey: key), .centralIdentification(ediv: 0x1234, rand: 0x0102_0304_0506_0708),
        .identityInformation(identityResolvingKey: key),
        .identityAddressInformation(LEAddress(BluetoothAddress(0x1122_3344_5566), type: .public)),
        .signingInformation(signatureKey: key), .securityRequest([.bonding]),
        .pairingPublicKey(x: Array(repeating: 1, count: 32), y: Array(repeating: 2, count: 32)),
        .pairingDHKeyCheck(key), .keypressNotification(1),
    ]

    @Test func everyStrictPrefixOfEveryPDUIsInvalidParameters() throws {
        for pdu in Self.validPDUs {
            let bytes = pdu.encoded
            for length in 0..<bytes.count {
                for role in [SMPPairing.Role.initiator, .responder] {
                    var machine = role == .initiator ? try SMPFixtures.initiator() : try SMPFixtures.responder()
                    let actions = machine.receive(Array(bytes.prefix(length)))
                    #expect(actions == [.send(.pairingFailed(.invalidParameters)), .cancelTimer, .fail(.sent(.invalidParameters))],
                            "\(pdu) prefix \(length) to the \(role)")
                    #expect(machine.receive(bytes) == [])
                }
            }
        }
    }

    @Test func oneOctetTooManyIsInvalidParameters() throws {
        for pdu in Self.validPDUs {
            var machine = try SMPFixtures.responder()
            #expect(machine.receive(pdu.encoded + [0]).first == .send(.pairingFailed(.invalidParameters)), "\(pdu)")
        }
    }

    /// A pairing interrupted at a random point by random or mutated PDUs, in both directions.
    @Test func seededFuzz() throws {
        let random = seededRandom(0x5EED)
        func number(_ bound: Int) -> Int { Int(random(2).reduce(0) { $0 << 8 | Int($1) }) % max(bound, 1) }
        let configurations: [(SMPPairing.Configuration, SMPPairing.Configuration)] = [
            (.init(), .init()),
            (.init(ioCapability: .keyboardOnly, mitm: true), .init(ioCapability: .displayOnly, mitm: true)),
            (.init(ioCapability: .displayYesNo, mitm: true), .init(ioCapability: .displayYesNo, mitm: true)),
            (.init(secureConnections: false), .init(secureConnections: false)),
        ]
        for iteration in 0..<300 {
            let (ic, rc) = configurations[iteration % configurations.count]
            var link = try SMPLink(ic, rc, seeds: (UInt64(iteration), UInt64(iteration) + 1000))
            link.handle(link.initiator.start(), from: .initiator)
            // Run a random number of steps of the genuine exchange.
            var steps = number(40)
            while steps > 0, !link.inFlight.isEmpty {
                let (to, bytes) = link.inFlight.removeFirst()
                link.deliver(bytes, to: to)
                steps -= 1
            }
            // Then hostile input to one side: a mutated genuine PDU, a random PDU, or random bytes.
            let target: SMPPairing.Role = number(2) == 0 ? .initiator : .responder
            for _ in 0..<8 {
                var bytes: [UInt8]
                switch number(3) {
                case 0:
                    bytes = Self.validPDUs[number(Self.validPDUs.count)].encoded
                    if !bytes.isEmpty { bytes[number(bytes.count)] ^= UInt8(truncatingIfNeeded: 1 << number(8)) }
                case 1:
                    bytes = [UInt8(number(0x11))] + random(number(70))
                default:
                    bytes = random(number(80))
                }
                var machine = target == .initiator ? link.initiator : link.responder
                let wasFinished = machine.isFinished
                let actions = machine.receive(bytes)
                if wasFinished { #expect(actions == []) }
                let failed = actions.contains { if case .fail = $0 { true } else { false } }
                if failed {
                    #expect(machine.isFinished)
                    #expect(machine.receive(Self.validPDUs[number(Self.validPDUs.count)].encoded) == [])
                    #expect(machine.start() == [] && machine.passkeyEntered(1) == [] && machine.numericComparisonConfirmed(true) == [])
                }
                if target == .initiator { link.initiator = machine } else { link.responder = machine }
            }
        }
    }

    /// One bit flipped in one PDU of phases 1 and 2, for every method: the pairing fails, or both sides end with the
    /// same method, security, bonding and key (a flipped bit is always caught by c1, f4 or f6, or changes nothing).
    @Test func aFlippedBitNeverLeavesTheSidesDisagreeing() throws {
        let random = seededRandom(0xF11B)
        func number(_ bound: Int) -> Int { Int(random(2).reduce(0) { $0 << 8 | Int($1) }) % max(bound, 1) }
        let configurations: [(SMPPairing.Configuration, SMPPairing.Configuration)] = [
            (.init(), .init()),
            (.init(ioCapability: .keyboardOnly, mitm: true), .init(ioCapability: .displayOnly, mitm: true)),
            (.init(ioCapability: .displayYesNo, mitm: true), .init(ioCapability: .displayYesNo, mitm: true)),
            (.init(secureConnections: false), .init(secureConnections: false)),
            (.init(ioCapability: .displayOnly, mitm: true, secureConnections: false), .init(ioCapability: .keyboardOnly, secureConnections: false)),
        ]
        var failures = 0, successes = 0
        for iteration in 0..<400 {
            let (ic, rc) = configurations[iteration % configurations.count]
            var link = try SMPLink(ic, rc, seeds: (UInt64(iteration), UInt64(iteration) + 7))
            let target = number(iteration % configurations.count == 1 ? 44 : 8)
            let bit = number(8)
            let counter = Mutex(0)
            link.tamper = { _, bytes in
                let phase12: Set<UInt8> = [0x01, 0x02, 0x03, 0x04, 0x0C, 0x0D]
                guard let code = bytes.first, phase12.contains(code) else { return bytes }
                let index = counter.withLock { count in
                    defer { count += 1 }
                    return count
                }
                guard index == target, bytes.count > 1 else { return bytes }
                var changed = bytes
                let position = 1 + (bit * 7 + index) % (bytes.count - 1)
                changed[position] ^= UInt8(1 << bit)
                return changed
            }
            link.pair()
            let i = link.result(.initiator), r = link.result(.responder)
            if let i, let r {
                successes += 1
                #expect(i.method == r.method && i.security == r.security && i.bonding == r.bonding && i.longTermKey == r.longTermKey,
                        "iteration \(iteration)")
                #expect(link.encryptionKeys.initiator == link.encryptionKeys.responder, "iteration \(iteration)")
            } else {
                failures += 1
                #expect(link.failure(.initiator) != nil || link.failure(.responder) != nil, "iteration \(iteration): stalled")
            }
        }
        #expect(failures > 300)
    }
}
