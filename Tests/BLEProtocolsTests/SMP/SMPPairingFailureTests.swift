import BLEProtocols
import BLEWire
import Testing

/// Pairings that fail, with the Pairing Failed reason the specification requires. Core 5.4, Vol 3, Part H, 3.5.5
/// (reasons), 2.3.4 (key size), 2.3.5 (checks) and 3.4 (the timer).
@Suite struct SMPPairingFailureTests {
    typealias Configuration = SMPPairing.Configuration

    /// The responder after it answered the initiator's Pairing Request (Secure Connections, Just Works).
    func responderAfterPhase1() throws -> SMPPairing {
        var responder = try SMPFixtures.responder()
        _ = responder.receive(SMPPDU.pairingRequest(SMPPairingFeatures(
            ioCapability: .noInputNoOutput, authRequirements: [.bonding, .secureConnections],
            initiatorKeyDistribution: [], responderKeyDistribution: [])).encoded)
        return responder
    }

    @Test func aKeySizeBelowTheMinimum() throws {
        var initiator = Configuration()
        initiator.maximumKeySize = 10
        initiator.minimumKeySize = 7
        // The responder refuses a request below its minimum (16 by default).
        var link = try SMPLink(initiator, .init())
        link.pair()
        #expect(link.failure(.responder) == .sent(.encryptionKeySize))
        #expect(link.sent(.responder) == [.pairingFailed(.encryptionKeySize)])
        // The initiator refuses a response below its minimum.
        var responder = Configuration()
        responder.maximumKeySize = 10
        responder.minimumKeySize = 7
        var other = try SMPLink(.init(), responder)
        other.pair()
        #expect(other.failure(.initiator) == .sent(.encryptionKeySize))
        // The controller reports another key size than negotiated.
        var wrongSize = try SMPLink()
        wrongSize.reportedKeySize = 15
        wrongSize.pair()
        #expect(wrongSize.failure(.responder) == .sent(.encryptionKeySize))
    }

    @Test func confirmValueMismatch() throws {
        var link = try SMPLink()
        // Flip a bit of the responder's confirm value Cb on its way.
        link.tamper = { role, bytes in
            guard role == .initiator, bytes.first == SMPCode.pairingConfirm.rawValue, bytes.count == 17 else { return bytes }
            var changed = bytes
            changed[16] ^= 1
            return changed
        }
        link.pair()
        #expect(link.failure(.initiator) == .sent(.confirmValueFailed))
        #expect(link.failure(.responder) == .received(.confirmValueFailed))
        #expect(link.encryptionKeys.initiator == nil)
    }

    @Test(arguments: [SMPPairing.Role.initiator, .responder])
    func dhKeyCheckMismatch(tamperedTowards: SMPPairing.Role) throws {
        var link = try SMPLink()
        link.tamper = { role, bytes in
            guard role == tamperedTowards, bytes.first == SMPCode.pairingDHKeyCheck.rawValue, bytes.count == 17 else { return bytes }
            var changed = bytes
            changed[1] ^= 0x80
            return changed
        }
        link.pair()
        #expect(link.failure(tamperedTowards) == .sent(.dhKeyCheckFailed))
        #expect(link.encryptionKeys.initiator == nil)
    }

    @Test func numericComparisonRejected() throws {
        let yesNo = Configuration(ioCapability: .displayYesNo, mitm: true)
        var link = try SMPLink(yesNo, yesNo)
        link.user = false
        link.pair()
        link.handle(link.responder.numericComparisonConfirmed(false), from: .responder)
        link.run()
        #expect(link.failure(.responder) == .sent(.numericComparisonFailed))
        #expect(link.failure(.initiator) == .received(.numericComparisonFailed))
    }

    @Test func passkeyEntryCancelledOrOutOfRange() throws {
        for passkey in [nil, UInt32(1_000_000)] {
            var link = try SMPLink(Configuration(ioCapability: .keyboardOnly, mitm: true),
                                   Configuration(ioCapability: .displayOnly, mitm: true))
            link.user = false
            link.pair()
            link.handle(link.initiator.passkeyEntered(passkey), from: .initiator)
            link.run()
            #expect(link.failure(.initiator) == .sent(.passkeyEntryFailed))
            #expect(link.failure(.responder) == .received(.passkeyEntryFailed))
        }
    }

