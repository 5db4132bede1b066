/// The client side of an MQTT 3.1.1 session as a machine without I/O, clocks or tasks: the driver hands it what
/// happened (the connection opened, bytes arrived, time passed, the connection dropped, the application asked for
/// something) with the current time, and carries out the ``Action``s it returns (send bytes, close the connection,
/// report events). It is tested synchronously with injected time.
///
/// What it keeps across connections is what MQTT's at-least-once delivery needs: messages published with QoS 1 that
/// the server has not acknowledged are sent again (DUP set) after the next CONNACK; messages published while no
/// connection is up wait in a bounded queue (the oldest dropped first when it is full, and counted) and go out in
/// order once connected. Received QoS 2 messages are delivered once (their identifiers kept until PUBREL).
/// QoS 2 *publishing* is not offered (``publish(_:now:)`` sends QoS 2 requests as QoS 1).
public struct MQTTSession: Sendable {
    /// How the session connects.
    public struct Configuration: Sendable {
        /// The client identifier.
        public var clientID: String
        /// Start a new session on each connection (true) or resume the server's (false). Section 3.1.2.4.
        public var cleanSession: Bool
        /// Keep-alive in seconds (0: off). A PINGREQ goes out after this long without sending, and the connection
        /// is given up when no PINGRESP comes within the same time again. Section 3.1.2.10.
        public var keepAlive: UInt16
        /// The Will: what the server publishes when the client goes away without DISCONNECT.
        public var will: MQTTMessage?
        /// The user name.
        public var userName: String?
        /// The password.
        public var password: [UInt8]?
        /// How long to wait for CONNACK.
        public var connectTimeout: Duration
        /// How many QoS 1 messages may await PUBACK at once; more wait in the queue.
        public var maximumInFlight: Int
        /// How many messages may wait (not connected, or beyond the in-flight window); beyond it the oldest go.
        public var queueLimit: Int

        /// Creates a configuration.
        public init(clientID: String, cleanSession: Bool = true, keepAlive: UInt16 = 60, will: MQTTMessage? = nil,
                    userName: String? = nil, password: [UInt8]? = nil, connectTimeout: Duration = .seconds(10),
                    maximumInFlight: Int = 64, queueLimit: Int = 10_000) {
            self.clientID = clientID
            self.cleanSession = cleanSession
            self.keepAlive = keepAlive
            self.will = will
            self.userName = userName
            self.password = password
            self.connectTimeout = connectTimeout
            self.maximumInFlight = max(1, maximumInFlight)
            self.queueLimit = max(1, queueLimit)
        }
    }

    /// Where the session is.
    public enum State: Sendable, Hashable {
        /// No connection.
        case disconnected
        /// CONNECT sent, waiting for CONNACK.
        case connecting
        /// CONNACK accepted.
        case connected
    }

    /// Something the application hears about.
    public enum Event: Sendable, Hashable {
        /// The server accepted the connection.
        case connected(sessionPresent: Bool)
        /// The server refused the connection (the connection is closed).
        case refused(MQTTConnectReturnCode)
        /// A message arrived on a subscription.
        case message(MQTTMessage)
        /// A message handed to ``publish(_:now:)`` has gone out: QoS 0 written to the connection, QoS 1 acknowledged
        /// by the server (PUBACK). Carries the number ``publish(_:now:)`` returned.
        case delivered(UInt64)
        /// Messages dropped from the full queue (oldest first), with their numbers.
        case dropped([UInt64])
        /// The server answered a subscription: per filter the granted QoS or `nil` (refused).
        case subscribed(token: UInt64, granted: [MQTTQoS?])
        /// The server confirmed an unsubscription.
        case unsubscribed(token: UInt64)
        /// The connection is gone (the reason says why); queued and unacknowledged messages are kept.
        case connectionLost(String)
    }

