import BLEProtocols
import BLEWire

/// An LE credit based channel on one link. Core 5.4, Vol 3, Part A, 10.1.
///
/// Incoming SDUs arrive in order on ``incoming``, which finishes when the channel closes (either side, a protocol
/// violation, or link loss). ``send(_:)`` returns once every K-frame of the SDU went out under the peer's credits,
/// queued for the controller; ``close()`` waits until the controller confirmed all of it before the channel closes,
/// and says when it could not.
public struct L2CAPChannel: Sendable {
    /// The channel as the link's L2CAP manager reported it when it opened.
    public let info: L2CAPChannelInfo
    /// The link's connection handle.
    public let handle: ConnectionHandle
    /// The SDUs the peer sends, in order. Taking one returns the credits it cost to the peer: a consumer that stops
    /// reading stops the peer.
    public let incoming: L2CAPIncomingSDUs
    /// The link's identity (the channel never moves to a newer link that got the same handle).
    public let link: LinkID
    let host: HCIHost
    /// The octets sent on the channel and confirmed by the controller.
    let delivery: ChannelDelivery

    /// This side's CID.
    public var localCID: L2CAPChannelID { info.localCID }
    /// The largest SDU the peer accepts.
    public var peerMTU: Int { Int(info.peerMTU) }

    /// Sends one SDU (at most ``peerMTU`` bytes). Waits while the link's controller queue is full and while the peer
    /// has no credits for the SDU's K-frames; throws when the channel closes meanwhile, and `CancellationError` when
    /// the calling task is cancelled while waiting for credits (the SDU still goes out whole as credits arrive).
    public func send(_ sdu: [UInt8]) async throws { try await host.sendSDU(sdu, on: self) }

    /// Closes the channel once what was sent on it is delivered, and returns what was: ``incoming`` finishes, and the
    /// Disconnection Request goes after every K-frame of the SDUs sent went to the controller (under the peer's
    /// credits) and the controller reported them completed (Number Of Completed Packets), or after the host's
    /// ``HCIHost/Configuration/l2capCloseTimeout`` (5 s by default), whichever comes first. No new SDU is accepted
    /// meanwhile. A cancelled caller stops waiting and closes at once.
    ///
    /// Throws ``HostErrorCode/undeliveredData(_:)`` when some octets sent were not confirmed: the wait ran out (the
    /// channel is closed all the same, and what was still queued is dropped), or the link or the peer closed the channel
    /// first. Closing a channel that is already closed returns (or throws) its delivery as it stands.
    @discardableResult
    public func close() async throws -> L2CAPDelivery { try await host.closeL2CAPChannel(self, within: nil) }

    /// Closes the channel as ``close()`` does, waiting at most `timeout` for its data to be delivered.
    @discardableResult
    public func close(within timeout: Duration) async throws -> L2CAPDelivery { try await host.closeL2CAPChannel(self, within: timeout) }
}

/// The SDUs arriving on an ``L2CAPChannel``, in order. Each SDU taken from the sequence returns the credits its
/// K-frames cost to the peer, so at most the channel's initial credits' worth of SDUs ever waits here.
public struct L2CAPIncomingSDUs: AsyncSequence, Sendable {
    public typealias Element = [UInt8]
    let stream: AsyncStream<[UInt8]>
    let consumed: @Sendable () async -> Void

    public func makeAsyncIterator() -> Iterator { Iterator(base: stream.makeAsyncIterator(), consumed: consumed) }

    /// Takes SDUs one at a time and reports each one consumed.
    public struct Iterator: AsyncIteratorProtocol {
        var base: AsyncStream<[UInt8]>.Iterator
        let consumed: @Sendable () async -> Void

        /// The next SDU, or `nil` once the channel closed.
        public mutating func next() async -> [UInt8]? {
            guard let sdu = await base.next() else { return nil }
            await consumed()
            return sdu
        }
    }
}

