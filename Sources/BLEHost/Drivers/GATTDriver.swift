import BLEProtocols
import BLEWire

/// GATT over every link of an ``HCIHost``: the host's driver of the ATT fixed channel, which runs one ``ATTBearer`` per
/// link (the server role over a ``GATTDatabase`` with ``ATTServer``, the client procedures of ``GATTProcedure``) and
/// carries out their actions: sending PDUs, timers, handing results to the callers. Core 5.4, Vol 3, Parts F and G.
///
/// The host owns it (``HCIHost/gattDriver()``) and it runs in the host's isolation: every function that touches the
/// host takes it as an `isolated` parameter, so the host hands it each ATT PDU in the step that reassembled it
/// (``receive(_:on:host:)``), and it sends through the host's one non-suspending ``HCIHost/send(_:channel:on:whenFull:)``
/// (or, for PDUs that wait for room, ``HCIHost/sendL2CAP(_:channel:on:)``): one way down, no second actor, no call back
/// across executors. ``GATTEngine`` is the public face that reaches it through the host.
///
/// Everything that belongs to a link (its bearer, waiters, subscriptions, timers) is keyed by its ``LinkID``, never by
/// its connection handle: a controller may give the handle to the next link at once, and nothing of the old link can
/// reach the new one.
///
/// A link has one or more ATT bearers (``BearerID``): the unenhanced one on the fixed channel 0x0004, and on an
/// encrypted link up to five Enhanced ATT bearers, each an LE enhanced credit based channel on SPSM 0x0027 the host
/// owns (Core 5.4, Vol 3, Part F, 3.2.11). Each bearer has its own ``ATTBearer`` machine (its own outstanding request,
/// indication and transaction timer), its own ATT_MTU and the request of the peer it is answering; the client's and
/// the server's state of the link (subscriptions, CCCDs, Client Supported Features, the bond, the cache) is one for all
/// bearers. The server answers each request on the bearer it came on; the client runs each procedure on the least busy
/// bearer, so independent requests go out at once.
final class GATTDriver {
    /// One ATT bearer of a link.
    enum BearerID: Hashable, Sendable, CustomStringConvertible {
        /// The unenhanced bearer, on the fixed channel 0x0004.
        case unenhanced
        /// An Enhanced ATT bearer, named by its channel's local CID.
        case enhanced(L2CAPChannelID)

        var description: String {
            switch self {
            case .unenhanced: "the unenhanced ATT bearer"
            case .enhanced(let cid): "the EATT bearer on \(cid)"
            }
        }
    }

    /// An Enhanced ATT bearer of a link: its channel, its machine, timers and ATT_MTU.
    struct EnhancedBearer {
        let channel: L2CAPChannel
        var bearer: ATTBearer
        var timers = TimerSet<ATTBearer.Timer>()
        /// The bearer's ATT_MTU: the smaller of the two sides' channel MTUs (Core 5.4, Vol 3, Part F, 3.2.8).
        let mtu: Int
        /// The peer's request on this bearer being answered by the application, if any.
        var application: ApplicationPending?
        /// The peer's prepared writes on this bearer (each bearer has its own queue).
        var preparedWrites = ATTServerConnection.PreparedWrites()

        mutating func withBearer<R>(_ body: (inout ATTBearer) -> R) -> R { body(&bearer) }
    }

