import BLEWire

/// Connection commands: create, cancel, disconnect, update, remote features, data length. Core 5.4, Vol 4, Part E,
/// 7.1.6 and 7.8.12–7.8.33.
extension World {
    mutating func leCreateConnection(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILECreateConnection.self, id, packet), let state = controllers[id] else { return }
        guard state.pendingConnection == nil else { return status(id, HCILECreateConnection.opcode, .commandDisallowed) }
        guard c.isValid, c.initiatorFilterPolicy == 0 else {
            return status(id, HCILECreateConnection.opcode,
                          c.isValid ? .unsupportedFeatureOrParameterValue : .invalidCommandParameters)
        }
        guard state.ownAddress(c.ownAddressType) != nil else {
            return status(id, HCILECreateConnection.opcode, .invalidCommandParameters)
        }
        controllers[id]?.pendingConnection = c
        listenerCache = nil
        status(id, HCILECreateConnection.opcode, .success)
    }

    mutating func leCreateConnectionCancel(_ id: Int, _ packet: HCICommandPacket) {
        guard decode(HCILECreateConnectionCancel.self, id, packet) != nil, let state = controllers[id] else { return }
        guard let pending = state.pendingConnection else {
            complete(id, HCILECreateConnectionCancel.self, .init(status: .commandDisallowed))
            return
        }
        controllers[id]?.pendingConnection = nil
        listenerCache = nil
        complete(id, HCILECreateConnectionCancel.self, .init())
        // Core 5.4, Vol 4, Part E, 7.8.13: LE Connection Complete with Unknown Connection Identifier.
        emit(id, HCILEConnectionCompleteEvent(status: .unknownConnectionIdentifier, handle: 0, role: .central,
                                              peerAddressType: pending.peerAddressType, peerAddress: pending.peerAddress,
                                              connectionInterval: 0, peripheralLatency: 0, supervisionTimeout: 0).packet)
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
        guard linkID(controller: id, handle: c.handle) != nil else {
            return status(id, HCILEReadRemoteFeatures.opcode, .unknownConnectionIdentifier)
        }
        status(id, HCILEReadRemoteFeatures.opcode, .success)
        emit(id, HCILEReadRemoteFeaturesCompleteEvent(handle: c.handle, features: Self.leFeatures).packet)
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
        let isCentral = link.central.controller == id
        let previous = isCentral ? link.centralTxOctets : link.peripheralTxOctets
        guard previous != c.txOctets else { return }
        if isCentral { link.centralTxOctets = c.txOctets } else { link.peripheralTxOctets = c.txOctets }
        links[linkID] = link
        let time = { (octets: UInt16) in UInt16((Int(octets) + 14) * 8) }
        for side in [link.central, link.peripheral] where side.active {
            let tx = side.controller == link.central.controller ? link.centralTxOctets : link.peripheralTxOctets
            let rx = side.controller == link.central.controller ? link.peripheralTxOctets : link.centralTxOctets
            emit(side.controller, HCILEDataLengthChangeEvent(handle: side.handle, maxTxOctets: tx, maxTxTime: time(tx),
                                                             maxRxOctets: rx, maxRxTime: time(rx)).packet)
        }
    }

    mutating func leReadSuggestedDataLength(_ id: Int, _ packet: HCICommandPacket) {
        guard decode(HCILEReadSuggestedDefaultDataLength.self, id, packet) != nil, let c = controllers[id] else { return }
        complete(id, HCILEReadSuggestedDefaultDataLength.self,
                 .init(suggestedMaxTxOctets: c.suggestedTxOctets, suggestedMaxTxTime: c.suggestedTxTime))
    }

    mutating func leWriteSuggestedDataLength(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILEWriteSuggestedDefaultDataLength.self, id, packet) else { return }
        guard (0x001B...0x00FB).contains(c.suggestedMaxTxOctets), (0x0148...0x4290).contains(c.suggestedMaxTxTime) else {
            complete(id, HCILEWriteSuggestedDefaultDataLength.self, .init(status: .invalidCommandParameters))
            return
        }
        controllers[id]?.suggestedTxOctets = c.suggestedMaxTxOctets
        controllers[id]?.suggestedTxTime = c.suggestedMaxTxTime
        complete(id, HCILEWriteSuggestedDefaultDataLength.self, .init())
    }

    mutating func leReadMaximumDataLength(_ id: Int, _ packet: HCICommandPacket) {
        guard decode(HCILEReadMaximumDataLength.self, id, packet) != nil else { return }
        complete(id, HCILEReadMaximumDataLength.self, .init(supportedMaxTxOctets: 251, supportedMaxTxTime: 2120,
                                                            supportedMaxRxOctets: 251, supportedMaxRxTime: 2120))
    }
}