/// A consumer of incoming LE credit based connections to one SPSM.
struct L2CAPListener: Sendable {
    var id: Int
    var parameters: L2CAPChannelParameters
    var security: L2CAPSecurityRequirement
    var continuation: AsyncStream<L2CAPChannel>.Continuation
}

/// The outcomes of the channels one enhanced credit based request opens, gathered in request order; the last one
/// hands them all on. Used in the host's isolation only.
final class OpenOutcomes {
    private var outcomes: [Result<L2CAPChannel, any Error>?]
    private var missing: Int
    private let done: ([Result<L2CAPChannel, any Error>]) -> Void

    init(count: Int, done: @escaping ([Result<L2CAPChannel, any Error>]) -> Void) {
        outcomes = Array(repeating: nil, count: count)
        missing = count
        self.done = done
    }

    func record(_ outcome: Result<L2CAPChannel, any Error>, at index: Int) {
        guard outcomes.indices.contains(index), outcomes[index] == nil else { return }
        outcomes[index] = outcome
        missing -= 1
        if missing == 0 { done(outcomes.compactMap { $0 }) }
    }
}

/// An RTX timer of one link's L2CAP manager.
struct L2CAPTimerKey: Hashable, Sendable {
    var link: LinkID
    var timer: L2CAPTimerID
}

/// LE credit based channels on the links of this host, and the driver of every link's ``L2CAPChannelManager``.
extension HCIHost {
    // MARK: Public API

    /// Accepts LE credit based connections to `spsm` on every link, now and later. Each channel a peer opens is
    /// delivered on the returned stream. Listening again on the same SPSM replaces the earlier listener (its stream
    /// finishes).
    public func listen(spsm: L2CAPSPSM, parameters: L2CAPChannelParameters = L2CAPChannelParameters(),
                       security: L2CAPSecurityRequirement = .none) throws -> AsyncStream<L2CAPChannel> {
        try checkReceivable(parameters)
        var probe = L2CAPChannelManager(role: .central)
        do {
            try probe.listen(spsm: spsm, parameters: parameters, security: security)
        } catch {
            throw HostError(.l2cap(error.code), error.reason)
        }
        let (stream, continuation) = AsyncStream.makeStream(of: L2CAPChannel.self)
        let id = l2cap.newListenerID()
        l2cap.listeners[spsm]?.continuation.finish()
        l2cap.listeners[spsm] = L2CAPListener(id: id, parameters: parameters, security: security, continuation: continuation)
        for handle in links.handles { try? links[handle]?.l2cap.listen(spsm: spsm, parameters: parameters, security: security) }
        continuation.onTermination = { [weak self] _ in Task { await self?.stopListening(spsm: spsm, id: id) } }
        return stream
    }

    /// Listens on the lowest dynamic SPSM (0x0080–0x00FF) nobody listens on yet, as CoreBluetooth's
    /// `publishL2CAPChannel` does; returns it with the stream of channels peers open to it. Throws when every
    /// dynamic SPSM is taken.
    public func listen(parameters: L2CAPChannelParameters = L2CAPChannelParameters(),
                       security: L2CAPSecurityRequirement = .none) throws -> (spsm: L2CAPSPSM, channels: AsyncStream<L2CAPChannel>) {
        guard let free = (UInt16(0x0080)...UInt16(0x00FF)).lazy.map({ L2CAPSPSM(rawValue: $0) })
            .first(where: { l2cap.listeners[$0] == nil })
        else { throw HostError(.l2cap(.noFreeChannel), "every dynamic SPSM has a listener") }
        return (free, try listen(spsm: free, parameters: parameters, security: security))
    }

    /// Stops accepting connections to `spsm`: its stream finishes; open channels stay open.
    public func stopListening(spsm: L2CAPSPSM) {
        l2cap.listeners.removeValue(forKey: spsm)?.continuation.finish()
        for handle in links.handles { links[handle]?.l2cap.stopListening(spsm: spsm) }
    }