    /// What the driver must do.
    public enum Action: Sendable, Hashable {
        /// Write these bytes to the connection.
        case send([UInt8])
        /// Close the connection (after sending what came before).
        case close
        /// Tell the application.
        case event(Event)
    }

    /// A request the session refuses.
    public typealias UsageError = BLEFailure<MQTTUsageErrorCode>

    private struct Outgoing: Sendable {
        var number: UInt64
        var message: MQTTMessage
        var packetID: UInt16?
        var sentBefore = false
    }

    /// The configuration.
    public let configuration: Configuration
    /// Where the session is.
    public private(set) var state: State = .disconnected
    /// How many messages were dropped from the full queue since the session was made.
    public private(set) var droppedCount = 0

    private var decoder = MQTTFrameDecoder()
    /// The messages waiting: those from `queueHead` on (the ones before it are gone, sent or dropped; they are cut off
    /// now and then, so that taking the first is not a move of all the others).
    private var queue: [Outgoing] = []
    private var queueHead = 0
    private var inFlight: [UInt16: Outgoing] = [:]
    private var inFlightOrder: [UInt16] = []
    private var pendingSubscriptions: [UInt16: UInt64] = [:]
    private var pendingUnsubscriptions: [UInt16: UInt64] = [:]
    private var receivedQoS2: Set<UInt16> = []
    private var nextPacketID: UInt16 = 1
    private var nextNumber: UInt64 = 1
    private var connectSentAt: Duration = .zero
    private var lastSent: Duration = .zero
    private var pingSentAt: Duration?

    /// Creates a session that is not connected.
    public init(_ configuration: Configuration) { self.configuration = configuration }

    /// Messages waiting to be sent (queued, not in flight).
    public var queuedCount: Int { queue.count - queueHead }
    /// QoS 1 messages sent and not yet acknowledged.
    public var inFlightCount: Int { inFlight.count }

    /// The connection is open: send CONNECT.
    public mutating func connectionOpened(now: Duration) -> [Action] {
        decoder = MQTTFrameDecoder()
        state = .connecting
        connectSentAt = now
        pingSentAt = nil
        let c = configuration
        return [send(.connect(.init(clientID: c.clientID, cleanSession: c.cleanSession, keepAlive: c.keepAlive, will: c.will,
                                    userName: c.userName, password: c.password)), now: now)]
    }

    /// Bytes arrived from the server.
    public mutating func received(_ bytes: some Sequence<UInt8>, now: Duration) -> [Action] {
        guard state != .disconnected else { return [] }
        let packets: [MQTTPacket]
        do {
            packets = try decoder.push(bytes)
        } catch {
            return fail("the server sent a malformed packet: \(error.reason)")
        }
        var actions: [Action] = []
        for packet in packets {
            actions += handle(packet, now: now)
            if state == .disconnected { break }
        }
        return actions
    }

    /// The connection dropped (or the driver closed it).
    public mutating func connectionClosed(reason: String) -> [Action] {
        guard state != .disconnected else { return [] }
        state = .disconnected
        pingSentAt = nil
        pendingSubscriptions.removeAll()
        pendingUnsubscriptions.removeAll()
        return [.event(.connectionLost(reason))]
    }

    /// Time passed: keep-alive pings, the CONNACK timeout, the PINGRESP timeout.
    public mutating func tick(now: Duration) -> [Action] {
        switch state {
        case .disconnected:
            return []
        case .connecting:
            return now - connectSentAt >= configuration.connectTimeout ? fail("no CONNACK within \(configuration.connectTimeout)") : []
        case .connected:
            guard configuration.keepAlive > 0 else { return [] }
            let period = Duration.seconds(Int(configuration.keepAlive))
            if let ping = pingSentAt {
                return now - ping >= period ? fail("no PINGRESP within \(configuration.keepAlive) s") : []
            }
            guard now - lastSent >= period else { return [] }
            pingSentAt = now
            return [send(.pingreq, now: now)]
        }
    }

