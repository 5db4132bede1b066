import BLEWire

/// The GAP procedures of one host (Core 5.4, Vol 3, Part C): scanning, legacy advertising, connection establishment
/// as central, and this side's own address with privacy (Vol 3, Part C, 10.7; Vol 6, Part B, 1.3.2.2). Sans-I/O: no
/// tasks, clocks or randomness — time comes in as `now` (a monotonic reading), new private addresses as
/// ``privateAddressMade(_:now:)``, and command outcomes as ``commandFinished(_:now:)``.
///
/// Procedures that change the own address or start the radio — a scan, advertising, a connection attempt's start, a
/// new private address — run **one at a time**, in the order asked, each a list of HCI commands sent one after the
/// other (the controller refuses LE Set Random Address while advertising, scanning or initiating: Vol 4, Part E,
/// 7.8.4). A connection attempt leaves that line once LE Create Connection is accepted; its outcome comes with LE
/// (Enhanced) Connection Complete, or with its cancellation (the caller's, or the attempt's timeout).
public struct GAPProcedures: Sendable {
    /// Settings fixed for the host's life.
    public struct Configuration: Sendable, Hashable {
        /// Whether this side uses resolvable private addresses (advertising, scanning and initiating with own address
        /// type random).
        public var privacy: Bool
        /// How long a private address is used before a new one replaces it.
        public var privateAddressInterval: Duration

        /// Creates the settings: privacy on or off, and the private address's lifetime.
        public init(privacy: Bool = false, privateAddressInterval: Duration = PrivateAddressRotation.recommendedInterval) {
            self.privacy = privacy
            self.privateAddressInterval = privateAddressInterval
        }
    }

    /// Identifies one procedure a caller asked for; its end is reported with it.
    public struct ProcedureID: Hashable, Sendable, CustomStringConvertible {
        /// The sequence number.
        public let value: UInt64
        public var description: String { "gap#\(value)" }
    }

    /// The settings.
    public let configuration: Configuration
    /// Whether the controller is driven with the extended advertising commands (LE Set Extended Advertising
    /// Parameters and the rest, LE Set Extended Scan Parameters/Enable, LE Extended Create Connection) rather than the
    /// legacy ones; the two never mix (Core 5.4, Vol 4, Part E, 3.1.1). The host sets it once it knows the controller.
    public var usesExtendedCommands = false
    /// With the extended commands: the handles of the advertising sets that are on.
    public internal(set) var activeSets: Set<UInt8> = []
    /// This side's identity address (public, or random static), once the controller is up.
    public var identityAddress: LEAddress?
    /// With privacy on, the resolvable private address the controller has now; `nil` before the first one is set.
    public private(set) var privateAddress: LEAddress?
    /// The own address of the advertising that is on; `nil` when advertising is off.
    public internal(set) var advertisingAddress: LEAddress?
    /// Whether legacy advertising is on (as far as the host knows).
    public var isAdvertising: Bool { advertisingAddress != nil || advertisingStarting }
    /// The scan that is on: its generation and whether it filters duplicates.
    public internal(set) var scan: (generation: Int, filterDuplicates: Bool)?

    private var rotation: PrivateAddressRotation
    /// The advertising to start again after each peripheral connection and disconnection.
    private var restart: [AdvertisingParameters]?
    var advertisingStarting = false
    private var queue: [Procedure] = []
    var running: Procedure?
    var initiation: Initiation?
    var pendingAddress: LEAddress?
    /// Whether the controller's random address (LE Set Random Address) is ``staticAddress``.
    private var staticAddressSet = false
    /// The own address of the advertising that is on (of its first set with the extended commands).
    var advertisingOwnAddress: OwnAddress = .resolvableOrIdentity
    /// With the extended commands: the own address of each advertising set that is on.
    var setOwnAddresses: [UInt8: OwnAddress] = [:]
    private var lastID: UInt64 = 0
    private var lastScanGeneration = 0

    /// Creates the machine: nothing on, no private address yet.
    public init(configuration: Configuration) {
        self.configuration = configuration
        rotation = PrivateAddressRotation(interval: configuration.privateAddressInterval)
    }

