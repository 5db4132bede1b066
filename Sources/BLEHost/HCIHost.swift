import BLEProtocols
import BLETransport
import BLEWire
import Logging

/// The host side of one controller: brings it up, sends typed commands under HCI flow control, routes events and
/// ACL data, and runs L2CAP per connection (fixed channels ATT and SMP, LE signaling, LE credit based channels), the
/// Security Manager and GAP.
///
/// One actor per controller, composing one driver per concern: commands (`CommandDriver`), ACL data (`ACLDriver`),
/// the links (`LinkRegistry`), L2CAP (`L2CAPDriver`), the Security Manager (`SecurityManager`) and GAP (`GAPDriver`,
/// running the `GAPProcedures` machine). A single reader task consumes the transport and routes each event to the
/// driver that owns it; every packet for the controller leaves through one outbox (`HCIOutbox`), and handing it
/// over never suspends, so whoever waits for a reply is registered before the request leaves. Every machine the
/// drivers run is sans-I/O and lives in this actor.
public actor HCIHost {
    /// Bring-up and timing settings.
    public struct Configuration: Sendable {
        /// How long a command may stay unanswered.
        public var commandTimeout: Duration = .seconds(5)
        /// Maximum reassembled L2CAP PDU size accepted from a peer.
        public var maximumL2CAPPDULength: Int = 1024
        /// How long an L2CAP signaling request (opening or closing a credit based channel, a connection parameter
        /// update request) waits for its response: the RTX timer, 1–60 s in the specification.
        public var l2capSignalingTimeout: Duration = .seconds(30)
        /// How long closing an LE credit based channel (``L2CAPChannel/close()``) waits, before its Disconnection
        /// Request goes, for the channel's data to be delivered: every K-frame sent under the peer's credits and
        /// reported completed by the controller (Number Of Completed Packets). When the time runs out the channel
        /// closes anyway and the close throws ``HostErrorCode/undeliveredData(_:)`` with the octets not confirmed.
        public var l2capCloseTimeout: Duration = .seconds(5)
        /// Enhanced ATT (Core 5.4, Vol 3, Part G, 2.5 and Part F, 3.2.11): how many EATT bearers (LE enhanced credit
        /// based channels on SPSM 0x0027, at most 5) this host opens, as a GATT client, on an encrypted link to a
        /// server whose Server Supported Features has the EATT bit; 0 turns EATT off. While it is on, the host (not
        /// the application) also accepts a peer's EATT channels, on encrypted links only. Each bearer is one more ATT
        /// bearer of its link: the client's requests spread over them and the server answers each on its own. An
        /// application listening on SPSM 0x0027 itself (``HCIHost/listen(spsm:parameters:security:)``) takes the
        /// incoming channels instead.
        public var enhancedATTBearers: Int = 3
        /// How long ``HCIHost/disconnect(_:reason:)`` waits, before HCI Disconnect goes, for the controller to complete
        /// the ACL data the host had queued on the link (a controller that disconnects discards what it holds). When
        /// the time runs out the link is disconnected anyway and the returned ``DeliveryOutcome`` says how many
        /// packets were not confirmed. A link the peer or the controller ends does not wait.
        public var disconnectTimeout: Duration = .seconds(5)
        /// How long ``HCIHost/powerOff()`` gives its links, all together, before the transport closes: for the ACL
        /// data queued on them to be completed, then for HCI Disconnect (Remote Device Terminated Connection due to
        /// Power Off) to be answered by Disconnection Complete. The peers hear the link end at once instead of after
        /// their supervision timeout. When the time runs out the transport closes with the links still up.
        public var powerOffTimeout: Duration = .seconds(2)
        /// Pairing, encryption and bonding.
        public var security = SecurityConfiguration()
        /// The defaults: 5 s command timeout, 1024-byte L2CAP PDUs, 30 s L2CAP signaling timeout, 5 s for a channel's
        /// or a link's data to be delivered before it closes, the default ``SecurityConfiguration``.
        public init() {}
    }

    let transport: any HCITransport
    /// The transport's clock, which every timer of this host runs on (the air's, for a virtual controller on a
    /// manual clock; the wall clock otherwise). A wait measured in the link's time (rather than the wall's) sleeps
    /// on it.
    public nonisolated let clock: any TransportClock
    let configuration: Configuration
    let logger = Logger(label: "ble.host")
    /// Where every packet for the controller goes, without suspending the sender.
    let outbox: HCIOutbox

    /// HCI commands: the flow, each command's completion and timeout.
    var commands: CommandDriver
    /// ACL data: the controller's buffers and the senders waiting for room.
    var acl = ACLDriver()
    /// The links up now.
    var links = LinkRegistry()
    /// L2CAP's host-wide state: listeners and RTX timers.
    var l2cap = L2CAPDriver()
    /// The Security Manager: pairing, encryption and bonds, over each link's security state.
    var securityManager: SecurityManager
    /// Subscribers of ``events()``.
    var hub = EventHub()
    /// What the host knows of its controller.
    var controller = ControllerState()
    /// The GATT driver of this host's links, once GATT was used (see ``gattDriver()``), and its cache.
    var gatt = SharedGATT()
    /// The task reading the transport.
    var reader: Task<Void, Never>?
    /// Scanning, advertising, connection setup and this side's own address.
    var gap: GAPDriver
    /// The adapter state.
    public var state: AdapterState { controller.state }
    /// The controller's public address (after bring-up); `nil` when it has none.
    public var publicAddress: BluetoothAddress? { controller.publicAddress }
    /// This host's identity address: the public address, or a random static address when the controller has no
    /// public one (Read BD_ADDR returned zero: Core 5.4, Vol 4, Part E, 7.4.6). Bonds belong to it. Without privacy
    /// the host advertises, scans and connects with it; with ``SecurityConfiguration/privacy`` on, peers see
    /// ``privateAddress`` instead (Core 5.4, Vol 3, Part C, 10.7).
    public var ownAddress: LEAddress? { controller.ownAddress }
    /// The identity address's 48 bits (``ownAddress``).
    public var address: BluetoothAddress? { ownAddress?.address }
    /// With ``SecurityConfiguration/privacy`` on, the resolvable private address this host advertises, scans and
    /// connects with now (Core 5.4, Vol 6, Part B, 1.3.2.2); `nil` with privacy off, and before the first
    /// advertising, scan or connection sets one.
    public var privateAddress: LEAddress? { gap.machine.privateAddress }
    /// The controller's ACL buffers (after bring-up).
    public var aclBuffers: (size: Int, count: Int) { (acl.flow.bufferSize, acl.flow.bufferCount) }
    /// The controller's supported commands (after bring-up): ``capabilities``' ``ControllerCapabilities/supportedCommands``.
    public var supportedCommands: HCISupportedCommands { controller.capabilities.supportedCommands }
    /// What the controller can do, as read when it powered on (version, commands, features, buffers, limits); before
    /// power-on, nothing is known. The host sends no command it does not list (``ControllerCapabilities/allows(_:)``).
    public var capabilities: ControllerCapabilities { controller.capabilities }
    /// Frames received on fixed channels nobody handles, or that could not be decoded.
    public var droppedFrames: Int { controller.droppedFrames }
    /// Why the transport could not be opened, for a host created with ``init(unavailable:)``.
    public var unavailableReason: TransportError? { controller.unavailableReason }
    /// Whether GATT client procedures refused for security pair and run again (see ``setPairsOnDemand(_:)``).
    public var pairsOnDemand: Bool { securityManager.pairsOnDemand }

    /// Creates a host over `transport`. Call ``powerOn()`` to bring the controller up.
    public init(transport: any HCITransport, configuration: Configuration = Configuration()) {
        self.transport = transport
        self.configuration = configuration
        self.outbox = HCIOutbox(transport)
        let clock = transport.clock
        self.clock = clock
        self.commands = CommandDriver(timeout: configuration.commandTimeout)
        self.securityManager = SecurityManager(settings: configuration.security, logger: Logger(label: "ble.host"), clock: clock)
        self.gap = GAPDriver(configuration: .init(privacy: configuration.security.privacy,
                                                  privateAddressInterval: configuration.security.privateAddressInterval),
                             logger: Logger(label: "ble.host"))
        commands.timers.clock = clock
        acl.drainTimers.clock = clock
        l2cap.timers.clock = clock
        gap.timers.clock = clock
    }

    /// A host whose transport could not be opened: its state says why (`unauthorized` when the operating system
    /// denied access, `unsupported` otherwise) and every operation fails with `notPoweredOn`.
    public init(unavailable error: TransportError) {
        let (closed, _) = HCIPipe.makePair()
        self.transport = closed
        self.clock = closed.clock
        self.configuration = Configuration()
        self.outbox = HCIOutbox(closed)
        self.commands = CommandDriver(timeout: configuration.commandTimeout)
        self.securityManager = SecurityManager(settings: configuration.security, logger: Logger(label: "ble.host"))
        self.gap = GAPDriver(configuration: .init(privacy: configuration.security.privacy,
                                                  privateAddressInterval: configuration.security.privateAddressInterval),
                             logger: Logger(label: "ble.host"))
        self.controller.state = error.code == .permissionDenied ? .unauthorized : .unsupported
        self.controller.unavailableReason = error
    }

    // MARK: Bring-up

    /// Starts reading the transport and brings the controller up: reset, event masks, buffer sizes, address.
    /// The state goes `resetting` → `poweredOn` (or `unsupported` when the controller does not do LE).
    public func powerOn() async throws {
        if let unavailableReason { throw HostError(.notPoweredOn, "the controller is unavailable: \(unavailableReason)") }
        if reader == nil {
            outbox.onFailure { [weak self] error in await self?.transportEnded(error) }
            let transport = transport
            if let inbox = (transport as? any HCIPacketInboxProviding)?.takeInbox() {
                // In process: every packet queued since the last wake-up is handled in one step of this actor.
                reader = Task { [weak self] in
                    do {
                        while let batch = try await inbox.next() {
                            guard let self else { return }
                            await self.receive(batch)
                        }
                        await self?.transportEnded(nil)
                    } catch {
                        await self?.transportEnded(error)
                    }
                }
            } else {
                reader = Task { [weak self] in
                    do {
                        for try await packet in transport.incoming {
                            guard let self else { return }
                            await self.receive(packet)
                        }
                        await self?.transportEnded(nil)
                    } catch {
                        await self?.transportEnded(error)
                    }
                }
            }
        }
        // On a running controller this is a reset in place: HCI Reset makes the controller forget its links without
        // a Disconnection Complete (Core 5.4, Vol 4, Part E, 7.3.2), so they end here, as do the scans.
        for link in links.removeAll() { tearDown(link, reason: .connectionTerminatedByLocalHost, "the controller was reset") }
        acl.wakeSenders()
        gap.endScanStreams(throwing: HostError(.notPoweredOn, "the controller was reset"))
        setState(.resetting)
        do {
            try await bringUp()
            setState(.poweredOn)
        } catch let error as HostError {
            if case .transportClosed = error.code { setState(.poweredOff) } else { setState(.unsupported) }
            throw error
        }
    }

    private func bringUp() async throws {
        performGAP(gap.machine.controllerLost())
        controller.capabilities = ControllerCapabilities()
        _ = try await send(HCIReset())
        var found = ControllerCapabilities()
        do {
            found.supportedCommands = try await send(HCIReadLocalSupportedCommands()).supportedCommands
            found.commandSource = .controller
        } catch let error as HostError where error.code != .transportClosed {
            // Every LE controller should answer (the command dates from 1.2); one that does not is taken for a bare
            // Core 4.0 LE controller: the host sends it only what 4.0 requires, and tries nothing later.
            logger.info("the controller did not answer Read Local Supported Commands (\(error.reason)); assuming Core 4.0 LE commands")
            found.supportedCommands = ControllerCapabilities.bluetooth40Commands
            found.commandSource = .assumed
        }
        // From here on, the host sends only what the controller lists.
        controller.capabilities = found
        try await readCapabilities(into: &found)
        controller.capabilities = found
        let bdAddr = found.allows(.readBDADDR) ? try await send(HCIReadBDADDR()).address : .zero
        if bdAddr != .zero {
            controller.publicAddress = bdAddr
            controller.ownAddress = LEAddress(bdAddr, type: .public)
        } else {
            // No public address: a random static one, from the controller's random numbers. Core 5.4, Vol 6, Part B, 1.3.2.1.
            controller.publicAddress = nil
            var candidate: LEAddress?
            for _ in 0..<4 where candidate?.isValid != true {
                let random = try await send(HCILERand()).randomNumber
                candidate = LEAddress.randomStatic((0..<6).map { UInt8(truncatingIfNeeded: random >> (8 * UInt64($0))) })
            }
            guard let chosen = candidate, chosen.isValid else {
                throw HostError(.malformedResponse(.leRand), "could not derive a valid random static address")
            }
            _ = try await send(HCILESetRandomAddress(address: chosen.address))
            controller.ownAddress = chosen
        }
        controller.capabilities.publicAddress = controller.publicAddress
        gap.machine.identityAddress = controller.ownAddress
    }

    /// Reads what the controller can do (each command only when listed) and sets the event masks and the ACL
    /// buffers. Throws when the controller does not do LE or gives no buffer sizes.
    private func readCapabilities(into found: inout ControllerCapabilities) async throws {
        if found.allows(.readLocalVersionInformation), let v = try? await send(HCIReadLocalVersionInformation()) {
            found.version = .init(hciVersion: HCIVersion(rawValue: v.hciVersion), hciRevision: v.hciSubversion,
                                  lmpVersion: HCIVersion(rawValue: v.lmpVersion), lmpSubversion: v.lmpSubversion,
                                  company: CompanyIdentifier(rawValue: v.companyIdentifier))
        }
        if found.allows(.readLocalSupportedFeatures) {
            found.lmpFeatures = try await send(HCIReadLocalSupportedFeatures()).features
            guard found.lmpFeatures & (1 << 38) != 0 else {
                throw HostError(.commandFailed(.readLocalSupportedFeatures, .unsupportedFeatureOrParameterValue),
                                "the controller does not support LE")
            }
        }
        // Disconnection Complete, Encryption Change, Hardware Error, Data Buffer Overflow, Key Refresh, LE Meta.
        _ = try await send(HCISetEventMask(mask: 1 << 4 | 1 << 7 | 1 << 15 | 1 << 25 | 1 << 47 | 1 << 61))
        // Connection Complete, Advertising Report, Update Complete, Remote Features, LTK Request, Data Length Change,
        // Enhanced Connection Complete, PHY Update Complete, Extended Advertising Report, Scan Timeout, Advertising Set
        // Terminated.
        _ = try await send(HCILESetEventMask(mask: 0x1F | 1 << 6 | 1 << 9 | 1 << 11 | 1 << 12 | 1 << 16 | 1 << 17))
        if found.allows(.leReadLocalSupportedFeatures) {
            found.leFeatures = try await send(HCILEReadLocalSupportedFeatures()).features
        }
        let buffers = try await readBuffers(found)
        found.buffers = buffers
        acl.flow = ACLFlow(bufferSize: buffers.aclPacketLength, bufferCount: buffers.aclPacketCount)
        if found.allows(.leReadMaximumDataLength) {
            let m = try await send(HCILEReadMaximumDataLength())
            found.maximumDataLength = .init(maxTxOctets: Int(m.supportedMaxTxOctets), maxTxTime: Int(m.supportedMaxTxTime),
                                            maxRxOctets: Int(m.supportedMaxRxOctets), maxRxTime: Int(m.supportedMaxRxTime))
        }
        if found.allows(.leReadFilterAcceptListSize) {
            found.filterAcceptListSize = Int(try await send(HCILEReadFilterAcceptListSize()).size)
        }
        if found.allows(.leReadResolvingListSize) {
            found.resolvingListSize = Int(try await send(HCILEReadResolvingListSize()).size)
        }
        // Extended advertising (only with every extended command listed: the host never mixes the two kinds, and
        // these reads are extended commands). Core 5.4, Vol 4, Part E, 3.1.1.
        if found.supportsExtendedAdvertising {
            if found.allows(.leReadMaximumAdvertisingDataLength) {
                found.maximumAdvertisingDataLength = Int(try await send(HCILEReadMaximumAdvertisingDataLength()).maximumLength)
            }
            if found.allows(.leReadNumberOfSupportedAdvertisingSets) {
                found.advertisingSetCount = Int(try await send(HCILEReadNumberOfSupportedAdvertisingSets()).count)
            }
        }
        gap.machine.usesExtendedCommands = found.supportsExtendedAdvertising
    }

    /// The LE ACL buffers: LE Read Buffer Size [v2] when listed, else [v1]; either answering 0 (LE shares the BR/EDR
    /// buffers), or neither listed, Read Buffer Size. Core 5.4, Vol 4, Part E, 7.8.2 and 7.4.5.
    private func readBuffers(_ found: ControllerCapabilities) async throws -> ControllerCapabilities.Buffers {
        var le: ControllerCapabilities.Buffers?
        if found.allows(.leReadBufferSizeV2) {
            let v2 = try await send(HCILEReadBufferSizeV2())
            le = .init(aclPacketLength: Int(v2.leACLDataPacketLength), aclPacketCount: Int(v2.totalNumLEACLDataPackets),
                       isoPacketLength: Int(v2.isoDataPacketLength), isoPacketCount: Int(v2.totalNumISODataPackets),
                       source: .leReadBufferSizeV2)
        } else if found.allows(.leReadBufferSize) {
            let v1 = try await send(HCILEReadBufferSize())
            le = .init(aclPacketLength: Int(v1.leACLDataPacketLength), aclPacketCount: Int(v1.totalNumLEACLDataPackets),
                       source: .leReadBufferSizeV1)
        }
        if var le, le.aclPacketLength > 0, le.aclPacketCount > 0 {
            le.aclPacketLength = min(le.aclPacketLength, 0xFFFF)
            return le
        }
        guard found.allows(.readBufferSize) else {
            throw found.unsupported(.command(.leReadBufferSize))
        }
        let shared = try await send(HCIReadBufferSize())
        guard shared.aclDataPacketLength > 0, shared.totalNumACLDataPackets > 0 else {
            throw HostError(.malformedResponse(.readBufferSize), "the controller reports no ACL buffers")
        }
        return .init(aclPacketLength: Int(shared.aclDataPacketLength), aclPacketCount: Int(shared.totalNumACLDataPackets),
                     isoPacketLength: le?.isoPacketLength ?? 0, isoPacketCount: le?.isoPacketCount ?? 0, source: .readBufferSize)
    }

    /// Ends every link (``disconnectAll(reason:within:)``, with Remote Device Terminated Connection due to Power Off,
    /// within ``Configuration/powerOffTimeout``), then closes the transport; the state becomes `poweredOff`.
    public func powerOff() async {
        let stillUp = await disconnectAll(reason: .remoteDeviceTerminatedPowerOff, within: configuration.powerOffTimeout)
        if !stillUp.isEmpty {
            logger.warning("powering off with \(stillUp.count) link(s) still up: the controller did not end them in \(configuration.powerOffTimeout)")
        }
        await transport.close()
        transportEnded(nil)
    }

    /// Disconnects every link at once and waits, at most `timeout` in all on the host's ``clock``, for the controller
    /// to complete the ACL data queued on each (as ``disconnect(_:reason:)`` does) and then to report each link's
    /// Disconnection Complete. Returns the links still up when the time ran out (none when every one ended).
    @discardableResult
    public func disconnectAll(reason: HCIStatus = .remoteUserTerminatedConnection, within timeout: Duration) async -> [HostConnection] {
        let connections = links.connections
        guard !connections.isEmpty, state == .poweredOn else { return connections }
        // Subscribed before the first HCI Disconnect leaves: no Disconnection Complete can come unheard.
        let events = self.events()
        let clock = self.clock
        enum Step { case allEnded, timeUp, sent }
        await withTaskGroup(of: Step.self) { group in
            group.addTask {
                var waiting = Set(connections.map(\.link))
                for await event in events {
                    guard case .disconnected(let connection, _) = event else { continue }
                    waiting.remove(connection.link)
                    if waiting.isEmpty { return .allEnded }
                }
                return .allEnded   // the stream ended: the host is going away
            }
            group.addTask {
                try? await clock.sleep(for: timeout)
                return .timeUp
            }
            for connection in connections {
                group.addTask {
                    await self.disconnectForPowerOff(connection, reason: reason, within: timeout)
                    return .sent
                }
            }
            // The first of "every link ended" and "the time ran out" ends the wait; the rest are cancelled.
            for await step in group where step != .sent { break }
            group.cancelAll()
        }
        return links.connections.filter { connection in connections.contains { $0.link == connection.link } }
    }

    /// One link's part of ``disconnectAll(reason:within:)``: its queued data completed (or the time ran out), then HCI
    /// Disconnect, whose outcome comes as Disconnection Complete.
    private func disconnectForPowerOff(_ connection: HostConnection, reason: HCIStatus, within timeout: Duration) async {
        guard current(connection.handle, is: connection.link) else { return }
        let outcome = await awaitDelivery(on: connection.handle, timeout: timeout)
        guard current(connection.handle, is: connection.link) else { return }
        if outcome != .completed {
            logger.warning("\(connection.link): disconnecting with \(outcome.unconfirmedPackets) ACL packet(s) not completed by the controller")
        }
        submit(HCIDisconnect(handle: connection.handle, reason: reason)) { _ in }
    }

    // MARK: Commands

    /// Sends a typed command and returns its return parameters once the controller answers (Command Complete), or
    /// once it accepts it (Command Status, for commands whose outcome comes in a later event).
    ///
    /// - Throws: ``HostError``; ``HostErrorCode/unsupportedByController(_:)`` (`.command(opcode)`) without sending
    ///   anything when the controller does not list the command.
    public func send<C: HCICommand>(_ command: C) async throws -> C.ReturnParameters {
        guard controller.capabilities.allows(C.opcode) else { throw controller.capabilities.unsupported(.command(C.opcode)) }
        let outcome = await withCheckedContinuation { continuation in
            submit(command) { continuation.resume(returning: $0) }
        }
        return try returnParameters(of: C.self, outcome)
    }

    /// Queues `command` for the controller; `completion` gets its outcome, in this actor, while the event (timeout,
    /// reset) that ended it is handled. Never suspends: what waits for the outcome is in place before the command
    /// leaves.
    ///
    /// The gate: a command the controller does not list is not sent; `completion` gets Unknown HCI Command (what the
    /// controller would have answered) in a later step of this actor, never inside the caller's.
    func submit<C: HCICommand>(_ command: C, then completion: @escaping CommandDriver.Completion) {
        guard controller.capabilities.allows(C.opcode) else {
            logger.debug("not sending \(C.self): the controller does not list it")
            Task { [self] in refused(completion) }
            return
        }
        perform(commands.submit(command, then: completion))
    }

    /// Ends a command the gate kept back as the controller would have.
    private func refused(_ completion: CommandDriver.Completion) { completion(.failed(.unknownCommand)) }

    /// A command's return parameters from its outcome, or the error it ended with.
    func returnParameters<C: HCICommand>(of command: C.Type, _ outcome: HCICommandFlow.Outcome) throws -> C.ReturnParameters {
        switch outcome {
        case .complete(let bytes):
            do {
                return try C.ReturnParameters(bytes: bytes)
            } catch {
                throw HostError(.malformedResponse(C.opcode), "\(C.self): return parameters do not decode: \(error)")
            }
        case .pending:
            do {
                return try C.ReturnParameters(bytes: [HCIStatus.success.rawValue])
            } catch {
                throw HostError(.malformedResponse(C.opcode), "\(C.self) completes with Command Status")
            }
        case .failed(let status):
            throw HostError(.commandFailed(C.opcode, status), "\(C.self) failed: \(status)")
        case .timedOut:
            throw HostError(.commandTimedOut(C.opcode), "\(C.self): no answer from the controller within \(configuration.commandTimeout)")
        case .cancelled:
            throw HostError(.transportClosed, "\(C.self): the transport closed")
        }
    }

    /// Sends a command whose outcome nobody awaits: for commands the packet-reading path sends (LE Connection Update
    /// after a signaling request, LTK Negative Reply...). A failure is logged; when the command starts the link
    /// `encrypting`'s encryption (LE Enable Encryption, the LTK request's reply), its refusal ends that encryption,
    /// which then gets no Encryption Change.
    func submitDetached<C: HCICommand>(_ command: C, encrypting handle: ConnectionHandle? = nil) {
        let link = handle.flatMap { links[$0]?.connection.link }
        submit(command) { [self] outcome in
            let refusal: HCIStatus
            switch outcome {
            case .complete, .pending, .cancelled:
                return
            case .failed(let status):
                logger.info("\(C.self) failed: \(status)")
                refusal = status
            case .timedOut:
                logger.warning("\(C.self): no answer from the controller")
                refusal = .unspecifiedError
            }
            if let handle, let link { encryptionRefused(handle: handle, link: link, status: refusal) }
        }
    }

    /// Carries out the command flow's actions.
    func perform(_ actions: [HCICommandFlow.Action]) {
        for action in actions {
            switch action {
            case .send(let packet):
                guard write([.command(packet)]) else { return }
            case .startTimer(let token, let duration):
                commands.timers.start(token, after: duration) { [weak self] firing in await self?.commandTimerFired(firing) }
            case .cancelTimer(let token):
                commands.timers.cancel(token)
            case .finish(let token, let outcome):
                commands.completion(of: token)?(outcome)
            }
        }
    }

    private func commandTimerFired(_ firing: TimerSet<HCICommandFlow.Token>.Firing) {
        guard commands.timers.expire(firing) else { return }
        perform(commands.timedOut(firing.key))
    }

    /// Hands packets to the outbox; when the transport refuses them, the transport has ended (and `false` says so).
    @discardableResult
    func write(_ packets: [HCIPacket]) -> Bool {
        do {
            try outbox.write(packets)
            return true
        } catch {
            transportEnded(error)
            return false
        }
    }

    // MARK: Events

    /// A stream of host events (state changes, connections, disconnections...). Each call is a new subscriber.
    public func events() -> AsyncStream<HostEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: HostEvent.self)
        let id = hub.add(continuation)
        continuation.onTermination = { [weak self] _ in Task { await self?.unsubscribe(id) } }
        continuation.yield(.stateChanged(state))
        return stream
    }

    private func unsubscribe(_ id: Int) { hub.remove(id) }

    func publish(_ event: HostEvent) { hub.publish(event) }

    func setState(_ new: AdapterState) {
        guard new != state else { return }
        controller.state = new
        publish(.stateChanged(new))
    }

    /// Packets from the controller, in order, in one step of this actor (as far as none suspends).
    /// Advertising reports for a scan that takes batches go up once the packets are handled (``flushReports()``).
    func receive(_ packets: [HCIPacket]) async {
        for packet in packets {
            if let event = receiveNow(packet) { await handle(event) }
        }
        flushReports()
    }

    func receive(_ packet: HCIPacket) async {
        if let event = receiveNow(packet) { await handle(event) }
        flushReports()
    }

    /// What of a packet needs no suspension, done in place: ACL data, command replies, and Number Of Completed
    /// Packets (the data path, both ways). Returns the event still to be handled, if any.
    private func receiveNow(_ packet: HCIPacket) -> HCIEvent? {
        switch packet {
        case .event(let raw):
            let event: HCIEvent
            do {
                event = try HCIEvent(packet: raw)
            } catch {
                logger.warning("undecodable event \(raw.code): \(error)")
                return nil
            }
            let (consumed, actions) = commands.receive(event)
            perform(actions)
            if consumed { return nil }
            if case .numberOfCompletedPackets = event {
                completedPackets(event)
                return nil
            }
            return event
        case .acl(let acl):
            receiveACL(acl)
            return nil
        case .command, .other:
            return nil
        }
    }

    /// Number Of Completed Packets: the flow releases what waited for the controller's buffers, and senders that
    /// waited for queue room go on.
    private func completedPackets(_ event: HCIEvent) {
        let released = acl.flow.receive(event)
        acl.wakeSenders()
        sendACL(released)
        if !acl.drain.isEmpty { performDrain(acl.drain.completed(flow: acl.flow)) }
    }

    private func handle(_ event: HCIEvent) async {
        switch event {
        case .numberOfCompletedPackets:
            completedPackets(event)
        case .disconnectionComplete(let e):
            // The link's teardown first, while the flow still knows what the controller completed on it (the
            // delivery of its channels' data, the waits for it); then the flow forgets the link.
            if let link = links.remove(e.handle) {
                tearDown(link, reason: e.reason, "the link went down")
                performGAP(gap.machine.disconnected(role: link.connection.role, now: now))
            }
            let released = acl.flow.receive(event)
            acl.wakeSenders()
            sendACL(released)
        case .encryptionChange(let e):
            encryptionChanged(handle: e.handle, status: e.status, enabled: e.encryptionEnabled != 0)
        case .encryptionKeyRefreshComplete(let e):
            encryptionChanged(handle: e.handle, status: e.status, enabled: true)
        case .hardwareError(let e):
            logger.error("controller hardware error 0x\([e.hardwareCode].hexString()); resetting")
            await recoverFromHardwareError()
        case .dataBufferOverflow:
            logger.error("controller reports an ACL buffer overflow")
        case .le(let le):
            await handleLE(le)
        case .commandComplete, .commandStatus, .unknown:
            break
        }
    }

    private func recoverFromHardwareError() async {
        for link in links.removeAll() { tearDown(link, reason: .hardwareFailure, "the controller was reset") }
        acl.wakeSenders()
        gap.endScanStreams(throwing: HostError(.transportClosed, "controller reset after a hardware error"))
        performGAP(gap.machine.controllerLost())
        setState(.resetting)
        perform(commands.reset())
        Task { [weak self] in
            do {
                try await self?.bringUp()
                await self?.setState(.poweredOn)
            } catch {
                await self?.setState(.unsupported)
            }
        }
    }

    func transportEnded(_ error: (any Error)?) {
        if let error { logger.warning("transport ended: \(error)") }
        outbox.close()
        // GAP first: its procedures end here, so the commands' cancellations below start no next procedure.
        gap.endScanStreams(throwing: HostError(.transportClosed, "the transport closed"))
        performGAP(gap.machine.controllerLost())
        for case .finish(let token, let outcome) in commands.reset() { commands.completion(of: token)?(outcome) }
        for link in links.removeAll() { tearDown(link, reason: .connectionTimeout, "the controller was reset") }
        acl.wakeSenders()
        setState(.poweredOff)
    }

    /// The one teardown of a link, whatever ended it (its disconnection, a controller reset, the transport's end): its
    /// fixed-channel consumers finish, its waiters fail, its L2CAP channels and Security Manager close, and
    /// `.disconnected` is published. The link is already out of ``links``.
    func tearDown(_ link: Link, reason: HCIStatus, _ why: String) {
        let handle = link.connection.handle
        for delivery in link.deliveries.values { delivery.confirm(completedThrough: acl.flow.completedTotal(handle: handle)) }
        performDrain(acl.drain.linkClosed(handle: handle, flow: acl.flow))
        let id = link.connection.link
        for handler in link.fixed.allHandlers {
            switch handler {
            case .stream(let stream): stream.continuation.finish()
            case .gatt: gatt.driver?.attChannelEnded(id, host: self)
            case .signaling, .securityManager, .held: break
            }
        }
        for waiter in link.phyWaiters.values { waiter.resume(throwing: HostError(.notConnected, why)) }
        for waiter in link.updateWaiters.values { waiter.resume(throwing: HostError(.notConnected, why)) }
        closeL2CAP(link)
        closeSecurity(link)
        publish(.disconnected(link.connection, reason: reason))
    }
}
