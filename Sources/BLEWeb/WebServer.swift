import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import Synchronization

/// A file the server sends: its bytes and content type.
public struct WebFile: Sendable {
    /// `text/html; charset=utf-8`, `application/octet-stream`...
    public var contentType: String
    /// The body.
    public var bytes: [UInt8]
    /// A `Content-Disposition` header value (`attachment; filename="trace.btsnoop"`), for downloads.
    public var disposition: String?

    /// A file from its parts.
    public init(contentType: String, bytes: [UInt8], disposition: String? = nil) {
        self.contentType = contentType
        self.bytes = bytes
        self.disposition = disposition
    }
}

/// The page: `index.html`, `app.js` and `style.css`, package resources of this module (`Sources/BLEWeb/Page`).
public enum WebPage {
    /// The page's files by request path (`/`, `/app.js`, `/style.css`).
    /// - Throws: ``PageRequestError`` when the resource bundle is not beside the executable, or a file is missing
    ///   from it.
    public static func files() throws -> [String: WebFile] {
        #if os(Linux)
        // SwiftPM's accessor ends the process when it finds no bundle (a `ble` copied without the directory beside
        // it): look first, and say what is missing instead.
        let beside = Bundle.main.bundleURL.appendingPathComponent("swift-ble_BLEWeb.resources")
        guard FileManager.default.fileExists(atPath: beside.path) else {
            throw PageRequestError("the page's files are not beside the executable: \(beside.path) is missing (copy it with the binary)")
        }
        #endif
        let table: [(path: String, name: String, ext: String, type: String)] = [
            ("/", "index", "html", "text/html; charset=utf-8"),
            ("/app.js", "app", "js", "text/javascript; charset=utf-8"),
            ("/style.css", "style", "css", "text/css; charset=utf-8"),
        ]
        var files: [String: WebFile] = [:]
        for entry in table {
            guard let url = Bundle.module.url(forResource: entry.name, withExtension: entry.ext, subdirectory: "Page"),
                  let data = try? Data(contentsOf: url) else {
                throw PageRequestError("the page's \(entry.name).\(entry.ext) is missing from the BLEWeb resource bundle")
            }
            files[entry.path] = WebFile(contentType: entry.type, bytes: [UInt8](data))
        }
        return files
    }
}

/// One browser tab connected over the WebSocket: the text messages it sends, and ``send(_:)`` to talk to it.
public final class WebClient: Sendable {
    /// A number for this client, unique in its server.
    public let id: Int
    /// The page's text messages; finishes when the tab goes away.
    public let messages: AsyncStream<String>
    let sink: AsyncStream<String>.Continuation
    private let channel: any Channel

    init(id: Int, channel: any Channel) {
        self.id = id
        self.channel = channel
        (messages, sink) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingNewest(256))
    }

    /// Sends one text message (dropped when the tab has gone).
    public func send(_ text: String) {
        guard channel.isActive else { return }
        let buffer = channel.allocator.buffer(string: text)
        channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .text, data: buffer), promise: nil)
    }

    /// Sends an update that a newer one will replace (a scanner row, a notified value, trace packets): dropped while
    /// the socket is not writable, that is while more than NIO's high-water mark (64 KiB) waits for a tab that reads
    /// slowly, so that such a tab is never sent a growing backlog. Returns whether it was sent.
    @discardableResult
    public func sendUpdate(_ text: String) -> Bool {
        guard channel.isWritable else { return false }
        send(text)
        return true
    }

    /// Whether the socket takes more without queueing.
    public var isWritable: Bool { channel.isWritable }

    /// Closes the connection.
    public func close() { channel.close(promise: nil) }
}

/// An HTTP server with one WebSocket endpoint (`/ws`), on SwiftNIO: it serves the page's files, checks the token
/// (``WebAccess``) on every request and on the WebSocket handshake, and the handshake's `Origin`, and hands each
/// connected tab to the application as a ``WebClient``.
public final class WebServer: Sendable {
    /// Where it listens (with the port the system chose when 0 was asked).
    public let address: WebListenAddress
    /// The tabs that connect, one ``WebClient`` each.
    public let clients: AsyncStream<WebClient>
    private let channel: any Channel

    private init(address: WebListenAddress, clients: AsyncStream<WebClient>, channel: any Channel) {
        self.address = address
        self.clients = clients
        self.channel = channel
    }

    /// Starts listening.
    ///
    /// - Parameters:
    ///   - address: where.
    ///   - access: the token, when one is needed.
    ///   - files: the static files by path (``WebPage/files()``).
    ///   - dynamic: files made on request (a download of the current trace), by path; `nil` for unknown paths.
    public static func start(address: WebListenAddress, access: WebAccess, files: [String: WebFile],
                             dynamic: @escaping @Sendable (String) -> WebFile? = { _ in nil }) async throws -> WebServer {
        let (clients, sink) = AsyncStream.makeStream(of: WebClient.self)
        let counter = ClientCounter()
        let routes = Routes(access: access, files: files, dynamic: dynamic)
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                let upgrader = NIOWebSocketServerUpgrader(
                    maxFrameSize: 1 << 20,
                    shouldUpgrade: { channel, head in
                        channel.eventLoop.makeSucceededFuture(routes.allowsUpgrade(head) ? HTTPHeaders() : nil)
                    },
                    upgradePipelineHandler: { channel, _ in
                        channel.eventLoop.makeCompletedFuture {
                            let client = WebClient(id: counter.next(), channel: channel)
                            try channel.pipeline.syncOperations.addHandler(
                                NIOWebSocketFrameAggregator(minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: 256,
                                                            maxAccumulatedFrameSize: 1 << 20))
                            try channel.pipeline.syncOperations.addHandler(WebSocketHandler(client: client))
                            sink.yield(client)
                        }
                    })
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(
                        withServerUpgrade: (upgraders: [upgrader], completionHandler: { context in
                            context.pipeline.removeHandler(name: "ble-web-http", promise: nil)
                        }))
                    try channel.pipeline.syncOperations.addHandler(HTTPHandler(routes: routes), name: "ble-web-http")
                }
            }
        let channel = try await bootstrap.bind(host: address.host, port: address.port).get()
        let port = channel.localAddress?.port ?? address.port
        return WebServer(address: WebListenAddress(host: address.host, port: port), clients: clients, channel: channel)
    }

    /// Stops listening (tabs already connected stay until they close).
    public func close() async {
        try? await channel.close()
    }
}