    /// The address advertising, scanning or initiating use now: the private address with privacy on, else the
    /// identity address.
    public var onAirAddress: LEAddress? { configuration.privacy ? privateAddress : identityAddress }

    /// The own address type of advertising, scanning and connection commands that use the default own address
    /// (``OwnAddress/resolvableOrIdentity``).
    public var ownAddressType: LEAddressType { own(.resolvableOrIdentity).type }

    /// Without privacy, and with a public identity: the random static address ``OwnAddress/random`` uses, made the
    /// first time a procedure needs it after each power-on (``Action/makeStaticAddress``); `nil` before.
    public private(set) var staticAddress: LEAddress?

    /// The Own_Address_Type a procedure sends for `choice`, and the address the controller then uses (`nil` while
    /// it is not made yet). `perSet`: for an extended advertising set, which has a random address of its own.
    public func own(_ choice: OwnAddress, perSet: Bool = false) -> (type: LEAddressType, address: LEAddress?) {
        let identityType: LEAddressType = identityAddress?.type.isRandom == true ? .random : .public
        switch choice {
        case .resolvableOrIdentity:
            return configuration.privacy ? (.random, privateAddress) : (identityType, identityAddress)
        case .identity:
            // The controller's one random address holds the private address with privacy on: a random static identity
            // is only usable where the address is the set's own.
            if identityType == .random && configuration.privacy && !perSet { return (.random, privateAddress) }
            return (identityType, identityAddress)
        case .random:
            if configuration.privacy { return (.random, privateAddress) }
            return (.random, identityType == .random ? identityAddress : staticAddress)
        }
    }

    /// Whether `choice` uses the resolvable private address.
    private func usesPrivateAddress(_ choice: OwnAddress, perSet: Bool) -> Bool {
        guard configuration.privacy else { return false }
        switch choice {
        case .resolvableOrIdentity, .random: return true
        case .identity: return identityAddress?.type.isRandom == true && !perSet
        }
    }

    /// Whether a connection attempt is under way, and to whom.
    public var initiatingPeer: LEAddress? { initiation?.peer }

    // MARK: Requests

    /// Starts a scan (replacing the one that is on). Returns the procedure, the scan's generation (as ``scan`` and
    /// `scanEnded` report it), and the actions.
    public mutating func startScan(_ parameters: ScanParameters, now: Duration) -> (ProcedureID, generation: Int, [Action]) {
        lastScanGeneration += 1
        let generation = lastScanGeneration
        let (id, actions) = enqueue(.startScan(parameters, generation: generation), now: now)
        return (id, generation, actions)
    }

    /// Stops the scan `generation` if it is still the one on (a newer scan is left alone).
    public mutating func stopScan(generation: Int, now: Duration) -> (ProcedureID, [Action]) {
        enqueue(.stopScan(generation: generation), now: now)
    }

    /// Starts advertising (stopping what is on first).
    public mutating func startAdvertising(_ parameters: AdvertisingParameters, now: Duration) -> (ProcedureID, [Action]) {
        startAdvertising(sets: [parameters], now: now)
    }

    /// Starts advertising `sets` at once (stopping what is on first): with the extended commands, one advertising set
    /// each (handles 0, 1, ...); with the legacy commands there is one advertising, so only the first is used (the
    /// host refuses more before it asks). Restarts after connections follow the first set's
    /// ``AdvertisingParameters/restartAfterConnection``.
    public mutating func startAdvertising(sets: [AdvertisingParameters], now: Duration) -> (ProcedureID, [Action]) {
        let sets = usesExtendedCommands ? sets : Array(sets.prefix(1))
        restart = sets.first?.restartAfterConnection == true ? sets : nil
        return enqueue(.startAdvertising(sets), now: now)
    }

    /// Stops advertising (and its restarts after connections).
    public mutating func stopAdvertising(now: Duration) -> (ProcedureID, [Action]) {
        restart = nil
        advertisingAddress = nil
        activeSets = []
        return enqueue(.stopAdvertising, now: now)
    }

