import BLEProtocols
import BLEWire

/// GATT client procedures on a link (its ``HostConnection``): each runs one ``GATTProcedure`` over the link's
/// ``ATTBearer``. Core 5.4, Vol 3, Part G, 4.
extension GATTDriver {
    /// Exchanges MTUs (the client asks for ``preferredMTU``); returns the effective ATT_MTU. A client exchanges MTUs
    /// once per link (Core 5.4, Vol 3, Part F, 3.4.2.1): later calls return the MTU without asking again.
    /// An exchange under way (``beginMTUExchange(_:host:)``) is joined rather than asked again.
    func exchangeMTU(_ connection: HostConnection, host: isolated HCIHost) async throws -> Int {
        let link = try link(connection, host: host)
        switch links[link]?.mtuExchange {
        case .done?:
            return links[link]?.server.mtu ?? ATT.defaultLEMTU
        case .inFlight?:
            return try await withCheckedThrowingContinuation { continuation in
                guard case .inFlight(var waiters) = links[link]?.mtuExchange else {
                    continuation.resume(returning: links[link]?.server.mtu ?? ATT.defaultLEMTU)
                    return
                }
                waiters.append(continuation)
                links[link]?.mtuExchange = .inFlight(waiters)
            }
        case .notStarted?, nil:
            links[link]?.mtuExchange = .inFlight([])
            return try await runMTUExchange(connection, on: link, host: host)
        }
    }

    /// Starts the MTU exchange on a link and returns without waiting for it, as iOS does after connecting: the
    /// request is the first on the bearer, and whoever needs the MTU (``settledMTU(_:host:)``, ``exchangeMTU(_:host:)``)
    /// waits for it; nothing else does (a peer that never answers ATT leaves the link usable for L2CAP channels).
    func beginMTUExchange(_ connection: HostConnection, host: isolated HCIHost) {
        guard let link = try? link(connection, host: host), case .notStarted? = links[link]?.mtuExchange else { return }
        links[link]?.mtuExchange = .inFlight([])
        Task { _ = try? await self.runMTUExchange(connection, on: link, host: host) }
    }

    /// Runs the exchange marked in flight on `link` and hands its outcome to the callers that joined it.
    private func runMTUExchange(_ connection: HostConnection, on link: LinkID, host: isolated HCIHost) async throws -> Int {
        let outcome: Result<Int, any Error>
        do {
            // ATT_EXCHANGE_MTU_REQ only goes on the unenhanced bearer (an EATT bearer's MTU is its channel's).
            let mtu = try await run(MTUExchange(clientMTU: preferredMTU), on: connection, bearer: .unenhanced, host: host)
            links[link]?.server.negotiated(mtu: mtu)
            outcome = .success(links[link]?.server.mtu ?? mtu)
        } catch {
            outcome = .failure(error)
        }
        if case .inFlight(let waiters)? = links[link]?.mtuExchange {
            // A failed exchange may be asked again; a closed bearer fails that at once.
            links[link]?.mtuExchange = (try? outcome.get()) == nil ? .notStarted : .done
            for waiter in waiters { waiter.resume(with: outcome) }
        }
        return try outcome.get()
    }

    /// The link's ATT_MTU once an MTU exchange under way settled it (the current one when none is; the default when
    /// the exchange fails).
    func settledMTU(_ connection: HostConnection, host: isolated HCIHost) async -> Int {
        if case .inFlight? = links[connection.link]?.mtuExchange {
            return (try? await exchangeMTU(connection, host: host)) ?? mtu(connection)
        }
        return mtu(connection)
    }

    /// Discovers primary services (all, or those of type `uuid`).
    func discoverPrimaryServices(_ connection: HostConnection, uuid: BluetoothUUID? = nil, host: isolated HCIHost) async throws -> [GATTService] {
        try await run(PrimaryServiceDiscovery(uuid: uuid), on: connection, host: host)
    }

    /// Discovers the characteristics of `service` (all, or those of type `uuid`).
    func discoverCharacteristics(_ connection: HostConnection, of service: GATTService, uuid: BluetoothUUID? = nil, host: isolated HCIHost) async throws -> [GATTCharacteristic] {
        try await run(CharacteristicDiscovery(of: service, uuid: uuid), on: connection, host: host)
    }

