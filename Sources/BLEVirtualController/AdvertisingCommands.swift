import BLEWire

/// Legacy advertising and scanning commands. Core 5.4, Vol 4, Part E, 7.8.5–7.8.11.
extension World {
    mutating func leSetAdvertisingParameters(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILESetAdvertisingParameters.self, id, packet), let state = controllers[id] else { return }
        guard !state.advertising.isEnabled else {
            complete(id, HCILESetAdvertisingParameters.self, .init(status: .commandDisallowed))
            return
        }
        guard c.isValid else {
            complete(id, HCILESetAdvertisingParameters.self, .init(status: .invalidCommandParameters))
            return
        }
        controllers[id]?.advertising.parameters = c
        complete(id, HCILESetAdvertisingParameters.self, .init())
    }

    mutating func leSetAdvertisingData(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILESetAdvertisingData.self, id, packet) else { return }
        controllers[id]?.advertising.data = c.data
        complete(id, HCILESetAdvertisingData.self, .init())
    }

    mutating func leSetScanResponseData(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILESetScanResponseData.self, id, packet) else { return }
        controllers[id]?.advertising.scanResponseData = c.data
        complete(id, HCILESetScanResponseData.self, .init())
    }

    mutating func leSetAdvertisingEnable(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILESetAdvertisingEnable.self, id, packet), let state = controllers[id] else { return }
        if c.isEnabled {
            guard state.ownAddress(state.advertising.parameters.ownAddressType) != nil else {
                // Random own address requested but none set. Core 5.4, Vol 4, Part E, 7.8.9.
                complete(id, HCILESetAdvertisingEnable.self, .init(status: .invalidCommandParameters))
                return
            }
            complete(id, HCILESetAdvertisingEnable.self, .init())
            if !state.advertising.isEnabled { startAdvertising(id) }
        } else {
            stopAdvertising(id)
            complete(id, HCILESetAdvertisingEnable.self, .init())
        }
    }

    mutating func leSetScanParameters(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILESetScanParameters.self, id, packet), let state = controllers[id] else { return }
        guard !state.scanning.isEnabled else {
            complete(id, HCILESetScanParameters.self, .init(status: .commandDisallowed))
            return
        }
        guard c.isValid else {
            complete(id, HCILESetScanParameters.self, .init(status: .invalidCommandParameters))
            return
        }
        controllers[id]?.scanning.parameters = c
        complete(id, HCILESetScanParameters.self, .init())
    }

    mutating func leSetScanEnable(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILESetScanEnable.self, id, packet), let state = controllers[id] else { return }
        if c.isEnabled, state.ownAddress(state.scanning.parameters.ownAddressType) == nil {
            complete(id, HCILESetScanEnable.self, .init(status: .invalidCommandParameters))
            return
        }
        if c.isEnabled, !state.scanning.isEnabled { controllers[id]?.scanning.reported = [] }
        controllers[id]?.scanning.isEnabled = c.isEnabled
        controllers[id]?.scanning.isExtended = false
        listenerCache = nil
        controllers[id]?.scanning.filterDuplicates = c.filterDuplicates
        complete(id, HCILESetScanEnable.self, .init())
    }
}
