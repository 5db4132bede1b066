import BLE
import BLEBeacons
import BLEFiles
import BLEProfiles
import MQTT

/// A gateway: what one radio hears, published to an MQTT broker, and a GATT client the broker can drive.
///
/// ``run()`` scans without pause (every advertisement), publishes a ``DeviceRecord`` per device and change (rate
/// limited by ``DeviceRateLimiter``), shares its smoothed views with the other gateways of the fleet and publishes
/// the room presence they decide together (``PresenceMachine``), announces the sensors it decodes to Home Assistant
/// (``HomeAssistantDiscovery``), and answers ``GatewayRequest``s. The topics are those of ``GatewayTopics``.
///
/// The broker may go away: `MQTTClient` reconnects with backoff and queues meanwhile (bounded; the oldest message is
/// dropped first and counted). Device records and presence decisions go at QoS 1; the views, which are stale by the
/// time a broker comes back, are sent only while connected. The counters are published, retained, on
/// `PREFIX/ID/stats`: `readings` (the device records published so far, also numbered in each record's `seq`) and
/// `dropped` (messages the queue let go), so that a subscriber can account for every reading.
///
/// ``shutdown()`` publishes `offline` on the status topic (retained) and disconnects cleanly; a gateway that vanishes
/// without it has the broker publish the same `offline` as its Will.
public actor Gateway {
    /// How the gateway runs.
    public struct Configuration: Sendable {
        /// The topics (prefix and gateway identifier).
        public var topics: GatewayTopics
        /// The broker.
        public var broker: MQTTBrokerAddress
        /// How TLS connections check the broker.
        public var tls: MQTTTLSOptions
        /// The user name, when the broker asks for one.
        public var userName: String?
        /// The password.
        public var password: [UInt8]?
        /// The shortest time between two records of one device whose content did not change. Default 5 s.
        public var interval: Duration
        /// The most messages kept while the broker is away. Default 10,000.
        public var queueLimit: Int
        /// Presence tuning.
        public var presence: PresenceMachine.Configuration
        /// Whether to publish Home Assistant discovery configs. Default true.
        public var homeAssistant: Bool
        /// Home Assistant's discovery prefix. Default `homeassistant`.
        public var discoveryPrefix: String
        /// How often the counters are published. Default 5 s.
        public var statsInterval: Duration
        /// The reconnection backoff: first delay, then doubled up to the maximum.
        public var backoff: (first: Duration, maximum: Duration)
        /// Which devices the gateway connects to, to publish the values of their standard services. Default
        /// ``ConnectPolicy/known``.
        public var connect: ConnectPolicy
        /// The link budget and retry delays of those connections.
        public var sensors: ActiveSensorScheduler.Configuration
        /// How often the values that are read (not notified) are read again. Default 60 s.
        public var readInterval: Duration
        /// How long what the gateway publishes (device records, its views and presence decisions) may wait to go out
        /// with what follows: everything gathered within it goes to the broker in one write, not one per burst of
        /// advertisements (a gateway hearing thousands of devices hears hundreds of bursts a second). Default 20 ms;
        /// zero publishes each burst's at once. Answers to requests and the counters do not wait; ``Gateway/shutdown()``
        /// sends what waits before it says `offline`.
        public var publishDelay: Duration
        /// Whether ``Gateway/events`` tells each device record published (``Gateway/Event/published(topic:record:)``).
        /// Default true; a gateway whose log leaves records out sets it false, and saves making each record's JSON
        /// value beside its payload and handing it to the log's task.
        public var reportsPublications: Bool

        /// Creates a configuration.
        public init(topics: GatewayTopics, broker: MQTTBrokerAddress, tls: MQTTTLSOptions = .init(), userName: String? = nil,
                    password: [UInt8]? = nil, interval: Duration = .seconds(5), queueLimit: Int = 10_000,
                    presence: PresenceMachine.Configuration = .init(), homeAssistant: Bool = true,
                    discoveryPrefix: String = "homeassistant", statsInterval: Duration = .seconds(5),
                    backoff: (first: Duration, maximum: Duration) = (.milliseconds(250), .seconds(10)),
                    connect: ConnectPolicy = .known, sensors: ActiveSensorScheduler.Configuration = .init(),
                    readInterval: Duration = .seconds(60), publishDelay: Duration = .milliseconds(20), reportsPublications: Bool = true) {
            self.topics = topics
            self.broker = broker
            self.tls = tls
            self.userName = userName
            self.password = password
            self.interval = interval
            self.queueLimit = queueLimit
            self.presence = presence
            self.homeAssistant = homeAssistant
            self.discoveryPrefix = discoveryPrefix
            self.statsInterval = statsInterval
            self.backoff = backoff
            self.connect = connect
            self.sensors = sensors
            self.readInterval = readInterval
            self.publishDelay = publishDelay
            self.reportsPublications = reportsPublications
        }
    }

    /// What the gateway did, for a log (the CLI prints these).
    public enum Event: Sendable {
        /// Connected to the broker (`count`: connections so far).
        case brokerConnected(count: Int)
        /// The broker connection ended.
        case brokerLost(reason: String)
        /// A device record went out.
        case published(topic: String, record: JSONValue)
        /// This gateway took a device over.
        case presence(PresenceDecision)
        /// A request was answered.
        case answered(topic: String, response: JSONValue)
        /// Messages were dropped from the full queue.
        case dropped(total: Int)
        /// A link for the values of a device's standard services: `connected` (with what it subscribed to and reads),
        /// `lost`, `failed` or `refused` (with the reason and when it is tried again, in seconds from now).
        case sensor(device: String, state: String, detail: String)
    }

    /// The configuration.
    public nonisolated let configuration: Configuration
    /// The central the gateway scans and connects with.
    public nonisolated let central: Central
    /// The MQTT client.
    public nonisolated let client: MQTTClient
    /// Everything the gateway does, in order.
    public nonisolated let events: AsyncStream<Event>
    let eventSink: AsyncStream<Event>.Continuation

    // The machines the gateway drives (each decides without I/O; the actor carries their decisions out).
    /// The devices heard and what is published of them.
    var devices: DeviceTable
    /// Room presence, shared with the fleet.
    var presence: PresenceMachine
    /// Which devices to connect to for their values, and when.
    var scheduler: ActiveSensorScheduler
    /// The broker's requests, one at a time per device.
    var requestQueue = RequestQueue<GatewayRequest>()
    /// One connection attempt at a time.
    var connectGate = ConnectGate<CheckedContinuation<Void, Never>>()

    let clock = ContinuousClock()
    let origin: ContinuousClock.Instant
    /// The links the gateway holds, for requests and for sensing.
    var links: [BluetoothAddress: Link] = [:]
    /// The running request of each device (as the request names it).
    var requestTasks: [String: Task<Void, Never>] = [:]
    /// The tasks that follow each sensed link.
    var sensing: [BluetoothAddress: Task<Void, Never>] = [:]
    let requests: AsyncStream<[UInt8]>.Continuation
    let requestStream: AsyncStream<[UInt8]>
    var stopped = false
    /// The gateway's work while ``run()`` runs: broker, requests, ticks, sensor connections and the scan.
    var work: Task<Void, any Error>?
    var refusal: GatewayError?
    /// The other gateways whose views this one subscribed to (each when its status first said `online`).
    var viewedGateways: Set<String> = []
    /// What waits to be published (``Configuration/publishDelay``): messages, then the presence machine's outputs.
    var gathered: (messages: [MQTTMessage], outputs: [PresenceMachine.Output]) = ([], [])
    /// The task that publishes what was gathered when the delay has passed.
    var gatheredFlush: Task<Void, Never>?
    /// Told ``advertisements`` after each batch of advertisements is handled (``observeAdvertisements(_:)``).
    var advertisementObserver: (@Sendable (UInt64) -> Void)?

    /// Presence decisions this gateway published, and presence decisions it received from the broker (its own
    /// among them, echoed): for benchmarks, which wait until the echoes of a run are read before they count.
    package private(set) var presenceDecisions: (published: UInt64, received: UInt64) = (0, 0)
    /// Messages and machine outputs gathered and not yet handed to the MQTT client (``Configuration/publishDelay``).
    package var gatheredCount: Int { gathered.messages.count + gathered.outputs.count }

    /// The device records published (the last `seq`).
    public var readings: UInt64 { devices.readings }
    /// Advertisements heard.
    public var advertisements: UInt64 { devices.advertisements }

    struct Link {
        var peripheral: RemotePeripheral
        var services: [GATTDiscoveredService]?
        var subscriptions: [BluetoothUUID: Task<Void, Never>] = [:]
    }

    /// Creates a gateway on `central`; ``run()`` starts it.
    public init(central: Central, configuration: Configuration) {
        self.central = central
        self.configuration = configuration
        let will = MQTTMessage(topic: configuration.topics.status, text: "offline", qos: .atLeastOnce, retain: true)
        client = MQTTClient(broker: configuration.broker,
                            configuration: .init(clientID: "swift-ble-gateway-\(configuration.topics.gatewayID)", cleanSession: true,
                                                 keepAlive: 30, will: will, userName: configuration.userName,
                                                 password: configuration.password, queueLimit: configuration.queueLimit),
                            tls: configuration.tls, backoff: configuration.backoff, reportsDeliveries: false)
        devices = DeviceTable(topics: configuration.topics, interval: configuration.interval,
                              discoveryPrefix: configuration.homeAssistant ? configuration.discoveryPrefix : nil)
        presence = PresenceMachine(gatewayID: configuration.topics.gatewayID, configuration: configuration.presence)
        scheduler = ActiveSensorScheduler(policy: configuration.connect, configuration: configuration.sensors)
        origin = clock.now
        (events, eventSink) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(4096))
        (requestStream, requests) = AsyncStream.makeStream(of: [UInt8].self, bufferingPolicy: .bufferingNewest(256))
    }

    var now: Duration { clock.now - origin }

    /// Runs until cancelled, until the scan fails, or until the broker refuses the gateway's connection for a reason
    /// retrying cannot cure (bad user name or password, not authorized, identifier rejected, protocol version): then
    /// it throws a ``GatewayError`` of code ``GatewayErrorCode/brokerRefused``. It connects to the broker,
    /// subscribes, scans and publishes. On the way out (cancellation included) it calls ``shutdown()``.
    public func run() async throws {
        let topics = configuration.topics
        await client.start()
        _ = try await client.subscribe([(topics.command, .atLeastOnce), (topics.allStatuses, .atLeastOnce),
                                        (topics.allPresence, .atLeastOnce)])
        let connects = configuration.connect != .none
        // The gateway's work is one task: its children follow the broker, answer requests, tick the machines, connect
        // to sensors and scan. The scan's end (an error, or the adapter's stream finishing) ends them all, as do a
        // final refusal from the broker, ``shutdown()`` and the cancellation of `run()`.
        let work = Task {
            try await withThrowingDiscardingTaskGroup { group in
                group.addTask { await self.followBroker() }
                group.addTask { await self.serveRequests() }
                group.addTask { await self.tickForever() }
                if connects { group.addTask { await self.connectForever() } }
                group.addTask {
                    // In batches: one hop onto the gateway per burst of reports, not one per report. The scan
                    // remembers as many devices as the table: with more advertisers than it remembers, each heard
                    // in turn, every report would be of a device it had just forgotten, decoded as new.
                    let batches = try await self.central.scanBatches(allowDuplicates: true, trackingLimit: DeviceTable.memoryLimit,
                                                                     bufferingLimit: 256)
                    for try await batch in batches {
                        await self.handle(batch)
                    }
                    throw ScanEnded()
                }
            }
        }
        self.work = work
        do {
            try await withTaskCancellationHandler { try await work.value } onCancel: { work.cancel() }
            // In a task of its own: a cancelled run (SIGINT) still says goodbye.
            await Task { await self.shutdown() }.value
            if let refusal { throw refusal }
        } catch {
            await Task { await self.shutdown() }.value
            if let refusal { throw refusal }
            if error is CancellationError || error is ScanEnded { return }
            throw error
        }
    }

    /// Calls `body` with the count of advertisements heard (``advertisements``) each time the gateway has handled a
    /// batch of them: for benchmarks, which wait for the gateway without polling it.
    package func observeAdvertisements(_ body: @escaping @Sendable (UInt64) -> Void) { advertisementObserver = body }

    /// The scan's results ended: the gateway's work ends with them.
    struct ScanEnded: Error {}

    /// The broker's refusals that retrying cannot cure.
    static let finalRefusals: Set<MQTTConnectReturnCode> = [.unacceptableProtocolVersion, .identifierRejected, .badUserNameOrPassword, .notAuthorized]

    /// Publishes `offline` (retained), disconnects every device, and disconnects from the broker (DISCONNECT, so
    /// the Will is not published). Waits up to two seconds for the broker to acknowledge `offline`. Idempotent.
    public func shutdown() async {
        guard !stopped else { return }
        stopped = true
        work?.cancel()
        for (_, task) in requestTasks { task.cancel() }
        requestTasks = [:]
        for (_, task) in sensing { task.cancel() }
        sensing = [:]
        for (_, link) in links {
            for (_, task) in link.subscriptions { task.cancel() }
            _ = try? await central.disconnect(link.peripheral)
        }
        links = [:]
        // What waits goes first: every record counted in the final counters is handed to the client before them.
        gatheredFlush?.cancel()
        await publishGathered()
        // The final counters, then offline: a subscriber that sees offline has seen the stats that account for everything.
        await publishStats(final: true)
        let number = try? await client.publish(MQTTMessage(topic: configuration.topics.status, text: "offline", qos: .atLeastOnce, retain: true))
        if let number, await client.isConnected {
            // Wait for the acknowledgement (the client's events are followed by followBroker, now cancelled).
            let deadline = clock.now + .seconds(2)
            while clock.now < deadline, await client.backlog.inFlight + client.backlog.queued > 0 {
                try? await Task.sleep(for: .milliseconds(20))
            }
            _ = number
        }
        await client.stop()
        eventSink.finish()
    }

    // MARK: - Broker

    func followBroker() async {
        for await event in client.eventStream {
            switch event {
            case .connected:
                let count = await client.connectionCount
                _ = try? await client.publish(MQTTMessage(topic: configuration.topics.status, text: "online", qos: .atLeastOnce, retain: true))
                eventSink.yield(.brokerConnected(count: count))
                await publishStats()
            case .connectionLost(let reason):
                eventSink.yield(.brokerLost(reason: reason))
            case .refused(let code) where Self.finalRefusals.contains(code):
                refusal = GatewayError(.brokerRefused, "the broker \(configuration.broker) refused the connection: \(code)")
                eventSink.yield(.brokerLost(reason: "refused: \(code)"))
                work?.cancel()
                return
            case .dropped:
                eventSink.yield(.dropped(total: await client.droppedCount))
            case .message(let message):
                await received(message)
            default:
                break
            }
            if Task.isCancelled { return }
        }
    }

    func received(_ message: MQTTMessage) async {
        guard let parsed = configuration.topics.parse(message.topic) else { return }
        switch parsed {
        case .command:
            requests.yield(message.payload)
        case .view(let gateway, let device):
            guard gateway != configuration.topics.gatewayID, var view = PresenceView(json: message.payload) else { return }
            view.gateway = gateway
            await publish(presence.receive(view: view, device: device, now: now))
        case .status(let gateway):
            if message.payload == Array("offline".utf8) {
                await publish(presence.gatewayWentOffline(gateway, now: now))
            } else if gateway != configuration.topics.gatewayID, viewedGateways.insert(gateway).inserted {
                // The views of each other gateway, by a filter of its own from its first `online`: not
                // `PREFIX/+/rssi/+`, which brings this gateway's own views back from the broker (MQTT 3.1.1 has no
                // No Local) to be read and thrown away, one per device and view interval. The client subscribes again
                // after a reconnection; a failure here (the connection ended before SUBACK) is retried then.
                _ = try? await client.subscribe([(configuration.topics.views(of: gateway), .atMostOnce)])
            }
        case .presence:
            presenceDecisions.received += 1
            guard let decision = PresenceDecision(json: message.payload) else { return }
            await publish(presence.receive(decision: decision, now: now))
        }
    }

    func tickForever() async {
        var lastStats = now
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(250))
            await publish(presence.tick(now: now))
            if now - lastStats >= configuration.statsInterval {
                lastStats = now
                await publishStats()
            }
        }
    }

    /// The counters, as published on `PREFIX/ID/stats`; the last ones, published by ``shutdown()`` just before
    /// `offline`, carry `"final":true`.
    public func statistics(final: Bool = false) async -> JSONValue {
        let backlog = await client.backlog
        var fields: [(key: String, value: JSONValue)] = [
            ("readings", .integer(readings)), ("dropped", .int(await client.droppedCount)), ("queued", .int(backlog.queued)),
            ("in_flight", .int(backlog.inFlight)), ("devices", .int(devices.deviceCount)), ("advertisements", .integer(advertisements)),
            ("broker_connections", .int(await client.connectionCount)),
        ]
        if final { fields.append(("final", .bool(true))) }
        return .object(fields)
    }

    func publishStats(final: Bool = false) async {
        let stats = await statistics(final: final)
        _ = try? await client.publish(MQTTMessage(topic: configuration.topics.stats, text: stats.encoded(), qos: .atLeastOnce, retain: true))
    }

    func publish(_ outputs: [PresenceMachine.Output]) async {
        await publish([], then: outputs)
    }

    /// Publishes `messages` and then the machine's `outputs` after what waits already, at once or gathered for up to
    /// ``Configuration/publishDelay`` (every way a record, a view or a decision goes out comes through here, so
    /// that each topic's messages keep their order).
    func publish(_ messages: [MQTTMessage], then outputs: [PresenceMachine.Output]) async {
        guard !messages.isEmpty || !outputs.isEmpty else { return }
        gathered.messages += messages
        gathered.outputs += outputs
        guard configuration.publishDelay > .zero, !stopped else {
            await publishGathered()
            return
        }
        guard gatheredFlush == nil else { return }
        let delay = configuration.publishDelay
        gatheredFlush = Task {
            try? await Task.sleep(for: delay)
            await self.publishGathered()
        }
    }

    /// Publishes what was gathered, in one step of the MQTT client.
    func publishGathered() async {
        gatheredFlush = nil
        var messages = gathered.messages
        let outputs = gathered.outputs
        gathered = ([], [])
        await publish(outputs, after: &messages)
    }

    /// Publishes `messages` and then the machine's `outputs`, in one step of the MQTT client (one write to the
    /// broker); `messages` is left empty.
    func publish(_ outputs: [PresenceMachine.Output], after messages: inout [MQTTMessage]) async {
        var decisions: [PresenceDecision] = []
        // A view is stale by the time a broker comes back: views only while connected.
        var connected: Bool?
        for output in outputs {
            switch output {
            case .publishView(let device, let view):
                if connected == nil { connected = await client.isConnected }
                if connected == true { messages.append(MQTTMessage(topic: configuration.topics.view(device), payload: view.json.encodedBytes())) }
            case .publishPresence(let decision):
                messages.append(MQTTMessage(topic: configuration.topics.presence(decision.device), text: decision.json.encoded(),
                                            qos: .atLeastOnce, retain: true))
                decisions.append(decision)
            }
        }
        guard !messages.isEmpty else { return }
        await client.publish(contentsOf: messages)
        messages = []
        presenceDecisions.published += UInt64(decisions.count)
        for decision in decisions { eventSink.yield(.presence(decision)) }
    }

    // MARK: - Advertisements

    /// A burst of advertisements: each one's record into the table and the machines at once, then what they decided to
    /// publish, in order (every record the rate limiter let through goes out, the latest of a device last).
    func handle(_ batch: [DiscoveredPeripheral]) async {
        var publications: [DeviceTable.Publication] = []
        var outputs: [PresenceMachine.Output] = []
        // One reading of the clock for the burst (its reports came in one wake-up of the host).
        let t = now
        for report in batch {
            // The host resolved the address when the report came (no hop back to it for each report).
            let (record, name) = devices.hear(report, identity: report.identity, now: t)
            if devices.isFull { devices.forget(now: t, isWatched: { scheduler.state(of: $0) != nil }) }
            let key = record.address.address
            if scheduler.heard(key, services: record.services, connectable: record.connectable, now: t) { devices.watch(record) }
            if let publication = devices.offer(record, now: t, makingRecord: configuration.reportsPublications) { publications.append(publication) }
            outputs += presence.observe(device: name, rssi: record.rssi, measuredPower: record.measuredPowerAt1m, now: t)
        }
        advertisementObserver?(advertisements)
        // The batch's records, announcements, views and decisions, gathered with those of the bursts that follow
        // within the publish delay: one step of the MQTT client, one write to the broker.
        var messages: [MQTTMessage] = []
        for publication in publications {
            messages.append(MQTTMessage(topic: publication.topic, payload: publication.payload, qos: .atLeastOnce))
            if let record = publication.record { eventSink.yield(.published(topic: publication.topic, record: record)) }
            for discovery in publication.discoveries {
                messages.append(MQTTMessage(topic: discovery.topic, text: discovery.payload, qos: .atLeastOnce, retain: true))
            }
        }
        await publish(messages, then: outputs)
    }

    /// Publishes a record unless the rate limiter holds it back, with the Home Assistant configs of its new sensors.
    func offer(_ record: DeviceRecord) async {
        guard let publication = devices.offer(record, now: now, makingRecord: configuration.reportsPublications) else { return }
        await publish(publication)
    }

    /// Sends a record the rate limiter let through, with the Home Assistant configs of its new sensors.
    func publish(_ publication: DeviceTable.Publication) async {
        var messages = [MQTTMessage(topic: publication.topic, payload: publication.payload, qos: .atLeastOnce)]
        if let record = publication.record { eventSink.yield(.published(topic: publication.topic, record: record)) }
        for discovery in publication.discoveries {
            messages.append(MQTTMessage(topic: discovery.topic, text: discovery.payload, qos: .atLeastOnce, retain: true))
        }
        await publish(messages, then: [])
    }

}

/// The latest identifying beacon frame and telemetry of one device, carried over into records of advertisements
/// that hold the other kind.
struct BeaconFrameMemory: Sendable {
    var beacon: BeaconFrame?
    var telemetry: EddystoneTLM?

    mutating func merge(into record: inout DeviceRecord) {
        if let b = record.beacon { beacon = b } else { record.beacon = beacon }
        if let t = record.telemetry { telemetry = t } else { record.telemetry = telemetry }
    }
}