    @Test func mitmRequiredButOnlyJustWorksPossible() throws {
        var link = try SMPLink(Configuration(ioCapability: .noInputNoOutput), Configuration(ioCapability: .displayYesNo, mitm: true))
        link.pair()
        #expect(link.failure(.responder) == .sent(.authenticationRequirements))
    }

    @Test func secureConnectionsOnlyRefusesLegacy() throws {
        var link = try SMPLink(Configuration(secureConnections: false), Configuration(secureConnectionsOnly: true))
        link.pair()
        #expect(link.failure(.responder) == .sent(.authenticationRequirements))
    }

    @Test func aResponseDistributingMoreThanRequestedIsInvalid() throws {
        var initiator = try SMPFixtures.initiator(Configuration(requestedPeerKeys: []))
        _ = initiator.start()
        let actions = initiator.receive(SMPPDU.pairingResponse(SMPPairingFeatures(
            ioCapability: .noInputNoOutput, authRequirements: [.bonding, .secureConnections],
            initiatorKeyDistribution: [], responderKeyDistribution: [.identityKey])).encoded)
        #expect(actions.first == .send(.pairingFailed(.invalidParameters)))
    }

    @Test func aRepeatedPairingRequestDuringPairing() throws {
        var responder = try responderAfterPhase1()
        let actions = responder.receive(SMPPDU.pairingRequest(SMPPairingFeatures(
            ioCapability: .noInputNoOutput, authRequirements: [], initiatorKeyDistribution: [], responderKeyDistribution: [])).encoded)
        #expect(actions == [.send(.pairingFailed(.unspecifiedReason)), .cancelTimer, .fail(.sent(.unspecifiedReason))])
        #expect(responder.isFinished)
    }

