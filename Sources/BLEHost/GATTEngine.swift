import BLEProtocols
import BLEWire

/// GATT over every link of an ``HCIHost``: the client procedures, the served database, notifications and indications,
/// the application's requests. Core 5.4, Vol 3, Parts F and G.
///
/// An engine is a view of its host's GATT: the host owns the one GATT driver of its links (a link has one ATT
/// bearer), and every call here runs on the host, in its isolation, straight down to its outbox. Any number of
/// engines of one host (``HCIHost/gattEngine()``, or created with ``init(host:database:preferredMTU:)``) are views of
/// the same state.
///
/// Everything that belongs to a link (its bearer, waiters, subscriptions, timers) is keyed by its ``LinkID``, never by
/// its connection handle: a controller may give the handle to the next link at once, and nothing of the old link can
/// reach the new one.
public struct GATTEngine: Sendable {
    /// The host whose GATT this is.
    public let host: HCIHost
    private let initialDatabase: GATTDatabase?
    private let initialMTU: Int?

    /// A view of `host`'s GATT that, once ``start()`` is called, serves `database` (when given) and asks for and offers
    /// `preferredMTU` (when given) on links from then on.
    public init(host: HCIHost, database: GATTDatabase? = nil, preferredMTU: Int? = nil) {
        self.host = host
        self.initialDatabase = database
        self.initialMTU = preferredMTU
    }

    /// Starts serving: every current and future link of the host gets an ATT bearer, and the database and MTU given
    /// to ``init(host:database:preferredMTU:)`` take effect.
    public func start() async {
        let database = initialDatabase, mtu = initialMTU
        await host.withGATT { _, gatt in
            if let database { gatt.database = database }
            if let mtu { gatt.setPreferredMTU(mtu) }
        }
    }

    // MARK: Settings and counters

    /// The local database served to peers.
    public var database: GATTDatabase { get async { await host.withGATT { _, gatt in gatt.database } } }
    /// The ATT transaction timeout (Core 5.4, Vol 3, Part F, 3.3.3), for links attached from now on.
    public var transactionTimeout: Duration { get async { await host.withGATT { _, gatt in gatt.transactionTimeout } } }
    /// Sets the ATT transaction timeout (30 s by default) of links attached from now on.
    public func setTransactionTimeout(_ timeout: Duration) async {
        await host.withGATT { _, gatt in gatt.transactionTimeout = timeout }
    }
    /// The MTU this side asks for and offers.
    public var preferredMTU: Int { get async { await host.withGATT { _, gatt in gatt.preferredMTU } } }
    /// Values a subscriber (``subscribe(_:valueHandle:cccdHandle:indications:)``) holds at most before it loses the
    /// oldest, for subscriptions made from now on.
    public var notificationBufferingLimit: Int { get async { await host.withGATT { _, gatt in gatt.notificationBufferingLimit } } }
    /// Sets ``notificationBufferingLimit`` (at least 1).
    public func setNotificationBufferingLimit(_ limit: Int) async {
        await host.withGATT { _, gatt in gatt.notificationBufferingLimit = max(1, limit) }
    }
    /// Values dropped because a subscriber fell more than ``notificationBufferingLimit`` behind.
    public var droppedNotificationCount: Int { get async { await host.withGATT { _, gatt in gatt.droppedNotificationCount } } }
    /// How the last ``discoverDatabase(_:descriptors:)`` went: its requests (round trips) before the result was
    /// ready, and whether the cache answered. Requests of other callers meanwhile are counted too.
    public var lastDiscovery: GATTDiscoveryReport? { get async { await host.withGATT { _, gatt in gatt.lastDiscovery } } }
    /// The client's cache of peers' databases (``discoverDatabase(_:descriptors:)``), if any.
    public var cache: GATTCache? { get async { await host.withGATT { _, gatt in gatt.cache } } }
    /// Uses `cache` for ``discoverDatabase(_:descriptors:)`` from now on (`nil`: no cache).
    public func setCache(_ cache: GATTCache?) async { await host.setSharedGATTCache(cache) }
    /// ATT requests sent as a client (round trips), over all links.
    public var requestCount: Int { get async { await host.withGATT { _, gatt in gatt.requestCount } } }

    /// The effective ATT_MTU of the link, once an MTU exchange under way (``beginMTUExchange(_:)``) settled it.
    public func mtu(_ connection: HostConnection) async -> Int {
        await host.withGATT { host, gatt in await gatt.settledMTU(connection, host: host) }
    }

