import BLEWire

/// How a GAP procedure runs, step by step: each step of the running procedure becomes the HCI command that performs
/// it (the legacy commands, or the extended ones on a controller that has them), and the procedure ends when its steps
/// are done or one fails; a connection attempt's cancellation as well.
extension GAPProcedures {
    /// One command of a procedure, with what its success and failure mean.
    enum Step: Hashable, Sendable {
        case pauseAdvertising
        case pauseScan
        case makeAddress
        case setRandomAddress
        case makeStaticAddress
        case setStaticAddress
        case scanParameters(ScanParameters)
        case enableScan(generation: Int, filterDuplicates: Bool)
        case stopScan
        case advertisingParameters(AdvertisingParameters)
        case advertisingData([UInt8])
        case scanResponseData([UInt8])
        case enableAdvertising
        case stopAdvertising
        case createConnection(ConnectionParameters)
        case resumeScan(generation: Int)
        case resumeAdvertising
        // Extended advertising (one set per entry of the advertising, handle = its index).
        case clearSets
        case setParameters(handle: UInt8, AdvertisingParameters)
        case setAddress(handle: UInt8)
        case setData(handle: UInt8, HCILEAdvertisingDataOperation, [UInt8])
        case setScanResponse(handle: UInt8, HCILEAdvertisingDataOperation, [UInt8])
        case enableSets([UInt8])
    }

    struct Procedure: Sendable {
        var id: ProcedureID
        var kind: Kind
        var steps: [Step] = []
        /// The step whose command or address is awaited.
        var current: Step?
        var failure: Failure?

        enum Kind: Sendable, Hashable {
            case startScan(ScanParameters, generation: Int)
            case stopScan(generation: Int)
            case startAdvertising([AdvertisingParameters])
            case stopAdvertising
            case connect(ConnectionParameters)
            case rotateAddress
        }
    }

    /// Sends the running procedure's next command, or ends it.
    mutating func advance(now: Duration) -> [Action] {
        guard var procedure = running else { return [] }
        while procedure.failure == nil, !procedure.steps.isEmpty {
            let step = procedure.steps.removeFirst()
            guard let action = begin(step) else { continue }
            procedure.current = step
            running = procedure
            return [action]
        }
        running = procedure
        return finishRunning(reportingTo: true, now: now)
    }

    /// The action that starts `step` (with the state it records first), or `nil` when the step has nothing to do.
    mutating func begin(_ step: Step) -> Action? {
        if usesExtendedCommands { return beginExtended(step) }
        switch step {
        case .pauseAdvertising, .stopAdvertising:
            return .send(.setAdvertisingEnable(HCILESetAdvertisingEnable(isEnabled: false)))
        case .pauseScan, .stopScan:
            return .send(.setScanEnable(HCILESetScanEnable(isEnabled: false)))
        case .makeAddress, .makeStaticAddress, .setRandomAddress, .setStaticAddress:
            return beginAddress(step)
        case .scanParameters(let p):
            return .send(.setScanParameters(HCILESetScanParameters(scanType: p.active ? .active : .passive, interval: p.interval,
                                                                   window: p.window, ownAddressType: own(p.ownAddress).type)))
        case .enableScan(let generation, let filterDuplicates):
            // Recorded before the command: reports may come before its Command Complete is handled.
            scan = (generation, filterDuplicates)
            return .send(.setScanEnable(HCILESetScanEnable(isEnabled: true, filterDuplicates: filterDuplicates)))
        case .advertisingParameters(let p):
            return .send(.setAdvertisingParameters(HCILESetAdvertisingParameters(intervalMin: p.interval, intervalMax: p.interval,
                                                                                 advertisingType: p.type,
                                                                                 ownAddressType: own(p.ownAddress).type,
                                                                                 peerAddressType: p.peer?.type ?? .public,
                                                                                 peerAddress: p.peer?.address ?? .zero)))
        case .advertisingData(let data):
            return .send(.setAdvertisingData(HCILESetAdvertisingData(data: data)))
        case .scanResponseData(let data):
            return .send(.setScanResponseData(HCILESetScanResponseData(data: data)))
        case .enableAdvertising:
            // Recorded before the command: a connection may complete before its Command Complete is handled.
            advertisingAddress = own(advertisingOwnAddress).address
            advertisingStarting = true
            return .send(.setAdvertisingEnable(HCILESetAdvertisingEnable(isEnabled: true)))
        case .createConnection(let p):
            let (type, address) = own(p.ownAddress)
            initiation?.address = address
            return .send(.createConnection(HCILECreateConnection(
                peerAddressType: p.peer.type, peerAddress: p.peer.address, ownAddressType: type,
                connectionIntervalMin: p.interval.lowerBound, connectionIntervalMax: p.interval.upperBound,
                supervisionTimeout: p.supervisionTimeout)))
        case .resumeScan(let generation):
            // Only what is still wanted starts again: the user may have stopped the scan meanwhile.
            guard let scan, scan.generation == generation else { return nil }
            return .send(.setScanEnable(HCILESetScanEnable(isEnabled: true, filterDuplicates: scan.filterDuplicates)))
        case .resumeAdvertising:
            // A link may have ended the advertising meanwhile.
            guard advertisingAddress != nil else { return nil }
            advertisingAddress = own(advertisingOwnAddress).address
            return .send(.setAdvertisingEnable(HCILESetAdvertisingEnable(isEnabled: true)))
        case .clearSets, .setParameters, .setAddress, .setData, .setScanResponse, .enableSets:
            return nil  // extended commands only
        }
    }

