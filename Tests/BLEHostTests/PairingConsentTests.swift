import BLEFixtures
import BLEHost
import BLEProtocols
import BLETestSupport
import BLEWire
import Synchronization
import Testing

/// The peripheral's pairing agent deciding on a central's Pairing Request, through the real stack: a raw central
/// (a host whose SMP channel a test drives) sends the request, our host is the peripheral that asks its agent.
@Suite(.timeLimit(.minutes(1))) struct PairingConsentTests {
    /// An agent whose consent the test gives (or never gives), counting how often it is asked.
    final class GatedAgent: PairingAgent {
        private let state = Mutex<(asked: Int, answer: Bool?)>((0, nil))

        init(answer: Bool? = nil) { state.withLock { $0.answer = answer } }

        var asked: Int { state.withLock { $0.asked } }
        func answer(_ accept: Bool) { state.withLock { $0.answer = accept } }

        /// Waits until the agent was asked (at most `seconds`).
        func waitUntilAsked(within seconds: Double = 5) async -> Bool {
            let deadline = ContinuousClock.now + .seconds(seconds)
            while asked == 0 && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(5)) }
            return asked > 0
        }

        func acceptPairing(from peer: LEAddress) async -> Bool {
            state.withLock { $0.asked += 1 }
            // Answers when the test says so; a user who never answers gives up after 20 s.
            let deadline = ContinuousClock.now + .seconds(20)
            while ContinuousClock.now < deadline {
                if let answer = state.withLock({ $0.answer }) { return answer }
                try? await Task.sleep(for: .milliseconds(5))
            }
            return false
        }
        func displayPasskey(_ passkey: UInt32, for peer: LEAddress) async {}
        func enterPasskey(for peer: LEAddress) async -> UInt32? { nil }
        func confirmNumber(_ number: UInt32, for peer: LEAddress) async -> Bool { true }
    }

    let hostile = SMPHostileInputTests()

    /// The outcome of `body` when it comes within `seconds`, else `nil` (the body is left running: a wait that is
    /// never resumed cannot be cancelled, so ``withTimeout(_:_:)`` would wait for it too).
    static func outcome<T: Sendable>(within seconds: Double = 5, _ body: @escaping @Sendable () async throws -> T) async -> Result<T, any Error>? {
        let box = Mutex<Result<T, any Error>?>(nil)
        let task = Task {
            let result: Result<T, any Error>
            do { result = .success(try await body()) } catch { result = .failure(error) }
            return result
        }
        Task { let result = await task.value; box.withLock { $0 = result } }
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if let result = box.withLock({ $0 }) { return result }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return nil
    }

    /// Expects `body` to throw a ``SecurityError`` of `kind` within 5 s.
    static func expectSecurityError(_ kind: SecurityError.Code, sourceLocation: SourceLocation = #_sourceLocation,
                                    _ body: @escaping @Sendable () async throws -> LinkSecurity) async {
        let result = await outcome(body)
        #expect(result != nil, "no outcome within 5 s", sourceLocation: sourceLocation)
        if case .success(let security)? = result { Issue.record("succeeded: \(security)", sourceLocation: sourceLocation) }
        if case .failure(let error)? = result {
            #expect((error as? SecurityError)?.code == kind, "\(error)", sourceLocation: sourceLocation)
        }
    }

    /// A Pairing Request the Security Manager refuses at once (a reserved IO capability: Invalid Parameters; a key
    /// size below this side's minimum: Encryption Key Size) is answered without asking the user to consent to a
    /// pairing that cannot happen. Core 5.4, Vol 3, Part H, 3.5.1 and 2.3.4.
    @Test(arguments: [
        ([0x01, 0x07, 0x00, 0x09, 0x10, 0x07, 0x07] as [UInt8], [0x05, 0x0A] as [UInt8]),
        ([0x01, 0x03, 0x00, 0x09, 0x07, 0x07, 0x07], [0x05, 0x06]),
    ])
    func refusedRequestIsNotPutToTheAgent(request: [UInt8], reply: [UInt8]) async throws {
        let rig = try await hostile.setUp(.peripheral)
        let agent = GatedAgent(answer: true)
        await rig.target.setPairingAgent(agent)
        try await rig.send(request)
        #expect(await rig.reply() == reply)
        #expect(agent.asked == 0)
        try await rig.stillServed()
    }

    /// A caller of `pair()` waiting while the agent decides is told when the agent refuses (not left waiting until
    /// the link drops).
    @Test func refusedConsentEndsTheWaitOfPair() async throws {
        let rig = try await hostile.setUp(.peripheral)
        let agent = GatedAgent()
        await rig.target.setPairingAgent(agent)
        try await rig.send(SMPHostileInputTests.scRequest)
        #expect(await agent.waitUntilAsked())
        let target = rig.target
        let link = rig.targetLink
        let pairing = Task { try await target.pair(link) }
        try await Task.sleep(for: .milliseconds(200))
        agent.answer(false)
        #expect(await rig.reply() == [0x05, 0x05])
        await Self.expectSecurityError(.pairingFailed(.sent(.pairingNotSupported))) { try await pairing.value }
    }

    /// The Security Manager timer runs from the reception of the Pairing Request, while the agent decides: when it
    /// expires the pairing has failed (the caller and the events are told), nothing more is sent or accepted on SMP,
    /// and a late consent starts nothing. Core 5.4, Vol 3, Part H, 3.4.
    @Test func consentTakingLongerThanTheTimeoutFailsThePairing() async throws {
        let rig = try await hostile.setUp(.peripheral, security: SecurityConfiguration(timeout: .seconds(1)))
        let agent = GatedAgent()
        await rig.target.setPairingAgent(agent)
        try await rig.send(SMPHostileInputTests.scRequest)
        #expect(await agent.waitUntilAsked())
        let target = rig.target
        let link = rig.targetLink
        let pairing = Task { try await target.pair(link) }
        let events = rig.targetEvents
        let failure = await Self.outcome { try await next(events) { if case .pairingFailed(_, let failure) = $0 { failure } else { nil } } }
        #expect(failure.flatMap { try? $0.get() } == .timeout)
        await Self.expectSecurityError(.pairingFailed(.timeout)) { try await pairing.value }
        // No Pairing Failed after the timeout, no Pairing Response to the late consent, nothing for a new request.
        #expect(await rig.silence() == nil)
        agent.answer(true)
        #expect(await rig.silence() == nil)
        try await rig.send(SMPHostileInputTests.scRequest)
        #expect(await rig.silence() == nil)
        #expect(agent.asked == 1)
        await Self.expectSecurityError(.timedOut) { try await target.pair(link) }
    }
}
