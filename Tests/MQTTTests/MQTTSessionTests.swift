import MQTT
import Testing

/// The session machine, driven synchronously with injected time: bytes in, actions out.
@Suite struct MQTTSessionTests {
    /// The packets a list of actions sends.
    func sent(_ actions: [MQTTSession.Action]) -> [MQTTPacket] {
        actions.compactMap { if case .send(let bytes) = $0 { try? MQTTPacket(bytes: bytes) } else { nil } }
    }

    func events(_ actions: [MQTTSession.Action]) -> [MQTTSession.Event] {
        actions.compactMap { if case .event(let e) = $0 { e } else { nil } }
    }

    func closes(_ actions: [MQTTSession.Action]) -> Bool { actions.contains(.close) }

    func connected(_ configuration: MQTTSession.Configuration = .init(clientID: "gw", keepAlive: 10), at now: Duration = .zero,
                   present: Bool = false) -> MQTTSession {
        var session = MQTTSession(configuration)
        _ = session.connectionOpened(now: now)
        let actions = session.received(MQTTPacket.connack(sessionPresent: present, returnCode: .accepted).encoded(), now: now)
        #expect(events(actions).first == .connected(sessionPresent: present))
        return session
    }

    func publish(_ session: inout MQTTSession, _ topic: String, qos: MQTTQoS = .atLeastOnce, at now: Duration = .zero) throws -> (UInt64, [MQTTSession.Action]) {
        let r = try session.publish(MQTTMessage(topic: topic, text: topic, qos: qos), now: now)
        return (r.number, r.actions)
    }

    @Test func connectSendsConnectAndTheAnswerDecides() {
        let will = MQTTMessage(topic: "p/gw/status", text: "offline", qos: .atLeastOnce, retain: true)
        var session = MQTTSession(.init(clientID: "gw", cleanSession: false, keepAlive: 30, will: will, userName: "u", password: [1]))
        let opening = session.connectionOpened(now: .zero)
        #expect(sent(opening) == [.connect(.init(clientID: "gw", cleanSession: false, keepAlive: 30, will: will, userName: "u", password: [1]))])
        #expect(session.state == .connecting)
        let refused = session.received(MQTTPacket.connack(sessionPresent: false, returnCode: .badUserNameOrPassword).encoded(), now: .zero)
        #expect(closes(refused))
        #expect(events(refused) == [.refused(.badUserNameOrPassword)])
        #expect(session.state == .disconnected)
    }

    @Test func noConnackInTimeClosesTheConnection() {
        var session = MQTTSession(.init(clientID: "gw", connectTimeout: .seconds(5)))
        _ = session.connectionOpened(now: .seconds(100))
        #expect(session.nextDeadline == .seconds(105))
        #expect(session.tick(now: .seconds(104)).isEmpty)
        let late = session.tick(now: .seconds(105))
        #expect(closes(late))
        #expect(session.state == .disconnected)
    }

    @Test func qos0IsDeliveredWhenWrittenQos1WhenAcknowledged() throws {
        var session = connected()
        let (zero, a) = try publish(&session, "a", qos: .atMostOnce)
        #expect(sent(a).count == 1)
        #expect(events(a) == [.delivered(zero)])
        let (one, b) = try publish(&session, "b")
        guard case .publish(let p) = sent(b).first, let id = p.packetID else { Issue.record("no PUBLISH"); return }
        #expect(!p.duplicate)
        #expect(events(b).isEmpty, "not delivered until PUBACK")
        #expect(session.inFlightCount == 1)
        #expect(events(session.received(MQTTPacket.puback(packetID: id).encoded(), now: .zero)) == [.delivered(one)])
        #expect(session.inFlightCount == 0)
        #expect(session.received(MQTTPacket.puback(packetID: id).encoded(), now: .zero).isEmpty, "a second PUBACK changes nothing")
    }

    /// The connection drops with messages unacknowledged and more published meanwhile: after the next CONNACK the
    /// unacknowledged go again first (DUP), then the queued in order; nothing is lost.
    @Test func unacknowledgedMessagesGoAgainAfterReconnectionThenTheQueue() throws {
        var session = connected()
        let (first, _) = try publish(&session, "r/1")
        let (second, _) = try publish(&session, "r/2")
        #expect(events(session.connectionClosed(reason: "broker stopped")) == [.connectionLost("broker stopped")])
        let (third, whileDown) = try publish(&session, "r/3")
        #expect(sent(whileDown).isEmpty)
        #expect(session.queuedCount == 1)
        _ = session.connectionOpened(now: .seconds(1))
        let back = session.received(MQTTPacket.connack(sessionPresent: true, returnCode: .accepted).encoded(), now: .seconds(1))
        let publishes = sent(back).compactMap { if case .publish(let p) = $0 { p } else { nil } }
        #expect(publishes.map(\.message.topic) == ["r/1", "r/2", "r/3"])
        #expect(publishes.map(\.duplicate) == [true, true, false])
        var delivered: [UInt64] = []
        for p in publishes.reversed() {
            for case .delivered(let n) in events(session.received(MQTTPacket.puback(packetID: p.packetID ?? 0).encoded(), now: .seconds(1))) {
                delivered.append(n)
            }
        }
        #expect(Set(delivered) == [first, second, third])
    }

