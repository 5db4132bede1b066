import BLEFixtures
import BLEHost
import BLEProtocols
import BLETransport
import BLEVirtualController
import BLEWire
import Synchronization
import Testing

/// Hostile SMP input against our host, through HCI and the virtual controller: a raw peer (a second host that took its
/// SMP channel over) sends raw bytes on the SMP fixed channel (CID 0x0006) and reads the exact bytes our host answers
/// (Pairing Failed = 0x05 <reason>, Core 5.4, Vol 3, Part H, 3.5.5). After each case the link is still served (the
/// raw peer's GATT client reads our device name) and another peer still pairs with our host.
@Suite(.timeLimit(.minutes(1))) struct SMPHostileInputTests {
    /// The role our host plays on the link with the raw peer.
    enum Side: String, Sendable, CustomTestStringConvertible {
        /// Our host is the peripheral (the pairing responder); the raw peer is the central.
        case peripheral
        /// Our host is the central (the pairing initiator); the raw peer is the peripheral.
        case central

        var testDescription: String { "our host as \(rawValue)" }
    }

    /// The SMP payloads the raw peer received, in order.
    final class Inbox: Sendable {
        private let box = Mutex<[[UInt8]]>([])

        func start(_ stream: AsyncStream<[UInt8]>) {
            Task { for await payload in stream { self.box.withLock { $0.append(payload) } } }
        }

        /// The next payload, or `nil` when none arrived within `seconds`.
        func next(within seconds: Double = 2) async -> [UInt8]? {
            let deadline = ContinuousClock.now + .seconds(seconds)
            while true {
                if let payload = box.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { return payload }
                guard ContinuousClock.now < deadline else { return nil }
                try? await Task.sleep(for: .milliseconds(5))
            }
        }
    }

    struct Rig {
        let side: Side
        let world: World
        /// Our host.
        let target: HCIHost
        let targetAddress: BluetoothAddress
        let targetLink: HostConnection
        let targetEvents: AsyncStream<HostEvent>
        let server: GATTEngine
        /// The raw peer: its SMP channel taken over, its ATT served by a GATT client.
        let raw: HCIHost
        let rawLink: HostConnection
        let rawClient: GATTEngine
        let smp: Inbox

        /// Sends raw bytes on the raw peer's SMP channel.
        func send(_ bytes: [UInt8]) async throws { try await raw.sendL2CAP(bytes, channel: .smp, on: rawLink) }
        /// Our host's next SMP PDU.
        func reply() async -> [UInt8]? { await smp.next() }
        /// What our host sends within a short window (`nil`: nothing).
        func silence() async -> [UInt8]? { await smp.next(within: 0.3) }

        /// Our host (central) starts pairing; the raw peripheral reads its Pairing Request.
        func ourPairingRequest() async throws -> Task<LinkSecurity, any Error> {
            let target = target
            let link = targetLink
            let pairing = Task { try await target.pair(link) }
            #expect(await reply() == SMPHostileInputTests.ourRequest)
            return pairing
        }

        /// The link is still up and served, and another peer still pairs with our host.
        func stillServed(encrypted: Bool = false) async throws {
            let names = try await rawClient.read(rawLink, byType: 0x2A00)
            #expect(names.map(\.value) == [Array("Target".utf8)])
            #expect(await target.security(of: targetLink)?.isEncrypted == encrypted)
            let (other, otherController) = try await world.host(at: 2)
            let security: LinkSecurity
            switch side {
            case .peripheral:
                let (c, _) = try await connect(other, target, peripheralAddress: targetAddress)
                security = try await other.pair(c)
            case .central:
                let (c, _) = try await connect(target, other, peripheralAddress: otherController.address)
                security = try await target.pair(c)
            }
            #expect(security.level == SMPSecurityLevel(secureConnections: true, authenticated: false, keySize: 16))
            #expect(await target.connections.count == 2)
        }
    }

    func setUp(_ side: Side, security: SecurityConfiguration = SecurityConfiguration(timeout: .seconds(5)),
               bonds: (_ target: LEAddress, _ raw: LEAddress) -> [Bond] = { _, _ in [] }) async throws -> Rig {
        let world = World()
        var configuration = HCIHost.Configuration()
        configuration.security = security
        let (target, targetController) = try await world.host(configuration: configuration)
        let (raw, rawController) = try await world.host(at: 1)
        for bond in bonds(LEAddress(targetController.address, type: .public), LEAddress(rawController.address, type: .public)) {
            try security.bondStore.save(bond)
        }
        let targetEvents = await target.events()
        let server = GATTEngine(host: target, database: GATTDatabase(deviceName: "Target", services: []))
        await server.start()
        let rawClient = GATTEngine(host: raw)
        await rawClient.start()
        await raw.setPairsOnDemand(false)
        let targetLink: HostConnection
        let rawLink: HostConnection
        switch side {
        case .peripheral:
            (rawLink, targetLink) = try await connect(raw, target, peripheralAddress: targetController.address)
        case .central:
            (targetLink, rawLink) = try await connect(target, raw, peripheralAddress: rawController.address)
        }
        let smp = Inbox()
        smp.start(try await raw.openFixedChannel(.smp, on: rawLink))
        return Rig(side: side, world: world, target: target, targetAddress: targetController.address, targetLink: targetLink,
                   targetEvents: targetEvents, server: server, raw: raw, rawLink: rawLink, rawClient: rawClient, smp: smp)
    }

    /// Expects `body` to throw a ``SecurityError`` of `kind` (whatever its text).
    func expectSecurityError(_ kind: SecurityError.Code, sourceLocation: SourceLocation = #_sourceLocation,
                             _ body: () async throws -> LinkSecurity) async {
        await #expect(sourceLocation: sourceLocation) {
            try await body()
        } throws: { error in
            (error as? SecurityError)?.code == kind
        }
    }

    // MARK: PDUs

    /// Pairing Failed with `reason`.
    static func failed(_ reason: UInt8) -> [UInt8] { [0x05, reason] }

    /// Pairing Request: NoInputNoOutput, no OOB, Bonding + SC, 16 octets, all keys both ways.
    static let scRequest: [UInt8] = [0x01, 0x03, 0x00, 0x09, 0x10, 0x07, 0x07]
    /// The same without the SC flag: LE legacy pairing.
    static let legacyRequest: [UInt8] = [0x01, 0x03, 0x00, 0x01, 0x10, 0x07, 0x07]
    /// Our Pairing Response to either: NoInputNoOutput, Bonding + SC, 16 octets, the peer's keys (all asked for) and
    /// ours (LTK and identity; no CSRK).
    static let ourResponse: [UInt8] = [0x02, 0x03, 0x00, 0x09, 0x10, 0x07, 0x03]
    /// Our Pairing Request as central: Bonding + SC, 16 octets, we give LTK and identity, ask for all three.
    static let ourRequest: [UInt8] = [0x01, 0x03, 0x00, 0x09, 0x10, 0x03, 0x07]
    /// A Pairing Response (no keys distributed), SC or legacy.
    static let scResponse: [UInt8] = [0x02, 0x03, 0x00, 0x09, 0x10, 0x00, 0x00]
    static let legacyResponse: [UInt8] = [0x02, 0x03, 0x00, 0x01, 0x10, 0x00, 0x00]
    /// Security Request: Bonding + SC.
    static let securityRequest: [UInt8] = [0x0B, 0x09]

    /// A valid P-256 key pair (a fixed private key).
    static func validKey() throws -> SMPKeyPair { try SMPKeyPair(privateKey: [UInt8](repeating: 0x11, count: 32)) }

    /// Pairing Public Key with X and Y most significant octet first (sent least significant first).
    static func publicKey(x: [UInt8], y: [UInt8]) -> [UInt8] { [0x0C] + SMPCrypto.wire(x) + SMPCrypto.wire(y) }

    /// The P-256 prime p, most significant octet first.
    static let prime: [UInt8] = [
        0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
    ]

    /// p − y (the negated point's Y), most significant octet first.
    static func negated(_ y: [UInt8]) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: 32)
        var borrow = 0
        for i in (0..<32).reversed() {
            var digit = Int(prime[i]) - Int(y.count == 32 ? y[i] : 0) - borrow
            borrow = digit < 0 ? 1 : 0
            if digit < 0 { digit += 256 }
            result[i] = UInt8(digit)
        }
        return result
    }

    // MARK: Malformed PDUs (Invalid Parameters)

    /// Pairing Request (or Response) of the wrong length, or with a Maximum Encryption Key Size outside 7...16:
    /// Invalid Parameters (0x0A). Core 5.4, Vol 3, Part H, 3.5.1 says the field "shall be in the range 7 to 16" and
    /// 3.5.5 defines Invalid Parameters as a command length that is invalid or a parameter outside its specified
    /// range; Encryption Key Size (0x06) is for a valid size too small for this device's policy (2.3.4), below.
    /// Each malformed PDU is refused alike, one after the other on the same link (decoding fails before any policy).
    @Test(arguments: [Side.peripheral, .central]) func malformedPairingFeaturesAreInvalidParameters(_ side: Side) async throws {
        let rig = try await setUp(side)
        // A Pairing Request to our peripheral, a Pairing Response (with key distributions our request allows) to
        // our central.
        let (code, keys): (UInt8, [UInt8]) = side == .peripheral ? (0x01, [0x07, 0x07]) : (0x02, [0x00, 0x00])
        let bad: [[UInt8]] = [
            [code],                                           // no parameters
            [code, 0x03, 0x00, 0x09, 0x10, keys[0]],          // 6 octets
            [code, 0x03, 0x00, 0x09, 0x10] + keys + [0x00],   // 8 octets
            [code, 0x03, 0x00, 0x09, 0x00] + keys,            // key size 0
            [code, 0x03, 0x00, 0x09, 0x06] + keys,            // key size 6
            [code, 0x03, 0x00, 0x09, 0x11] + keys,            // key size 17
            [code, 0x03, 0x00, 0x09, 0xFF] + keys,            // key size 255
        ]
        for pdu in bad {
            let pairing = side == .central ? try await rig.ourPairingRequest() : nil
            try await rig.send(pdu)
            #expect(await rig.reply() == Self.failed(0x0A), "\(pdu)")
            if let pairing {
                await expectSecurityError(.pairingFailed(.sent(.invalidParameters))) { try await pairing.value }
            }
        }
        // An empty SMP frame carries no command at all: it is dropped without an answer, as empty frames on every
        // fixed channel are (issue 13; no Code to reject).
        try await rig.send([])
        #expect(await rig.silence() == nil)
        try await rig.stillServed()
    }

    // MARK: Key size below policy (KNOB)

    /// A peer offering 7...15 octets to our host, whose policy is 16: Encryption Key Size (0x06), whichever side
    /// offers it. Core 5.4, Vol 3, Part H, 2.3.4. (The KNOB attack negotiates the key down to brute-force it.)
    @Test(arguments: UInt8(7)...15) func aKeySizeBelowPolicyAsResponderIsEncryptionKeySize(_ size: UInt8) async throws {
        let rig = try await setUp(.peripheral, security: SecurityConfiguration(minimumKeySize: 16, timeout: .seconds(5)))
        try await rig.send([0x01, 0x03, 0x00, 0x09, size, 0x07, 0x07])
        #expect(await rig.reply() == Self.failed(0x06))
        try await rig.stillServed()
    }

    /// As central our host pairs again itself after each failure (the attempt limiter only refuses the peer's
    /// pairings), so all sizes go over one link.
    @Test func aKeySizeBelowPolicyAsInitiatorIsEncryptionKeySize() async throws {
        let rig = try await setUp(.central, security: SecurityConfiguration(minimumKeySize: 16, timeout: .seconds(5)))
        for size in UInt8(7)...15 {
            let pairing = try await rig.ourPairingRequest()
            try await rig.send([0x02, 0x03, 0x00, 0x09, size, 0x00, 0x00])
            #expect(await rig.reply() == Self.failed(0x06), "key size \(size)")
            await expectSecurityError(.pairingFailed(.sent(.encryptionKeySize))) { try await pairing.value }
        }
        try await rig.stillServed()
    }

    // MARK: Unknown codes, wrong direction, out of sequence

    /// Reserved codes (0x00, 0x0F and up) are ignored: no answer, nothing changes. Core 5.4, Vol 3, Part H, 3.3.
    @Test(arguments: [Side.peripheral, .central]) func reservedCodesAreIgnored(_ side: Side) async throws {
        let rig = try await setUp(side)
        for pdu: [UInt8] in [[0x00], [0x0F], [0x10, 0xAA, 0xBB], [0x7F], [0xFF, 0x01]] {
            try await rig.send(pdu)
        }
        #expect(await rig.silence() == nil)
        try await rig.stillServed()
    }

    /// A command only the other role sends: Command Not Supported (0x07). A Pairing Response or Security Request
    /// to our peripheral, a Pairing Request to our central.
    @Test(arguments: [Side.peripheral, .central]) func commandsOfTheOtherRoleAreCommandNotSupported(_ side: Side) async throws {
        let rig = try await setUp(side)
        let pdus = side == .peripheral ? [Self.scResponse, Self.securityRequest] : [Self.scRequest]
        for pdu in pdus {
            try await rig.send(pdu)
            #expect(await rig.reply() == Self.failed(0x07), "\(pdu)")
        }
        try await rig.stillServed()
    }

    /// Pairing PDUs with nothing under way: Unspecified Reason (0x08), each time.
    @Test(arguments: [Side.peripheral, .central]) func pairingPDUsOutOfSequenceAreUnspecifiedReason(_ side: Side) async throws {
        let rig = try await setUp(side)
        let key = try Self.validKey()
        let value = [UInt8](repeating: 0x5A, count: 16)
        let pdus: [[UInt8]] = [
            [0x03] + value,                                   // Pairing Confirm
            [0x04] + value,                                   // Pairing Random
            Self.publicKey(x: key.x, y: key.y),               // Pairing Public Key
            [0x0D] + value,                                   // Pairing DHKey Check
            [0x06] + value,                                   // Encryption Information
            [0x07, 0x34, 0x12, 1, 2, 3, 4, 5, 6, 7, 8],       // Central Identification
            [0x08] + value,                                   // Identity Information
            [0x09, 0x00, 1, 2, 3, 4, 5, 6],                   // Identity Address Information
            [0x0A] + value,                                   // Signing Information
        ]
        for pdu in pdus {
            try await rig.send(pdu)
            #expect(await rig.reply() == Self.failed(0x08), "\(pdu)")
        }
        try await rig.stillServed()
    }

    /// A Pairing Public Key during LE legacy pairing: out of sequence, Unspecified Reason (0x08).
    @Test(arguments: [Side.peripheral, .central]) func aPublicKeyDuringLegacyPairingIsUnspecifiedReason(_ side: Side) async throws {
        let rig = try await setUp(side)
        let key = try Self.validKey()
        var pairing: Task<LinkSecurity, any Error>?
        switch side {
        case .peripheral:
            try await rig.send(Self.legacyRequest)
            #expect(await rig.reply() == Self.ourResponse)
        case .central:
            pairing = try await rig.ourPairingRequest()
            try await rig.send(Self.legacyResponse)
            // LE legacy Just Works: the initiator sends Mconfirm first.
            let confirm = await rig.reply()
            #expect(confirm?.first == 0x03 && confirm?.count == 17)
        }
        try await rig.send(Self.publicKey(x: key.x, y: key.y))
        #expect(await rig.reply() == Self.failed(0x08))
        if let pairing {
            await expectSecurityError(.pairingFailed(.sent(.unspecifiedReason))) { try await pairing.value }
        }
        try await rig.stillServed()
    }

    // MARK: Public keys

    /// A public key not on P-256 (the invalid-curve attack: a valid X with Y zeroed, and the point (1, 1)):
    /// DHKey Check Failed (0x0B), before our host sends or derives anything with it. Core 5.4, Vol 3, Part H,
    /// 2.3.5.6.1.
    @Test(arguments: [Side.peripheral, .central]) func aPublicKeyOffTheCurveIsDHKeyCheckFailed(_ side: Side) async throws {
        let rig = try await setUp(side)
        let key = try Self.validKey()
        let one = [UInt8](repeating: 0, count: 31) + [1]
        let offCurve = [(key.x, [UInt8](repeating: 0, count: 32)), (one, one)]
        for (x, y) in offCurve {
            var pairing: Task<LinkSecurity, any Error>?
            switch side {
            case .peripheral:
                // A new Pairing Request after a failure waits for the attempt limiter: one pairing on this link.
                guard x == key.x else { continue }
                try await rig.send(Self.scRequest)
                #expect(await rig.reply() == Self.ourResponse)
            case .central:
                pairing = try await rig.ourPairingRequest()
                try await rig.send(Self.scResponse)
                let ours = await rig.reply()
                #expect(ours?.first == 0x0C && ours?.count == 65)
            }
            try await rig.send(Self.publicKey(x: x, y: y))
            #expect(await rig.reply() == Self.failed(0x0B))
            if let pairing {
                await expectSecurityError(.pairingFailed(.sent(.dhKeyCheckFailed))) { try await pairing.value }
            }
        }
        try await rig.stillServed()
    }

    /// Our own public key sent back to us (reflection), or its negation (same X): DHKey Check Failed (0x0B).
    /// Only our host as initiator can be reflected: as responder it sends its key (a new one per pairing) only after
    /// the initiator's.
    @Test func ourOwnPublicKeyReflectedIsDHKeyCheckFailed() async throws {
        let rig = try await setUp(.central)
        for negate in [false, true] {
            let pairing = try await rig.ourPairingRequest()
            try await rig.send(Self.scResponse)
            let ours = try #require(await rig.reply())
            try #require(ours.first == 0x0C && ours.count == 65)
            let x = SMPCrypto.wire(Array(ours[1...32]))
            let y = SMPCrypto.wire(Array(ours[33...64]))
            try await rig.send(Self.publicKey(x: x, y: negate ? Self.negated(y) : y))
            #expect(await rig.reply() == Self.failed(0x0B), negate ? "negated" : "reflected")
            await expectSecurityError(.pairingFailed(.sent(.dhKeyCheckFailed))) { try await pairing.value }
        }
        try await rig.stillServed()
    }

    // MARK: LTK requests

    /// The raw central encrypts with a key before any pairing (no bond): our peripheral answers the LTK request
    /// negatively, the raw central gets Encryption Change 0x06 PIN or Key Missing, the link stays up unencrypted.
    @Test func anLTKRequestBeforePairingIsRefused() async throws {
        let rig = try await setUp(.peripheral)
        let rawEvents = await rig.raw.events()
        for (key, ediv, rand) in [([UInt8](repeating: 0, count: 16), UInt16(0), UInt64(0)),
                                  ([UInt8](repeating: 0x42, count: 16), 0x1234, 0x0102_0304_0506_0708)] {
            _ = try await rig.raw.send(HCILEEnableEncryption(handle: rig.rawLink.handle, randomNumber: rand,
                                                             encryptedDiversifier: ediv, longTermKey: key))
            let change = try await next(rawEvents) { event -> (HCIStatus, Bool)? in
                if case .encryptionChanged(_, let status, let enabled) = event { (status, enabled) } else { nil }
            }
            #expect(change == (.pinOrKeyMissing, false))
        }
        #expect(await rig.raw.security(of: rig.rawLink)?.isEncrypted == false)
        try await rig.stillServed()
    }

    /// A bond whose key is all zero (a corrupt store) is never used: the central that knows the zero key is refused.
    @Test func anAllZeroBondKeyIsRefused() async throws {
        let zero = [UInt8](repeating: 0, count: 16)
        let rig = try await setUp(.peripheral) { target, raw in
            [Bond(local: target, peer: raw, peerKey: BondKey(longTermKey: zero), localKey: BondKey(longTermKey: zero),
                  security: SMPSecurityLevel(secureConnections: true, authenticated: false, keySize: 16), created: 0)]
        }
        let rawEvents = await rig.raw.events()
        _ = try await rig.raw.send(HCILEEnableEncryption(handle: rig.rawLink.handle, randomNumber: 0, encryptedDiversifier: 0,
                                                         longTermKey: zero))
        let change = try await next(rawEvents) { event -> (HCIStatus, Bool)? in
            if case .encryptionChanged(_, let status, let enabled) = event { (status, enabled) } else { nil }
        }
        #expect(change == (.pinOrKeyMissing, false))
        try await rig.stillServed()
    }

    /// An LTK request in the middle of a pairing (phase 1 done, no key yet) waits for the pairing's key; when the
    /// pairing fails instead (the peer's Pairing Failed, or our Security Manager timeout), it is answered negatively
    /// (0x06) and the link stays up unencrypted.
    @Test(arguments: [false, true]) func anLTKRequestDuringAPairingThatFailsIsRefused(timingOut: Bool) async throws {
        let rig = try await setUp(.peripheral, security: SecurityConfiguration(timeout: .milliseconds(timingOut ? 300 : 5000)))
        let rawEvents = await rig.raw.events()
        try await rig.send(Self.scRequest)
        #expect(await rig.reply() == Self.ourResponse)
        _ = try await rig.raw.send(HCILEEnableEncryption(handle: rig.rawLink.handle, randomNumber: 0, encryptedDiversifier: 0,
                                                         longTermKey: [UInt8](repeating: 0x42, count: 16)))
        if !timingOut { try await rig.send(Self.failed(0x08)) }
        let change = try await next(rawEvents) { event -> (HCIStatus, Bool)? in
            if case .encryptionChanged(_, let status, let enabled) = event { (status, enabled) } else { nil }
        }
        #expect(change == (.pinOrKeyMissing, false))
        #expect(await rig.silence() == nil)
        try await rig.stillServed()
    }

    // MARK: After the timeout

    /// After the Security Manager timeout nothing on SMP is answered on that link (Core 5.4, Vol 3, Part H, 3.4);
    /// the link itself is still served.
    @Test(arguments: [Side.peripheral, .central]) func nothingIsAnsweredAfterTheTimeout(_ side: Side) async throws {
        let rig = try await setUp(side, security: SecurityConfiguration(timeout: .milliseconds(300)))
        switch side {
        case .peripheral:
            try await rig.send(Self.scRequest)
            #expect(await rig.reply() == Self.ourResponse)
            let failure = try await next(rig.targetEvents) { if case .pairingFailed(_, let f) = $0 { f } else { nil } }
            #expect(failure == .timeout)
        case .central:
            let pairing = try await rig.ourPairingRequest()
            await expectSecurityError(.pairingFailed(.timeout)) { try await pairing.value }
        }
        // Nothing was sent when it timed out, and nothing answers now.
        for pdu in [Self.scRequest, Self.scResponse, Self.securityRequest, [0xFF], Self.failed(0x08)] {
            try await rig.send(pdu)
        }
        #expect(await rig.silence() == nil)
        await expectSecurityError(.timedOut) { try await rig.target.pair(rig.targetLink) }
        try await rig.stillServed()
    }

    // MARK: Repeated attempts

    /// A new pairing from the peer within the attempt limiter's wait after a failure: Repeated Attempts (0x09).
    /// Core 5.4, Vol 3, Part H, 2.3.6.
    @Test(arguments: [Side.peripheral, .central]) func aNewPairingRightAfterAFailureIsRepeatedAttempts(_ side: Side) async throws {
        let rig = try await setUp(side)
        switch side {
        case .peripheral:
            try await rig.send([0x01, 0x03, 0x00, 0x09, 0x07, 0x07, 0x07])
            #expect(await rig.reply() == Self.failed(0x06))
            for _ in 0..<2 {
                try await rig.send(Self.scRequest)
                #expect(await rig.reply() == Self.failed(0x09))
            }
        case .central:
            let pairing = try await rig.ourPairingRequest()
            try await rig.send([0x02, 0x03, 0x00, 0x09, 0x07, 0x00, 0x00])
            #expect(await rig.reply() == Self.failed(0x06))
            _ = await pairing.result
            for _ in 0..<2 {
                try await rig.send(Self.securityRequest)
                #expect(await rig.reply() == Self.failed(0x09))
            }
        }
        try await rig.stillServed()
    }

    // MARK: Pairing Failed with nothing under way

    /// A Pairing Failed from the peer when no pairing is under way: no answer, and no failure counted (the peer's
    /// next pairing is served normally, not refused with Repeated Attempts).
    @Test(arguments: [Side.peripheral, .central]) func aPairingFailedWithNothingUnderWayIsNotAnswered(_ side: Side) async throws {
        let rig = try await setUp(side)
        for reason: UInt8 in [0x08, 0x05, 0x00, 0xFF] { try await rig.send(Self.failed(reason)) }
        switch side {
        case .peripheral:
            try await rig.send(Self.scRequest)
            #expect(await rig.reply() == Self.ourResponse)
        case .central:
            try await rig.send(Self.securityRequest)
            #expect(await rig.reply() == Self.ourRequest)
        }
        try await rig.stillServed()
    }
}
