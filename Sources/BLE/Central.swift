import BLEHost
import BLEProtocols
import BLETransport
import BLEWire

/// A device seen while scanning: its advertisement and scan response merged, as CoreBluetooth reports them.
public struct DiscoveredPeripheral: Sendable, Hashable {
    /// The device address and its type.
    public var address: LEAddress
    /// The advertising data followed by the scan response's structures.
    public var advertisementData: AdvertisingData
    /// The latest RSSI, in dBm.
    public var rssi: Int8
    /// Whether the device accepts connections.
    public var isConnectable: Bool
    /// The primary advertising PHY its advertisement came on: LE 1M, or LE Coded (long range, found only by a scan of
    /// LE Coded).
    public var primaryPHY: LEPHY = .le1M
    /// The secondary PHY of an extended advertisement's auxiliary packets; `nil` for legacy PDUs.
    public var secondaryPHY: LEPHY?
    /// The Advertising SID of an extended advertisement (0–15); `nil` for legacy PDUs.
    public var advertisingSID: UInt8?
    /// The TX power the advertiser put in its extended advertisement, in dBm; `nil` when not given (this is not the
    /// TX Power Level AD structure, which ``advertisementData`` holds).
    public var txPower: Int8?
    /// Whether the advertisement came in legacy PDUs (`false`: extended PDUs, Bluetooth 5 extended advertising).
    public var isLegacy = true
    /// Whether the extended advertisement's data arrived incomplete (the controller truncated the chain).
    public var isTruncated = false
    /// Whether the advertiser answers scan requests: an active scan may get a scan response from it, which arrives
    /// after the advertisement (a scannable device's first discovery may come without its scan response data).
    /// Legacy ADV_IND and ADV_SCAN_IND are scannable; extended advertising is scannable or connectable, never both.
    public var isScannable = false
    /// The identity address of a bonded device behind ``address``, when ``address`` is a resolvable private address
    /// one of the central's bonds resolves (as ``Central/resolvedIdentity(of:)`` answers, at the time of the report);
    /// `nil` otherwise.
    public var identity: LEAddress?

    /// Creates a discovery: what a scan reports (a tracker, a gateway or a test may make one from elsewhere).
    public init(address: LEAddress, advertisementData: AdvertisingData, rssi: Int8, isConnectable: Bool) {
        self.address = address
        self.advertisementData = advertisementData
        self.rssi = rssi
        self.isConnectable = isConnectable
    }

    /// A discovered device with the PHY, SID, TX power and PDU kind of `report`.
    init(address: LEAddress, advertisementData: AdvertisingData, rssi: Int8, isConnectable: Bool, from report: AdvertisementReport) {
        self.init(address: address, advertisementData: advertisementData, rssi: rssi, isConnectable: isConnectable)
        primaryPHY = report.primaryPHY
        secondaryPHY = report.secondaryPHY
        advertisingSID = report.advertisingSID
        txPower = report.txPower
        isLegacy = report.isLegacy
        isTruncated = report.isTruncated
        isScannable = report.isScannable
        identity = report.identity
    }

    /// The advertised local name.
    public var name: String? { advertisementData.localName }
    /// The advertised service UUIDs (from advertising data and scan response).
    public var serviceUUIDs: [BluetoothUUID] { (try? advertisementData.serviceUUIDs()) ?? [] }
    /// The manufacturer specific data.
    public var manufacturerData: [ManufacturerData] { (try? advertisementData.manufacturerData()) ?? [] }
}

/// The central role: adapter state, scanning, connecting. Like CoreBluetooth's `CBCentralManager`, with async calls.
public final class Central: Sendable {
    /// The adapter this central runs on (shared with a peripheral manager on the same controller).
    public let adapter: Adapter
    /// The host stack of ``adapter``.
    var host: HCIHost { adapter.host }

    /// Creates a central on an adapter (usually powered on already). A ``PeripheralManager`` may use the same adapter:
    /// both roles then share the controller and the links' ATT bearers.
    public init(adapter: Adapter) {
        self.adapter = adapter
    }

    /// Creates a central over a transport and powers the controller on. `security` says how it pairs and where its
    /// bonds live.
    public convenience init(transport: any HCITransport, security: SecurityConfiguration = SecurityConfiguration()) async throws {
        self.init(adapter: try await Adapter(transport: transport, security: security))
    }