    /// The action that starts `step` when the controller is driven with the extended commands, or `nil` when the step
    /// has nothing to do.
    mutating func beginExtended(_ step: Step) -> Action? {
        func scanPHY(_ p: ScanParameters) -> HCILESetExtendedScanParameters.PHYParameters {
            .init(scanType: p.active ? .active : .passive, interval: p.interval, window: p.window)
        }
        switch step {
        case .pauseAdvertising, .stopAdvertising:
            // Every set at once (Num_Sets 0). Core 5.4, Vol 4, Part E, 7.8.56.
            return .send(.setExtendedAdvertisingEnable(HCILESetExtendedAdvertisingEnable(isEnabled: false, sets: [])))
        case .pauseScan, .stopScan:
            return .send(.setExtendedScanEnable(HCILESetExtendedScanEnable(isEnabled: false)))
        case .scanParameters(let p):
            return .send(.setExtendedScanParameters(HCILESetExtendedScanParameters(
                ownAddressType: own(p.ownAddress).type, le1M: p.phys.contains(.le1M) || p.phys.isEmpty ? scanPHY(p) : nil,
                leCoded: p.phys.contains(.leCoded) ? scanPHY(p) : nil)))
        case .enableScan(let generation, let filterDuplicates):
            scan = (generation, filterDuplicates)
            return .send(.setExtendedScanEnable(HCILESetExtendedScanEnable(isEnabled: true, filterDuplicates: filterDuplicates ? 1 : 0)))
        case .resumeScan(let generation):
            guard let scan, scan.generation == generation else { return nil }
            return .send(.setExtendedScanEnable(HCILESetExtendedScanEnable(isEnabled: true, filterDuplicates: scan.filterDuplicates ? 1 : 0)))
        case .clearSets:
            return .send(.clearAdvertisingSets)
        case .setParameters(let handle, let p):
            return .send(.setExtendedAdvertisingParameters(HCILESetExtendedAdvertisingParameters(
                handle: handle, properties: p.eventProperties, intervalMin: UInt32(p.interval), intervalMax: UInt32(p.interval),
                ownAddressType: own(p.ownAddress, perSet: true).type, peerAddressType: p.peer?.type ?? .public,
                peerAddress: p.peer?.address ?? .zero,
                primaryPHY: p.legacy ? .le1M : p.primaryPHY,
                secondaryPHY: p.legacy ? .le1M : p.secondaryPHY, sid: min(p.sid ?? handle, 0x0F))))
        case .setAddress(let handle):
            // A set advertising from a random address needs it given to the set. Core 5.4, Vol 4, Part E, 7.8.52.
            let (type, address) = own(setOwnAddresses[handle] ?? .resolvableOrIdentity, perSet: true)
            guard type.isRandom, let address else { return .none }
            return .send(.setAdvertisingSetRandomAddress(HCILESetAdvertisingSetRandomAddress(handle: handle, address: address.address)))
        case .setData(let handle, let operation, let data):
            return .send(.setExtendedAdvertisingData(HCILESetExtendedAdvertisingData(handle: handle, operation: operation, data: data)))
        case .setScanResponse(let handle, let operation, let data):
            return .send(.setExtendedScanResponseData(HCILESetExtendedScanResponseData(handle: handle, operation: operation, data: data)))
        case .enableSets(let handles):
            advertisingAddress = own(advertisingOwnAddress, perSet: true).address
            advertisingStarting = true
            activeSets = Set(handles)
            return .send(.setExtendedAdvertisingEnable(HCILESetExtendedAdvertisingEnable(isEnabled: true, sets: handles.map { .init(handle: $0) })))
        case .resumeAdvertising:
            guard advertisingAddress != nil, !activeSets.isEmpty else { return .none }
            advertisingAddress = own(advertisingOwnAddress, perSet: true).address
            return .send(.setExtendedAdvertisingEnable(HCILESetExtendedAdvertisingEnable(
                isEnabled: true, sets: activeSets.sorted().map { .init(handle: $0) })))
        case .createConnection(let p):
            let (type, address) = own(p.ownAddress)
            initiation?.address = address
            let phy = HCILEExtendedCreateConnection.PHYParameters(
                connectionIntervalMin: p.interval.lowerBound, connectionIntervalMax: p.interval.upperBound,
                supervisionTimeout: p.supervisionTimeout)
            return .send(.extendedCreateConnection(HCILEExtendedCreateConnection(
                ownAddressType: type, peerAddressType: p.peer.type, peerAddress: p.peer.address,
                le1M: p.phys.contains(.le1M) || p.phys.isEmpty ? phy : nil, leCoded: p.phys.contains(.leCoded) ? phy : nil)))
        case .makeAddress, .makeStaticAddress, .setRandomAddress, .setStaticAddress:
            // Scanning and initiating use the controller's random address in both command sets.
            return beginAddress(step)
        case .advertisingParameters, .advertisingData, .scanResponseData, .enableAdvertising:
            return nil  // legacy commands only
        }
    }