    struct LinkState {
        let connection: HostConnection
        var bearer: ATTBearer
        /// The link's Enhanced ATT bearers, by their channel's local CID.
        var enhanced: [L2CAPChannelID: EnhancedBearer] = [:]
        /// This side asked for Enhanced ATT bearers on this link (once per link, as a client).
        var openedEnhanced = false
        /// As a client: the opening of EATT bearers under way on this link, if any (one at a time).
        var enhancedOpening: Task<Result<Int, any Error>, Never>?
        /// As a client: the peer's Server Supported Features value handle, found by a discovery.
        var peerServerFeatures: AttributeHandle?
        var server = ATTServerConnection()
        /// Notification subscribers per value handle, in the order they subscribed.
        var subscribers: [AttributeHandle: [(id: Int, sink: NotificationSink)]] = [:]
        var timers = TimerSet<ATTBearer.Timer>()
        /// ATT PDUs from the host waiting for the PDU before them to be carried out (see ``GATTEngine/receiveFromHost(_:on:)``).
        var inbox: [Inbound] = []
        /// A task is carrying out this link's inbound PDUs: what arrives meanwhile waits in ``inbox``, in order.
        var inboxBusy = false
        /// The peer's request being answered by the application, if any (see ``GATTEngine/applicationRequests()``).
        var application: ApplicationPending?
        /// This side's MTU exchange as a client (at most one per link: Core 5.4, Vol 3, Part F, 3.4.2.1).
        var mtuExchange = MTUExchangeState.notStarted
        /// The link is being detached (its disconnection event and the end of its ATT channel both detach it).
        var detaching = false
        /// The peer's bond, once found (its local identity and the peer's identity address): the bond store keeps
        /// the client's GATT state with it between connections (``BondedGATTClient``).
        var bondedClient: BondName?
        /// The bond was looked for (once per link, when the host first counts the link as bonded).
        var lookedForBond = false
        /// The Database Hash of the database the bonded client was last aware of.
        var awareHash: [UInt8]?
        /// The client's GATT state as the bond store has it (last read or written).
        var storedClient: BondedGATTClient?
        /// As a client: the key of the peer's entry in the ``GATTCache`` and its Service Changed value handle.
        var cachedPeer: LEAddress?
        var peerServiceChanged: AttributeHandle?
        /// As a client: robust caching was enabled on the peer (Client Supported Features written) on this link.
        var enabledRobustCaching = false
    }

    /// A link's MTU exchange as a client.
    enum MTUExchangeState {
        case notStarted
        /// Under way; these callers wait for the effective ATT_MTU it leads to.
        case inFlight([CheckedContinuation<Int, any Error>])
        case done
    }

    /// What the host hands this driver on a link's ATT channel.
    enum Inbound {
        case payload([UInt8])
        /// The channel ended (the link went down, or another consumer took the channel over).
        case end
    }

    /// What names a bond in the bond store.
    struct BondName: Hashable {
        var local: LEAddress
        var peer: LEAddress
    }

    /// A request the application answers, with the server's state for completing it.
    struct ApplicationPending {
        let pending: ATTServer.Pending
        /// The ``GATTServerRequest`` ids handed to the application, one per ``ATTServer/Pending/requests`` entry.
        let requestIDs: [UInt64]
        var answers: [UInt64: ATTApplicationAnswer] = [:]
        /// Whether the peer waits for the answer (a request, not a command).
        let isRequest: Bool

        var isAnswered: Bool { answers.count == requestIDs.count }
        var orderedAnswers: [ATTApplicationAnswer] { requestIDs.map { answers[$0] ?? .error(.unlikelyError) } }
    }

    struct RequestKey: Hashable {
        let link: LinkID
        let bearer: BearerID
        let id: ATTBearer.RequestID
    }

    struct IndicationKey: Hashable {
        let link: LinkID
        let bearer: BearerID
        let id: ATTBearer.IndicationID
    }

    /// The local database served to peers.
    var database: GATTDatabase
    /// The ATT transaction timeout (Core 5.4, Vol 3, Part F, 3.3.3), for links attached from now on.
    var transactionTimeout: Duration = .seconds(30)

    /// The MTU this side asks for and offers (on links attached from now on, and in the client's exchanges).
    private(set) var preferredMTU: Int
    /// Sets ``preferredMTU`` (23 to 517).
    func setPreferredMTU(_ mtu: Int) { preferredMTU = max(ATT.defaultLEMTU, min(mtu, ATT.maximumMTU)) }
    /// Each link's state; looked up on every PDU: a `SmallMap` (no hashing for the few links up).
    var links = SmallMap<LinkID, LinkState>()
    /// The current link of each connection handle.
    var linkOfHandle: [ConnectionHandle: LinkID] = [:]
    var waiters: [RequestKey: CheckedContinuation<ATTPDU, any Error>] = [:]
    var confirmationWaiters: [IndicationKey: CheckedContinuation<Void, any Error>] = [:]
    var serverSubscribers: [Int: AsyncStream<GATTServerEvent>.Continuation] = [:]
    var applicationConsumer: AsyncStream<GATTServerRequest>.Continuation?
    var nextApplicationRequest: UInt64 = 0
    /// Write Commands of application attributes waiting for the application (their answers are not sent).
    var commands: [UInt64: (link: LinkID, pending: ApplicationPending)] = [:]
    var nextSubscriber = 0
    /// Values a subscriber (``subscribe(_:valueHandle:cccdHandle:indications:host:)``) holds at most before it loses the
    /// oldest, for subscriptions made from now on.
    var notificationBufferingLimit = 4096
    /// Values dropped because a subscriber fell more than ``notificationBufferingLimit`` behind.
    var droppedNotificationCount = 0
    /// How the last ``discoverDatabase(_:descriptors:host:)`` went: its requests (round trips) before the result was
    /// ready, and whether the cache answered. Requests of other callers meanwhile are counted too.
    var lastDiscovery: GATTDiscoveryReport?
    /// The client's cache of peers' databases (``discoverDatabase(_:descriptors:host:)``), if any.
    var cache: GATTCache?
    /// ATT requests this driver has sent as a client (round trips), over all links.
    var requestCount = 0

