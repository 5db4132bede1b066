import BLEProtocols
import BLEWire

/// What the GATT server keeps for a bonded client between its connections, in the bond store beside the bond's keys
/// (``Bond/gattClient``), so that it outlives this driver and the process: the client's Service Changed subscription
/// (Core 5.4, Vol 3, Part G, 7.1), its Client Supported Features (7.2), and the Database Hash of the database it was
/// last aware of (2.5.2.1).
///
/// The client is found when the host first counts its link as bonded: at connection, when its address names a bond
/// (or its private address resolves to one), or when a pairing on the link bonds. Its state is restored then, before
/// anything more is served. When the database's hash is not the one it was aware of, the database changed while it
/// was away (a firmware update, as far as it can tell): it is change-unaware, gets Database Out Of Sync if it enabled
/// robust caching, and is indicated Service Changed over the whole handle range if it subscribed; it is change-aware
/// again once it confirms the indication, or as ``ATTServer`` decides after it read the Database Hash or was answered
/// Database Out Of Sync.
extension GATTDriver {
    /// Looks up the bond of a link the host counts as bonded (once per link) and restores the client's state from it.
    func identifyBondedClient(_ security: LinkSecurity, on link: LinkID, host: isolated HCIHost) {
        guard security.isBonded, let connection = links[link]?.connection, links[link]?.lookedForBond == false else { return }
        links[link]?.lookedForBond = true
        guard let bond = host.bond(of: connection), let state = links[link] else { return }
        links[link]?.bondedClient = BondName(local: bond.local, peer: bond.peer)
        let serviceChanged = database.valueHandle(of: 0x2A05)
        let untouched = state.server.clientSupportedFeatures == 0
            && serviceChanged.map { state.server.clientConfigurations[$0] == nil } != false
        links[link]?.storedClient = bond.gattClient
        guard let stored = bond.gattClient, untouched else {
            // Nothing kept, or the client set its state on this link before it was known as bonded: this link's wins.
            links[link]?.awareHash = state.server.isChangeAware ? database.hash : bond.gattClient?.databaseHash
            storeBondedClient(link, host: host)
            return
        }
        let aware = stored.databaseHash == database.hash
        links[link]?.server.restore(clientSupportedFeatures: stored.clientSupportedFeatures, isChangeAware: aware)
        if let serviceChanged { links[link]?.server.setClientConfiguration(stored.serviceChangedConfiguration, for: serviceChanged) }
        links[link]?.awareHash = stored.databaseHash
        if !aware, let serviceChanged, links[link]?.server.isSubscribed(serviceChanged, indications: true) == true {
            // Not from this task: the indication waits for the client's confirmation, and this may be the event watcher.
            Task { await self.indicateServiceChanged(on: link, host: host) }
        }
    }

    /// Indicates Service Changed over the whole handle range to a client that came back change-unaware (what changed
    /// while it was away is not known); its confirmation makes it change-aware. Core 5.4, Vol 3, Part G, 7.1.
    private func indicateServiceChanged(on link: LinkID, host: isolated HCIHost) async {
        guard let serviceChanged = database.valueHandle(of: 0x2A05) else { return }
        do {
            try await indicate(Self.serviceChangedValue(0x0001...0xFFFF), valueHandle: serviceChanged, on: link, host: host)
        } catch {
            return
        }
        guard links[link]?.server.isChangeAware == false else { return }
        links[link]?.server.becameChangeAware()
        storeBondedClient(link, host: host)
    }

    /// The Service Changed value for `range`: its first and last handle. Core 5.4, Vol 3, Part G, 7.1.
    static func serviceChangedValue(_ range: ClosedRange<AttributeHandle>) -> [UInt8] {
        var writer = ByteWriter()
        writer.write(range.lowerBound)
        writer.write(range.upperBound)
        return writer.bytes
    }

    /// Writes a bonded client's GATT state to its bond when it changed: after each request served, a confirmed
    /// Service Changed, a change of the database. The hash kept is the database's while the client is change-aware,
    /// and the one it was last aware of while it is not. A client that set nothing has nothing written.
    func storeBondedClient(_ link: LinkID, host: isolated HCIHost) {
        guard let state = links[link], let bond = state.bondedClient else { return }
        let hash = state.server.isChangeAware ? database.hash : state.awareHash
        links[link]?.awareHash = hash
        let serviceChanged = database.valueHandle(of: 0x2A05).flatMap { state.server.clientConfigurations[$0] } ?? 0
        let record = BondedGATTClient(serviceChangedConfiguration: serviceChanged,
                                      clientSupportedFeatures: state.server.clientSupportedFeatures, databaseHash: hash)
        guard record != state.storedClient else { return }
        if state.storedClient == nil, serviceChanged == 0, state.server.clientSupportedFeatures == 0 { return }
        do {
            try host.bondStore.updateBond(local: bond.local, peer: bond.peer) { $0.gattClient = record }
            links[link]?.storedClient = record
        } catch {
            host.logger.warning("bond store: the GATT state of \(bond.peer) is not kept: \(error)")
        }
    }
}
