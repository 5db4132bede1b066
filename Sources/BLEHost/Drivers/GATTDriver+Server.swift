import BLEProtocols
import BLEWire

/// GATT server operations: serving the peers' requests, application answers, notifications and indications.
extension GATTDriver {
    /// Serves one PDU a bearer handed up (a request, answered through that bearer, or a command).
    func serve(_ bytes: [UInt8], on link: LinkID, bearer: BearerID = .unenhanced, host: isolated HCIHost) async {
        guard let state = links[link] else { return }
        var output = handle(bytes, on: link, bearer: bearer)
        if output.refusesForSecurity, refreshSecurity(of: link, host: host), links[link] != nil {
            // The link's security changed after this driver last heard (the host's event is still on its way): the
            // request is judged again against the link as it is now. A refusal changed nothing, so this is safe.
            output = handle(bytes, on: link, bearer: bearer)
        }
        for event in output.events { publishServerEvent(event, on: link) }
        // A bonded client's Service Changed subscription, features and awareness go to its bond as they change.
        storeBondedClient(link, host: host)
        let isRequest = !ATTOpcode(rawValue: bytes.first ?? 0).isCommand
        if let pending = output.pending {
            await ask(pending, connection: state.connection, bearer: bearer, isRequest: isRequest, host: host)
            return
        }
        if isRequest, let actions = withBearer(bearer, on: link, { $0.respond(output.response) }) {
            await perform(actions, on: link, bearer: bearer, host: host)
        }
    }

    /// Runs the server on one PDU of a bearer, against the link's client state (stored back before any suspension:
    /// what happens to the link meanwhile is never overwritten). On an EATT bearer the server sees the client with
    /// that bearer's ATT_MTU (``ATTServerConnection/onEnhancedBearer(mtu:)``).
    private func handle(_ bytes: [UInt8], on link: LinkID, bearer: BearerID) -> ATTServer.Output {
        guard var server = links[link]?.server else { return ATTServer.Output(response: nil, events: []) }
        switch bearer {
        case .unenhanced:
            let output = ATTServer.handle(bytes, connection: &server, database: &database)
            links[link]?.server = server
            return output
        case .enhanced(let cid):
            var view = server.onEnhancedBearer(mtu: bearerMTU(bearer, on: link),
                                               preparedWrites: links[link]?.enhanced[cid]?.preparedWrites ?? .init())
            let output = ATTServer.handle(bytes, connection: &view, database: &database)
            let preparedWrites = server.adopt(fromBearer: view)
            links[link]?.server = server
            links[link]?.enhanced[cid]?.preparedWrites = preparedWrites
            return output
        }
    }

    /// Hands a pending request to the application, one ``GATTServerRequest`` per attribute asked about.
    private func ask(_ pending: ATTServer.Pending, connection: HostConnection, bearer: BearerID, isRequest: Bool, host: isolated HCIHost) async {
        let ids = pending.requests.map { _ in
            nextApplicationRequest += 1
            return nextApplicationRequest
        }
        let waiting = ApplicationPending(pending: pending, requestIDs: ids, isRequest: isRequest)
        guard let consumer = applicationConsumer else {
            // Nobody answers for the application: the peer gets Unlikely Error at once rather than a timeout.
            await finish(waiting, on: connection.link, bearer: bearer, with: ids.map { _ in .error(.unlikelyError) }, host: host)
            return
        }
        if isRequest {
            switch bearer {
            case .unenhanced: links[connection.link]?.application = waiting
            case .enhanced(let cid): links[connection.link]?.enhanced[cid]?.application = waiting
            }
        } else if let first = ids.first {
            commands[first] = (connection.link, waiting)
        }
        for (id, request) in zip(ids, pending.requests) {
            consumer.yield(GATTServerRequest(id: id, connection: connection, request: request, needsResponse: pending.needsResponse))
        }
    }

    /// The application's requests (reads and writes of its attributes). One consumer at a time: a new call finishes
    /// the previous stream. Without a consumer such requests are refused with Unlikely Error.
    func applicationRequests() -> AsyncStream<GATTServerRequest> {
        applicationConsumer?.finish()
        let (stream, continuation) = AsyncStream.makeStream(of: GATTServerRequest.self)
        applicationConsumer = continuation
        return stream
    }

