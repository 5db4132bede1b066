import BLEWire

/// HCI command handling. Core 5.4, Vol 4, Part E, 7.
extension World {
    typealias Handler = @Sendable (inout World, Int, HCICommandPacket) -> Void

    /// Every command the virtual controller implements. The Supported Commands mask is built from this table.
    static let handlers: [HCIOpcode: Handler] = [
        .reset: { $0.reset($1, $2) },
        .setEventMask: { $0.setEventMask($1, $2) },
        .setEventMaskPage2: { $0.setEventMaskPage2($1, $2) },
        .writeLEHostSupport: { w, id, p in w.simple(HCIWriteLEHostSupport.self, id, p) { _, _ in .success } },
        .readLocalVersionInformation: { $0.readLocalVersion($1, $2) },
        .readLocalSupportedCommands: { $0.readSupportedCommands($1, $2) },
        .readLocalSupportedFeatures: { $0.readSupportedFeatures($1, $2) },
        .readBufferSize: { $0.readBufferSize($1, $2) },
        .readBDADDR: { $0.readBDADDR($1, $2) },
        .readRSSI: { $0.readRSSI($1, $2) },
        .disconnect: { $0.disconnect($1, $2) },
        .leSetEventMask: { $0.leSetEventMask($1, $2) },
        .leReadBufferSize: { $0.leReadBufferSize($1, $2) },
        .leReadBufferSizeV2: { $0.leReadBufferSizeV2($1, $2) },
        .leReadLocalSupportedFeatures: { $0.leReadFeatures($1, $2) },
        .leSetRandomAddress: { $0.leSetRandomAddress($1, $2) },
        .leSetAdvertisingParameters: { $0.leSetAdvertisingParameters($1, $2) },
        .leSetAdvertisingData: { $0.leSetAdvertisingData($1, $2) },
        .leSetScanResponseData: { $0.leSetScanResponseData($1, $2) },
        .leSetAdvertisingEnable: { $0.leSetAdvertisingEnable($1, $2) },
        .leSetScanParameters: { $0.leSetScanParameters($1, $2) },
        .leSetScanEnable: { $0.leSetScanEnable($1, $2) },
        .leCreateConnection: { $0.leCreateConnection($1, $2) },
        .leCreateConnectionCancel: { $0.leCreateConnectionCancel($1, $2) },
        .leConnectionUpdate: { $0.leConnectionUpdate($1, $2) },
        .leReadRemoteFeatures: { $0.leReadRemoteFeatures($1, $2) },
        .leRand: { $0.leRand($1, $2) },
        .leEnableEncryption: { $0.leEnableEncryption($1, $2) },
        .leLongTermKeyRequestReply: { $0.leLTKReply($1, $2) },
        .leLongTermKeyRequestNegativeReply: { $0.leLTKNegativeReply($1, $2) },
        .leSetDataLength: { $0.leSetDataLength($1, $2) },
        .leReadSuggestedDefaultDataLength: { $0.leReadSuggestedDataLength($1, $2) },
        .leWriteSuggestedDefaultDataLength: { $0.leWriteSuggestedDataLength($1, $2) },
        .leReadMaximumDataLength: { $0.leReadMaximumDataLength($1, $2) },
        .leSetDefaultPHY: { w, id, p in w.simple(HCILESetDefaultPHY.self, id, p) { _, c in c.allPHYs <= 3 ? .success : .invalidCommandParameters } },
    ]

    /// Commands this controller does not implement that complete with Command Status, so their Unknown HCI Command
    /// answer uses the same event (Core 5.4, Vol 4, Part E, 4.5).
    static let statusCompletingOpcodes: Set<HCIOpcode> = [
        .readRemoteVersionInformation, .leSetPHY, HCIOpcode(ogf: 0x08, ocf: 0x0025), HCIOpcode(ogf: 0x08, ocf: 0x0026),
        HCIOpcode(ogf: 0x08, ocf: 0x0043),
    ]

    /// The Supported_Commands mask: exactly the implemented commands.
    static let supportedCommands: HCISupportedCommands = {
        var mask = HCISupportedCommands()
        for opcode in handlers.keys { mask.insert(opcode) }
        return mask
    }()

    /// LMP features: LE Supported (Controller) and BR/EDR Not Supported. Core 5.4, Vol 2, Part C, 3.3.
    static let lmpFeatures: UInt64 = 1 << 37 | 1 << 38
    /// The LE features this controller implements.
    static let leFeatures: LEFeatures = [.encryption, .dataPacketLengthExtension]

    /// Handles one command packet from controller `id`'s host.
    mutating func command(_ id: Int, _ packet: HCICommandPacket) {
        if let handler = Self.handlers[packet.opcode] {
            handler(&self, id, packet)
        } else {
            fail(id, packet.opcode, Self.statusCompletingOpcodes.contains(packet.opcode) ? .commandStatus : .commandComplete,
                 .unknownCommand)
        }
    }

