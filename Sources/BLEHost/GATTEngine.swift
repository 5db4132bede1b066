import BLEProtocols
import BLEWire

/// GATT over every link of an ``HCIHost``: the ATT bearer of each connection, the server role over a ``GATTDatabase``
/// and the client procedures. Core 5.4, Vol 3, Parts F and G.
///
/// Per link: one outstanding client request at a time (others wait their turn), a transaction timeout after which
/// the link is disconnected as the specification requires, indications confirmed automatically, and server requests
/// answered at once (so a peer's request never waits behind ours).
public actor GATTEngine {
    struct LinkState {
        var server = ATTServerConnection()
        var busy = false
        var waiters: [CheckedContinuation<Void, Never>] = []
        var pending: CheckedContinuation<ATTPDU, any Error>?
        var early: Result<ATTPDU, any Error>?
        var subscribers: [UInt16: [Int: AsyncStream<[UInt8]>.Continuation]] = [:]
        var indicationWaiter: CheckedContinuation<Void, any Error>?
        /// An indication is outstanding (sent, not yet confirmed): the next waits (Core 5.4, Vol 3, Part F, 3.3.3).
        var indicating = false
        var indicationQueue: [CheckedContinuation<Void, Never>] = []
        /// Which link this is: controllers reuse connection handles, and a waiter of a closed link must not act on
        /// the next link with the same handle.
        var generation = 0
        var reader: Task<Void, Never>?
    }

    let host: HCIHost
    /// The local database served to peers.
    public internal(set) var database: GATTDatabase
    /// The ATT transaction timeout. Core 5.4, Vol 3, Part F, 3.3.3.
    public var transactionTimeout: Duration = .seconds(30)
    /// Sets the ATT transaction timeout (30 s by default).
    public func setTransactionTimeout(_ timeout: Duration) { transactionTimeout = timeout }

    /// The MTU this side asks for and offers.
    public let preferredMTU: Int
    var links: [UInt16: LinkState] = [:]
    var serverSubscribers: [Int: AsyncStream<GATTServerEvent>.Continuation] = [:]
    var nextSubscriber = 0
    var nextGeneration = 0
    var watcher: Task<Void, Never>?
    /// ATT requests this engine has sent as a client (round trips), over all links.
    public private(set) var requestCount = 0

    /// Creates an engine serving `database` on `host`'s links. Call ``start()``.
    public init(host: HCIHost, database: GATTDatabase = GATTDatabase(services: []), preferredMTU: Int = 247) {
        self.host = host
        self.database = database
        self.preferredMTU = max(ATT.defaultLEMTU, min(preferredMTU, ATT.maximumMTU))
    }

    /// Starts serving: every current and future link gets an ATT bearer.
    public func start() async {
        guard watcher == nil else { return }
        let events = await host.events()
        for connection in await host.connections { await attach(connection.handle) }
        watcher = Task { [weak self] in
            for await event in events {
                guard let self else { return }
                switch event {
                case .connected(let c): await self.attach(c.handle)
                case .disconnected(let handle, _): await self.detach(handle)
                case .encryptionChanged(let handle, let status, let enabled): await self.setEncrypted(handle, status == .success && enabled)
                default: break
                }
            }
        }
    }

    func attach(_ handle: UInt16) async {
        guard links[handle] == nil else { return }
        // Reserve the slot before suspending, so a concurrent attach for the same link does nothing.
        var state = LinkState()
        state.server.serverMTU = preferredMTU
        nextGeneration += 1
        let generation = nextGeneration
        state.generation = generation
        links[handle] = state
        guard let channel = try? await host.openFixedChannel(.att, handle: handle) else {
            if links[handle]?.generation == generation { links[handle] = nil }
            return
        }
        guard links[handle]?.generation == generation else { return }
        links[handle]?.reader = Task { [weak self] in
            for await payload in channel { await self?.receive(payload, on: handle) }
            // Only this link: the controller may already have given its handle to a new link (a quick reconnection).
            await self?.detach(handle, generation: generation)
        }
    }

    /// Drops a link's ATT state (all of it when `generation` is nil: the host reported the handle disconnected).
    func detach(_ handle: UInt16, generation: Int? = nil) {
        if let generation, links[handle]?.generation != generation { return }
        guard let state = links.removeValue(forKey: handle) else { return }
        let gone = GATTError(.disconnected, "the link went down")
        state.pending?.resume(throwing: gone)
        state.indicationWaiter?.resume(throwing: gone)
        for waiter in state.indicationQueue { waiter.resume() }
        for waiter in state.waiters { waiter.resume() }
        for subscribers in state.subscribers.values { for s in subscribers.values { s.finish() } }
        state.reader?.cancel()
    }

    func setEncrypted(_ handle: UInt16, _ encrypted: Bool) {
        links[handle]?.server.isEncrypted = encrypted
    }

    /// Replaces the served database (for example after services were added). Connected clients keep their MTU and
    /// their Service Changed subscription; other subscriptions are cleared (handles may have moved), and every client
    /// that asked for Service Changed indications is told the whole handle range changed. Core 5.4, Vol 3, Part G, 7.1.
    public func replaceDatabase(_ database: GATTDatabase) async {
        let serviceChanged = database.valueHandle(of: 0x2A05)
        self.database = database
        for handle in links.keys {
            guard let old = links[handle]?.server else { continue }
            var fresh = ATTServerConnection()
            fresh.serverMTU = preferredMTU
            fresh.negotiated(mtu: old.mtu)
            fresh.isEncrypted = old.isEncrypted
            fresh.isAuthenticated = old.isAuthenticated
            if let sc = serviceChanged, let bits = old.clientConfigurations[sc] { fresh.setClientConfiguration(bits, for: sc) }
            links[handle]?.server = fresh
        }
        if let sc = serviceChanged {
            _ = try? await updateValue([0x01, 0x00, 0xFF, 0xFF], for: sc)
        }
    }

    /// Subscribes to the peer's Service Changed indications; each one yields the affected handle range.
    public func serviceChanges(_ handle: UInt16) async throws -> AsyncStream<ClosedRange<UInt16>> {
        guard let gatt = try await discoverPrimaryServices(handle, uuid: 0x1801).first,
              let characteristic = try await discoverCharacteristics(handle, of: gatt, uuid: 0x2A05).first,
              let cccd = try await discoverDescriptors(handle, of: characteristic).first(where: { $0.uuid == BluetoothUUID(0x2902) })
        else { throw GATTError(.att(.attributeNotFound, handle: 0), "the peer has no Service Changed characteristic") }
        let values = try await subscribe(handle, valueHandle: characteristic.valueHandle, cccdHandle: cccd.handle, indications: true)
        return AsyncStream { continuation in
            let task = Task {
                for await value in values where value.count == 4 {
                    let start = UInt16(value[0]) | UInt16(value[1]) << 8
                    let end = UInt16(value[2]) | UInt16(value[3]) << 8
                    if start <= end { continuation.yield(start...end) }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Server-side events (writes, subscriptions, MTU), each attributed to its link. Each call is a new subscriber.
    public func serverEvents() -> AsyncStream<GATTServerEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: GATTServerEvent.self)
        let id = nextSubscriber
        nextSubscriber += 1
        serverSubscribers[id] = continuation
        continuation.onTermination = { [weak self] _ in Task { await self?.dropServerSubscriber(id) } }
        return stream
    }

    private func dropServerSubscriber(_ id: Int) { serverSubscribers[id] = nil }

    /// The effective ATT_MTU of a link.
    public func mtu(_ handle: UInt16) -> Int { links[handle]?.server.mtu ?? ATT.defaultLEMTU }

    /// The longest value one write carries: ATT_MTU − 3 without response (one Write Command); 512 with response,
    /// since ``write(_:attribute:value:)`` sends longer values as prepared writes (what CoreBluetooth's
    /// `maximumWriteValueLength(for:)` answers too).
    public func maximumWriteValueLength(_ handle: UInt16, withResponse: Bool) -> Int {
        withResponse ? ATT.maximumAttributeValueLength : ATT.maximumWriteValueLength(mtu: mtu(handle))
    }

    // MARK: Receiving

    func receive(_ payload: [UInt8], on handle: UInt16) async {
        guard let first = payload.first else { return }
        let opcode = ATTOpcode(rawValue: first)
        if opcode.isResponse {
            let result: Result<ATTPDU, any Error> = Result { try ATTPDU(bytes: payload) }
            if let pending = links[handle]?.pending {
                links[handle]?.pending = nil
                pending.resume(with: result)
            } else if links[handle]?.busy == true {
                links[handle]?.early = result
            }
            return
        }
        switch opcode {
        case .handleValueNotification, .handleValueIndication, .multipleHandleValueNotification:
            guard let pdu = try? ATTPDU(bytes: payload) else { return }
            switch pdu {
            case .handleValueNotification(let n): deliverNotification(n.handle, n.value, on: handle)
            case .handleValueIndication(let i):
                deliverNotification(i.handle, i.value, on: handle)
                try? await host.sendL2CAP(ATTPDU.handleValueConfirmation(.init()).encoded, channel: .att, handle: handle)
            case .multipleHandleValueNotification(let m):
                for entry in m.entries { deliverNotification(entry.handle, entry.value, on: handle) }
            default: break
            }
        default:
            guard var state = links[handle] else { return }
            let output = ATTServer.handle(payload, connection: &state.server, database: &database)
            links[handle]?.server = state.server
            for event in output.events {
                if case .indicationConfirmed = event {
                    links[handle]?.indicationWaiter?.resume()
                    links[handle]?.indicationWaiter = nil
                }
                for s in serverSubscribers.values { s.yield(GATTServerEvent(connection: handle, event: event)) }
            }
            if let response = output.response { try? await host.sendL2CAP(response, channel: .att, handle: handle) }
        }
    }

    private func deliverNotification(_ valueHandle: UInt16, _ value: [UInt8], on handle: UInt16) {
        for s in links[handle]?.subscribers[valueHandle]?.values ?? [:].values { s.yield(value) }
    }

    // MARK: Client requests

    /// Attaches a link the host has but this engine has not seen yet (its connection event may still be in flight).
    func ensureAttached(_ handle: UInt16) async throws {
        if links[handle] == nil, await host.connections.contains(where: { $0.handle == handle }) { await attach(handle) }
        guard links[handle] != nil else { throw GATTError(.disconnected, "no ATT bearer on link \(handle)") }
    }

    private func acquire(_ handle: UInt16) async throws {
        try await ensureAttached(handle)
        if links[handle]?.busy == false {
            links[handle]?.busy = true
            return
        }
        await withCheckedContinuation { continuation in
            if links[handle] == nil { continuation.resume() } else { links[handle]?.waiters.append(continuation) }
        }
        guard links[handle] != nil else { throw GATTError(.disconnected, "the link went down") }
    }

    private func release(_ handle: UInt16) {
        guard links[handle] != nil else { return }
        if let next = links[handle]?.waiters.first {
            links[handle]?.waiters.removeFirst()
            next.resume()
        } else {
            links[handle]?.busy = false
        }
    }

    /// Sends a request and returns the response (an Error Response is thrown as ``GATTError``).
    func request(_ pdu: ATTPDU, on handle: UInt16) async throws -> ATTPDU {
        try await acquire(handle)
        defer { release(handle) }
        links[handle]?.early = nil
        requestCount += 1
        try await host.sendL2CAP(pdu.encoded, channel: .att, handle: handle)
        let timeout = transactionTimeout
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            guard !Task.isCancelled else { return }
            await self?.transactionTimedOut(handle)
        }
        defer { timer.cancel() }
        let response: ATTPDU
        if let early = links[handle]?.early {
            links[handle]?.early = nil
            response = try early.get()
        } else {
            response = try await withCheckedThrowingContinuation { continuation in
                if links[handle] == nil {
                    continuation.resume(throwing: GATTError(.disconnected, "the link went down"))
                } else {
                    links[handle]?.pending = continuation
                }
            }
        }
        if case .errorResponse(let e) = response {
            guard e.requestOpcode == pdu.opcode else { throw GATTError(.malformedResponse, "Error Response for \(e.requestOpcode), not \(pdu.opcode)") }
            throw GATTError(.att(e.error, handle: e.handle), "\(pdu.opcode): \(e.error) on handle 0x\(String(e.handle, radix: 16))")
        }
        guard response.opcode == pdu.opcode.responseOpcode else {
            throw GATTError(.malformedResponse, "\(response.opcode) in answer to \(pdu.opcode)")
        }
        return response
    }

    private func transactionTimedOut(_ handle: UInt16) async {
        guard let pending = links[handle]?.pending else { return }
        links[handle]?.pending = nil
        pending.resume(throwing: GATTError(.timeout, "no ATT response within \(transactionTimeout); closing the link"))
        // Core 5.4, Vol 3, Part F, 3.3.3: no further ATT on this bearer; the link is closed.
        try? await host.disconnect(handle)
    }

    /// Sends a command (Write Command): no response, never queued behind requests.
    func command(_ pdu: ATTPDU, on handle: UInt16) async throws {
        try await ensureAttached(handle)
        try await host.sendL2CAP(pdu.encoded, channel: .att, handle: handle)
    }
}