    private func stopListening(spsm: L2CAPSPSM, id: Int) {
        guard l2cap.listeners[spsm]?.id == id else { return }
        stopListening(spsm: spsm)
    }

    /// Opens an LE credit based channel to `spsm` on `connection`'s link (L2CAP_LE_CREDIT_BASED_CONNECTION_REQ), never
    /// on a newer link that got its handle. Throws when the peer refuses, does not answer within the signaling
    /// timeout, or the link drops.
    public func openL2CAPChannel(spsm: L2CAPSPSM, on connection: HostConnection,
                                 parameters: L2CAPChannelParameters = L2CAPChannelParameters()) async throws -> L2CAPChannel {
        try await openL2CAPChannel(spsm: spsm, handle: connection.handle, link: connection.link, parameters: parameters)
    }

    /// Opens the channel; when the peer refuses for security (0x0005, 0x0007, 0x0008) and this host pairs on demand,
    /// secures the link (the bond's key, or pairing) and asks once more.
    private func openL2CAPChannel(spsm: L2CAPSPSM, handle: ConnectionHandle, link id: LinkID?,
                                  parameters: L2CAPChannelParameters) async throws -> L2CAPChannel {
        do {
            return try await openL2CAPChannelOnce(spsm: spsm, handle: handle, link: id, parameters: parameters)
        } catch let error as HostError {
            guard case .refused(let result)? = error.code.l2capConnectionFailure, pairsOnDemand,
                  [.insufficientAuthentication, .insufficientEncryption, .encryptionKeySizeTooShort].contains(result),
                  let connection = links[handle]?.connection, current(handle, is: id),
                  let security = security(of: connection) else { throw error }
            _ = try await pair(connection, mitm: security.isEncrypted && result == .insufficientAuthentication,
                               force: security.isEncrypted && result != .insufficientEncryption)
            return try await openL2CAPChannelOnce(spsm: spsm, handle: handle, link: connection.link, parameters: parameters)
        }
    }

    private func openL2CAPChannelOnce(spsm: L2CAPSPSM, handle: ConnectionHandle, link id: LinkID?,
                                      parameters: L2CAPChannelParameters) async throws -> L2CAPChannel {
        try checkReceivable(parameters)
        let (cid, actions) = try onL2CAP(handle, link: id) { l2cap throws(L2CAPError) in
            try l2cap.connect(spsm: spsm, parameters: parameters)
        }
        // The waiter is in place before the request leaves.
        return try await withCheckedThrowingContinuation { continuation in
            links[handle]?.openWaiters[cid] = { continuation.resume(with: $0) }
            performL2CAP(actions, handle: handle)
        }
    }

    /// Opens `count` (1...5) enhanced credit based channels to `spsm` on `connection`'s link (never on a newer link that
    /// got its handle) in one L2CAP_CREDIT_BASED_CONNECTION_REQ (MTU and MPS at least 64). Returns the channels that
    /// opened, in request order; throws the first failure when none did.
    public func openL2CAPChannels(spsm: L2CAPSPSM, count: Int, on connection: HostConnection,
                                  parameters: L2CAPChannelParameters = L2CAPChannelParameters()) async throws -> [L2CAPChannel] {
        try await openL2CAPChannels(spsm: spsm, count: count, handle: connection.handle, link: connection.link,
                                    parameters: parameters)
    }

    private func openL2CAPChannels(spsm: L2CAPSPSM, count: Int, handle: ConnectionHandle, link id: LinkID?,
                                   parameters: L2CAPChannelParameters) async throws -> [L2CAPChannel] {
        try checkReceivable(parameters)
        let (cids, actions) = try onL2CAP(handle, link: id) { l2cap throws(L2CAPError) in
            try l2cap.connectEnhanced(spsm: spsm, count: count, parameters: parameters)
        }
        guard !cids.isEmpty else { return [] }
        // One waiter per channel, all in place before the request leaves; the call resumes when every one has its
        // outcome.
        let outcomes = await withCheckedContinuation { (continuation: CheckedContinuation<[Result<L2CAPChannel, any Error>], Never>) in
            let collector = OpenOutcomes(count: cids.count) { continuation.resume(returning: $0) }
            for (index, cid) in cids.enumerated() {
                links[handle]?.openWaiters[cid] = { collector.record($0, at: index) }
            }
            performL2CAP(actions, handle: handle)
        }
        let opened = outcomes.compactMap { try? $0.get() }
        if opened.isEmpty, case .failure(let firstFailure)? = outcomes.first { throw firstFailure }
        return opened
    }

