import BLEWire

/// Connection commands: create, cancel, disconnect, update, remote features, data length. Core 5.4, Vol 4, Part E,
/// 7.1.6 and 7.8.12–7.8.33.
extension World {
    mutating func leCreateConnection(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILECreateConnection.self, id, packet), let state = controllers[id] else { return }
        guard state.initiating.connection == nil else { return status(id, HCILECreateConnection.opcode, .commandDisallowed) }
        guard c.isValid, c.initiatorFilterPolicy == 0 else {
            return status(id, HCILECreateConnection.opcode,
                          c.isValid ? .unsupportedFeatureOrParameterValue : .invalidCommandParameters)
        }
        guard state.ownAddress(c.ownAddressType) != nil else {
            return status(id, HCILECreateConnection.opcode, .invalidCommandParameters)
        }
        controllers[id]?.initiating.connection = c
        listenerCache = nil
        status(id, HCILECreateConnection.opcode, .success)
    }

    mutating func leCreateConnectionCancel(_ id: Int, _ packet: HCICommandPacket) {
        guard decode(HCILECreateConnectionCancel.self, id, packet) != nil, let state = controllers[id] else { return }
        guard let pending = state.initiating.connection else {
            complete(id, HCILECreateConnectionCancel.self, .init(status: .commandDisallowed))
            return
        }
        controllers[id]?.initiating.connection = nil
        controllers[id]?.initiating.extendedConnection = nil
        listenerCache = nil
        complete(id, HCILECreateConnectionCancel.self, .init())
        // Core 5.4, Vol 4, Part E, 7.8.13: LE Connection Complete with Unknown Connection Identifier.
        emitConnectionComplete(id, HCILEConnectionCompleteEvent(status: .unknownConnectionIdentifier, handle: 0, role: .central,
                                                                peerAddressType: pending.peerAddressType, peerAddress: pending.peerAddress,
                                                                connectionInterval: 0, peripheralLatency: 0, supervisionTimeout: 0))
    }

    mutating func disconnect(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCIDisconnect.self, id, packet) else { return }
        let allowed: Set<HCIStatus> = [.authenticationFailure, .remoteUserTerminatedConnection, .remoteDeviceTerminatedLowResources,
                                       .remoteDeviceTerminatedPowerOff, .unsupportedRemoteFeature,
                                       HCIStatus(rawValue: 0x29), .unacceptableConnectionParameters]
        guard allowed.contains(c.reason) else { return status(id, HCIDisconnect.opcode, .invalidCommandParameters) }
        guard let linkID = linkID(controller: id, handle: c.handle), let link = links[linkID],
              let peer = link.peer(of: id) else {
            return status(id, HCIDisconnect.opcode, .unknownConnectionIdentifier)
        }
        status(id, HCIDisconnect.opcode, .success)
        let reachable = peer.active && canHear(id, peer.controller)
        closeSide(link: linkID, controller: id, reason: .connectionTerminatedByLocalHost)
        if reachable {
            closeSide(link: linkID, controller: peer.controller, reason: c.reason)
        } else {
            reevaluateLinks()   // The peer never hears LL_TERMINATE_IND: it times out.
        }
    }

    mutating func leConnectionUpdate(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILEConnectionUpdate.self, id, packet) else { return }
        guard let linkID = linkID(controller: id, handle: c.handle), let link = links[linkID] else {
            return status(id, HCILEConnectionUpdate.opcode, .unknownConnectionIdentifier)
        }
        guard c.isValid else { return status(id, HCILEConnectionUpdate.opcode, .invalidCommandParameters) }
        guard link.central.controller == id else {
            // A peripheral needs the Connection Parameters Request procedure, which this controller does not offer.
            return status(id, HCILEConnectionUpdate.opcode, .unsupportedRemoteFeature)
        }
        guard !link.updatePending else {
            // One Connection Update procedure at a time. Core 5.4, Vol 6, Part B, 5.1.1.
            return status(id, HCILEConnectionUpdate.opcode, .commandDisallowed)
        }
        status(id, HCILEConnectionUpdate.opcode, .success)
        links[linkID]?.updatePending = true
        // The new parameters take effect at an instant a few connection events later.
        queue.schedule(.connectionUpdate(link: linkID, interval: c.intervalMax, latency: c.maxLatency, timeout: c.supervisionTimeout),
                       at: now + 6 * link.intervalNanos)
    }

    mutating func leReadRemoteFeatures(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILEReadRemoteFeatures.self, id, packet) else { return }
        guard let linkID = linkID(controller: id, handle: c.handle), let peer = links[linkID]?.peer(of: id) else {
            return status(id, HCILEReadRemoteFeatures.opcode, .unknownConnectionIdentifier)
        }
        status(id, HCILEReadRemoteFeatures.opcode, .success)
        emit(id, HCILEReadRemoteFeaturesCompleteEvent(handle: c.handle, features: leFeatures(of: peer.controller)).packet)
    }

    mutating func leSetDataLength(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILESetDataLength.self, id, packet) else { return }
        guard let linkID = linkID(controller: id, handle: c.handle), var link = links[linkID] else {
            complete(id, HCILESetDataLength.self, .init(status: .unknownConnectionIdentifier, handle: c.handle))
            return
        }
        guard c.isValid else {
            complete(id, HCILESetDataLength.self, .init(status: .invalidCommandParameters, handle: c.handle))
            return
        }
        complete(id, HCILESetDataLength.self, .init(handle: c.handle))
        // A peer whose link layer lacks Data Length Extension answers the Data Length Update procedure with
        // LL_UNKNOWN_RSP: nothing changes. Core 5.4, Vol 6, Part B, 5.1.9.
        guard let peer = link.peer(of: id), leFeatures(of: peer.controller).contains(.dataPacketLengthExtension) else { return }
        let isCentral = link.central.controller == id
        let previous = isCentral ? link.centralTxOctets : link.peripheralTxOctets
        guard previous != c.txOctets else { return }
        if isCentral { link.centralTxOctets = c.txOctets } else { link.peripheralTxOctets = c.txOctets }
        links[linkID] = link
        dataLengthChanged(link)
    }

    /// Both hosts hear the link's new maximum data lengths (LE Data Length Change; times as on LE 1M).
    mutating func dataLengthChanged(_ link: Link) {
        let time = { (octets: UInt16) in UInt16((Int(octets) + 14) * 8) }
        for side in [link.central, link.peripheral] where side.active {
            let tx = side.controller == link.central.controller ? link.centralTxOctets : link.peripheralTxOctets
            let rx = side.controller == link.central.controller ? link.peripheralTxOctets : link.centralTxOctets
            emit(side.controller, HCILEDataLengthChangeEvent(handle: side.handle, maxTxOctets: tx, maxTxTime: time(tx),
                                                             maxRxOctets: rx, maxRxTime: time(rx)).packet)
        }
    }

    // MARK: PHY (Core 5.4, Vol 4, Part E, 7.8.47–7.8.49; Vol 6, Part B, 5.1.10)

    mutating func leReadPHY(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILEReadPHY.self, id, packet) else { return }
        guard let linkID = linkID(controller: id, handle: c.handle), let link = links[linkID] else {
            complete(id, HCILEReadPHY.self, .init(status: .unknownConnectionIdentifier, handle: c.handle, txPHY: .le1M, rxPHY: .le1M))
            return
        }
        let isCentral = link.central.controller == id
        complete(id, HCILEReadPHY.self, .init(handle: c.handle, txPHY: isCentral ? link.centralPHY : link.peripheralPHY,
                                              rxPHY: isCentral ? link.peripheralPHY : link.centralPHY))
    }

    mutating func leSetDefaultPHY(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILESetDefaultPHY.self, id, packet) else { return }
        let status = Self.phyPreferenceStatus(allPHYs: c.allPHYs, tx: c.txPHYs, rx: c.rxPHYs, supported: phys(of: id))
        if status == .success {
            let phys = phys(of: id)
            controllers[id]?.hci.defaultTxPHYs = c.allPHYs & 0x01 != 0 ? phys : LEPHYs(rawValue: c.txPHYs)
            controllers[id]?.hci.defaultRxPHYs = c.allPHYs & 0x02 != 0 ? phys : LEPHYs(rawValue: c.rxPHYs)
        }
        emit(id, HCICommandCompleteEvent(opcode: HCILESetDefaultPHY.opcode, returnParameters: [status.rawValue]).packet)
    }

    mutating func leSetPHY(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILESetPHY.self, id, packet) else { return }
        guard let linkID = linkID(controller: id, handle: c.handle), let link = links[linkID] else {
            return status(id, HCILESetPHY.opcode, .unknownConnectionIdentifier)
        }
        let check = Self.phyPreferenceStatus(allPHYs: c.allPHYs, tx: c.txPHYs.rawValue, rx: c.rxPHYs.rawValue, supported: phys(of: id))
        guard check == .success, c.phyOptions <= 2 else {
            return status(id, HCILESetPHY.opcode, check == .success ? .invalidCommandParameters : check)
        }
        guard !link.phyUpdatePending else { return status(id, HCILESetPHY.opcode, .commandDisallowed) }
        status(id, HCILESetPHY.opcode, .success)
        links[linkID]?.phyUpdatePending = true
        queue.schedule(.phyUpdate(link: linkID, requester: id,
                                  transmit: c.allPHYs & 0x01 != 0 ? phys(of: id) : c.txPHYs,
                                  receive: c.allPHYs & 0x02 != 0 ? phys(of: id) : c.rxPHYs),
                       at: now + 6 * link.intervalNanos)
    }

    /// The PHY Update procedure's instant: each direction moves to the fastest PHY both sides accept for it (2M, then
    /// 1M, then Coded), or stays. The requesting host always hears the outcome; the other only of a change.
    mutating func phyUpdate(link id: Int, requester: Int, transmit: LEPHYs, receive: LEPHYs) {
        guard var link = links[id], link.phyUpdatePending, let peerSide = link.peer(of: requester),
              let peer = controllers[peerSide.controller] else { return }
        link.phyUpdatePending = false
        func pick(_ accepted: LEPHYs, current: LEPHY) -> LEPHY {
            [LEPHY.le2M, .le1M, .leCoded].first { accepted.contains(LEPHYs($0)) } ?? current
        }
        let requesterIsCentral = link.central.controller == requester
        let requesterTx = pick(transmit.intersection(peer.hci.defaultRxPHYs), current: requesterIsCentral ? link.centralPHY : link.peripheralPHY)
        let requesterRx = pick(receive.intersection(peer.hci.defaultTxPHYs), current: requesterIsCentral ? link.peripheralPHY : link.centralPHY)
        let before = (link.centralPHY, link.peripheralPHY)
        if requesterIsCentral {
            (link.centralPHY, link.peripheralPHY) = (requesterTx, requesterRx)
        } else {
            (link.centralPHY, link.peripheralPHY) = (requesterRx, requesterTx)
        }
        links[id] = link
        let changed = before != (link.centralPHY, link.peripheralPHY)
        for side in [link.central, link.peripheral] where side.active && (changed || side.controller == requester) {
            let isCentral = side.controller == link.central.controller
            emit(side.controller, HCILEPHYUpdateCompleteEvent(handle: side.handle, txPHY: isCentral ? link.centralPHY : link.peripheralPHY,
                                                              rxPHY: isCentral ? link.peripheralPHY : link.centralPHY).packet)
        }
    }

    /// The PHYs controller `id`'s link layer uses (its profile's).
    func phys(of id: Int) -> LEPHYs { controllers[id]?.configuration.profile.phys ?? .le1M }

    /// LE Set Default PHY / LE Set PHY preferences: a direction the host did not leave open (All_PHYs bit clear) needs
    /// at least one PHY (Invalid HCI Command Parameters); only the `supported` PHYs may be named (Unsupported Feature
    /// or Parameter Value). Core 5.4, Vol 4, Part E, 7.8.48–7.8.49.
    static func phyPreferenceStatus(allPHYs: UInt8, tx: UInt8, rx: UInt8, supported: LEPHYs) -> HCIStatus {
        guard allPHYs & ~0x03 == 0 else { return .invalidCommandParameters }
        let txOpen = allPHYs & 0x01 != 0, rxOpen = allPHYs & 0x02 != 0
        if (!txOpen && tx == 0) || (!rxOpen && rx == 0) { return .invalidCommandParameters }
        let unsupported = ~supported.rawValue
        if (!txOpen && tx & unsupported != 0) || (!rxOpen && rx & unsupported != 0) { return .unsupportedFeatureOrParameterValue }
        return .success
    }

    mutating func leReadSuggestedDataLength(_ id: Int, _ packet: HCICommandPacket) {
        guard decode(HCILEReadSuggestedDefaultDataLength.self, id, packet) != nil, let c = controllers[id] else { return }
        complete(id, HCILEReadSuggestedDefaultDataLength.self,
                 .init(suggestedMaxTxOctets: c.hci.suggestedTxOctets, suggestedMaxTxTime: c.hci.suggestedTxTime))
    }

    mutating func leWriteSuggestedDataLength(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILEWriteSuggestedDefaultDataLength.self, id, packet) else { return }
        guard (0x001B...0x00FB).contains(c.suggestedMaxTxOctets), (0x0148...0x4290).contains(c.suggestedMaxTxTime) else {
            complete(id, HCILEWriteSuggestedDefaultDataLength.self, .init(status: .invalidCommandParameters))
            return
        }
        controllers[id]?.hci.suggestedTxOctets = c.suggestedMaxTxOctets
        controllers[id]?.hci.suggestedTxTime = c.suggestedMaxTxTime
        complete(id, HCILEWriteSuggestedDefaultDataLength.self, .init())
    }

    mutating func leReadMaximumDataLength(_ id: Int, _ packet: HCICommandPacket) {
        guard decode(HCILEReadMaximumDataLength.self, id, packet) != nil else { return }
        complete(id, HCILEReadMaximumDataLength.self, .init(supportedMaxTxOctets: 251, supportedMaxTxTime: 2120,
                                                            supportedMaxRxOctets: 251, supportedMaxRxTime: 2120))
    }
}