    /// The action of a step that makes or sets the controller's random address.
    func beginAddress(_ step: Step) -> Action? {
        switch step {
        case .makeAddress: return .makePrivateAddress
        case .makeStaticAddress: return .makeStaticAddress
        case .setRandomAddress:
            guard let pendingAddress else { return nil }
            return .send(.setRandomAddress(HCILESetRandomAddress(address: pendingAddress.address)))
        case .setStaticAddress:
            guard let staticAddress else { return nil }
            return .send(.setRandomAddress(HCILESetRandomAddress(address: staticAddress.address)))
        default: return nil
        }
    }

    /// Ends the running procedure (its caller told when `reportingTo`), then starts the next.
    mutating func finishRunning(reportingTo report: Bool, now: Duration) -> [Action] {
        guard let procedure = running else { return [] }
        running = nil
        if case .connect = procedure.kind, procedure.failure != nil { initiation = nil }
        var actions: [Action] = []
        if report { actions.append(.finished(procedure.id, procedure.failure)) }
        return actions + pump(now: now)
    }

    /// Sends LE Create Connection Cancel for the attempt, once, when the controller is initiating.
    mutating func cancelAttempt() -> [Action] {
        guard case .initiating(var attempt) = initiation, var cancel = attempt.cancel, !cancel.commandSent else { return [] }
        cancel.commandSent = true
        attempt.cancel = cancel
        initiation = .initiating(attempt)
        return [.send(.createConnectionCancel)]
    }

    /// LE Create Connection Cancel's outcome: accepted, the attempt ends with LE Connection Complete (Unknown Connection
    /// Identifier); refused or unanswered, the attempt ends here with that outcome.
    mutating func cancelFinished(_ outcome: HCICommandFlow.Outcome) -> [Action] {
        guard let attempt = initiation else { return [] }
        if case .initiating(var initiating) = attempt, initiating.cancel != nil {
            initiating.cancel?.commandSent = false
            initiation = .initiating(initiating)
        }
        switch outcome {
        case .complete, .pending:
            return []
        case .failed, .timedOut, .cancelled:
            // Too late (the link came up meanwhile, and its completion was handled) or no answer: the attempt ends.
            initiation = nil
            return [.cancelTimer(.connectionAttempt),
                    .finished(attempt.id, .command(.createConnectionCancel, outcome))]
        }
    }
}
