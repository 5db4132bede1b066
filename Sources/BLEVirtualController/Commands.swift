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
        .leReadSupportedStates: { $0.leReadSupportedStates($1, $2) },
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
        .leSetDefaultPHY: { $0.leSetDefaultPHY($1, $2) },
        .leReadPHY: { $0.leReadPHY($1, $2) },
        .leSetPHY: { $0.leSetPHY($1, $2) },
        .leSetAdvertisingSetRandomAddress: { $0.leSetAdvertisingSetRandomAddress($1, $2) },
        .leSetExtendedAdvertisingParameters: { $0.leSetExtendedAdvertisingParameters($1, $2) },
        .leSetExtendedAdvertisingData: { $0.leSetExtendedAdvertisingData($1, $2) },
        .leSetExtendedScanResponseData: { $0.leSetExtendedScanResponseData($1, $2) },
        .leSetExtendedAdvertisingEnable: { $0.leSetExtendedAdvertisingEnable($1, $2) },
        .leReadMaximumAdvertisingDataLength: { $0.leReadMaximumAdvertisingDataLength($1, $2) },
        .leReadNumberOfSupportedAdvertisingSets: { $0.leReadNumberOfSupportedAdvertisingSets($1, $2) },
        .leRemoveAdvertisingSet: { $0.leRemoveAdvertisingSet($1, $2) },
        .leClearAdvertisingSets: { $0.leClearAdvertisingSets($1, $2) },
        .leSetExtendedScanParameters: { $0.leSetExtendedScanParameters($1, $2) },
        .leSetExtendedScanEnable: { $0.leSetExtendedScanEnable($1, $2) },
        .leExtendedCreateConnection: { $0.leExtendedCreateConnection($1, $2) },
    ]

    /// The Supported_Commands mask of a controller with `profile`: exactly the implemented commands it keeps.
    static func supportedCommands(_ profile: ControllerProfile) -> HCISupportedCommands {
        var mask = HCISupportedCommands()
        for opcode in handlers.keys where !profile.omittedCommands.contains(opcode) { mask.insert(opcode) }
        return mask
    }

    /// LMP features: LE Supported (Controller) and BR/EDR Not Supported. Core 5.4, Vol 2, Part C, 3.3.
    static let lmpFeatures: UInt64 = 1 << 37 | 1 << 38
    /// The LE features of controller `id`'s link layer (its profile's).
    func leFeatures(of id: Int) -> LEFeatures { controllers[id]?.configuration.profile.leFeatures ?? [] }

    /// Handles one command packet from controller `id`'s host.
    mutating func command(_ id: Int, _ packet: HCICommandPacket) {
        let omitted = controllers[id]?.configuration.profile.omittedCommands.contains(packet.opcode) ?? false
        if !omitted, let handler = Self.handlers[packet.opcode] {
            // Legacy and extended advertising commands do not mix until reset. Core 5.4, Vol 4, Part E, 3.1.1.
            guard admitsAdvertisingCommand(id, packet.opcode) else {
                let completion = CommandCompletions.completion(ofUnknown: packet.opcode)
                return fail(id, packet.opcode, completion, .commandDisallowed)
            }
            handler(&self, id, packet)
        } else {
            fail(id, packet.opcode, CommandCompletions.completion(ofUnknown: packet.opcode), .unknownCommand)
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
        forgetLinks(of: id)
        var fresh = ControllerState(id: id, configuration: old.configuration, sink: old.sink)
        fresh.position = old.position
        fresh.txPower = old.txPower
        controllers[id] = fresh
        listenerCache = nil
        complete(id, HCIReset.self, .init())
    }

    mutating func setEventMask(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCISetEventMask.self, id, packet) else { return }
        controllers[id]?.hci.eventMask = c.mask
        complete(id, HCISetEventMask.self, .init())
    }

    mutating func setEventMaskPage2(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCISetEventMaskPage2.self, id, packet) else { return }
        controllers[id]?.hci.eventMaskPage2 = c.mask
        complete(id, HCISetEventMaskPage2.self, .init())
    }

    mutating func readLocalVersion(_ id: Int, _ packet: HCICommandPacket) {
        guard decode(HCIReadLocalVersionInformation.self, id, packet) != nil, let profile = controllers[id]?.configuration.profile else { return }
        complete(id, HCIReadLocalVersionInformation.self,
                 .init(hciVersion: profile.version, hciSubversion: 0x0001, lmpVersion: profile.version,
                       companyIdentifier: profile.companyIdentifier, lmpSubversion: 0x0001))
    }

    mutating func readSupportedCommands(_ id: Int, _ packet: HCICommandPacket) {
        guard decode(HCIReadLocalSupportedCommands.self, id, packet) != nil, let profile = controllers[id]?.configuration.profile else { return }
        complete(id, HCIReadLocalSupportedCommands.self, .init(supportedCommands: Self.supportedCommands(profile)))
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
        controllers[id]?.hci.leEventMask = c.mask
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
        complete(id, HCILEReadLocalSupportedFeatures.self, .init(features: leFeatures(of: id)))
    }

    /// Every state and combination the specification defines (bits 0–41): the simulated link layer keeps any number
    /// of advertising, scanning, initiating and connected roles at once. Mandatory for an LE controller (Linux's
    /// kernel asks for it while it sets an adapter up, and leaves the adapter unusable when it fails).
    mutating func leReadSupportedStates(_ id: Int, _ packet: HCICommandPacket) {
        guard decode(HCILEReadSupportedStates.self, id, packet) != nil else { return }
        complete(id, HCILEReadSupportedStates.self, .init(states: 0x0000_03FF_FFFF_FFFF))
    }

    mutating func leSetRandomAddress(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILESetRandomAddress.self, id, packet), let state = controllers[id] else { return }
        // Not while legacy advertising, scanning or initiating is enabled, whatever own address type they use.
        // Core 5.4, Vol 4, Part E, 7.8.4.
        if state.advertising.isEnabled || state.scanning.isEnabled || state.initiating.connection != nil {
            complete(id, HCILESetRandomAddress.self, .init(status: .commandDisallowed))
            return
        }
        controllers[id]?.hci.randomAddress = c.address
        complete(id, HCILESetRandomAddress.self, .init())
    }

    mutating func leRand(_ id: Int, _ packet: HCICommandPacket) {
        guard decode(HCILERand.self, id, packet) != nil else { return }
        complete(id, HCILERand.self, .init(randomNumber: rng.next()))
    }
}