    /// Answers an application request. Answers to requests whose link went down, or answered already, are ignored.
    func respond(to request: GATTServerRequest, with answer: ATTApplicationAnswer, host: isolated HCIHost) async {
        let link = request.connection.link
        // The bearer whose request this answers (each bearer has at most one waiting for the application).
        var bearer: BearerID?
        if links[link]?.application?.requestIDs.contains(request.id) == true {
            bearer = .unenhanced
        } else if let cid = links[link]?.enhanced.first(where: { $0.value.application?.requestIDs.contains(request.id) == true })?.key {
            bearer = .enhanced(cid)
        }
        if let bearer, var waiting = application(on: link, bearer: bearer) {
            guard waiting.answers[request.id] == nil else { return }
            waiting.answers[request.id] = answer
            let stillWaiting: ApplicationPending? = waiting.isAnswered ? nil : waiting
            switch bearer {
            case .unenhanced: links[link]?.application = stillWaiting
            case .enhanced(let cid): links[link]?.enhanced[cid]?.application = stillWaiting
            }
            if waiting.isAnswered { await finish(waiting, on: link, bearer: bearer, with: waiting.orderedAnswers, host: host) }
        } else if let command = commands.removeValue(forKey: request.id), command.link == link {
            await finish(command.pending, on: link, bearer: .unenhanced, with: [answer], host: host)
        }
    }

    private func application(on link: LinkID, bearer: BearerID) -> ApplicationPending? {
        switch bearer {
        case .unenhanced: links[link]?.application
        case .enhanced(let cid): links[link]?.enhanced[cid]?.application
        }
    }

    private func finish(_ waiting: ApplicationPending, on link: LinkID, bearer: BearerID, with answers: [ATTApplicationAnswer],
                        host: isolated HCIHost) async {
        guard var server = links[link]?.server else { return }
        let output: ATTServer.Output
        switch bearer {
        case .unenhanced:
            output = ATTServer.complete(waiting.pending, with: answers, connection: &server, database: &database)
        case .enhanced(let cid):
            var view = server.onEnhancedBearer(mtu: bearerMTU(bearer, on: link),
                                               preparedWrites: links[link]?.enhanced[cid]?.preparedWrites ?? .init())
            output = ATTServer.complete(waiting.pending, with: answers, connection: &view, database: &database)
            let preparedWrites = server.adopt(fromBearer: view)
            links[link]?.enhanced[cid]?.preparedWrites = preparedWrites
        }
        links[link]?.server = server
        for event in output.events { publishServerEvent(event, on: link) }
        if waiting.isRequest, let actions = withBearer(bearer, on: link, { $0.respond(output.response) }) {
            await perform(actions, on: link, bearer: bearer, host: host)
        }
    }

    /// Sets the Device Name the database serves (Generic Access 0x2A00).
    func setDeviceName(_ name: String) {
        guard let handle = database.valueHandle(of: 0x2A00) else { return }
        database.setValue(Array(name.utf8), for: handle)
    }

    /// Adds a service after the last handle (the others keep their handles) and tells the clients that subscribed
    /// to Service Changed about its range, which it returns. Core 5.4, Vol 3, Part G, 7.1.
    @discardableResult
    func addService(_ service: GATTServiceDefinition, host: isolated HCIHost) async throws -> ClosedRange<AttributeHandle> {
        guard let range = database.add(service) else {
            throw GATTError(.invalidValueLength, "no room for \(GATTDatabase.handleCount(service)) more handles")
        }
        await announceServiceChange(range, host: host)
        return range
    }

    /// Removes the service declared at `start` (the others keep their handles); clients forget their
    /// subscriptions in its range and those subscribed to Service Changed are told about it.
    func removeService(at start: AttributeHandle, host: isolated HCIHost) async throws {
        guard let range = database.removeService(at: start) else {
            throw GATTError(.att(.attributeNotFound, handle: start), "no removable service is declared at \(start)")
        }
        for link in links.keys {
            for valueHandle in links[link]?.server.clientConfigurations.keys.filter({ range.contains($0) }) ?? [] {
                links[link]?.server.setClientConfiguration(0, for: valueHandle)
            }
        }
        await announceServiceChange(range, host: host)
    }

    /// Makes every client change-unaware (connected ones and bonded ones away) and indicates Service Changed with
    /// `range` to every client that subscribed to it; a client that confirms is change-aware again. Core 5.4, Vol 3,
    /// Part G, 2.5.2.1 and 7.1.
    ///
    /// Bonded clients away are not visited: the Database Hash kept with each bond is the one of the database it was
    /// aware of, and no longer the database's (see ``identifyBondedClient(_:on:host:)``).
    private func announceServiceChange(_ range: ClosedRange<AttributeHandle>, host: isolated HCIHost) async {
        for link in links.keys { links[link]?.server.databaseChanged() }
        guard let serviceChanged = database.valueHandle(of: 0x2A05) else { return }
        let confirmed = (try? await updateValue(Self.serviceChangedValue(range), for: serviceChanged, host: host)) ?? []
        for connection in confirmed {
            let link = connection.link
            guard links[link]?.server.isSubscribed(serviceChanged, indications: true) == true else { continue }
            links[link]?.server.becameChangeAware()
            storeBondedClient(link, host: host)
        }
    }

