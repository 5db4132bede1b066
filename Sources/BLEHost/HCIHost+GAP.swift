import BLEProtocols
import BLEWire

/// GAP: scanning, advertising and connection establishment. Core 5.4, Vol 3, Part C.
extension HCIHost {
    /// Scan parameters.
    public struct ScanOptions: Sendable {
        /// Send scan requests to get scan responses.
        public var active = true
        /// Let the controller filter duplicate reports.
        public var filterDuplicates = false
        /// Scan interval and window in 0.625 ms units.
        public var interval: UInt16 = 0x0060
        /// Scan window in 0.625 ms units.
        public var window: UInt16 = 0x0030
        /// The most reports the stream holds for a consumer that falls behind (the oldest are dropped first).
        public var bufferingLimit = 4096
        /// The primary advertising PHYs scanned: LE 1M (the default) and/or LE Coded. LE Coded needs a controller with
        /// the extended advertising commands and LE feature bit 11.
        public var phys: LEPHYs = .le1M
        /// The address the scan uses (scan requests carry it): by default the resolvable private address with privacy
        /// on, the identity address otherwise.
        public var ownAddress: OwnAddress = .resolvableOrIdentity
        /// Creates scan options.
        public init(active: Bool = true, filterDuplicates: Bool = false, phys: LEPHYs = .le1M,
                    ownAddress: OwnAddress = .resolvableOrIdentity) {
            self.active = active
            self.filterDuplicates = filterDuplicates
            self.phys = phys
            self.ownAddress = ownAddress
        }
    }

    /// Whether this host drives its controller with the extended advertising commands: the controller lists them
    /// (``ControllerCapabilities/supportsExtendedAdvertising``). Then advertising uses advertising sets, scanning
    /// LE Set Extended Scan Parameters/Enable and connecting LE Extended Create Connection; otherwise the legacy
    /// commands. The two are never mixed (Core 5.4, Vol 4, Part E, 3.1.1).
    public var usesExtendedAdvertising: Bool { gap.machine.usesExtendedCommands }