    /// Starts a connection attempt; refused at once while another is under way.
    public mutating func connect(_ parameters: ConnectionParameters, now: Duration) -> (ProcedureID, [Action]) {
        guard initiation == nil else {
            let id = newID()
            return (id, [.finished(id, .connectionInProgress)])
        }
        let (id, actions) = enqueue(.connect(parameters), now: now, start: false)
        initiation = .requested(Initiation.Requested(id: id, peer: parameters.peer))
        return (id, actions + pump(now: now))
    }

    /// Abandons the connection attempt to `peer`: it ends with ``Failure/cancelled`` unless the link comes up first.
    /// Returns whether an attempt to `peer` was under way (an attempt to another device is left alone).
    public mutating func cancelConnection(to peer: LEAddress) -> (Bool, [Action]) {
        guard let attempt = initiation, attempt.peer == peer else { return (false, []) }
        switch attempt {
        case .requested(var requested):
            requested.abandoned = true
            initiation = .requested(requested)
            return (true, [])
        case .initiating(var initiating):
            initiating.cancel = Initiation.Cancel(abandoned: true, commandSent: initiating.cancel?.commandSent ?? false)
            initiation = .initiating(initiating)
            return (true, cancelAttempt())
        }
    }

    // MARK: Inputs

    /// The outcome of the command the machine sent last (LE Create Connection Cancel's included).
    public mutating func commandFinished(_ outcome: HCICommandFlow.Outcome, for command: Command, now: Duration) -> [Action] {
        if case .createConnectionCancel = command { return cancelFinished(outcome) }
        guard var procedure = running, let step = procedure.current else { return [] }
        procedure.current = nil
        let succeeded: Bool
        switch outcome {
        case .complete, .pending: succeeded = true
        case .failed, .timedOut, .cancelled: succeeded = false
        }
        var actions: [Action] = []
        switch step {
        case .setStaticAddress where succeeded:
            staticAddressSet = true
        case .setRandomAddress where succeeded:
            privateAddress = pendingAddress
            staticAddressSet = false
            rotation.didSetAddress(at: now)
            actions.append(.startTimer(.addressRotation, configuration.privateAddressInterval))
        case .enableScan(let generation, _) where !succeeded:
            if scan?.generation == generation {
                scan = nil
                actions.append(.scanEnded(generation: generation))
            }
            procedure.failure = .command(command, outcome)
        case .enableAdvertising, .enableSets:
            advertisingStarting = false
            if !succeeded {
                advertisingAddress = nil
                activeSets = []
                procedure.failure = .command(command, outcome)
            }
        case .resumeAdvertising where !succeeded:
            advertisingAddress = nil
            activeSets = []
        case .createConnection(let parameters):
            if succeeded, let attempt = initiation {
                let abandoned: Bool
                switch attempt {
                case .requested(let requested):
                    abandoned = requested.abandoned
                    initiation = .initiating(Initiation.Initiating(id: requested.id, peer: requested.peer, address: requested.address,
                                                                   cancel: abandoned ? Initiation.Cancel(abandoned: true) : nil))
                case .initiating(let initiating):
                    abandoned = initiating.cancel?.abandoned == true
                }
                actions.append(.startTimer(.connectionAttempt, parameters.timeout))
                // Abandoned while LE Create Connection was on its way: cancel as soon as the controller initiates.
                if abandoned { actions += cancelAttempt() }
                // The caller's outcome comes with the connection's completion, not here.
                procedure.failure = nil
                running = procedure
                return actions + finishRunning(reportingTo: false, now: now)
            }
            initiation = nil
            procedure.failure = .command(command, outcome)
        case .pauseAdvertising, .pauseScan, .stopScan, .stopAdvertising, .resumeScan, .resumeAdvertising, .clearSets:
            break  // best effort: what is off stays off
        case .setAddress where procedure.kind == .rotateAddress:
            break  // a set's new address while rotating: the set keeps its old one
        case .makeAddress, .setRandomAddress, .makeStaticAddress, .setStaticAddress, .scanParameters, .enableScan,
             .advertisingParameters, .advertisingData, .scanResponseData, .setParameters, .setAddress, .setData,
             .setScanResponse:
            if !succeeded { procedure.failure = .command(command, outcome) }
        }
        running = procedure
        return actions + advance(now: now)
    }