    /// Replaces the served database (for example after services were added). Connected clients keep their MTU and
    /// their Service Changed subscription; other subscriptions are cleared (handles may have moved), and every client
    /// that asked for Service Changed indications is told the whole handle range changed. Core 5.4, Vol 3, Part G, 7.1.
    func replaceDatabase(_ database: GATTDatabase, host: isolated HCIHost) async {
        let serviceChanged = database.valueHandle(of: 0x2A05)
        self.database = database
        for link in links.keys {
            guard let old = links[link]?.server else { continue }
            var fresh = ATTServerConnection()
            fresh.serverMTU = preferredMTU
            fresh.negotiated(mtu: old.mtu)
            fresh.isEncrypted = old.isEncrypted
            fresh.isAuthenticated = old.isAuthenticated
            fresh.isSecureConnections = old.isSecureConnections
            fresh.keySize = old.keySize
            fresh.hasLongTermKey = old.hasLongTermKey
            fresh.minimumKeySize = old.minimumKeySize
            fresh.restore(clientSupportedFeatures: old.clientSupportedFeatures, isChangeAware: old.isChangeAware)
            if let sc = serviceChanged, let bits = old.clientConfigurations[sc] { fresh.setClientConfiguration(bits, for: sc) }
            links[link]?.server = fresh
            // Prepared writes name handles of the old database, on every bearer.
            for cid in links[link]?.enhanced.keys.map({ $0 }) ?? [] { links[link]?.enhanced[cid]?.preparedWrites = .init() }
        }
        await announceServiceChange(0x0001...0xFFFF, host: host)
    }

    /// Changes a value in the local database and notifies (or indicates, when that is what a client subscribed to)
    /// every subscribed client, or only those on `links` (like `updateValue(_:for:onSubscribedCentrals:host:)`). Returns the
    /// connection handles that were sent the value. Indications wait for each client's confirmation, and one
    /// indication at a time goes to a client (concurrent calls queue). A link that goes down or times out meanwhile is
    /// left out of the result; the call throws only when no link could be sent the value and one of them failed.
    /// A value longer than a subscriber's ATT_MTU − 3 is refused (``GATTErrorCode/invalidValueLength``) rather than
    /// cut.
    @discardableResult
    func updateValue(_ value: [UInt8], for valueHandle: AttributeHandle, onLinks only: Set<LinkID>? = nil, host: isolated HCIHost) async throws -> [HostConnection] {
        // A change-unaware client with robust caching gets nothing but Service Changed until it catches up (its
        // handles may mean something else to it). Core 5.4, Vol 3, Part G, 2.5.2.1.
        let isServiceChanged = database.attribute(valueHandle)?.type == BluetoothUUID(0x2A05)
        // What each subscribed link needs, read in place: a copy of a link's state would retain everything in it.
        var subscribed: [(connection: HostConnection, notify: Bool, mtu: Int)] = []
        links.forEachInPlace { _, state in
            guard only?.contains(state.connection.link) ?? true else { return }
            let notify = state.server.isSubscribed(valueHandle)
            guard notify || state.server.isSubscribed(valueHandle, indications: true),
                  isServiceChanged || !state.server.robustCaching || state.server.isChangeAware else { return }
            subscribed.append((state.connection, notify, state.server.mtu))
        }
        subscribed.sort { $0.connection.handle < $1.connection.handle }
        if let small = subscribed.first(where: { value.count > ATT.maximumNotificationValueLength(mtu: $0.mtu) }) {
            throw GATTError(.invalidValueLength, "\(value.count) bytes do not fit a notification at ATT_MTU \(small.mtu) (at most \(ATT.maximumNotificationValueLength(mtu: small.mtu)))")
        }
        database.setValue(value, for: valueHandle)
        var sent: [HostConnection] = []
        var failure: (any Error)?
        for target in subscribed {
            let link = target.connection.link
            do {
                if target.notify {
                    try await sendUnanswered(.handleValueNotification(.init(handle: valueHandle, value: value)), on: link, host: host)
                } else {
                    try await indicate(value, valueHandle: valueHandle, on: link, host: host)
                }
                sent.append(target.connection)
            } catch {
                failure = failure ?? error
            }
        }
        if sent.isEmpty, let failure { throw failure }
        return sent
    }

