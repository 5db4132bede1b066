import BLEHost
import BLEProtocols
import BLETransport
import BLEWire

/// A central connecting to or leaving a peripheral manager.
public enum CentralEvent: Sendable, Hashable {
    /// A central connected.
    case connected(HostConnection)
    /// A central's link went down (its subscriptions ended with it), and why.
    case disconnected(HostConnection, reason: HCIStatus)
    /// A central's link got encrypted: with the bond's stored key and no pairing (`usingBond`), or by a pairing.
    case encrypted(HostConnection, LinkSecurity, usingBond: Bool)
    /// A central paired.
    case paired(HostConnection, PairingOutcome)
    /// A central's pairing failed.
    case pairingFailed(HostConnection, SMPPairingFailure)
    /// This side shows a passkey for the central's user to type.
    case passkey(HostConnection, UInt32)
    /// The Enhanced ATT bearers a central has open changed: `count` besides the unenhanced one (a central opens
    /// them on an encrypted link; the host accepts them and answers each request on the bearer it came on).
    case enhancedATTBearers(HostConnection, count: Int)
}

/// The peripheral role: publish services, advertise, answer centrals, push values. Like CoreBluetooth's
/// `CBPeripheralManager`, with async calls.
public final class PeripheralManager: Sendable {
    /// The adapter this peripheral manager runs on (shared with a central on the same controller).
    public let adapter: Adapter
    /// The host stack of ``adapter``.
    var host: HCIHost { adapter.host }
    let engine: GATTEngine
    let store: ServiceStore
    /// Hands the application requests to the streams of ``requests()``.
    let answers: ApplicationRequestHub

    /// Creates a peripheral manager on an adapter that is already powered on. A ``Central`` may use the same adapter:
    /// both roles then share the controller and the links' ATT bearers.
    public init(adapter: Adapter, deviceName: String = "swift-ble") async {
        self.adapter = adapter
        store = ServiceStore()
        answers = ApplicationRequestHub()
        engine = await adapter.host.gattEngine()
        await engine.setDeviceName(deviceName)
    }

    /// Creates a peripheral manager over a transport and powers the controller on. `security` says how it pairs and
    /// where its bonds live.
    public convenience init(transport: any HCITransport, deviceName: String = "swift-ble",
                            security: SecurityConfiguration = SecurityConfiguration()) async throws {
        await self.init(adapter: try await Adapter(transport: transport, security: security), deviceName: deviceName)
    }

    /// Opens the controller named by a `--hci` style specification (`virtual` joins the embedded simulated world) and
    /// powers it on, recording its HCI traffic in the `btsnoop` file when one is given. Throws ``TransportError`` or
    /// ``HostError`` saying what failed (for example "no controller at tcp:127.0.0.1:9100: connection refused").
    public convenience init(_ spec: HCITransportSpec, deviceName: String = "swift-ble", btsnoop: String? = nil,
                            security: SecurityConfiguration = SecurityConfiguration()) async throws {
        await self.init(adapter: try await Adapter.open(spec, btsnoop: btsnoop, security: security), deviceName: deviceName)
    }

    /// Changes the GAP Device Name it serves (Generic Access, 0x2A00) to centrals reading it from now on. The
    /// advertised name is what ``startAdvertising(name:serviceUUIDs:manufacturerData:txPowerLevel:restartAfterConnection:)``
    /// was given; advertise again to change that too.
    public func setDeviceName(_ name: String) async { await engine.setDeviceName(name) }

    /// The address this peripheral advertises with (`nil` before the controller is up).
    public var address: LEAddress? { get async { await adapter.address } }

    /// Powers the controller off: advertising stops, connected centrals' links drop and the transport closes.
    /// Idempotent.
    public func powerOff() async { await adapter.powerOff() }

    /// Publishes a service after the ones already published (their handles do not move) and returns the handles it
    /// takes. Connected centrals that subscribed to Service Changed are told about that range.
    @discardableResult
    public func add(_ service: GATTServiceDefinition) async throws -> ClosedRange<AttributeHandle> {
        try await engine.addService(service)
    }

    /// Removes a published service (the first of type `uuid`); the other services keep their handles, and centrals
    /// that subscribed to Service Changed are told about the range it took.
    public func remove(_ uuid: BluetoothUUID) async throws {
        guard let service = await engine.database.services.first(where: { $0.uuid == uuid }) else {
            throw GATTError(.att(.attributeNotFound, handle: 0), "no service \(uuid) is published")
        }
        try await engine.removeService(at: service.start)
    }

