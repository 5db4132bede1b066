import BLEProtocols
import BLEWire

/// Enhanced ATT bearers: LE enhanced credit based channels on SPSM 0x0027 that the host owns and this driver runs as
/// further ATT bearers of their link. Core 5.4, Vol 3, Part G, 2.5 (EATT) and Part F, 3.2.11.
extension GATTDriver {
    /// The Client Supported Features this client writes: robust caching (bit 0), Multiple Handle Value Notifications
    /// (bit 2, which it receives on every bearer) and, while the host has EATT on, EATT (bit 1). Core 5.4, Vol 3,
    /// Part G, 7.2.
    func clientFeatures(host: isolated HCIHost) -> UInt8 {
        host.configuration.enhancedATTBearers > 0 ? 0x07 : 0x05
    }

    /// Makes `channel` (an open channel on SPSM 0x0027 of an attached link) an ATT bearer of its link: its SDUs are
    /// the bearer's PDUs, in order, read by a task until the channel ends (which drops the bearer). A channel of a
    /// link this driver does not have is closed.
    func adoptEnhancedBearer(_ channel: L2CAPChannel, host: isolated HCIHost) {
        let link = channel.link, cid = channel.localCID
        guard links[link] != nil, links[link]?.detaching == false else {
            Task { _ = try? await channel.close(within: .zero) }
            return
        }
        var timers = TimerSet<ATTBearer.Timer>()
        timers.clock = host.clock
        // ATT_MTU of an EATT bearer: the smaller of the MTUs the two sides gave their channel ends.
        let mtu = max(ATT.defaultLEMTU, min(Int(channel.info.local.mtu), channel.peerMTU))
        links[link]?.enhanced[cid] = EnhancedBearer(channel: channel, bearer: ATTBearer(transactionTimeout: transactionTimeout),
                                                    timers: timers, mtu: mtu)
        if let connection = links[link]?.connection {
            host.publish(.enhancedATTBearers(connection, count: enhancedBearerCount(connection)))
        }
        Task {
            for await sdu in channel.incoming {
                await host.withGATT { host, gatt in await gatt.receive(sdu, on: link, bearer: .enhanced(cid), host: host) }
            }
            await host.withGATT { host, gatt in
                await gatt.closeEnhancedBearer(cid, on: link, because: GATTError(.disconnected, "the EATT channel \(cid) closed"),
                                               host: host)
            }
        }
    }

    /// Drops an Enhanced ATT bearer of `link`: what waits on it fails with `reason`, its timers stop and its channel
    /// closes. The link and its other bearers stay (Core 5.4, Vol 3, Part F, 3.3.3: a transaction timeout on an EATT
    /// bearer ends that bearer only).
    func closeEnhancedBearer(_ cid: L2CAPChannelID, on link: LinkID, because reason: GATTError, host: isolated HCIHost) async {
        guard var e = links[link]?.enhanced.removeValue(forKey: cid) else { return }
        if let state = links[link], !state.detaching {
            host.publish(.enhancedATTBearers(state.connection, count: enhancedBearerCount(state.connection)))
        }
        let actions = e.bearer.close(reason)
        e.timers.cancelAll()
        // The bearer is out of the link already: its actions are carried out here (the failures of its waiters).
        for action in actions {
            switch action {
            case .complete(let id, let result):
                waiters.removeValue(forKey: RequestKey(link: link, bearer: .enhanced(cid), id: id))?.resume(with: result.mapError { $0 })
            case .confirmed(let id, let result):
                confirmationWaiters.removeValue(forKey: IndicationKey(link: link, bearer: .enhanced(cid), id: id))?
                    .resume(with: result.mapError { $0 })
            default:
                break
            }
        }
        // An application answer still due on this bearer (``EnhancedBearer/application``) has nowhere to go: it is
        // ignored when it comes (``respond(to:with:host:)`` finds no bearer waiting for it).
        host.logger.debug("link \(link): \(GATTDriver.BearerID.enhanced(cid)) closed: \(reason)")
        let channel = e.channel
        Task { _ = try? await channel.close(within: .seconds(1)) }
    }

    /// The number of open Enhanced ATT bearers of `connection`'s link.
    func enhancedBearerCount(_ connection: HostConnection) -> Int {
        links[connection.link]?.enhanced.values.filter { $0.bearer.closedReason == nil }.count ?? 0
    }