    /// The effective ATT_MTU of the link now, without waiting for an MTU exchange under way (23 until one settles).
    public func currentMTU(_ connection: HostConnection) async -> Int {
        await host.withGATT { _, gatt in gatt.mtu(connection) }
    }

    /// The longest value one write carries: ATT_MTU − 3 without response (one Write Command); 512 with response,
    /// since ``write(_:attribute:value:)`` sends longer values as prepared writes (what CoreBluetooth's
    /// `maximumWriteValueLength(for:)` answers too).
    public func maximumWriteValueLength(_ connection: HostConnection, withResponse: Bool) async -> Int {
        withResponse ? ATT.maximumAttributeValueLength : ATT.maximumWriteValueLength(mtu: await mtu(connection))
    }

    // MARK: Client

    /// Runs a client procedure on the link. When the server refuses for security (Insufficient Authentication,
    /// Insufficient Encryption, Encryption Key Size Too Short) and the host pairs on demand (``HCIHost/pairsOnDemand``),
    /// the link is secured (the bond's key, or pairing) and the procedure runs again, as CoreBluetooth does. An
    /// unencrypted link first gets the host's usual pairing; a link already encrypted and still refused for
    /// authentication gets an authenticated (MITM) pairing: at most these two attempts.
    public func run<P: GATTProcedure>(_ procedure: P, on connection: HostConnection) async throws -> P.Output
    where P.Output: Sendable {
        try await host.withGATT { host, gatt in try await gatt.run(procedure, on: connection, host: host) }
    }

    /// Exchanges MTUs (the client asks for ``preferredMTU``); returns the effective ATT_MTU. A client exchanges MTUs
    /// once per link (Core 5.4, Vol 3, Part F, 3.4.2.1): later calls return the MTU without asking again.
    public func exchangeMTU(_ connection: HostConnection) async throws -> Int {
        try await host.withGATT { host, gatt in try await gatt.exchangeMTU(connection, host: host) }
    }

    /// Starts the MTU exchange and returns without waiting for the peer, as iOS does after connecting: the request is
    /// the first on the link's bearer, and only what needs the MTU waits for it (``mtu(_:)``,
    /// ``maximumWriteValueLength(_:withResponse:)``, writes, ``exchangeMTU(_:)``). A peer that never answers ATT
    /// leaves the link usable for everything else.
    public func beginMTUExchange(_ connection: HostConnection) async {
        await host.withGATT { host, gatt in gatt.beginMTUExchange(connection, host: host) }
    }

    /// Discovers primary services (all, or those of type `uuid`).
    public func discoverPrimaryServices(_ connection: HostConnection, uuid: BluetoothUUID? = nil) async throws -> [GATTService] {
        try await host.withGATT { host, gatt in try await gatt.discoverPrimaryServices(connection, uuid: uuid, host: host) }
    }

    /// Discovers the characteristics of `service` (all, or those of type `uuid`).
    public func discoverCharacteristics(_ connection: HostConnection, of service: GATTService,
                                        uuid: BluetoothUUID? = nil) async throws -> [GATTCharacteristic] {
        try await host.withGATT { host, gatt in
            try await gatt.discoverCharacteristics(connection, of: service, uuid: uuid, host: host)
        }
    }

    /// Discovers the descriptors of `characteristic`.
    public func discoverDescriptors(_ connection: HostConnection, of characteristic: GATTCharacteristic) async throws -> [GATTDescriptor] {
        try await host.withGATT { host, gatt in try await gatt.discoverDescriptors(connection, of: characteristic, host: host) }
    }

    /// Discovers every primary service, its characteristics and (unless `descriptors` is false) their descriptors in
    /// as few round trips as the Core Specification allows: the characteristics of all services in one walk, the
    /// descriptors only where a characteristic leaves room for them, several gaps per request (``DatabaseDiscovery``).
    /// The result equals discovering each service and characteristic separately.
    ///
    /// With a ``cache`` (``setCache(_:)``), the peer's Database Hash is read first (one Read By Type over the whole
    /// range): when it equals the cached entry's, the cached database is the answer, one round trip in all. Otherwise
    /// the database is discovered and cached with the hash. Either way, when the peer has Client Supported Features,
    /// this client enables robust caching there, so that the peer answers Database Out Of Sync if its database
    /// changes during the connection (after a fresh discovery before returning; after a cached one in the background,
    /// as the next request). Core 5.4, Vol 3, Part G, 2.5.2.
    public func discoverDatabase(_ connection: HostConnection, descriptors: Bool = true) async throws -> [GATTDiscoveredService] {
        try await discoverDatabaseReporting(connection, descriptors: descriptors).services
    }

