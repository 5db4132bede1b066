import BLEHost
import BLEProtocols
import BLEWire
import Synchronization

/// How a value is written. Like CoreBluetooth's `CBCharacteristicWriteType`.
public enum WriteType: Sendable, Hashable {
    /// Write Request (or prepared writes for long values), acknowledged by the peripheral.
    case withResponse
    /// Write Command: unacknowledged, at most ``RemotePeripheral/maximumWriteValueLength(for:)`` bytes.
    case withoutResponse
}

/// When and how a central reconnects to a peripheral whose link was lost (not one it disconnected itself).
public struct ReconnectPolicy: Sendable, Hashable {
    /// Attempts before giving up.
    public var maximumAttempts: Int
    /// Delay before the first attempt; doubled after each failure, up to ``maximumDelay``.
    public var initialDelay: Duration
    /// The longest delay between attempts.
    public var maximumDelay: Duration
    /// Timeout of each connection attempt.
    public var attemptTimeout: Duration

    /// Creates a policy.
    public init(maximumAttempts: Int = 5, initialDelay: Duration = .milliseconds(200), maximumDelay: Duration = .seconds(5),
                attemptTimeout: Duration = .seconds(5)) {
        self.maximumAttempts = maximumAttempts
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.attemptTimeout = attemptTimeout
    }
}

/// What happened to a peripheral's link.
public enum PeripheralLinkEvent: Sendable, Hashable {
    /// The link was lost (reason from the controller).
    case disconnected(HCIStatus)
    /// The central connected again (after `attempt` tries) and restored the subscriptions.
    case reconnected(attempt: Int)
    /// Reconnection gave up after the policy's attempts.
    case reconnectionFailed
}

/// A connected peripheral, seen from the central: GATT discovery, reads, writes, notifications. Like CoreBluetooth's
/// `CBPeripheral`, with async calls.
public final class RemotePeripheral: Sendable, Identifiable {
    /// The central this peripheral is connected to.
    public let central: Central
    let engine: GATTEngine
    /// The name it advertised, when known.
    public let name: String?
    let link: PeripheralLink

    init(central: Central, engine: GATTEngine, connection: HostConnection, name: String?) {
        self.central = central
        self.engine = engine
        self.name = name
        self.link = PeripheralLink(connection: connection)
    }

    /// The current link (it changes when the central reconnects).
    public var connection: HostConnection { get async { await link.connection } }

    /// The connection state now (like `CBPeripheral.state`, with the reason of a disconnection).
    public var state: PeripheralConnectionState { get async { await link.state } }

    /// Connection state changes, starting with the current state.
    public func stateUpdates() async -> AsyncStream<PeripheralConnectionState> { await link.stateUpdates() }

    /// Link events: disconnections, reconnections.
    public func linkEvents() async -> AsyncStream<PeripheralLinkEvent> { await link.linkEvents() }

    /// The peripheral's address.
    public nonisolated var id: LEAddress { link.peer }

    /// The effective ATT_MTU once the MTU exchange started on connecting settles, or, when it has not settled after
    /// `timeout` of the link's time (the transport's clock: simulated time on a manual-clock air), the MTU as it
    /// stands (23): a peer that does not answer ATT (a host without a GATT server) does not hold the caller for the
    /// 30 s ATT transaction timeout.
    public func mtu(waitingAtMost timeout: Duration) async -> Int {
        let connection = await link.connection
        let engine = engine
        let clock = central.adapter.host.clock
        let settled: Int? = await withCheckedContinuation { (continuation: CheckedContinuation<Int?, Never>) in
            let once = FirstAnswer(continuation)
            Task { once.answer(await engine.mtu(connection)) }
            Task {
                try? await clock.sleep(for: timeout)
                once.answer(nil)
            }
        }
        if let settled { return settled }
        return await engine.currentMTU(connection)
    }

    /// Exchanges MTUs (asking for 247); returns the effective ATT_MTU.
    @discardableResult
    public func exchangeMTU() async throws -> Int { try await engine.exchangeMTU(await link.connection) }