    /// Decodes a command, answering Invalid HCI Command Parameters when it does not decode.
    mutating func decode<C: HCICommand>(_ type: C.Type, _ id: Int, _ packet: HCICommandPacket) -> C? {
        do {
            return try C(packet: packet)
        } catch {
            fail(id, C.opcode, C.completion, .invalidCommandParameters)
            return nil
        }
    }

    /// A command whose return parameters are only a status.
    mutating func simple<C: HCICommand>(_ type: C.Type, _ id: Int, _ packet: HCICommandPacket,
                                        _ body: (inout World, C) -> HCIStatus) where C.ReturnParameters == HCIStatusReturnParameters {
        guard let command = decode(C.self, id, packet) else { return }
        let result = body(&self, command)
        complete(id, C.self, HCIStatusReturnParameters(status: result))
    }

    // MARK: Controller & baseband, informational

    mutating func reset(_ id: Int, _ packet: HCICommandPacket) {
        guard decode(HCIReset.self, id, packet) != nil, let old = controllers[id] else { return }
        // The link layer forgets everything: peers lose their links by supervision timeout.
        for (linkID, link) in links {
            for side in [link.central, link.peripheral] where side.controller == id && side.active {
                var l = links[linkID]
                if l?.central.controller == id { l?.central.active = false } else { l?.peripheral.active = false }
                links[linkID] = l
            }
        }
        links = links.filter { $0.value.central.active || $0.value.peripheral.active }
        controllers[id] = ControllerState(id: id, configuration: old.configuration, sink: old.sink)
        controllers[id]?.position = old.position
        reevaluateLinks()
        complete(id, HCIReset.self, .init())
    }

