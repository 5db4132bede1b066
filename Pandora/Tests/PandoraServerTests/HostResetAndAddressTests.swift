import BLE
import BLEVirtualController
import BLEWire
import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import PandoraInterfaces
import PandoraServer
import SwiftProtobuf
import Testing

/// `pandora.Host` Reset, WaitConnectionUpdate and `own_address_type`, driven through a real gRPC client against
/// Pandora servers on one virtual air (the helpers are ``HostServiceTests``').
@Suite(.timeLimit(.minutes(2))) struct HostResetAndAddressTests {
    typealias Host = Pandora_Host.Client<HTTP2ClientTransport.Posix>

    /// Opens A's Advertise stream for `request`.
    static func advertise(_ host: Host, _ request: Pandora_AdvertiseRequest) -> (AsyncStream<Pandora_AdvertiseResponse>, Task<Void, Never>) {
        HostServiceTests.open { (yield: @escaping @Sendable (Pandora_AdvertiseResponse) -> Void) in
            try await host.advertise(request) { response in
                for try await message in response.messages { yield(message) }
            }
        }
    }

    /// The first ScanningResponse of `host`'s scan that carries `marker` as manufacturer specific data.
    static func firstReport(_ host: Host, marker: Data) async throws -> Pandora_ScanningResponse {
        var scan = Pandora_ScanRequest()
        scan.passive = true
        scan.phys = [.primary1M]
        let (reports, scanning) = HostServiceTests.open { [scan] (yield: @escaping @Sendable (Pandora_ScanningResponse) -> Void) in
            try await host.scan(scan) { response in
                for try await message in response.messages { yield(message) }
            }
        }
        defer { scanning.cancel() }
        return try #require(await HostServiceTests.first(reports) { $0.data.manufacturerSpecificData == marker })
    }

    static func legacyAdvertisement(marker: Data, ownAddressType: Pandora_OwnAddressType, connectable: Bool = true) -> Pandora_AdvertiseRequest {
        var request = Pandora_AdvertiseRequest()
        request.legacy = true
        request.connectable = connectable
        request.ownAddressType = ownAddressType
        request.data.manufacturerSpecificData = marker
        return request
    }

    /// A random static address: random, the two most significant bits set (Core 5.4, Vol 6, Part B, 1.3.2.1).
    static func isRandomStatic(_ bytes: Data) -> Bool { bytes.count == 6 && bytes[bytes.startIndex] & 0xC0 == 0xC0 }

    /// A central on the air (swift-ble's own API, outside the servers) connects to what server A advertises; A's
    /// WaitConnectionUpdate returns the parameters the central's LE Connection Update sets (not at a data length change
    /// before it), and GetConnectionParameters agrees. An unknown token, and a link that goes down while waited on, answer connection_not_found.
    @Test func waitConnectionUpdateReturnsTheNewParameters() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let a = try await HostServiceTests.start(on: air)
        defer { a.serving.cancel() }
        let centralController = air.addController()
        let adapter = try await Adapter(transport: centralController.makeHostTransport())
        let central = Central(adapter: adapter)
        try await withGRPCClient(transport: .http2NIOPosix(target: .ipv4(address: "127.0.0.1", port: a.port), transportSecurity: .plaintext)) { client in
            let host = Pandora_Host.Client(wrapping: client)
            let addressA = try await host.readLocalAddress(Google_Protobuf_Empty()).address

            var unknown = Pandora_WaitConnectionUpdateRequest()
            unknown.connection.cookie.value = Data([0xDE, 0xAD])
            #expect(try await host.waitConnectionUpdate(unknown).connectionNotFound == Google_Protobuf_Empty())

            let (connections, advertising) = Self.advertise(host, Self.legacyAdvertisement(marker: Data([0xFF, 0xFF, 1]), ownAddressType: .public))
            defer { advertising.cancel() }
            let peer = try #require(BluetoothAddress(bigEndian: Array(addressA)))
            let remote = try await central.connect(LEAddress(peer, type: .public), exchangeMTU: false)
            let linkA = try #require(await HostServiceTests.first(connections) { _ in true }).connection

            var wait = Pandora_WaitConnectionUpdateRequest()
            wait.connection = linkA
            async let updated = host.waitConnectionUpdate(wait)
            // Let the wait start before the update (it returns the first update after it began). A new data length
            // first: the host reports it as a link update too, but it changes no connection parameter.
            try await Task.sleep(for: .milliseconds(200))
            try await remote.setDataLength(251)
            try await Task.sleep(for: .milliseconds(100))
            try await remote.updateConnectionParameters(interval: 40...40, latency: 2, supervisionTimeout: 300)
            let parameters = try await updated.connectionParameters
            #expect(parameters.connectionInterval == 40)
            #expect(parameters.peripheralLatency == 2)
            #expect(parameters.supervisionTimeout == 300)
            var get = Pandora_GetConnectionParametersRequest()
            get.connection = linkA
            #expect(try await host.getConnectionParameters(get).connectionParameters == parameters)

            // A wait on a link that goes down answers connection_not_found.
            async let dropped = host.waitConnectionUpdate(wait)
            try await Task.sleep(for: .milliseconds(200))
            try await central.disconnect(remote)
            #expect(try await dropped.connectionNotFound == Google_Protobuf_Empty())
            #expect(try await host.waitConnectionUpdate(wait).connectionNotFound == Google_Protobuf_Empty())
        }
    }

    /// Reset is an HCI reset of the same controller, bonds kept (host.proto): the link a central made and bonded ends
    /// (WaitDisconnection and a pending WaitConnectionUpdate return), the Advertise stream ends and the controller
    /// stops advertising; the server then answers with the same address, still bonded to the central, and advertises
    /// again for the central to reconnect.
    @Test func resetEndsLinksAndStreamsAndKeepsTheAddressAndTheBonds() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let a = try await HostServiceTests.start(on: air)
        defer { a.serving.cancel() }
        let centralController = air.addController()
        let central = try await Central(transport: centralController.makeHostTransport())
        try await withGRPCClient(transport: .http2NIOPosix(target: .ipv4(address: "127.0.0.1", port: a.port), transportSecurity: .plaintext)) { client in
            let host = Pandora_Host.Client(wrapping: client)
            let storage = Pandora_SecurityStorage.Client(wrapping: client)
            let controllerA = try #require(a.controller)
            let addressA = try await host.readLocalAddress(Google_Protobuf_Empty()).address
            let peer = LEAddress(try #require(BluetoothAddress(bigEndian: Array(addressA))), type: .public)

            let (connections, advertising) = Self.advertise(host, Self.legacyAdvertisement(marker: Data([0xFF, 0xFF, 2]), ownAddressType: .public))
            defer { advertising.cancel() }
            let remote = try await central.connect(peer, exchangeMTU: false)
            let linkA = try #require(await HostServiceTests.first(connections) { _ in true }).connection
            #expect(try await remote.pair().isBonded)
            var bonded = Pandora_IsBondedRequest()
            bonded.public = Data(centralController.address.bytes)
            // The server's side records the bond once its key distribution ends: wait for it.
            var isBonded = false
            for _ in 0..<100 where !isBonded {
                isBonded = try await storage.isBonded(bonded).value
                if !isBonded { try await Task.sleep(for: .milliseconds(20)) }
            }
            #expect(isBonded)
            #expect(controllerA.connectionCount == 1)

            var waitUpdate = Pandora_WaitConnectionUpdateRequest()
            waitUpdate.connection = linkA
            async let update = host.waitConnectionUpdate(waitUpdate)
            var waitDisconnection = Pandora_WaitDisconnectionRequest()
            waitDisconnection.connection = linkA
            async let disconnection = host.waitDisconnection(waitDisconnection)
            try await Task.sleep(for: .milliseconds(200))

            _ = try await host.reset(Google_Protobuf_Empty())
            _ = try await disconnection
            #expect(try await update.connectionNotFound == Google_Protobuf_Empty())
            // The Advertise stream ended (its one message was the link), and the controller is quiet.
            #expect(await HostServiceTests.first(connections) { _ in true } == nil)
            #expect(!controllerA.isAdvertising)
            #expect(controllerA.connectionCount == 0)
            var get = Pandora_GetConnectionParametersRequest()
            get.connection = linkA
            #expect(try await host.getConnectionParameters(get).connectionNotFound == Google_Protobuf_Empty())

            // The same controller (not a new one, as FactoryReset gives), its address, and the bond.
            #expect(a.controller === controllerA)
            #expect(try await host.readLocalAddress(Google_Protobuf_Empty()).address == addressA)
            #expect(try await storage.isBonded(bonded).value)

            // The server works on: the central (whose link ends by supervision timeout) connects again.
            let (again, readvertising) = Self.advertise(host, Self.legacyAdvertisement(marker: Data([0xFF, 0xFF, 3]), ownAddressType: .public))
            defer { readvertising.cancel() }
            for _ in 0..<200 where !controllerA.isAdvertising { try await Task.sleep(for: .milliseconds(10)) }
            #expect(controllerA.isAdvertising)
            for _ in 0..<800 where await central.adapter.connections.count > 0 { try await Task.sleep(for: .milliseconds(10)) }
            _ = try await central.connect(peer, exchangeMTU: false)
            let newLink = try #require(await HostServiceTests.first(again) { _ in true }).connection
            #expect(newLink.cookie.value != linkA.cookie.value)
            var waitConnection = Pandora_WaitConnectionRequest()
            waitConnection.address = Data(centralController.address.bytes)
            #expect(try await host.waitConnection(waitConnection).connection == newLink)
        }
    }

    /// own_address_type: a server told to advertise with RANDOM is seen by the other's Scan with a random static
    /// address (and with PUBLIC, its public address); ConnectLE with RANDOM to that address makes the advertiser see
    /// the initiator's random static address (its WaitConnection finds the link by it).
    @Test func ownAddressTypeChoosesTheAddressOnTheAir() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let a = try await HostServiceTests.start(on: air)
        let b = try await HostServiceTests.start(on: air)
        defer {
            a.serving.cancel()
            b.serving.cancel()
        }
        try await HostServiceTests.withClients(a, b) { hostA, hostB in
            let addressA = try await hostA.readLocalAddress(Google_Protobuf_Empty()).address
            let addressB = try await hostB.readLocalAddress(Google_Protobuf_Empty()).address

            // B advertises from a random address: A's scan sees a random static address, not B's public one.
            let markerB = Data([0xFF, 0xFF, 0xB0])
            let (_, advertisingB) = Self.advertise(hostB, Self.legacyAdvertisement(marker: markerB, ownAddressType: .random, connectable: false))
            let reportB = try await Self.firstReport(hostA, marker: markerB)
            advertisingB.cancel()
            guard case .random(let staticB)? = reportB.address else {
                Issue.record("B's advertisement with own_address_type RANDOM came from \(String(describing: reportB.address))")
                return
            }
            #expect(Self.isRandomStatic(staticB))
            #expect(staticB != addressB)

            // A too; B connects to that random address, initiating from its own random address.
            let markerA = Data([0xFF, 0xFF, 0xA0])
            let (connectionsA, advertisingA) = Self.advertise(hostA, Self.legacyAdvertisement(marker: markerA, ownAddressType: .random))
            defer { advertisingA.cancel() }
            let reportA = try await Self.firstReport(hostB, marker: markerA)
            guard case .random(let staticA)? = reportA.address else {
                Issue.record("A's advertisement with own_address_type RANDOM came from \(String(describing: reportA.address))")
                return
            }
            #expect(Self.isRandomStatic(staticA) && staticA != addressA && staticA != staticB)
            var connect = Pandora_ConnectLERequest()
            connect.random = staticA
            connect.ownAddressType = .random
            let connected = try await hostB.connectLE(connect)
            guard case .connection(let linkB) = connected.result else {
                Issue.record("ConnectLE: \(connected)")
                return
            }
            let linkA = try #require(await HostServiceTests.first(connectionsA) { _ in true }).connection
            advertisingA.cancel()
            // A sees B by its random static address (the same one B advertised with: one per power-on).
            var waitConnection = Pandora_WaitConnectionRequest()
            waitConnection.address = staticB
            #expect(try await hostA.waitConnection(waitConnection).connection == linkA)
            var disconnect = Pandora_DisconnectRequest()
            disconnect.connection = linkB
            _ = try await hostB.disconnect(disconnect)

            // PUBLIC: A's public address.
            let markerPublic = Data([0xFF, 0xFF, 0xA1])
            let (_, advertisingPublic) = Self.advertise(hostA, Self.legacyAdvertisement(marker: markerPublic, ownAddressType: .public))
            defer { advertisingPublic.cancel() }
            let reportPublic = try await Self.firstReport(hostB, marker: markerPublic)
            #expect(reportPublic.public == addressA)
        }
    }
}
