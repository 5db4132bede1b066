import BLEFixtures
import BLEHost
import BLEProtocols
import BLETransport
import BLEVirtualController
import BLEWire
import Synchronization
import Testing

/// A pairing agent with scripted answers that records what it was shown.
final class ScriptedAgent: PairingAgent {
    let passkey: UInt32?
    let confirms: Bool
    let accepts: Bool
    let shown = Mutex<[String]>([])

    init(passkey: UInt32? = nil, confirms: Bool = true, accepts: Bool = true) {
        self.passkey = passkey
        self.confirms = confirms
        self.accepts = accepts
    }

    func acceptPairing(from peer: LEAddress) async -> Bool {
        shown.withLock { $0.append("accept?") }
        return accepts
    }
    func displayPasskey(_ passkey: UInt32, for peer: LEAddress) async { shown.withLock { $0.append("display \(passkey)") } }
    func enterPasskey(for peer: LEAddress) async -> UInt32? {
        shown.withLock { $0.append("enter") }
        return passkey
    }
    func confirmNumber(_ number: UInt32, for peer: LEAddress) async -> Bool {
        shown.withLock { $0.append("confirm \(number)") }
        return confirms
    }
}

/// Pairing, encryption and bonding between two hosts, every byte through HCI and the virtual controllers.
@Suite(.timeLimit(.minutes(1))) struct PairingTests {
    static let service = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF1") ?? 0
    static let encrypted = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF3") ?? 0
    static let authenticated = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEFB") ?? 0

    static let database = GATTDatabase(deviceName: "Secure", services: [
        GATTServiceDefinition(uuid: service, characteristics: [
            GATTCharacteristicDefinition(uuid: encrypted, properties: .read, permissions: [.readable, .readEncryptionRequired],
                                         value: Array("top-secret".utf8)),
            GATTCharacteristicDefinition(uuid: authenticated, properties: .read, permissions: [.readable, .readAuthenticationRequired],
                                         value: Array("authenticated".utf8)),
        ]),
    ])

    struct Pair {
        let world: World
        let central: HCIHost
        let peripheral: HCIHost
        let client: GATTEngine
        let server: GATTEngine
        var c: HostConnection
        var p: HostConnection
        let peripheralAddress: BluetoothAddress

        /// The value handles of the encrypted and authenticated characteristics.
        func handles() async throws -> (AttributeHandle, AttributeHandle) {
            let s = try #require(try await client.discoverPrimaryServices(c, uuid: PairingTests.service).first)
            let chars = try await client.discoverCharacteristics(c, of: s)
            return (try #require(chars.first { $0.uuid == PairingTests.encrypted }?.valueHandle),
                    try #require(chars.first { $0.uuid == PairingTests.authenticated }?.valueHandle))
        }

        mutating func reconnect() async throws {
            let events = await peripheral.events()
            try await central.disconnect(c)
            _ = try await next(events) { if case .disconnected = $0 { true } else { nil } }
            (c, p) = try await connect(central, peripheral, peripheralAddress: peripheralAddress)
        }
    }

    func setUp(central: SecurityConfiguration = SecurityConfiguration(), peripheral: SecurityConfiguration = SecurityConfiguration(),
               centralAgent: any PairingAgent = AutomaticPairingAgent(), peripheralAgent: any PairingAgent = AutomaticPairingAgent()) async throws -> Pair {
        let world = World()
        var cc = HCIHost.Configuration()
        cc.security = central
        var pc = HCIHost.Configuration()
        pc.security = peripheral
        let (ph, pController) = try await world.host(configuration: pc)
        let (ch, _) = try await world.host(at: 1, configuration: cc)
        await ph.setPairingAgent(peripheralAgent)
        await ch.setPairingAgent(centralAgent)
        let server = GATTEngine(host: ph, database: Self.database)
        await server.start()
        let client = GATTEngine(host: ch)
        await client.start()
        let (c, p) = try await connect(ch, ph, peripheralAddress: pController.address)
        return Pair(world: world, central: ch, peripheral: ph, client: client, server: server, c: c, p: p, peripheralAddress: pController.address)
    }

    func attError(_ body: () async throws -> [UInt8]) async -> ATTErrorCode? {
        do {
            _ = try await body()
            return nil
        } catch let error as GATTError {
            if let code = error.code.attError { return code }
            return nil
        } catch {
            return nil
        }
    }

    @Test func secureConnectionsJustWorksEncryptsBondsAndServesTheProtectedValue() async throws {
        let s = try await setUp()
        await s.central.setPairsOnDemand(false)
        let (encrypted, authenticated) = try await s.handles()
        // Unpaired and unencrypted: no key for this client, so Insufficient Authentication (Core 5.4, Vol 3, Part C, 10.3.1).
        #expect(await attError { try await s.client.read(s.c, attribute: encrypted) } == .insufficientAuthentication)
        let peripheralEvents = await s.peripheral.events()
        let security = try await s.central.pair(s.c)
        #expect(security.level == SMPSecurityLevel(secureConnections: true, authenticated: false, keySize: 16))
        #expect(security.isBonded)
        let outcome = try await next(peripheralEvents) { if case .pairingCompleted(_, let o) = $0 { o } else { nil } }
        #expect(outcome.method == .justWorks && outcome.bonded && outcome.security.secureConnections)
        #expect(await s.peripheral.security(of: s.p)?.isEncrypted == true)
        #expect(try await s.client.read(s.c, attribute: encrypted) == Array("top-secret".utf8))
        // Just Works is not authenticated: the MITM-protected value stays refused.
        #expect(await attError { try await s.client.read(s.c, attribute: authenticated) } == .insufficientAuthentication)
        // Both sides stored a bond with the other's identity, with the same Secure Connections key.
        let centralBonds = try s.central.bondStore.allBonds()
        let peripheralBonds = try s.peripheral.bondStore.allBonds()
        #expect(centralBonds.count == 1 && peripheralBonds.count == 1)
        #expect(centralBonds.first?.peer == s.c.peer)
        #expect(centralBonds.first?.peerKey == peripheralBonds.first?.localKey)
        #expect(peripheralBonds.first?.peerIdentityResolvingKey?.count == 16)
        // Pairing again on the encrypted link: the new key replaces the old one (Encryption Key Refresh Complete), and
        // the bond with it.
        let peripheralKeyRefresh = await s.peripheral.events()
        let again = try await s.central.pair(s.c, force: true)
        #expect(again.isEncrypted)
        _ = try await next(peripheralKeyRefresh) { if case .pairingCompleted = $0 { true } else { nil } }
        let refreshed = try s.central.bondStore.allBonds()
        #expect(refreshed.count == 1 && refreshed.first?.peerKey != centralBonds.first?.peerKey)
        #expect(try await s.client.read(s.c, attribute: encrypted) == Array("top-secret".utf8))
    }

    @Test func readingAProtectedValuePairsOnDemandAndRetries() async throws {
        let s = try await setUp()
        let (encrypted, _) = try await s.handles()
        #expect(try await s.client.read(s.c, attribute: encrypted) == Array("top-secret".utf8))
        #expect(await s.central.security(of: s.c)?.isEncrypted == true)
    }

    @Test func passkeyEntryWithTheRightPasskeyAuthenticates() async throws {
        let agent = ScriptedAgent(passkey: 123456)
        let s = try await setUp(central: SecurityConfiguration(ioCapability: .keyboardOnly, mitm: true),
                                peripheral: SecurityConfiguration(ioCapability: .displayOnly, fixedPasskey: 123456), centralAgent: agent)
        let (_, authenticated) = try await s.handles()
        #expect(try await s.client.read(s.c, attribute: authenticated) == Array("authenticated".utf8))
        #expect(await s.central.security(of: s.c)?.level == SMPSecurityLevel(secureConnections: true, authenticated: true, keySize: 16))
        #expect(agent.shown.withLock { $0 } == ["enter"])
    }

    @Test func aWrongPasskeyFailsWithConfirmValueFailedOnBothSides() async throws {
        let s = try await setUp(central: SecurityConfiguration(ioCapability: .keyboardOnly, mitm: true),
                                peripheral: SecurityConfiguration(ioCapability: .displayOnly, fixedPasskey: 123456),
                                centralAgent: AutomaticPairingAgent(passkey: 0))
        let peripheralEvents = await s.peripheral.events()
        await #expect {
            try await s.central.pair(s.c)
        } throws: { error in
            // Whichever side checks the first confirm value made with a differing passkey bit sends Pairing Failed.
            guard let failure = (error as? SecurityError)?.code.pairingFailure else { return false }
            return failure.reason == .confirmValueFailed
        }
        let failure = try await next(peripheralEvents) { if case .pairingFailed(_, let f) = $0 { f } else { nil } }
        #expect(failure.reason == .confirmValueFailed)
        #expect(await s.central.security(of: s.c)?.isEncrypted == false)
        #expect(try s.central.bondStore.allBonds().isEmpty)
    }

    @Test func numericComparisonAsksBothUsersAndARefusalFails() async throws {
        let centralAgent = ScriptedAgent()
        let peripheralAgent = ScriptedAgent()
        let s = try await setUp(central: SecurityConfiguration(ioCapability: .displayYesNo, mitm: true),
                                peripheral: SecurityConfiguration(ioCapability: .displayYesNo),
                                centralAgent: centralAgent, peripheralAgent: peripheralAgent)
        let security = try await s.central.pair(s.c)
        #expect(security.isAuthenticated)
        let centralShown = centralAgent.shown.withLock { $0 }
        let peripheralShown = peripheralAgent.shown.withLock { $0 }
        // Both users see the same six digits; the peripheral's user also consented to the pairing.
        #expect(centralShown.count == 1 && centralShown.first?.hasPrefix("confirm ") == true)
        #expect(peripheralShown == ["accept?"] + centralShown)

        let refusing = try await setUp(central: SecurityConfiguration(ioCapability: .displayYesNo, mitm: true),
                                       peripheral: SecurityConfiguration(ioCapability: .displayYesNo),
                                       peripheralAgent: ScriptedAgent(confirms: false))
        await #expect {
            try await refusing.central.pair(refusing.c)
        } throws: { error in
            (error as? SecurityError)?.code == .pairingFailed(.received(.numericComparisonFailed))
        }
    }

    @Test func legacyJustWorksAndLegacyPasskeyPair() async throws {
        let legacy = SecurityConfiguration(secureConnections: false)
        let s = try await setUp(central: legacy, peripheral: legacy)
        let security = try await s.central.pair(s.c)
        #expect(security.level == SMPSecurityLevel(secureConnections: false, authenticated: false, keySize: 16))
        // LE legacy distributes an LTK each way, each named by its EDIV and Rand.
        let bond = try #require(try s.central.bondStore.allBonds().first)
        #expect(bond.peerKey != nil && bond.localKey != nil && bond.peerKey != bond.localKey)

        let passkey = try await setUp(central: SecurityConfiguration(ioCapability: .keyboardOnly, mitm: true, secureConnections: false),
                                      peripheral: SecurityConfiguration(ioCapability: .displayOnly, secureConnections: false, fixedPasskey: 4321),
                                      centralAgent: AutomaticPairingAgent(passkey: 4321))
        let authenticated = try await passkey.central.pair(passkey.c)
        #expect(authenticated.level == SMPSecurityLevel(secureConnections: false, authenticated: true, keySize: 16))
    }

    @Test func aBondedPeerReconnectsAndEncryptsWithoutPairingFromEitherSide() async throws {
        for legacy in [false, true] {
            let configuration = SecurityConfiguration(secureConnections: !legacy)
            var s = try await setUp(central: configuration, peripheral: configuration)
            _ = try await s.central.pair(s.c)
            try await s.reconnect()
            #expect(await s.central.security(of: s.c) == LinkSecurity(isBonded: true, peerIdentity: s.c.peer))
            let peripheralEvents = await s.peripheral.events()
            // The central encrypts with the stored key: no pairing, the same level as the bond.
            let again = try await s.central.pair(s.c)
            #expect(again.isEncrypted && again.isBonded && again.level?.secureConnections == !legacy)
            let peripheralSide = try await next(peripheralEvents) { event -> LinkSecurity? in
                if case .pairingCompleted = event { return LinkSecurity(level: nil) }
                if case .securityChanged(_, let security) = event { return security }
                return nil
            }
            #expect(peripheralSide.isEncrypted && peripheralSide.isBonded)

            // The peripheral asks (Security Request): the central encrypts with the bond, again without pairing.
            try await s.reconnect()
            let centralEvents = await s.central.events()
            let asked = try await s.peripheral.pair(s.p)
            #expect(asked.isEncrypted && asked.isBonded)
            let centralSide = try await next(centralEvents) { event -> Bool? in
                if case .pairingCompleted = event { return false }
                if case .securityChanged(_, let security) = event { return security.isEncrypted }
                return nil
            }
            #expect(centralSide)
        }
    }

    @Test func aPeerThatLostTheBondIsNotServedProtectedValuesUnencrypted() async throws {
        var s = try await setUp()
        let (encrypted, _) = try await s.handles()
        _ = try await s.central.pair(s.c)
        try await s.reconnect()
        // The peripheral forgets the central: its controller answers the central's key with a negative reply.
        #expect(try await s.peripheral.removeBond(with: s.p.peer) == 1)
        await #expect {
            try await s.central.pair(s.c)
        } throws: { error in
            (error as? SecurityError)?.code == .encryptionFailed(.pinOrKeyMissing)
        }
        #expect(await s.central.security(of: s.c)?.isEncrypted == false)
        await s.central.setPairsOnDemand(false)
        #expect(await attError { try await s.client.read(s.c, attribute: encrypted) } == .insufficientAuthentication)
        // Pairing again (forced) makes a new bond and serves the value.
        _ = try await s.central.pair(s.c, force: true)
        #expect(try await s.client.read(s.c, attribute: encrypted) == Array("top-secret".utf8))
    }

    @Test func aRefusedPairingRequestIsAnsweredPairingNotSupported() async throws {
        let s = try await setUp(peripheralAgent: ScriptedAgent(accepts: false))
        await #expect {
            try await s.central.pair(s.c)
        } throws: { error in
            (error as? SecurityError)?.code == .pairingFailed(.received(.pairingNotSupported))
        }
    }

    @Test func aChannelNeedingEncryptionIsRefusedThenOpensAfterPairing() async throws {
        let s = try await setUp()
        let channels = try await s.peripheral.listen(spsm: L2CAPSPSM(rawValue: 0x0080), security: .encrypted)
        defer { withExtendedLifetime(channels) {} }
        await s.central.setPairsOnDemand(false)
        await #expect {
            try await s.central.openL2CAPChannel(spsm: L2CAPSPSM(rawValue: 0x0080), on: s.c)
        } throws: { error in
            guard case .refused(let result)? = (error as? HostError)?.code.l2capConnectionFailure else { return false }
            return result == .insufficientAuthentication
        }
        // Pairing on demand: refused, paired (Just Works), asked again, opened.
        await s.central.setPairsOnDemand(true)
        let channel = try await s.central.openL2CAPChannel(spsm: L2CAPSPSM(rawValue: 0x0080), on: s.c)
        #expect(channel.info.spsm == L2CAPSPSM(rawValue: 0x0080))
        #expect(await s.central.security(of: s.c)?.isEncrypted == true)
    }
}