    /// Runs `operation` on the L2CAP manager of `handle`'s link in place (the link `id` when given): the link being
    /// down throws Not Connected, the manager's refusal its L2CAP error.
    func onL2CAP<R>(_ handle: ConnectionHandle, link id: LinkID?,
                    _ operation: (inout L2CAPChannelManager) throws(L2CAPError) -> R) throws(HostError) -> R {
        guard current(handle, is: id) else { throw HostError(.notConnected, "no connection with handle \(handle)") }
        let outcome = links.update(handle) { link in Result { () throws(L2CAPError) in try operation(&link.l2cap) } }
        switch outcome {
        case .success(let value)?: return value
        case .failure(let error)?: throw HostError(.l2cap(error.code), error.reason)
        case nil: throw HostError(.notConnected, "no connection with handle \(handle)")
        }
    }

    /// Our receive side must fit what the reassembler accepts.
    private func checkReceivable(_ parameters: L2CAPChannelParameters) throws {
        guard Int(parameters.mps) <= configuration.maximumL2CAPPDULength else {
            throw HostError(.l2cap(.invalidParameters),
                            "MPS \(parameters.mps) exceeds the host's L2CAP PDU limit \(configuration.maximumL2CAPPDULength)")
        }
    }

    private func isCurrent(_ channel: L2CAPChannel) -> Bool { links.linkID(of: channel.handle) == channel.link }

    func sendSDU(_ sdu: [UInt8], on channel: L2CAPChannel) async throws {
        // The controller queue first, as every sender on the link.
        while isCurrent(channel), !acl.hasRoom(on: channel.handle) {
            await withCheckedContinuation { acl.waitForRoom($0) }
        }
        guard isCurrent(channel) else {
            throw HostError(.l2capChannelClosed, "the link of \(channel.localCID) is down")
        }
        guard links[channel.handle]?.closingChannels.contains(channel.localCID) != true else {
            throw HostError(.l2capChannelClosed, "\(channel.localCID) is closing")
        }
        let sent = links.update(channel.handle) { link in
            Result { () throws(L2CAPError) in try link.l2cap.send(sdu, on: channel.localCID) }
        }
        let actions: [L2CAPChannelManager.Action]
        switch sent {
        case .success(let done)?: actions = done
        case .failure(let error)? where error.code == .channelNotOpen: throw HostError(.l2capChannelClosed, "\(channel.localCID) is closed")
        case .failure(let error)?: throw HostError(.l2cap(error.code), error.reason)
        case nil: throw HostError(.l2capChannelClosed, "the link of \(channel.localCID) is down")
        }
        channel.delivery.sent(sdu.count)
        performL2CAP(actions, handle: channel.handle)
        if links[channel.handle]?.l2cap.queuedFrameCount(on: channel.localCID) == 0 {
            channelHandedOn(channel.localCID, handle: channel.handle)
        }
        // Then the peer's credits: wait until every K-frame of this channel went out. A cancelled sender stops
        // waiting (its K-frames stay queued and still go out: an SDU is never cut).
        while let link = links[channel.handle], link.connection.link == channel.link, link.l2cap.channel(channel.localCID) != nil,
              link.l2cap.queuedFrameCount(on: channel.localCID) > 0 {
            try Task.checkCancellation()
            let waiter = l2cap.newCreditWaiter()
            await withTaskCancellationHandler {
                await withCheckedContinuation { links[channel.handle]?.creditWaiters[waiter] = (channel.localCID, $0) }
            } onCancel: {
                Task { await self.stopWaitingForCredits(waiter, handle: channel.handle) }
            }
        }
        guard isCurrent(channel), links[channel.handle]?.l2cap.channel(channel.localCID) != nil else {
            throw HostError(.l2capChannelClosed, "\(channel.localCID) closed while sending")
        }
    }

