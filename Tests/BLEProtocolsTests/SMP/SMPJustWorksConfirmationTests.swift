import BLEProtocols
import BLEWire
import Testing

/// Just Works with the user asked to go on (`Configuration.confirmsJustWorks`): where the prompt comes, that nothing
/// moves until it is answered, and what a refusal sends. Core 5.4, Vol 3, Part H, 2.3.5.6.2 (LE Secure Connections)
/// and 2.3.5.2 (legacy).
@Suite struct SMPJustWorksConfirmationTests {
    static let confirming = SMPPairing.Configuration(confirmsJustWorks: true)
    static let confirmingLegacy = SMPPairing.Configuration(secureConnections: false, confirmsJustWorks: true)

    func prompts(_ link: SMPLink, _ role: SMPPairing.Role) -> Int {
        link.log.filter { entry in
            guard entry.role == role, case .confirmJustWorks = entry.action else { return false }
            return true
        }.count
    }

    @Test func secureConnectionsAsksBothSidesAfterTheNoncesAndCompletes() throws {
        var link = try SMPLink(Self.confirming, Self.confirming)
        link.pair()
        #expect(prompts(link, .initiator) == 1 && prompts(link, .responder) == 1)
        let i = try #require(link.result(.initiator))
        #expect(i.method == .justWorks && !i.security.authenticated)
        #expect(link.result(.responder) != nil)
        // Asked after the nonces: the initiator's prompt follows the responder's Pairing Random, its DHKey check
        // follows the answer.
        let initiatorLog = link.log.filter { $0.role == .initiator }.map(\.action)
        let prompt = try #require(initiatorLog.firstIndex(of: .confirmJustWorks))
        let check = try #require(initiatorLog.firstIndex { if case .send(.pairingDHKeyCheck) = $0 { true } else { false } })
        #expect(prompt < check)
    }

    @Test func withoutTheSettingNobodyIsAsked() throws {
        var link = try SMPLink()
        link.pair()
        #expect(prompts(link, .initiator) == 0 && prompts(link, .responder) == 0)
        #expect(link.result(.initiator)?.method == .justWorks)
    }

    @Test func onlyTheSideThatAsksIsPrompted() throws {
        var link = try SMPLink(SMPPairing.Configuration(), Self.confirming)
        link.pair()
        #expect(prompts(link, .initiator) == 0 && prompts(link, .responder) == 1)
        #expect(link.result(.initiator) != nil && link.result(.responder) != nil)
    }

    @Test(arguments: [SMPPairing.Role.initiator, .responder])
    func aRefusalFailsWithNumericComparisonFailed(refusing: SMPPairing.Role) throws {
        var link = try SMPLink(Self.confirming, Self.confirming)
        link.justWorksAnswers[refusing] = false
        link.pair()
        #expect(link.failure(refusing) == .sent(.numericComparisonFailed))
        let other: SMPPairing.Role = refusing == .initiator ? .responder : .initiator
        #expect(link.failure(other) == .received(.numericComparisonFailed))
        #expect(link.encryptionKeys.initiator == nil && link.encryptionKeys.responder == nil)
    }

    @Test func nothingMovesUntilTheUserAnswers() throws {
        var initiator = try SMPFixtures.initiator(Self.confirming)
        var responder = try SMPFixtures.responder(Self.confirming)
        // Run the exchange by hand, holding the prompts.
        var toResponder = initiator.start()
        var toInitiator: [SMPPairing.Action] = []
        var prompted: Set<SMPPairing.Role> = []
        for _ in 0..<20 {
            var next: [SMPPairing.Action] = []
            for case .send(let pdu) in toResponder { next += responder.receive(pdu.encoded) }
            if next.contains(.confirmJustWorks) { prompted.insert(.responder) }
            toInitiator = next
            next = []
            for case .send(let pdu) in toInitiator { next += initiator.receive(pdu.encoded) }
            if next.contains(.confirmJustWorks) { prompted.insert(.initiator) }
            toResponder = next
            if toResponder.isEmpty && toInitiator.allSatisfy({ if case .send = $0 { false } else { true } }) { break }
        }
        #expect(prompted == [.initiator, .responder])
        #expect(initiator.isWaitingForUser && responder.isWaitingForUser)
        // The initiator's answer sends its DHKey check; the responder holds it until its own user answers.
        let afterInitiator = initiator.justWorksConfirmed(true)
        let checks = afterInitiator.compactMap { action -> SMPPDU? in
            if case .send(let pdu) = action, case .pairingDHKeyCheck = pdu { return pdu }
            return nil
        }
        #expect(checks.count == 1)
        var held: [SMPPairing.Action] = []
        for pdu in checks { held += responder.receive(pdu.encoded) }
        #expect(held.isEmpty)
        let released = responder.justWorksConfirmed(true)
        #expect(released.contains { if case .send(.pairingDHKeyCheck) = $0 { true } else { false } })
        #expect(released.contains { if case .provideLongTermKey = $0 { true } else { false } })
        // A second answer changes nothing.
        #expect(responder.justWorksConfirmed(false).isEmpty)
    }

    @Test func legacyAsksBeforeTheConfirmValues() throws {
        var link = try SMPLink(Self.confirmingLegacy, Self.confirmingLegacy)
        link.pair()
        #expect(prompts(link, .initiator) == 1 && prompts(link, .responder) == 1)
        let i = try #require(link.result(.initiator))
        #expect(i.method == .justWorks && !i.security.secureConnections)
        let initiatorLog = link.log.filter { $0.role == .initiator }.map(\.action)
        let prompt = try #require(initiatorLog.firstIndex(of: .confirmJustWorks))
        let confirm = try #require(initiatorLog.firstIndex { if case .send(.pairingConfirm) = $0 { true } else { false } })
        #expect(prompt < confirm)
    }

    @Test func legacyRefusalFailsWithUnspecifiedReason() throws {
        var link = try SMPLink(Self.confirmingLegacy, Self.confirmingLegacy)
        link.justWorksAnswers[.responder] = false
        link.pair()
        #expect(link.failure(.responder) == .sent(.unspecifiedReason))
        #expect(link.failure(.initiator) == .received(.unspecifiedReason))
        #expect(!link.sent(.responder).contains { if case .pairingConfirm = $0 { true } else { false } })
    }
}
