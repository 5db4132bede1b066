import BLEWire

/// L2CAP on one LE link: fixed channels by registration, the LE signaling channel, and LE and enhanced credit
/// based channels. Core 5.4, Vol 3, Part A.
///
/// One value per link. Sans-I/O: frames already reassembled from ACL go in through ``receive(_:)``, the consumer's
/// requests through the other methods, and every method returns the ``Action``s to perform in order: frames to send,
/// payloads and SDUs to deliver, channel events, timers to start or cancel. Timers come back through
/// ``timerFired(_:)``; the manager has no clock of its own.
///
/// - Fixed channels (ATT 0x0004, SMP 0x0006, ...) are delivered only once a consumer registered them with
///   ``registerFixedChannel(_:)``; frames for unregistered fixed channels or unknown dynamic CIDs are dropped, as
///   the specification says, and counted in ``droppedFrames``.
/// - Signaling requests are answered here. Our own requests take fresh identifiers 1...255 (never 0) and fail when
///   no response arrives within ``Configuration/signalingTimeout`` (the RTX timer).
/// - Credits: outgoing SDUs are segmented into K-frames and sent while the peer has granted credits; the rest waits
///   and goes out as Flow Control Credit indications arrive (``Action/readyToSend(_:)`` says when the queue is empty
///   again). The credits the peer spends come back to it in batches, whenever its remaining credits fall to half of
///   the channel's initial grant: with ``Configuration/CreditReturn/automatic`` as soon as the K-frames
///   arrive; with ``Configuration/CreditReturn/onConsumption`` once the consumer reports each delivered
///   SDU taken with ``consumed(_:on:)``, so that a slow consumer holds the peer back. Credits spent on an SDU still
///   being reassembled are released whenever the peer runs out, so an SDU longer than the grant always completes;
///   every delivered SDU keeps at least the credit of its last K-frame until it is consumed, so no more SDUs than
///   the initial grant (plus the one being reassembled) ever wait for the consumer. A channel with no initial
///   credits is managed by the consumer alone, with ``grantCredits(_:on:)``.
public struct L2CAPChannelManager: Sendable {
    /// Settings of one manager.
    public struct Configuration: Sendable {
        /// When the credits the peer spent go back to it.
        public enum CreditReturn: Sendable, Hashable {
            /// As soon as the K-frames arrive: the peer is limited by the link only.
            case automatic
            /// Once the consumer took the SDU they carried (``L2CAPChannelManager/consumed(_:on:)``).
            case onConsumption
        }

        /// How long one of our signaling requests waits for its response (RTX, 1–60 s in the specification).
        public var signalingTimeout: Duration
        /// How long an enhanced connection request waits after the peer answered "pending" (ERTX, 60–300 s in the
        /// specification).
        public var extendedSignalingTimeout: Duration
        /// How many dynamic channels (local CIDs 0x0040–0x007F) may exist at once, at most 64.
        public var maximumDynamicChannels: Int
        /// When spent credits go back to the peer.
        public var creditReturn: CreditReturn

        /// Creates a configuration: 30 s RTX, 60 s ERTX, all 64 dynamic CIDs, credits returned automatically.
        public init(signalingTimeout: Duration = .seconds(30), extendedSignalingTimeout: Duration = .seconds(60),
                    maximumDynamicChannels: Int = 64, creditReturn: CreditReturn = .automatic) {
            self.signalingTimeout = signalingTimeout
            self.extendedSignalingTimeout = extendedSignalingTimeout
            self.maximumDynamicChannels = maximumDynamicChannels
            self.creditReturn = creditReturn
        }
    }

