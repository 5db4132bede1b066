import BLEWeb
import Foundation
import NIOCore
import NIOPosix
import Testing

/// The SwiftNIO server over real TCP on loopback: the token on plain requests and on the WebSocket handshake, the
/// Origin check, and a tab's messages both ways.
@Suite struct WebServerTests {
    static let token = "test-token-abcdefghijklmnop"
    static let files = ["/": WebFile(contentType: "text/html; charset=utf-8", bytes: Array("<p>page</p>".utf8))]

    /// Sends `request` and returns everything the server wrote until it closed (or 3 s passed).
    func exchange(_ port: Int, _ request: String) async throws -> String {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel) }
            }
        return try await channel.executeThenClose { inbound, outbound in
            try await outbound.write(ByteBuffer(string: request))
            var text = ""
            for try await var chunk in inbound {
                text += chunk.readString(length: chunk.readableBytes) ?? ""
                // One whole response: the head, then Content-Length bytes of body.
                guard let end = text.range(of: "\r\n\r\n") else { continue }
                let head = text[..<end.lowerBound]
                let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                if text[end.upperBound...].utf8.count >= length { break }
            }
            return text
        }
    }

    func get(_ path: String, port: Int, headers: String = "") -> String {
        "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\(headers)\r\n"
    }

    func upgrade(port: Int, origin: String, cookie: String?) -> String {
        "GET /ws HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nOrigin: \(origin)\r\n"
            + (cookie.map { "Cookie: \($0)\r\n" } ?? "") + "\r\n"
    }

    @Test func theTokenGuardsEveryRequest() async throws {
        let server = try await WebServer.start(address: WebListenAddress(host: "127.0.0.1", port: 0), access: WebAccess(token: Self.token),
                                               files: Self.files)
        defer { Task { await server.close() } }
        let port = server.address.port
        let denied = try await exchange(port, get("/", port: port))
        #expect(denied.hasPrefix("HTTP/1.1 401"))
        #expect(!denied.contains(Self.token))
        let redirected = try await exchange(port, get("/?token=\(Self.token)", port: port))
        #expect(redirected.hasPrefix("HTTP/1.1 303"))
        #expect(redirected.contains("Set-Cookie: ble_web_token=\(Self.token); Path=/; HttpOnly; SameSite=Strict"))
        #expect(redirected.contains("Location: /\r\n"))
        let page = try await exchange(port, get("/", port: port, headers: "Cookie: ble_web_token=\(Self.token)\r\n"))
        #expect(page.hasPrefix("HTTP/1.1 200"))
        #expect(page.hasSuffix("<p>page</p>"))
        let missing = try await exchange(port, get("/nothing", port: port, headers: "Cookie: ble_web_token=\(Self.token)\r\n"))
        #expect(missing.hasPrefix("HTTP/1.1 404"))
        // The WebSocket handshake: without the cookie 401, from another origin 403, from the page 101.
        let noCookie = try await exchange(port, upgrade(port: port, origin: "http://127.0.0.1:\(port)", cookie: nil))
        #expect(noCookie.hasPrefix("HTTP/1.1 401"))
        let otherSite = try await exchange(port, upgrade(port: port, origin: "http://evil.example", cookie: "ble_web_token=\(Self.token)"))
        #expect(otherSite.hasPrefix("HTTP/1.1 403"))
    }

    @Test func aTabTalksOverTheWebSocket() async throws {
        let server = try await WebServer.start(address: WebListenAddress(host: "127.0.0.1", port: 0), access: WebAccess(token: nil),
                                               files: Self.files)
        defer { Task { await server.close() } }
        let port = server.address.port
        // Without a token, a Host that is not loopback (a rebound DNS name) is refused.
        let rebound = try await exchange(port, "GET / HTTP/1.1\r\nHost: evil.example:\(port)\r\nConnection: close\r\n\r\n")
        #expect(rebound.hasPrefix("HTTP/1.1 403"))
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel) }
            }
        try await channel.executeThenClose { inbound, outbound in
            try await outbound.write(ByteBuffer(string: upgrade(port: port, origin: "http://127.0.0.1:\(port)", cookie: nil)))
            var iterator = inbound.makeAsyncIterator()
            var head = ""
            while !head.contains("\r\n\r\n"), var chunk = try await iterator.next() { head += chunk.readString(length: chunk.readableBytes) ?? "" }
            #expect(head.hasPrefix("HTTP/1.1 101"))
            // A masked text frame "hi" from the tab.
            let mask: [UInt8] = [1, 2, 3, 4]
            let payload = Array("hi".utf8).enumerated().map { $0.element ^ mask[$0.offset % 4] }
            try await outbound.write(ByteBuffer(bytes: [0x81, 0x80 | 2] + mask + payload))
            var clients = server.clients.makeAsyncIterator()
            let client = try #require(await clients.next())
            var messages = client.messages.makeAsyncIterator()
            #expect(await messages.next() == "hi")
            client.send("hello")
            var frame: [UInt8] = []
            while frame.count < 7, var chunk = try await iterator.next() { frame += chunk.readBytes(length: chunk.readableBytes) ?? [] }
            #expect(frame == [0x81, 5] + Array("hello".utf8))
        }
    }

    @Test func thePageIsBundled() throws {
        let files = try WebPage.files()
        #expect(Set(files.keys) == ["/", "/app.js", "/style.css"])
        let index = String(decoding: files["/"]?.bytes ?? [], as: UTF8.self)
        #expect(index.contains("<script src=\"/app.js\">"))
    }
}