    /// The effective ATT_MTU.
    public var mtu: Int { get async { await engine.mtu(await link.connection) } }

    /// The longest value a write of `type` takes: ATT_MTU − 3 for `.withoutResponse` (one Write Command), 512 for
    /// `.withResponse` (values longer than ATT_MTU − 3 go as prepared writes), as in CoreBluetooth.
    public func maximumWriteValueLength(for type: WriteType) async -> Int {
        await engine.maximumWriteValueLength(await link.connection, withResponse: type == .withResponse)
    }

    /// Whether a write without response can go out now without queueing behind full controller buffers (like
    /// `canSendWriteWithoutResponse`).
    public var canSendWriteWithoutResponse: Bool { get async { await central.host.isReadyToSend(await link.connection) } }

    /// Discovers primary services (all, or those in `uuids`).
    public func discoverServices(_ uuids: [BluetoothUUID]? = nil) async throws -> [GATTService] {
        guard let uuids else { return try await engine.discoverPrimaryServices(await link.connection) }
        var found: [GATTService] = []
        for uuid in uuids { found += try await engine.discoverPrimaryServices(await link.connection, uuid: uuid) }
        return found.sorted { $0.startHandle < $1.startHandle }
    }

    /// Discovers the characteristics of a service (all, or those in `uuids`).
    public func discoverCharacteristics(_ uuids: [BluetoothUUID]? = nil, for service: GATTService) async throws -> [GATTCharacteristic] {
        let all = try await engine.discoverCharacteristics(await link.connection, of: service)
        guard let uuids else { return all }
        return all.filter { uuids.contains($0.uuid) }
    }

    /// Discovers everything at once: every primary service with its characteristics and, unless `descriptors` is
    /// false, their descriptors. It takes far fewer round trips than discovering service by service (the
    /// characteristics of all services in one walk over the handles, the descriptors only where a characteristic
    /// leaves room for them, those of several characteristics per request) and gives the same services,
    /// characteristics and descriptors; use ``discoverServices(_:)`` and ``discoverCharacteristics(_:for:)`` when
    /// only some are wanted. With a cache (``Central/useGATTCache(_:)``), an unchanged device known from before is
    /// ready after one round trip.
    public func discoverAll(descriptors: Bool = true) async throws -> [GATTDiscoveredService] {
        try await engine.discoverDatabase(await link.connection, descriptors: descriptors)
    }

    /// ``discoverAll(descriptors:)`` with how it went: the ATT round trips before the result was ready and whether
    /// the GATT cache answered (what `ble explore` reports).
    public func discoverAllReporting(descriptors: Bool = true) async throws -> (services: [GATTDiscoveredService], report: GATTDiscoveryReport) {
        try await engine.discoverDatabaseReporting(await link.connection, descriptors: descriptors)
    }

    /// Opens Enhanced ATT bearers to the device (Core 5.4, Vol 3, Part G, 2.5) on the encrypted link until it has
    /// `count` (1 to 5), and returns how many are open. Nothing else changes for the caller: every read, write and discovery of this
    /// peripheral runs on the least busy bearer of the link, so calls made at once travel at once rather than one
    /// after the other. ``discoverAll(descriptors:)`` opens them by itself on an encrypted link when the device's
    /// Server Supported Features says EATT (the host's `enhancedATTBearers`, 3 unless configured). Throws when the
    /// link is not encrypted (pair first) or the device refuses.
    @discardableResult
    public func openEnhancedBearers(count: Int = 3) async throws -> Int {
        try await engine.openEnhancedBearers(on: await link.connection, count: count)
    }

    /// The Enhanced ATT bearers open to the device (besides the one every link has).
    public var enhancedBearerCount: Int {
        get async { await engine.enhancedBearerCount(await link.connection) }
    }