    @Test func outOfOrderPDUs() throws {
        // A DHKey check where the public key is expected.
        var responder = try responderAfterPhase1()
        #expect(responder.receive(SMPPDU.pairingDHKeyCheck(Array(repeating: 0, count: 16)).encoded).first
                == .send(.pairingFailed(.unspecifiedReason)))
        // A confirm value before any pairing.
        var fresh = try SMPFixtures.responder()
        #expect(fresh.receive(SMPPDU.pairingConfirm(Array(repeating: 0, count: 16)).encoded).first
                == .send(.pairingFailed(.unspecifiedReason)))
        // Keys before encryption.
        var early = try responderAfterPhase1()
        #expect(early.receive(SMPPDU.signingInformation(signatureKey: Array(repeating: 0, count: 16)).encoded).first
                == .send(.pairingFailed(.unspecifiedReason)))
    }

    @Test func commandsTheRoleDoesNotSupport() throws {
        var initiator = try SMPFixtures.initiator()
        #expect(initiator.receive(SMPPDU.pairingRequest(SMPPairingFeatures(
            ioCapability: .noInputNoOutput, authRequirements: [], initiatorKeyDistribution: [], responderKeyDistribution: [])).encoded).first
                == .send(.pairingFailed(.commandNotSupported)))
        var responder = try SMPFixtures.responder()
        #expect(responder.receive(SMPPDU.securityRequest([.bonding]).encoded).first == .send(.pairingFailed(.commandNotSupported)))
        // A defined code this side does not implement the answer to is not a reserved code: Keypress Notification
        // (0x0E) is taken and ignored without a failure either way.
        var keypress = try SMPFixtures.responder()
        #expect(keypress.receive(SMPPDU.keypressNotification(0).encoded).isEmpty && !keypress.isFinished)
    }

    /// The reserved codes (Core 5.4, Vol 3, Part H, 3.3: 0x00 and 0x0F–0xFF), bare and with parameters.
    static let reserved: [[UInt8]] = [[0x00], [0x0F], [0x0F, 0x01], [0x10, 0xAA, 0xBB], [0x7F], [0xFF], [0xFF, 0x01, 0x02]]

    /// A reserved code yields nothing and changes nothing, in either role, idle or mid-pairing: the machine that
    /// got it answers the next PDU exactly as a twin that did not (same fixture, same seed: a copy would share its
    /// random source).
    @Test(arguments: reserved) func reservedCodesAreIgnoredInBothRoles(_ pdu: [UInt8]) throws {
        #expect(SMPCode(rawValue: pdu[0]).isReserved)
        let request = SMPPDU.pairingRequest(SMPPairingFeatures(
            ioCapability: .noInputNoOutput, authRequirements: [.bonding, .secureConnections],
            initiatorKeyDistribution: [], responderKeyDistribution: [])).encoded
        // Responder, idle: then a Pairing Request.
        var responder = try SMPFixtures.responder()
        #expect(responder.receive(pdu).isEmpty && !responder.isFinished)
        var untouched = try SMPFixtures.responder()
        #expect(responder.receive(request) == untouched.receive(request))
        // Responder, after phase 1: then the initiator's public key.
        var midway = try responderAfterPhase1()
        #expect(midway.receive(pdu).isEmpty && !midway.isFinished)
        var initiator = try SMPFixtures.initiator()
        _ = initiator.start()
        var answering = try SMPFixtures.responder()
        let response = try #require(Self.firstSent(answering.receive(request)))
        let publicKey = try #require(Self.firstSent(initiator.receive(response)))
        var reference = try responderAfterPhase1()
        #expect(midway.receive(publicKey) == reference.receive(publicKey))
        // Initiator, idle: then started.
        var central = try SMPFixtures.initiator()
        #expect(central.receive(pdu).isEmpty && !central.isFinished)
        var copy = try SMPFixtures.initiator()
        #expect(central.start() == copy.start())
        // Initiator, waiting for the Pairing Response: then the response.
        var started = try SMPFixtures.initiator()
        _ = started.start()
        var startedCopy = try SMPFixtures.initiator()
        _ = startedCopy.start()
        #expect(started.receive(pdu).isEmpty && !started.isFinished)
        #expect(started.receive(response) == startedCopy.receive(response))
    }

    /// The bytes of the first PDU among `actions`.
    static func firstSent(_ actions: [SMPPairing.Action]) -> [UInt8]? {
        actions.lazy.compactMap { if case .send(let pdu) = $0 { pdu.encoded } else { nil } }.first
    }

    /// Reserved PDUs before every PDU of a pairing, to both sides: the pairing completes as it does without them,
    /// and nobody sends anything more.
    @Test(arguments: [false, true]) func reservedCodesInTheMiddleOfAPairingChangeNothing(legacy: Bool) throws {
        var configuration = Configuration()
        configuration.secureConnections = !legacy
        configuration.bonding = true
        var plain = try SMPLink(configuration, configuration)
        plain.pair()
        var noisy = try SMPLink(configuration, configuration)
        noisy.interleaved = Self.reserved
        noisy.pair()
        let initiatorResult = try #require(noisy.result(.initiator))
        let responderResult = try #require(noisy.result(.responder))
        #expect(initiatorResult == plain.result(.initiator) && responderResult == plain.result(.responder))
        #expect(noisy.failure(.initiator) == nil && noisy.failure(.responder) == nil)
        #expect(noisy.sent(.initiator) == plain.sent(.initiator) && noisy.sent(.responder) == plain.sent(.responder))
        #expect(noisy.encryptionKeys.initiator != nil && noisy.encryptionKeys.initiator == noisy.encryptionKeys.responder)
    }

    /// p - y for the P-256 prime p: the Y coordinate of the negated point (both most significant octet first).
    func negated(_ y: [UInt8]) -> [UInt8] {
        let p = smpSpec("ffffffff 00000001 00000000 00000000 00000000 ffffffff ffffffff ffffffff")
        var result = [UInt8](repeating: 0, count: 32)
        var borrow = 0
        for index in (0..<32).reversed() {
            var digit = Int(p[index]) - Int(y[index]) - borrow
            borrow = digit < 0 ? 1 : 0
            if digit < 0 { digit += 256 }
            result[index] = UInt8(digit)
        }
        return result
    }

    @Test(arguments: ["off the curve", "own key", "own key negated", "zero"])
    func anInvalidPublicKey(kind: String) throws {
        var responder = try responderAfterPhase1()
        let own = try SMPKeyPair(privateKey: SMPFixtures.privateKeyB)
        let peer = try SMPKeyPair(privateKey: SMPFixtures.privateKeyA)
        var (x, y) = (peer.x, peer.y)
        switch kind {
        case "off the curve": y[31] ^= 1
        case "own key": (x, y) = (own.x, own.y)
        case "own key negated":
            (x, y) = (own.x, negated(own.y))
            // A valid point: only the X check catches it.
            #expect((try? peer.dhKey(peerX: x, peerY: y)) != nil)
        default: (x, y) = (Array(repeating: 0, count: 32), Array(repeating: 0, count: 32))
        }
        let actions = responder.receive(SMPPDU.pairingPublicKey(x: SMPCrypto.wire(x), y: SMPCrypto.wire(y)).encoded)
        #expect(actions == [.send(.pairingFailed(.dhKeyCheckFailed)), .cancelTimer, .fail(.sent(.dhKeyCheckFailed))])
    }

    @Test func pairingFailedFromThePeerEndsThePairingSilently() throws {
        var responder = try responderAfterPhase1()
        #expect(responder.receive(SMPPDU.pairingFailed(.pairingNotSupported).encoded)
                == [.cancelTimer, .fail(.received(.pairingNotSupported))])
        #expect(responder.receive(SMPPDU.pairingFailed(.unspecifiedReason).encoded) == [])
        #expect(responder.start() == [])
    }

    @Test func theTimerEndsThePairingForGood() throws {
        var link = try SMPLink(Configuration(ioCapability: .keyboardOnly, mitm: true),
                               Configuration(ioCapability: .displayOnly, mitm: true))
        link.user = false
        link.pair()
        #expect(link.log.contains { $0.action == .startTimer(.seconds(30)) })
        #expect(link.initiator.timerFired() == [.fail(.timeout)])
        // Nothing more is sent or accepted on the link: not even Pairing Failed.
        #expect(link.initiator.passkeyEntered(123_456) == [])
        #expect(link.initiator.receive(SMPPDU.pairingConfirm(Array(repeating: 0, count: 16)).encoded) == [])
        #expect(link.initiator.timerFired() == [])
        #expect(link.initiator.abort(.unspecifiedReason) == [])
    }

    @Test func aSecurityRequestStartsPairingAtTheInitiator() throws {
        var link = try SMPLink()
        link.handle(link.responder.start(), from: .responder)
        #expect(link.sent(.responder) == [.securityRequest([.bonding, .secureConnections])])
        link.run()
        #expect(link.result(.initiator) != nil && link.result(.responder) != nil)
        // A Security Request from a peer that must wait (Part H, 2.3.6) is refused.
        var refusing = try SMPLink(Configuration(refusal: .repeatedAttempts), .init())
        refusing.handle(refusing.responder.start(), from: .responder)
        refusing.run()
        #expect(refusing.sent(.initiator) == [.pairingFailed(.repeatedAttempts)])
        #expect(refusing.failure(.responder) == .received(.repeatedAttempts))
        // A Security Request while pairing is ignored.
        var busy = try SMPFixtures.initiator()
        _ = busy.start()
        #expect(busy.receive(SMPPDU.securityRequest([.bonding]).encoded) == [])
    }

    @Test func encryptionThatFails() throws {
        var fresh = try SMPLink()
        fresh.handle(fresh.initiator.start(), from: .initiator)
        while !fresh.inFlight.isEmpty {
            let (to, bytes) = fresh.inFlight.removeFirst()
            fresh.deliver(bytes, to: to)
        }
        #expect(fresh.initiator.encryptionChanged(success: false, keySize: 16) == [.cancelTimer, .fail(.encryptionFailed)])
    }
}
