@testable import BLEHost
import BLEProtocols
import BLEWire
import Logging
import Testing

/// The Security Manager driver on its own, synchronously: two managers, a central's and a peripheral's, each on a
/// link value of its own, talk through recording ports; the test carries the SMP PDUs across, plays the controllers'
/// encryption (LE Enable Encryption → LE Long Term Key Request → Encryption Change), answers the agents' questions,
/// and fires the Security Manager timer when it chooses (no clock, no host, no controller).
@Suite struct SecurityManagerTests {
    /// Records what a manager asks of its host.
    struct RecordingPort: SecurityPort {
        let localIdentity: LEAddress?
        var sent: [SMPPDU] = []
        var commands: [SecurityCommand] = []
        var events: [HostEvent] = []
        var questions: [PairingQuestion] = []
        var outcomes: [Result<LinkSecurity, SecurityError>] = []

        mutating func send(_ pdu: SMPPDU, on connection: HostConnection) { sent.append(pdu) }
        mutating func submit(_ command: SecurityCommand, on connection: HostConnection) { commands.append(command) }
        mutating func publish(_ event: HostEvent, about connection: HostConnection) { events.append(event) }
        mutating func ask(_ agent: any PairingAgent, _ question: PairingQuestion, on connection: HostConnection) { questions.append(question) }
        mutating func notify(_ waiters: [SecurityWaiter], _ outcome: Result<LinkSecurity, SecurityError>) { outcomes.append(outcome) }
        /// The test fires the timer itself (``SecurityManager/timerFired(on:port:)``): the host's handler is not wanted.
        func timerHandler(for connection: HostConnection) -> @Sendable (TimerSet<LinkID>.Firing) async -> Void { { _ in } }

        /// Takes what was sent so far.
        mutating func takeSent() -> [SMPPDU] {
            defer { sent = [] }
            return sent
        }
    }

    /// One side: its manager, its link and its port.
    struct Side {
        var manager: SecurityManager
        var link: Link
        var port: RecordingPort

        init(role: HCIRole, address: LEAddress, peer: LEAddress, settings: SecurityConfiguration = SecurityConfiguration()) {
            manager = SecurityManager(settings: settings, logger: Logger(label: "test.smp"))
            let connection = HostConnection(link: LinkID(rawValue: role == .central ? 1 : 2), handle: ConnectionHandle(rawValue: 0x40),
                                            role: role, peer: peer, localAddress: address, interval: 24, latency: 0, supervisionTimeout: 72)
            link = Link(connection: connection, reassembler: L2CAPReassembler(maximumPDULength: 1024), l2cap: L2CAPChannelManager(role: role))
            port = RecordingPort(localIdentity: address)
        }

        mutating func receive(_ pdu: SMPPDU) { manager.receive(pdu.encoded, on: &link, port: &port) }

        /// Answers the agent's questions as a user who accepts everything would.
        mutating func answerQuestions(passkey: UInt32? = nil) {
            while !port.questions.isEmpty {
                let question = port.questions.removeFirst()
                switch question {
                case .consent: manager.answered(.consent(true), on: &link, port: &port)
                case .passkey: manager.answered(.passkey(passkey), on: &link, port: &port)
                case .number: manager.answered(.number(true), on: &link, port: &port)
                case .justWorks: manager.answered(.justWorks(true), on: &link, port: &port)
                case .display: break
                }
            }
        }
    }

    static let centralAddress = LEAddress(BluetoothAddress(0xC0_00_00_00_00_01), type: .public)
    static let peripheralAddress = LEAddress(BluetoothAddress(0xC0_00_00_00_00_02), type: .public)

    /// Carries PDUs both ways, answers questions and plays the controllers' encryption until nothing moves.
    static func run(_ central: inout Side, _ peripheral: inout Side) {
        for _ in 0..<64 {
            central.answerQuestions()
            peripheral.answerQuestions()
            let down = central.port.takeSent(), up = peripheral.port.takeSent()
            for pdu in down { peripheral.receive(pdu) }
            for pdu in up { central.receive(pdu) }
            var encrypted = false
            while let index = central.port.commands.firstIndex(where: { if case .enableEncryption = $0 { true } else { false } }) {
                guard case .enableEncryption(let enable) = central.port.commands.remove(at: index) else { break }
                // The peripheral's controller asks its host for the key; with the same key both ends encrypt.
                peripheral.manager.longTermKeyRequested(ediv: enable.encryptedDiversifier, rand: enable.randomNumber,
                                                        on: &peripheral.link, port: &peripheral.port)
                let reply = peripheral.port.commands.compactMap { if case .longTermKeyReply(let r) = $0 { r } else { nil } }.last
                let status: HCIStatus = reply?.longTermKey == enable.longTermKey ? .success : .pinOrKeyMissing
                peripheral.port.commands.removeAll()
                central.manager.encryptionChanged(status: status, enabled: status == .success, on: &central.link, port: &central.port)
                peripheral.manager.encryptionChanged(status: status, enabled: status == .success, on: &peripheral.link, port: &peripheral.port)
                encrypted = true
            }
            if down.isEmpty, up.isEmpty, !encrypted, central.port.questions.isEmpty, peripheral.port.questions.isEmpty { return }
        }
        Issue.record("the exchange did not settle in 64 rounds")
    }

    static func completed(_ events: [HostEvent]) -> PairingOutcome? {
        events.lazy.compactMap { if case .pairingCompleted(_, let outcome) = $0 { outcome } else { nil } }.first
    }