    /// What the driver must do, in order.
    public enum Action: Hashable, Sendable {
        /// Send this B-frame (a signaling C-frame, a K-frame or a fixed-channel payload) on the link.
        case send(L2CAPBasicFrame)
        /// A payload arrived on a registered fixed channel.
        case deliverFixed(L2CAPChannelID, [UInt8])
        /// A complete SDU arrived on the credit based channel with this local CID.
        case deliverSDU(L2CAPChannelID, [UInt8])
        /// A credit based channel opened (ours, or one the peer opened to a listening SPSM).
        case channelOpened(L2CAPChannelInfo)
        /// An outgoing connection for this local CID did not open.
        case connectionFailed(L2CAPChannelID, L2CAPConnectionFailure)
        /// An open credit based channel closed; nothing more is sent or delivered on it.
        case channelClosed(L2CAPChannelID, L2CAPChannelCloseReason)
        /// Central: the peripheral's Connection Parameter Update Request was accepted; issue HCI LE Connection Update
        /// with these values.
        case updateConnectionParameters(L2CAPConnectionParameterUpdateRequest)
        /// Peripheral: our Connection Parameter Update Request ended.
        case connectionParameterUpdateFinished(L2CAPConnectionParameterUpdateOutcome)
        /// Our reconfiguration of these channels (local CIDs) ended.
        case reconfigurationFinished([L2CAPChannelID], L2CAPReconfigurationOutcome)
        /// Start a timer; call ``timerFired(_:)`` when it expires.
        case startTimer(L2CAPTimerID, Duration)
        /// Cancel a timer started earlier.
        case cancelTimer(L2CAPTimerID)
        /// Every queued K-frame of this channel went out: a sender waiting for credits may continue.
        case readyToSend(L2CAPChannelID)
    }

    /// A request of ours waiting for its response.
    enum Request: Sendable {
        case leConnect(localCID: UInt16)
        case enhancedConnect(localCIDs: [UInt16])
        case disconnect(localCID: UInt16)
        case parameterUpdate
        case reconfigure(localCIDs: [UInt16], mtu: UInt16, mps: UInt16)
    }

    struct Pending: Sendable {
        var request: Request
        var timer: L2CAPTimerID
    }

    /// This side's role on the link.
    public let role: HCIRole
    /// The settings.
    public let configuration: Configuration
    /// Frames dropped: unregistered fixed channels, unknown or closing dynamic CIDs, signaling commands with
    /// identifier 0 or without a readable header.
    public internal(set) var droppedFrames = 0

    /// The registered fixed channels, one bit per CID (all below 0x0040): asked for every frame, and a bit test costs
    /// what hashing a CID for a `Set` would not.
    var fixedChannels: UInt64 = 0
    var listeners: [L2CAPSPSM: (parameters: L2CAPChannelParameters, security: L2CAPSecurityRequirement)] = [:]
    /// The link's security, which listeners' requirements are checked against (see ``setLinkSecurity(_:)``).
    public private(set) var linkSecurity = L2CAPLinkSecurity()
    var channels: [UInt16: L2CAPCreditBasedChannel] = [:]
    var pending: [UInt8: Pending] = [:]
    private var lastIdentifier: UInt8 = 0
    private var nextTimer: UInt64 = 1

    /// Creates the manager of one link.
    public init(role: HCIRole, configuration: Configuration = Configuration()) {
        self.role = role
        self.configuration = configuration
    }

    // MARK: Queries

    /// The open credit based channel with this local CID.
    public func channel(_ cid: L2CAPChannelID) -> L2CAPChannelInfo? {
        guard let channel = channels[cid.rawValue], channel.state == .open else { return nil }
        return channel.info
    }

    /// The local CIDs of the open credit based channels.
    public var openChannels: [L2CAPChannelID] {
        channels.values.filter { $0.state == .open }.map { L2CAPChannelID(rawValue: $0.localCID) }.sorted { $0.rawValue < $1.rawValue }
    }

    /// K-frames of this channel waiting for the peer's credits.
    public func queuedFrameCount(on cid: L2CAPChannelID) -> Int { channels[cid.rawValue]?.queuedFrameCount ?? 0 }

    /// Credits the peer granted us and we have not used, on this channel.
    public func sendCredits(on cid: L2CAPChannelID) -> Int { channels[cid.rawValue]?.sendCredits ?? 0 }

    /// Our signaling requests waiting for a response.
    public var outstandingRequestCount: Int { pending.count }

    // MARK: Fixed channels

    /// Delivers the frames of a fixed channel (ATT 0x0004, SMP 0x0006, ...) from now on.
    public mutating func registerFixedChannel(_ cid: L2CAPChannelID) throws(L2CAPError) {
        guard cid != .null, cid != .leSignaling, cid.rawValue < 0x0040 else {
            throw L2CAPError(.invalidFixedChannel, "\(cid) is not a fixed channel a consumer can register")
        }
        fixedChannels |= 1 << UInt64(cid.rawValue)
    }

    /// Stops delivering a fixed channel; its frames are dropped again.
    public mutating func unregisterFixedChannel(_ cid: L2CAPChannelID) {
        guard cid.rawValue < 0x0040 else { return }
        fixedChannels &= ~(1 << UInt64(cid.rawValue))
    }

