import BLE
import BLEVirtualController
import BLEWire
import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import PandoraInterfaces
import PandoraServer
import SwiftProtobuf
import Synchronization
import Testing

/// `pandora.Host` driven through a real gRPC client (HTTP/2 over loopback) against two Pandora servers, each over a
/// swift-ble adapter of its own on one virtual air: what one advertises the other scans, decoded field by field; they
/// connect, each side finds the link, one disconnects and the other sees it; a factory reset gives a working adapter.
@Suite(.timeLimit(.minutes(2))) struct HostServiceTests {
    /// A server on a free port over a controller of `air`. Like RootCanal, each opening of the adapter (the first,
    /// and one per FactoryReset) gets a new controller on the air; the one before leaves it.
    final class Controllers: Sendable {
        let list = Mutex<[VirtualController]>([])
    }

    struct Device {
        let controllers: Controllers
        let server: PandoraServer
        let serving: Task<Void, any Error>
        let port: Int
        var controller: VirtualController? { controllers.list.withLock { $0.last } }
    }

    static func start(on air: VirtualAir) async throws -> Device {
        let controllers = Controllers()
        let server = PandoraServer { [controllers] in
            let controller = air.addController()
            controllers.list.withLock { list in
                list.last?.remove()
                list.append(controller)
            }
            return try await Adapter(transport: controller.makeHostTransport())
        }
        try await server.openAdapter()
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let serving = Task { try await server.run(host: "127.0.0.1", port: 0) { continuation.yield($0) } }
        var iterator = ports.makeAsyncIterator()
        let port = try #require(await iterator.next())
        return Device(controllers: controllers, server: server, serving: serving, port: port)
    }

    /// Runs `body` with a Host client of each device.
    static func withClients(_ a: Device, _ b: Device,
                            _ body: @Sendable (Pandora_Host.Client<HTTP2ClientTransport.Posix>,
                                               Pandora_Host.Client<HTTP2ClientTransport.Posix>) async throws -> Void) async throws {
        try await withGRPCClient(transport: .http2NIOPosix(target: .ipv4(address: "127.0.0.1", port: a.port), transportSecurity: .plaintext)) { ca in
            try await withGRPCClient(transport: .http2NIOPosix(target: .ipv4(address: "127.0.0.1", port: b.port), transportSecurity: .plaintext)) { cb in
                try await body(Pandora_Host.Client(wrapping: ca), Pandora_Host.Client(wrapping: cb))
            }
        }
    }

    /// Opens a server stream in a task of its own; its messages arrive on the returned stream until the task is
    /// cancelled (which cancels the call).
    static func open<Message: Sendable>(_ call: @escaping @Sendable (@escaping @Sendable (Message) -> Void) async throws -> Void)
        -> (AsyncStream<Message>, Task<Void, Never>) {
        let (stream, continuation) = AsyncStream<Message>.makeStream()
        let task = Task {
            try? await call { continuation.yield($0) }
            continuation.finish()
        }
        return (stream, task)
    }

    static func first<Message: Sendable>(_ stream: AsyncStream<Message>, where predicate: (Message) -> Bool) async -> Message? {
        for await message in stream where predicate(message) { return message }
        return nil
    }

    @Test func advertiseScanConnectDisconnectAndFactoryReset() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let a = try await Self.start(on: air)
        let b = try await Self.start(on: air)
        defer {
            a.serving.cancel()
            b.serving.cancel()
        }
        try await Self.withClients(a, b) { hostA, hostB in
            // ReadLocalAddress: the controller's public address, most significant octet first.
            let addressA = try await hostA.readLocalAddress(Google_Protobuf_Empty()).address
            let addressB = try await hostB.readLocalAddress(Google_Protobuf_Empty()).address
            let controllerA = try #require(a.controller)
            #expect(addressA == Data(controllerA.address.bytes))
            #expect(addressB == Data(try #require(b.controller).address.bytes))
            #expect(addressA.count == 6 && addressA != addressB)

            // A advertises (legacy, connectable) data built from DataTypes; B scans and decodes every field.
            var data = Pandora_DataTypes()
            data.completeLocalName = "pandora"
            data.incompleteServiceClassUuids16 = ["183A", "181F"]
            data.serviceDataUuid16 = ["180F": Data([0x64])]
            data.appearance = 0x0591
            data.manufacturerSpecificData = Data([0xFF, 0xFF, 0x01, 0x02])
            var scanResponse = Pandora_DataTypes()
            scanResponse.completeServiceClassUuids128 = ["FFFF181F-FFFF-1000-8000-00805F9B34FB"]
            scanResponse.txPowerLevel = 4
            var advertise = Pandora_AdvertiseRequest()
            advertise.legacy = true
            advertise.connectable = true
            advertise.data = data
            advertise.scanResponseData = scanResponse
            let (connectionsA, advertising) = Self.open { [advertise] (yield: @escaping @Sendable (Pandora_AdvertiseResponse) -> Void) in
                try await hostA.advertise(advertise) { response in
                    for try await message in response.messages { yield(message) }
                }
            }
            defer { advertising.cancel() }

            var scan = Pandora_ScanRequest()
            scan.phys = [.primary1M]
            let (reports, scanning) = Self.open { [scan] (yield: @escaping @Sendable (Pandora_ScanningResponse) -> Void) in
                try await hostB.scan(scan) { response in
                    for try await message in response.messages { yield(message) }
                }
            }
            // The first report of A carries its scan response too: an active scan waits for it.
            let report = try #require(await Self.first(reports) { $0.public == addressA })
            scanning.cancel()
            #expect(report.scannable)
            #expect(report.data.txPowerLevel == 4)
            #expect(report.legacy)
            #expect(report.connectable)
            #expect(!report.truncated)
            #expect(report.primaryPhy == .primary1M)
            #expect(report.data.completeLocalName == "pandora")
            #expect(report.data.incompleteServiceClassUuids16 == ["183A", "181F"])
            #expect(report.data.serviceDataUuid16 == ["180F": Data([0x64])])
            #expect(report.data.appearance == 0x0591)
            #expect(report.data.manufacturerSpecificData == Data([0xFF, 0xFF, 0x01, 0x02]))
            #expect(report.data.completeServiceClassUuids128 == ["FFFF181F-FFFF-1000-8000-00805F9B34FB"])
            #expect(report.rssi < 0)

            // B connects to what it scanned; A's Advertise stream answers with A's side of the link.
            var connect = Pandora_ConnectLERequest()
            connect.public = addressA
            let connected = try await hostB.connectLE(connect)
            guard case .connection(let linkB) = connected.result else {
                Issue.record("ConnectLE: \(connected)")
                return
            }
            let linkA = try #require(await Self.first(connectionsA) { _ in true }).connection
            advertising.cancel()

            // A finds the same link by B's address; each side reads the link's parameters.
            var waitConnection = Pandora_WaitConnectionRequest()
            waitConnection.address = addressB
            let waited = try await hostA.waitConnection(waitConnection)
            #expect(waited.connection.cookie.value == linkA.cookie.value)
            var parametersRequest = Pandora_GetConnectionParametersRequest()
            parametersRequest.connection = linkB
            let parametersB = try await hostB.getConnectionParameters(parametersRequest)
            parametersRequest.connection = linkA
            let parametersA = try await hostA.getConnectionParameters(parametersRequest)
            #expect(parametersB.connectionParameters.connectionInterval >= 6)
            #expect(parametersA.connectionParameters == parametersB.connectionParameters)

            // A second ConnectLE to the same peer: the link exists already.
            let again = try await hostB.connectLE(connect)
            #expect(again.connectionAlreadyExists == Google_Protobuf_Empty())

            // B disconnects; A's WaitDisconnection returns, and the parameters are gone.
            var waitDisconnection = Pandora_WaitDisconnectionRequest()
            waitDisconnection.connection = linkA
            async let disconnectedA = hostA.waitDisconnection(waitDisconnection)
            var disconnect = Pandora_DisconnectRequest()
            disconnect.connection = linkB
            _ = try await hostB.disconnect(disconnect)
            _ = try await disconnectedA
            #expect(controllerA.connectionCount == 0)
            let gone = try await hostA.getConnectionParameters(parametersRequest)
            #expect(gone.connectionNotFound == Google_Protobuf_Empty())

            // BR/EDR calls are refused with a reason: each of the four, through the client.
            func expectRefused(_ call: String, _ body: () async throws -> Void) async {
                do {
                    try await body()
                    Issue.record("\(call) succeeded")
                } catch let error as RPCError {
                    #expect(error.code == .unimplemented, "\(call)")
                    #expect(error.message.contains("BR/EDR") && error.message.contains(call), "\(call): \(error.message)")
                } catch {
                    Issue.record("\(call): \(error)")
                }
            }
            await expectRefused("SetDiscoverabilityMode") {
                _ = try await hostA.setDiscoverabilityMode(Pandora_SetDiscoverabilityModeRequest())
            }
            await expectRefused("SetConnectabilityMode") {
                _ = try await hostA.setConnectabilityMode(Pandora_SetConnectabilityModeRequest())
            }
            await expectRefused("Connect") {
                var classic = Pandora_ConnectRequest()
                classic.address = addressB
                _ = try await hostA.connect(classic)
            }
            await expectRefused("Inquiry") {
                try await hostA.inquiry(Google_Protobuf_Empty()) { response in
                    for try await _ in response.messages {}
                }
            }

            // FactoryReset: the adapter closed and opened again (here on a new controller, as RootCanal gives one per
            // connection), which answers with its address and advertises.
            _ = try await hostA.factoryReset(Google_Protobuf_Empty())
            let resetController = try #require(a.controller)
            #expect(resetController !== controllerA)
            #expect(try await hostA.readLocalAddress(Google_Protobuf_Empty()).address == Data(resetController.address.bytes))
            var beacon = Pandora_AdvertiseRequest()
            beacon.legacy = true
            let (_, beaconing) = Self.open { [beacon] (yield: @escaping @Sendable (Pandora_AdvertiseResponse) -> Void) in
                try await hostA.advertise(beacon) { response in
                    for try await message in response.messages { yield(message) }
                }
            }
            defer { beaconing.cancel() }
            for _ in 0..<200 where !resetController.isAdvertising { try await Task.sleep(for: .milliseconds(10)) }
            #expect(resetController.isAdvertising)
        }
    }

    @Test func extendedAdvertisingOnLECodedIsScannedOnLECoded() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let a = try await Self.start(on: air)
        let b = try await Self.start(on: air)
        defer {
            a.serving.cancel()
            b.serving.cancel()
        }
        try await Self.withClients(a, b) { hostA, hostB in
            let addressA = try await hostA.readLocalAddress(Google_Protobuf_Empty()).address
            var data = Pandora_DataTypes()
            data.manufacturerSpecificData = Data((0..<145).map { UInt8($0) })
            var advertise = Pandora_AdvertiseRequest()
            advertise.legacy = false
            advertise.connectable = false
            advertise.data = data
            advertise.primaryPhy = .primaryCoded
            advertise.secondaryPhy = .secondaryCoded
            let (_, advertising) = Self.open { [advertise] (yield: @escaping @Sendable (Pandora_AdvertiseResponse) -> Void) in
                try await hostA.advertise(advertise) { response in
                    for try await message in response.messages { yield(message) }
                }
            }
            defer { advertising.cancel() }
            var scan = Pandora_ScanRequest()
            scan.phys = [.primaryCoded]
            scan.passive = true
            let (reports, scanning) = Self.open { [scan] (yield: @escaping @Sendable (Pandora_ScanningResponse) -> Void) in
                try await hostB.scan(scan) { response in
                    for try await message in response.messages { yield(message) }
                }
            }
            let report = try #require(await Self.first(reports) { $0.public == addressA })
            scanning.cancel()
            #expect(!report.legacy)
            #expect(!report.connectable)
            #expect(report.primaryPhy == .primaryCoded)
            #expect(report.secondaryPhy == .secondaryCoded)
            #expect(report.data.manufacturerSpecificData == data.manufacturerSpecificData)
            #expect(!report.truncated)
        }
    }

    @Test func directedAdvertisingReachesOnlyItsTarget() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let a = try await Self.start(on: air)
        let b = try await Self.start(on: air)
        let c = try await Self.start(on: air)
        defer {
            for device in [a, b, c] { device.serving.cancel() }
        }
        try await Self.withClients(a, b) { hostA, hostB in
            try await Self.withClients(c, c) { hostC, _ in
                let addressA = try await hostA.readLocalAddress(Google_Protobuf_Empty()).address
                let addressB = try await hostB.readLocalAddress(Google_Protobuf_Empty()).address
                var advertise = Pandora_AdvertiseRequest()
                advertise.legacy = true
                advertise.connectable = true
                advertise.public = addressB
                advertise.data.manufacturerSpecificData = Data([0xFF, 0xFF, 7])
                let (_, advertising) = Self.open { [advertise] (yield: @escaping @Sendable (Pandora_AdvertiseResponse) -> Void) in
                    try await hostA.advertise(advertise) { response in
                        for try await message in response.messages { yield(message) }
                    }
                }
                defer { advertising.cancel() }
                func firstReport(_ host: Pandora_Host.Client<HTTP2ClientTransport.Posix>) async throws -> Pandora_ScanningResponse? {
                    var options = CallOptions.defaults
                    options.timeout = .seconds(2)
                    do {
                        return try await host.scan(Pandora_ScanRequest(), options: options) { response in
                            for try await message in response.messages where message.public == addressA { return message }
                            return nil
                        }
                    } catch let error as RPCError where error.code == .deadlineExceeded {
                        return nil
                    }
                }
                // B, the target, hears ADV_DIRECT_IND: connectable, legacy, no data; C hears nothing of A.
                let report = try #require(try await firstReport(hostB))
                #expect(report.legacy && report.connectable && report.data == Pandora_DataTypes())
                #expect(try await firstReport(hostC) == nil)
            }
        }
    }

    /// SecurityStorage: a central (swift-ble's own API, outside the server) connects to what the server advertises
    /// and pairs with bonding; the server says it is bonded to the central's address, and not after DeleteBond.
    @Test func securityStorageTellsAndDeletesBonds() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let a = try await Self.start(on: air)
        defer { a.serving.cancel() }
        let centralController = air.addController()
        let central = try await Central(transport: centralController.makeHostTransport())
        try await withGRPCClient(transport: .http2NIOPosix(target: .ipv4(address: "127.0.0.1", port: a.port), transportSecurity: .plaintext)) { client in
            let host = Pandora_Host.Client(wrapping: client)
            let storage = Pandora_SecurityStorage.Client(wrapping: client)
            let addressA = try await host.readLocalAddress(Google_Protobuf_Empty()).address
            var asked = Pandora_IsBondedRequest()
            asked.public = Data(centralController.address.bytes)
            #expect(try await storage.isBonded(asked).value == false)

            var advertise = Pandora_AdvertiseRequest()
            advertise.legacy = true
            advertise.connectable = true
            let (connections, advertising) = Self.open { [advertise] (yield: @escaping @Sendable (Pandora_AdvertiseResponse) -> Void) in
                try await host.advertise(advertise) { response in
                    for try await message in response.messages { yield(message) }
                }
            }
            defer { advertising.cancel() }
            let peer = try #require(BluetoothAddress(bigEndian: Array(addressA)))
            let remote = try await central.connect(LEAddress(peer, type: .public), exchangeMTU: false)
            _ = await Self.first(connections) { _ in true }
            let security = try await remote.pair()
            #expect(security.isBonded)
            // The server's side records the bond once its key distribution ends: wait for it.
            var bonded = false
            for _ in 0..<100 where !bonded {
                bonded = try await storage.isBonded(asked).value
                if !bonded { try await Task.sleep(for: .milliseconds(20)) }
            }
            #expect(bonded)
            var random = Pandora_IsBondedRequest()
            random.random = Data(centralController.address.bytes)
            #expect(try await storage.isBonded(random).value == false, "a public bond is not a random address's")

            var delete = Pandora_DeleteBondRequest()
            delete.public = Data(centralController.address.bytes)
            _ = try await storage.deleteBond(delete)
            #expect(try await storage.isBonded(asked).value == false)
        }
    }
}