    /// ``discoverDatabase(_:descriptors:)`` with how it went: the round trips before the result was ready, and
    /// whether the cache answered.
    public func discoverDatabaseReporting(_ connection: HostConnection, descriptors: Bool = true) async throws
        -> (services: [GATTDiscoveredService], report: GATTDiscoveryReport) {
        try await host.withGATT { host, gatt in
            let (services, report) = try await gatt.discoverDatabaseReporting(connection, descriptors: descriptors, host: host)
            return DiscoveryResult(services: services, report: report)
        }.tuple
    }

    /// The peer's Database Hash (Read Using Characteristic UUID over the whole range), `nil` when it has none.
    public func readDatabaseHash(_ connection: HostConnection) async throws -> [UInt8]? {
        try await host.withGATT { host, gatt in try await gatt.readDatabaseHash(connection, host: host) }
    }

    /// Discovers the services a service includes. Core 5.4, Vol 3, Part G, 4.5.1.
    public func discoverIncludedServices(_ connection: HostConnection, of service: GATTService) async throws -> [GATTService] {
        try await host.withGATT { host, gatt in try await gatt.discoverIncludedServices(connection, of: service, host: host) }
    }

    /// Reads the values of characteristics of type `uuid` in `range` without discovering them (Read Using
    /// Characteristic UUID). Core 5.4, Vol 3, Part G, 4.8.2.
    public func read(_ connection: HostConnection, byType uuid: BluetoothUUID,
                     in range: ClosedRange<AttributeHandle> = 1...0xFFFF) async throws -> [(handle: AttributeHandle, value: [UInt8])] {
        try await host.withGATT { host, gatt in
            try await gatt.read(connection, byType: uuid, in: range, host: host).map { HandleValue(handle: $0.handle, value: $0.value) }
        }.map { ($0.handle, $0.value) }
    }

    /// Reads several values in one request (Read Multiple Variable Length Values, each value whole up to the MTU).
    /// Core 5.4, Vol 3, Part G, 4.8.5.
    public func readMultiple(_ connection: HostConnection, attributes: [AttributeHandle]) async throws -> [[UInt8]] {
        try await host.withGATT { host, gatt in try await gatt.readMultiple(connection, attributes: attributes, host: host) }
    }

    /// Reads a value; long values are read whole with Read Blob. Core 5.4, Vol 3, Part G, 4.8.1 and 4.8.3.
    public func read(_ connection: HostConnection, attribute: AttributeHandle) async throws -> [UInt8] {
        try await host.withGATT { host, gatt in try await gatt.read(connection, attribute: attribute, host: host) }
    }

    /// Writes a value with a Write Request, or with prepared writes (reliably: each echo is checked) when it does
    /// not fit one PDU. Core 5.4, Vol 3, Part G, 4.9.3 and 4.9.4.
    public func write(_ connection: HostConnection, attribute: AttributeHandle, value: [UInt8]) async throws {
        try await host.withGATT { host, gatt in try await gatt.write(connection, attribute: attribute, value: value, host: host) }
    }

    /// Writes without response (a Write Command of at most ATT_MTU − 3 bytes).
    public func writeWithoutResponse(_ connection: HostConnection, attribute: AttributeHandle, value: [UInt8]) async throws {
        try await host.withGATT { host, gatt in
            try await gatt.writeWithoutResponse(connection, attribute: attribute, value: value, host: host)
        }
    }

    /// Subscribes to notifications (or indications) of a characteristic by writing its CCCD; the stream delivers
    /// the values and finishes when the link goes down. Several subscribers of one characteristic each get every
    /// value. A subscriber more than ``notificationBufferingLimit`` values behind loses the oldest
    /// (``droppedNotificationCount``): notifications have no flow control, and memory stays bounded.
    public func subscribe(_ connection: HostConnection, valueHandle: AttributeHandle, cccdHandle: AttributeHandle,
                          indications: Bool = false) async throws -> NotificationStream {
        try await host.withGATT { host, gatt in
            try await gatt.subscribe(connection, valueHandle: valueHandle, cccdHandle: cccdHandle, indications: indications, host: host)
        }
    }