    /// When ``tick(now:)`` next has something to do (`nil`: nothing until something else happens).
    public var nextDeadline: Duration? {
        switch state {
        case .disconnected: return nil
        case .connecting: return connectSentAt + configuration.connectTimeout
        case .connected:
            guard configuration.keepAlive > 0 else { return nil }
            let period = Duration.seconds(Int(configuration.keepAlive))
            return (pingSentAt ?? lastSent) + period
        }
    }

    /// Publishes a message: sent now when connected and the in-flight window has room, queued otherwise. Returns
    /// the message's number, which ``Event/delivered(_:)`` and ``Event/dropped(_:)`` name.
    public mutating func publish(_ message: MQTTMessage, now: Duration) throws(UsageError) -> (number: UInt64, actions: [Action]) {
        var actions: [Action] = []
        let number = try enqueue(message, actions: &actions)
        actions += flush(now: now)
        return (number, actions)
    }

    /// Publishes messages in order, as many calls of ``publish(_:now:)`` would, with one pass over the window at
    /// the end: each message's number, or `nil` for one refused (as ``publish(_:now:)`` would throw for it: nothing
    /// of it is sent or queued), and the actions of them all.
    public mutating func publish(contentsOf messages: [MQTTMessage], now: Duration) -> (numbers: [UInt64?], actions: [Action]) {
        var numbers: [UInt64?] = []
        numbers.reserveCapacity(messages.count)
        var actions: [Action] = []
        for message in messages {
            // A full queue is served first, as it would have been after the message before: only what the window
            // still cannot take is dropped.
            if queuedCount >= configuration.queueLimit { actions += flush(now: now) }
            numbers.append(try? enqueue(message, actions: &actions))
        }
        actions += flush(now: now)
        return (numbers, actions)
    }

    /// Checks `message` and puts it on the queue (dropping the oldest waiting messages beyond the queue limit, told
    /// in `actions`): its number.
    private mutating func enqueue(_ message: MQTTMessage, actions: inout [Action]) throws(UsageError) -> UInt64 {
        do {
            try MQTTTopic.validateName(message.topic)
        } catch {
            throw UsageError(.invalidTopic, error.reason, underlying: error)
        }
        guard message.topic.utf8.count <= 0xFFFF else { throw UsageError(.tooLarge, "a topic longer than 65,535 bytes") }
        guard message.payload.count + message.topic.utf8.count + 4 <= MQTTRemainingLength.maximum else {
            throw UsageError(.tooLarge, "a payload over MQTT's 268,435,455-byte packet limit")
        }
        var message = message
        if message.qos == .exactlyOnce { message.qos = .atLeastOnce }
        let number = nextNumber
        nextNumber += 1
        if queuedCount >= configuration.queueLimit {
            let excess = queuedCount - configuration.queueLimit + 1
            let gone = queue[queueHead..<queueHead + excess].map(\.number)
            dequeue(excess)
            droppedCount += gone.count
            actions.append(.event(.dropped(gone)))
        }
        queue.append(Outgoing(number: number, message: message))
        return number
    }

    /// Subscribes to filters (sent now when connected; refused otherwise). Returns the token that
    /// ``Event/subscribed(token:granted:)`` names.
    public mutating func subscribe(_ filters: [(filter: String, qos: MQTTQoS)], now: Duration) throws(UsageError) -> (token: UInt64, actions: [Action]) {
        guard state == .connected else { throw UsageError(.notConnected, "not connected") }
        guard !filters.isEmpty else { throw UsageError(.invalidTopic, "no topic filter") }
        for f in filters {
            do { try MQTTTopic.validateFilter(f.filter) } catch { throw UsageError(.invalidTopic, error.reason, underlying: error) }
        }
        let id = allocatePacketID()
        let token = nextNumber
        nextNumber += 1
        pendingSubscriptions[id] = token
        return (token, [send(.subscribe(packetID: id, filters: filters), now: now)])
    }