    /// Sends one SDU on a channel the host itself owns (an Enhanced ATT bearer) without waiting: its K-frames the peer's
    /// credits cover go to the controller now (past the link's queue limit: ATT bounds what it sends itself), the rest
    /// wait in the channel's queue for credits, in order. Returns `false`, having sent nothing, when the channel is not
    /// open (or closing) or the SDU exceeds the peer's MTU.
    func sendSDUNow(_ sdu: [UInt8], on channel: L2CAPChannel) -> Bool {
        guard isCurrent(channel), links[channel.handle]?.closingChannels.contains(channel.localCID) != true,
              let actions = links.update(channel.handle, { try? $0.l2cap.send(sdu, on: channel.localCID) }) ?? nil
        else { return false }
        channel.delivery.sent(sdu.count)
        performL2CAP(actions, handle: channel.handle)
        if links[channel.handle]?.l2cap.queuedFrameCount(on: channel.localCID) == 0 {
            channelHandedOn(channel.localCID, handle: channel.handle)
        }
        return true
    }

    func closeL2CAPChannel(_ channel: L2CAPChannel, within timeout: Duration?) async throws -> L2CAPDelivery {
        let handle = channel.handle, cid = channel.localCID
        if isCurrent(channel), links[handle]?.l2cap.channel(cid) != nil {
            // Nothing new is taken; what the channel holds goes on under the peer's credits, and the Disconnection
            // Request waits until the controller completed it all (or the time runs out).
            links[handle]?.closingChannels.insert(cid)
            let outcome = await awaitDelivery(on: handle, after: cid, timeout: timeout ?? configuration.l2capCloseTimeout)
            if isCurrent(channel) {
                links[handle]?.closingChannels.remove(cid)
                channel.delivery.confirm(completedThrough: acl.flow.completedTotal(handle: handle))
                if let actions = links.update(handle, { try? $0.l2cap.disconnect(cid) }) ?? nil {
                    performL2CAP(actions, handle: handle)
                }
            }
            if case .timedOut = outcome {
                let delivery = channel.delivery.report
                logger.warning("handle \(handle): \(cid) closed when its wait ran out, \(delivery.unconfirmedOctets) of \(delivery.sentOctets) octet(s) not confirmed delivered")
            }
        } else if isCurrent(channel) {
            // Closed already (by the peer, or another close): its delivery as it stands.
            channel.delivery.confirm(completedThrough: acl.flow.completedTotal(handle: handle))
        }
        let delivery = channel.delivery.report
        guard delivery.unconfirmedOctets == 0 else {
            throw HostError(.undeliveredData(delivery), "\(cid) closed with \(delivery.unconfirmedOctets) of \(delivery.sentOctets) octet(s) not confirmed delivered")
        }
        return delivery
    }

    // MARK: Driving the managers

