import ESPHomeAPI
import Testing

/// The DNS codec and the ESPHome mDNS responder as a machine: queries in, answers out.
@Suite struct MDNSTests {
    func responder() throws -> ESPHomeMDNSResponder {
        try ESPHomeMDNSResponder(name: "kitchen-proxy", port: 6053, addresses: [[192, 168, 1, 20]],
                                 txt: ["friendly_name=Kitchen", "mac=00115b000001", "api_encryption=Noise_NNpsk0_25519_ChaChaPoly_SHA256"])
    }

    /// A query as a browser sends it, the second question's name compressed (a pointer to the first's `local`).
    func browse() -> [UInt8] {
        var q: [UInt8] = [0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0]
        q += [11] + Array("_esphomelib".utf8) + [4] + Array("_tcp".utf8) + [5] + Array("local".utf8) + [0]
        q += [0, 12, 0, 1]                                     // PTR, IN
        q += [4] + Array("_foo".utf8) + [0xC0, 24]            // _foo + a pointer to "_tcp.local" (offset 24)
        q += [0, 12, 0, 1]
        return q
    }

    @Test func aBrowseIsAnsweredWithTheWholeService() throws {
        let r = try responder()
        let reply = try #require(r.answer(browse()))
        let message = try DNSMessage(bytes: reply)
        #expect(message.isResponse && message.isAuthoritative && message.id == 0 && message.questions.isEmpty)
        #expect(message.answers == [.init(name: "_esphomelib._tcp.local", data: .ptr("kitchen-proxy._esphomelib._tcp.local"), ttl: 120, cacheFlush: false)])
        #expect(message.additionals.contains(.init(name: "kitchen-proxy._esphomelib._tcp.local",
                                                   data: .srv(priority: 0, weight: 0, port: 6053, target: "kitchen-proxy.local"), ttl: 120, cacheFlush: true)))
        #expect(message.additionals.contains(.init(name: "kitchen-proxy.local", data: .a([192, 168, 1, 20]), ttl: 120, cacheFlush: true)))
        #expect(message.additionals.contains { if case .txt(let t) = $0.data { t.contains("mac=00115b000001") } else { false } })
    }

    @Test func theCompressedNameIsReadThroughItsPointer() throws {
        let query = try DNSMessage(bytes: browse())
        #expect(query.questions.map(\.name) == ["_esphomelib._tcp.local", "_foo._tcp.local"])
    }

    @Test func hostAndInstanceQueriesAndOthers() throws {
        let r = try responder()
        let host = try DNSMessage(questions: [.init(name: "KITCHEN-PROXY.local", type: .a)]).encoded()
        #expect(try DNSMessage(bytes: try #require(r.answer(host))).answers.map(\.data) == [.a([192, 168, 1, 20])])
        let srv = try DNSMessage(questions: [.init(name: "kitchen-proxy._esphomelib._tcp.local", type: .srv)]).encoded()
        #expect(try DNSMessage(bytes: try #require(r.answer(srv))).answers.map(\.data)
            == [.srv(priority: 0, weight: 0, port: 6053, target: "kitchen-proxy.local")])
        let other = try DNSMessage(questions: [.init(name: "_hap._tcp.local", type: .ptr)]).encoded()
        #expect(r.answer(other) == nil)
        // A response is never answered (the responder hears its own announcements).
        #expect(r.answer(try r.announcement()) == nil)
    }

    @Test func legacyUnicastEchoesTheQuery() throws {
        let r = try responder()
        let query = try DNSMessage(id: 0x1234, questions: [.init(name: "_esphomelib._tcp.local", type: .ptr)]).encoded()
        let reply = try DNSMessage(bytes: try #require(r.answer(query, legacyUnicast: true)))
        #expect(reply.id == 0x1234 && reply.questions.count == 1)
        #expect(reply.answers.allSatisfy { !$0.cacheFlush && $0.ttl <= 10 })
    }

    @Test func announcementAndGoodbye() throws {
        let r = try responder()
        let hello = try DNSMessage(bytes: try r.announcement())
        #expect(hello.answers.count == 4 && hello.answers.allSatisfy { $0.ttl == 120 })
        let goodbye = try DNSMessage(bytes: try r.announcement(goodbye: true))
        #expect(goodbye.answers.count == 4 && goodbye.answers.allSatisfy { $0.ttl == 0 })
    }

    @Test(arguments: [
        [0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xC0, 12, 0, 12, 0, 1],    // a pointer to itself
        [0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 5, 0x61],                  // a label cut short
        [0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x40, 0, 0, 1, 0, 1],      // a reserved label kind
        [0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 9, 1], // record data past the end
        [0, 0, 0],
    ] as [[UInt8]])
    func malformedMessagesThrowAndAreNotAnswered(_ bytes: [UInt8]) throws {
        #expect(throws: ESPHomeAPIError.self) { try DNSMessage(bytes: bytes) }
        #expect(try responder().answer(bytes) == nil)
    }

    @Test func aNameThatIsNotOneLabelIsRefused() {
        #expect(throws: ESPHomeAPIError.self) { try ESPHomeMDNSResponder(name: "a.b", port: 1, addresses: [], txt: []) }
        #expect(throws: ESPHomeAPIError.self) { try ESPHomeMDNSResponder(name: String(repeating: "x", count: 64), port: 1, addresses: [], txt: []) }
    }
}