    @Test func aSecurityRequestLeadsToASecureConnectionsPairingEncryptionAndABondOnBothSides() throws {
        var central = Side(role: .central, address: Self.centralAddress, peer: Self.peripheralAddress)
        var peripheral = Side(role: .peripheral, address: Self.peripheralAddress, peer: Self.centralAddress)
        central.receive(.securityRequest([.bonding, .secureConnections]))
        Self.run(&central, &peripheral)

        let onCentral = try #require(Self.completed(central.port.events))
        let onPeripheral = try #require(Self.completed(peripheral.port.events))
        #expect(onCentral.security.secureConnections && onPeripheral.security.secureConnections)
        #expect(!onCentral.security.authenticated, "Just Works")
        #expect(onCentral.bonded && onPeripheral.bonded)
        #expect(onCentral.peerIdentity == Self.peripheralAddress && onPeripheral.peerIdentity == Self.centralAddress)
        #expect(central.link.security.current.level?.secureConnections == true)
        #expect(peripheral.link.security.current.isBonded)
        #expect(peripheral.port.questions.isEmpty && peripheral.port.sent.isEmpty)
        // Each side's bond holds the key the other encrypts with.
        let centralBond = try #require(central.manager.bond(with: Self.peripheralAddress, local: Self.centralAddress))
        let peripheralBond = try #require(peripheral.manager.bond(with: Self.centralAddress, local: Self.peripheralAddress))
        #expect(centralBond.peerKey?.longTermKey == peripheralBond.localKey?.longTermKey)
    }

    @Test func aBondedCentralEncryptsWithTheBondWithoutPairingAgain() throws {
        var central = Side(role: .central, address: Self.centralAddress, peer: Self.peripheralAddress)
        var peripheral = Side(role: .peripheral, address: Self.peripheralAddress, peer: Self.centralAddress)
        central.receive(.securityRequest([.bonding, .secureConnections]))
        Self.run(&central, &peripheral)
        #expect(Self.completed(central.port.events) != nil)

        // A new link between the same two, with the same managers (and so the same bond stores).
        var again = Side(role: .central, address: Self.centralAddress, peer: Self.peripheralAddress)
        again.manager = central.manager
        var responder = Side(role: .peripheral, address: Self.peripheralAddress, peer: Self.centralAddress)
        responder.manager = peripheral.manager
        again.receive(.securityRequest([.bonding, .secureConnections]))
        #expect(again.port.sent.isEmpty, "no Pairing Request: the bond's key")
        Self.run(&again, &responder)
        #expect(Self.completed(again.port.events) == nil && Self.completed(responder.port.events) == nil)
        let usedBond = again.port.events.contains { if case .encrypted(_, _, usingBond: true) = $0 { true } else { false } }
        #expect(usedBond)
        #expect(again.link.security.current.level?.secureConnections == true)
    }

    @Test func theTimerFiresWhenTheTestSaysAndEndsSMPOnTheLink() throws {
        var central = Side(role: .central, address: Self.centralAddress, peer: Self.peripheralAddress)
        var peripheral = Side(role: .peripheral, address: Self.peripheralAddress, peer: Self.centralAddress)
        central.receive(.securityRequest([.bonding]))
        // The Pairing Request reaches the peripheral, whose agent is asked to consent and does not answer.
        for pdu in central.port.takeSent() { peripheral.receive(pdu) }
        #expect(peripheral.port.questions.count == 1)
        guard case .awaitingConsent = peripheral.link.security.phase else {
            Issue.record("expected to wait for consent, not \(peripheral.link.security.phase)")
            return
        }
        // 30 s pass: the test fires the timer (no clock runs).
        peripheral.manager.timerFired(on: &peripheral.link, port: &peripheral.port)
        guard case .timedOut = peripheral.link.security.phase else {
            Issue.record("expected the link's SMP to have timed out, not \(peripheral.link.security.phase)")
            return
        }
        let failed = peripheral.port.events.contains { if case .pairingFailed(_, .timeout) = $0 { true } else { false } }
        #expect(failed)
        // Nothing more is accepted on this link (Core 5.4, Vol 3, Part H, 3.4): a late consent and a new request
        // find nothing to start, and nothing is sent.
        peripheral.manager.answered(.consent(true), on: &peripheral.link, port: &peripheral.port)
        for pdu in central.port.sent { peripheral.receive(pdu) }
        #expect(peripheral.port.sent.isEmpty)
        #expect(throws: SecurityError.self) { try peripheral.manager.secured(peripheral.link, mitm: false, force: false) }
    }

    @Test func aRefusedConsentAnswersPairingNotSupported() {
        var central = Side(role: .central, address: Self.centralAddress, peer: Self.peripheralAddress)
        var peripheral = Side(role: .peripheral, address: Self.peripheralAddress, peer: Self.centralAddress)
        central.receive(.securityRequest([.bonding]))
        for pdu in central.port.takeSent() { peripheral.receive(pdu) }
        peripheral.port.questions.removeAll()
        peripheral.manager.answered(.consent(false), on: &peripheral.link, port: &peripheral.port)
        #expect(peripheral.port.sent == [.pairingFailed(.pairingNotSupported)])
        guard case .idle = peripheral.link.security.phase else {
            Issue.record("expected idle after the refusal, not \(peripheral.link.security.phase)")
            return
        }
    }
}