    /// Opens the controller named by a `--hci` style specification (`virtual` joins the process's
    /// ``EmbeddedWorld``). Like `CBCentralManager`, it never fails: when the controller cannot be opened or brought
    /// up, ``state`` says so (`unauthorized` for a permission error, `unsupported` otherwise) and
    /// ``unavailableReason`` says why. ``open(_:btsnoop:security:)`` throws instead.
    public convenience init(_ spec: HCITransportSpec, security: SecurityConfiguration = SecurityConfiguration()) async {
        self.init(adapter: await Adapter(spec, security: security))
    }

    /// Opens the controller named by a `--hci` style specification and powers it on, or throws an error saying what
    /// failed (for example "no controller at tcp:127.0.0.1:9100: connection refused"). With `btsnoop`, the host's HCI
    /// traffic is recorded in that file (see ``Adapter/open(_:btsnoop:security:)``).
    /// `security` says how the central pairs and where its bonds live.
    public static func open(_ spec: HCITransportSpec, btsnoop: String? = nil,
                            security: SecurityConfiguration = SecurityConfiguration()) async throws -> Central {
        Central(adapter: try await Adapter.open(spec, btsnoop: btsnoop, security: security))
    }

    /// The address this central scans and connects with (`nil` before the controller is up).
    public var address: LEAddress? { get async { await adapter.address } }

    /// Powers the controller off: its links drop without a Disconnect exchange and the transport closes; ``state``
    /// becomes `poweredOff`. Disconnect peripherals first (``disconnect(_:)``) to end their links cleanly. Idempotent.
    public func powerOff() async { await adapter.powerOff() }

    /// Why the controller could not be opened, for a central whose ``state`` is `unsupported` or `unauthorized`.
    public var unavailableReason: String? { get async { await adapter.unavailableReason } }

    /// The adapter state now.
    public var state: AdapterState { get async { await adapter.state } }

    /// Adapter state changes, starting with the current state.
    public func stateUpdates() async -> AsyncStream<AdapterState> { await adapter.stateUpdates() }

