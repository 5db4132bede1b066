import Crypto
import NIOCore
import NIOPosix
import Synchronization

/// One client of an ``ESPHomeAPIServer``: its ``ESPHomeAPIServerSession`` driven over a TCP connection. The
/// application reads ``events`` and answers with ``send(_:)`` and ``advertise(_:)``.
///
/// A client that reads slowly does not make the server hold its bytes without bound: beyond
/// ``advertisementBacklogLimit`` bytes written and not yet taken by the socket, advertisements for it are dropped
/// (and counted); beyond ``backlogLimit``, the connection is closed.
public actor ESPHomeAPIConnection {
    /// Bytes waiting for the socket beyond which advertisements are dropped.
    public static let advertisementBacklogLimit = 256 * 1024
    /// Bytes waiting for the socket beyond which the connection is closed.
    public static let backlogLimit = 4 * 1024 * 1024
    /// The client's address (`127.0.0.1:53122`).
    public nonisolated let peer: String
    /// What the session reports: the client being ready, its requests, and the end of the connection (the stream
    /// finishes after ``ESPHomeAPIServerSession/Event/closed(_:)``).
    public nonisolated let events: AsyncStream<ESPHomeAPIServerSession.Event>
    private let eventSink: AsyncStream<ESPHomeAPIServerSession.Event>.Continuation
    private var session: ESPHomeAPIServerSession
    private let outbox: AsyncStream<[UInt8]>.Continuation
    private let closeChannel: @Sendable () -> Void
    private let clock = ContinuousClock()
    private let origin: ContinuousClock.Instant
    /// Bytes handed to the writer and not written to the socket yet.
    public private(set) var backlog = 0
    /// Advertisements dropped because the client read too slowly.
    public private(set) var droppedAdvertisements = 0
    /// Advertisements queued for the client (it asked for them and kept up), cumulative.
    public private(set) var forwardedAdvertisements = 0

    init(peer: String, session: ESPHomeAPIServerSession, origin: ContinuousClock.Instant, outbox: AsyncStream<[UInt8]>.Continuation,
         close: @escaping @Sendable () -> Void) {
        self.peer = peer
        self.session = session
        self.origin = origin
        self.outbox = outbox
        self.closeChannel = close
        (events, eventSink) = AsyncStream.makeStream(of: ESPHomeAPIServerSession.Event.self)
    }

    private var now: Duration { clock.now - origin }

    /// Whether the client completed hello and is still there.
    public var isConnected: Bool { session.isConnected }

    /// Whether the client asked for raw advertisements.
    public var wantsAdvertisements: Bool { session.wantsAdvertisements }

    /// Sends a message (dropped when the client is not connected).
    public func send(_ message: some ESPHomeAPIMessage) { apply(session.send(message)) }

    /// Queues raw advertisements, sent in batches (only if the client subscribed; dropped while the client is more
    /// than ``advertisementBacklogLimit`` bytes behind: a call made below the limit is queued whole).
    public func advertise(_ advertisements: [BluetoothLERawAdvertisement]) {
        guard backlog <= Self.advertisementBacklogLimit else {
            if session.wantsAdvertisements { droppedAdvertisements += advertisements.count }
            return
        }
        if session.wantsAdvertisements { forwardedAdvertisements += advertisements.count }
        apply(session.advertise(advertisements, now: now))
    }

    /// The writer wrote `count` bytes to the socket.
    func wrote(_ count: Int) { backlog -= count }

    /// Closes the connection (telling the client first).
    public func close(reason: String) { apply(session.disconnect(reason: reason)) }

    func received(_ bytes: [UInt8]) { apply(session.received(bytes, now: now)) }

    func tickAndNextWait() -> Duration {
        apply(session.tick(now: now))
        guard let deadline = session.nextDeadline else { return .seconds(1) }
        return max(.milliseconds(5), min(.seconds(1), deadline - now))
    }

    func ended(reason: String) {
        apply(session.connectionClosed(reason: reason))
        outbox.finish()
        eventSink.finish()
    }

    private func apply(_ actions: [ESPHomeAPIServerSession.Action]) {
        for action in actions {
            switch action {
            case .send(let bytes):
                backlog += bytes.count
                outbox.yield(bytes)
                if backlog > Self.backlogLimit {
                    apply(session.connectionClosed(reason: "the client reads too slowly (\(backlog) bytes waiting)"))
                    outbox.finish()
                    closeChannel()
                    return
                }
            case .close:
                // The writer sends what is queued, then closes; a client that reads nothing is cut off after a second.
                outbox.finish()
                let close = closeChannel
                Task { try? await Task.sleep(for: .seconds(1)); close() }
            case .event(let event):
                eventSink.yield(event)
                if case .closed = event { eventSink.finish() }
            }
        }
    }
}