    /// Discovers a characteristic's descriptors.
    public func discoverDescriptors(for characteristic: GATTCharacteristic) async throws -> [GATTDescriptor] {
        try await engine.discoverDescriptors(await link.connection, of: characteristic)
    }

    /// Reads a characteristic's value (a long value whole).
    public func readValue(for characteristic: GATTCharacteristic) async throws -> [UInt8] {
        try await engine.read(await link.connection, attribute: characteristic.valueHandle)
    }

    /// Reads a descriptor's value.
    public func readValue(for descriptor: GATTDescriptor) async throws -> [UInt8] {
        try await engine.read(await link.connection, attribute: descriptor.handle)
    }

    /// Writes a descriptor's value (with a Write Request; long values as prepared writes). A Client Characteristic
    /// Configuration descriptor is better left to ``notifications(for:)``, which keeps the subscriptions' books.
    public func writeValue(_ value: [UInt8], for descriptor: GATTDescriptor) async throws {
        try await engine.write(await link.connection, attribute: descriptor.handle, value: value)
    }

    /// Writes a characteristic's value.
    public func writeValue(_ value: [UInt8], for characteristic: GATTCharacteristic, type: WriteType) async throws {
        switch type {
        case .withResponse: try await engine.write(await link.connection, attribute: characteristic.valueHandle, value: value)
        case .withoutResponse: try await engine.writeWithoutResponse(await link.connection, attribute: characteristic.valueHandle, value: value)
        }
    }

    /// Subscribes to a characteristic (notifications, or indications when it only indicates) and returns its values.
    /// Several streams of one characteristic each get every value (the peripheral is subscribed once). With a
    /// reconnection policy the subscription survives a lost link: it is restored after reconnecting and the same
    /// streams go on.
    ///
    /// A stream keeps at most `bufferingLimit` values its consumer has not taken yet: a consumer that falls further
    /// behind loses the oldest ones (notifications have no flow control, so the alternative would be memory without
    /// bound); ``droppedNotificationCount`` counts them.
    public func notifications(for characteristic: GATTCharacteristic, bufferingLimit: Int = 4096) async throws -> NotificationStream {
        let descriptors = try await discoverDescriptors(for: characteristic)
        guard let cccd = descriptors.first(where: { $0.uuid == .clientCharacteristicConfiguration }) else {
            throw GATTError(.att(.requestNotSupported, handle: characteristic.valueHandle), "\(characteristic.uuid) cannot notify")
        }
        let indications = !characteristic.properties.contains(.notify) && characteristic.properties.contains(.indicate)
        return try await link.subscribe(valueHandle: characteristic.valueHandle, cccd: cccd.handle, indications: indications, engine: engine,
                                        bufferingLimit: max(1, bufferingLimit))
    }

    /// Values dropped because a stream's consumer fell more than its buffering limit behind
    /// (``notifications(for:bufferingLimit:)``).
    public var droppedNotificationCount: Int { get async { link.droppedNotifications } }

    /// Stops notifications of a characteristic: every stream of it finishes.
    public func stopNotifications(for characteristic: GATTCharacteristic) async throws {
        try await link.unsubscribe(valueHandle: characteristic.valueHandle, engine: engine)
    }

    /// Service Changed indications from the peripheral (the handle ranges whose attributes changed; rediscover
    /// them), like `peripheral(_:didModifyServices:)`.
    public func servicesChanged() async throws -> AsyncStream<ClosedRange<AttributeHandle>> {
        try await engine.serviceChanges(await link.connection)
    }

    /// The services a service includes.
    public func discoverIncludedServices(for service: GATTService) async throws -> [GATTService] {
        try await engine.discoverIncludedServices(await link.connection, of: service)
    }

    /// Reads the values of every characteristic of type `uuid` without discovering them (Read Using Characteristic
    /// UUID).
    public func readValues(ofType uuid: BluetoothUUID) async throws -> [[UInt8]] {
        try await engine.read(await link.connection, byType: uuid).map(\.value)
    }