    mutating func setEventMask(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCISetEventMask.self, id, packet) else { return }
        controllers[id]?.eventMask = c.mask
        complete(id, HCISetEventMask.self, .init())
    }

    mutating func setEventMaskPage2(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCISetEventMaskPage2.self, id, packet) else { return }
        controllers[id]?.eventMaskPage2 = c.mask
        complete(id, HCISetEventMaskPage2.self, .init())
    }

    mutating func readLocalVersion(_ id: Int, _ packet: HCICommandPacket) {
        guard decode(HCIReadLocalVersionInformation.self, id, packet) != nil else { return }
        complete(id, HCIReadLocalVersionInformation.self,
                 .init(hciVersion: 0x0D, hciSubversion: 0x0001, lmpVersion: 0x0D, companyIdentifier: 0xFFFF, lmpSubversion: 0x0001))
    }

    mutating func readSupportedCommands(_ id: Int, _ packet: HCICommandPacket) {
        guard decode(HCIReadLocalSupportedCommands.self, id, packet) != nil else { return }
        complete(id, HCIReadLocalSupportedCommands.self, .init(supportedCommands: Self.supportedCommands))
    }

    mutating func readSupportedFeatures(_ id: Int, _ packet: HCICommandPacket) {
        guard decode(HCIReadLocalSupportedFeatures.self, id, packet) != nil else { return }
        complete(id, HCIReadLocalSupportedFeatures.self, .init(features: Self.lmpFeatures))
    }

    mutating func readBufferSize(_ id: Int, _ packet: HCICommandPacket) {
        guard decode(HCIReadBufferSize.self, id, packet) != nil, let c = controllers[id] else { return }
        complete(id, HCIReadBufferSize.self,
                 .init(aclDataPacketLength: UInt16(clamping: c.configuration.aclBufferSize), synchronousDataPacketLength: 0,
                       totalNumACLDataPackets: UInt16(clamping: c.configuration.aclBufferCount), totalNumSynchronousDataPackets: 0))
    }

    mutating func readBDADDR(_ id: Int, _ packet: HCICommandPacket) {
        guard decode(HCIReadBDADDR.self, id, packet) != nil, let c = controllers[id] else { return }
        complete(id, HCIReadBDADDR.self, .init(address: c.address))
    }

    mutating func readRSSI(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCIReadRSSI.self, id, packet) else { return }
        guard let linkID = linkID(controller: id, handle: c.handle), let peer = links[linkID]?.peer(of: id) else {
            complete(id, HCIReadRSSI.self, .init(status: .unknownConnectionIdentifier, handle: c.handle, rssi: 127))
            return
        }
        let rssi = meanRSSI(from: peer.controller, to: id).map { Int8(clamping: Int($0.rounded())) } ?? 127
        complete(id, HCIReadRSSI.self, .init(handle: c.handle, rssi: rssi))
    }

    // MARK: LE controller

    mutating func leSetEventMask(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILESetEventMask.self, id, packet) else { return }
        controllers[id]?.leEventMask = c.mask
        complete(id, HCILESetEventMask.self, .init())
    }

    mutating func leReadBufferSize(_ id: Int, _ packet: HCICommandPacket) {
        guard decode(HCILEReadBufferSize.self, id, packet) != nil, let c = controllers[id] else { return }
        complete(id, HCILEReadBufferSize.self, .init(leACLDataPacketLength: UInt16(clamping: c.configuration.aclBufferSize),
                                                     totalNumLEACLDataPackets: UInt8(clamping: c.configuration.aclBufferCount)))
    }

    mutating func leReadBufferSizeV2(_ id: Int, _ packet: HCICommandPacket) {
        guard decode(HCILEReadBufferSizeV2.self, id, packet) != nil, let c = controllers[id] else { return }
        complete(id, HCILEReadBufferSizeV2.self, .init(leACLDataPacketLength: UInt16(clamping: c.configuration.aclBufferSize),
                                                       totalNumLEACLDataPackets: UInt8(clamping: c.configuration.aclBufferCount)))
    }

    mutating func leReadFeatures(_ id: Int, _ packet: HCICommandPacket) {
        guard decode(HCILEReadLocalSupportedFeatures.self, id, packet) != nil else { return }
        complete(id, HCILEReadLocalSupportedFeatures.self, .init(features: Self.leFeatures))
    }

    mutating func leSetRandomAddress(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILESetRandomAddress.self, id, packet), let state = controllers[id] else { return }
        // Not while advertising or scanning with the random address. Core 5.4, Vol 4, Part E, 7.8.4.
        if (state.isAdvertising && state.advertisingParameters.ownAddressType.isRandom)
            || (state.isScanning && state.scanParameters.ownAddressType.isRandom) || state.pendingConnection != nil {
            complete(id, HCILESetRandomAddress.self, .init(status: .commandDisallowed))
            return
        }
        controllers[id]?.randomAddress = c.address
        complete(id, HCILESetRandomAddress.self, .init())
    }

    mutating func leRand(_ id: Int, _ packet: HCICommandPacket) {
        guard decode(HCILERand.self, id, packet) != nil else { return }
        complete(id, HCILERand.self, .init(randomNumber: rng.next()))
    }

    // MARK: Advertising and scanning

    mutating func leSetAdvertisingParameters(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILESetAdvertisingParameters.self, id, packet), let state = controllers[id] else { return }
        guard !state.isAdvertising else {
            complete(id, HCILESetAdvertisingParameters.self, .init(status: .commandDisallowed))
            return
        }
        guard c.isValid else {
            complete(id, HCILESetAdvertisingParameters.self, .init(status: .invalidCommandParameters))
            return
        }
        controllers[id]?.advertisingParameters = c
        complete(id, HCILESetAdvertisingParameters.self, .init())
    }

    mutating func leSetAdvertisingData(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILESetAdvertisingData.self, id, packet) else { return }
        controllers[id]?.advertisingData = c.data
        complete(id, HCILESetAdvertisingData.self, .init())
    }

    mutating func leSetScanResponseData(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILESetScanResponseData.self, id, packet) else { return }
        controllers[id]?.scanResponseData = c.data
        complete(id, HCILESetScanResponseData.self, .init())
    }

    mutating func leSetAdvertisingEnable(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILESetAdvertisingEnable.self, id, packet), let state = controllers[id] else { return }
        if c.isEnabled {
            guard state.ownAddress(state.advertisingParameters.ownAddressType) != nil else {
                // Random own address requested but none set. Core 5.4, Vol 4, Part E, 7.8.9.
                complete(id, HCILESetAdvertisingEnable.self, .init(status: .invalidCommandParameters))
                return
            }
            complete(id, HCILESetAdvertisingEnable.self, .init())
            if !state.isAdvertising { startAdvertising(id) }
        } else {
            stopAdvertising(id)
            complete(id, HCILESetAdvertisingEnable.self, .init())
        }
    }

    mutating func leSetScanParameters(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILESetScanParameters.self, id, packet), let state = controllers[id] else { return }
        guard !state.isScanning else {
            complete(id, HCILESetScanParameters.self, .init(status: .commandDisallowed))
            return
        }
        guard c.isValid else {
            complete(id, HCILESetScanParameters.self, .init(status: .invalidCommandParameters))
            return
        }
        controllers[id]?.scanParameters = c
        complete(id, HCILESetScanParameters.self, .init())
    }

    mutating func leSetScanEnable(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILESetScanEnable.self, id, packet), let state = controllers[id] else { return }
        if c.isEnabled, state.ownAddress(state.scanParameters.ownAddressType) == nil {
            complete(id, HCILESetScanEnable.self, .init(status: .invalidCommandParameters))
            return
        }
        if c.isEnabled, !state.isScanning { controllers[id]?.reported = [] }
        controllers[id]?.isScanning = c.isEnabled
        controllers[id]?.filterDuplicates = c.filterDuplicates
        complete(id, HCILESetScanEnable.self, .init())
    }

    // MARK: Connections

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
        status(id, HCILECreateConnection.opcode, .success)
    }

    mutating func leCreateConnectionCancel(_ id: Int, _ packet: HCICommandPacket) {
        guard decode(HCILECreateConnectionCancel.self, id, packet) != nil, let state = controllers[id] else { return }
        guard let pending = state.pendingConnection else {
            complete(id, HCILECreateConnectionCancel.self, .init(status: .commandDisallowed))
            return
        }
        controllers[id]?.pendingConnection = nil
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
        status(id, HCILEConnectionUpdate.opcode, .success)
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

    // MARK: Encryption (Core 5.4, Vol 6, Part B, 5.1.3)

    mutating func leEnableEncryption(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILEEnableEncryption.self, id, packet) else { return }
        guard let linkID = linkID(controller: id, handle: c.handle), var link = links[linkID] else {
            return status(id, HCILEEnableEncryption.opcode, .unknownConnectionIdentifier)
        }
        guard link.central.controller == id, link.pendingEncryption == nil, link.peripheral.active else {
            return status(id, HCILEEnableEncryption.opcode, .commandDisallowed)
        }
        link.pendingEncryption = (c.longTermKey, c.randomNumber, c.encryptedDiversifier)
        links[linkID] = link
        status(id, HCILEEnableEncryption.opcode, .success)
        let requestBit = HCILESetEventMask.bit(for: .longTermKeyRequest) ?? 0
        if let p = controllers[link.peripheral.controller], p.eventMask & (1 << 61) != 0, p.leEventMask & requestBit != 0 {
            emit(link.peripheral.controller, HCILELongTermKeyRequestEvent(handle: link.peripheral.handle, randomNumber: c.randomNumber,
                                                                          encryptedDiversifier: c.encryptedDiversifier).packet)
        } else {
            // A host that masks the request cannot answer it: the controller rejects as if negatively replied.
            finishEncryption(linkID, peripheralKey: nil)
        }
    }

    mutating func leLTKReply(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILELongTermKeyRequestReply.self, id, packet) else { return }
        guard let linkID = linkID(controller: id, handle: c.handle), let link = links[linkID],
              link.peripheral.controller == id, link.pendingEncryption != nil else {
            complete(id, HCILELongTermKeyRequestReply.self, .init(status: .commandDisallowed, handle: c.handle))
            return
        }
        complete(id, HCILELongTermKeyRequestReply.self, .init(handle: c.handle))
        finishEncryption(linkID, peripheralKey: c.longTermKey)
    }

    mutating func leLTKNegativeReply(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILELongTermKeyRequestNegativeReply.self, id, packet) else { return }
        guard let linkID = linkID(controller: id, handle: c.handle), let link = links[linkID],
              link.peripheral.controller == id, link.pendingEncryption != nil else {
            complete(id, HCILELongTermKeyRequestNegativeReply.self, .init(status: .commandDisallowed, handle: c.handle))
            return
        }
        complete(id, HCILELongTermKeyRequestNegativeReply.self, .init(handle: c.handle))
        finishEncryption(linkID, peripheralKey: nil)
    }

    /// Ends the encryption start procedure. Matching keys encrypt the link (or refresh its key); different keys
    /// make the MIC check fail and the link drop with 0x3D; no key rejects the procedure with 0x06 (LL_REJECT_IND)
    /// and the link stays up unencrypted.
    mutating func finishEncryption(_ linkID: Int, peripheralKey: [UInt8]?) {
        guard var link = links[linkID], let pending = link.pendingEncryption else { return }
        link.pendingEncryption = nil
        links[linkID] = link
        guard let key = peripheralKey else {
            emit(link.central.controller, HCIEncryptionChangeEvent(status: .pinOrKeyMissing, handle: link.central.handle,
                                                                   encryptionEnabled: 0).packet)
            return
        }
        guard key == pending.ltk else {
            for side in [link.central, link.peripheral] where side.active {
                closeSide(link: linkID, controller: side.controller, reason: .connectionTerminatedMICFailure)
            }
            return
        }
        let refresh = link.encrypted
        link.encrypted = true
        link.ltk = key
        links[linkID] = link
        for side in [link.central, link.peripheral] where side.active {
            if refresh {
                emit(side.controller, HCIEncryptionKeyRefreshCompleteEvent(handle: side.handle).packet)
            } else {
                emit(side.controller, HCIEncryptionChangeEvent(handle: side.handle, encryptionEnabled: 1).packet)
            }
        }
    }
}