/// Numbers the clients.
private final class ClientCounter: Sendable {
    private let value = Mutex(0)
    func next() -> Int {
        value.withLock { value in
            value += 1
            return value
        }
    }
}

/// What the server answers, given a request's head: pure, so that the HTTP handler only writes what it says.
struct Routes: Sendable {
    let access: WebAccess
    let files: [String: WebFile]
    let dynamic: @Sendable (String) -> WebFile?

    /// An answer: a status, headers and a body.
    struct Answer {
        var status: HTTPResponseStatus
        var headers: [(String, String)] = []
        var body: [UInt8] = []
    }

    /// Whether `Host` names this machine when no token protects the server: a page of another site whose name was
    /// made to point at 127.0.0.1 (DNS rebinding) has its own name in `Host`, and is refused.
    func hostAllowed(_ head: HTTPRequestHead) -> Bool {
        guard access.token == nil else { return true }
        guard let host = head.headers.first(name: "host") else { return false }
        let name: Substring
        if host.hasPrefix("[") {
            name = host.prefix { $0 != "]" }.dropFirst()
        } else {
            name = host.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        }
        return WebAccess.isLoopback(String(name))
    }

    func allowsUpgrade(_ head: HTTPRequestHead) -> Bool {
        WebAccess.split(head.uri).path == "/ws" && hostAllowed(head)
            && access.decide(uri: head.uri, cookies: head.headers["cookie"]) == .allowed
            && WebAccess.originMatches(origin: head.headers.first(name: "origin"), host: head.headers.first(name: "host"))
    }

    func answer(_ head: HTTPRequestHead) -> Answer {
        guard hostAllowed(head) else { return text(.forbidden, "403 Forbidden: this server answers only to a loopback Host\n") }
        switch access.decide(uri: head.uri, cookies: head.headers["cookie"]) {
        case .denied:
            return text(.unauthorized, "401 Unauthorized: open the address `ble web` printed (it carries ?token=...)\n")
        case .redirect(let location, let cookie):
            return Answer(status: .seeOther, headers: [("Location", location), ("Set-Cookie", cookie)])
        case .allowed:
            break
        }
        guard head.method == .GET || head.method == .HEAD else { return text(.methodNotAllowed, "405 Method Not Allowed\n") }
        let path = WebAccess.split(head.uri).path
        if path == "/ws" { return text(.forbidden, "403 Forbidden: a WebSocket must come from this server's page (Origin)\n") }
        guard let file = files[path] ?? dynamic(path) else { return text(.notFound, "404 Not Found\n") }
        var headers = [("Content-Type", file.contentType)]
        if let disposition = file.disposition { headers.append(("Content-Disposition", disposition)) }
        return Answer(status: .ok, headers: headers, body: file.bytes)
    }

    private func text(_ status: HTTPResponseStatus, _ message: String) -> Answer {
        Answer(status: status, headers: [("Content-Type", "text/plain; charset=utf-8")], body: Array(message.utf8))
    }
}

/// Answers plain HTTP requests as ``Routes`` says.
private final class HTTPHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let routes: Routes
    private var head: HTTPRequestHead?

    init(routes: Routes) {
        self.routes = routes
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
        case .body:
            break   // no request of the page has a body; it is not kept
        case .end:
            guard let head else { return }
            self.head = nil
            respond(context: context, head: head, answer: routes.answer(head))
        }
    }

    private func respond(context: ChannelHandlerContext, head: HTTPRequestHead, answer: Routes.Answer) {
        var headers = HTTPHeaders(answer.headers)
        headers.add(name: "Content-Length", value: "\(answer.body.count)")
        headers.add(name: "Cache-Control", value: "no-store")
        headers.add(name: "X-Content-Type-Options", value: "nosniff")
        headers.add(name: "X-Frame-Options", value: "DENY")
        headers.add(name: "Referrer-Policy", value: "no-referrer")
        headers.add(name: "Content-Security-Policy", value: "default-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
        let keepAlive = head.isKeepAlive
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: answer.status, headers: headers))), promise: nil)
        if head.method != .HEAD, !answer.body.isEmpty {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: answer.body)))), promise: nil)
        }
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            let channel = context.channel
            done.whenComplete { _ in channel.close(promise: nil) }
        }
    }
}

/// Carries a tab's WebSocket frames: text messages to its ``WebClient``, pings answered, close honoured.
private final class WebSocketHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let client: WebClient

    init(client: WebClient) {
        self.client = client
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text:
            var data = frame.unmaskedData
            client.sink.yield(data.readString(length: data.readableBytes) ?? "")
        case .ping:
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)), promise: nil)
        case .connectionClose:
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: context.channel.allocator.buffer(capacity: 0))))
                .whenComplete { _ in channel.close(promise: nil) }
        default:
            break   // binary frames and pongs: the page sends none that matter
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        client.sink.finish()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        client.sink.finish()
        context.close(promise: nil)
    }
}
