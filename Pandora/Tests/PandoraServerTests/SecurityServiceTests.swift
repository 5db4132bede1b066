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

/// `pandora.Security` driven through real gRPC clients against two Pandora servers on one virtual air, as Avatar's
/// LeSecurityTest drives a DUT and a REF: B connects to A, one side calls Secure, the other WaitSecurity, and both
/// OnPairing streams get the pairing's events and answer them.
@Suite(.timeLimit(.minutes(2))) struct SecurityServiceTests {
    typealias Transport = HTTP2ClientTransport.Posix

    struct Device {
        let server: PandoraServer
        let serving: Task<Void, any Error>
        let port: Int
    }

    static func start(on air: VirtualAir, ioCapability: SMPIOCapability) async throws -> Device {
        let server = PandoraServer {
            try await Adapter(transport: air.addController().makeHostTransport(), security: PandoraServer.security(ioCapability: ioCapability))
        }
        try await server.openAdapter()
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let serving = Task { try await server.run(host: "127.0.0.1", port: 0) { continuation.yield($0) } }
        var iterator = ports.makeAsyncIterator()
        let port = try #require(await iterator.next())
        return Device(server: server, serving: serving, port: port)
    }

    /// The clients of one device.
    struct Clients: Sendable {
        let host: Pandora_Host.Client<Transport>
        let security: Pandora_Security.Client<Transport>
        let storage: Pandora_SecurityStorage.Client<Transport>

        init(_ client: GRPCClient<Transport>) {
            host = Pandora_Host.Client(wrapping: client)
            security = Pandora_Security.Client(wrapping: client)
            storage = Pandora_SecurityStorage.Client(wrapping: client)
        }
    }

    static func withClients(_ a: Device, _ b: Device, _ body: @Sendable (Clients, Clients) async throws -> Void) async throws {
        try await withGRPCClient(transport: .http2NIOPosix(target: .ipv4(address: "127.0.0.1", port: a.port), transportSecurity: .plaintext)) { ca in
            try await withGRPCClient(transport: .http2NIOPosix(target: .ipv4(address: "127.0.0.1", port: b.port), transportSecurity: .plaintext)) { cb in
                try await body(Clients(ca), Clients(cb))
            }
        }
    }

    /// An open OnPairing call: the events it received, and a way to answer them.
    struct Pairing {
        let events: AsyncStream<Pandora_PairingEvent>
        let answers: AsyncStream<Pandora_PairingEventAnswer>.Continuation
        let task: Task<Void, Never>

        func answer(_ event: Pandora_PairingEvent, confirm: Bool) {
            var answer = Pandora_PairingEventAnswer()
            answer.event = event
            answer.confirm = confirm
            answers.yield(answer)
        }
    }

    static func onPairing(_ security: Pandora_Security.Client<Transport>) -> Pairing {
        let (events, eventsIn) = AsyncStream<Pandora_PairingEvent>.makeStream()
        let (answers, answersIn) = AsyncStream<Pandora_PairingEventAnswer>.makeStream()
        let task = Task {
            let request = StreamingClientRequest<Pandora_PairingEventAnswer> { writer in
                for await answer in answers { try await writer.write(answer) }
            }
            try? await security.onPairing(request: request) { response in
                for try await event in response.messages { eventsIn.yield(event) }
            }
            eventsIn.finish()
        }
        return Pairing(events: events, answers: answersIn, task: task)
    }

    /// A advertises, B connects: the link's token on each side.
    static func connect(_ a: Clients, _ b: Clients) async throws -> (a: Pandora_Connection, b: Pandora_Connection) {
        let addressA = try await a.host.readLocalAddress(Google_Protobuf_Empty()).address
        var advertise = Pandora_AdvertiseRequest()
        advertise.legacy = true
        advertise.connectable = true
        advertise.data.manufacturerSpecificData = Data("pause cafe".utf8)
        let (connectionsA, advertising) = HostServiceTests.open { [advertise] (yield: @escaping @Sendable (Pandora_AdvertiseResponse) -> Void) in
            try await a.host.advertise(advertise) { response in
                for try await message in response.messages { yield(message) }
            }
        }
        defer { advertising.cancel() }
        var connect = Pandora_ConnectLERequest()
        connect.public = addressA
        let connected = try await b.host.connectLE(connect)
        guard case .connection(let linkB) = connected.result else { throw RPCError(code: .unknown, message: "ConnectLE: \(connected)") }
        let linkA = try #require(await HostServiceTests.first(connectionsA) { _ in true }).connection
        return (linkA, linkB)
    }

    static func secure(_ client: Clients, _ connection: Pandora_Connection, _ level: Pandora_LESecurityLevel) async throws -> Pandora_SecureResponse {
        var request = Pandora_SecureRequest()
        request.connection = connection
        request.le = level
        return try await client.security.secure(request)
    }

    static func waitSecurity(_ client: Clients, _ connection: Pandora_Connection,
                             _ level: Pandora_LESecurityLevel) async throws -> Pandora_WaitSecurityResponse {
        var request = Pandora_WaitSecurityRequest()
        request.connection = connection
        request.le = level
        return try await client.security.waitSecurity(request)
    }

    /// Both sides answer their first event with `confirm`; returns the two events.
    static func answerFirst(_ a: Pairing, confirmA: Bool, _ b: Pairing, confirmB: Bool) async throws
        -> (Pandora_PairingEvent, Pandora_PairingEvent) {
        let eventA = try #require(await HostServiceTests.first(a.events) { _ in true })
        let eventB = try #require(await HostServiceTests.first(b.events) { _ in true })
        a.answer(eventA, confirm: confirmA)
        b.answer(eventB, confirm: confirmB)
        return (eventA, eventB)
    }

    @Test func justWorksFromTheCentralWithBothStreamsAnsweringYes() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let a = try await Self.start(on: air, ioCapability: .noInputNoOutput)
        let b = try await Self.start(on: air, ioCapability: .noInputNoOutput)
        defer {
            a.serving.cancel()
            b.serving.cancel()
        }
        try await Self.withClients(a, b) { clientA, clientB in
            let pairingA = Self.onPairing(clientA.security), pairingB = Self.onPairing(clientB.security)
            defer {
                pairingA.task.cancel()
                pairingB.task.cancel()
            }
            let (linkA, linkB) = try await Self.connect(clientA, clientB)
            // Nothing asked yet: level 1 holds, level 2 does not.
            async let waited = Self.waitSecurity(clientA, linkA, .leLevel2)
            async let secured = Self.secure(clientB, linkB, .leLevel2)
            let (eventA, eventB) = try await Self.answerFirst(pairingA, confirmA: true, pairingB, confirmB: true)
            #expect(eventA.justWorks == Google_Protobuf_Empty() && eventB.justWorks == Google_Protobuf_Empty())
            // Each event names the link by the token its server gave.
            #expect(eventA.connection == linkA && eventB.connection == linkB)
            #expect(try await secured.success == Google_Protobuf_Empty())
            #expect(try await waited.success == Google_Protobuf_Empty())
            // Just Works reaches level 2, never 3: asked again, B's Secure pairs with MITM protection, which two
            // devices without input and output cannot do.
            #expect(try await Self.secure(clientB, linkB, .leLevel2).success == Google_Protobuf_Empty())
            let level3 = try await Self.secure(clientB, linkB, .leLevel3)
            #expect(level3.pairingFailure == Google_Protobuf_Empty())
        }
    }

    @Test(arguments: [true, false])
    func numericComparisonFromThePeripheral(accept: Bool) async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let a = try await Self.start(on: air, ioCapability: .keyboardDisplay)
        let b = try await Self.start(on: air, ioCapability: .displayYesNo)
        defer {
            a.serving.cancel()
            b.serving.cancel()
        }
        try await Self.withClients(a, b) { clientA, clientB in
            let pairingA = Self.onPairing(clientA.security), pairingB = Self.onPairing(clientB.security)
            defer {
                pairingA.task.cancel()
                pairingB.task.cancel()
            }
            let (linkA, linkB) = try await Self.connect(clientA, clientB)
            // A, the peripheral, asks for level 3 (Security Request); B, the central, pairs and waits for it.
            async let secured = Self.secure(clientA, linkA, .leLevel3)
            async let waited = Self.waitSecurity(clientB, linkB, .leLevel3)
            let (eventA, eventB) = try await Self.answerFirst(pairingA, confirmA: true, pairingB, confirmB: accept)
            guard case .numericComparison(let numberA)? = eventA.method, case .numericComparison(let numberB)? = eventB.method else {
                Issue.record("not numeric comparison: \(eventA), \(eventB)")
                return
            }
            #expect(numberA == numberB && numberA < 1_000_000)
            if accept {
                #expect(try await secured.success == Google_Protobuf_Empty())
                #expect(try await waited.success == Google_Protobuf_Empty())
                // Level 4 too: Secure Connections with a 16-octet key.
                #expect(try await Self.secure(clientA, linkA, .leLevel4).success == Google_Protobuf_Empty())
            } else {
                #expect(try await secured.pairingFailure == Google_Protobuf_Empty())
                #expect(try await waited.pairingFailure == Google_Protobuf_Empty())
            }
        }
    }

    @Test func passkeyEntryAndADisconnectionDuringPairing() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let a = try await Self.start(on: air, ioCapability: .displayOnly)
        let b = try await Self.start(on: air, ioCapability: .keyboardOnly)
        defer {
            a.serving.cancel()
            b.serving.cancel()
        }
        try await Self.withClients(a, b) { clientA, clientB in
            let pairingA = Self.onPairing(clientA.security), pairingB = Self.onPairing(clientB.security)
            defer {
                pairingA.task.cancel()
                pairingB.task.cancel()
            }
            let (linkA, linkB) = try await Self.connect(clientA, clientB)
            async let secured = Self.secure(clientB, linkB, .leLevel3)
            async let waited = Self.waitSecurity(clientA, linkA, .leLevel3)
            // A shows a passkey, B is asked for it; B's user types it.
            let shown = try #require(await HostServiceTests.first(pairingA.events) { _ in true })
            let asked = try #require(await HostServiceTests.first(pairingB.events) { _ in true })
            guard case .passkeyEntryNotification(let passkey)? = shown.method else {
                Issue.record("A: \(shown)")
                return
            }
            #expect(asked.passkeyEntryRequest == Google_Protobuf_Empty())
            var answer = Pandora_PairingEventAnswer()
            answer.event = asked
            answer.passkey = passkey
            pairingB.answers.yield(answer)
            #expect(try await secured.success == Google_Protobuf_Empty())
            #expect(try await waited.success == Google_Protobuf_Empty())

            // A new link; B pairs again but A disconnects while B's user has not answered: both calls say the link died.
            var disconnect = Pandora_DisconnectRequest()
            disconnect.connection = linkB
            _ = try await clientB.host.disconnect(disconnect)
            var deleteBond = Pandora_DeleteBondRequest()
            deleteBond.public = try await clientA.host.readLocalAddress(Google_Protobuf_Empty()).address
            _ = try await clientB.storage.deleteBond(deleteBond)
            let (linkA2, linkB2) = try await Self.connect(clientA, clientB)
            async let secured2 = Self.secure(clientB, linkB2, .leLevel3)
            async let waited2 = Self.waitSecurity(clientA, linkA2, .leLevel3)
            #expect(await HostServiceTests.first(pairingB.events) { _ in true }?.passkeyEntryRequest == Google_Protobuf_Empty())
            disconnect.connection = linkA2
            _ = try await clientA.host.disconnect(disconnect)
            #expect(try await secured2.connectionDied == Google_Protobuf_Empty())
            #expect(try await waited2.connectionDied == Google_Protobuf_Empty())
        }
    }
}
