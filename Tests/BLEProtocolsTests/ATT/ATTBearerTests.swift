import BLEProtocols
import BLEWire
import Testing

/// The ATT bearer, driven synchronously: a client bearer played against a server bearer whose requests the
/// ``ATTServer`` answers, malformed responses, timers fired by hand.
@Suite struct ATTBearerTests {
    static let database = GATTDatabase(deviceName: "Bearer", services: [
        GATTServiceDefinition(uuid: 0x180F, characteristics: [
            GATTCharacteristicDefinition(uuid: 0x2A19, properties: [.read, .notify, .indicate], value: [87]),
        ]),
    ], caching: false)

    /// Two bearers and a server database, with the actions' effects recorded.
    struct Pair {
        var client = ATTBearer()
        var server = ATTBearer()
        var database = ATTBearerTests.database
        var connection = ATTServerConnection()
        var completed: [ATTBearer.RequestID: Result<ATTPDU, GATTError>] = [:]
        var confirmed: [ATTBearer.IndicationID] = []
        var indications: [[UInt8]] = []
        var wire: [(toServer: Bool, bytes: [UInt8])] = []
        var timers: Set<ATTBearer.Timer> = []
        /// When false, the server's requests wait for `answerServed()`.
        var serverAnswersAtOnce = true
        var served: [[UInt8]] = []

        mutating func apply(_ actions: [ATTBearer.Action], fromClient: Bool) {
            for action in actions {
                switch action {
                case .send(let bytes): wire.append((fromClient, bytes))
                case .startTimer(let t, _): timers.insert(t)
                case .cancelTimer(let t): timers.remove(t)
                case .complete(let id, let result): completed[id] = result
                case .confirmed(let id, let result): if case .success = result { confirmed.append(id) }
                case .indication(_, let value): indications.append(value)
                case .notification: break
                case .serve(let bytes):
                    if serverAnswersAtOnce {
                        let output = ATTServer.handle(bytes, connection: &connection, database: &database)
                        if ATTOpcode(rawValue: bytes.first ?? 0).isCommand { continue }
                        apply(server.respond(output.response), fromClient: false)
                    } else {
                        served.append(bytes)
                    }
                }
            }
        }

        /// Delivers everything on the wire until it is quiet.
        mutating func run() {
            while !wire.isEmpty {
                let (toServer, bytes) = wire.removeFirst()
                if toServer { apply(server.receive(bytes), fromClient: false) } else { apply(client.receive(bytes), fromClient: true) }
            }
        }

        mutating func request(_ pdu: ATTPDU) -> ATTBearer.RequestID {
            let (id, actions) = client.request(pdu)
            apply(actions, fromClient: true)
            return id
        }
    }

    @Test func requestsGoOutOneAtATimeAndAreMatchedToTheirResponses() throws {
        var pair = Pair()
        let mtu = pair.request(.exchangeMTURequest(.init(mtu: 185)))
        let read = pair.request(.readRequest(.init(handle: 0x000C)))
        // Only the first is on the wire; the second waits for its response.
        #expect(pair.wire.count == 1 && pair.client.queuedRequestCount == 1 && pair.timers == [.request])
        pair.run()
        #expect(try pair.completed[mtu]?.get() == .exchangeMTUResponse(.init(mtu: 517)))
        #expect(try pair.completed[read]?.get() == .readResponse(.init(value: [87])))
        #expect(!pair.client.hasOutstandingRequest && pair.timers.isEmpty)
        // An Error Response for the request's opcode is the request's answer, not a bearer failure.
        let missing = pair.request(.readRequest(.init(handle: 0x0040)))
        pair.run()
        #expect(try pair.completed[missing]?.get() == .errorResponse(.init(requestOpcode: .readRequest, handle: 0x0040, error: .invalidHandle)))
    }

    @Test func malformedAndUnsolicitedResponsesFailOnlyTheirRequest() {
        var client = ATTBearer()
        // A response nobody asked for is dropped.
        #expect(client.receive(ATTPDU.readResponse(.init(value: [1])).encoded).isEmpty)
        // A response of another request's type fails the request as malformed, and the next request goes out.
        let (first, _) = client.request(.readRequest(.init(handle: 3)))
        let (second, _) = client.request(.readRequest(.init(handle: 4)))
        var actions = client.receive(ATTPDU.writeResponse(.init()).encoded)
        #expect(actions.contains(.complete(first, .failure(GATTError(.malformedResponse, "")))))
        #expect(actions.contains(.send(ATTPDU.readRequest(.init(handle: 4)).encoded)))
        // An Error Response naming another opcode fails the request too.
        actions = client.receive(ATTPDU.errorResponse(.init(requestOpcode: .writeRequest, handle: 4, error: .invalidHandle)).encoded)
        #expect(actions.contains(.complete(second, .failure(GATTError(.malformedResponse, "")))))
        // An undecodable response (Read By Type Response with a zero entry length).
        let (third, _) = client.request(.readByTypeRequest(.init(range: .init(start: 1, end: 0xFFFF), type: 0x2803)))
        actions = client.receive([0x09, 0x00])
        #expect(actions.contains(.complete(third, .failure(GATTError(.malformedResponse, "")))))
        #expect(client.closedReason == nil)
    }

