import NIOCore
import NIOPosix
#if TLS
import NIOSSL
#endif

/// Where the broker is: `mqtt://HOST[:PORT]` (TCP, port 1883 by default) or `mqtts://HOST[:PORT]` (TLS, 8883).
public struct MQTTBrokerAddress: Sendable, Hashable, CustomStringConvertible {
    /// The host name or address.
    public var host: String
    /// The TCP port.
    public var port: Int
    /// Whether the connection is wrapped in TLS.
    public var usesTLS: Bool

    /// Creates an address.
    public init(host: String, port: Int? = nil, usesTLS: Bool = false) {
        self.host = host
        self.port = port ?? (usesTLS ? 8883 : 1883)
        self.usesTLS = usesTLS
    }

    /// Parses `mqtt://HOST[:PORT]` or `mqtts://HOST[:PORT]` (an IPv6 host in brackets); `nil` when it is neither.
    public init?(url: String) {
        let tls: Bool
        let rest: Substring
        if url.hasPrefix("mqtt://") {
            tls = false
            rest = url.dropFirst("mqtt://".count)
        } else if url.hasPrefix("mqtts://") {
            tls = true
            rest = url.dropFirst("mqtts://".count)
        } else {
            return nil
        }
        let authority = rest.hasSuffix("/") ? rest.dropLast() : rest
        guard !authority.isEmpty, !authority.contains("/") else { return nil }
        var host = authority
        var port: Int?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":"), let p = Int(after.dropFirst()) else { return nil }
                port = p
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            guard let p = Int(authority[authority.index(after: colon)...]) else { return nil }
            port = p
        }
        if let port, !(1...65_535).contains(port) { return nil }
        guard !host.isEmpty else { return nil }
        self.init(host: String(host), port: port, usesTLS: tls)
    }

    public var description: String { "\(usesTLS ? "mqtts" : "mqtt")://\(host.contains(":") ? "[\(host)]" : host):\(port)" }
}

/// How TLS connections check the broker.
public struct MQTTTLSOptions: Sendable {
    /// A PEM file of certificate authorities to trust instead of the system's.
    public var trustRootsFile: String?
    /// The name the broker's certificate must carry (default: the broker's host; for an IP address, the certificate
    /// must list that address as an IP subjectAltName).
    public var serverName: String?

    /// Creates options.
    public init(trustRootsFile: String? = nil, serverName: String? = nil) {
        self.trustRootsFile = trustRootsFile
        self.serverName = serverName
    }
}