    /// Unsubscribes from filters (sent now when connected; refused otherwise).
    public mutating func unsubscribe(_ filters: [String], now: Duration) throws(UsageError) -> (token: UInt64, actions: [Action]) {
        guard state == .connected else { throw UsageError(.notConnected, "not connected") }
        guard !filters.isEmpty else { throw UsageError(.invalidTopic, "no topic filter") }
        for f in filters {
            do { try MQTTTopic.validateFilter(f) } catch { throw UsageError(.invalidTopic, error.reason, underlying: error) }
        }
        let id = allocatePacketID()
        let token = nextNumber
        nextNumber += 1
        pendingUnsubscriptions[id] = token
        return (token, [send(.unsubscribe(packetID: id, filters: filters), now: now)])
    }

    /// A clean shutdown: DISCONNECT (the server then discards the Will), then close. Unacknowledged messages stay.
    public mutating func disconnect(now: Duration) -> [Action] {
        guard state != .disconnected else { return [] }
        let wasConnected = state == .connected
        state = .disconnected
        var actions: [Action] = []
        if wasConnected { actions.append(send(.disconnect, now: now)) }
        actions.append(.close)
        actions.append(.event(.connectionLost("disconnected by the client")))
        return actions
    }

    // MARK: - Inside

    private mutating func handle(_ packet: MQTTPacket, now: Duration) -> [Action] {
        switch (state, packet) {
        case (.connecting, .connack(let present, let code)):
            guard code == .accepted else {
                state = .disconnected
                return [.close, .event(.refused(code))]
            }
            state = .connected
            // The server's session is gone (or never was): identifiers it held mean nothing now.
            if !present { receivedQoS2.removeAll() }
            var actions: [Action] = [.event(.connected(sessionPresent: present))]
            // Unacknowledged messages go first, in the order they were first sent, marked as duplicates.
            for id in inFlightOrder {
                guard var outgoing = inFlight[id] else { continue }
                outgoing.sentBefore = true
                inFlight[id] = outgoing
                actions.append(send(.publish(.init(message: outgoing.message, packetID: id, duplicate: true)), now: now))
            }
            return actions + flush(now: now)
        case (.connected, .publish(let p)):
            switch p.message.qos {
            case .atMostOnce:
                return [.event(.message(p.message))]
            case .atLeastOnce:
                return [.event(.message(p.message)), send(.puback(packetID: p.packetID ?? 0), now: now)]
            case .exactlyOnce:
                let id = p.packetID ?? 0
                let fresh = receivedQoS2.insert(id).inserted
                return (fresh ? [.event(.message(p.message))] : []) + [send(.pubrec(packetID: id), now: now)]
            }
        case (.connected, .pubrel(let id)):
            receivedQoS2.remove(id)
            return [send(.pubcomp(packetID: id), now: now)]
        case (.connected, .puback(let id)):
            guard let outgoing = inFlight.removeValue(forKey: id) else { return [] }   // a duplicate PUBACK: harmless
            inFlightOrder.removeAll { $0 == id }
            return [.event(.delivered(outgoing.number))] + flush(now: now)
        case (.connected, .suback(let id, let granted)):
            guard let token = pendingSubscriptions.removeValue(forKey: id) else { return [] }
            return [.event(.subscribed(token: token, granted: granted))]
        case (.connected, .unsuback(let id)):
            guard let token = pendingUnsubscriptions.removeValue(forKey: id) else { return [] }
            return [.event(.unsubscribed(token: token))]
        case (.connected, .pingresp):
            pingSentAt = nil
            return []
        default:
            // CONNACK twice, a packet before CONNACK, a packet only clients send, QoS 2 acknowledgements for a
            // publish this client never makes: the standard says close the connection.
            return fail("the server sent an unexpected \(packet.name)")
        }
    }