    @Test func aTransactionTimeoutClosesTheBearerAndNothingElse() {
        var client = ATTBearer(transactionTimeout: .seconds(30))
        let (first, start) = client.request(.readRequest(.init(handle: 3)))
        #expect(start.contains(.startTimer(.request, .seconds(30))))
        let (queued, _) = client.request(.readRequest(.init(handle: 4)))
        let actions = client.timerFired(.request)
        #expect(actions.contains(.complete(first, .failure(GATTError(.timeout, "")))))
        #expect(actions.contains(.complete(queued, .failure(GATTError(.timeout, "")))))
        // The bearer ends; the link is not its to end (Core 5.4, Vol 3, Part F, 3.3.3): no action asks for it.
        #expect(actions.allSatisfy { if case .complete = $0 { true } else if case .cancelTimer = $0 { true } else { false } })
        #expect(client.closedReason?.code == .timeout)
        // Nothing more goes out or comes in on this bearer.
        let (late, after) = client.request(.readRequest(.init(handle: 5)))
        #expect(after == [.complete(late, .failure(GATTError(.timeout, "")))])
        #expect(client.receive(ATTPDU.readResponse(.init(value: [1])).encoded).isEmpty)
        #expect(client.receive(ATTPDU.readRequest(.init(handle: 1)).encoded).isEmpty)
        // A stale timer does nothing.
        #expect(client.timerFired(.request).isEmpty)
    }

    @Test func oneIndicationAtATimeEachConfirmed() {
        var pair = Pair()
        // The client subscribes to indications of the battery level (CCCD 0x000D).
        _ = pair.request(.writeRequest(.init(handle: 0x000D, value: [0x02, 0x00])))
        pair.run()
        let (a, first) = pair.server.indicate(handle: 0x000C, value: [1])
        let (b, second) = pair.server.indicate(handle: 0x000C, value: [2])
        #expect(second.isEmpty, "the second indication waits for the first confirmation")
        pair.apply(first + second, fromClient: false)
        #expect(pair.server.hasOutstandingIndication)
        pair.run()
        #expect(pair.indications == [[1], [2]])
        #expect(pair.confirmed == [a, b])
        #expect(!pair.server.hasOutstandingIndication && pair.timers.isEmpty)
        // A confirmation nobody waits for is ignored.
        #expect(pair.server.receive([0x1E]).isEmpty)
    }

    @Test func anUnconfirmedIndicationTimesOut() {
        var server = ATTBearer()
        let (id, _) = server.indicate(handle: 0x000C, value: [1])
        let (queued, _) = server.indicate(handle: 0x000C, value: [2])
        let actions = server.timerFired(.indication)
        #expect(actions.contains(.confirmed(id, .failure(GATTError(.timeout, "")))))
        #expect(actions.contains(.confirmed(queued, .failure(GATTError(.timeout, "")))))
        #expect(!actions.contains { if case .send = $0 { true } else { false } })
        #expect(server.closedReason?.code == .timeout)
    }

    @Test func peerRequestsAreServedOneAtATimeInOrder() {
        var server = ATTBearer()
        let read = ATTPDU.readRequest(.init(handle: 3)).encoded
        let write = ATTPDU.writeRequest(.init(handle: 3, value: [9])).encoded
        let command = ATTPDU.writeCommand(.init(handle: 3, value: [7])).encoded
        #expect(server.receive(read) == [.serve(read)])
        // A pipelined request waits; a command does not.
        #expect(server.receive(write).isEmpty)
        #expect(server.receive(command) == [.serve(command)])
        // Answering the first (later, as an application may) sends it and hands up the second.
        #expect(server.respond(ATTPDU.readResponse(.init(value: [1])).encoded) == [.send(ATTPDU.readResponse(.init(value: [1])).encoded), .serve(write)])
        #expect(server.respond(ATTPDU.writeResponse(.init()).encoded) == [.send(ATTPDU.writeResponse(.init()).encoded)])
        // An answer with nothing being served is ignored.
        #expect(server.respond([0x13]).isEmpty)
        // Empty PDUs are dropped.
        #expect(server.receive([]).isEmpty)
    }

    @Test func closingFailsEverythingOutstanding() {
        var bearer = ATTBearer()
        let (request, _) = bearer.request(.readRequest(.init(handle: 3)))
        let (queued, _) = bearer.request(.readRequest(.init(handle: 4)))
        let (indication, _) = bearer.indicate(handle: 3, value: [1])
        let gone = GATTError(.disconnected, "the link went down")
        let actions = bearer.close(gone)
        #expect(actions.contains(.complete(request, .failure(gone))))
        #expect(actions.contains(.complete(queued, .failure(gone))))
        #expect(actions.contains(.confirmed(indication, .failure(gone))))
        #expect(bearer.close(gone).isEmpty)
    }

    @Test func notificationsAndIndicationsAreDeliveredAndIndicationsConfirmed() {
        var client = ATTBearer()
        #expect(client.receive(ATTPDU.handleValueNotification(.init(handle: 0x0C, value: [5])).encoded) == [.notification(handle: 0x0C, value: [5])])
        #expect(client.receive(ATTPDU.handleValueIndication(.init(handle: 0x0C, value: [6])).encoded)
                == [.indication(handle: 0x0C, value: [6]), .send([0x1E])])
        // Truncated ones are dropped.
        #expect(client.receive([0x1B, 0x0C]).isEmpty)
        #expect(client.receive([0x1D]).isEmpty)
    }
}