    /// The new private address the machine asked for (`nil`: none could be made).
    public mutating func privateAddressMade(_ address: LEAddress?, now: Duration) -> [Action] {
        guard var procedure = running, procedure.current == .makeAddress else { return [] }
        procedure.current = nil
        if let address { pendingAddress = address } else { procedure.failure = .noPrivateAddress }
        running = procedure
        return advance(now: now)
    }

    /// The random static address the machine asked for (``Action/makeStaticAddress``; `nil`: none could be made).
    public mutating func staticAddressMade(_ address: LEAddress?, now: Duration) -> [Action] {
        guard var procedure = running, procedure.current == .makeStaticAddress else { return [] }
        procedure.current = nil
        if let address, address.kind == .randomStatic { staticAddress = address } else { procedure.failure = .noStaticAddress }
        running = procedure
        return advance(now: now)
    }

    /// A timer the machine asked for fired.
    public mutating func timerFired(_ timer: Timer, now: Duration) -> [Action] {
        switch timer {
        case .connectionAttempt:
            guard case .initiating(var attempt) = initiation else { return [] }
            attempt.cancel = Initiation.Cancel(abandoned: attempt.cancel?.abandoned == true, commandSent: attempt.cancel?.commandSent ?? false)
            initiation = .initiating(attempt)
            return cancelAttempt()
        case .addressRotation:
            guard configuration.privacy else { return [] }
            guard rotation.isDue(at: now) else {
                return [.startTimer(.addressRotation, rotation.timeUntilDue(at: now))]
            }
            // Replaced now only where peers see it: when neither advertising nor scanning is on, the next start does.
            guard isAdvertising || scan != nil else { return [] }
            // LE Set Random Address is refused while initiating: again shortly.
            guard initiation?.isInitiating != true else {
                return [.startTimer(.addressRotation, min(configuration.privateAddressInterval, .seconds(1)))]
            }
            return enqueue(.rotateAddress, now: now).1
        }
    }

    /// LE (Enhanced) Connection Complete. Returns this side's address on the link (the one it initiated or advertised
    /// with) and the actions: the connection attempt's outcome for a central, advertising's end for a peripheral.
    public mutating func connectionComplete(status: HCIStatus, handle: ConnectionHandle, role: HCIRole, now: Duration)
        -> (localAddress: LEAddress?, actions: [Action]) {
        if role == .peripheral {
            let local = advertisingAddress ?? onAirAddress ?? identityAddress
            // With the extended commands only the set the link came from ends, and LE Advertising Set Terminated
            // says which (``advertisingSetTerminated(handle:status:now:)``).
            if usesExtendedCommands { return (local, []) }
            // Legacy advertising ends with a link as peripheral (and with directed advertising's timeout).
            advertisingAddress = nil
            return (local, status == .success ? restartAdvertising(now: now) : [])
        }
        guard case .initiating(let attempt) = initiation else {
            return (onAirAddress ?? identityAddress, [])
        }
        initiation = nil
        var actions: [Action] = [.cancelTimer(.connectionAttempt)]
        if status == .success {
            actions.append(.connected(attempt.id, handle))
        } else if let cancel = attempt.cancel, cancel.abandoned && status == .unknownConnectionIdentifier {
            actions.append(.finished(attempt.id, .cancelled))
        } else if attempt.cancel != nil && status == .unknownConnectionIdentifier {
            actions.append(.finished(attempt.id, .connectionTimedOut))
        } else {
            actions.append(.finished(attempt.id, .connectionFailed(status)))
        }
        return (attempt.address ?? onAirAddress ?? identityAddress, actions)
    }

    /// LE Advertising Set Terminated: set `handle` stopped (a connection was made on it with status success, or its
    /// duration or event count ran out). Advertising that restarts after connections starts again after a connection.
    public mutating func advertisingSetTerminated(handle: UInt8, status: HCIStatus, now: Duration) -> [Action] {
        guard activeSets.remove(handle) != nil else { return [] }
        if activeSets.isEmpty { advertisingAddress = nil }
        return status == .success ? restartAdvertising(now: now) : []
    }