    /// Starts scanning; the stream delivers every advertising report until it is cancelled (which stops the scan).
    /// A new scan replaces the one that is on (whose stream finishes).
    ///
    /// With ``SecurityConfiguration/privacy`` on, the scan uses this side's resolvable private address (scan requests
    /// carry it), and reports from bonded devices using resolvable private addresses carry their identity
    /// (``AdvertisementReport/identity``). Core 5.4, Vol 3, Part C, 10.7.
    public func scan(_ options: ScanOptions = ScanOptions()) async throws -> AsyncThrowingStream<AdvertisementReport, any Error> {
        // Bounded: a consumer that falls behind loses the oldest reports, never memory without bound.
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: AdvertisementReport.self, throwing: (any Error).self,
                                                                    bufferingPolicy: .bufferingNewest(options.bufferingLimit))
        try await startScan(options, sink: .reports(continuation)) { generation in
            continuation.onTermination = { [weak self] _ in Task { await self?.scanStreamEnded(generation) } }
        }
        return stream
    }

    /// Starts scanning as ``scan(_:)`` does, but the stream's elements are batches: every report the host decoded in
    /// one of its steps (a wake-up of its reader: what the controller sent meanwhile), in order, so that a consumer
    /// pays one wake-up per burst instead of one per report. A batch is never empty. A consumer that falls behind
    /// loses the oldest batches first, once ``ScanOptions/bufferingLimit`` reports' worth (counted as batches of at
    /// least 16 reports) wait.
    public func scanBatches(_ options: ScanOptions = ScanOptions()) async throws -> AsyncThrowingStream<[AdvertisementReport], any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: [AdvertisementReport].self, throwing: (any Error).self,
                                                                    bufferingPolicy: .bufferingNewest(max(1, options.bufferingLimit / 16)))
        try await startScan(options, sink: .batches(continuation)) { generation in
            continuation.onTermination = { [weak self] _ in Task { await self?.scanStreamEnded(generation) } }
        }
        return stream
    }

    /// Starts a scan whose reports go to `sink`; `registered` gets the scan's generation once the sink is in place
    /// (to end the scan when the consumer goes away).
    private func startScan(_ options: ScanOptions, sink: ScanSink, registered: (Int) -> Void) async throws {
        guard state == .poweredOn else { throw HostError(.notPoweredOn, "scan: the adapter is \(state)") }
        let phys = options.phys.isEmpty ? LEPHYs.le1M : options.phys
        if phys != .le1M {
            let capabilities = controller.capabilities
            guard phys.isSubset(of: [.le1M, .leCoded]) else { throw capabilities.unsupported(.twoMegabitPHY) }
            guard usesExtendedAdvertising else { throw capabilities.unsupported(.extendedAdvertising) }
            guard capabilities.supportsCodedAdvertising else { throw capabilities.unsupported(.codedPHY) }
        }
        securityManager.resolvedIdentities = [:]
        gap.assembler.reset()
        flushReports()
        let parameters = GAPProcedures.ScanParameters(active: options.active, interval: options.interval, window: options.window,
                                                      filterDuplicates: options.filterDuplicates, phys: phys,
                                                      ownAddress: options.ownAddress)
        let (id, generation, actions) = gap.machine.startScan(parameters, now: now)
        gap.scanStreams[generation] = sink
        registered(generation)
        do {
            try await run(id, actions)
        } catch {
            // The scan never started: its stream (which nobody got) is dropped.
            gap.scanStreams.removeValue(forKey: generation)?.finish(throwing: error)
            throw error
        }
    }

    /// Hands the reports of the step that ends to the scan whose stream takes batches.
    func flushReports() {
        guard !gap.pendingReports.isEmpty else { return }
        let batch = gap.pendingReports
        gap.pendingReports = []
        if case .batches(let continuation)? = gap.currentScanStream { continuation.yield(batch) }
    }

    /// The consumer of scan `generation` went away: the scan stops (unless it already ended).
    private func scanStreamEnded(_ generation: Int) {
        guard gap.scanStreams.removeValue(forKey: generation) != nil, state == .poweredOn else { return }
        performGAP(gap.machine.stopScan(generation: generation, now: now).1)
    }

    /// Whether a scan is running.
    public var isScanning: Bool { gap.currentScanStream != nil }

    /// Stops scanning and finishes the scan stream.
    public func stopScan() async {
        guard let generation = gap.machine.scan?.generation else { return }
        gap.scanStreams.removeValue(forKey: generation)?.finish()
        guard state == .poweredOn else { return }
        let (id, actions) = gap.machine.stopScan(generation: generation, now: now)
        try? await run(id, actions)
    }

    /// Advertising parameters and data.
    public struct AdvertisingOptions: Sendable {
        /// The advertising data (at most 31 bytes encoded).
        public var data: AdvertisingData
        /// The scan response data (at most 31 bytes encoded).
        public var scanResponse: AdvertisingData
        /// Interval in 0.625 ms units (0x00A0 = 100 ms).
        public var interval: UInt16 = 0x00A0
        /// The legacy advertising PDU type.
        public var type: HCILEAdvertisingType = .connectableUndirected
        /// Whether advertising starts again after each connection as peripheral (which ends legacy advertising) and
        /// each disconnection, so that several centrals can connect.
        public var restartAfterConnection = false
        /// Whether to send extended (non-legacy) PDUs: data and scan response up to the controller's
        /// ``ControllerCapabilities/maximumAdvertisingDataLength``, on ``primaryPHY``. Extended connectable advertising
        /// is not scannable and extended scannable advertising carries no advertising data (Core 5.4, Vol 6, Part B,
        /// 2.3.4): the host moves ``scanResponse``'s structures after ``data`` for connectable or non-connectable
        /// advertising, and ``data``'s before ``scanResponse``'s for scannable advertising.
        public var extended = false
        /// The primary advertising PHY of extended PDUs: LE 1M or LE Coded (long range).
        public var primaryPHY: LEPHY = .le1M
        /// The secondary advertising PHY of extended PDUs (LE 1M, LE 2M or LE Coded); LE Coded advertising uses LE
        /// Coded for both unless set.
        public var secondaryPHY: LEPHY?
        /// The Advertising SID (0–15) of extended PDUs; `nil`: the set's position in the call.
        public var sid: UInt8?
        /// Whether extended PDUs carry the TX power.
        public var includeTxPower = false
        /// The device the advertising is directed at (`nil`: undirected). With legacy PDUs, ``type`` must then be a
        /// connectable directed type (ADV_DIRECT_IND, which carries no data); extended PDUs of any kind get the
        /// Directed property and carry this address (TargetA), and only that device hears them.
        public var peer: LEAddress?
        /// The address advertised (AdvA): by default the resolvable private address with privacy on, the identity
        /// address otherwise. With the legacy commands there is one advertising, so one own address.
        public var ownAddress: OwnAddress = .resolvableOrIdentity
        /// Creates advertising options.
        public init(data: AdvertisingData, scanResponse: AdvertisingData = AdvertisingData(), restartAfterConnection: Bool = false) {
            self.data = data
            self.scanResponse = scanResponse
            self.restartAfterConnection = restartAfterConnection
        }
    }

    /// Starts legacy advertising (replacing what is on). Throws ``WireError`` (oversized) when the data does not fit
    /// in 31 bytes.
    ///
    /// With ``SecurityConfiguration/privacy`` on, the advertiser address is this side's resolvable private address,
    /// replaced (advertising stops and starts again) when ``SecurityConfiguration/privateAddressInterval`` has passed.
    /// Core 5.4, Vol 3, Part C, 10.7.
    public func startAdvertising(_ options: AdvertisingOptions) async throws {
        try await startAdvertising(sets: [options])
    }

    /// Starts advertising several advertising sets at once, each with its own data and kind (replacing what is on).
    /// Each set with ``AdvertisingOptions/extended`` sends extended PDUs.
    ///
    /// Several sets, extended PDUs and LE Coded need the extended advertising commands
    /// (``usesExtendedAdvertising``); a connection made on a connectable set ends that set only. Restarts after
    /// connections follow the first set's ``AdvertisingOptions/restartAfterConnection`` (every set starts again).
    ///
    /// - Throws: ``HostErrorCode/unsupportedByController(_:)`` without sending anything when the controller lacks
    ///   the extended commands (`.extendedAdvertising`), has fewer sets (`.advertisingSets(_:)`) or lacks LE Coded
    ///   (`.codedPHY`); ``WireError`` (oversized) when data exceeds 31 octets for legacy PDUs or the controller's
    ///   maximum for extended ones.
    public func startAdvertising(sets: [AdvertisingOptions]) async throws {
        guard state == .poweredOn else { throw HostError(.notPoweredOn, "advertise: the adapter is \(state)") }
        let capabilities = controller.capabilities
        if !usesExtendedAdvertising, sets.count > 1 || sets.contains(where: { $0.extended || $0.primaryPHY != .le1M }) {
            throw capabilities.unsupported(.extendedAdvertising)
        }
        if let available = capabilities.advertisingSetCount, sets.count > available {
            throw capabilities.unsupported(.advertisingSets(sets.count))
        }
        var parameters: [GAPProcedures.AdvertisingParameters] = []
        for options in sets {
            guard options.extended else {
                let directed = options.type == .connectableDirectedLowDuty || options.type == .connectableDirectedHighDuty
                guard directed == (options.peer != nil) else {
                    throw HostError(.commandFailed(HCILESetAdvertisingParameters.opcode, .invalidCommandParameters),
                                    "legacy directed advertising needs a connectable directed type and a peer address, both or neither")
                }
                parameters.append(.init(interval: options.interval, type: options.type, data: try options.data.encodedLegacy(),
                                        scanResponse: try options.scanResponse.encodedLegacy(),
                                        restartAfterConnection: options.restartAfterConnection, peer: options.peer,
                                        ownAddress: options.ownAddress))
                continue
            }
            let secondary = options.secondaryPHY ?? (options.primaryPHY == .leCoded ? .leCoded : .le1M)
            if options.primaryPHY == .leCoded || secondary == .leCoded, !capabilities.supportsCodedAdvertising {
                throw capabilities.unsupported(.codedPHY)
            }
            if secondary == .le2M, !capabilities.leFeatures.contains(.le2MPHY) { throw capabilities.unsupported(.twoMegabitPHY) }
            let scannable = options.type == .scannableUndirected
            let data = scannable ? [] : options.data.encoded + options.scanResponse.encoded
            let response = scannable ? options.data.encoded + options.scanResponse.encoded : []
            let maximum = capabilities.maximumAdvertisingDataLength ?? 1650
            for bytes in [data, response] where bytes.count > maximum {
                throw WireError(.oversized, "advertising data is \(bytes.count) bytes; the controller takes at most \(maximum)")
            }
            // Connectable extended advertising sends its data in one AUX_ADV_IND (no chain): a 255-octet payload less
            // the extended header (Core 5.4, Vol 6, Part B, 2.3.4; Vol 4, Part E, 7.8.56).
            if options.type == .connectableUndirected {
                // A directed one also carries TargetA (6 octets) in its header.
                let limit = Self.connectableExtendedDataLimit(includeTxPower: options.includeTxPower) - (options.peer == nil ? 0 : 6)
                guard data.count <= limit else {
                    throw WireError(.oversized, "connectable extended advertising data is \(data.count) bytes; one AUX_ADV_IND carries at most \(limit) (put more in a non-connectable advertisement)")
                }
            }
            parameters.append(.init(interval: options.interval, type: options.type, data: data, scanResponse: response,
                                    restartAfterConnection: options.restartAfterConnection, legacy: false,
                                    primaryPHY: options.primaryPHY, secondaryPHY: secondary, sid: options.sid,
                                    includeTxPower: options.includeTxPower, peer: options.peer, ownAddress: options.ownAddress))
        }
        let (id, actions) = gap.machine.startAdvertising(sets: parameters, now: now)
        try await run(id, actions)
    }

    /// Stops advertising (and its restarts after connections).
    public func stopAdvertising() async throws {
        let (id, actions) = gap.machine.stopAdvertising(now: now)
        try await run(id, actions)
    }

    /// The most data connectable extended advertising carries: its one AUX_ADV_IND's 255-octet payload less the
    /// extended header (header length and AdvMode, flags, AdvA, ADI, and TxPower when included): 245 octets, 244 with
    /// TX power. Core 5.4, Vol 6, Part B, 2.3.4.
    public static func connectableExtendedDataLimit(includeTxPower: Bool = false) -> Int { includeTxPower ? 244 : 245 }

    /// Whether advertising is on (legacy, or at least one advertising set).
    public var isAdvertising: Bool { gap.machine.isAdvertising }

    /// Connects to `peer`. Throws ``HostError`` with `connectionTimedOut` when it does not complete within `timeout`
    /// (the attempt is cancelled with LE Create Connection Cancel). `connectionInterval` is the range of connection
    /// intervals acceptable, in 1.25 ms units (7.5 ms to 4 s: 0x0006…0x0C80); `supervisionTimeout` is in 10 ms units.
    ///
    /// With ``SecurityConfiguration/privacy`` on, this side initiates with its resolvable private address
    /// (``HostConnection/localAddress``). Core 5.4, Vol 3, Part C, 10.7. `ownAddress` chooses another of this side's
    /// addresses for this attempt (``OwnAddress``).
    public func connect(to peer: LEAddress, timeout: Duration = .seconds(10),
                        supervisionTimeout: UInt16 = 0x01F4,
                        connectionInterval: ClosedRange<UInt16> = 0x0018...0x0028,
                        ownAddress: OwnAddress = .resolvableOrIdentity) async throws -> HostConnection {
        guard state == .poweredOn else { throw HostError(.notPoweredOn, "connect: the adapter is \(state)") }
        // With the extended commands the attempt listens on LE Coded too when the controller has it, so a long-range
        // advertiser is reached as well.
        let phys: LEPHYs = usesExtendedAdvertising && controller.capabilities.supportsCodedAdvertising ? [.le1M, .leCoded] : .le1M
        let parameters = GAPProcedures.ConnectionParameters(peer: peer, interval: connectionInterval,
                                                            supervisionTimeout: supervisionTimeout, timeout: timeout, phys: phys,
                                                            ownAddress: ownAddress)
        let (id, actions) = gap.machine.connect(parameters, now: now)
        switch await outcome(of: id, actions) {
        case .connected(let handle):
            guard let connection = links[handle]?.connection else {
                throw HostError(.notConnected, "the link with \(peer) went down at once")
            }
            return connection
        case .failed(let failure):
            throw GAPDriver.error(failure)
        case .done:
            throw HostError(.notConnected, "the connection attempt to \(peer) ended without a link")
        }
    }

    /// Abandons the connection attempt to `peer` in progress (LE Create Connection Cancel): its ``connect(to:timeout:supervisionTimeout:connectionInterval:)``
    /// call throws `CancellationError`. Returns whether an attempt to `peer` was pending; an attempt to another
    /// device is left alone. If the link comes up before the controller cancels, it is kept: the connect call
    /// returns it, and the caller decides (as after any successful connect).
    @discardableResult
    public func cancelConnectionAttempt(to peer: LEAddress) -> Bool {
        let (found, actions) = gap.machine.cancelConnection(to: peer)
        performGAP(actions)
        return found
    }

    // MARK: Driving the GAP machine

    /// Runs a procedure the machine just took: its caller waits, in place before the first command leaves, and throws
    /// its failure.
    private func run(_ id: GAPProcedures.ProcedureID, _ actions: [GAPProcedures.Action]) async throws {
        if case .failed(let failure) = await outcome(of: id, actions) { throw GAPDriver.error(failure) }
    }

    /// Registers the caller of procedure `id`, carries out the actions that start it, and waits for its end.
    private func outcome(of id: GAPProcedures.ProcedureID, _ actions: [GAPProcedures.Action]) async -> GAPDriver.Outcome {
        await withCheckedContinuation { continuation in
            gap.waiters[id] = { continuation.resume(returning: $0) }
            performGAP(actions)
        }
    }

    /// Carries out the GAP machine's actions: the driver runs them, then the host sends what it asked for.
    func performGAP(_ actions: [GAPProcedures.Action]) {
        guard !actions.isEmpty else { return }
        var port = HostGAPPort(now: now, host: self, privateAddress: { [unowned self] in makePrivateAddress() })
        gap.perform(actions, port: &port)
        carryOut(port.requests)
    }

    /// Sends what the GAP driver asked of its port, in order.
    private func carryOut(_ requests: [HostGAPPort.Request]) {
        for request in requests {
            switch request {
            case .send(let command):
                sendGAP(command)
            case .makeStaticAddress:
                let made: CommandDriver.Completion = { [self] outcome in
                    let random = try? returnParameters(of: HCILERand.self, outcome).randomNumber
                    let address = random.flatMap { random in
                        LEAddress.randomStatic((0..<6).map { UInt8(truncatingIfNeeded: random >> (8 * UInt64($0))) })
                    }
                    performGAP(gap.machine.staticAddressMade(address, now: now))
                }
                submit(HCILERand(), then: made)
            }
        }
    }

    /// Sends one of the machine's commands; its outcome goes back to the machine.
    private func sendGAP(_ command: GAPProcedures.Command) {
        let finished: CommandDriver.Completion = { [self] outcome in
            performGAP(gap.machine.commandFinished(outcome, for: command, now: now))
        }
        switch command {
        case .setScanParameters(let c): submit(c, then: finished)
        case .setScanEnable(let c): submit(c, then: finished)
        case .setAdvertisingParameters(let c): submit(c, then: finished)
        case .setAdvertisingData(let c): submit(c, then: finished)
        case .setScanResponseData(let c): submit(c, then: finished)
        case .setAdvertisingEnable(let c): submit(c, then: finished)
        case .setRandomAddress(let c): submit(c, then: finished)
        case .createConnection(let c): submit(c, then: finished)
        case .createConnectionCancel: submit(HCILECreateConnectionCancel(), then: finished)
        case .setAdvertisingSetRandomAddress(let c): submit(c, then: finished)
        case .setExtendedAdvertisingParameters(let c): submit(c, then: finished)
        case .setExtendedAdvertisingData(let c): submit(c, then: finished)
        case .setExtendedScanResponseData(let c): submit(c, then: finished)
        case .setExtendedAdvertisingEnable(let c): submit(c, then: finished)
        case .clearAdvertisingSets: submit(HCILEClearAdvertisingSets(), then: finished)
        case .setExtendedScanParameters(let c): submit(c, then: finished)
        case .setExtendedScanEnable(let c): submit(c, then: finished)
        case .extendedCreateConnection(let c): submit(c, then: finished)
        }
    }

    /// One of the GAP machine's timers fired.
    func gapTimerFired(_ firing: TimerSet<GAPProcedures.Timer>.Firing) {
        guard state == .poweredOn else {
            _ = gap.timers.expire(firing)
            return
        }
        var port = HostGAPPort(now: now, host: self, privateAddress: { [unowned self] in makePrivateAddress() })
        gap.timerFired(firing, port: &port)
        carryOut(port.requests)
    }

    /// The link with `handle`, if it is still `link` (not a newer link that got the same handle).
    func current(_ handle: ConnectionHandle, is link: LinkID?) -> Bool { links.isCurrent(handle, is: link) }

    func handleLE(_ event: HCILEMetaEvent) async {
        switch event {
        case .advertisingReport(let e):
            for r in e.reports {
                deliverReport(address: LEAddress(r.address, type: r.addressType), rssi: r.rssi, eventType: r.eventType, data: r.data)
            }
        case .extendedAdvertisingReport(let e):
            // Parts of one advertisement are joined first (per advertiser and SID); only whole (or truncated) ones go up.
            guard gap.currentScanStream != nil else { return }
            for part in e.reports {
                guard let assembled = gap.assembler.receive(part) else { continue }
                let r = assembled.report
                let type: HCILEAdvertisingReportEventType
                // Directed is ADV_DIRECT_IND only when connectable: extended advertising may be directed and not
                // connectable (scannable or neither). Core 5.4, Vol 4, Part E, 7.7.65.13.
                if r.eventType.contains(.scanResponse) { type = .scanResponse }
                else if r.eventType.contains(.directed) && r.eventType.contains(.connectable) { type = .advDirectInd }
                else if r.eventType.contains(.connectable) { type = .advInd }
                else if r.eventType.contains(.scannable) { type = .advScanInd }
                else { type = .advNonconnInd }
                var report = AdvertisementReport(address: LEAddress(r.address, type: r.addressType), rssi: r.rssi, eventType: type,
                                                 rawData: r.data)
                report.primaryPHY = LEPHY(rawValue: r.primaryPHY)
                report.secondaryPHY = r.secondaryPHY == 0 ? nil : LEPHY(rawValue: r.secondaryPHY)
                report.advertisingSID = r.advertisingSID <= 0x0F ? r.advertisingSID : nil
                report.txPower = r.txPower == 127 ? nil : r.txPower
                report.isLegacy = r.eventType.contains(.legacy)
                report.isTruncated = assembled.isTruncated
                report.isScannable = r.eventType.contains(.scannable)
                deliver(report)
            }
        case .advertisingSetTerminated(let e):
            performGAP(gap.machine.advertisingSetTerminated(handle: e.handle, status: e.status, now: now))
        case .scanTimeout:
            break  // The host scans without a Duration.
        case .connectionComplete(let e):
            connectionCompleted(status: e.status, handle: e.handle, role: e.role, peer: LEAddress(e.peerAddress, type: e.peerAddressType),
                                interval: e.connectionInterval, latency: e.peripheralLatency, timeout: e.supervisionTimeout)
        case .enhancedConnectionComplete(let e):
            connectionCompleted(status: e.status, handle: e.handle, role: e.role, peer: LEAddress(e.peerAddress, type: e.peerAddressType),
                                interval: e.connectionInterval, latency: e.peripheralLatency, timeout: e.supervisionTimeout)
        case .connectionUpdateComplete(let e):
            guard links.contains(e.handle) else { return }
            guard e.status == .success else {
                finishUpdateWaiters(on: e.handle, .failure(HostError(.commandFailed(HCILEConnectionUpdate.opcode, e.status),
                                                                     "the connection update failed: \(e.status)")))
                return
            }
            guard let connection = links.update(e.handle, { link -> HostConnection in
                link.connection.interval = e.connectionInterval
                link.connection.latency = e.peripheralLatency
                link.connection.supervisionTimeout = e.supervisionTimeout
                return link.connection
            }) else { return }
            publish(.connectionUpdated(connection))
            finishUpdateWaiters(on: e.handle, .success(connection))
        case .longTermKeyRequest(let e):
            longTermKeyRequested(handle: e.handle, ediv: e.encryptedDiversifier, rand: e.randomNumber)
        case .dataLengthChange(let e):
            guard let connection = links.update(e.handle, { link -> HostConnection in
                link.connection.maxTxOctets = e.maxTxOctets
                link.connection.maxRxOctets = e.maxRxOctets
                return link.connection
            }) else { return }
            publish(.connectionUpdated(connection))
        case .phyUpdateComplete(let e):
            guard let (connection, waiters) = links.update(e.handle, { link in
                let waiters = link.phyWaiters.values
                link.phyWaiters = [:]
                if e.status == .success {
                    link.connection.txPHY = e.txPHY
                    link.connection.rxPHY = e.rxPHY
                }
                return (link.connection, waiters)
            }) else { return }
            if e.status == .success { publish(.connectionUpdated(connection)) }
            for waiter in waiters {
                if e.status == .success {
                    waiter.resume(returning: connection)
                } else {
                    waiter.resume(throwing: HostError(.commandFailed(HCILESetPHY.opcode, e.status), "PHY update failed: \(e.status)"))
                }
            }
        case .readRemoteFeaturesComplete, .unknown:
            break
        }
    }

    private func deliverReport(address: LEAddress, rssi: Int8, eventType: HCILEAdvertisingReportEventType, data: [UInt8]) {
        deliver(AdvertisementReport(address: address, rssi: rssi, eventType: eventType, rawData: data))
    }

    private func deliver(_ report: AdvertisementReport) {
        guard let sink = gap.currentScanStream else { return }
        // The bytes go up as received, decoded only by whoever reads them (most reports are repeats a scanner drops
        // unread). Malformed data is not dropped either: the device exists, and its flags or name may well be intact
        // (the report's `data` holds the structures before the fault).
        var report = report
        report.identity = resolvedIdentity(of: report.address)
        switch sink {
        case .reports(let continuation): continuation.yield(report)
        case .batches: gap.pendingReports.append(report)
        }
    }

    private func connectionCompleted(status: HCIStatus, handle: ConnectionHandle, role: HCIRole, peer: LEAddress, interval: UInt16,
                                     latency: UInt16, timeout: UInt16) {
        let (local, actions) = gap.machine.connectionComplete(status: status, handle: handle, role: role, now: now)
        guard status == .success else {
            performGAP(actions)
            return
        }
        let connection = HostConnection(link: links.nextID(), handle: handle, role: role, peer: peer,
                                        localAddress: local ?? LEAddress(.zero, type: .public),
                                        interval: interval, latency: latency, supervisionTimeout: timeout)
        var link = Link(connection: connection,
                        reassembler: L2CAPReassembler(maximumPDULength: configuration.maximumL2CAPPDULength),
                        l2cap: makeL2CAPManager(role: role))
        if let bond = bond(with: peer) {
            link.security.current.isBonded = true
            link.security.current.peerIdentity = bond.peer
        }
        link.syncL2CAPSecurity()
        links[handle] = link
        performGAP(actions)
        gatt.driver?.attach(connection, host: self)
        publish(.connected(connection))
    }
}
