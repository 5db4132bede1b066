import MQTT

/// The messages a test's observing client received from a broker, in order.
public actor MQTTInbox {
    /// Every message received so far.
    public private(set) var messages: [MQTTMessage] = []

    /// An empty inbox.
    public init() {}

    /// Starts `client` and keeps the messages it receives from now on in a new inbox.
    public static func listening(to client: MQTTClient) async -> MQTTInbox {
        let inbox = MQTTInbox()
        Task { for await event in client.eventStream { await inbox.take(event) } }
        await client.start()
        return inbox
    }

    /// Keeps `event`'s message, if it is one.
    public func take(_ event: MQTTSession.Event) { if case .message(let m) = event { messages.append(m) } }

    /// The first message on `topic` whose payload, as text, satisfies `predicate`.
    public func first(_ topic: String, where predicate: @Sendable (String) -> Bool = { _ in true }) -> MQTTMessage? {
        messages.first { $0.topic == topic && predicate(String(decoding: $0.payload, as: UTF8.self)) }
    }

    /// The first message that satisfies `predicate`.
    public func firstMatching(_ predicate: @Sendable (MQTTMessage) -> Bool) -> MQTTMessage? { messages.first(where: predicate) }

    /// Where the first message that satisfies `predicate` is.
    public func index(where predicate: @Sendable (MQTTMessage) -> Bool) -> Int? { messages.firstIndex(where: predicate) }

    /// How many messages satisfy `predicate`.
    public func count(where predicate: @Sendable (MQTTMessage) -> Bool) -> Int { messages.filter(predicate).count }
}