/// An ESPHome native API server over TCP, SwiftNIO underneath: every connection gets an ``ESPHomeAPIServerSession``
/// and an ``ESPHomeAPIConnection`` handed to the application's handler. Listens on loopback unless told otherwise.
public final class ESPHomeAPIServer: Sendable {
    /// Where and how to listen.
    public struct Configuration: Sendable {
        /// The address to bind (loopback by default: a proxy reaches every device in a home).
        public var host: String
        /// The TCP port (6053 is ESPHome's; 0: any free port).
        public var port: Int
        /// Each connection's session.
        public var session: ESPHomeAPIServerSession.Configuration
        /// The most clients at once; more are closed on arrival.
        public var maximumClients: Int

        /// Creates a configuration.
        public init(host: String = "127.0.0.1", port: Int = 6053, session: ESPHomeAPIServerSession.Configuration, maximumClients: Int = 8) {
            self.host = host
            self.port = port
            self.session = session
            self.maximumClients = max(1, maximumClients)
        }
    }

    /// The port listened on.
    public let port: Int
    private let channel: any Channel
    private let acceptor: Task<Void, Never>

    private init(port: Int, channel: any Channel, acceptor: Task<Void, Never>) {
        self.port = port
        self.channel = channel
        self.acceptor = acceptor
    }

    /// Binds and starts accepting; `handler` runs once per client, for as long as it likes (the connection's events
    /// end when the client goes).
    public static func start(_ configuration: Configuration,
                             handler: @escaping @Sendable (ESPHomeAPIConnection) async -> Void) async throws -> ESPHomeAPIServer {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 16)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .bind(host: configuration.host, port: configuration.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        let port = server.channel.localAddress?.port ?? configuration.port
        let clients = ClientCount()
        let acceptor = Task<Void, Never> {
            try? await withThrowingDiscardingTaskGroup { group in
                try await server.executeThenClose { inbound in
                    for try await child in inbound {
                        group.addTask {
                            guard clients.enter(limit: configuration.maximumClients) else {
                                try? await child.channel.close()
                                return
                            }
                            defer { clients.leave() }
                            await serve(child, configuration: configuration.session, handler: handler)
                        }
                    }
                }
            }
        }
        return ESPHomeAPIServer(port: port, channel: server.channel, acceptor: acceptor)
    }

    /// Stops listening and closes every connection.
    public func stop() async {
        try? await channel.close()
        acceptor.cancel()
        await acceptor.value
    }

    private static func serve(_ child: NIOAsyncChannel<ByteBuffer, ByteBuffer>, configuration: ESPHomeAPIServerSession.Configuration,
                              handler: @escaping @Sendable (ESPHomeAPIConnection) async -> Void) async {
        let origin = ContinuousClock.now
        let session: ESPHomeAPIServerSession
        do { session = try ESPHomeAPIServerSession(configuration, ephemeral: Curve25519.KeyAgreement.PrivateKey(), now: .zero) } catch {
            try? await child.channel.close()
            return
        }
        let nioChannel = child.channel
        let peer = nioChannel.remoteAddress.map { "\($0.ipAddress ?? "?"):\($0.port ?? 0)" } ?? "?"
        let (stream, outbox) = AsyncStream.makeStream(of: [UInt8].self)
        let connection = ESPHomeAPIConnection(peer: peer, session: session, origin: origin, outbox: outbox,
                                              close: { nioChannel.close(promise: nil) })
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await handler(connection) }
            group.addTask {
                var reason = "the client closed the connection"
                do {
                    try await child.executeThenClose { inbound, outbound in
                        try await withThrowingTaskGroup(of: Void.self) { io in
                            io.addTask {
                                for await bytes in stream {
                                    try await outbound.write(ByteBuffer(bytes: bytes))
                                    await connection.wrote(bytes.count)
                                }
                                outbound.finish()
                                nioChannel.close(promise: nil)
                            }
                            io.addTask {
                                while !Task.isCancelled {
                                    try await Task.sleep(for: await connection.tickAndNextWait())
                                }
                            }
                            for try await buffer in inbound { await connection.received(Array(buffer.readableBytesView)) }
                            io.cancelAll()
                        }
                    }
                } catch {
                    reason = "the connection failed: \(error)"
                }
                await connection.ended(reason: reason)
            }
        }
    }
}

/// Counts clients against the limit.
private final class ClientCount: Sendable {
    private let count = Mutex(0)
    func enter(limit: Int) -> Bool {
        count.withLock { n in
            guard n < limit else { return false }
            n += 1
            return true
        }
    }
    func leave() { count.withLock { $0 -= 1 } }
}