    /// Sends what the queue holds while the window has room.
    private mutating func flush(now: Duration) -> [Action] {
        guard state == .connected else { return [] }
        var actions: [Action] = []
        while queueHead < queue.count, case let next = queue[queueHead],
              next.message.qos == .atMostOnce || inFlight.count < configuration.maximumInFlight {
            dequeue(1)
            if next.message.qos == .atMostOnce {
                actions.append(send(.publish(.init(message: next.message)), now: now))
                actions.append(.event(.delivered(next.number)))
            } else {
                let id = allocatePacketID()
                var outgoing = next
                outgoing.packetID = id
                inFlight[id] = outgoing
                inFlightOrder.append(id)
                actions.append(send(.publish(.init(message: next.message, packetID: id)), now: now))
            }
        }
        return actions
    }

    /// Takes the first `count` waiting messages off the queue.
    private mutating func dequeue(_ count: Int) {
        queueHead += count
        if queueHead >= 64, queueHead * 2 >= queue.count {
            queue.removeFirst(queueHead)
            queueHead = 0
        }
    }

    private mutating func allocatePacketID() -> UInt16 {
        // 65,535 identifiers; the window and pending requests hold far fewer, so a free one is always found.
        for _ in 0..<0xFFFF {
            let id = nextPacketID
            nextPacketID = nextPacketID == 0xFFFF ? 1 : nextPacketID + 1
            if inFlight[id] == nil, pendingSubscriptions[id] == nil, pendingUnsubscriptions[id] == nil { return id }
        }
        return nextPacketID
    }

    private mutating func send(_ packet: MQTTPacket, now: Duration) -> Action {
        lastSent = now
        return .send(packet.encoded())
    }

    private mutating func fail(_ reason: String) -> [Action] {
        state = .disconnected
        pingSentAt = nil
        pendingSubscriptions.removeAll()
        pendingUnsubscriptions.removeAll()
        return [.close, .event(.connectionLost(reason))]
    }
}

extension MQTTPacket {
    /// The packet's name as the standard writes it.
    public var name: String {
        switch self {
        case .connect: "CONNECT"
        case .connack: "CONNACK"
        case .publish: "PUBLISH"
        case .puback: "PUBACK"
        case .pubrec: "PUBREC"
        case .pubrel: "PUBREL"
        case .pubcomp: "PUBCOMP"
        case .subscribe: "SUBSCRIBE"
        case .suback: "SUBACK"
        case .unsubscribe: "UNSUBSCRIBE"
        case .unsuback: "UNSUBACK"
        case .pingreq: "PINGREQ"
        case .pingresp: "PINGRESP"
        case .disconnect: "DISCONNECT"
        }
    }
}

/// The kind of an ``MQTTSession/UsageError``: an open struct, so a release may add kinds.
public struct MQTTUsageErrorCode: BLEErrorCode {
    private enum Backing: Hashable, Sendable {
        case notConnected
        case invalidTopic
        case tooLarge
    }

    private let backing: Backing
    private init(_ backing: Backing) { self.backing = backing }

    /// The session is not connected (subscriptions and unsubscriptions need a connection).
    /// ``BLEErrorCategory/disconnected``.
    public static let notConnected = MQTTUsageErrorCode(.notConnected)
    /// A topic name or filter breaks the rules of section 4.7, or there is none. ``BLEErrorCategory/invalidInput``.
    public static let invalidTopic = MQTTUsageErrorCode(.invalidTopic)
    /// A topic or a payload over what MQTT can carry. ``BLEErrorCategory/invalidInput``.
    public static let tooLarge = MQTTUsageErrorCode(.tooLarge)

    public var category: BLEErrorCategory {
        switch backing {
        case .notConnected: .disconnected
        case .invalidTopic, .tooLarge: .invalidInput
        }
    }

    /// `notConnected`, `invalidTopic` or `tooLarge`.
    public var description: String {
        switch backing {
        case .notConnected: "notConnected"
        case .invalidTopic: "invalidTopic"
        case .tooLarge: "tooLarge"
        }
    }
}