    /// Sends a payload on a fixed channel.
    public func sendFixed(_ payload: [UInt8], on cid: L2CAPChannelID) -> [Action] {
        [.send(L2CAPBasicFrame(channelID: cid, payload: payload))]
    }

    // MARK: Receiving

    /// Takes one frame reassembled from the link's ACL data.
    public mutating func receive(_ frame: L2CAPBasicFrame) -> [Action] {
        let cid = frame.channelID
        if cid == .leSignaling { return receiveSignaling(frame.payload) }
        if cid.isLEDynamic { return receiveKFrame(frame.payload, on: cid.rawValue) }
        guard cid.rawValue < 0x0040, fixedChannels & (1 << UInt64(cid.rawValue)) != 0 else {
            droppedFrames += 1
            return []
        }
        return [.deliverFixed(cid, frame.payload)]
    }

    private mutating func receiveKFrame(_ payload: [UInt8], on cid: UInt16) -> [Action] {
        guard var channel = channels[cid], channel.state == .open else {
            droppedFrames += 1
            return []
        }
        let receipt = channel.receive(payload)
        var actions: [Action] = []
        switch receipt {
        case .violation(let violation):
            channels[cid] = channel
            return closeForViolation(cid, violation)
        case .sdu(let sdu):
            actions.append(.deliverSDU(L2CAPChannelID(rawValue: cid), sdu))
        case .partial:
            break
        }
        if let credits = channel.creditsToReturn() {
            actions.append(signal(.flowControlCredit(identifier: nextIdentifier(), cid: cid, credits: credits)))
        }
        channels[cid] = channel
        return actions
    }

    // MARK: Credit based channels

    /// Records the link's security (after encryption, or when a bond is made or removed): listeners' requirements are
    /// checked against it when a peer opens a channel.
    public mutating func setLinkSecurity(_ security: L2CAPLinkSecurity) { linkSecurity = security }

    /// Accepts incoming LE and enhanced credit based connections to `spsm`, announcing `parameters`. A connection on
    /// a link whose security does not meet `security` is refused with the result that says what is missing.
    public mutating func listen(spsm: L2CAPSPSM, parameters: L2CAPChannelParameters = L2CAPChannelParameters(),
                                security: L2CAPSecurityRequirement = .none) throws(L2CAPError) {
        guard spsm.isValid else { throw L2CAPError(.invalidSPSM, "\(spsm) is outside 0x0001–0x00FF") }
        guard L2CAPChannelParameters.areValid(mtu: parameters.mtu, mps: parameters.mps, enhanced: false) else {
            throw L2CAPError(.invalidParameters, "MTU \(parameters.mtu) / MPS \(parameters.mps) out of range")
        }
        listeners[spsm] = (parameters, security)
    }

    /// Stops accepting connections to `spsm` (open channels stay open).
    public mutating func stopListening(spsm: L2CAPSPSM) { listeners[spsm] = nil }

    /// Opens an LE credit based channel (L2CAP_LE_CREDIT_BASED_CONNECTION_REQ). Returns the channel's local CID;
    /// ``Action/channelOpened(_:)`` or ``Action/connectionFailed(_:_:)`` follows for it.
    public mutating func connect(spsm: L2CAPSPSM, parameters: L2CAPChannelParameters = L2CAPChannelParameters())
        throws(L2CAPError) -> (L2CAPChannelID, [Action]) {
        guard spsm.isValid else { throw L2CAPError(.invalidSPSM, "\(spsm) is outside 0x0001–0x00FF") }
        guard L2CAPChannelParameters.areValid(mtu: parameters.mtu, mps: parameters.mps, enhanced: false) else {
            throw L2CAPError(.invalidParameters, "MTU \(parameters.mtu) / MPS \(parameters.mps) out of range")
        }
        guard let cid = freeLocalCIDs(1).first else {
            throw L2CAPError(.noFreeChannel, "every dynamic CID is in use")
        }
        channels[cid] = L2CAPCreditBasedChannel(state: .connecting, localCID: cid, spsm: spsm, isEnhanced: false,
                                                initiatedLocally: true, local: parameters,
                                                returnsCreditsOnConsumption: configuration.creditReturn == .onConsumption)
        let id = nextIdentifier()
        let request = L2CAPLECreditBasedConnectionRequest(spsm: spsm, sourceCID: cid, mtu: parameters.mtu,
                                                          mps: parameters.mps, initialCredits: parameters.initialCredits)
        let actions = [signal(.leCreditBasedConnectionRequest(identifier: id, request))] + startRequest(id, .leConnect(localCID: cid))
        return (L2CAPChannelID(rawValue: cid), actions)
    }