    /// Subscribes `sink` to the values of `valueHandle` on a link, writing the CCCD, and returns the subscriber's id
    /// (for ``dropSubscriber(_:valueHandle:on:)``). The sink's `deliver` runs on the host, once per value, in order;
    /// its `end` runs once, when the link goes down or ``unsubscribe(_:valueHandle:cccdHandle:)`` ends the
    /// subscription (and not after ``dropSubscriber(_:valueHandle:on:)``).
    package func subscribe(_ connection: HostConnection, valueHandle: AttributeHandle, cccdHandle: AttributeHandle,
                           indications: Bool, sink: NotificationSink) async throws -> Int {
        try await host.withGATT { host, gatt in
            try await gatt.subscribe(connection, valueHandle: valueHandle, cccdHandle: cccdHandle, indications: indications,
                                     sink: sink, host: host)
        }
    }

    /// Forgets a subscriber (its `end` does not run).
    package func dropSubscriber(_ id: Int, valueHandle: AttributeHandle, on link: LinkID) async {
        await host.withGATT { _, gatt in gatt.dropSubscriber(id, valueHandle: valueHandle, on: link) }
    }

    /// Stops notifications: writes 0 to the CCCD and finishes the streams.
    public func unsubscribe(_ connection: HostConnection, valueHandle: AttributeHandle, cccdHandle: AttributeHandle) async throws {
        try await host.withGATT { host, gatt in
            try await gatt.unsubscribe(connection, valueHandle: valueHandle, cccdHandle: cccdHandle, host: host)
        }
    }

    /// Subscribes to the peer's Service Changed indications; each one yields the affected handle range.
    public func serviceChanges(_ connection: HostConnection) async throws -> AsyncStream<ClosedRange<AttributeHandle>> {
        try await host.withGATT { host, gatt in try await gatt.serviceChanges(connection, host: host) }
    }

    // MARK: Server

    /// Server-side events (writes, subscriptions, MTU), each attributed to its link. Each call is a new subscriber.
    public func serverEvents() async -> AsyncStream<GATTServerEvent> {
        await host.withGATT { host, gatt in gatt.serverEvents(host: host) }
    }

    /// The application's requests (reads and writes of its attributes). One consumer at a time: a new call finishes
    /// the previous stream. Without a consumer such requests are refused with Unlikely Error.
    public func applicationRequests() async -> AsyncStream<GATTServerRequest> {
        await host.withGATT { _, gatt in gatt.applicationRequests() }
    }

    /// Answers an application request. Answers to requests whose link went down, or answered already, are ignored.
    public func respond(to request: GATTServerRequest, with answer: ATTApplicationAnswer) async {
        await host.withGATT { host, gatt in await gatt.respond(to: request, with: answer, host: host) }
    }

    /// Sets the Device Name the database serves (Generic Access 0x2A00).
    public func setDeviceName(_ name: String) async {
        await host.withGATT { _, gatt in gatt.setDeviceName(name) }
    }

    /// Adds a service after the last handle (the others keep their handles) and tells the clients that subscribed
    /// to Service Changed about its range, which it returns. Core 5.4, Vol 3, Part G, 7.1.
    @discardableResult
    public func addService(_ service: GATTServiceDefinition) async throws -> ClosedRange<AttributeHandle> {
        try await host.withGATT { host, gatt in try await gatt.addService(service, host: host) }
    }

    /// Removes the service declared at `start` (the others keep their handles); clients forget their
    /// subscriptions in its range and those subscribed to Service Changed are told about it.
    public func removeService(at start: AttributeHandle) async throws {
        try await host.withGATT { host, gatt in try await gatt.removeService(at: start, host: host) }
    }

    /// Replaces the served database (for example after services were added). Connected clients keep their MTU and
    /// their Service Changed subscription; other subscriptions are cleared (handles may have moved), and every client
    /// that asked for Service Changed indications is told the whole handle range changed. Core 5.4, Vol 3, Part G, 7.1.
    public func replaceDatabase(_ database: GATTDatabase) async {
        await host.withGATT { host, gatt in await gatt.replaceDatabase(database, host: host) }
    }

