import BLEWire

/// Which kind of advertising commands a host has used since the controller's last reset. Core 5.4, Vol 4, Part E,
/// 3.1.1: once a host used one kind, the controller answers the other with Command Disallowed until reset.
enum AdvertisingCommandKind: Sendable, Hashable {
    case undecided, legacy, extended
}

/// One advertising set (LE Set Extended Advertising Parameters and the commands after it).
struct AdvertisingSet: Sendable {
    var parameters: HCILESetExtendedAdvertisingParameters
    var randomAddress: BluetoothAddress?
    /// The advertising data, complete.
    var data: [UInt8] = []
    /// The scan response data, complete.
    var scanResponse: [UInt8] = []
    /// Fragments received so far (Operation 1, then 0...), until Operation 2 completes them.
    var pendingData: [UInt8]?
    var pendingScanResponse: [UInt8]?
    var isEnabled = false
    var generation: UInt64 = 0
    /// When it was enabled, its Duration (0: none) and its maximum number of events (0: none), and the events so far.
    var started: UInt64 = 0
    var durationNanos: UInt64 = 0
    var maxEvents: Int = 0
    var events: Int = 0

    var isLegacy: Bool { parameters.properties.contains(.legacy) }
    var isConnectable: Bool { parameters.properties.contains(.connectable) }
    var isScannable: Bool { parameters.properties.contains(.scannable) }
    var isDirected: Bool { parameters.properties.contains(.directed) }
}

/// Extended advertising, extended scanning and extended connection creation. Core 5.4, Vol 4, Part E, 7.8.52–7.8.66.
extension World {
    /// How many advertising sets the controller holds (LE Read Number of Supported Advertising Sets).
    static let supportedAdvertisingSets: UInt8 = 8
    /// The most advertising (or scan response) data one set holds (LE Read Maximum Advertising Data Length): 1650,
    /// the largest the specification allows.
    static let maximumAdvertisingDataLength = 1650

    /// The most advertising data a connectable extended set carries: what fits its one AUX_ADV_IND (a 255-octet
    /// payload less the extended header: header length and AdvMode, flags, AdvA, ADI, and TxPower or TargetA when
    /// present). Core 5.4, Vol 6, Part B, 2.3.4; Vol 4, Part E, 7.8.56 (connectable extended advertising whose data does
    /// not fit cannot be enabled).
    static func connectableDataLimit(_ p: HCILESetExtendedAdvertisingParameters) -> Int {
        var header = 1 + 1 + 6 + 2
        if p.properties.contains(.includeTxPower) { header += 1 }
        if p.properties.contains(.directed) { header += 6 }
        return 255 - header
    }

    /// The legacy advertising commands of Core 5.4, Vol 4, Part E, 3.1.1 that the controller implements.
    static let legacyAdvertisingCommands: Set<HCIOpcode> = [
        .leSetAdvertisingParameters, .leReadAdvertisingPhysicalChannelTxPower, .leSetAdvertisingData,
        .leSetScanResponseData, .leSetAdvertisingEnable, .leSetScanParameters, .leSetScanEnable, .leCreateConnection,
    ]
    /// The extended advertising commands of Core 5.4, Vol 4, Part E, 3.1.1 that the controller implements.
    static let extendedAdvertisingCommands: Set<HCIOpcode> = [
        .leSetAdvertisingSetRandomAddress, .leSetExtendedAdvertisingParameters, .leSetExtendedAdvertisingData,
        .leSetExtendedScanResponseData, .leSetExtendedAdvertisingEnable, .leReadMaximumAdvertisingDataLength,
        .leReadNumberOfSupportedAdvertisingSets, .leRemoveAdvertisingSet, .leClearAdvertisingSets,
        .leSetExtendedScanParameters, .leSetExtendedScanEnable, .leExtendedCreateConnection,
    ]