    /// Reads several values in one request.
    public func readValues(for characteristics: [GATTCharacteristic]) async throws -> [[UInt8]] {
        try await engine.readMultiple(await link.connection, attributes: characteristics.map(\.valueHandle))
    }

    /// The link's RSSI in dBm (HCI Read RSSI).
    public func readRSSI() async throws -> Int8 {
        try await central.host.send(HCIReadRSSI(handle: await link.connection.handle)).rssi
    }

    /// Asks the link layer to move the link to the PHYs preferred for each direction (empty: no preference), as
    /// Android's `setPreferredPhy` does, and returns the link's PHYs once the PHY Update procedure ended: each direction
    /// on the fastest PHY both sides accept (LE 2M, LE 1M, LE Coded), or unchanged.
    @discardableResult
    public func setPreferredPHY(transmit: LEPHYs, receive: LEPHYs) async throws -> (transmit: LEPHY, receive: LEPHY) {
        let updated = try await central.host.setPHY(await link.connection, transmit: transmit, receive: receive)
        return (updated.txPHY, updated.rxPHY)
    }

    /// Asks the link layer for link-layer packets of up to `octets` payload octets (27…251; Data Length Extension):
    /// long values then cross in fewer packets. ``connection``'s `maxTxOctets` follows once the controller agrees.
    public func setDataLength(_ octets: UInt16 = 251) async throws {
        try await central.host.setDataLength(await link.connection, octets: octets)
    }

    /// Changes the link's connection parameters (this central's LE Connection Update) and returns the link once the
    /// controllers apply them: a connection interval in `interval` (1.25 ms units: 0x0006…0x0C80, 7.5 ms to 4 s),
    /// `latency` connection events the peripheral may skip (0…499), and `supervisionTimeout` (10 ms units,
    /// 0x000A…0x0C80, longer than the interval times latency plus one, doubled). A shorter interval moves data
    /// sooner; a longer one, or latency, saves power. Core 5.4, Vol 4, Part E, 7.8.18; Vol 6, Part B, 5.1.1.
    ///
    /// - Throws: ``HostError``: `commandFailed` when the controller refuses the values or the procedure fails,
    ///   `notConnected` when the link drops first.
    @discardableResult
    public func updateConnectionParameters(interval: ClosedRange<UInt16>, latency: UInt16 = 0,
                                           supervisionTimeout: UInt16) async throws -> HostConnection {
        try await central.host.updateConnectionParameters(await link.connection, interval: interval, latency: latency,
                                                          supervisionTimeout: supervisionTimeout)
    }
}

/// A peripheral's connection state, as a central sees it (like `CBPeripheralState`).
public enum PeripheralConnectionState: Sendable, Hashable {
    /// Connecting (or reconnecting, under a reconnection policy).
    case connecting
    /// Connected.
    case connected
    /// This central asked to disconnect; the controller has not confirmed yet.
    case disconnecting
    /// Disconnected, with the controller's reason.
    case disconnected(HCIStatus)
}