    /// Opens Enhanced ATT bearers on an encrypted link until it has `count` (1 to 5), with one
    /// L2CAP_CREDIT_BASED_CONNECTION_REQ to SPSM 0x0027 for the missing ones, after writing this client's Client
    /// Supported Features with the EATT bit when the peer has the characteristic. One opening runs at a time on a link:
    /// a call made meanwhile (an application's while the host opens its own after a discovery) waits for it, then opens
    /// what is still missing. Returns how many bearers the link has open afterwards. Throws when the link is not
    /// encrypted (the server would refuse), EATT is off, or none of the missing channels opened.
    @discardableResult
    func openEnhancedBearers(_ connection: HostConnection, count: Int, host: isolated HCIHost) async throws -> Int {
        let link = try link(connection, host: host)
        guard host.configuration.enhancedATTBearers > 0 else {
            throw GATTError(.att(.requestNotSupported, handle: 0), "EATT is off on this host (Configuration.enhancedATTBearers is 0)")
        }
        guard host.security(of: connection)?.isEncrypted == true else {
            throw GATTError(.att(.insufficientEncryption, handle: 0), "EATT bearers need an encrypted link")
        }
        links[link]?.openedEnhanced = true
        while let opening = links[link]?.enhancedOpening { _ = await opening.value }
        let missing = max(1, min(count, 5)) - enhancedBearerCount(connection)
        guard missing > 0, links[link] != nil else { return enhancedBearerCount(connection) }
        // Stored before this step ends: the task runs in the host's isolation, after it.
        let opening = Task { () -> Result<Int, any Error> in
            let outcome: Result<Int, any Error>
            do {
                outcome = .success(try await self.openMissingBearers(missing, connection, host: host))
            } catch {
                outcome = .failure(error)
            }
            self.links[link]?.enhancedOpening = nil
            return outcome
        }
        links[link]?.enhancedOpening = opening
        return try await opening.value.get()
    }

    /// Writes the EATT bit of Client Supported Features, then opens `missing` channels and adopts them.
    private func openMissingBearers(_ missing: Int, _ connection: HostConnection, host: isolated HCIHost) async throws -> Int {
        // Bits once set stay set: what the peer has is kept.
        if let features = try? await read(connection, byType: 0x2B29, host: host).first, features.value.count == 1 {
            let bits = features.value[0] | clientFeatures(host: host)
            if bits != features.value[0] { try? await write(connection, attribute: features.handle, value: [bits], host: host) }
        }
        let parameters = host.enhancedATTParameters(mtu: preferredMTU)
        let channels: [L2CAPChannel]
        do {
            channels = try await host.openL2CAPChannels(spsm: .eatt, count: missing, on: connection, parameters: parameters)
        } catch {
            throw GATTError(.disconnected, "the EATT channels did not open: \(error)", underlying: error)
        }
        for channel in channels { adoptEnhancedBearer(channel, host: host) }
        return enhancedBearerCount(connection)
    }

    /// After a discovery: remembers the peer's Server Supported Features (0x2B3A) and opens the host's EATT bearers
    /// in the background when the link is encrypted (``openEnhancedBearersIfDue(_:host:)``).
    func considerEnhancedBearers(_ connection: HostConnection, services: [GATTDiscoveredService], host: isolated HCIHost) {
        if let features = services.first(where: { $0.service.uuid == BluetoothUUID(0x1801) })?.characteristics
            .first(where: { $0.characteristic.uuid == BluetoothUUID(0x2B3A) })?.characteristic.valueHandle {
            links[connection.link]?.peerServerFeatures = features
        }
        openEnhancedBearersIfDue(connection, host: host)
    }

    /// Opens the host's EATT bearers (``HCIHost/Configuration/enhancedATTBearers``) in the background, once per link,
    /// when the link is encrypted and the peer has Server Supported Features with the EATT bit (read now). Called
    /// after a discovery and when the link's security changes (a discovery before pairing opens them once paired).
    func openEnhancedBearersIfDue(_ connection: HostConnection, host: isolated HCIHost) {
        let count = host.configuration.enhancedATTBearers
        guard count > 0, links[connection.link]?.openedEnhanced == false, host.security(of: connection)?.isEncrypted == true,
              let features = links[connection.link]?.peerServerFeatures else { return }
        links[connection.link]?.openedEnhanced = true
        Task {
            guard let value = try? await self.read(connection, attribute: features, host: host), value.first.map({ $0 & 0x01 != 0 }) == true
            else { return }
            do {
                try await self.openEnhancedBearers(connection, count: count, host: host)
            } catch {
                host.logger.info("\(connection.link): no EATT bearers: \(error)")
            }
        }
    }
}