    /// A link went down: advertising that restarts after connections starts again when this side was its
    /// peripheral.
    public mutating func disconnected(role: HCIRole, now: Duration) -> [Action] {
        role == .peripheral ? restartAdvertising(now: now) : []
    }

    /// The advertising that restarts after connections, started again.
    private mutating func restartAdvertising(now: Duration) -> [Action] {
        guard let restart else { return [] }
        return enqueue(.startAdvertising(restart), now: now).1
    }

    /// The controller was reset or the transport closed: every procedure fails, the scan ends, nothing is on, and the
    /// private address is gone (the controller no longer has it).
    public mutating func controllerLost() -> [Action] {
        var actions: [Action] = [.cancelTimer(.connectionAttempt), .cancelTimer(.addressRotation)]
        if let procedure = running { actions.append(.finished(procedure.id, .controllerLost)) }
        for procedure in queue { actions.append(.finished(procedure.id, .controllerLost)) }
        if let attempt = initiation, attempt.id != running?.id, !queue.contains(where: { $0.id == attempt.id }) {
            actions.append(.finished(attempt.id, .controllerLost))
        }
        if let scan { actions.append(.scanEnded(generation: scan.generation)) }
        running = nil
        queue = []
        initiation = nil
        restart = nil
        scan = nil
        advertisingAddress = nil
        activeSets = []
        advertisingStarting = false
        privateAddress = nil
        pendingAddress = nil
        staticAddress = nil
        staticAddressSet = false
        setOwnAddresses = [:]
        rotation = PrivateAddressRotation(interval: configuration.privateAddressInterval)
        return actions
    }

    // MARK: Running procedures

    private mutating func newID() -> ProcedureID {
        lastID += 1
        return ProcedureID(value: lastID)
    }

    private mutating func enqueue(_ kind: Procedure.Kind, now: Duration, start: Bool = true) -> (ProcedureID, [Action]) {
        let id = newID()
        queue.append(Procedure(id: id, kind: kind))
        return (id, start ? pump(now: now) : [])
    }

    /// Starts the next procedure when none runs.
    mutating func pump(now: Duration) -> [Action] {
        var actions: [Action] = []
        while running == nil, !queue.isEmpty {
            var procedure = queue.removeFirst()
            let (steps, first) = plan(procedure.kind, now: now)
            procedure.steps = steps
            running = procedure
            actions += first + advance(now: now)
        }
        return actions
    }