    /// Scans for peripherals.
    ///
    /// - Parameters:
    ///   - services: only peripherals advertising one of these service UUIDs, in their advertising data or scan
    ///     response (empty: all).
    ///   - allowDuplicates: report every advertisement; otherwise a peripheral is reported once, and again only when
    ///     its merged data changes (as when its scan response arrives).
    ///   - active: send scan requests (needed for scan responses).
    ///   - timeout: how long to scan; the stream then finishes and the scan stops (`nil`: until the stream is
    ///     cancelled or ``stopScan()`` is called).
    ///   - trackingLimit: the most devices the scan remembers (for duplicates and scan responses); beyond it, those
    ///     heard least recently are forgotten and reported again if heard again (``ScanTracker``).
    ///   - bufferingLimit: the most discoveries the stream holds for a consumer that falls behind; older ones are
    ///     dropped first.
    ///   - phys: the primary advertising PHYs to scan: LE 1M (the default), LE Coded (long range), or both. With a
    ///     controller that has the extended advertising commands the scan is an extended scan, which also reports
    ///     extended advertisements (``DiscoveredPeripheral/isLegacy`` false, with their PHYs, SID and TX power);
    ///     LE Coded needs those commands and LE Coded (``HostErrorCode/unsupportedByController(_:)`` otherwise).
    ///   - ownAddress: the address the scan uses, which an active scan's scan requests carry (``OwnAddress``; by
    ///     default the resolvable private address with privacy on, the identity address otherwise).
    public func scan(services: [BluetoothUUID] = [], allowDuplicates: Bool = false, active: Bool = true,
                     timeout: Duration? = nil, trackingLimit: Int = 4096,
                     bufferingLimit: Int = 1024, phys: LEPHYs = .le1M,
                     ownAddress: OwnAddress = .resolvableOrIdentity) async throws -> AsyncThrowingStream<DiscoveredPeripheral, any Error> {
        let batches = try await host.scanBatches(.init(active: active, filterDuplicates: false, phys: phys, ownAddress: ownAddress))
        return AsyncThrowingStream(bufferingPolicy: .bufferingNewest(max(1, bufferingLimit))) { continuation in
            let task = Self.track(batches, services: services, allowDuplicates: allowDuplicates, trackingLimit: trackingLimit,
                                  timeout: timeout, finish: { continuation.finish(throwing: $0) }) { discovered in
                for peripheral in discovered { continuation.yield(peripheral) }
            }
            // Cancelling the consumer ends the host's report stream, whose own termination stops the controller's scan
            // only if no newer scan has replaced it (stopping here could stop the next scan).
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Scans as ``scan(services:allowDuplicates:active:timeout:trackingLimit:bufferingLimit:phys:ownAddress:)`` does,
    /// but each element is a batch: the devices to report from every advertising report the host took in one step (a
    /// burst from the controller), in the order heard, never empty. A consumer that handles many reports a second
    /// (a gateway) pays one wake-up per burst instead of one per report. `bufferingLimit` counts batches.
    public func scanBatches(services: [BluetoothUUID] = [], allowDuplicates: Bool = false, active: Bool = true,
                            timeout: Duration? = nil, trackingLimit: Int = 4096,
                            bufferingLimit: Int = 256, phys: LEPHYs = .le1M,
                            ownAddress: OwnAddress = .resolvableOrIdentity) async throws -> AsyncThrowingStream<[DiscoveredPeripheral], any Error> {
        let batches = try await host.scanBatches(.init(active: active, filterDuplicates: false, phys: phys, ownAddress: ownAddress))
        return AsyncThrowingStream(bufferingPolicy: .bufferingNewest(max(1, bufferingLimit))) { continuation in
            let task = Self.track(batches, services: services, allowDuplicates: allowDuplicates, trackingLimit: trackingLimit,
                                  timeout: timeout, finish: { continuation.finish(throwing: $0) }) { discovered in
                continuation.yield(discovered)
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// The one task of a scan: the host's batches through a ``ScanTracker`` and the service filter, each batch's
    /// discoveries handed to `deliver` (only when there are some); `finish` once the reports end, fail, or `timeout`
    /// passes.
    private static func track(_ batches: AsyncThrowingStream<[AdvertisementReport], any Error>, services: [BluetoothUUID],
                              allowDuplicates: Bool, trackingLimit: Int, timeout: Duration?,
                              finish: @escaping @Sendable ((any Error)?) -> Void,
                              deliver: @escaping @Sendable ([DiscoveredPeripheral]) -> Void) -> Task<Void, Never> {
        let deadline = timeout.map { timeout in
            Task {
                try await Task.sleep(for: timeout)
                finish(nil)
            }
        }
        return Task {
            var tracker = ScanTracker(limit: trackingLimit, allowDuplicates: allowDuplicates)
            var discovered: [DiscoveredPeripheral] = []
            do {
                for try await batch in batches {
                    discovered.reserveCapacity(batch.count)
                    for report in batch {
                        guard let peripheral = tracker.receive(report) else { continue }
                        guard services.isEmpty || services.contains(where: peripheral.serviceUUIDs.contains) else { continue }
                        discovered.append(peripheral)
                    }
                    guard !discovered.isEmpty else { continue }
                    deliver(discovered)
                    discovered = []
                }
                finish(nil)
            } catch {
                finish(error)
            }
            deadline?.cancel()
        }
    }

    /// Stops any scan.
    public func stopScan() async { await host.stopScan() }

    /// The identity address of the bonded device behind `address`, when `address` is a resolvable private address
    /// that the IRK of one of this central's bonds resolves (Core 5.4, Vol 6, Part B, 1.3.2.2); `nil` for any other
    /// address (public, static random, non-resolvable, or a private address no bond resolves). Scan reports carry
    /// the address as heard; a gateway or tracker uses this to follow a private device by its identity.
    public func resolvedIdentity(of address: LEAddress) async -> LEAddress? { await host.resolvedIdentity(of: address) }

    /// Whether a scan is running.
    public var isScanning: Bool { get async { await host.isScanning } }

    /// Connects to a peripheral. Throws ``HostError`` (`connectionTimedOut`, `connectionFailed`) when it cannot.
    /// With a `reconnect` policy, a lost link is reconnected automatically and subscriptions are restored. Like iOS,
    /// the central starts the MTU exchange as the link comes up unless `exchangeMTU` is false, and returns without
    /// waiting for the peer's answer: ``RemotePeripheral/mtu`` and writes wait for it, nothing else does (a link to a
    /// peer that never answers ATT is usable for L2CAP channels). `ownAddress` is the address
    /// this central initiates with, the one the peripheral sees (``OwnAddress``; by default the resolvable private
    /// address with privacy on, the identity address otherwise); reconnections use the default.
    public func connect(_ peripheral: DiscoveredPeripheral, timeout: Duration = .seconds(10),
                        reconnect: ReconnectPolicy? = nil, exchangeMTU: Bool = true,
                        connectionInterval: ClosedRange<UInt16> = 0x0018...0x0028,
                        ownAddress: OwnAddress = .resolvableOrIdentity) async throws -> RemotePeripheral {
        try await connect(peripheral.address, name: peripheral.name, timeout: timeout, reconnect: reconnect, exchangeMTU: exchangeMTU,
                          connectionInterval: connectionInterval, ownAddress: ownAddress)
    }

    /// Connects to an address. `connectionInterval` is the range of connection intervals acceptable, in 1.25 ms units
    /// (7.5 ms to 4 s; by default 30 to 50 ms). `ownAddress` is the address this central initiates with
    /// (``OwnAddress``); reconnections use the default.
    public func connect(_ address: LEAddress, name: String? = nil, timeout: Duration = .seconds(10),
                        reconnect: ReconnectPolicy? = nil, exchangeMTU: Bool = true,
                        connectionInterval: ClosedRange<UInt16> = 0x0018...0x0028,
                        ownAddress: OwnAddress = .resolvableOrIdentity) async throws -> RemotePeripheral {
        let connection = try await host.connect(to: address, timeout: timeout, connectionInterval: connectionInterval,
                                                ownAddress: ownAddress)
        let engine = await engine()
        let peripheral = RemotePeripheral(central: self, engine: engine, connection: connection, name: name)
        await peripheral.link.startWatching(peripheral, policy: reconnect)
        // As iOS does: the exchange starts now and the connection does not wait for it (a peer without an ATT server
        // still gets a usable link); whatever needs the MTU waits for it.
        if exchangeMTU { await engine.beginMTUExchange(connection) }
        return peripheral
    }

    /// Abandons a ``connect(_:name:timeout:)`` to `address` still in progress (its call throws `CancellationError`);
    /// returns whether one was. An attempt to another device is left alone.
    @discardableResult
    public func cancelConnectionAttempt(to address: LEAddress) async -> Bool {
        await host.cancelConnectionAttempt(to: address)
    }

    /// Disconnects a peripheral (no automatic reconnection follows).
    ///
    /// The disconnection waits (5 s at most) until the controller completed the data already queued on the link —
    /// writes without response, L2CAP channel data — so that it is not discarded; the result says how that ended
    /// (``DeliveryOutcome/completed``, or how many packets were not confirmed when the link was disconnected anyway).
    @discardableResult
    public func disconnect(_ peripheral: RemotePeripheral) async throws -> DeliveryOutcome {
        // Told before the command goes out: the link-loss watcher must not take this disconnection for a loss, whatever
        // reason the controller reports (Bumble's reports 0x13 to the initiator, not 0x16).
        await peripheral.link.disconnectRequested()
        do {
            return try await host.disconnect(await peripheral.connection)
        } catch {
            await peripheral.link.disconnectFailed()
            throw error
        }
    }

    /// Connection events (connected, disconnected with a reason, parameters updated).
    public func connectionEvents() async -> AsyncStream<HostEvent> { await adapter.events() }

    /// The GATT engine of this central's links (shared with a peripheral manager on the same host).
    func engine() async -> GATTEngine { await host.gattEngine() }

    /// Keeps the databases ``RemotePeripheral/discoverAll(descriptors:)`` finds in `cache` (in memory, or in a file:
    /// `GATTCache(fileURL:)`), so that discovering an unchanged device again costs one round trip: reading its
    /// Database Hash. A device whose hash changed, that indicates Service Changed or answers Database Out Of Sync is
    /// discovered again. Pass `nil` to stop caching. Core 5.4, Vol 3, Part G, 2.5.2.
    public func useGATTCache(_ cache: GATTCache?) async {
        await host.setSharedGATTCache(cache)
    }
}