    /// Creates a driver serving `database` on its host's links (``HCIHost/gattDriver()`` attaches them).
    init(database: GATTDatabase = GATTDatabase(services: []), preferredMTU: Int = 247) {
        self.database = database
        self.preferredMTU = max(ATT.defaultLEMTU, min(preferredMTU, ATT.maximumMTU))
    }

    /// Gives a link its ATT bearer, in the step the host learnt of the link (or of this driver): its security as the
    /// host has it, a bonded client's GATT state, and from here on the link's ATT PDUs, the ones the host kept first.
    func attach(_ connection: HostConnection, host: isolated HCIHost) {
        let link = connection.link
        guard links[link] == nil else { return }
        var state = LinkState(connection: connection, bearer: ATTBearer(transactionTimeout: transactionTimeout))
        state.timers.clock = host.clock
        state.server.serverMTU = preferredMTU
        state.server.minimumKeySize = Int(host.configuration.security.minimumKeySize)
        links[link] = state
        linkOfHandle[connection.handle] = link
        if let security = host.security(of: connection) {
            setSecurity(security, on: link)
            // A bonded client finds its GATT state as it left it before anything is served.
            identifyBondedClient(security, on: link, host: host)
        }
        // From here on the host hands this driver the link's ATT PDUs directly (``receive(_:on:host:)``), the ones it
        // kept since the link came up first.
        do {
            try host.openATT(on: connection)
        } catch {
            Task { await self.detach(link, host: host) }
        }
    }

    /// The host's word that a link's security changed (after encryption, pairing, a bond found).
    func securityChanged(_ security: LinkSecurity, on link: LinkID, host: isolated HCIHost) {
        guard links[link] != nil else { return }
        setSecurity(security, on: link)
        identifyBondedClient(security, on: link, host: host)
        if security.isEncrypted, let connection = links[link]?.connection { openEnhancedBearersIfDue(connection, host: host) }
    }