/// A remote peripheral's mutable side: its current link, state, subscriptions and reconnection.
actor PeripheralLink {
    struct Subscription {
        var cccd: AttributeHandle
        var indications: Bool
        /// The streams the app iterates: the engine hands them each value itself, without a hop through this actor.
        let fanOut: NotificationFanOut
    }

    var connection: HostConnection
    nonisolated let peer: LEAddress
    private(set) var state: PeripheralConnectionState = .connected
    var subscriptions: [AttributeHandle: Subscription] = [:]
    /// Values dropped for consumers that fell behind their buffering limit.
    nonisolated var droppedNotifications: Int { dropped.count.load(ordering: .relaxed) }
    nonisolated let dropped = DropCounter()
    var linkSubscribers: [Int: AsyncStream<PeripheralLinkEvent>.Continuation] = [:]
    var stateSubscribers: [Int: AsyncStream<PeripheralConnectionState>.Continuation] = [:]
    var nextSubscriber = 0
    var reconnecting = false
    /// The app asked to disconnect: the next disconnection is not a loss, whatever its reason.
    var disconnecting = false
    var watcher: Task<Void, Never>?
    var policy: ReconnectPolicy?

    init(connection: HostConnection) {
        self.connection = connection
        self.peer = connection.peer
    }

    var handle: ConnectionHandle { connection.handle }

    /// Whether a lost link's subscriptions wait to be restored (a reconnection policy is watching).
    var keepsSubscriptionsAlive: Bool { reconnecting || (policy != nil && !disconnecting && watcher != nil) }

    private func makeID() -> Int {
        nextSubscriber += 1
        return nextSubscriber
    }

    func linkEvents() -> AsyncStream<PeripheralLinkEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: PeripheralLinkEvent.self)
        linkSubscribers[makeID()] = continuation
        return stream
    }

    func stateUpdates() -> AsyncStream<PeripheralConnectionState> {
        let (stream, continuation) = AsyncStream.makeStream(of: PeripheralConnectionState.self)
        stateSubscribers[makeID()] = continuation
        continuation.yield(state)
        return stream
    }

    private func publish(_ event: PeripheralLinkEvent) {
        for c in linkSubscribers.values { c.yield(event) }
    }

    private func setState(_ new: PeripheralConnectionState) {
        guard new != state else { return }
        state = new
        for c in stateSubscribers.values { c.yield(new) }
    }

    func subscribe(valueHandle: AttributeHandle, cccd: AttributeHandle, indications: Bool, engine: GATTEngine,
                   bufferingLimit: Int) async throws -> NotificationStream {
        let (stream, source) = NotificationStream.makeStream(bufferingLimit: bufferingLimit)
        let id = makeID()
        if let s = subscriptions[valueHandle] {
            s.fanOut.add(source, id: id)
            return stream
        }
        let fanOut = NotificationFanOut(dropped: dropped)
        fanOut.add(source, id: id)
        subscriptions[valueHandle] = Subscription(cccd: cccd, indications: indications, fanOut: fanOut)
        do {
            try await bind(valueHandle, engine: engine)
        } catch {
            subscriptions[valueHandle] = nil
            source.finish()
            throw error
        }
        return stream
    }

    /// Subscribes on the current link: the engine hands each value to every stream of the subscription.
    private func bind(_ valueHandle: AttributeHandle, engine: GATTEngine) async throws {
        guard let s = subscriptions[valueHandle] else { return }
        let fanOut = s.fanOut
        let sink = NotificationSink(deliver: { fanOut.deliver($0) }, end: { [weak self] in
            // The link's subscription ended: unless a reconnection will restore it, so does this one.
            Task { await self?.linkSubscriptionEnded(valueHandle, fanOut: fanOut) }
        })
        _ = try await engine.subscribe(connection, valueHandle: valueHandle, cccdHandle: s.cccd, indications: s.indications, sink: sink)
    }

    private func linkSubscriptionEnded(_ valueHandle: AttributeHandle, fanOut: NotificationFanOut) {
        guard !keepsSubscriptionsAlive, subscriptions[valueHandle]?.fanOut === fanOut,
              let s = subscriptions.removeValue(forKey: valueHandle) else { return }
        s.fanOut.finishAll()
    }

    func unsubscribe(valueHandle: AttributeHandle, engine: GATTEngine) async throws {
        guard let s = subscriptions.removeValue(forKey: valueHandle) else { return }
        s.fanOut.finishAll()
        try await engine.unsubscribe(connection, valueHandle: valueHandle, cccdHandle: s.cccd)
    }

    /// Watches the link: its state follows the host's events; when it is lost (not disconnected by this central) and
    /// a `policy` is set, reconnects as the policy says and restores every subscription.
    func startWatching(_ peripheral: RemotePeripheral, policy: ReconnectPolicy?) async {
        self.policy = policy
        let events = await peripheral.central.host.events()
        watcher = Task { [weak self, weak peripheral] in
            for await event in events {
                guard let self, let peripheral else { continue }
                switch event {
                case .connectionUpdated(let updated) where updated.link == (await self.connection).link:
                    // Interval, PHYs, data lengths: the link's current parameters.
                    await self.updated(updated)
                case .disconnected(let lost, let reason) where lost.link == (await self.connection).link:
                    await self.linkLost(reason, peripheral: peripheral)
                default:
                    continue
                }
            }
        }
    }

    func updated(_ connection: HostConnection) {
        self.connection = connection
    }

    func disconnectRequested() {
        disconnecting = true
        setState(.disconnecting)
    }

    func disconnectFailed() {
        disconnecting = false
        setState(.connected)
    }

    private func linkLost(_ reason: HCIStatus, peripheral: RemotePeripheral) async {
        setState(.disconnected(reason))
        publish(.disconnected(reason))
        // Disconnected by this side on purpose, or no policy: no reconnection.
        guard let policy, reason != .connectionTerminatedByLocalHost, !disconnecting else {
            finishAll()
            return
        }
        reconnecting = true
        defer { reconnecting = false }
        var delay = policy.initialDelay
        for attempt in 1...max(1, policy.maximumAttempts) {
            try? await Task.sleep(for: delay)
            setState(.connecting)
            do {
                connection = try await peripheral.central.host.connect(to: peer, timeout: policy.attemptTimeout)
                setState(.connected)
                for valueHandle in subscriptions.keys.sorted() { try await bind(valueHandle, engine: peripheral.engine) }
                publish(.reconnected(attempt: attempt))
                return
            } catch {
                setState(.disconnected(.connectionFailedToBeEstablished))
                delay = min(delay * 2, policy.maximumDelay)
            }
        }
        publish(.reconnectionFailed)
        finishAll()
    }

    private func finishAll() {
        watcher?.cancel()
        watcher = nil
        for s in subscriptions.values { s.fanOut.finishAll() }
        subscriptions = [:]
        for c in stateSubscribers.values { c.finish() }
        stateSubscribers = [:]
    }
}

