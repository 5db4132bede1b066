import BLEHost
import BLEProtocols
import BLETestSupport
import BLETransport
import BLEVirtualController
import BLEWire
import Synchronization
import Testing

/// A transport that counts the SMP Pairing Requests its host sends (L2CAP CID 0x0006, code 0x01).
final class PairingRequestCounter: HCITransport {
    let inner: any HCITransport
    private let count = Mutex(0)

    init(_ inner: any HCITransport) { self.inner = inner }

    var incoming: AsyncThrowingStream<HCIPacket, any Error> { inner.incoming }
    var pairingRequests: Int { count.withLock { $0 } }

    func send(_ packet: HCIPacket) async throws {
        // A start fragment: length (2), CID (2), then the SMP code.
        if case .acl(let acl) = packet, acl.boundary.isStart, acl.data.count >= 5, acl.data[2] == 0x06, acl.data[3] == 0x00,
           acl.data[4] == SMPCode.pairingRequest.rawValue {
            count.withLock { $0 += 1 }
        }
        try await inner.send(packet)
    }

    func close() async { await inner.close() }
}

/// Bonds found by the address the link is made with, and what a GATT server keeps with a bond: through the stack,
/// two hosts on the virtual controller.
@Suite(.timeLimit(.minutes(1))) struct BondedLinkTests {
    static let publicIdentity = LEAddress(BluetoothAddress("00:1A:7D:DA:71:13") ?? .zero, type: .public)

    /// Issue 23, item 4: a peripheral that advertises and connects from a static random address and distributes a
    /// public identity address with an all-zero IRK. The central's bond is found under the address the link is made
    /// with: the second link is encrypted from the bond, and no Pairing Request goes out.
    @Test func aPeerPairedThroughAStaticRandomAddressIsEncryptedFromTheBondWithoutPairing() async throws {
        let air = VirtualAir(clock: .realTime, seed: 11)
        defer { air.shutdown() }
        var pc = HCIHost.Configuration()
        pc.security = SecurityConfiguration(
            distributedIdentity: SMPIdentity(identityResolvingKey: [UInt8](repeating: 0, count: 16), address: Self.publicIdentity))
        // No public address on the peripheral's controller: its host picks a static random one.
        let peripheral = HCIHost(transport: air.addController(.init(address: .zero)).makeHostTransport(), configuration: pc)
        let counter = PairingRequestCounter(air.addController(.init(position: Position(x: 1))).makeHostTransport())
        let central = HCIHost(transport: counter)
        try await peripheral.powerOn()
        try await central.powerOn()
        let own = try #require(await peripheral.ownAddress)
        #expect(own.kind == .randomStatic)
        let server = GATTEngine(host: peripheral, database: PairingTests.database)
        await server.start()
        let client = GATTEngine(host: central)
        await client.start()

        func connect() async throws -> HostConnection {
            try await peripheral.startAdvertising(.init(data: AdvertisingData(flags: .leOnlyGeneralDiscoverable, localName: "SecureBand")))
            return try await central.connect(to: own, timeout: .seconds(5))
        }
        var c = try await connect()
        let paired = try await central.pair(c)
        #expect(paired.isBonded && paired.peerIdentity == Self.publicIdentity)
        #expect(counter.pairingRequests == 1)
        let bonds = try central.bondStore.allBonds()
        #expect(bonds.count == 1)
        let bond = try #require(bonds.first)
        #expect(bond.peer == Self.publicIdentity && bond.pairedThrough == own)
        #expect(bond.peerIdentityResolvingKey == nil, "an all-zero IRK is no IRK")

        let events = await peripheral.events()
        try await central.disconnect(c)
        _ = try await next(events) { if case .disconnected = $0 { true } else { nil } }
        c = try await connect()
        // Known at once as the bonded device, by the address it connected from.
        let known = await central.security(of: c)
        #expect(known?.isBonded == true && known?.peerIdentity == Self.publicIdentity && known?.isEncrypted == false)
        #expect(await central.bond(of: c) == bond)

        // A read that needs encryption: the central encrypts with the bond and reads.
        let service = try #require(try await client.discoverPrimaryServices(c, uuid: PairingTests.service).first)
        let value = try #require(try await client.discoverCharacteristics(c, of: service, uuid: PairingTests.encrypted).first?.valueHandle)
        #expect(try await client.read(c, attribute: value) == Array("top-secret".utf8))
        let secured = await central.security(of: c)
        #expect(secured?.isEncrypted == true && secured?.isBonded == true && secured?.level?.authenticated == false)
        #expect(counter.pairingRequests == 1, "the second link paired again")
    }
}