    @Test func theQueueIsBoundedOldestDroppedAndCounted() throws {
        var session = MQTTSession(.init(clientID: "gw", queueLimit: 3))
        var numbers: [UInt64] = []
        var dropped: [UInt64] = []
        for i in 0..<5 {
            let (n, actions) = try publish(&session, "q/\(i)")
            numbers.append(n)
            for case .dropped(let d) in events(actions) { dropped += d }
        }
        #expect(dropped == Array(numbers.prefix(2)))
        #expect(session.droppedCount == 2)
        _ = session.connectionOpened(now: .zero)
        let up = session.received(MQTTPacket.connack(sessionPresent: false, returnCode: .accepted).encoded(), now: .zero)
        #expect(sent(up).compactMap { if case .publish(let p) = $0 { p.message.topic } else { nil } } == ["q/2", "q/3", "q/4"])
    }

    @Test func aLongQueueDrainsInOrderThroughTheWindow() throws {
        // Past the point where the queue cuts off what went (64 taken), in order, every message once, drops counted.
        var session = MQTTSession(.init(clientID: "gw", maximumInFlight: 8, queueLimit: 300))
        for i in 0..<400 { _ = try publish(&session, "l/\(i)") }
        #expect(session.droppedCount == 100 && session.queuedCount == 300)
        _ = session.connectionOpened(now: .zero)
        var topics: [String] = []
        var pending = sent(session.received(MQTTPacket.connack(sessionPresent: false, returnCode: .accepted).encoded(), now: .zero))
        while !pending.isEmpty {
            var next: [MQTTPacket] = []
            for case .publish(let p) in pending {
                topics.append(p.message.topic)
                next += sent(session.received(MQTTPacket.puback(packetID: p.packetID ?? 0).encoded(), now: .zero))
            }
            pending = next
        }
        #expect(topics == (100..<400).map { "l/\($0)" })
        #expect(session.queuedCount == 0 && session.inFlightCount == 0)
    }

    @Test func theInFlightWindowHoldsBackTheRest() throws {
        var session = connected(.init(clientID: "gw", maximumInFlight: 2))
        var ids: [UInt16] = []
        for i in 0..<3 {
            let (_, actions) = try publish(&session, "w/\(i)")
            ids += sent(actions).compactMap { if case .publish(let p) = $0 { p.packetID } else { nil } }
        }
        #expect(ids.count == 2)
        #expect(session.queuedCount == 1)
        let more = session.received(MQTTPacket.puback(packetID: ids[0]).encoded(), now: .zero)
        #expect(sent(more).compactMap { if case .publish(let p) = $0 { p.message.topic } else { nil } } == ["w/2"])
    }

    @Test func keepAlivePingsAndGivesUpWithoutAnAnswer() throws {
        var session = connected(.init(clientID: "gw", keepAlive: 10))
        #expect(session.tick(now: .milliseconds(9_999)).isEmpty)
        #expect(sent(session.tick(now: .seconds(10))) == [.pingreq])
        #expect(session.tick(now: .seconds(15)).isEmpty, "one ping outstanding")
        _ = session.received(MQTTPacket.pingresp.encoded(), now: .seconds(15))
        // Sending anything counts as activity: a publish at 18 s moves the next ping to 28 s.
        _ = try publish(&session, "x", qos: .atMostOnce, at: .seconds(18))
        #expect(session.tick(now: .seconds(27)).isEmpty)
        #expect(sent(session.tick(now: .seconds(28))) == [.pingreq])
        #expect(session.nextDeadline == .seconds(38))
        let dead = session.tick(now: .seconds(38))
        #expect(closes(dead))
        #expect(session.state == .disconnected)
    }

    @Test func incomingQoS1IsAcknowledgedQoS2DeliveredOnce() {
        var session = connected()
        let message = MQTTMessage(topic: "cmd", text: "go", qos: .atLeastOnce)
        let one = session.received(MQTTPacket.publish(.init(message: message, packetID: 7)).encoded(), now: .zero)
        #expect(events(one) == [.message(message)])
        #expect(sent(one) == [.puback(packetID: 7)])
        var twice = message
        twice.qos = .exactlyOnce
        let first = session.received(MQTTPacket.publish(.init(message: twice, packetID: 8)).encoded(), now: .zero)
        #expect(events(first) == [.message(twice)])
        #expect(sent(first) == [.pubrec(packetID: 8)])
        let again = session.received(MQTTPacket.publish(.init(message: twice, packetID: 8, duplicate: true)).encoded(), now: .zero)
        #expect(events(again).isEmpty, "the same identifier before PUBREL: not delivered twice")
        #expect(sent(again) == [.pubrec(packetID: 8)])
        #expect(sent(session.received(MQTTPacket.pubrel(packetID: 8).encoded(), now: .zero)) == [.pubcomp(packetID: 8)])
    }

