import BLEFixtures
import BLEHost
import BLEProtocols
import BLETestSupport
import BLEVirtualController
import BLEWire
import Synchronization
import Testing

/// LE privacy, host-based (Core 5.4, Vol 3, Part C, 10.7): a host with privacy on advertises, scans and connects with
/// resolvable private addresses made from its IRK, pairs over them, and is recognised by its bonded peers after each
/// new address. Every byte goes through HCI and the virtual controllers.
@Suite(.timeLimit(.minutes(1))) struct PrivacyTests {
    static func configuration(privacy: Bool, interval: Duration = .seconds(900), secureConnections: Bool = true) -> HCIHost.Configuration {
        var configuration = HCIHost.Configuration()
        configuration.security = SecurityConfiguration(secureConnections: secureConnections, privacy: privacy,
                                                       privateAddressInterval: interval)
        return configuration
    }

    static let advertisement = HCIHost.AdvertisingOptions(data: AdvertisingData(flags: .leOnlyGeneralDiscoverable, localName: "Private"))

    /// This host's identity address and IRK.
    func identity(of host: HCIHost) async throws -> (address: LEAddress, irk: [UInt8]) {
        let address = try #require(await host.ownAddress)
        let irk = try #require(try host.bondStore.identityResolvingKey(local: address))
        return (address, irk)
    }

    /// The first report of the advertiser named "Private" that `accept` takes, seen by `scanner`.
    func report(from scanner: HCIHost, accept: @escaping @Sendable (AdvertisementReport) -> Bool = { _ in true }) async throws -> AdvertisementReport {
        let reports = try await scanner.scan()
        let found = try await withTimeout { () async throws -> AdvertisementReport in
            for try await report in reports where report.data.localName == "Private" && accept(report) { return report }
            throw TimedOut()
        }
        await scanner.stopScan()
        return found
    }

    /// `central` connects to the address `report` shows; returns both sides' connections.
    func connect(_ central: HCIHost, to peripheral: HCIHost, at address: LEAddress,
                 timeout: Duration = .seconds(5)) async throws -> (HostConnection, HostConnection) {
        let events = await peripheral.events()
        let c = try await central.connect(to: address, timeout: timeout)
        let p = try await next(events) { if case .connected(let p) = $0 { p } else { nil } }
        return (c, p)
    }

    /// `central` scans for the privacy host and connects to the address it advertises. The address may rotate between
    /// the report and the connection (on a busy machine the two can be most of a rotation interval apart): then the
    /// attempt times out and the scan starts again, at most four times.
    func scanAndConnect(_ central: HCIHost, to peripheral: HCIHost, accept: @escaping @Sendable (AdvertisementReport) -> Bool = { _ in true })
        async throws -> (AdvertisementReport, HostConnection, HostConnection) {
        var attempt = 0
        while true {
            attempt += 1
            let found = try await report(from: central, accept: accept)
            do {
                let (c, p) = try await connect(central, to: peripheral, at: found.address, timeout: .milliseconds(1500))
                return (found, c, p)
            } catch let error as HostError where attempt < 4 {
                guard case .connectionTimedOut = error.code else { throw error }
            }
        }
    }

    /// Disconnects `c` (from `central`) and waits until `peripheral` sees the link go down.
    func disconnect(_ central: HCIHost, _ c: HostConnection, from peripheral: HCIHost) async throws {
        let events = await peripheral.events()
        try await central.disconnect(c)
        _ = try await next(events) { if case .disconnected = $0 { true } else { nil } }
    }

    @Test func peersSeeAResolvablePrivateAddressNeverTheIdentity() async throws {
        let world = World()
        let (privateHost, _) = try await world.host(configuration: Self.configuration(privacy: true))
        let (peer, peerController) = try await world.host(at: 1)

        // Advertising: the scanner sees a random, resolvable address that is not the identity.
        try await privateHost.startAdvertising(Self.advertisement)
        let (identity, irk) = try await identity(of: privateHost)
        #expect(identity.type == .public)
        let seen = try await report(from: peer)
        #expect(seen.address.type == .random && seen.address.kind == .randomResolvable)
        #expect(seen.address.address != identity.address)
        #expect(ResolvablePrivateAddress.resolves(seen.address, irk: irk))
        #expect(await privateHost.privateAddress == seen.address)
        #expect(seen.identity == nil)   // not bonded: the peer has no IRK to resolve it with
        // The link made from that advertising records it as the peripheral's own address.
        let (c, p) = try await connect(peer, to: privateHost, at: seen.address)
        #expect(c.peer == seen.address && p.localAddress == seen.address)
        #expect(c.localAddress == LEAddress(peerController.address, type: .public))
        try await disconnect(peer, c, from: privateHost)

        // Initiating: the peer's controller reports a resolvable private address as the central's.
        try await peer.startAdvertising(Self.advertisement)
        let (c2, p2) = try await connect(privateHost, to: peer, at: LEAddress(peerController.address, type: .public))
        #expect(p2.peer.type == .random && p2.peer.kind == .randomResolvable && p2.peer.address != identity.address)
        #expect(ResolvablePrivateAddress.resolves(p2.peer, irk: irk))
        #expect(c2.localAddress == p2.peer)
    }

    @Test(arguments: [true, false], [true, false])
    func pairingOverAPrivateAddressCompletes(privacyCentral: Bool, secureConnections: Bool) async throws {
        let world = World()
        let (privateHost, _) = try await world.host(configuration: Self.configuration(privacy: true, secureConnections: secureConnections))
        let (peer, peerController) = try await world.host(at: 1, configuration: Self.configuration(privacy: false, secureConnections: secureConnections))
        let central = privacyCentral ? privateHost : peer
        let peripheral = privacyCentral ? peer : privateHost
        try await peripheral.startAdvertising(Self.advertisement)
        let address = privacyCentral ? LEAddress(peerController.address, type: .public) : try await report(from: peer).address
        let (c, p) = try await connect(central, to: peripheral, at: address)
        let privateLink = privacyCentral ? c : p
        #expect(privateLink.localAddress.kind == .randomResolvable)
        let peripheralEvents = await peripheral.events()
        // The pairing functions take the addresses on the link (c1 in LE legacy, f5 and f6 in Secure Connections):
        // both sides must agree on them for the confirm values and the DHKey checks to match.
        let security = try await central.pair(c)
        #expect(security.isEncrypted && security.isBonded && security.level?.secureConnections == secureConnections)
        let outcome = try await next(peripheralEvents) { if case .pairingCompleted(_, let o) = $0 { o } else { nil } }
        #expect(outcome.bonded)
        // The privacy host distributed its identity and IRK; the peer's bond is under the identity, and the private
        // host's bond is under its identity too.
        let (identity, irk) = try await identity(of: privateHost)
        let peerBond = try #require(try peer.bondStore.allBonds().first)
        #expect(peerBond.peer == identity && peerBond.peerIdentityResolvingKey == irk)
        #expect(try privateHost.bondStore.allBonds().first?.local == identity)
        let peerLink = privacyCentral ? p : c
        #expect(await peer.security(of: peerLink)?.peerIdentity == identity)
    }

    @Test func aBondedPeerRecognisesThePrivacyHostAfterItsAddressRotates() async throws {
        let world = World()
        // Long enough for the peer to scan and connect before the advertised address changes again.
        let interval = Duration.milliseconds(800)
        let (privateHost, _) = try await world.host(configuration: Self.configuration(privacy: true, interval: interval))
        let (peer, peerController) = try await world.host(at: 1)
        try await privateHost.startAdvertising(Self.advertisement)
        var (first, c, p) = try await scanAndConnect(peer, to: privateHost)
        _ = try await peer.pair(c)
        let (identity, _) = try await identity(of: privateHost)
        try await disconnect(peer, c, from: privateHost)
        try await Task.sleep(for: interval + .milliseconds(100))

        // The privacy host as peripheral: a new address, which the peer resolves with the bond's IRK.
        try await privateHost.startAdvertising(Self.advertisement)
        let second: AdvertisementReport
        (second, c, p) = try await scanAndConnect(peer, to: privateHost)
        #expect(second.address != first.address && second.address.kind == .randomResolvable)
        #expect(second.identity == identity)
        #expect(c.peer == second.address)
        #expect(await peer.security(of: c) == LinkSecurity(isBonded: true, peerIdentity: identity))
        var peerEvents = await peer.events()
        var privateEvents = await privateHost.events()
        let again = try await peer.pair(c)
        #expect(again.isEncrypted && again.isBonded && again.peerIdentity == identity)
        #expect(try await encryptedWithoutPairing(peerEvents))
        #expect(try await encryptedWithoutPairing(privateEvents))
        try await disconnect(peer, c, from: privateHost)
        try await Task.sleep(for: interval + .milliseconds(100))

        // The privacy host as central: the peer, as peripheral, finds the bond behind the new address.
        try await peer.startAdvertising(Self.advertisement)
        (c, p) = try await connect(privateHost, to: peer, at: LEAddress(peerController.address, type: .public))
        #expect(p.peer.kind == .randomResolvable && p.peer != first.address && p.peer != second.address)
        #expect(await peer.security(of: p) == LinkSecurity(isBonded: true, peerIdentity: identity))
        peerEvents = await peer.events()
        privateEvents = await privateHost.events()
        let fromPrivate = try await privateHost.pair(c)
        #expect(fromPrivate.isEncrypted && fromPrivate.isBonded)
        #expect(try await encryptedWithoutPairing(peerEvents))
        #expect(try await encryptedWithoutPairing(privateEvents))
    }

    /// Whether the link in `events` got encrypted with no pairing before (no `.pairingCompleted`).
    func encryptedWithoutPairing(_ events: AsyncStream<HostEvent>) async throws -> Bool {
        try await next(events) { event -> Bool? in
            if case .pairingCompleted = event { return false }
            if case .securityChanged(_, let security) = event, security.isEncrypted { return security.isBonded }
            return nil
        }
    }

    @Test func rotationWhileAdvertisingChangesTheAddressTheScannerSees() async throws {
        let world = World()
        let (privateHost, _) = try await world.host(configuration: Self.configuration(privacy: true, interval: .milliseconds(200)))
        let (peer, _) = try await world.host(at: 1)
        try await privateHost.startAdvertising(Self.advertisement)
        let (identity, irk) = try await identity(of: privateHost)
        // Advertising stays on: the host stops it, sets the new address and starts it again by itself.
        let reports = try await peer.scan()
        let addresses = try await withTimeout { () async throws -> Set<LEAddress> in
            var addresses: Set<LEAddress> = []
            for try await report in reports where report.data.localName == "Private" {
                addresses.insert(report.address)
                if addresses.count == 3 { return addresses }
            }
            throw TimedOut()
        }
        await peer.stopScan()
        #expect(addresses.allSatisfy { $0.kind == .randomResolvable && ResolvablePrivateAddress.resolves($0, irk: irk) })
        #expect(!addresses.contains { $0.address == identity.address })
    }

    @Test func rotationWhileScanningKeepsTheScanGoing() async throws {
        let world = World()
        let (privateHost, _) = try await world.host(configuration: Self.configuration(privacy: true, interval: .milliseconds(200)))
        let (peer, _) = try await world.host(at: 1)
        try await peer.startAdvertising(Self.advertisement)
        let reports = try await privateHost.scan()
        let first = try #require(await privateHost.privateAddress)
        // Reports keep coming after the scanning host's address changed (the scan is paused around the change).
        let host = privateHost
        let changed = try await withTimeout { () async throws -> LEAddress in
            var afterChange = 0
            for try await report in reports where report.data.localName == "Private" {
                guard let now = await host.privateAddress, now != first else { continue }
                afterChange += 1
                if afterChange == 5 { return now }
            }
            throw TimedOut()
        }
        #expect(changed != first && changed.kind == .randomResolvable)
        #expect(await privateHost.isScanning)
    }
}