    /// Drops a link's ATT state: its bearer closes and everything waiting on it fails.
    func detach(_ link: LinkID, host: isolated HCIHost) async {
        guard var state = links[link], !state.detaching else { return }
        state.detaching = true
        // A central that drops its link is no longer subscribed to anything.
        for valueHandle in state.server.clientConfigurations.keys.sorted() {
            publishServerEvent(.subscriptionChanged(valueHandle: valueHandle, notify: false, indicate: false), on: link)
        }
        let actions = state.bearer.close(GATTError(.disconnected, "the link went down"))
        links[link] = state
        await perform(actions, on: link, host: host)
        for cid in state.enhanced.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            await closeEnhancedBearer(cid, on: link, because: GATTError(.disconnected, "the link went down"), host: host)
        }
        guard let state = links.removeValue(forKey: link) else { return }
        if case .inFlight(let waiters) = state.mtuExchange {
            for waiter in waiters { waiter.resume(throwing: GATTError(.disconnected, "the link went down")) }
        }
        if linkOfHandle[state.connection.handle] == link { linkOfHandle[state.connection.handle] = nil }
        commands = commands.filter { $0.value.link != link }
        for subscribers in state.subscribers.values { for s in subscribers { s.sink.end() } }
        var timers = state.timers
        timers.cancelAll()
    }

    /// Records a link's security in its server state (what protected attributes are checked against).
    func setSecurity(_ security: LinkSecurity, on link: LinkID) {
        links[link]?.server.isEncrypted = security.isEncrypted
        links[link]?.server.isAuthenticated = security.isAuthenticated
        links[link]?.server.isSecureConnections = security.level?.secureConnections == true
        links[link]?.server.keySize = security.level?.keySize ?? 0
        links[link]?.server.hasLongTermKey = security.isBonded
    }

    /// Asks the host for a link's security now; returns whether it differed from what this driver knew.
    func refreshSecurity(of link: LinkID, host: isolated HCIHost) -> Bool {
        guard let connection = links[link]?.connection, let before = links[link]?.server,
              let security = host.security(of: connection) else { return false }
        setSecurity(security, on: link)
        guard let after = links[link]?.server else { return false }
        return before.isEncrypted != after.isEncrypted || before.isAuthenticated != after.isAuthenticated
            || before.isSecureConnections != after.isSecureConnections || before.keySize != after.keySize
            || before.hasLongTermKey != after.hasLongTermKey
    }

    /// The link of `connection`, attaching it when the host has it and this driver does not yet.
    func link(_ connection: HostConnection, host: isolated HCIHost) throws -> LinkID {
        if links[connection.link] != nil { return connection.link }
        if host.connections.contains(where: { $0.link == connection.link }) { attach(connection, host: host) }
        guard links[connection.link] != nil else { throw GATTError(.disconnected, "no ATT bearer on \(connection.link)") }
        return connection.link
    }

    // MARK: Driving the bearer

    func receive(_ payload: [UInt8], on link: LinkID, bearer: BearerID = .unenhanced, host: isolated HCIHost) async {
        guard let actions = withBearer(bearer, on: link, { $0.receive(payload) }) else { return }
        await perform(actions, on: link, bearer: bearer, host: host)
    }

    /// Runs `body` on a bearer of a link in place; `nil` when the link or the bearer is gone.
    func withBearer<R>(_ bearer: BearerID, on link: LinkID, _ body: (inout ATTBearer) -> R) -> R? {
        links.withValue(forKey: link) { state -> R? in
            switch bearer {
            case .unenhanced: return body(&state.bearer)
            case .enhanced(let cid): return state.enhanced[cid]?.withBearer(body)
            }
        } ?? nil
    }

    /// An ATT PDU from the host, in the step that reassembled it. When nothing of the link is waiting, the bearer
    /// takes it at once and what needs no suspension (a notification to the subscribers, a response to its waiter, a
    /// PDU to send, timers) is done here; from the first action that may suspend (a request to serve, closing the
    /// link), the rest goes to a task, and PDUs arriving meanwhile wait for it in order. Nothing here waits: the
    /// host's reading of packets never does (only it reads what ends a wait for queue room).
    func receiveFromHost(_ payload: [UInt8], on link: LinkID, host: isolated HCIHost) {
        // One look-up: the PDU waits behind a busy inbox, or the bearer takes it now.
        guard let (actions, connection) = links.withValue(forKey: link, { state -> ([ATTBearer.Action], HostConnection)? in
            if state.inboxBusy {
                state.inbox.append(.payload(payload))
                return nil
            }
            return (state.bearer.receive(payload), state.connection)
        }) ?? nil else { return }
        var next = 0
        while next < actions.count, performNow(actions[next], on: link, connection: connection, host: host) { next += 1 }
        guard next < actions.count else { return }
        links[link]?.inboxBusy = true
        let rest = Array(actions[next...])
        Task { await self.drainInbox(link, first: rest, host: host) }
    }

    /// The host's ATT channel of `link` ended: the link is detached, after the PDUs waiting before the end.
    func attChannelEnded(_ link: LinkID, host: isolated HCIHost) {
        guard let busy = links.withValue(forKey: link, { state -> Bool in
            if state.inboxBusy { state.inbox.append(.end) }
            return state.inboxBusy
        }), !busy else { return }
        Task { await self.detach(link, host: host) }
    }

    /// Carries out `first`, then the link's waiting PDUs in order, until none is left.
    private func drainInbox(_ link: LinkID, first: [ATTBearer.Action], host: isolated HCIHost) async {
        await perform(first, on: link, host: host)
        while let item = links.withValue(forKey: link, { state -> Inbound? in
            guard !state.inbox.isEmpty else {
                state.inboxBusy = false
                return nil
            }
            return state.inbox.removeFirst()
        }) ?? nil {
            switch item {
            case .payload(let payload): await receive(payload, on: link, host: host)
            case .end:
                await detach(link, host: host)
                return
            }
        }
    }

    /// Carries out a bearer's actions, in order. An Enhanced ATT bearer they closed (a transaction timeout) is
    /// dropped and its channel closed: the link and its other bearers stay.
    func perform(_ actions: [ATTBearer.Action], on link: LinkID, bearer: BearerID = .unenhanced, host: isolated HCIHost) async {
        for action in actions where !performNow(action, on: link, bearer: bearer, host: host) {
            switch action {
            case .serve(let bytes):
                await serve(bytes, on: link, bearer: bearer, host: host)
            default:
                break
            }
        }
        if case .enhanced(let cid) = bearer, let reason = links[link]?.enhanced[cid]?.bearer.closedReason {
            await closeEnhancedBearer(cid, on: link, because: reason, host: host)
        }
    }

    /// Carries out an action that needs no suspension and returns `true`; `false` (nothing done) for one that may
    /// suspend (serving a request). `connection`, when the caller has it, is the link's connection (it spares
    /// a look-up per PDU sent).
    ///
    /// A PDU the bearer sends goes to the host's outbox at once, past the link's queue limit if it must
    /// (``HCIHost/WhenFull/queue``): ATT bounds these itself (one request and one indication outstanding, a
    /// confirmation per indication, a response per request), and the packet-reading path that sends most of them
    /// cannot wait. Only PDUs that get no response wait for room (``sendUnanswered(_:on:host:)``).
    private func performNow(_ action: ATTBearer.Action, on link: LinkID, bearer: BearerID = .unenhanced,
                            connection known: HostConnection? = nil, host: isolated HCIHost) -> Bool {
        switch action {
        case .serve:
            return false
        case .send(let bytes):
            switch bearer {
            case .unenhanced:
                if let connection = known ?? links.withValue(forKey: link, { $0.connection }) {
                    _ = host.send(bytes, channel: .att, on: connection, whenFull: .queue)
                }
            case .enhanced(let cid):
                // On the bearer's channel, without waiting: what the peer's credits do not cover waits in the
                // channel's queue, in order. A channel that is closing takes nothing (its bearer is being dropped:
                // what waits on it fails then); the PDU is logged, never lost without a word.
                if let channel = links[link]?.enhanced[cid]?.channel, !host.sendSDUNow(bytes, on: channel) {
                    host.logger.warning("\(link): \(bearer) did not take a \(bytes.count)-octet ATT PDU (opcode 0x\(bytes.prefix(1).hexString())): its channel is closing or the PDU exceeds the peer's MTU \(channel.peerMTU)")
                }
            }
        case .startTimer(let timer, let duration):
            let handler: @Sendable (TimerSet<ATTBearer.Timer>.Firing) async -> Void = { [weak host] firing in
                await host?.gattTimerFired(firing, on: link, bearer: bearer)
            }
            switch bearer {
            case .unenhanced: links[link]?.timers.start(timer, after: duration, handler: handler)
            case .enhanced(let cid): links[link]?.enhanced[cid]?.timers.start(timer, after: duration, handler: handler)
            }
        case .cancelTimer(let timer):
            switch bearer {
            case .unenhanced: links[link]?.timers.cancel(timer)
            case .enhanced(let cid): links[link]?.enhanced[cid]?.timers.cancel(timer)
            }
        case .complete(let id, let result):
            let key = RequestKey(link: link, bearer: bearer, id: id)
            waiters.removeValue(forKey: key)?.resume(with: result.mapError { $0 })
        case .confirmed(let id, let result):
            let key = IndicationKey(link: link, bearer: bearer, id: id)
            if case .success = result { publishServerEvent(.indicationConfirmed, on: link) }
            confirmationWaiters.removeValue(forKey: key)?.resume(with: result.mapError { $0 })
        case .notification(let handle, let value), .indication(let handle, let value):
            // Service Changed from a peer whose database is cached: the cache no longer describes it. (The link's
            // state is read in place: a copy of it per value would retain everything in it.)
            let (dropped, serviceChanged) = links.withValue(forKey: link) { state in
                var dropped = 0
                if let subscribers = state.subscribers[handle] {
                    for s in subscribers where s.sink.deliver(value) { dropped += 1 }
                }
                return (dropped, handle == state.peerServiceChanged)
            } ?? (0, false)
            droppedNotificationCount += dropped
            if serviceChanged { forgetCachedDatabase(of: link) }
        }
        return true
    }

    /// A bearer's timer went off (``HCIHost/gattTimerFired(_:on:)`` routes it here).
    func timerFired(_ firing: TimerSet<ATTBearer.Timer>.Firing, on link: LinkID, bearer: BearerID = .unenhanced,
                    host: isolated HCIHost) async {
        let expired: Bool?
        switch bearer {
        case .unenhanced: expired = links[link]?.timers.expire(firing)
        case .enhanced(let cid): expired = links[link]?.enhanced[cid]?.timers.expire(firing)
        }
        guard expired == true else { return }
        let timer = firing.key
        guard let actions = withBearer(bearer, on: link, { $0.timerFired(timer) }) else { return }
        await perform(actions, on: link, bearer: bearer, host: host)
    }

    /// Sends a request on a bearer of `link` and returns its response (an Error Response included).
    func transact(_ pdu: ATTPDU, on link: LinkID, bearer: BearerID = .unenhanced, host: isolated HCIHost) async throws -> ATTPDU {
        guard let (id, actions) = withBearer(bearer, on: link, { $0.request(pdu) }) else {
            throw GATTError(.disconnected, bearer == .unenhanced ? "the link went down" : "\(bearer) closed")
        }
        requestCount += 1
        let key = RequestKey(link: link, bearer: bearer, id: id)
        // The waiter is in place before the request leaves, in this step: its response cannot come first.
        return try await withCheckedThrowingContinuation { continuation in
            waiters[key] = continuation
            performInStep(actions, on: link, bearer: bearer, host: host)
        }
    }

    /// Carries out `actions` in this step, without suspending the caller: for a caller that registers its waiter and
    /// then hands over the actions that send its request or indication (which are all done in the step; anything
    /// that would suspend goes to a task, in order).
    func performInStep(_ actions: [ATTBearer.Action], on link: LinkID, bearer: BearerID = .unenhanced, host: isolated HCIHost) {
        var next = 0
        while next < actions.count, performNow(actions[next], on: link, bearer: bearer, host: host) { next += 1 }
        guard next < actions.count else {
            // A request on a closed EATT bearer failed at once: the bearer is dropped.
            if case .enhanced(let cid) = bearer, let reason = links[link]?.enhanced[cid]?.bearer.closedReason {
                Task { await self.closeEnhancedBearer(cid, on: link, because: reason, host: host) }
            }
            return
        }
        let rest = Array(actions[next...])
        Task { await self.perform(rest, on: link, bearer: bearer, host: host) }
    }

    /// Runs a client procedure on the link of `connection`. When the server refuses for security (Insufficient
    /// Authentication, Insufficient Encryption, Encryption Key Size Too Short) and the host pairs on demand
    /// (``HCIHost/pairsOnDemand``), the link is secured (the bond's key, or pairing) and the procedure runs again, as
    /// CoreBluetooth does. An unencrypted link first gets the host's usual pairing; a link already encrypted and still
    /// refused for authentication gets an authenticated (MITM) pairing: at most these two attempts.
    ///
    /// The procedure runs whole on one bearer of the link, the least busy one when `bearer` is `nil` (see
    /// ``pickBearer(on:)``).
    func run<P: GATTProcedure>(_ procedure: P, on connection: HostConnection, bearer: BearerID? = nil, host: isolated HCIHost) async throws -> P.Output {
        try await run({ _ in procedure }, on: connection, bearer: bearer, host: host)
    }

    /// ``run(_:on:bearer:host:)`` for a procedure that depends on the ATT_MTU of the bearer it runs on: `make` gets it.
    func run<P: GATTProcedure>(_ make: (Int) -> P, on connection: HostConnection, bearer: BearerID? = nil, host: isolated HCIHost) async throws -> P.Output {
        let link = try link(connection, host: host)
        var attempts = 0
        while true {
            do {
                let chosen = bearer ?? pickBearer(on: link)
                return try await runOnce(make(bearerMTU(chosen, on: link)), on: link, bearer: chosen, host: host)
            } catch let error as GATTError {
                // Robust caching: the server's database changed under this client, whose cache is stale.
                if error.code.attError == .databaseOutOfSync { forgetCachedDatabase(of: link) }
                guard attempts < 2, let code = error.code.attError,
                      [.insufficientAuthentication, .insufficientEncryption, .encryptionKeySizeTooShort].contains(code),
                      let connection = links[link]?.connection, host.pairsOnDemand,
                      let security = host.security(of: connection) else { throw error }
                // Encrypted and still refused for authentication: only an authenticated key will do. Encrypted with a
                // short key: pair again for a longer one.
                let mitm = security.isEncrypted && code == .insufficientAuthentication
                if mitm && security.isAuthenticated { throw error }
                attempts += 1
                do {
                    _ = try await host.pair(connection, mitm: mitm, force: security.isEncrypted && code != .insufficientEncryption)
                } catch let failure {
                    // The refusal stands; the reason, and the underlying error, say why the link could not be secured.
                    throw GATTError(error.code, "\(error.reason); securing the link failed: \(failure)", underlying: failure)
                }
            }
        }
    }

    private func runOnce<P: GATTProcedure>(_ procedure: P, on link: LinkID, bearer: BearerID, host: isolated HCIHost) async throws -> P.Output {
        var procedure = procedure
        var step = try procedure.start()
        while true {
            switch step {
            case .finished(let output): return output
            case .request(let pdu): step = try procedure.receive(try await transact(pdu, on: link, bearer: bearer, host: host))
            }
        }
    }

    /// The bearer a new client procedure on `link` runs on: the open one with the fewest requests outstanding or
    /// queued, the unenhanced bearer first among equals. Independent procedures thus go out at once, each on its own
    /// bearer, while there are free ones.
    func pickBearer(on link: LinkID) -> BearerID {
        links.withValue(forKey: link) { state -> BearerID in
            func load(_ bearer: ATTBearer) -> Int { (bearer.hasOutstandingRequest ? 1 : 0) + bearer.queuedRequestCount }
            var best: (BearerID, Int)? = state.bearer.closedReason == nil ? (.unenhanced, load(state.bearer)) : nil
            for cid in state.enhanced.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
                guard let e = state.enhanced[cid], e.bearer.closedReason == nil else { continue }
                let l = load(e.bearer)
                if best.map({ l < $0.1 }) ?? true { best = (.enhanced(cid), l) }
            }
            return best?.0 ?? .unenhanced
        } ?? .unenhanced
    }

    /// The ATT_MTU of a bearer of `link`.
    func bearerMTU(_ bearer: BearerID, on link: LinkID) -> Int {
        switch bearer {
        case .unenhanced: links[link]?.server.mtu ?? ATT.defaultLEMTU
        case .enhanced(let cid): links[link]?.enhanced[cid]?.mtu ?? ATT.defaultLEMTU
        }
    }

    /// Sends a PDU that gets no response (a Write Command, a notification) through the host's waiting send
    /// (``HCIHost/sendL2CAP(_:channel:on:)``): into the host's outbox at once when the link's queue has room (the
    /// outbox may have this caller drain it), otherwise once there is room.
    func sendUnanswered(_ pdu: ATTPDU, on link: LinkID, host: isolated HCIHost) async throws {
        // The bearer is read in place (a copy of the link's state would retain everything in it).
        let started = links.withValue(forKey: link) { state -> Result<([ATTBearer.Action], HostConnection), any Error> in
            if let reason = state.bearer.closedReason { return .failure(reason) }
            return .success((state.bearer.unanswered(pdu), state.connection))
        }
        guard let started else { throw GATTError(.disconnected, "the link went down") }
        let (actions, connection) = try started.get()
        for case .send(let bytes) in actions {
            do {
                try await host.sendL2CAP(bytes, channel: .att, on: connection)
            } catch {
                throw GATTError(.disconnected, "the link went down")
            }
        }
    }

    // MARK: Events

    /// Server-side events (writes, subscriptions, MTU), each attributed to its link. Each call is a new subscriber.
    func serverEvents(host: isolated HCIHost) -> AsyncStream<GATTServerEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: GATTServerEvent.self)
        let id = nextSubscriber
        nextSubscriber += 1
        serverSubscribers[id] = continuation
        continuation.onTermination = { [weak host] _ in
            Task { await host?.withGATT { _, gatt in gatt.dropServerSubscriber(id) } }
        }
        return stream
    }

    func dropServerSubscriber(_ id: Int) { serverSubscribers[id] = nil }

    func publishServerEvent(_ event: ATTServerEvent, on link: LinkID) {
        guard let connection = links[link]?.connection else { return }
        for s in serverSubscribers.values { s.yield(GATTServerEvent(connection: connection, event: event)) }
    }

    /// The effective ATT_MTU of the link with `handle`.
    func mtu(_ connection: HostConnection) -> Int {
        links[connection.link]?.server.mtu ?? ATT.defaultLEMTU
    }
}