    /// Performs a link's L2CAP actions: the ``L2CAPDriver`` carries them out on the link in place, and this host
    /// what it asked for through its port, in order. Never waits: frames go down with
    /// ``send(_:channel:on:whenFull:)``'s ``WhenFull/queue`` (LE signaling is bounded by its protocol, K-frames by the
    /// peer's credits), so the packet-reading path can call this.
    func performL2CAP(_ actions: [L2CAPChannelManager.Action], handle: ConnectionHandle) {
        guard !actions.isEmpty else { return }
        var port = HostL2CAPPort(handle: handle, host: self)
        guard let id = links.update(handle, { link -> LinkID in
            l2cap.perform(actions, on: &link, port: &port, logger: logger)
            return link.connection.link
        }) else { return }
        var updates: [L2CAPConnectionParameterUpdateRequest] = []
        for request in port.requests {
            switch request {
            case .send(let frame):
                // Handed over here, in order, before any suspension: K-frames of one channel never overtake each other.
                _ = sendFrame(frame, handle: handle, link: id, whenFull: .queue)
            case .deliverFixed(let payload, let cid):
                deliverFixed(payload, channel: cid, handle: handle)
            case .opened(let info, let stream, let delivery):
                channelOpened(info, stream: stream, delivery: delivery, handle: handle, link: id)
            case .handedOn(let cid):
                channelHandedOn(cid, handle: handle)
            case .closed(let cid):
                // A close waiting behind its queue waits for what the flow has.
                if !acl.drain.isEmpty { performDrain(acl.drain.channelQueueEmptied(cid, handle: handle, flow: acl.flow)) }
            case .updateConnection(let request):
                updates.append(request)
            }
        }
        for request in updates {
            submitDetached(HCILEConnectionUpdate(handle: handle, intervalMin: request.intervalMin,
                                                       intervalMax: request.intervalMax, maxLatency: request.latency,
                                                       supervisionTimeout: request.timeout))
        }
    }

    /// A channel opened (its stream and ledger are on the link already): the channel goes to whoever opened it, or
    /// to the listener of its SPSM.
    private func channelOpened(_ info: L2CAPChannelInfo, stream: AsyncStream<[UInt8]>, delivery: ChannelDelivery,
                               handle: ConnectionHandle, link: LinkID) {
        let incoming = L2CAPIncomingSDUs(stream: stream) { [self] in
            await self.sduConsumed(handle: handle, link: link, cid: info.localCID)
        }
        let channel = L2CAPChannel(info: info, handle: handle, incoming: incoming, link: link, host: self, delivery: delivery)
        if info.initiatedLocally {
            resolveOpen(info.localCID, handle: handle, .success(channel))
        } else if let listener = l2cap.listeners[info.spsm] {
            listener.continuation.yield(channel)
        } else {
            // Nobody listens any more: close it again.
            links[handle]?.sduStreams[info.localCID]?.finish()
        }
    }

    /// The consumer took an SDU: its credits may go back to the peer.
    private func sduConsumed(handle: ConnectionHandle, link: LinkID, cid: L2CAPChannelID) async {
        guard current(handle, is: link), let actions = links.update(handle, { $0.l2cap.consumed(on: cid) }) else { return }
        performL2CAP(actions, handle: handle)
    }

    private func resolveOpen(_ cid: L2CAPChannelID, handle: ConnectionHandle, _ outcome: Result<L2CAPChannel, any Error>) {
        links[handle]?.openWaiters.removeValue(forKey: cid)?(outcome)
    }

    /// A sender waiting for credits was cancelled.
    private func stopWaitingForCredits(_ waiter: Int, handle: ConnectionHandle) {
        links[handle]?.creditWaiters.removeValue(forKey: waiter)?.continuation.resume()
    }

    func l2capTimerFired(_ firing: TimerSet<L2CAPTimerKey>.Firing, handle: ConnectionHandle) {
        let key = firing.key
        guard l2cap.timers.expire(firing), current(handle, is: key.link),
              let actions = links.update(handle, { $0.l2cap.timerFired(key.timer) }) else { return }
        performL2CAP(actions, handle: handle)
    }

    /// A link went down: its channels close, its pending opens fail, its senders wake, its timers stop.
    func closeL2CAP(_ link: Link) {
        l2cap.timers.cancelAll { $0.link == link.connection.link }
        for continuation in link.sduStreams.values { continuation.finish() }
        for waiter in link.creditWaiters.values { waiter.continuation.resume() }
        for (cid, waiter) in link.openWaiters {
            waiter(.failure(HostError(.l2capConnectionFailed(.linkClosed), "the link closed while opening \(cid)")))
        }
    }
}