/// An MQTT 3.1.1 client over TCP or TLS: ``MQTTSession`` driven by SwiftNIO, connecting again with backoff when the
/// broker goes away, until ``stop()``.
///
/// What it promises about messages: ``publish(_:)`` hands a message to the session, which sends it when connected
/// and keeps it otherwise (bounded by ``MQTTSession/Configuration/queueLimit``; when the queue is full the oldest
/// message goes and ``MQTTSession/Event/dropped(_:)`` says so). A QoS 1 message counts as delivered
/// (``MQTTSession/Event/delivered(_:)``) only when the broker acknowledged it, and is sent again after a reconnection
/// until it is. Subscriptions are made again after each reconnection unless the broker kept the session.
public actor MQTTClient {
    /// Why a request failed.
    public typealias ClientError = BLEFailure<MQTTClientErrorCode>

    /// The broker.
    public nonisolated let broker: MQTTBrokerAddress
    private let tls: MQTTTLSOptions
    private var session: MQTTSession
    private let clock = ContinuousClock()
    private let origin: ContinuousClock.Instant
    private let events: AsyncStream<MQTTSession.Event>.Continuation
    private let reportsDeliveries: Bool
    /// Everything the session reports, in order.
    public nonisolated let eventStream: AsyncStream<MQTTSession.Event>
    private var outbox: AsyncStream<[UInt8]>.Continuation?
    private var closeCurrent: (@Sendable () -> Void)?
    private var runner: Task<Void, Never>?
    private var stopping = false
    private var subscriptions: [(filter: String, qos: MQTTQoS)] = []
    private var subscribeWaiters: [UInt64: CheckedContinuation<[MQTTQoS?], any Error>] = [:]
    private var connectedWaiters: [CheckedContinuation<Void, Never>] = []
    private var lastProblem: String?
    /// Reconnection backoff: the first delay, doubled after each failed attempt up to the maximum.
    private let backoff: (first: Duration, maximum: Duration)
    /// Connections made (the first included).
    public private(set) var connectionCount = 0

    /// Whether this build connects to brokers over TLS (`mqtts://`): the package's `TLS` trait, off by default so
    /// that builds without a TLS broker do not compile swift-nio-ssl (`swift build --traits TLS` turns it on). A
    /// client of a TLS broker in a build without it never connects: its ``eventStream`` says why.
    public static var supportsTLS: Bool {
        #if TLS
        true
        #else
        false
        #endif
    }

    /// Creates a client; ``start()`` connects.
    ///
    /// - Parameter reportsDeliveries: whether ``eventStream`` carries ``MQTTSession/Event/delivered(_:)``, one per
    ///   message published. A client that publishes thousands of messages a second and follows ``backlog`` instead
    ///   passes `false`, so that its event stream does not wake its reader for each; every other event still comes,
    ///   ``MQTTSession/Event/dropped(_:)`` included.
    public init(broker: MQTTBrokerAddress, configuration: MQTTSession.Configuration, tls: MQTTTLSOptions = .init(),
                backoff: (first: Duration, maximum: Duration) = (.milliseconds(250), .seconds(30)), reportsDeliveries: Bool = true) {
        self.broker = broker
        self.reportsDeliveries = reportsDeliveries
        self.tls = tls
        self.session = MQTTSession(configuration)
        self.origin = clock.now
        self.backoff = backoff
        (eventStream, events) = AsyncStream.makeStream(of: MQTTSession.Event.self)
    }

    /// Whether the session is connected now.
    public var isConnected: Bool { session.state == .connected }
    /// Messages waiting to be sent, and QoS 1 messages sent and not acknowledged.
    public var backlog: (queued: Int, inFlight: Int) { (session.queuedCount, session.inFlightCount) }
    /// Messages dropped from the full queue since the client was made.
    public var droppedCount: Int { session.droppedCount }
    /// Why the last connection attempt or connection ended, if one did.
    public var lastDisconnectReason: String? { lastProblem }

    /// Starts connecting (and reconnecting) in the background.
    public func start() {
        guard runner == nil else { return }
        stopping = false
        runner = Task { await self.run() }
    }

    /// Waits until the session is connected (or `timeout` passes); returns whether it is.
    public func waitUntilConnected(timeout: Duration) async -> Bool {
        if session.state == .connected { return true }
        let deadline = clock.now + timeout
        let waker = Task { [weak self] in
            try? await Task.sleep(until: deadline, clock: .continuous)
            await self?.wakeConnectedWaiters()
        }
        await withCheckedContinuation { connectedWaiters.append($0) }
        waker.cancel()
        return session.state == .connected
    }

    /// Publishes a message (see the type's discussion for what happens when not connected). Returns the number that
    /// ``MQTTSession/Event/delivered(_:)`` will carry.
    @discardableResult
    public func publish(_ message: MQTTMessage) throws -> UInt64 {
        do {
            let result = try session.publish(message, now: now)
            apply(result.actions)
            return result.number
        } catch {
            throw ClientError(error.code == .notConnected ? .notConnected : .invalidRequest, error.reason, underlying: error)
        }
    }

    /// Publishes messages in order, as ``publish(_:)`` does each, but in one step: the packets they make go to the
    /// connection in one write instead of one per message (a gateway publishing a burst of records). Returns each
    /// message's number, or `nil` for one that was refused (an invalid topic, too large); the others go out.
    @discardableResult
    public func publish(contentsOf messages: [MQTTMessage]) -> [UInt64?] {
        let (numbers, actions) = session.publish(contentsOf: messages, now: now)
        apply(actions)
        return numbers
    }

    /// Subscribes (now if connected, and again after every reconnection that did not keep the session); waits for
    /// the broker's answer when connected and returns the granted QoS per filter (`nil`: refused). When not
    /// connected it returns `[]` and subscribes on connection.
    @discardableResult
    public func subscribe(_ filters: [(filter: String, qos: MQTTQoS)]) async throws -> [MQTTQoS?] {
        for f in filters {
            do { try MQTTTopic.validateFilter(f.filter) } catch { throw ClientError(.invalidRequest, error.reason, underlying: error) }
        }
        subscriptions += filters
        guard session.state == .connected else { return [] }
        return try await sendSubscribe(filters)
    }

    /// Disconnects cleanly (DISCONNECT: the broker discards the Will) and stops reconnecting. Unacknowledged
    /// messages stay counted in ``backlog``.
    public func stop() async {
        stopping = true
        let attached = outbox != nil
        apply(session.disconnect(now: now))
        // Between connections (waiting to retry, or connecting) there is nothing to say goodbye on.
        if !attached { runner?.cancel() }
        let runner = self.runner
        self.runner = nil
        await runner?.value
        events.finish()
    }

    // MARK: - Inside

    private var now: Duration { clock.now - origin }

    private func sendSubscribe(_ filters: [(filter: String, qos: MQTTQoS)]) async throws -> [MQTTQoS?] {
        let result: (token: UInt64, actions: [MQTTSession.Action])
        do { result = try session.subscribe(filters, now: now) } catch {
            throw ClientError(error.code == .notConnected ? .notConnected : .invalidRequest, error.reason, underlying: error)
        }
        return try await withCheckedThrowingContinuation { continuation in
            subscribeWaiters[result.token] = continuation
            apply(result.actions)
        }
    }

    private func wakeConnectedWaiters() {
        let waiters = connectedWaiters
        connectedWaiters = []
        for w in waiters { w.resume() }
    }

    private func run() async {
        if broker.usesTLS && !Self.supportsTLS {
            // Trying again would fail the same way for as long as the process runs.
            let reason = "\(broker) needs TLS, and this build has none (build with `swift build --traits TLS`)"
            lastProblem = reason
            apply([.event(.connectionLost(reason))])
            return
        }
        var delay = backoff.first
        while !stopping {
            do {
                try await connectOnce()
                delay = backoff.first
            } catch {
                lastProblem = "\(error)"
            }
            connectionEnded(reason: lastProblem ?? "the connection closed")
            guard !stopping else { break }
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, backoff.maximum)
        }
    }

    private func connectOnce() async throws {
        let host = broker.host
        #if TLS
        let sslContext: NIOSSLContext? = try broker.usesTLS ? {
            var configuration = TLSConfiguration.makeClientConfiguration()
            if let file = tls.trustRootsFile { configuration.trustRoots = .file(file) }
            return try NIOSSLContext(configuration: configuration)
        }() : nil
        // SNI carries a host name, never an address (RFC 6066, 3): for an address the certificate's IP
        // subjectAltName is checked against the connected address instead.
        let name = tls.serverName ?? host
        let serverName: String? = (try? SocketAddress(ipAddress: name, port: 0)) != nil ? nil : name
        #endif
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(10))
            .connect(host: host, port: broker.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    #if TLS
                    if let sslContext {
                        try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: sslContext, serverHostname: serverName))
                    }
                    #endif
                    return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        guard !stopping else {
            try? await channel.channel.close()
            return
        }
        try await channel.executeThenClose { inbound, outbound in
            let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self)
            let nioChannel = channel.channel
            self.attach(continuation, close: { nioChannel.close(promise: nil) })
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    // One writer per connection, so bytes go out in the order the session produced them.
                    // The session closes a connection by ending the stream: what it sent before (DISCONNECT) goes first.
                    for await bytes in stream { try await outbound.write(ByteBuffer(bytes: bytes)) }
                    outbound.finish()
                    nioChannel.close(promise: nil)
                }
                group.addTask {
                    while !Task.isCancelled {
                        let wait = await self.tickAndNextWait()
                        try await Task.sleep(for: wait)
                    }
                }
                for try await buffer in inbound {
                    self.received(Array(buffer.readableBytesView))
                }
                group.cancelAll()
            }
        }
    }

    private func attach(_ continuation: AsyncStream<[UInt8]>.Continuation, close: @escaping @Sendable () -> Void) {
        outbox = continuation
        closeCurrent = close
        connectionCount += 1
        apply(session.connectionOpened(now: now))
    }

    private func received(_ bytes: [UInt8]) {
        apply(session.received(bytes, now: now))
    }

    private func tickAndNextWait() -> Duration {
        apply(session.tick(now: now))
        guard let deadline = session.nextDeadline else { return .milliseconds(500) }
        return max(.milliseconds(10), min(.seconds(1), deadline - now))
    }

    private func connectionEnded(reason: String) {
        outbox?.finish()
        outbox = nil
        closeCurrent = nil
        apply(session.connectionClosed(reason: reason))
        for (_, waiter) in subscribeWaiters { waiter.resume(throwing: ClientError(.connectionEnded, "the connection ended before SUBACK: \(reason)")) }
        subscribeWaiters = [:]
    }

    /// Carries out the session's actions in order. The packets go to the writer as one buffer (one write), handed
    /// over before a close and at the end: a batch of publishes, or the messages that a read's acknowledgements let
    /// into the in-flight window, one at a time. Events between them (a QoS 0 message's `delivered`, which follows
    /// each one) are told at once: nothing can see the difference, since the buffer goes out before this method
    /// returns, and the packets stay in their order.
    private func apply(_ actions: [MQTTSession.Action]) {
        var pending: [UInt8] = []
        for action in actions {
            switch action {
            case .send(let bytes):
                if pending.isEmpty { pending = bytes } else { pending += bytes }
            case .close:
                if !pending.isEmpty {
                    outbox?.yield(pending)
                    pending = []
                }
                // The writer sends what is queued (DISCONNECT included), then closes; a writer stuck on a broker
                // that reads nothing is cut off after two seconds.
                outbox?.finish()
                outbox = nil
                if let close = closeCurrent {
                    closeCurrent = nil
                    Task { try? await Task.sleep(for: .seconds(2)); close() }
                }
            case .event(.delivered) where !reportsDeliveries:
                break
            case .event(let event):
                handle(event)
                events.yield(event)
            }
        }
        if !pending.isEmpty { outbox?.yield(pending) }
    }

    private func handle(_ event: MQTTSession.Event) {
        switch event {
        case .connected(let present):
            lastProblem = nil
            wakeConnectedWaiters()
            if !present && !subscriptions.isEmpty {
                let filters = subscriptions
                Task { _ = try? await self.sendSubscribe(filters) }
            }
        case .subscribed(let token, let granted):
            subscribeWaiters.removeValue(forKey: token)?.resume(returning: granted)
        case .refused(let code):
            lastProblem = "the broker refused the connection: \(code)"
        case .connectionLost(let reason):
            lastProblem = reason
        default:
            break
        }
    }
}