    /// Changes several values in the local database and notifies every client subscribed to notifications of any of
    /// them: a client that enabled Multiple Handle Value Notifications (bit 2 of its Client Supported Features) gets
    /// the values it subscribed to in one ATT_MULTIPLE_HANDLE_VALUE_NTF when they fit its ATT_MTU, any other client one
    /// notification per value (Core 5.4, Vol 3, Part F, 3.4.7.4 and Part G, 4.10.2). Clients subscribed to indications
    /// get one indication per value, as ``updateValue(_:for:onLinks:host:)`` sends them. Returns the connections sent
    /// anything. A value longer than a subscriber's ATT_MTU − 3 is refused, before anything changes.
    @discardableResult
    func updateValues(_ values: [(handle: AttributeHandle, value: [UInt8])], host: isolated HCIHost) async throws -> [HostConnection] {
        var targets: [(connection: HostConnection, notify: [(AttributeHandle, [UInt8])], indicate: [(AttributeHandle, [UInt8])],
                       multiple: Bool, mtu: Int)] = []
        links.forEachInPlace { _, state in
            let s = state.server
            guard !s.robustCaching || s.isChangeAware else { return }
            let notify = values.filter { s.isSubscribed($0.handle) }.map { ($0.handle, $0.value) }
            let indicate = values.filter { !s.isSubscribed($0.handle) && s.isSubscribed($0.handle, indications: true) }.map { ($0.handle, $0.value) }
            guard !notify.isEmpty || !indicate.isEmpty else { return }
            targets.append((state.connection, notify, indicate, s.multipleNotifications, s.mtu))
        }
        targets.sort { $0.connection.handle < $1.connection.handle }
        for target in targets {
            if let long = (target.notify + target.indicate).first(where: { $0.1.count > ATT.maximumNotificationValueLength(mtu: target.mtu) }) {
                throw GATTError(.invalidValueLength, "\(long.1.count) bytes for \(long.0) do not fit a notification at ATT_MTU \(target.mtu)")
            }
        }
        for (handle, value) in values { database.setValue(value, for: handle) }
        var sent: [HostConnection] = []
        var failure: (any Error)?
        for target in targets {
            let link = target.connection.link
            do {
                let entries = target.notify.map { ATTReadByTypeResponse.Entry(handle: $0.0, value: $0.1) }
                let multipleLength = 1 + entries.reduce(0) { $0 + 4 + $1.value.count }
                if target.multiple, entries.count >= 2, multipleLength <= target.mtu {
                    try await sendUnanswered(.multipleHandleValueNotification(.init(entries: entries)), on: link, host: host)
                } else {
                    for (handle, value) in target.notify {
                        try await sendUnanswered(.handleValueNotification(.init(handle: handle, value: value)), on: link, host: host)
                    }
                }
                for (handle, value) in target.indicate { try await indicate(value, valueHandle: handle, on: link, host: host) }
                sent.append(target.connection)
            } catch {
                failure = failure ?? error
            }
        }
        if sent.isEmpty, let failure { throw failure }
        return sent
    }

    /// Sends one indication on a link once the previous one is confirmed, and waits for its confirmation (the
    /// bearer queues them, and closes itself, not the link, when one is not confirmed in time).
    func indicate(_ value: [UInt8], valueHandle: AttributeHandle, on link: LinkID, host: isolated HCIHost) async throws {
        guard let (id, actions) = links[link]?.bearer.indicate(handle: valueHandle, value: value) else {
            throw GATTError(.disconnected, "the link went down")
        }
        let key = IndicationKey(link: link, bearer: .unenhanced, id: id)
        // The waiter is in place before the indication leaves: its confirmation cannot come first.
        try await withCheckedThrowingContinuation { continuation in
            confirmationWaiters[key] = continuation
            performInStep(actions, on: link, host: host)
        }
    }

    /// Whether every link has room to send now (the ready signal behind
    /// `peripheralManagerIsReady(toUpdateSubscribers:)`).
    func isReadyToUpdateSubscribers(host: isolated HCIHost) -> Bool {
        for state in links.values where !host.isReadyToSend(state.connection) { return false }
        return true
    }

    /// Whether a client on `handle` subscribed to `valueHandle`.
    func isSubscribed(_ connection: HostConnection, valueHandle: AttributeHandle) -> Bool {
        guard let s = links[connection.link]?.server else { return false }
        return s.isSubscribed(valueHandle) || s.isSubscribed(valueHandle, indications: true)
    }
}
