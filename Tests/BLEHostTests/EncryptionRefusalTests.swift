import BLEFixtures
import BLEHost
import BLEProtocols
import BLETransport
import BLEVirtualController
import BLEWire
import Synchronization
import Testing

/// A transport whose controller refuses the first LE Enable Encryption (by default) (Command Status: Command Disallowed, what a
/// controller answers when an encryption procedure is already under way: Core 5.4, Vol 4, Part E, 7.8.24).
final class RefusingEncryptionTransport: HCITransport {
    let inner: any HCITransport
    let incoming: AsyncThrowingStream<HCIPacket, any Error>
    private let continuation: AsyncThrowingStream<HCIPacket, any Error>.Continuation
    private let pump: Task<Void, Never>
    private let refusals: Mutex<Int>

    init(_ inner: any HCITransport, refusals: Int = 1) {
        self.inner = inner
        self.refusals = Mutex(refusals)
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: HCIPacket.self, throwing: (any Error).self)
        incoming = stream
        self.continuation = continuation
        pump = Task {
            do {
                for try await packet in inner.incoming { continuation.yield(packet) }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
    }

    func send(_ packet: HCIPacket) async throws {
        if case .command(let command) = packet, command.opcode == HCILEEnableEncryption.opcode,
           refusals.withLock({ left in
               guard left > 0 else { return false }
               left -= 1
               return true
           }) {
            continuation.yield(.event(HCICommandStatusEvent(status: .commandDisallowed, opcode: HCILEEnableEncryption.opcode).packet))
            return
        }
        try await inner.send(packet)
    }

    /// Hands `packet` to the host as if the controller had sent it.
    func inject(_ packet: HCIPacket) { continuation.yield(packet) }

    /// Whether the refusal was given.
    var refused: Bool { refusals.withLock { $0 == 0 } }

    func close() async {
        pump.cancel()
        await inner.close()
    }
}

@Suite(.timeLimit(.minutes(1))) struct EncryptionRefusalTests {
    /// Our host (central, bonded with the peer) answers the peer's Security Request with LE Enable Encryption, which
    /// the controller refuses: the encryption is over, not left under way forever. A caller of `pair()` then runs a
    /// procedure of its own (here the peer, which lost the bond, refuses the key: PIN or Key Missing) instead of
    /// waiting for an Encryption Change that never comes.
    @Test func aRefusedEnableEncryptionDoesNotLeaveTheLinkBusy() async throws {
        let world = World()
        let store = InMemoryBondStore()
        var configuration = HCIHost.Configuration()
        configuration.security = SecurityConfiguration(bondStore: store, timeout: .seconds(5))
        let targetController = world.air.addController(.init(position: Position(x: 0)))
        let transport = RefusingEncryptionTransport(targetController.makeHostTransport())
        let target = HCIHost(transport: transport, configuration: configuration)
        try await target.powerOn()
        let (raw, rawController) = try await world.host(at: 1)
        try store.save(Bond(local: LEAddress(targetController.address, type: .public), peer: LEAddress(rawController.address, type: .public),
                            peerKey: BondKey(longTermKey: Array(1...16)), localKey: nil,
                            security: SMPSecurityLevel(secureConnections: true, authenticated: false, keySize: 16), created: 0))
        let (targetLink, rawLink) = try await connect(target, raw, peripheralAddress: rawController.address)
        _ = try await raw.openFixedChannel(.smp, on: rawLink)
        // Security Request: Bonding.
        try await raw.sendL2CAP([0x0B, 0x01], channel: .smp, on: rawLink)
        // Our host tried to encrypt with the bond (the refusal is its first LE Enable Encryption's).
        let deadline = ContinuousClock.now + .seconds(5)
        while !transport.refused && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(transport.refused)
        try await Task.sleep(for: .milliseconds(100))
        await PairingConsentTests.expectSecurityError(.encryptionFailed(.pinOrKeyMissing)) { try await target.pair(targetLink) }
    }

    /// The controller reports the link's encryption off (Encryption Change, success, Encryption_Enabled 0x00): the
    /// GATT server's view of the link follows, and an encryption-required attribute is refused again rather than
    /// served on an unencrypted link.
    @Test func encryptionSwitchedOffIsSeenByTheGATTServer() async throws {
        let world = World()
        let peripheralController = world.air.addController(.init(position: Position(x: 0)))
        let transport = RefusingEncryptionTransport(peripheralController.makeHostTransport(), refusals: 0)
        let peripheral = HCIHost(transport: transport)
        try await peripheral.powerOn()
        let server = GATTEngine(host: peripheral, database: PairingTests.database)
        await server.start()
        let (central, _) = try await world.host(at: 1)
        await central.setPairsOnDemand(false)
        let client = GATTEngine(host: central)
        await client.start()
        let (c, p) = try await connect(central, peripheral, peripheralAddress: peripheralController.address)
        #expect(try await central.pair(c).isEncrypted)
        let service = try #require(try await client.discoverPrimaryServices(c, uuid: PairingTests.service).first)
        let value = try #require(try await client.discoverCharacteristics(c, of: service)
            .first { $0.uuid == PairingTests.encrypted }?.valueHandle)
        #expect(try await client.read(c, attribute: value) == Array("top-secret".utf8))

        transport.inject(.event(HCIEncryptionChangeEvent(status: .success, handle: p.handle, encryptionEnabled: 0).packet))
        let deadline = ContinuousClock.now + .seconds(5)
        while await peripheral.security(of: p)?.isEncrypted != false, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(await peripheral.security(of: p)?.isEncrypted == false)
        try await Task.sleep(for: .milliseconds(100))
        await #expect {
            try await client.read(c, attribute: value)
        } throws: { error in
            (error as? GATTError)?.code.attError == .insufficientEncryption
        }
    }
}