    /// Opens `count` (1...5) enhanced credit based channels in one L2CAP_CREDIT_BASED_CONNECTION_REQ. Returns their
    /// local CIDs in request order; each gets ``Action/channelOpened(_:)`` or ``Action/connectionFailed(_:_:)``.
    public mutating func connectEnhanced(spsm: L2CAPSPSM, count: Int,
                                         parameters: L2CAPChannelParameters = L2CAPChannelParameters())
        throws(L2CAPError) -> ([L2CAPChannelID], [Action]) {
        guard spsm.isValid else { throw L2CAPError(.invalidSPSM, "\(spsm) is outside 0x0001–0x00FF") }
        guard (1...L2CAPCreditBasedConnectionRequest.maximumChannelCount).contains(count) else {
            throw L2CAPError(.invalidParameters, "an enhanced request opens 1 to 5 channels, not \(count)")
        }
        guard L2CAPChannelParameters.areValid(mtu: parameters.mtu, mps: parameters.mps, enhanced: true) else {
            throw L2CAPError(.invalidParameters, "MTU \(parameters.mtu) / MPS \(parameters.mps) out of range")
        }
        let cids = freeLocalCIDs(count)
        guard cids.count == count else { throw L2CAPError(.noFreeChannel, "not enough free dynamic CIDs") }
        for cid in cids {
            channels[cid] = L2CAPCreditBasedChannel(state: .connecting, localCID: cid, spsm: spsm, isEnhanced: true,
                                                    initiatedLocally: true, local: parameters,
                                                    returnsCreditsOnConsumption: configuration.creditReturn == .onConsumption)
        }
        let id = nextIdentifier()
        let request = L2CAPCreditBasedConnectionRequest(spsm: spsm, mtu: parameters.mtu, mps: parameters.mps,
                                                        initialCredits: parameters.initialCredits, sourceCIDs: cids)
        let actions = [signal(.creditBasedConnectionRequest(identifier: id, request))]
            + startRequest(id, .enhancedConnect(localCIDs: cids))
        return (cids.map { L2CAPChannelID(rawValue: $0) }, actions)
    }

    /// Sends an SDU on an open credit based channel. It is segmented into K-frames of at most the peer's MPS; those
    /// the peer's credits cover go out now, the rest when credits arrive.
    public mutating func send(_ sdu: [UInt8], on cid: L2CAPChannelID) throws(L2CAPError) -> [Action] {
        guard var channel = channels[cid.rawValue], channel.state == .open else {
            throw L2CAPError(.channelNotOpen, "no open channel with local \(cid)")
        }
        guard sdu.count <= Int(channel.peerMTU) else {
            throw L2CAPError(.sduTooLarge, "SDU of \(sdu.count) byte(s) exceeds the peer's MTU \(channel.peerMTU)")
        }
        channel.enqueue(sdu)
        let frames = channel.takeSendable()
        channels[cid.rawValue] = channel
        return frames.map { .send(L2CAPBasicFrame(channelID: L2CAPChannelID(rawValue: channel.remoteCID), payload: $0)) }
    }

    /// The consumer took `count` delivered SDUs of a channel: with ``Configuration/CreditReturn/onConsumption``
    /// the credits they cost go back to the peer (in batches). Does nothing for closed channels or in automatic mode.
    public mutating func consumed(_ count: Int = 1, on cid: L2CAPChannelID) -> [Action] {
        guard var channel = channels[cid.rawValue], channel.state == .open else { return [] }
        channel.consumed(count)
        let credits = channel.creditsToReturn()
        channels[cid.rawValue] = channel
        guard let credits else { return [] }
        return [signal(.flowControlCredit(identifier: nextIdentifier(), cid: cid.rawValue, credits: credits))]
    }

