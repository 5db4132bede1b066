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
    let state: PeripheralState

    init(central: Central, engine: GATTEngine, connection: HostConnection, name: String?) {
        self.central = central
        self.engine = engine
        self.name = name
        self.state = PeripheralState(connection: connection)
    }

    /// The current link (it changes when the central reconnects).
    public var connection: HostConnection { get async { await state.connection } }

    /// Link events: disconnections, reconnections.
    public func linkEvents() async -> AsyncStream<PeripheralLinkEvent> { await state.linkEvents() }

    /// The peripheral's address.
    public nonisolated var id: LEAddress { state.peer }

    /// Exchanges MTUs (asking for 247); returns the effective ATT_MTU.
    @discardableResult
    public func exchangeMTU() async throws -> Int { try await engine.exchangeMTU(await state.handle) }

    /// The effective ATT_MTU.
    public var mtu: Int { get async { await engine.mtu(await state.handle) } }

    /// The longest value a write of `type` takes: ATT_MTU − 3 for `.withoutResponse` (one Write Command), 512 for
    /// `.withResponse` (values longer than ATT_MTU − 3 go as prepared writes), as in CoreBluetooth.
    public func maximumWriteValueLength(for type: WriteType) async -> Int {
        await engine.maximumWriteValueLength(await state.handle, withResponse: type == .withResponse)
    }

    /// Whether a write without response can go out now without queueing behind full controller buffers (like
    /// `canSendWriteWithoutResponse`).
    public var canSendWriteWithoutResponse: Bool { get async { await central.host.isReadyToSend(await state.handle) } }

    /// Discovers primary services (all, or those in `uuids`).
    public func discoverServices(_ uuids: [BluetoothUUID]? = nil) async throws -> [GATTService] {
        guard let uuids else { return try await engine.discoverPrimaryServices(await state.handle) }
        var found: [GATTService] = []
        for uuid in uuids { found += try await engine.discoverPrimaryServices(await state.handle, uuid: uuid) }
        return found.sorted { $0.startHandle < $1.startHandle }
    }

    /// Discovers the characteristics of a service (all, or those in `uuids`).
    public func discoverCharacteristics(_ uuids: [BluetoothUUID]? = nil, for service: GATTService) async throws -> [GATTCharacteristic] {
        let all = try await engine.discoverCharacteristics(await state.handle, of: service)
        guard let uuids else { return all }
        return all.filter { uuids.contains($0.uuid) }
    }

    /// Discovers a characteristic's descriptors.
    public func discoverDescriptors(for characteristic: GATTCharacteristic) async throws -> [GATTDescriptor] {
        try await engine.discoverDescriptors(await state.handle, of: characteristic)
    }

    /// Reads a characteristic's value (a long value whole).
    public func readValue(for characteristic: GATTCharacteristic) async throws -> [UInt8] {
        try await engine.read(await state.handle, attribute: characteristic.valueHandle)
    }

    /// Reads a descriptor's value.
    public func readValue(for descriptor: GATTDescriptor) async throws -> [UInt8] {
        try await engine.read(await state.handle, attribute: descriptor.handle)
    }

    /// Writes a characteristic's value.
    public func writeValue(_ value: [UInt8], for characteristic: GATTCharacteristic, type: WriteType) async throws {
        switch type {
        case .withResponse: try await engine.write(await state.handle, attribute: characteristic.valueHandle, value: value)
        case .withoutResponse: try await engine.writeWithoutResponse(await state.handle, attribute: characteristic.valueHandle, value: value)
        }
    }

    /// Subscribes to a characteristic (notifications, or indications when it only indicates) and returns its values.
    /// With a reconnection policy the subscription survives a lost link: it is restored after reconnecting and the
    /// same stream goes on.
    public func notifications(for characteristic: GATTCharacteristic) async throws -> AsyncStream<[UInt8]> {
        let descriptors = try await discoverDescriptors(for: characteristic)
        guard let cccd = descriptors.first(where: { $0.uuid == .clientCharacteristicConfiguration }) else {
            throw GATTError(.att(.requestNotSupported, handle: characteristic.valueHandle), "\(characteristic.uuid) cannot notify")
        }
        let indications = !characteristic.properties.contains(.notify) && characteristic.properties.contains(.indicate)
        return try await state.subscribe(valueHandle: characteristic.valueHandle, cccd: cccd.handle, indications: indications, engine: engine)
    }

    /// Stops notifications of a characteristic.
    public func stopNotifications(for characteristic: GATTCharacteristic) async throws {
        try await state.unsubscribe(valueHandle: characteristic.valueHandle, engine: engine)
    }

    /// Service Changed indications from the peripheral (the handle ranges whose attributes changed; rediscover
    /// them), like `peripheral(_:didModifyServices:)`.
    public func servicesChanged() async throws -> AsyncStream<ClosedRange<UInt16>> {
        try await engine.serviceChanges(await state.handle)
    }

    /// The services a service includes.
    public func discoverIncludedServices(for service: GATTService) async throws -> [GATTService] {
        try await engine.discoverIncludedServices(await state.handle, of: service)
    }

    /// Reads the values of every characteristic of type `uuid` without discovering them (Read Using Characteristic
    /// UUID).
    public func readValues(ofType uuid: BluetoothUUID) async throws -> [[UInt8]] {
        try await engine.read(await state.handle, byType: uuid).map(\.value)
    }

    /// Reads several values in one request.
    public func readValues(for characteristics: [GATTCharacteristic]) async throws -> [[UInt8]] {
        try await engine.readMultiple(await state.handle, attributes: characteristics.map(\.valueHandle))
    }

    /// The link's RSSI in dBm (HCI Read RSSI).
    public func readRSSI() async throws -> Int8 {
        try await central.host.send(HCIReadRSSI(handle: await state.handle)).rssi
    }
}