/// Values dropped, over every subscription of a peripheral, because a stream's consumer fell behind.
final class DropCounter: Sendable {
    let count = Atomic<Int>(0)
}

/// The streams of one subscription: each value goes to every one of them, handed over on the engine's executor.
final class NotificationFanOut: Sendable {
    private let sources = Mutex<[(id: Int, source: NotificationStream.Source)]>([])
    private let dropped: DropCounter

    init(dropped: DropCounter) { self.dropped = dropped }

    func add(_ source: NotificationStream.Source, id: Int) {
        sources.withLock { $0.append((id, source)) }
        source.onTermination = { [weak self] termination in
            if termination == .cancelled { self?.sources.withLock { $0.removeAll { $0.id == id } } }
        }
    }

    /// Hands `value` to every stream; `true` when one of them dropped an older value for it.
    func deliver(_ value: [UInt8]) -> Bool {
        // Yielded outside the lock: a stream's end may call back into this fan-out.
        let sources = sources.withLock { $0 }
        var droppedAny = false
        for s in sources where s.source.yield(value) == .dropped {
            dropped.count.add(1, ordering: .relaxed)
            droppedAny = true
        }
        return droppedAny
    }

    /// Finishes every stream (each delivers what it holds, then ends).
    func finishAll() {
        let sources = sources.withLock { s in
            defer { s = [] }
            return s
        }
        for s in sources { s.source.finish() }
    }
}

/// Resumes a continuation with the first answer given; later answers are dropped.
final class FirstAnswer<Value: Sendable>: Sendable {
    private let continuation: Mutex<CheckedContinuation<Value, Never>?>

    init(_ continuation: CheckedContinuation<Value, Never>) { self.continuation = Mutex(continuation) }

    func answer(_ value: Value) {
        continuation.withLock { pending in
            let waiting = pending
            pending = nil
            return waiting
        }?.resume(returning: value)
    }
}