    /// Grants the peer `credits` more K-frames on an open channel (on top of the automatic top-ups), up to a total
    /// of 65535.
    public mutating func grantCredits(_ credits: UInt16, on cid: L2CAPChannelID) throws(L2CAPError) -> [Action] {
        guard var channel = channels[cid.rawValue], channel.state == .open else {
            throw L2CAPError(.channelNotOpen, "no open channel with local \(cid)")
        }
        let granted = channel.grantReceiveCredits(credits)
        channels[cid.rawValue] = channel
        guard granted > 0 else { return [] }
        return [signal(.flowControlCredit(identifier: nextIdentifier(), cid: cid.rawValue, credits: granted))]
    }

    /// Closes an open credit based channel: ``Action/channelClosed(_:_:)`` at once, a Disconnection Request to the
    /// peer, and the CID stays reserved until the peer answers or the request times out.
    public mutating func disconnect(_ cid: L2CAPChannelID) throws(L2CAPError) -> [Action] {
        guard let channel = channels[cid.rawValue], channel.state == .open else {
            throw L2CAPError(.channelNotOpen, "no open channel with local \(cid)")
        }
        return [.channelClosed(cid, .localRequest)] + startDisconnection(channel.localCID)
    }

    /// Announces a new receive MTU and MPS for enhanced channels (L2CAP_CREDIT_BASED_RECONFIGURE_REQ), for example
    /// a larger MTU. The MTU never shrinks; the MPS shrinks only for one channel at a time. The values apply once the
    /// peer accepts; ``Action/reconfigurationFinished(_:_:)`` follows.
    public mutating func reconfigure(_ cids: [L2CAPChannelID], mtu: UInt16, mps: UInt16) throws(L2CAPError) -> [Action] {
        guard (1...L2CAPCreditBasedConnectionRequest.maximumChannelCount).contains(cids.count),
              Set(cids).count == cids.count
        else { throw L2CAPError(.invalidParameters, "a reconfiguration names 1 to 5 distinct channels") }
        guard L2CAPChannelParameters.areValid(mtu: mtu, mps: mps, enhanced: true) else {
            throw L2CAPError(.invalidParameters, "MTU \(mtu) / MPS \(mps) out of range")
        }
        var current: [L2CAPCreditBasedChannel] = []
        for cid in cids {
            guard let channel = channels[cid.rawValue], channel.state == .open, channel.isEnhanced else {
                throw L2CAPError(.channelNotOpen, "no open enhanced channel with local \(cid)")
            }
            current.append(channel)
        }
        guard !current.contains(where: { mtu < $0.local.mtu }) else {
            throw L2CAPError(.invalidParameters, "the MTU of a channel never shrinks")
        }
        guard current.count == 1 || !current.contains(where: { mps < $0.local.mps }) else {
            throw L2CAPError(.invalidParameters, "the MPS shrinks for one channel at a time")
        }
        let id = nextIdentifier()
        let raw = cids.map(\.rawValue)
        return [signal(.creditBasedReconfigureRequest(identifier: id, .init(mtu: mtu, mps: mps, destinationCIDs: raw)))]
            + startRequest(id, .reconfigure(localCIDs: raw, mtu: mtu, mps: mps))
    }

    // MARK: Connection parameters

    /// Peripheral: asks the central for new connection parameters (Connection Parameter Update Request).
    /// ``Action/connectionParameterUpdateFinished(_:)`` follows.
    public mutating func requestConnectionParameterUpdate(_ request: L2CAPConnectionParameterUpdateRequest)
        throws(L2CAPError) -> [Action] {
        guard role == .peripheral else {
            throw L2CAPError(.wrongRole, "only a peripheral sends Connection Parameter Update Request")
        }
        guard request.isValid else { throw L2CAPError(.invalidParameters, "connection parameters out of range") }
        let id = nextIdentifier()
        return [signal(.connectionParameterUpdateRequest(identifier: id, request))] + startRequest(id, .parameterUpdate)
    }

    // MARK: Timers and link loss

    /// A timer started by ``Action/startTimer(_:_:)`` expired.
    public mutating func timerFired(_ timer: L2CAPTimerID) -> [Action] {
        guard let match = pending.first(where: { $0.value.timer == timer }) else { return [] }
        pending[match.key] = nil
        switch match.value.request {
        case .leConnect(let cid):
            return failConnection([cid], .timedOut)
        case .enhancedConnect(let cids):
            return failConnection(cids, .timedOut)
        case .disconnect(let cid):
            // No response: the channel is gone all the same. Core 5.4, Vol 3, Part A, 6.2.1.
            channels[cid] = nil
            return []
        case .parameterUpdate:
            return [.connectionParameterUpdateFinished(.timedOut)]
        case .reconfigure(let cids, _, _):
            return [.reconfigurationFinished(cids.map { L2CAPChannelID(rawValue: $0) }, .timedOut)]
        }
    }

