import ESPHomeAPI
import NIOCore
import NIOPosix
import Testing

/// The SwiftNIO driver over real TCP on loopback: two clients at once, one encrypted session end to end, and a
/// malformed frame from one client closing that client only.
@Suite(.timeLimit(.minutes(1))) struct ESPHomeAPIServerTests {
    let psk = Array(UInt8(7)..<39)

    /// A TCP client: writes bytes, reads what comes until `until` is satisfied or the connection closes.
    final class Peer: Sendable {
        let channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>
        init(port: Int) async throws {
            channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: port) { c in
                c.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: c) }
            }
        }
    }

    func start() async throws -> ESPHomeAPIServer {
        let session = ESPHomeAPIServerSession.Configuration(
            name: "nio-proxy", macAddress: "AA:BB:CC:DD:EE:01",
            deviceInfo: DeviceInfoResponse(name: "nio-proxy", bluetoothProxyFeatureFlags: 0x3F), encryptionKey: psk)
        return try await ESPHomeAPIServer.start(.init(port: 0, session: session)) { connection in
            // The application side: answer a read request with the handle read back, as a proxy would.
            for await event in connection.events {
                if case .request(.read(let r)) = event {
                    await connection.send(BluetoothGATTReadResponse(address: r.address, handle: r.handle, data: [UInt8(r.handle)]))
                }
            }
        }
    }

    @Test func anEncryptedSessionEndToEndAndABadClientClosedAlone() async throws {
        let server = try await start()
        #expect(server.port > 0)
        let good = try await Peer(port: server.port)
        let bad = try await Peer(port: server.port)
        try await good.channel.executeThenClose { inbound, outbound in
            var client = try TestClient(psk: psk)
            var iterator = inbound.makeAsyncIterator()
            /// Reads until `count` messages arrived (the handshake frames produce none).
            func messages(_ count: Int) async throws -> [any ESPHomeAPIMessage] {
                var out: [any ESPHomeAPIMessage] = []
                while out.count < count, let buffer = try await iterator.next() {
                    out += try client.receive([.send(Array(buffer.readableBytesView))])
                }
                return out
            }
            try await outbound.write(ByteBuffer(bytes: try client.opening()))
            while client.ciphers == nil, let buffer = try await iterator.next() {
                _ = try client.receive([.send(Array(buffer.readableBytesView))])
            }
            #expect(client.serverHello == [1] + Array("nio-proxy".utf8) + [0] + Array("AA:BB:CC:DD:EE:01".utf8) + [0])
            try await outbound.write(ByteBuffer(bytes: try client.encode(HelloRequest(clientInfo: "nio test"))))
            #expect(try await (messages(1).first as? HelloResponse)?.name == "nio-proxy")

            // The other client sends garbage: it is closed, this one goes on.
            try await bad.channel.executeThenClose { badInbound, badOutbound in
                try await badOutbound.write(ByteBuffer(bytes: [0x01, 0x00, 0x00, 0x01, 0x00, 0x03, 0x07, 0x07, 0x07]))
                var received: [UInt8] = []
                for try await buffer in badInbound { received += Array(buffer.readableBytesView) }
                // Its server hello, then the rejection; then the server closed the connection (the loop ended).
                let rejection: [UInt8] = [0x01, 0x00, 21, 0x01] + Array("Bad handshake packet".utf8)
                #expect(Array(received.suffix(rejection.count)) == rejection)
            }

            try await outbound.write(ByteBuffer(bytes: try client.encode(DeviceInfoRequest()) + client.encode(BluetoothGATTReadRequest(address: 5, handle: 42))))
            let replies = try await messages(2)
            #expect((replies.first as? DeviceInfoResponse)?.bluetoothProxyFeatureFlags == 0x3F)
            #expect(replies.last as? BluetoothGATTReadResponse == BluetoothGATTReadResponse(address: 5, handle: 42, data: [42]))
        }
        await server.stop()
    }

    @Test func aClientThatDoesNotReadGetsItsAdvertisementsDroppedNotHeld() async throws {
        let session = ESPHomeAPIServerSession.Configuration(name: "slow", macAddress: "AA:BB:CC:DD:EE:02", deviceInfo: DeviceInfoResponse(),
                                                            encryptionKey: nil, advertisementBatchSize: 64)
        let (connections, sink) = AsyncStream.makeStream(of: ESPHomeAPIConnection.self)
        let server = try await ESPHomeAPIServer.start(.init(port: 0, session: session)) { connection in
            sink.yield(connection)
            for await _ in connection.events {}
        }
        let peer = try await Peer(port: server.port)
        try await peer.channel.executeThenClose { _, outbound in
            var client = try TestClient(psk: nil)
            try await outbound.write(ByteBuffer(bytes: try client.encode(HelloRequest(clientInfo: "never reads"))
                                                + client.encode(SubscribeBluetoothLEAdvertisementsRequest(flags: 1))))
            var iterator = connections.makeAsyncIterator()
            let connection = try #require(await iterator.next())
            while await !connection.wantsAdvertisements { try await Task.sleep(for: .milliseconds(10)) }
            // Batches of about 25 KB on the wire with a pause after each, so that the writer keeps up while the socket
            // takes bytes: advertisements are dropped only once the kernel's buffers are full (the client reads nothing).
            let batch = (0..<500).map { BluetoothLERawAdvertisement(address: UInt64($0), rssi: -50, addressType: 0, data: Array(repeating: 0xAB, count: 31)) }
            var sent = 0
            while await connection.droppedAdvertisements == 0 && sent < 2_000_000 {
                await connection.advertise(batch)
                sent += batch.count
                try await Task.sleep(for: .milliseconds(2))
            }
            #expect(await connection.droppedAdvertisements > 0)
            #expect(sent > 5_000, "advertisements were dropped before the socket's buffers could have filled")
            // Held: at most the limit and the last call's advertisements (about 31 KB), not what was sent after.
            #expect(await connection.backlog <= ESPHomeAPIConnection.advertisementBacklogLimit + 40 * 1024)
            #expect(await connection.isConnected)
        }
        await server.stop()
    }
}