/// A remote peripheral's mutable side: its current link, its subscriptions, reconnection.
actor PeripheralState {
    struct Subscription {
        var cccd: UInt16
        var indications: Bool
        var continuation: AsyncStream<[UInt8]>.Continuation
        var forwarder: Task<Void, Never>?
    }

    var connection: HostConnection
    nonisolated let peer: LEAddress
    var subscriptions: [UInt16: Subscription] = [:]
    var linkSubscribers: [Int: AsyncStream<PeripheralLinkEvent>.Continuation] = [:]
    var nextSubscriber = 0
    var reconnecting = false
    /// The app asked to disconnect: the next disconnection is not a loss, whatever its reason.
    var disconnecting = false
    var watcher: Task<Void, Never>?

    init(connection: HostConnection) {
        self.connection = connection
        self.peer = connection.peer
    }

    var handle: UInt16 { connection.handle }

    /// Whether a lost link's subscriptions wait to be restored (a reconnection policy is watching).
    var keepsSubscriptionsAlive: Bool { reconnecting || watcher != nil }

    func linkEvents() -> AsyncStream<PeripheralLinkEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: PeripheralLinkEvent.self)
        linkSubscribers[nextSubscriber] = continuation
        nextSubscriber += 1
        return stream
    }

    private func publish(_ event: PeripheralLinkEvent) {
        for c in linkSubscribers.values { c.yield(event) }
    }

    func subscribe(valueHandle: UInt16, cccd: UInt16, indications: Bool, engine: GATTEngine) async throws -> AsyncStream<[UInt8]> {
        let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self)
        subscriptions[valueHandle]?.forwarder?.cancel()
        subscriptions[valueHandle]?.continuation.finish()
        subscriptions[valueHandle] = Subscription(cccd: cccd, indications: indications, continuation: continuation)
        try await bind(valueHandle, engine: engine)
        return stream
    }

    /// Subscribes on the current link and forwards its values into the subscription's stream.
    private func bind(_ valueHandle: UInt16, engine: GATTEngine) async throws {
        guard let s = subscriptions[valueHandle] else { return }
        let values = try await engine.subscribe(handle, valueHandle: valueHandle, cccdHandle: s.cccd, indications: s.indications)
        let continuation = s.continuation
        subscriptions[valueHandle]?.forwarder = Task { [weak self] in
            for await value in values { continuation.yield(value) }
            // The link's stream ended: unless a reconnection will restore it, so does the subscription.
            guard let self else {
                continuation.finish()
                return
            }
            if await !self.keepsSubscriptionsAlive { continuation.finish() }
        }
    }

    func unsubscribe(valueHandle: UInt16, engine: GATTEngine) async throws {
        guard let s = subscriptions.removeValue(forKey: valueHandle) else { return }
        s.forwarder?.cancel()
        s.continuation.finish()
        try await engine.unsubscribe(handle, valueHandle: valueHandle, cccdHandle: s.cccd)
    }

    /// Watches the link; when it is lost (not disconnected by this central), reconnects as `policy` says and restores
    /// every subscription.
    func startWatching(_ peripheral: RemotePeripheral, policy: ReconnectPolicy) async {
        let events = await peripheral.central.host.events()
        watcher = Task { [weak self, weak peripheral] in
            for await event in events {
                guard let self, let peripheral, case .disconnected(let lost, let reason) = event else { continue }
                guard lost.link == (await self.connection).link else { continue }
                await self.linkLost(reason, peripheral: peripheral, policy: policy)
            }
        }
    }

    func disconnectRequested() { disconnecting = true }

    private func linkLost(_ reason: HCIStatus, peripheral: RemotePeripheral, policy: ReconnectPolicy) async {
        publish(.disconnected(reason))
        // Disconnected by this side on purpose: no reconnection.
        guard reason != .connectionTerminatedByLocalHost, !disconnecting else {
            finishAll()
            return
        }
        reconnecting = true
        defer { reconnecting = false }
        var delay = policy.initialDelay
        for attempt in 1...max(1, policy.maximumAttempts) {
            try? await Task.sleep(for: delay)
            do {
                connection = try await peripheral.central.host.connect(to: peer, timeout: policy.attemptTimeout)
                for valueHandle in subscriptions.keys.sorted() { try await bind(valueHandle, engine: peripheral.engine) }
                publish(.reconnected(attempt: attempt))
                return
            } catch {
                delay = min(delay * 2, policy.maximumDelay)
            }
        }
        publish(.reconnectionFailed)
        finishAll()
    }

    private func finishAll() {
        watcher?.cancel()
        watcher = nil
        for s in subscriptions.values {
            s.forwarder?.cancel()
            s.continuation.finish()
        }
        subscriptions = [:]
    }
}