    /// The link went down: every timer is cancelled, every channel closes or fails, and the manager is empty.
    public mutating func linkClosed() -> [Action] {
        var actions: [Action] = pending.values.map { .cancelTimer($0.timer) }
        for entry in pending.values {
            switch entry.request {
            case .parameterUpdate:
                actions.append(.connectionParameterUpdateFinished(.linkClosed))
            case .reconfigure(let cids, _, _):
                actions.append(.reconfigurationFinished(cids.map { L2CAPChannelID(rawValue: $0) }, .linkClosed))
            case .leConnect, .enhancedConnect, .disconnect:
                break
            }
        }
        for cid in channels.keys.sorted() {
            guard let channel = channels[cid] else { continue }
            switch channel.state {
            case .connecting: actions.append(.connectionFailed(L2CAPChannelID(rawValue: cid), .linkClosed))
            case .open: actions.append(.channelClosed(L2CAPChannelID(rawValue: cid), .linkClosed))
            case .disconnecting: break
            }
        }
        pending = [:]
        channels = [:]
        return actions
    }

    // MARK: Helpers

    /// The next signaling identifier: 1...255 in turn, never 0, skipping those of requests still outstanding.
    mutating func nextIdentifier() -> UInt8 {
        for _ in 0..<255 {
            lastIdentifier = lastIdentifier == 0xFF ? 1 : lastIdentifier + 1
            if pending[lastIdentifier] == nil { return lastIdentifier }
        }
        return lastIdentifier
    }

    /// A signaling command as a frame to send.
    func signal(_ pdu: L2CAPSignalingPDU) -> Action {
        .send(L2CAPBasicFrame(channelID: .leSignaling, payload: pdu.encoded))
    }

    /// Records a request of ours and starts its RTX timer (or a timer of `duration`).
    mutating func startRequest(_ id: UInt8, _ request: Request, duration: Duration? = nil) -> [Action] {
        let timer = L2CAPTimerID(value: nextTimer)
        nextTimer &+= 1
        pending[id] = Pending(request: request, timer: timer)
        return [.startTimer(timer, duration ?? configuration.signalingTimeout)]
    }

    /// Removes the outstanding request `id` and cancels its timer.
    mutating func finishRequest(_ id: UInt8) -> [Action] {
        guard let entry = pending.removeValue(forKey: id) else { return [] }
        return [.cancelTimer(entry.timer)]
    }

    /// The lowest `count` free local dynamic CIDs (fewer when the configuration's limit or the range runs out).
    func freeLocalCIDs(_ count: Int) -> [UInt16] {
        let room = min(64, configuration.maximumDynamicChannels) - channels.count
        guard room > 0 else { return [] }
        var cids: [UInt16] = []
        for cid in UInt16(0x0040)...UInt16(0x007F) where channels[cid] == nil {
            cids.append(cid)
            if cids.count == min(count, room) { break }
        }
        return cids
    }

    /// Fails connecting channels and frees their CIDs.
    mutating func failConnection(_ cids: [UInt16], _ failure: L2CAPConnectionFailure) -> [Action] {
        var actions: [Action] = []
        for cid in cids where channels[cid]?.state == .connecting {
            channels[cid] = nil
            actions.append(.connectionFailed(L2CAPChannelID(rawValue: cid), failure))
        }
        return actions
    }

    /// Sends a Disconnection Request for an open channel and waits for the response with the CID reserved.
    mutating func startDisconnection(_ cid: UInt16) -> [Action] {
        guard var channel = channels[cid] else { return [] }
        channel.state = .disconnecting
        channel.dropQueued()
        channels[cid] = channel
        let id = nextIdentifier()
        return [signal(.disconnectionRequest(identifier: id, destinationCID: channel.remoteCID, sourceCID: cid))]
            + startRequest(id, .disconnect(localCID: cid))
    }

    /// The peer broke flow control on `cid`: the channel closes and is disconnected. Core 5.4, Vol 3, Part A, 10.1.
    mutating func closeForViolation(_ cid: UInt16, _ violation: L2CAPChannelViolation) -> [Action] {
        [.channelClosed(L2CAPChannelID(rawValue: cid), .protocolViolation(violation))] + startDisconnection(cid)
    }
}