    /// Whether controller `id` may take `opcode` given the advertising commands its host used before (and records the
    /// kind this one is). Core 5.4, Vol 4, Part E, 3.1.1.
    mutating func admitsAdvertisingCommand(_ id: Int, _ opcode: HCIOpcode) -> Bool {
        let kind: AdvertisingCommandKind
        if Self.legacyAdvertisingCommands.contains(opcode) { kind = .legacy }
        else if Self.extendedAdvertisingCommands.contains(opcode) { kind = .extended }
        else { return true }
        guard let current = controllers[id]?.advertising.commandKind else { return true }
        if current == .undecided {
            controllers[id]?.advertising.commandKind = kind
            return true
        }
        return current == kind
    }

    // MARK: Advertising sets

    mutating func leSetAdvertisingSetRandomAddress(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILESetAdvertisingSetRandomAddress.self, id, packet), let state = controllers[id] else { return }
        guard let set = state.advertising.sets[c.handle] else {
            return complete(id, HCILESetAdvertisingSetRandomAddress.self, .init(status: .unknownAdvertisingIdentifier))
        }
        // Not while a connectable set is enabled (its address is what centrals connect to). Core 5.4, Vol 4, Part E, 7.8.52.
        guard !(set.isEnabled && set.isConnectable) else {
            return complete(id, HCILESetAdvertisingSetRandomAddress.self, .init(status: .commandDisallowed))
        }
        controllers[id]?.advertising.sets[c.handle]?.randomAddress = c.address
        complete(id, HCILESetAdvertisingSetRandomAddress.self, .init())
    }

    mutating func leSetExtendedAdvertisingParameters(_ id: Int, _ packet: HCICommandPacket) {
        typealias C = HCILESetExtendedAdvertisingParameters
        guard let c = decode(C.self, id, packet), let state = controllers[id] else { return }
        let existing = state.advertising.sets[c.handle]
        if existing?.isEnabled == true { return complete(id, C.self, .init(status: .commandDisallowed)) }
        guard c.isValid else { return complete(id, C.self, .init(status: .invalidCommandParameters)) }
        // A PHY the link layer lacks. Core 5.4, Vol 4, Part E, 7.8.53.
        let phys = phys(of: id)
        guard phys.contains(LEPHYs(c.primaryPHY)), phys.contains(LEPHYs(c.secondaryPHY)) else {
            return complete(id, C.self, .init(status: .unsupportedFeatureOrParameterValue))
        }
        if existing == nil, state.advertising.sets.count >= Int(Self.supportedAdvertisingSets) {
            return complete(id, C.self, .init(status: .memoryCapacityExceeded))
        }
        // Legacy PDUs carry at most 31 octets: data already set longer refuses the change.
        if c.properties.contains(.legacy), let existing, existing.data.count > 31 || existing.scanResponse.count > 31 {
            return complete(id, C.self, .init(status: .invalidCommandParameters))
        }
        var set = existing ?? AdvertisingSet(parameters: c)
        set.parameters = c
        controllers[id]?.advertising.sets[c.handle] = set
        let power = c.txPower == 127 ? state.txPower : min(c.txPower, state.txPower)
        complete(id, C.self, .init(selectedTxPower: power))
    }

    /// The outcome of one data fragment for a set: the new complete data (or `nil` while fragments are pending) and
    /// the status. Core 5.4, Vol 4, Part E, 7.8.54–7.8.55.
    private func applyFragment(_ f: HCILEExtendedDataFragment, to set: AdvertisingSet, scanResponse: Bool)
        -> (complete: [UInt8]?, pending: [UInt8]?, status: HCIStatus) {
        let pending = scanResponse ? set.pendingScanResponse : set.pendingData
        let current = scanResponse ? set.scanResponse : set.data
        if set.isLegacy {
            // Legacy PDUs: complete data of at most 31 octets. Core 5.4, Vol 4, Part E, 7.8.54.
            guard f.operation == .complete, f.data.count <= 31 else { return (nil, pending, .invalidCommandParameters) }
            return (f.data, nil, .success)
        }
        if !scanResponse, set.isScannable, !f.data.isEmpty {
            // Scannable extended advertising carries no advertising data.
            return (nil, pending, .invalidCommandParameters)
        }
        if scanResponse, !set.isScannable, !f.data.isEmpty {
            return (nil, pending, .invalidCommandParameters)
        }
        if set.isEnabled, f.operation != .complete, f.operation != .unchanged {
            // While enabled, only complete data (or a new DID for unchanged data).
            return (nil, pending, .commandDisallowed)
        }
        switch f.operation {
        case .complete:
            return (f.data, nil, .success)
        case .first:
            return (nil, f.data, .success)
        case .intermediate, .last:
            guard let pending else { return (nil, nil, .invalidCommandParameters) }
            let joined = pending + f.data
            guard joined.count <= Self.maximumAdvertisingDataLength else { return (nil, nil, .memoryCapacityExceeded) }
            return f.operation == .last ? (joined, nil, .success) : (nil, joined, .success)
        case .unchanged:
            guard !scanResponse, set.isEnabled, !current.isEmpty, f.data.isEmpty else { return (nil, pending, .invalidCommandParameters) }
            return (current, nil, .success)
        default:
            return (nil, pending, .invalidCommandParameters)
        }
    }

    /// New complete data for an enabled connectable extended set must still fit its AUX_ADV_IND: Packet Too Long.
    /// Core 5.4, Vol 4, Part E, 7.8.54.
    private func tooLong(_ data: [UInt8], for set: AdvertisingSet, scanResponse: Bool) -> Bool {
        !scanResponse && set.isEnabled && !set.isLegacy && set.isConnectable && data.count > Self.connectableDataLimit(set.parameters)
    }

    mutating func leSetExtendedAdvertisingData(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILESetExtendedAdvertisingData.self, id, packet) else { return }
        setData(id, c.fragment, scanResponse: false, HCILESetExtendedAdvertisingData.self)
    }

    mutating func leSetExtendedScanResponseData(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILESetExtendedScanResponseData.self, id, packet) else { return }
        setData(id, c.fragment, scanResponse: true, HCILESetExtendedScanResponseData.self)
    }

    private mutating func setData<C: HCICommand>(_ id: Int, _ f: HCILEExtendedDataFragment, scanResponse: Bool, _ type: C.Type)
        where C.ReturnParameters == HCIStatusReturnParameters {
        guard let set = controllers[id]?.advertising.sets[f.handle] else {
            return complete(id, C.self, .init(status: .unknownAdvertisingIdentifier))
        }
        var (done, pending, status) = applyFragment(f, to: set, scanResponse: scanResponse)
        if let data = done, tooLong(data, for: set, scanResponse: scanResponse) { (done, pending, status) = (nil, nil, .packetTooLong) }
        guard status == .success else {
            // A refused fragment abandons the data being assembled.
            if scanResponse { controllers[id]?.advertising.sets[f.handle]?.pendingScanResponse = nil }
            else { controllers[id]?.advertising.sets[f.handle]?.pendingData = nil }
            return complete(id, C.self, .init(status: status))
        }
        if scanResponse {
            controllers[id]?.advertising.sets[f.handle]?.pendingScanResponse = pending
            if let done { controllers[id]?.advertising.sets[f.handle]?.scanResponse = done }
        } else {
            controllers[id]?.advertising.sets[f.handle]?.pendingData = pending
            if let done { controllers[id]?.advertising.sets[f.handle]?.data = done }
        }
        complete(id, C.self, .init())
    }

    mutating func leSetExtendedAdvertisingEnable(_ id: Int, _ packet: HCICommandPacket) {
        typealias C = HCILESetExtendedAdvertisingEnable
        guard let c = decode(C.self, id, packet), let state = controllers[id] else { return }
        guard c.isEnabled else {
            // Disable the sets named, or every set when none is.
            let handles = c.sets.isEmpty ? Array(state.advertising.sets.keys) : c.sets.map(\.handle)
            guard handles.allSatisfy({ state.advertising.sets[$0] != nil }) else {
                return complete(id, C.self, .init(status: .unknownAdvertisingIdentifier))
            }
            for handle in handles { stopAdvertisingSet(id, handle) }
            return complete(id, C.self, .init())
        }
        guard !c.sets.isEmpty, Set(c.sets.map(\.handle)).count == c.sets.count else {
            return complete(id, C.self, .init(status: .invalidCommandParameters))
        }
        for entry in c.sets {
            guard let set = state.advertising.sets[entry.handle] else {
                return complete(id, C.self, .init(status: .unknownAdvertisingIdentifier))
            }
            // A random own address needs the set's random address; scannable extended advertising needs scan
            // response data; data still being assembled cannot go out. Core 5.4, Vol 4, Part E, 7.8.56.
            if state.ownAddress(of: set) == nil { return complete(id, C.self, .init(status: .invalidCommandParameters)) }
            if !set.isLegacy, set.isScannable, set.scanResponse.isEmpty {
                return complete(id, C.self, .init(status: .commandDisallowed))
            }
            if set.pendingData != nil || set.pendingScanResponse != nil {
                return complete(id, C.self, .init(status: .commandDisallowed))
            }
            if !set.isLegacy, set.isConnectable, set.data.count > Self.connectableDataLimit(set.parameters) {
                return complete(id, C.self, .init(status: .invalidCommandParameters))
            }
        }
        complete(id, C.self, .init())
        for entry in c.sets {
            guard var set = controllers[id]?.advertising.sets[entry.handle] else { continue }
            set.durationNanos = UInt64(entry.duration) * 10_000_000
            set.maxEvents = Int(entry.maxEvents)
            if !set.isEnabled {
                // Enabling an enabled set only takes its new duration and maximum. Core 5.4, Vol 4, Part E, 7.8.56.
                set.isEnabled = true
                set.generation = token()
                set.started = now
                set.events = 0
                queue.schedule(.advertiseSet(controller: id, handle: entry.handle, generation: set.generation), at: now)
            }
            controllers[id]?.advertising.sets[entry.handle] = set
        }
    }

    mutating func stopAdvertisingSet(_ id: Int, _ handle: UInt8) {
        guard controllers[id]?.advertising.sets[handle] != nil else { return }
        let stale = token()
        controllers[id]?.advertising.sets[handle]?.isEnabled = false
        controllers[id]?.advertising.sets[handle]?.generation = stale
    }

    mutating func leReadMaximumAdvertisingDataLength(_ id: Int, _ packet: HCICommandPacket) {
        guard decode(HCILEReadMaximumAdvertisingDataLength.self, id, packet) != nil else { return }
        complete(id, HCILEReadMaximumAdvertisingDataLength.self, .init(maximumLength: UInt16(Self.maximumAdvertisingDataLength)))
    }

    mutating func leReadNumberOfSupportedAdvertisingSets(_ id: Int, _ packet: HCICommandPacket) {
        guard decode(HCILEReadNumberOfSupportedAdvertisingSets.self, id, packet) != nil else { return }
        complete(id, HCILEReadNumberOfSupportedAdvertisingSets.self, .init(count: Self.supportedAdvertisingSets))
    }

    mutating func leRemoveAdvertisingSet(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILERemoveAdvertisingSet.self, id, packet), let state = controllers[id] else { return }
        guard let set = state.advertising.sets[c.handle] else {
            return complete(id, HCILERemoveAdvertisingSet.self, .init(status: .unknownAdvertisingIdentifier))
        }
        guard !set.isEnabled else { return complete(id, HCILERemoveAdvertisingSet.self, .init(status: .commandDisallowed)) }
        controllers[id]?.advertising.sets[c.handle] = nil
        complete(id, HCILERemoveAdvertisingSet.self, .init())
    }

    mutating func leClearAdvertisingSets(_ id: Int, _ packet: HCICommandPacket) {
        guard decode(HCILEClearAdvertisingSets.self, id, packet) != nil, let state = controllers[id] else { return }
        guard !state.advertising.sets.values.contains(where: \.isEnabled) else {
            return complete(id, HCILEClearAdvertisingSets.self, .init(status: .commandDisallowed))
        }
        controllers[id]?.advertising.sets = [:]
        complete(id, HCILEClearAdvertisingSets.self, .init())
    }

    // MARK: Extended scanning

    mutating func leSetExtendedScanParameters(_ id: Int, _ packet: HCICommandPacket) {
        typealias C = HCILESetExtendedScanParameters
        guard let c = decode(C.self, id, packet), let state = controllers[id] else { return }
        guard !state.scanning.isEnabled else { return complete(id, C.self, .init(status: .commandDisallowed)) }
        guard c.isValid else { return complete(id, C.self, .init(status: .invalidCommandParameters)) }
        guard phys(of: id).isSuperset(of: c.phys) else {
            return complete(id, C.self, .init(status: .unsupportedFeatureOrParameterValue))
        }
        controllers[id]?.scanning.extended = c
        complete(id, C.self, .init())
    }

    mutating func leSetExtendedScanEnable(_ id: Int, _ packet: HCICommandPacket) {
        typealias C = HCILESetExtendedScanEnable
        guard let c = decode(C.self, id, packet), let state = controllers[id] else { return }
        guard c.isEnabled else {
            let stale = token()
            controllers[id]?.scanning.isEnabled = false
            controllers[id]?.scanning.generation = stale
            listenerCache = nil
            return complete(id, C.self, .init())
        }
        guard c.filterDuplicates <= 2 else { return complete(id, C.self, .init(status: .invalidCommandParameters)) }
        // Periodic scanning (a non-zero Period) is not modelled.
        guard c.period == 0 else { return complete(id, C.self, .init(status: .unsupportedFeatureOrParameterValue)) }
        let parameters = state.scanning.extended ?? HCILESetExtendedScanParameters()
        guard state.ownAddress(parameters.ownAddressType) != nil else {
            return complete(id, C.self, .init(status: .invalidCommandParameters))
        }
        if !state.scanning.isEnabled { controllers[id]?.scanning.reported = [] }
        controllers[id]?.scanning.extended = parameters
        controllers[id]?.scanning.isEnabled = true
        controllers[id]?.scanning.isExtended = true
        controllers[id]?.scanning.filterDuplicates = c.filterDuplicates != 0
        let generation = token()
        controllers[id]?.scanning.generation = generation
        listenerCache = nil
        complete(id, C.self, .init())
        if c.duration > 0 {
            queue.schedule(.scanDuration(controller: id, generation: generation), at: now + UInt64(c.duration) * 10_000_000)
        }
    }

    /// The scan's Duration ran out: it stops and its host hears LE Scan Timeout. Core 5.4, Vol 4, Part E, 7.8.65.
    mutating func scanDurationEnded(controller id: Int, generation: UInt64) {
        guard let state = controllers[id], state.scanning.isEnabled, state.scanning.generation == generation else { return }
        controllers[id]?.scanning.isEnabled = false
        listenerCache = nil
        emit(id, HCILEScanTimeoutEvent().packet)
    }

    // MARK: Extended connection creation

    mutating func leExtendedCreateConnection(_ id: Int, _ packet: HCICommandPacket) {
        typealias C = HCILEExtendedCreateConnection
        guard let c = decode(C.self, id, packet), let state = controllers[id] else { return }
        guard state.initiating.connection == nil else { return status(id, C.opcode, .commandDisallowed) }
        guard c.isValid else { return status(id, C.opcode, .invalidCommandParameters) }
        guard c.initiatorFilterPolicy == 0, phys(of: id).isSuperset(of: c.phys) else {
            return status(id, C.opcode, .unsupportedFeatureOrParameterValue)
        }
        guard state.ownAddress(c.ownAddressType) != nil else { return status(id, C.opcode, .invalidCommandParameters) }
        guard let request = Self.legacyRequest(c, on: c.le1M != nil ? .le1M : .leCoded) else {
            return status(id, C.opcode, .invalidCommandParameters)
        }
        controllers[id]?.initiating.connection = request
        controllers[id]?.initiating.extendedConnection = c
        listenerCache = nil
        status(id, C.opcode, .success)
    }

    /// The connection parameters of `c` for a connection made on `phy`, as an LE Create Connection carries them (LE 2M's
    /// when the connection is on LE 2M and they were given).
    static func legacyRequest(_ c: HCILEExtendedCreateConnection, on phy: LEPHY) -> HCILECreateConnection? {
        let chosen: HCILEExtendedCreateConnection.PHYParameters?
        switch phy {
        case .le2M: chosen = c.le2M ?? c.le1M ?? c.leCoded
        case .leCoded: chosen = c.leCoded ?? c.le1M
        default: chosen = c.le1M ?? c.leCoded
        }
        guard let p = chosen else { return nil }
        return HCILECreateConnection(scanInterval: p.scanInterval, scanWindow: p.scanWindow, initiatorFilterPolicy: c.initiatorFilterPolicy,
                                     peerAddressType: c.peerAddressType, peerAddress: c.peerAddress, ownAddressType: c.ownAddressType,
                                     connectionIntervalMin: p.connectionIntervalMin, connectionIntervalMax: p.connectionIntervalMax,
                                     maxLatency: p.maxLatency, supervisionTimeout: p.supervisionTimeout,
                                     minCELength: p.minCELength, maxCELength: p.maxCELength)
    }

    // MARK: The air

    /// One advertising event of set `handle` of controller `id`: each scanner in range listening on the set's primary
    /// PHY gets its reports (legacy PDUs as legacy; extended ones only by extended scanners, the data split over
    /// several reports when it exceeds one's room); an initiator listening on that PHY for this advertiser connects
    /// to a connectable set, which then ends with LE Advertising Set Terminated.
    mutating func advertisingSetEvent(controller id: Int, handle: UInt8, generation: UInt64) {
        guard let advertiser = controllers[id], !advertiser.removed, var set = advertiser.advertising.sets[handle],
              set.isEnabled, set.generation == generation, let (address, addressType) = advertiser.ownAddress(of: set) else { return }
        let p = set.parameters
        if set.durationNanos > 0, now - set.started >= set.durationNanos {
            return terminateSet(id, handle, status: .advertisingTimeout, connection: 0, events: set.events)
        }
        if set.maxEvents > 0, set.events >= set.maxEvents {
            return terminateSet(id, handle, status: .limitReached, connection: 0, events: set.events)
        }
        set.events += 1
        controllers[id]?.advertising.sets[handle] = set
        let primary = LEPHYs(p.primaryPHY)

        var initiator: (central: Int, request: HCILECreateConnection)?
        for other in listeners() where other != id {
            guard let listener = controllers[other], !listener.removed,
                  listener.scanning.isEnabled || listener.initiating.connection != nil else { continue }
            if set.isDirected {
                let targetsListener = [LEAddressType.public, .random].contains { t in
                    listener.ownAddress(t).map { $0.0 == p.peerAddress && $0.1.isRandom == p.peerAddressType.isRandom } ?? false
                }
                guard targetsListener else { continue }
            }
            guard let rssi = sampleRSSI(from: id, to: other) else { continue }

            if initiator == nil, set.isConnectable, let pending = listener.initiating.connection,
               listener.initiating.phys.contains(primary), pending.peerAddress == address,
               pending.peerAddressType.isRandom == addressType.isRandom,
               listenerHearsInWindow(pending.scanInterval, pending.scanWindow) {
                // Extended PDUs connect on the secondary PHY; legacy ones on LE 1M.
                let linkPHY = set.isLegacy ? LEPHY.le1M : p.secondaryPHY
                let request = listener.initiating.extendedConnection.flatMap { Self.legacyRequest($0, on: linkPHY) } ?? pending
                initiator = (other, request)
                continue
            }
            guard listener.scanning.isEnabled, listener.scanning.phys.contains(primary),
                  let duty = listener.scanning.dutyCycle(on: p.primaryPHY), listenerHearsInWindow(duty.interval, duty.window) else { continue }
            if set.isLegacy {
                let eventType: HCILEAdvertisingReportEventType = set.isDirected ? .advDirectInd
                    : set.isConnectable ? .advInd : set.isScannable ? .advScanInd : .advNonconnInd
                report(to: other, eventType: eventType, address: address, addressType: addressType,
                       data: set.isDirected ? [] : set.data, rssi: rssi)
                if duty.active, set.isScannable, let responseRSSI = sampleRSSI(from: id, to: other) {
                    report(to: other, eventType: .scanResponse, address: address, addressType: addressType,
                           data: set.scanResponse, rssi: responseRSSI)
                }
                continue
            }
            // Extended PDUs: only a scanner using the extended commands understands ADV_EXT_IND.
            guard listener.scanning.isExtended else { continue }
            var type: HCILEExtendedAdvertisingEventType = []
            if set.isConnectable { type.insert(.connectable) }
            if set.isScannable { type.insert(.scannable) }
            if set.isDirected { type.insert(.directed) }
            let txPower: Int8 = p.properties.contains(.includeTxPower) ? advertiser.txPower : 127
            let shownAddress = p.properties.contains(.anonymous) ? (BluetoothAddress.zero, LEAddressType(rawValue: 0xFF)) : (address, addressType)
            let template = HCILEExtendedAdvertisingReportEvent.Report(
                eventType: type, addressType: shownAddress.1, address: shownAddress.0, primaryPHY: p.primaryPHY.rawValue,
                secondaryPHY: p.secondaryPHY.rawValue, advertisingSID: p.sid, txPower: txPower, rssi: rssi,
                directAddressType: p.peerAddressType, directAddress: set.isDirected ? p.peerAddress : .zero, data: [])
            if !set.isScannable { extendedReports(to: other, template, data: set.data) }
            if duty.active, set.isScannable, let responseRSSI = sampleRSSI(from: id, to: other) {
                var response = template
                response.eventType.insert(.scanResponse)
                response.rssi = responseRSSI
                extendedReports(to: other, response, data: set.scanResponse)
            }
        }
        if let initiator {
            let linkPHY = set.isLegacy ? LEPHY.le1M : p.secondaryPHY
            connect(central: initiator.central, peripheral: id, request: initiator.request, peripheralAddress: (address, addressType),
                    advertisingSet: handle, phy: linkPHY)
            return
        }
        let next = UInt64(p.intervalMin) * 625_000 + rng.next() % (Self.advertisingDelayMaxNanos + 1)
        queue.schedule(.advertiseSet(controller: id, handle: handle, generation: generation), at: now + next)
    }

    /// The set stopped by itself (duration, event count): its host hears LE Advertising Set Terminated.
    mutating func terminateSet(_ id: Int, _ handle: UInt8, status: HCIStatus, connection: ConnectionHandle, events: Int) {
        stopAdvertisingSet(id, handle)
        emit(id, HCILEAdvertisingSetTerminatedEvent(status: status, handle: handle, connectionHandle: connection,
                                                    completedEvents: UInt8(clamping: events)).packet)
    }

    /// Sends one extended advertisement's data to a scanner's host: one report per 229 octets, each but the last with
    /// data status "incomplete, more to come". Duplicate filtering drops a whole advertisement, never a part.
    mutating func extendedReports(to scanner: Int, _ template: HCILEExtendedAdvertisingReportEvent.Report, data: [UInt8]) {
        guard var s = controllers[scanner] else { return }
        if s.scanning.filterDuplicates {
            let key = ControllerState.DuplicateKey(address: template.address, addressType: template.addressType.rawValue,
                                                   eventType: template.eventType.rawValue, sid: template.advertisingSID)
            guard s.scanning.reported.insert(key).inserted else { return }
            controllers[scanner] = s
        }
        let room = HCILEExtendedAdvertisingEventType.maximumDataPerReport
        var offset = 0
        repeat {
            let end = min(data.count, offset + room)
            var report = template
            report.data = Array(data[offset..<end])
            report.eventType = template.eventType.with(dataStatus: end < data.count ? HCILEExtendedAdvertisingEventType.dataIncompleteMore
                                                                                       : HCILEExtendedAdvertisingEventType.dataComplete)
            if emit(scanner, HCILEExtendedAdvertisingReportEvent(reports: [report]).packet) {
                controllers[scanner]?.scanning.reportCount += 1
            }
            offset = end
        } while offset < data.count
    }
}