    /// Changes a value in the local database and notifies (or indicates, when that is what a client subscribed to)
    /// every subscribed client, or only those on `links` (like `updateValue(_:for:onSubscribedCentrals:)`). Returns the
    /// connections that were sent the value. Indications wait for each client's confirmation, and one indication at a
    /// time goes to a client (concurrent calls queue). A link that goes down or times out meanwhile is left out of the
    /// result; the call throws only when no link could be sent the value and one of them failed. A value longer than
    /// a subscriber's ATT_MTU − 3 is refused (``GATTErrorCode/invalidValueLength``) rather than cut.
    @discardableResult
    public func updateValue(_ value: [UInt8], for valueHandle: AttributeHandle,
                            onLinks only: Set<LinkID>? = nil) async throws -> [HostConnection] {
        try await host.withGATT { host, gatt in try await gatt.updateValue(value, for: valueHandle, onLinks: only, host: host) }
    }

    /// Changes several values at once and notifies the subscribed clients: in one Multiple Handle Value Notification
    /// to each client that enabled it in its Client Supported Features (when the values it subscribed to fit its
    /// ATT_MTU), otherwise one notification (or, for indication subscribers, indication) per value. Returns the
    /// connections sent anything. Core 5.4, Vol 3, Part G, 4.10.2.
    @discardableResult
    public func updateValues(_ values: [(handle: AttributeHandle, value: [UInt8])]) async throws -> [HostConnection] {
        let values = values.map { Update(handle: $0.handle, value: $0.value) }
        return try await host.withGATT { host, gatt in try await gatt.updateValues(values.map { ($0.handle, $0.value) }, host: host) }
    }

    /// One value of ``updateValues(_:)`` (a Sendable pair).
    private struct Update: Sendable {
        var handle: AttributeHandle
        var value: [UInt8]
    }

    /// Opens Enhanced ATT bearers on an encrypted link until it has `count` (1 to 5; one L2CAP_CREDIT_BASED_CONNECTION_REQ
    /// to SPSM 0x0027 for the missing ones) and returns how many the link has open. Every procedure of this engine then runs on the least busy
    /// bearer of the link, so independent requests go out at once; nothing else changes for the caller. A discovery
    /// (``discoverDatabase(_:descriptors:)``) opens them by itself on an encrypted link when the peer's Server Supported
    /// Features says EATT and the host's ``HCIHost/Configuration/enhancedATTBearers`` is not 0.
    @discardableResult
    public func openEnhancedBearers(on connection: HostConnection, count: Int = 3) async throws -> Int {
        try await host.withGATT { host, gatt in try await gatt.openEnhancedBearers(connection, count: count, host: host) }
    }

    /// The Enhanced ATT bearers open on `connection`'s link (the unenhanced bearer not counted).
    public func enhancedBearerCount(_ connection: HostConnection) async -> Int {
        await host.withGATT { _, gatt in gatt.enhancedBearerCount(connection) }
    }

    /// Whether every link has room to send now (the ready signal behind
    /// `peripheralManagerIsReady(toUpdateSubscribers:)`).
    public func isReadyToUpdateSubscribers() async -> Bool {
        await host.withGATT { host, gatt in gatt.isReadyToUpdateSubscribers(host: host) }
    }

    /// Whether a client on the link subscribed to `valueHandle`.
    public func isSubscribed(_ connection: HostConnection, valueHandle: AttributeHandle) async -> Bool {
        await host.withGATT { _, gatt in gatt.isSubscribed(connection, valueHandle: valueHandle) }
    }
}

/// What crosses out of the host for ``GATTEngine/discoverDatabaseReporting(_:descriptors:)`` (a tuple is not
/// `Sendable`).
private struct DiscoveryResult: Sendable {
    var services: [GATTDiscoveredService]
    var report: GATTDiscoveryReport
    var tuple: (services: [GATTDiscoveredService], report: GATTDiscoveryReport) { (services, report) }
}

/// One handle and value, for ``GATTEngine/read(_:byType:in:)`` (a tuple is not `Sendable`).
private struct HandleValue: Sendable {
    var handle: AttributeHandle
    var value: [UInt8]
}

/// How a whole-database discovery went (``GATTEngine/lastDiscovery``).
public struct GATTDiscoveryReport: Sendable, Hashable {
    /// ATT requests sent before the result was ready (each a round trip).
    public var requests: Int
    /// Whether the cached database was the answer (the peer's Database Hash matched).
    public var fromCache: Bool
    /// Creates a report.
    public init(requests: Int, fromCache: Bool) {
        self.requests = requests
        self.fromCache = fromCache
    }
}