    /// Discovers the descriptors of `characteristic`.
    func discoverDescriptors(_ connection: HostConnection, of characteristic: GATTCharacteristic, host: isolated HCIHost) async throws -> [GATTDescriptor] {
        try await run(DescriptorDiscovery(of: characteristic), on: connection, host: host)
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
    func discoverDatabase(_ connection: HostConnection, descriptors: Bool = true, host: isolated HCIHost) async throws -> [GATTDiscoveredService] {
        try await discoverDatabaseReporting(connection, descriptors: descriptors, host: host).services
    }

    /// ``discoverDatabase(_:descriptors:host:)`` with how it went: the round trips before the result was ready, and
    /// whether the cache answered.
    ///
    /// When the link is encrypted and the peer's Server Supported Features says it accepts Enhanced ATT bearers, the
    /// host's EATT bearers (``HCIHost/Configuration/enhancedATTBearers``) are opened in the background once per link
    /// (``openEnhancedBearers(_:count:host:)``).
    func discoverDatabaseReporting(_ connection: HostConnection, descriptors: Bool = true, host: isolated HCIHost) async throws
        -> (services: [GATTDiscoveredService], report: GATTDiscoveryReport) {
        let outcome = try await discoverDatabaseOnly(connection, descriptors: descriptors, host: host)
        considerEnhancedBearers(connection, services: outcome.services, host: host)
        return outcome
    }

    private func discoverDatabaseOnly(_ connection: HostConnection, descriptors: Bool, host: isolated HCIHost) async throws
        -> (services: [GATTDiscoveredService], report: GATTDiscoveryReport) {
        let start = requestCount
        guard let cache else {
            let services = try await run(DatabaseDiscovery(descriptors: descriptors), on: connection, host: host)
            let report = GATTDiscoveryReport(requests: requestCount - start, fromCache: false)
            lastDiscovery = report
            return (services, report)
        }
        let link = try link(connection, host: host)
        guard let connection = links[link]?.connection else { throw GATTError(.disconnected, "the link went down") }
        let peer = host.security(of: connection)?.peerIdentity ?? connection.peer
        let hash = try await readDatabaseHash(connection, host: host)
        if let hash, let entry = cache.entry(for: peer), entry.hash == hash, entry.hasDescriptors || !descriptors {
            adopt(entry.services, of: peer, on: link)
            let report = GATTDiscoveryReport(requests: requestCount - start, fromCache: true)
            lastDiscovery = report
            if let features = robustCachingTarget(entry.services, on: link) {
                links[link]?.enabledRobustCaching = true
                Task { try? await self.write(connection, attribute: features, value: [self.clientFeatures(host: host)], host: host) }
            }
            return (descriptors ? entry.services : entry.services.map { service in
                GATTDiscoveredService(service: service.service, characteristics: service.characteristics.map {
                    GATTDiscoveredCharacteristic(characteristic: $0.characteristic, descriptors: [])
                })
            }, report)
        }
        let services = try await run(DatabaseDiscovery(descriptors: descriptors), on: connection, host: host)
        if let hash {
            cache.store(GATTCache.Entry(hash: hash, services: services, hasDescriptors: descriptors), for: peer)
            adopt(services, of: peer, on: link)
        } else {
            cache.remove(peer)
        }
        if let features = robustCachingTarget(services, on: link) {
            links[link]?.enabledRobustCaching = true
            try? await write(connection, attribute: features, value: [clientFeatures(host: host)], host: host)
        }
        let report = GATTDiscoveryReport(requests: requestCount - start, fromCache: false)
        lastDiscovery = report
        return (services, report)
    }

    /// Uses `cache` for ``discoverDatabase(_:descriptors:host:)`` from now on (`nil`: no cache).
    func setCache(_ cache: GATTCache?) { self.cache = cache }

    /// The peer's Database Hash (Read Using Characteristic UUID over the whole range), `nil` when it has none.
    func readDatabaseHash(_ connection: HostConnection, host: isolated HCIHost) async throws -> [UInt8]? {
        do {
            return try await read(connection, byType: 0x2B2A, host: host).first { $0.value.count == 16 }?.value
        } catch let error as GATTError {
            if error.code.attError != nil { return nil }
            throw error
        }
    }

    /// Remembers which cache entry describes the link's peer, and its Service Changed handle.
    private func adopt(_ services: [GATTDiscoveredService], of peer: LEAddress, on link: LinkID) {
        links[link]?.cachedPeer = peer
        links[link]?.peerServiceChanged = services.first { $0.service.uuid == BluetoothUUID(0x1801) }?
            .characteristics.first { $0.characteristic.uuid == BluetoothUUID(0x2A05) }?.characteristic.valueHandle
    }

    /// The peer's Client Supported Features value handle, when robust caching is still to be enabled on this link.
    private func robustCachingTarget(_ services: [GATTDiscoveredService], on link: LinkID) -> AttributeHandle? {
        guard links[link]?.enabledRobustCaching == false else { return nil }
        return services.first { $0.service.uuid == BluetoothUUID(0x1801) }?.characteristics
            .first { $0.characteristic.uuid == BluetoothUUID(0x2B29) && $0.characteristic.properties.contains(.write) }?.characteristic.valueHandle
    }

    /// Drops the cache entry of the link's peer: its database changed.
    func forgetCachedDatabase(of link: LinkID) {
        guard let peer = links[link]?.cachedPeer else { return }
        cache?.remove(peer)
        links[link]?.cachedPeer = nil
    }

    /// Discovers the services a service includes. Core 5.4, Vol 3, Part G, 4.5.1.
    func discoverIncludedServices(_ connection: HostConnection, of service: GATTService, host: isolated HCIHost) async throws -> [GATTService] {
        try await run(IncludedServiceDiscovery(of: service), on: connection, host: host)
    }

    /// Reads the values of characteristics of type `uuid` in `range` without discovering them (Read Using
    /// Characteristic UUID). Core 5.4, Vol 3, Part G, 4.8.2.
    func read(_ connection: HostConnection, byType uuid: BluetoothUUID, in range: ClosedRange<AttributeHandle> = 1...0xFFFF, host: isolated HCIHost) async throws -> [(handle: AttributeHandle, value: [UInt8])] {
        try await run(ReadByType(type: uuid, in: range), on: connection, host: host)
    }

    /// Reads several values in one request (Read Multiple Variable Length Values, each value whole up to the MTU).
    /// Core 5.4, Vol 3, Part G, 4.8.5.
    func readMultiple(_ connection: HostConnection, attributes: [AttributeHandle], host: isolated HCIHost) async throws -> [[UInt8]] {
        guard attributes.count >= 2 else {
            var values: [[UInt8]] = []
            for attribute in attributes { values.append(try await read(connection, attribute: attribute, host: host)) }
            return values
        }
        return try await run(MultipleRead(handles: attributes), on: connection, host: host)
    }

    /// Reads a value; long values are read whole with Read Blob. Core 5.4, Vol 3, Part G, 4.8.1 and 4.8.3.
    func read(_ connection: HostConnection, attribute: AttributeHandle, host: isolated HCIHost) async throws -> [UInt8] {
        _ = await settledMTU(connection, host: host)
        return try await run({ ValueRead(handle: attribute, mtu: $0) }, on: connection, host: host)
    }

    /// Writes a value with a Write Request, or with prepared writes (reliably: each echo is checked) when it does
    /// not fit one PDU. Core 5.4, Vol 3, Part G, 4.9.3 and 4.9.4.
    func write(_ connection: HostConnection, attribute: AttributeHandle, value: [UInt8], host: isolated HCIHost) async throws {
        _ = await settledMTU(connection, host: host)
        try await run({ ValueWrite(handle: attribute, value: value, mtu: $0) }, on: connection, host: host)
    }

    /// Writes without response (a Write Command of at most ATT_MTU − 3 bytes).
    func writeWithoutResponse(_ connection: HostConnection, attribute: AttributeHandle, value: [UInt8], host: isolated HCIHost) async throws {
        let mtu = await settledMTU(connection, host: host)
        guard value.count <= ATT.maximumWriteValueLength(mtu: mtu) else {
            throw GATTError(.invalidValueLength, "\(value.count) bytes exceed ATT_MTU − 3 = \(ATT.maximumWriteValueLength(mtu: mtu))")
        }
        try await sendUnanswered(.writeCommand(.init(handle: attribute, value: value)), on: try link(connection, host: host), host: host)
    }

    /// Subscribes to notifications (or indications) of a characteristic by writing its CCCD; the stream delivers
    /// the values and finishes when the link goes down. Several subscribers of one characteristic each get every
    /// value. A subscriber more than ``notificationBufferingLimit`` values behind loses the oldest
    /// (``droppedNotificationCount``): notifications have no flow control, and memory stays bounded.
    func subscribe(_ connection: HostConnection, valueHandle: AttributeHandle, cccdHandle: AttributeHandle, indications: Bool = false, host: isolated HCIHost) async throws -> NotificationStream {
        let (stream, source) = NotificationStream.makeStream(bufferingLimit: notificationBufferingLimit)
        let id = try await subscribe(connection, valueHandle: valueHandle, cccdHandle: cccdHandle, indications: indications,
                                     sink: NotificationSink(deliver: { source.yield($0) == .dropped }, end: { source.finish() }), host: host)
        let link = connection.link
        source.onTermination = { [weak host] termination in
            guard termination == .cancelled else { return }
            Task { await host?.withGATT { _, gatt in gatt.dropSubscriber(id, valueHandle: valueHandle, on: link) } }
        }
        return stream
    }

    /// Subscribes `sink` to the values of `valueHandle` on a link, writing the CCCD, and returns the subscriber's id
    /// (for ``dropSubscriber(_:valueHandle:on:)``). The sink's `deliver` runs on this driver, once per value, in
    /// order; its `end` runs once, when the link goes down or ``unsubscribe(_:valueHandle:cccdHandle:host:)`` ends the
    /// subscription (and not after ``dropSubscriber(_:valueHandle:on:)``).
    func subscribe(_ connection: HostConnection, valueHandle: AttributeHandle, cccdHandle: AttributeHandle, indications: Bool,
                           sink: NotificationSink, host: isolated HCIHost) async throws -> Int {
        let link = try link(connection, host: host)
        let id = nextSubscriber
        nextSubscriber += 1
        links[link]?.subscribers[valueHandle, default: []].append((id, sink))
        do {
            try await write(connection, attribute: cccdHandle, value: indications ? [0x02, 0x00] : [0x01, 0x00], host: host)
        } catch {
            dropSubscriber(id, valueHandle: valueHandle, on: link)
            sink.end()
            throw error
        }
        return id
    }

    /// Forgets a subscriber (its `end` does not run).
    func dropSubscriber(_ id: Int, valueHandle: AttributeHandle, on link: LinkID) {
        links[link]?.subscribers[valueHandle]?.removeAll { $0.id == id }
        if links[link]?.subscribers[valueHandle]?.isEmpty == true { links[link]?.subscribers[valueHandle] = nil }
    }

    /// Stops notifications: writes 0 to the CCCD and finishes the streams.
    func unsubscribe(_ connection: HostConnection, valueHandle: AttributeHandle, cccdHandle: AttributeHandle, host: isolated HCIHost) async throws {
        let link = try link(connection, host: host)
        for s in links[link]?.subscribers.removeValue(forKey: valueHandle) ?? [] { s.sink.end() }
        try await write(connection, attribute: cccdHandle, value: [0x00, 0x00], host: host)
    }

    /// Subscribes to the peer's Service Changed indications; each one yields the affected handle range.
    func serviceChanges(_ connection: HostConnection, host: isolated HCIHost) async throws -> AsyncStream<ClosedRange<AttributeHandle>> {
        guard let gatt = try await discoverPrimaryServices(connection, uuid: 0x1801, host: host).first,
              let characteristic = try await discoverCharacteristics(connection, of: gatt, uuid: 0x2A05, host: host).first,
              let cccd = try await discoverDescriptors(connection, of: characteristic, host: host).first(where: { $0.uuid == BluetoothUUID(0x2902) })
        else { throw GATTError(.att(.attributeNotFound, handle: 0), "the peer has no Service Changed characteristic") }
        let values = try await subscribe(connection, valueHandle: characteristic.valueHandle, cccdHandle: cccd.handle, indications: true, host: host)
        return AsyncStream { continuation in
            let task = Task {
                for await value in values where value.count == 4 {
                    let start = AttributeHandle(rawValue: UInt16(value[0]) | UInt16(value[1]) << 8)
                    let end = AttributeHandle(rawValue: UInt16(value[2]) | UInt16(value[3]) << 8)
                    if start <= end { continuation.yield(start...end) }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
