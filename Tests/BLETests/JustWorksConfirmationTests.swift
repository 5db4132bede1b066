import BLE
import BLEFixtures
import BLEHost
import BLEProtocols
import BLEVirtualController
import Synchronization
import Testing

/// An agent that records which Just Works pairings it was asked about and answers `answer`.
final class JustWorksAgent: PairingAgent {
    let answer: Bool
    let asked = Mutex<[LEAddress]>([])
    init(answer: Bool) { self.answer = answer }
    func acceptPairing(from peer: LEAddress) async -> Bool { true }
    func displayPasskey(_ passkey: UInt32, for peer: LEAddress) async {}
    func enterPasskey(for peer: LEAddress) async -> UInt32? { nil }
    func confirmNumber(_ number: UInt32, for peer: LEAddress) async -> Bool { true }
    func confirmJustWorks(for peer: LEAddress) async -> Bool {
        asked.withLock { $0.append(peer) }
        return answer
    }
}

/// `SecurityConfiguration.confirmsJustWorks` through the public API on the virtual air: both sides' agents are asked
/// about a Just Works pairing, an agreement pairs and a refusal fails it on both sides.
@Suite(.timeLimit(.minutes(1))) struct JustWorksConfirmationTests {
    struct Pair {
        let devices: TwoDevices
        var manager: PeripheralManager { devices.peripheral }
        var central: Central { devices.central }
        var peripheralAddress: LEAddress { devices.peripheralAddress }
        let events: AsyncStream<CentralEvent>
    }

    /// Two devices that both confirm Just Works (unless `confirms` is false), with these agents, connected.
    func connectedPair(peripheralAgent: JustWorksAgent, centralAgent: JustWorksAgent,
                       confirms: Bool = true) async throws -> (Pair, RemotePeripheral) {
        let devices = try await TwoDevices(peripheralName: "Asked", peripheralSecurity: SecurityConfiguration(confirmsJustWorks: confirms),
                                           centralSecurity: SecurityConfiguration(confirmsJustWorks: confirms))
        let manager = devices.peripheral
        await manager.setPairingAgent(peripheralAgent)
        let events = await manager.centralEvents()
        try await manager.startAdvertising(name: "Asked")
        await devices.central.setPairingAgent(centralAgent)
        let remote = try await devices.central.connect(devices.peripheralAddress, timeout: .seconds(5), exchangeMTU: false)
        return (Pair(devices: devices, events: events), remote)
    }

    @Test func bothAgentsAreAskedAndAgreementPairs() async throws {
        let peripheralAgent = JustWorksAgent(answer: true), centralAgent = JustWorksAgent(answer: true)
        let (pair, remote) = try await connectedPair(peripheralAgent: peripheralAgent, centralAgent: centralAgent)
        defer { pair.devices.shutdown() }
        let security = try await remote.pair()
        #expect(security.isEncrypted && !security.isAuthenticated && security.isBonded)
        #expect(centralAgent.asked.withLock { $0 } == [pair.peripheralAddress])
        #expect(peripheralAgent.asked.withLock { $0.count } == 1)
        var events = pair.events.makeAsyncIterator()
        while let event = await events.next() {
            if case .paired(_, let outcome) = event {
                #expect(outcome.method == .justWorks)
                break
            }
        }
    }

    @Test(arguments: [true, false])
    func aRefusalFailsThePairingOnBothSides(centralRefuses: Bool) async throws {
        let peripheralAgent = JustWorksAgent(answer: centralRefuses), centralAgent = JustWorksAgent(answer: !centralRefuses)
        let (pair, remote) = try await connectedPair(peripheralAgent: peripheralAgent, centralAgent: centralAgent)
        defer { pair.devices.shutdown() }
        let expected: SMPPairingFailure = centralRefuses ? .sent(.numericComparisonFailed) : .received(.numericComparisonFailed)
        await #expect {
            try await remote.pair()
        } throws: { error in
            guard let failure = (error as? SecurityError)?.code.pairingFailure else { return false }
            return failure == expected
        }
        #expect(await remote.security.isEncrypted == false)
        #expect(try await pair.central.bonds().isEmpty)
        var events = pair.events.makeAsyncIterator()
        while let event = await events.next() {
            if case .pairingFailed(_, let failure) = event {
                #expect(failure == (centralRefuses ? .received(.numericComparisonFailed) : .sent(.numericComparisonFailed)))
                break
            }
        }
    }

    @Test func withoutTheSettingTheAgentIsNotAsked() async throws {
        let peripheralAgent = JustWorksAgent(answer: false), centralAgent = JustWorksAgent(answer: false)
        let (pair, remote) = try await connectedPair(peripheralAgent: peripheralAgent, centralAgent: centralAgent,
                                                     confirms: false)
        defer { pair.devices.shutdown() }
        #expect(try await remote.pair().isEncrypted)
        #expect(centralAgent.asked.withLock { $0 }.isEmpty && peripheralAgent.asked.withLock { $0 }.isEmpty)
    }
}
