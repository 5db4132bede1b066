import BLEWire

/// Legacy advertising and scanning commands. Core 5.4, Vol 4, Part E, 7.8.5–7.8.11.
extension World {
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
        controllers[id]?.scanIsExtended = false
        listenerCache = nil
        controllers[id]?.filterDuplicates = c.filterDuplicates
        complete(id, HCILESetScanEnable.self, .init())
    }
}
