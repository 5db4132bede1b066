import BLE
import BLEBeacons
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

        /// Creates a configuration.
        public init(topics: GatewayTopics, broker: MQTTBrokerAddress, tls: MQTTTLSOptions = .init(), userName: String? = nil,
                    password: [UInt8]? = nil, interval: Duration = .seconds(5), queueLimit: Int = 10_000,
                    presence: PresenceMachine.Configuration = .init(), homeAssistant: Bool = true,
                    discoveryPrefix: String = "homeassistant", statsInterval: Duration = .seconds(5),
                    backoff: (first: Duration, maximum: Duration) = (.milliseconds(250), .seconds(10)),
                    connect: ConnectPolicy = .known, sensors: ActiveSensorScheduler.Configuration = .init(),
                    readInterval: Duration = .seconds(60)) {
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
    private let eventSink: AsyncStream<Event>.Continuation

    private var limiter: DeviceRateLimiter
    private var presence: PresenceMachine
    private let clock = ContinuousClock()
    private let origin: ContinuousClock.Instant
    /// The device records published (the last `seq`).
    public private(set) var readings: UInt64 = 0
    /// Advertisements heard.
    public private(set) var advertisements: UInt64 = 0
    private var announced: Set<String> = []
    /// The latest report of each device by its (identity) address, for requests by address or name.
    private var seen: [BluetoothAddress: DiscoveredPeripheral] = [:]
    private var beaconMemory: [BluetoothAddress: (beacon: BeaconFrameMemory, at: Duration)] = [:]
    private var links: [BluetoothAddress: Link] = [:]
    private var tasks: [Task<Void, Never>] = []
    private let requests: AsyncStream<[UInt8]>.Continuation
    private let requestStream: AsyncStream<[UInt8]>
    private var stopped = false
    private var scanning: Task<Void, any Error>?
    /// The last request of each device (as the request names it), which the next one of that device waits for.
    private var deviceQueues: [String: (number: UInt64, task: Task<Void, Never>)] = [:]
    private var requestNumber: UInt64 = 0
    private var connecting = false
    private var connectWaiters: [CheckedContinuation<Void, Never>] = []
    private var refusal: GatewayError?
    private var scheduler: ActiveSensorScheduler
    private var profileValues = ProfileValues()
    /// The latest record of each candidate of the scheduler, republished when a connected value changes.
    private var lastRecords: [BluetoothAddress: DeviceRecord] = [:]
    /// The tasks that follow each sensed link.
    private var sensing: [BluetoothAddress: Task<Void, Never>] = [:]

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
                            tls: configuration.tls, backoff: configuration.backoff)
        limiter = DeviceRateLimiter(interval: configuration.interval)
        presence = PresenceMachine(gatewayID: configuration.topics.gatewayID, configuration: configuration.presence)
        scheduler = ActiveSensorScheduler(policy: configuration.connect, configuration: configuration.sensors)
        origin = clock.now
        (events, eventSink) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(4096))
        (requestStream, requests) = AsyncStream.makeStream(of: [UInt8].self, bufferingPolicy: .bufferingNewest(256))
    }

    private var now: Duration { clock.now - origin }

    /// Runs until cancelled, until the scan fails, or until the broker refuses the gateway's connection for a reason
    /// retrying cannot cure (bad user name or password, not authorized, identifier rejected, protocol version): then
    /// it throws a ``GatewayError`` of code ``GatewayErrorCode/brokerRefused``. It connects to the broker,
    /// subscribes, scans and publishes. On the way out (cancellation included) it calls ``shutdown()``.
    public func run() async throws {
        let topics = configuration.topics
        await client.start()
        _ = try await client.subscribe([(topics.command, .atLeastOnce), (topics.allStatuses, .atLeastOnce),
                                        (topics.allPresence, .atLeastOnce), (topics.allViews, .atMostOnce)])
        tasks.append(Task { await self.followBroker() })
        tasks.append(Task { await self.serveRequests() })
        tasks.append(Task { await self.tickForever() })
        if configuration.connect != .none { tasks.append(Task { await self.connectForever() }) }
        let scan = Task {
            let reports = try await self.central.scan(allowDuplicates: true, bufferingLimit: 4096)
            for try await report in reports {
                await self.handle(report)
            }
        }
        scanning = scan
        do {
            try await withTaskCancellationHandler { try await scan.value } onCancel: { scan.cancel() }
            // In a task of its own: a cancelled run (SIGINT) still says goodbye.
            await Task { await self.shutdown() }.value
            if let refusal { throw refusal }
        } catch {
            await Task { await self.shutdown() }.value
            if let refusal { throw refusal }
            if error is CancellationError { return }
            throw error
        }
    }

    /// The broker's refusals that retrying cannot cure.
    static let finalRefusals: Set<MQTTConnectReturnCode> = [.unacceptableProtocolVersion, .identifierRejected, .badUserNameOrPassword, .notAuthorized]

    /// Publishes `offline` (retained), disconnects every device, and disconnects from the broker (DISCONNECT, so
    /// the Will is not published). Waits up to two seconds for the broker to acknowledge `offline`. Idempotent.
    public func shutdown() async {
        guard !stopped else { return }
        stopped = true
        for task in tasks { task.cancel() }
        tasks = []
        for (_, queue) in deviceQueues { queue.task.cancel() }
        deviceQueues = [:]
        for (_, task) in sensing { task.cancel() }
        sensing = [:]
        for (_, link) in links {
            for (_, task) in link.subscriptions { task.cancel() }
            _ = try? await central.disconnect(link.peripheral)
        }
        links = [:]
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

    private func followBroker() async {
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
                scanning?.cancel()
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

    private func received(_ message: MQTTMessage) async {
        guard let parsed = configuration.topics.parse(message.topic) else { return }
        switch parsed {
        case .command:
            requests.yield(message.payload)
        case .view(let gateway, let device):
            guard var view = PresenceView(json: message.payload) else { return }
            view.gateway = gateway
            await publish(presence.receive(view: view, device: device, now: now))
        case .status(let gateway):
            if message.payload == Array("offline".utf8) { await publish(presence.gatewayWentOffline(gateway, now: now)) }
        case .presence:
            guard let decision = PresenceDecision(json: message.payload) else { return }
            await publish(presence.receive(decision: decision, now: now))
        }
    }

    private func tickForever() async {
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
            ("in_flight", .int(backlog.inFlight)), ("devices", .int(limiter.count)), ("advertisements", .integer(advertisements)),
            ("broker_connections", .int(await client.connectionCount)),
        ]
        if final { fields.append(("final", .bool(true))) }
        return .object(fields)
    }

    private func publishStats(final: Bool = false) async {
        let stats = await statistics(final: final)
        _ = try? await client.publish(MQTTMessage(topic: configuration.topics.stats, text: stats.encoded(), qos: .atLeastOnce, retain: true))
    }

    private func publish(_ outputs: [PresenceMachine.Output]) async {
        for output in outputs {
            switch output {
            case .publishView(let device, let view):
                // A view is stale by the time a broker comes back: only while connected.
                guard await client.isConnected else { continue }
                _ = try? await client.publish(MQTTMessage(topic: configuration.topics.view(device), text: view.json.encoded()))
            case .publishPresence(let decision):
                _ = try? await client.publish(MQTTMessage(topic: configuration.topics.presence(decision.device), text: decision.json.encoded(),
                                                          qos: .atLeastOnce, retain: true))
                eventSink.yield(.presence(decision))
            }
        }
    }

    // MARK: - Advertisements

    private func handle(_ report: DiscoveredPeripheral) async {
        advertisements &+= 1
        let identity = await central.resolvedIdentity(of: report.address)
        var record = DeviceRecord(report, identity: identity)
        let key = record.address.address
        // Eddystone beacons send their UID (or URL) and TLM frames in turns: a record keeps the latest of each.
        var memory = beaconMemory[key]?.beacon ?? BeaconFrameMemory()
        memory.merge(into: &record)
        beaconMemory[key] = (memory, now)
        var known = report
        known.address = record.address
        seen[key] = known
        if seen.count > 20_000 { trimMemory() }
        let device = key.description
        let t = now
        record.connectedValues = profileValues.values(of: key)
        if scheduler.heard(key, services: record.services, connectable: record.connectable, now: t) { lastRecords[key] = record }
        await offer(record)
        await publish(presence.observe(device: device, rssi: record.rssi, measuredPower: record.measuredPowerAt1m, now: t))
    }

    /// Publishes a record unless the rate limiter holds it back, with the Home Assistant configs of its new sensors.
    private func offer(_ record: DeviceRecord) async {
        let device = record.address.address.description
        let verdict = limiter.offer(device: device, content: record.contentKey, now: now)
        guard verdict != .suppressed else { return }
        readings &+= 1
        let json = record.json(sequence: readings)
        let topic = configuration.topics.device(device)
        _ = try? await client.publish(MQTTMessage(topic: topic, text: json.encoded(), qos: .atLeastOnce))
        eventSink.yield(.published(topic: topic, record: json))
        if configuration.homeAssistant {
            for sensor in HomeAssistantDiscovery.sensors(for: record, topics: configuration.topics, discoveryPrefix: configuration.discoveryPrefix)
            where !announced.contains(sensor.topic) {
                announced.insert(sensor.topic)
                _ = try? await client.publish(MQTTMessage(topic: sensor.topic, text: sensor.payload, qos: .atLeastOnce, retain: true))
            }
        }
    }

    private func trimMemory() {
        let cutoff = now - .seconds(60)
        beaconMemory = beaconMemory.filter { $0.value.at >= cutoff }
        seen = seen.filter { beaconMemory[$0.key] != nil }
        lastRecords = lastRecords.filter { scheduler.state(of: $0.key) != nil }
    }

    // MARK: - Active sensors

    /// Connects, one attempt at a time, to the devices the scheduler says are due, among those whose presence this
    /// gateway holds (so that of a fleet, one gateway connects: the one that hears the device best).
    private func connectForever() async {
        let me = configuration.topics.gatewayID
        while !Task.isCancelled {
            let presence = presence
            for device in scheduler.due(now: now, allowed: { presence.holder(of: $0.description) == me }) {
                if Task.isCancelled { return }
                await attempt(device)
            }
            try? await Task.sleep(for: .milliseconds(200))
        }
    }

    /// Whether an error means the device refuses us (security, or a database it will not show) rather than a
    /// transient failure.
    static func isRefusal(_ error: any Error) -> Bool {
        guard let code = (error as? GATTError)?.code.attError else { return false }
        return code == .insufficientAuthentication || code == .insufficientEncryption || code == .insufficientAuthorization
            || code == .readNotPermitted
    }

    /// Connects to a due device (or takes the link a request made), discovers it, subscribes and reads as its
    /// ``ActiveSensorPlan`` says, and follows the link until it drops.
    private func attempt(_ device: BluetoothAddress) async {
        let name = device.description
        guard let found = seen[device] else {
            scheduler.failed(device, reason: "not heard", now: now)
            return
        }
        let peripheral: RemotePeripheral
        if let link = links[device], case .connected = await link.peripheral.state {
            peripheral = link.peripheral
        } else {
            do {
                peripheral = try await connect(found, timeout: .seconds(10))
            } catch {
                let again = scheduler.failed(device, reason: Self.gatewayError(error).reason, now: now)
                eventSink.yield(.sensor(device: name, state: "failed", detail: "\(Self.gatewayError(error).reason); again in \(inSeconds(again))"))
                return
            }
            links[device] = Link(peripheral: peripheral)
        }
        let services: [GATTDiscoveredService]
        do {
            services = try await peripheral.discoverAll()
            links[device]?.services = services
        } catch {
            let refused = !(error is GATTError) || Self.isRefusal(error)
            let again = scheduler.failed(device, refused: refused, reason: Self.gatewayError(error).reason, now: now)
            eventSink.yield(.sensor(device: name, state: refused ? "refused" : "failed",
                                    detail: "discovery: \(Self.gatewayError(error).reason); again in \(inSeconds(again))"))
            await release(device, peripheral)
            return
        }
        let plan = ActiveSensorPlan(services: services)
        guard !plan.isEmpty else {
            // Nothing it serves is something the gateway reads: the link is better left free.
            let again = scheduler.failed(device, refused: true, reason: "nothing to read", now: now)
            eventSink.yield(.sensor(device: name, state: "refused", detail: "no characteristic the gateway reads; again in \(inSeconds(again))"))
            await release(device, peripheral)
            return
        }
        scheduler.connected(device)
        let subscribed = plan.subscribe.map(\.characteristic.description).joined(separator: ",")
        let polled = plan.poll.map(\.characteristic.description).joined(separator: ",")
        eventSink.yield(.sensor(device: name, state: "connected",
                                detail: "subscribed [\(subscribed)], read [\(polled)]\(plan.glucoseRecords ? ", glucose records" : "")"))
        sensing[device]?.cancel()
        sensing[device] = Task { await self.sense(device, peripheral, plan, services) }
    }

    /// How long until `instant`, in whole seconds, for the log.
    private func inSeconds(_ instant: Duration?) -> String {
        guard let instant else { return "?" }
        return "\(max(0, (instant - now).components.seconds)) s"
    }

    /// Runs a sensed link: subscriptions and reads each in a task of its own, until the link drops (or the gateway
    /// stops); then the scheduler is told.
    private func sense(_ device: BluetoothAddress, _ peripheral: RemotePeripheral, _ plan: ActiveSensorPlan,
                       _ services: [GATTDiscoveredService]) async {
        let updates = await peripheral.stateUpdates()
        func characteristic(_ item: ActiveSensorPlan.Item) -> GATTCharacteristic? {
            services.first { $0.service.uuid == item.service }?.characteristics.first { $0.characteristic.uuid == item.characteristic }?.characteristic
        }
        var children: [Task<Void, Never>] = []
        for item in plan.subscribe {
            guard let c = characteristic(item) else { continue }
            children.append(Task {
                guard let stream = try? await peripheral.notifications(for: c) else { return }
                var decoder = CharacteristicDecoder()
                for await value in stream {
                    guard let decoded = try? decoder.decode(uuid: c.uuid, value: value) else { continue }
                    await self.sensed(device, c.uuid, decoded)
                }
            })
        }
        let reads = plan.readOnce.compactMap(characteristic)
        let polls = plan.poll.compactMap(characteristic)
        let interval = configuration.readInterval
        children.append(Task {
            var first = true
            while !Task.isCancelled {
                for c in (first ? reads : []) + polls {
                    guard let value = try? await peripheral.readValue(for: c),
                          let decoded = try? CharacteristicDecoder.decode(uuid: c.uuid, value: value) else { continue }
                    await self.sensed(device, c.uuid, decoded)
                }
                if plan.glucoseRecords, let meter = try? await GlucoseClient(peripheral: peripheral),
                   let last = try? await meter.records(.last).last {
                    await self.sensed(device, GlucoseService.measurement, .glucose(last.measurement))
                }
                first = false
                try? await Task.sleep(for: interval)
            }
        })
        var state = await peripheral.state
        if case .connected = state {
            for await update in updates {
                state = update
                if case .disconnected = update { break }
            }
        }
        for child in children { child.cancel() }
        guard !Task.isCancelled, !stopped else { return }
        scheduler.lost(device, now: now)
        if let link = links[device], link.peripheral === peripheral { links[device] = nil }
        sensing[device] = nil
        eventSink.yield(.sensor(device: device.description, state: "lost", detail: "\(state); again in \(configuration.sensors.firstRetry.components.seconds) s"))
    }

    /// Disconnects a link the gateway made for sensing (not one a request holds).
    private func release(_ device: BluetoothAddress, _ peripheral: RemotePeripheral) async {
        if let link = links[device], link.peripheral === peripheral, link.subscriptions.isEmpty { links[device] = nil }
        _ = try? await central.disconnect(peripheral)
    }

    /// A value read or notified: kept, and the device's record published at once when it changed.
    private func sensed(_ device: BluetoothAddress, _ characteristic: BluetoothUUID, _ value: DecodedValue) async {
        guard !stopped, profileValues.update(device, characteristic: characteristic, value: value), var record = lastRecords[device] else { return }
        record.connectedValues = profileValues.values(of: device)
        lastRecords[device] = record
        await offer(record)
    }

    // MARK: - Requests

    /// Answers requests: those naming one device in order, one at a time; those naming different devices
    /// concurrently (a slow read on one device does not hold another's). A malformed request is answered at once.
    private func serveRequests() async {
        for await payload in requestStream {
            if Task.isCancelled { return }
            switch GatewayRequest.parse(payload) {
            case .failure(let error):
                let id = GatewayRequest.requestID(of: payload)
                await respond(GatewayResponse.topicLevel(id), GatewayResponse.failure(error, id: id))
            case .success(let request):
                let previous = deviceQueues[request.device]
                requestNumber &+= 1
                let number = requestNumber
                let task = Task {
                    await previous?.task.value
                    await self.answer(request)
                    self.finished(device: request.device, number: number)
                }
                deviceQueues[request.device] = (number, task)
            }
        }
    }

    private func finished(device: String, number: UInt64) {
        if deviceQueues[device]?.number == number { deviceQueues[device] = nil }
    }

    private func answer(_ request: GatewayRequest) async {
        do {
            let fields = try await perform(request)
            await respond(request.id, GatewayResponse.success(id: request.id, [("op", .string(request.operation.rawValue))] + fields))
        } catch {
            await respond(request.id, GatewayResponse.failure(Self.gatewayError(error), id: request.id))
        }
    }

    private func respond(_ level: String, _ json: JSONValue) async {
        let topic = configuration.topics.response(level)
        _ = try? await client.publish(MQTTMessage(topic: topic, text: json.encoded(), qos: .atLeastOnce))
        eventSink.yield(.answered(topic: topic, response: json))
    }

    /// Connects, one attempt at a time (a controller makes one connection at a time: the requests' and the sensors'
    /// attempts wait for each other).
    private func connect(_ found: DiscoveredPeripheral, timeout: Duration) async throws -> RemotePeripheral {
        while connecting { await withCheckedContinuation { connectWaiters.append($0) } }
        connecting = true
        defer {
            connecting = false
            if !connectWaiters.isEmpty { connectWaiters.removeFirst().resume() }
        }
        return try await central.connect(found, timeout: timeout)
    }

    /// Maps the stack's errors to a request's error.
    static func gatewayError(_ error: any Error) -> GatewayError {
        switch error {
        case let e as GatewayError: return e
        case let e as GATTError:
            if let code = e.code.attError { return GatewayError.attError(code.rawValue, e.reason) }
            switch e.code {
            case .timeout: return GatewayError(.timeout, e.reason)
            case .disconnected: return GatewayError(.notConnected, e.reason)
            default: return GatewayError(.protocolError, e.reason)
            }
        case let e as HostError:
            // By category: timed out (a command or a connection), refused or malformed (a status, a response).
            if e.code == .notConnected { return GatewayError(.notConnected, e.reason) }
            switch e.category {
            case .timedOut: return GatewayError(.timeout, e.reason)
            case .protocolError where e.code.opcode != nil || e.code.hciStatus != nil: return GatewayError(.protocolError, e.reason)
            default: return GatewayError(.failed, e.reason)
            }
        case let e as SecurityError:
            switch e.code {
            case .timedOut: return GatewayError(.timeout, e.reason)
            case .disconnected: return GatewayError(.notConnected, e.reason)
            default: return GatewayError(.protocolError, e.reason)
            }
        case let e as any BLEError: return GatewayError(.failed, e.reason)
        default: return GatewayError(.failed, "\(error)")
        }
    }

    /// The device a request names: by address, else by advertised name, waiting for the scan to hear it.
    private func find(_ device: String, timeout: Duration) async throws -> DiscoveredPeripheral {
        let wanted = BluetoothAddress(device)
        let deadline = clock.now + timeout
        while true {
            if let wanted, let found = seen[wanted] { return found }
            if wanted == nil, let found = seen.values.first(where: { $0.name == device }) { return found }
            guard clock.now < deadline else { throw GatewayError(.notFound, "no device '\(device)' heard within \(timeout)") }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    private func link(_ device: String, timeout: Duration, connecting: Bool = true) async throws -> (BluetoothAddress, Link) {
        if let address = BluetoothAddress(device), let link = links[address], case .connected = await link.peripheral.state { return (address, link) }
        for (address, link) in links where seen[address]?.name == device {
            if case .connected = await link.peripheral.state { return (address, link) }
        }
        guard connecting else { throw GatewayError(.notConnected, "not connected to '\(device)'") }
        let found = try await find(device, timeout: timeout)
        let peripheral = try await connect(found, timeout: timeout)
        _ = try? await peripheral.exchangeMTU()
        let link = Link(peripheral: peripheral)
        links[found.address.address] = link
        return (found.address.address, link)
    }

    private func characteristic(_ request: GatewayRequest, _ address: BluetoothAddress, _ link: Link) async throws -> GATTCharacteristic {
        var link = link
        if link.services == nil {
            link.services = try await link.peripheral.discoverAll()
            links[address]?.services = link.services
        }
        guard let uuid = request.characteristic else { throw GatewayError(.malformedRequest, "no characteristic") }
        for entry in link.services ?? [] where request.service == nil || entry.service.uuid == request.service {
            if let found = entry.characteristics.first(where: { $0.characteristic.uuid == uuid }) { return found.characteristic }
        }
        throw GatewayError(.notFound, "\(request.device) has no characteristic \(uuid)\(request.service.map { " in service \($0)" } ?? "")")
    }

    private func perform(_ request: GatewayRequest) async throws -> [(key: String, value: JSONValue)] {
        switch request.operation {
        case .connect:
            let (address, _) = try await link(request.device, timeout: request.timeout)
            return [("device", .string(address.description))]
        case .disconnect:
            let (address, link) = try await self.link(request.device, timeout: request.timeout, connecting: false)
            for (_, task) in link.subscriptions { task.cancel() }
            links[address] = nil
            _ = try await central.disconnect(link.peripheral)
            return [("device", .string(address.description))]
        case .discover:
            let (address, link) = try await self.link(request.device, timeout: request.timeout)
            let services = try await link.peripheral.discoverAll()
            links[address]?.services = services
            return [("device", .string(address.description)), ("services", .array(services.map { entry in
                .object([("uuid", .string(entry.service.uuid.description)),
                         ("characteristics", .array(entry.characteristics.map { c in
                             .object([("uuid", .string(c.characteristic.uuid.description)),
                                      ("properties", .array(Self.propertyNames(c.characteristic.properties).map(JSONValue.string)))])
                         }))])
            }))]
        case .read:
            let (address, link) = try await self.link(request.device, timeout: request.timeout)
            let c = try await characteristic(request, address, link)
            let value = try await link.peripheral.readValue(for: c)
            var fields: [(key: String, value: JSONValue)] = [("device", .string(address.description)), ("characteristic", .string(c.uuid.description)),
                                                             ("value", .string(value.hexString()))]
            if let decoded = try? CharacteristicDecoder.decode(uuid: c.uuid, value: value) { fields.append(("decoded", .object(decoded.jsonFields))) }
            return fields
        case .write:
            let (address, link) = try await self.link(request.device, timeout: request.timeout)
            let c = try await characteristic(request, address, link)
            try await link.peripheral.writeValue(request.value ?? [], for: c, type: request.withResponse ? .withResponse : .withoutResponse)
            return [("device", .string(address.description)), ("characteristic", .string(c.uuid.description)), ("withResponse", .bool(request.withResponse))]
        case .subscribe:
            let (address, link) = try await self.link(request.device, timeout: request.timeout)
            let c = try await characteristic(request, address, link)
            let topic = configuration.topics.notifications(address.description, c.uuid)
            if link.subscriptions[c.uuid] == nil {
                let stream = try await link.peripheral.notifications(for: c)
                let client = client
                let uuid = c.uuid
                links[address]?.subscriptions[c.uuid] = Task {
                    var decoder = CharacteristicDecoder()
                    for await value in stream {
                        var fields: [(key: String, value: JSONValue)] = [("value", .string(value.hexString()))]
                        if let decoded = try? decoder.decode(uuid: uuid, value: value) { fields.append(("decoded", .object(decoded.jsonFields))) }
                        _ = try? await client.publish(MQTTMessage(topic: topic, text: JSONValue.object(fields).encoded(), qos: .atLeastOnce))
                    }
                }
            }
            return [("device", .string(address.description)), ("characteristic", .string(c.uuid.description)), ("topic", .string(topic))]
        case .unsubscribe:
            let (address, link) = try await self.link(request.device, timeout: request.timeout, connecting: false)
            let c = try await characteristic(request, address, link)
            links[address]?.subscriptions.removeValue(forKey: c.uuid)?.cancel()
            try await link.peripheral.stopNotifications(for: c)
            return [("device", .string(address.description)), ("characteristic", .string(c.uuid.description))]
        case .pair:
            let (address, link) = try await self.link(request.device, timeout: request.timeout)
            let security = try await link.peripheral.pair()
            return [("device", .string(address.description)), ("encrypted", .bool(security.isEncrypted)),
                    ("authenticated", .bool(security.isAuthenticated)), ("bonded", .bool(security.isBonded))]
        }
    }

    static func propertyNames(_ p: GATTCharacteristicProperties) -> [String] {
        var names: [String] = []
        if p.contains(.broadcast) { names.append("broadcast") }
        if p.contains(.read) { names.append("read") }
        if p.contains(.writeWithoutResponse) { names.append("writeWithoutResponse") }
        if p.contains(.write) { names.append("write") }
        if p.contains(.notify) { names.append("notify") }
        if p.contains(.indicate) { names.append("indicate") }
        if p.contains(.authenticatedSignedWrites) { names.append("authenticatedSignedWrites") }
        return names
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