/// The kind of an ``MQTTClient/ClientError``: an open struct, so a release may add kinds.
public struct MQTTClientErrorCode: BLEErrorCode {
    private enum Backing: Hashable, Sendable {
        case invalidRequest
        case notConnected
        case connectionEnded
    }

    private let backing: Backing
    private init(_ backing: Backing) { self.backing = backing }

    /// A message or a subscription the session refuses (a bad topic, a payload too large): the
    /// ``MQTTSession/UsageError`` is the underlying error. ``BLEErrorCategory/invalidInput``.
    public static let invalidRequest = MQTTClientErrorCode(.invalidRequest)
    /// The request needs a connection and there is none. ``BLEErrorCategory/disconnected``.
    public static let notConnected = MQTTClientErrorCode(.notConnected)
    /// The connection ended before the broker answered. ``BLEErrorCategory/disconnected``.
    public static let connectionEnded = MQTTClientErrorCode(.connectionEnded)

    public var category: BLEErrorCategory {
        switch backing {
        case .invalidRequest: .invalidInput
        case .notConnected, .connectionEnded: .disconnected
        }
    }

    /// `invalidRequest`, `notConnected` or `connectionEnded`.
    public var description: String {
        switch backing {
        case .invalidRequest: "invalidRequest"
        case .notConnected: "notConnected"
        case .connectionEnded: "connectionEnded"
        }
    }
}