    /// The commands of a procedure, decided when it starts (by what is on then), and what ends at once.
    private mutating func plan(_ kind: Procedure.Kind, now: Duration) -> ([Step], [Action]) {
        switch kind {
        case .startScan(let parameters, let generation):
            // A scan that is on ends here: its reports stop, and the controller's scan stops first.
            let ended = endScan()
            return ((ended.isEmpty ? [] : [.stopScan]) + addressSteps(for: [parameters.ownAddress], now: now)
                        + [.scanParameters(parameters),
                           .enableScan(generation: generation, filterDuplicates: parameters.filterDuplicates)],
                    ended)
        case .stopScan(let generation):
            guard scan?.generation == generation else { return ([], []) }
            return ([.stopScan], endScan())
        case .startAdvertising(let sets):
            advertisingAddress = nil
            activeSets = []
            setOwnAddresses = [:]
            advertisingOwnAddress = sets.first?.ownAddress ?? .resolvableOrIdentity
            guard usesExtendedCommands else {
                guard let parameters = sets.first else { return ([.stopAdvertising], []) }
                return ([.stopAdvertising] + addressSteps(for: [parameters.ownAddress], now: now)
                            + [.advertisingParameters(parameters), .advertisingData(parameters.data),
                               .scanResponseData(parameters.scanResponse), .enableAdvertising],
                        [])
            }
            var steps: [Step] = [.stopAdvertising, .clearSets] + addressSteps(for: sets.map(\.ownAddress), perSet: true, now: now)
            for (index, parameters) in sets.enumerated() {
                let handle = UInt8(truncatingIfNeeded: index)
                setOwnAddresses[handle] = parameters.ownAddress
                steps.append(.setParameters(handle: handle, parameters))
                steps.append(.setAddress(handle: handle))
                for (operation, fragment) in HCILEAdvertisingDataOperation.fragments(of: parameters.data) {
                    steps.append(.setData(handle: handle, operation, fragment))
                }
                // Only scannable sets take scan response data (Vol 4, Part E, 7.8.55).
                if parameters.eventProperties.contains(.scannable) {
                    for (operation, fragment) in HCILEAdvertisingDataOperation.fragments(of: parameters.scanResponse) {
                        steps.append(.setScanResponse(handle: handle, operation, fragment))
                    }
                }
            }
            if !sets.isEmpty { steps.append(.enableSets(sets.indices.map { UInt8(truncatingIfNeeded: $0) })) }
            return (steps, [])
        case .stopAdvertising:
            return ([.stopAdvertising], [])
        case .connect(let parameters):
            return (addressSteps(for: [parameters.ownAddress], now: now) + [.createConnection(parameters)], [])
        case .rotateAddress:
            // Due only if nothing replaced it meanwhile, and still shown.
            guard rotation.isDue(at: now), isAdvertising || scan != nil, initiation?.isInitiating != true else { return ([], []) }
            return (replacementSteps(), [])
        }
    }

    /// The scan that is on is over (its reports end).
    private mutating func endScan() -> [Action] {
        guard let ended = scan else { return [] }
        scan = nil
        return [.scanEnded(generation: ended.generation)]
    }

    /// The addresses a start needs first, for the own addresses it uses (`perSet`: those of extended advertising
    /// sets). Privacy: a new private address when none is set yet or the current one is due (not while initiating:
    /// the controller would refuse it). ``OwnAddress/random`` without privacy and with a public identity: the random
    /// static address, made once per power-on, and given to the controller (LE Set Random Address) unless only
    /// advertising sets use it (each gets it with LE Set Advertising Set Random Address).
    private func addressSteps(for choices: [OwnAddress], perSet: Bool = false, now: Duration) -> [Step] {
        if configuration.privacy {
            guard choices.contains(where: { usesPrivateAddress($0, perSet: perSet) }) else { return [] }
            guard privateAddress == nil || (rotation.isDue(at: now) && initiation?.isInitiating != true) else { return [] }
            return replacementSteps()
        }
        guard identityAddress?.type.isRandom != true, choices.contains(.random) else { return [] }
        var steps: [Step] = staticAddress == nil ? [.makeStaticAddress] : []
        guard !perSet, !staticAddressSet else { return steps }
        // LE Set Random Address is refused while legacy advertising or scanning is on (Vol 4, Part E, 7.8.4).
        let pausesAdvertising = isAdvertising && !usesExtendedCommands
        if pausesAdvertising { steps.append(.pauseAdvertising) }
        if scan != nil { steps.append(.pauseScan) }
        steps.append(.setStaticAddress)
        if let scan { steps.append(.resumeScan(generation: scan.generation)) }
        if pausesAdvertising { steps.append(.resumeAdvertising) }
        return steps
    }

    /// A new private address, with advertising and scanning that are on paused around LE Set Random Address.
    private func replacementSteps() -> [Step] {
        var steps: [Step] = []
        if isAdvertising { steps.append(.pauseAdvertising) }
        if scan != nil { steps.append(.pauseScan) }
        steps += [.makeAddress, .setRandomAddress]
        // Each advertising set has its own random address (LE Set Advertising Set Random Address).
        if usesExtendedCommands {
            steps += activeSets.sorted().filter { usesPrivateAddress(setOwnAddresses[$0] ?? .resolvableOrIdentity, perSet: true) }
                .map { .setAddress(handle: $0) }
        }
        if let scan { steps.append(.resumeScan(generation: scan.generation)) }
        if isAdvertising { steps.append(.resumeAdvertising) }
        return steps
    }
}