    /// Removes the published service whose declaration is at `handle` (as ``add(_:)`` returned it), for a database
    /// where a service type appears more than once; centrals subscribed to Service Changed are told.
    public func removeService(startingAt handle: AttributeHandle) async throws {
        guard await engine.database.services.contains(where: { $0.start == handle }) else {
            throw GATTError(.att(.attributeNotFound, handle: handle), "no service starts at handle \(handle)")
        }
        try await engine.removeService(at: handle)
    }

    /// Centrals connecting and leaving, and their links' security (encryption, pairing, passkeys shown).
    public func centralEvents() async -> AsyncStream<CentralEvent> {
        let events = await host.events()
        return AsyncStream { continuation in
            let task = Task {
                for await event in events {
                    switch event {
                    case .connected(let c) where c.role == .peripheral: continuation.yield(.connected(c))
                    case .disconnected(let c, let reason) where c.role == .peripheral: continuation.yield(.disconnected(c, reason: reason))
                    case .encrypted(let c, let security, let usingBond) where c.role == .peripheral:
                        continuation.yield(.encrypted(c, security, usingBond: usingBond))
                    case .pairingCompleted(let c, let outcome) where c.role == .peripheral: continuation.yield(.paired(c, outcome))
                    case .pairingFailed(let c, let failure) where c.role == .peripheral: continuation.yield(.pairingFailed(c, failure))
                    case .passkeyDisplayed(let c, let passkey) where c.role == .peripheral: continuation.yield(.passkey(c, passkey))
                    case .enhancedATTBearers(let c, let count) where c.role == .peripheral:
                        continuation.yield(.enhancedATTBearers(c, count: count))
                    default: break
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Starts advertising a name, service UUIDs, a TX power level and manufacturer data, laid out as
    /// ``Advertisement/layout(name:serviceUUIDs:txPowerLevel:manufacturerData:)`` says: the name moves to the scan
    /// response when the advertising packet is full (shortened if it must be), and service UUIDs that do not fit go
    /// to the scan response as incomplete lists. Throws ``WireError`` (oversized) when the Flags, TX power level and
    /// manufacturer data alone do not fit in 31 bytes.
    ///
    /// With `restartAfterConnection`, advertising resumes after each connection and disconnection, so several centrals
    /// can connect (legacy advertising stops when a connection is made).
    public func startAdvertising(name: String? = nil, serviceUUIDs: [BluetoothUUID] = [], manufacturerData: ManufacturerData? = nil,
                                 txPowerLevel: Int8? = nil, restartAfterConnection: Bool = false) async throws {
        let layout = AdvertisingData.layout(name: name, serviceUUIDs: serviceUUIDs, txPowerLevel: txPowerLevel,
                                          manufacturerData: manufacturerData)
        let options = HCIHost.AdvertisingOptions(data: layout.data, scanResponse: layout.scanResponse)
        try await host.startAdvertising(options)
        await store.setRestart(restartAfterConnection ? [options] : nil, host: host)
    }

    /// Starts advertising arbitrary data with a chosen interval and kind: connectable, scannable only, or
    /// non-connectable (a broadcaster, as beacons advertise). Calling it again while advertising replaces the data
    /// and parameters at once (frame rotation).
    ///
    /// Throws ``WireError`` (oversized) when the data or the scan response does not fit in 31 bytes, and
    /// ``HostError`` (`commandFailed` with Invalid HCI Command Parameters) when the interval is outside
    /// 20 ms...10.24 s. With `restartAfterConnection` (connectable advertising only), advertising resumes after each
    /// connection and disconnection.
    public func startAdvertising(_ advertisement: Advertisement, restartAfterConnection: Bool = false) async throws {
        let options = try advertisement.options()
        try await host.startAdvertising(options)
        await store.setRestart(restartAfterConnection && advertisement.kind == .connectable ? [options] : nil, host: host)
    }

    /// Advertises several advertisements at once, each in its own advertising set with its own data, kind, PDUs
    /// (legacy or extended) and PHY (replacing what is on). A central connecting to a connectable one ends that one
    /// only; with `restartAfterConnection` all of them start again after each connection and disconnection.
    ///
    /// More than one advertisement, extended PDUs and LE Coded need a controller with the extended advertising
    /// commands (Core 5.4, Vol 4, Part E, 7.8.53–7.8.56): otherwise this throws ``HostError`` with
    /// ``HostErrorCode/unsupportedByController(_:)`` (`.extendedAdvertising`, `.advertisingSets(n)` beyond the
    /// controller's sets, `.codedPHY` without LE Coded) and sends nothing. Throws ``WireError`` (oversized) when data
    /// exceeds 31 bytes for legacy PDUs or the controller's maximum for extended ones.
    public func startAdvertising(_ advertisements: [Advertisement], restartAfterConnection: Bool = false) async throws {
        let sets = try advertisements.map { try $0.options() }
        try await host.startAdvertising(sets: sets)
        let restarts = restartAfterConnection && advertisements.contains { $0.kind == .connectable }
        await store.setRestart(restarts ? sets : nil, host: host)
    }

    /// Whether this manager's controller advertises with the extended commands (it lists them): extended PDUs, LE
    /// Coded and several advertisements at once are then available.
    public var supportsExtendedAdvertising: Bool { get async { await host.usesExtendedAdvertising } }

    /// How many advertisements ``startAdvertising(_:restartAfterConnection:)-([Advertisement],_)`` can run at once
    /// (1 without the extended commands).
    public var maximumAdvertisingSets: Int {
        get async { await host.usesExtendedAdvertising ? await host.capabilities.advertisingSetCount ?? 1 : 1 }
    }

    /// The longest value ``updateValue(_:for:in:onSubscribedCentrals:)`` can send to `central` (ATT_MTU − 3, like
    /// CoreBluetooth's `CBCentral.maximumUpdateValueLength`).
    public func maximumUpdateValueLength(for central: HostConnection) async -> Int {
        ATT.maximumNotificationValueLength(mtu: await engine.mtu(central))
    }

    /// Asks the link layer to send link-layer packets of up to `octets` payload octets (27…251) on `central`'s link
    /// (LE Set Data Length, which either side of a link may use); the link's data length follows when the controller
    /// reports the change. Larger packets carry the same data in fewer packets and less air time.
    public func setDataLength(_ octets: UInt16 = 251, for central: HostConnection) async throws {
        try await host.setDataLength(central, octets: octets)
    }

    /// Asks `central` for new connection parameters (L2CAP Connection Parameter Update Request: Core 5.4, Vol 3,
    /// Part A, 4.20) and returns the link once the central applies them: a connection interval in `interval` (1.25 ms
    /// units, 0x0006…0x0C80), `latency` connection events this side may skip, `supervisionTimeout` in 10 ms units. The
    /// central decides; it may apply other values within its own limits.
    ///
    /// - Throws: ``HostError``: `connectionParameterUpdateRefused` when the central rejects the request or does not
    ///   answer in time, `commandFailed` when the update procedure fails, `notConnected` when the link drops first,
    ///   `l2cap(.invalidParameters)` for values out of range.
    @discardableResult
    public func requestConnectionParameters(interval: ClosedRange<UInt16>, latency: UInt16 = 0, supervisionTimeout: UInt16,
                                            for central: HostConnection) async throws -> HostConnection {
        try await host.requestConnectionParameters(central, interval: interval, latency: latency, supervisionTimeout: supervisionTimeout)
    }

    /// Stops advertising.
    public func stopAdvertising() async throws {
        await store.setRestart(nil, host: host)
        try await host.stopAdvertising()
    }

    /// Sets a characteristic's value and pushes it to the subscribed centrals, or only to `centrals` among them;
    /// returns the centrals it reached (like `updateValue(_:for:onSubscribedCentrals:)`). Indications wait for each
    /// central's confirmation, one outstanding indication per central.
    @discardableResult
    public func updateValue(_ value: [UInt8], for characteristic: BluetoothUUID, in service: BluetoothUUID? = nil,
                            onSubscribedCentrals centrals: [HostConnection]? = nil) async throws -> [HostConnection] {
        guard let handle = await engine.database.valueHandle(of: characteristic, in: service) else {
            throw GATTError(.att(.attributeNotFound, handle: 0), "no characteristic \(characteristic) is published")
        }
        return try await engine.updateValue(value, for: handle, onLinks: centrals.map { Set($0.map(\.link)) })
    }

    /// Sets the value of the characteristic whose value handle is `valueHandle` and pushes it to the subscribed
    /// centrals, or only to `centrals` among them: ``updateValue(_:for:in:onSubscribedCentrals:)`` for a database
    /// where a characteristic UUID appears more than once. Throws when no characteristic value has that handle.
    @discardableResult
    public func updateValue(_ value: [UInt8], forValueHandle valueHandle: AttributeHandle,
                            onSubscribedCentrals centrals: [HostConnection]? = nil) async throws -> [HostConnection] {
        guard case .characteristicValue = await engine.database.attribute(valueHandle)?.role else {
            throw GATTError(.att(.attributeNotFound, handle: valueHandle), "no characteristic value has handle \(valueHandle)")
        }
        return try await engine.updateValue(value, for: valueHandle, onLinks: centrals.map { Set($0.map(\.link)) })
    }

    /// Sets several characteristics' values at once (by value handle) and pushes them to the subscribed centrals: a
    /// central that enabled Multiple Handle Value Notifications gets those it subscribed to in one PDU when they fit
    /// its ATT_MTU, the others one notification (or indication) per value. Returns the centrals it reached. Throws,
    /// changing nothing, when a handle is no characteristic value. Core 5.4, Vol 3, Part G, 4.10.2.
    @discardableResult
    public func updateValues(_ values: [(valueHandle: AttributeHandle, value: [UInt8])]) async throws -> [HostConnection] {
        let database = await engine.database
        for (handle, _) in values {
            guard case .characteristicValue = database.attribute(handle)?.role else {
                throw GATTError(.att(.attributeNotFound, handle: handle), "no characteristic value has handle \(handle)")
            }
        }
        return try await engine.updateValues(values.map { (handle: $0.valueHandle, value: $0.value) })
    }

    /// Whether an update would go out to every central without waiting for controller buffers (like
    /// `peripheralManagerIsReady(toUpdateSubscribers:)`); ``updateValue(_:for:in:)`` waits when it is not.
    public var isReadyToUpdateSubscribers: Bool { get async { await engine.isReadyToUpdateSubscribers() } }

    /// The current value of a published characteristic.
    public func value(of characteristic: BluetoothUUID) async -> [UInt8]? {
        let database = await engine.database
        return database.valueHandle(of: characteristic).flatMap { database.attribute($0)?.value }
    }

    /// The centrals connected now.
    public var connectedCentrals: [HostConnection] { get async { await host.connections.filter { $0.role == .peripheral } } }

    /// Disconnects a central (HCI Disconnect with `reason`, Remote User Terminated Connection by default). CoreBluetooth
    /// has no equivalent; a peripheral on Linux often needs it (to drop a misbehaving central, or after a control-point
    /// command asks for it).
    ///
    /// HCI Disconnect goes once the controller completed the data already queued on the link (notifications, L2CAP
    /// channel data), or after 5 s; the result says how that wait ended (``DeliveryOutcome/completed``, or how many
    /// packets were not confirmed when the link was disconnected anyway).
    @discardableResult
    public func disconnect(_ central: HostConnection, reason: HCIStatus = .remoteUserTerminatedConnection) async throws -> DeliveryOutcome {
        try await host.disconnect(central, reason: reason)
    }

    /// The published attribute database, with the handles centrals see (GAP and GATT services first).
    public var database: GATTDatabase { get async { await engine.database } }

    /// Replaces the whole published database with `database` (its handles as laid out, its Generic Access and
    /// Generic Attribute services when it has them): a clone of another device's database, or a device file's.
    /// Connected centrals subscribed to Service Changed are told the whole range changed.
    public func replaceDatabase(with database: GATTDatabase) async {
        await engine.replaceDatabase(database)
    }
}

/// The advertising a peripheral manager restarts after connections.
actor ServiceStore {
    var restarter: Task<Void, Never>?

    /// Restarts advertising with `options` after every connection and disconnection (nil: stop doing so).
    func setRestart(_ options: [HCIHost.AdvertisingOptions]?, host: HCIHost) async {
        restarter?.cancel()
        restarter = nil
        guard let options else { return }
        let events = await host.events()
        restarter = Task {
            for await event in events {
                switch event {
                case .connected(let c) where c.role == .peripheral: try? await host.startAdvertising(sets: options)
                case .disconnected(let c, _) where c.role == .peripheral: try? await host.startAdvertising(sets: options)
                default: break
                }
            }
        }
    }
}