    @Test func subscriptionsAreAnsweredByToken() throws {
        var session = connected()
        let (token, actions) = try session.subscribe([("p/gw/command", .atLeastOnce), ("p/+/status", .atMostOnce)], now: .zero)
        guard case .subscribe(let id, let filters) = sent(actions).first else { Issue.record("no SUBSCRIBE"); return }
        #expect(filters.map(\.filter) == ["p/gw/command", "p/+/status"])
        let answer = session.received(MQTTPacket.suback(packetID: id, granted: [.atLeastOnce, nil]).encoded(), now: .zero)
        #expect(events(answer) == [.subscribed(token: token, granted: [.atLeastOnce, nil])])
        let (off, offActions) = try session.unsubscribe(["p/+/status"], now: .zero)
        guard case .unsubscribe(let offID, _) = sent(offActions).first else { Issue.record("no UNSUBSCRIBE"); return }
        #expect(events(session.received(MQTTPacket.unsuback(packetID: offID).encoded(), now: .zero)) == [.unsubscribed(token: off)])
        #expect(throws: MQTTSession.UsageError.self) { try session.subscribe([("a/#/b", .atMostOnce)], now: .zero) }
    }

    @Test func aServerThatBreaksTheProtocolIsLeft() {
        for bad in [MQTTPacket.subscribe(packetID: 1, filters: [("a", .atMostOnce)]).encoded(),
                    MQTTPacket.connack(sessionPresent: false, returnCode: .accepted).encoded(),
                    [0x00, 0x00], [0x36, 0x03, 0x00, 0x01, 0x61]] {
            var session = connected()
            let actions = session.received(bad, now: .zero)
            #expect(closes(actions), "\(bad)")
            #expect(session.state == .disconnected)
        }
    }

    @Test func publishingRefusesWhatCannotBeSent() {
        var session = connected()
        #expect(throws: MQTTSession.UsageError.self) { try session.publish(MQTTMessage(topic: "a/+", text: "x"), now: .zero) }
        #expect(throws: MQTTSession.UsageError.self) { try session.publish(MQTTMessage(topic: "", text: "x"), now: .zero) }
        #expect(throws: MQTTSession.UsageError.self) { try session.publish(MQTTMessage(topic: "a/#", text: "x"), now: .zero) }
        // Section 1.5.3: no U+0000 in a UTF-8 string of MQTT (the broker would close the connection).
        #expect(throws: MQTTSession.UsageError.self) { try session.publish(MQTTMessage(topic: "a/\u{0}b", text: "x"), now: .zero) }
        // A character of more than one octet holds no ASCII octet: names in other scripts pass.
        #expect(throws: Never.self) { try session.publish(MQTTMessage(topic: "caf\u{E9}/\u{1F600}/r\u{E9}sum\u{E9}", text: "x"), now: .zero) }
    }

    /// A batch is what one publish after another would have been: the same bytes in the same order, the same
    /// numbers, the same refusals and drops; with a window of two and a queue of three, and before a connection.
    @Test func aBatchPublishesAsOneCallAfterAnotherWould() {
        let configuration = MQTTSession.Configuration(clientID: "gw", keepAlive: 10, maximumInFlight: 2, queueLimit: 3)
        var messages: [MQTTMessage] = []
        for n in 0..<9 {
            let qos: MQTTQoS = n % 3 == 2 ? .atMostOnce : .atLeastOnce
            messages.append(MQTTMessage(topic: n == 4 ? "bad/+" : "t/\(n)", text: "payload \(n)", qos: qos, retain: n == 1))
        }
        func bytes(_ actions: [MQTTSession.Action]) -> [UInt8] {
            actions.flatMap { action -> [UInt8] in if case .send(let b) = action { b } else { [] } }
        }
        func drops(_ actions: [MQTTSession.Action]) -> [UInt64] {
            events(actions).flatMap { event -> [UInt64] in if case .dropped(let numbers) = event { numbers } else { [] } }
        }
        for connectedFirst in [true, false] {
            var one = connectedFirst ? connected(configuration) : MQTTSession(configuration)
            var batch = one
            var numbers: [UInt64?] = []
            var actions: [MQTTSession.Action] = []
            for message in messages {
                let result = try? one.publish(message, now: .seconds(1))
                numbers.append(result?.number)
                actions += result?.actions ?? []
            }
            let batched = batch.publish(contentsOf: messages, now: .seconds(1))
            #expect(batched.numbers == numbers)
            #expect(numbers[4] == nil, "the wildcard is refused")
            #expect(bytes(batched.actions) == bytes(actions))
            #expect(drops(batched.actions) == drops(actions))
            #expect(batch.droppedCount == one.droppedCount && batch.queuedCount == one.queuedCount)
            if connectedFirst {
                // QoS 0 goes at once; two QoS 1 fill the window; the queue keeps three; the rest were dropped.
                #expect(!bytes(actions).isEmpty && one.droppedCount > 0, "the case exercises sends and drops")
            } else {
                #expect(bytes(actions).isEmpty && one.queuedCount == 3)
            }
        }
    }

    @Test func aCleanDisconnectSaysDisconnect() {
        var session = connected()
        let actions = session.disconnect(now: .zero)
        #expect(sent(actions) == [.disconnect])
        #expect(closes(actions))
        #expect(session.state == .disconnected)
    }
}
