import BLE
import BLEFixtures
import BLEHost
import BLEProtocols
import BLEVirtualController
import Synchronization
import Testing

/// An agent that types what the other side's agent was shown, as a user reading one screen and typing on the other.
final class SharedScreen: Sendable {
    let shown = Mutex<UInt32?>(nil)
}

struct DisplayingAgent: PairingAgent {
    let screen: SharedScreen
    func acceptPairing(from peer: LEAddress) async -> Bool { true }
    func displayPasskey(_ passkey: UInt32, for peer: LEAddress) async { screen.shown.withLock { $0 = passkey } }
    func enterPasskey(for peer: LEAddress) async -> UInt32? { nil }
    func confirmNumber(_ number: UInt32, for peer: LEAddress) async -> Bool { true }
}

struct TypingAgent: PairingAgent {
    let screen: SharedScreen
    func acceptPairing(from peer: LEAddress) async -> Bool { true }
    func displayPasskey(_ passkey: UInt32, for peer: LEAddress) async {}
    func enterPasskey(for peer: LEAddress) async -> UInt32? {
        // The user reads the other screen once it shows something.
        for _ in 0..<200 {
            if let passkey = screen.shown.withLock({ $0 }) { return passkey }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return nil
    }
    func confirmNumber(_ number: UInt32, for peer: LEAddress) async -> Bool { true }
}

/// Pairing through the public API: a peripheral with protected characteristics, a central that pairs on demand or
/// explicitly, passkeys through agents, events on both sides, bonds listed and removed.
@Suite(.timeLimit(.minutes(1))) struct SecurityAPITests {
    static let service = BluetoothUUID("0000EE00-0000-1000-8000-00805F9B34FB") ?? 0
    static let encrypted = BluetoothUUID("0000EE01-0000-1000-8000-00805F9B34FB") ?? 0
    static let authenticated = BluetoothUUID("0000EE02-0000-1000-8000-00805F9B34FB") ?? 0

    /// The two devices, the peripheral ("Vault") serving a value that needs encryption and one that needs
    /// authentication, and advertising.
    func vault(peripheral security: SecurityConfiguration, central: SecurityConfiguration = SecurityConfiguration()) async throws -> TwoDevices {
        let devices = try await TwoDevices(peripheralName: "Vault", peripheralSecurity: security, centralSecurity: central)
        let manager = devices.peripheral
        try await manager.add(GATTServiceDefinition(uuid: Self.service, characteristics: [
            GATTCharacteristicDefinition(uuid: Self.encrypted, properties: .read, permissions: [.readable, .readEncryptionRequired], value: [1]),
            GATTCharacteristicDefinition(uuid: Self.authenticated, properties: .read, permissions: [.readable, .readAuthenticationRequired], value: [2]),
        ]))
        try await manager.startAdvertising(name: "Vault", restartAfterConnection: true)
        return devices
    }

    @Test func passkeyPairingOnDemandThenABondedReconnection() async throws {
        let screen = SharedScreen()
        let devices = try await vault(peripheral: SecurityConfiguration(ioCapability: .displayOnly, mitm: true),
                                        central: SecurityConfiguration(ioCapability: .keyboardOnly, mitm: true))
        defer { devices.shutdown() }
        let manager = devices.peripheral, central = devices.central, pc = devices.peripheralController
        await manager.setPairingAgent(DisplayingAgent(screen: screen))
        let events = await manager.centralEvents()
        await central.setPairingAgent(TypingAgent(screen: screen))
        let remote = try await devices.connect()
        let service = try #require(try await remote.discoverServices([Self.service]).first)
        let characteristics = try await remote.discoverCharacteristics(for: service)
        let authenticated = try #require(characteristics.first { $0.uuid == Self.authenticated })
        // The read is refused, the central pairs (the user types the passkey the peripheral shows), and reads again.
        #expect(try await remote.readValue(for: authenticated) == [2])
        let security = await remote.security
        #expect(security.isAuthenticated && security.isBonded && security.level?.secureConnections == true)
        var peripheralSide = events.makeAsyncIterator()
        var seen: [String] = []
        while seen.last != "paired", let event = await peripheralSide.next() {
            switch event {
            case .connected: seen.append("connected")
            case .passkey(_, let passkey): seen.append(passkey == screen.shown.withLock({ $0 }) ? "passkey" : "another passkey")
            case .encrypted(_, _, let usingBond): seen.append(usingBond ? "encrypted with the bond" : "encrypted")
            case .paired(_, let outcome): seen.append(outcome.method == .passkeyEntry(initiatorInputs: true, responderInputs: false) ? "paired" : "paired otherwise")
            default: break
            }
        }
        #expect(seen == ["connected", "passkey", "encrypted", "paired"])
        #expect(try await central.bonds().map(\.peer) == [LEAddress(pc.address, type: .public)])
        #expect(try await manager.bonds().count == 1)

        // Reconnected: the peripheral asks for security and the central encrypts with the bond, no passkey.
        try await central.disconnect(remote)
        let again = try await central.connect(LEAddress(pc.address, type: .public), timeout: .seconds(5))
        var link: HostConnection?
        while link == nil, let event = await peripheralSide.next() { if case .connected(let c) = event { link = c } }
        let secured = try await manager.requestSecurity(of: try #require(link))
        #expect(secured.isAuthenticated && secured.isBonded)
        #expect(await again.security.isEncrypted)

        // Forgotten on the central's side: the next pairing is a new one.
        #expect(try await central.removeBond(LEAddress(pc.address, type: .public)))
        #expect(try await central.bonds().isEmpty)
    }

    @Test func withoutPairingOnDemandTheRefusalIsTheAnswer() async throws {
        let devices = try await vault(peripheral: SecurityConfiguration())
        defer { devices.shutdown() }
        let central = devices.central
        await central.setPairsOnDemand(false)
        let remote = try await devices.connect()
        let service = try #require(try await remote.discoverServices([Self.service]).first)
        let encrypted = try #require(try await remote.discoverCharacteristics([Self.encrypted], for: service).first)
        await #expect {
            try await remote.readValue(for: encrypted)
        } throws: { error in
            guard let code = (error as? GATTError)?.code.attError else { return false }
            return code == .insufficientAuthentication
        }
        #expect(await remote.security.isEncrypted == false)
        // Pairing explicitly (Just Works) then serves it.
        let security = try await remote.pair()
        #expect(security.isEncrypted && !security.isAuthenticated)
        #expect(try await remote.readValue(for: encrypted) == [1])
    }
}
