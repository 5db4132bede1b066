import BLEProtocols
import BLEWire

/// ACL data and L2CAP on LE: each link's ``L2CAPChannelManager`` gets the reassembled frames; fixed channels ATT
/// (0x0004) and SMP (0x0006) go to their consumers, the LE signaling channel (0x0005) is answered by the manager.
/// Core 5.4, Vol 3, Part A.
extension HCIHost {
    /// Frames kept for a fixed channel nobody has opened yet (so nothing sent right after connecting is lost).
    static let pendingFrameLimit = 64

    /// The payloads arriving on fixed channel `channel` of `connection`'s link, in order. The stream finishes when
    /// the link goes down. Frames that arrived before the channel was opened are delivered first. Opening a channel
    /// the host answers itself (LE signaling, SMP) takes it over: the host stops answering on it.
    /// Throws when that link is down (even if a newer link got its handle).
    public func openFixedChannel(_ channel: L2CAPChannelID, on connection: HostConnection) throws -> AsyncStream<[UInt8]> {
        try openFixedChannel(channel, handle: connection.handle, link: connection.link)
    }

    private func openFixedChannel(_ channel: L2CAPChannelID, handle: ConnectionHandle, link id: LinkID?) throws -> AsyncStream<[UInt8]> {
        guard current(handle, is: id), var link = links[handle] else { throw HostError(.notConnected, "no connection with handle \(handle)") }
        if channel != .leSignaling {
            do {
                try link.l2cap.registerFixedChannel(channel)
            } catch {
                throw HostError(.l2cap(error.code), error.reason)
            }
        }
        let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self)
        link.channels[channel]?.finish()
        link.channels[channel] = continuation
        if channel == .att, let engine = link.attEngine.take()?.engine {
            let id = link.connection.link
            engine.assumeIsolated { $0.attChannelEnded(id) }
        }
        for payload in link.pending.removeValue(forKey: channel) ?? [] { continuation.yield(payload) }
        links[handle] = link
        return stream
    }

    /// Hands `connection`'s ATT PDUs to `engine` from now on, in the step that reassembles each
    /// (``GATTEngine/receiveFromHost(_:on:)``, on this host's executor, which the engine shares): the ones kept since
    /// the link came up at once, in order. Another consumer of the channel (``openFixedChannel(_:on:)``) ends.
    func openATT(for engine: GATTEngine, on connection: HostConnection) throws {
        let handle = connection.handle
        guard current(handle, is: connection.link), var link = links[handle] else { throw HostError(.notConnected, "no connection with handle \(handle)") }
        do {
            try link.l2cap.registerFixedChannel(.att)
        } catch {
            throw HostError(.l2cap(error.code), error.reason)
        }
        link.channels.removeValue(forKey: .att)?.finish()
        if let previous = link.attEngine.take()?.engine, previous !== engine {
            previous.assumeIsolated { $0.attChannelEnded(connection.link) }
        }
        link.attEngine = ATTConsumer(engine: engine)
        let early = link.pending.removeValue(forKey: .att) ?? []
        links[handle] = link
        engine.assumeIsolated { engine in
            for payload in early { engine.receiveFromHost(payload, on: connection.link) }
        }
    }

    /// Sends one L2CAP payload on a channel of `connection`'s link (never on a newer link that got its handle), fragmented to the controller's buffers under flow control.
    ///
    /// Back-pressure: while the link already has ``linkQueueLimit`` packets waiting for controller buffers, the call
    /// waits until Number Of Completed Packets drains them, so a sender can never queue without bound.
    public func sendL2CAP(_ payload: [UInt8], channel: L2CAPChannelID, on connection: HostConnection) async throws {
        try await sendL2CAP(payload, channel: channel, handle: connection.handle, link: connection.link)
    }

    private func sendL2CAP(_ payload: [UInt8], channel: L2CAPChannelID, handle: ConnectionHandle, link: LinkID?) async throws {
        while true {
            switch sendL2CAPNow(payload, channel: channel, handle: handle, link: link) {
            case .handedOver(let mustDrain):
                // Nothing waits for a reply here: the caller drains the outbox itself when nobody does, so what the
                // host queues meanwhile joins the batch.
                if mustDrain { await outbox.drainAfterHandOver() }
                return
            case .transportEnded:
                return
            case .notConnected:
                throw HostError(.notConnected, "no connection with handle \(handle)")
            case .noRoom:
                await withCheckedContinuation { acl.waitForRoom($0) }
            }
        }
    }

    /// Queues one L2CAP payload without waiting for queue room: for the answers the packet-reading path sends itself.
    /// Waiting there would deadlock: only that path reads the Number Of Completed Packets events that make room.
    func enqueueL2CAP(_ payload: [UInt8], channel: L2CAPChannelID, handle: ConnectionHandle) {
        guard links.contains(handle) else { return }
        sendACL(acl.flow.enqueue(handle: handle, pdu: L2CAPBasicFrame(channelID: channel, payload: payload).encoded))
    }

    /// Packets a link may have waiting for controller buffers before senders wait.
    public var linkQueueLimit: Int { acl.queueLimit }

    /// Whether a send on `handle` would go out without waiting (the ready signal behind
    /// `canSendWriteWithoutResponse` and `peripheralManagerIsReady(toUpdateSubscribers:)`).
    public func isReadyToSend(_ connection: HostConnection) -> Bool { acl.hasRoom(on: connection.handle) }

    /// Packets queued on the controller's behalf that it has no buffer for yet, over all links.
    public var queuedACLPacketCount: Int { acl.flow.queuedPacketCount }

    /// Hands packets the ACL flow released to the outbox, in order, all in one write (a byte-stream transport writes
    /// them with one system call).
    func sendACL(_ packets: [HCIACLPacket]) {
        guard !packets.isEmpty else { return }
        write(packets.map { .acl($0) })
    }

    func receiveACL(_ packet: HCIACLPacket) {
        // What the fragment led to, worked out on the link in place (no copy of it on the data path).
        enum Outcome {
            case incomplete
            case badFragment(any Error)
            case rawSignaling(AsyncStream<[UInt8]>.Continuation, [UInt8])
            case l2cap([L2CAPChannelManager.Action], dropped: Int)
        }
        let outcome = links.update(packet.handle) { link -> Outcome in
            let frame: L2CAPBasicFrame?
            do {
                frame = try link.reassembler.append(isStart: packet.boundary.isStart, data: packet.data)
            } catch {
                return .badFragment(error)
            }
            guard let frame else { return .incomplete }
            if frame.channelID == .leSignaling, let raw = link.channels[.leSignaling] {
                // A consumer took the signaling channel over (tests speaking raw signaling): the manager stays out.
                return .rawSignaling(raw, frame.payload)
            }
            let before = link.l2cap.droppedFrames
            let actions = link.l2cap.receive(frame)
            return .l2cap(actions, dropped: link.l2cap.droppedFrames - before)
        }
        switch outcome {
        case nil:
            controller.droppedFrames += 1
        case .incomplete?:
            break
        case .badFragment(let error)?:
            logger.warning("handle \(packet.handle): bad L2CAP fragment: \(error)")
            controller.droppedFrames += 1
        case .rawSignaling(let raw, let payload)?:
            raw.yield(payload)
        case .l2cap(let actions, let dropped)?:
            controller.droppedFrames += dropped
            performL2CAP(actions, handle: packet.handle)
        }
    }

    /// A payload the link's L2CAP manager delivered on a fixed channel: to its consumer, or kept until one opens it
    /// (ATT), or handed back for the host's Security Manager (SMP).
    func deliverFixed(_ payload: [UInt8], channel: L2CAPChannelID, handle: ConnectionHandle) -> [UInt8]? {
        enum Outcome { case consumer(AsyncStream<[UInt8]>.Continuation), engine(GATTEngine?, LinkID), smp, kept, overflow }
        let outcome = links.update(handle) { link -> Outcome in
            if channel == .att, let consumer = link.attEngine { return .engine(consumer.engine, link.connection.link) }
            if let continuation = link.channels[channel] { return .consumer(continuation) }
            if channel == .smp { return .smp }
            guard link.pending[channel, default: []].count < Self.pendingFrameLimit else { return .overflow }
            link.pending[channel, default: []].append(payload)
            return .kept
        }
        switch outcome {
        case .consumer(let continuation)?: continuation.yield(payload)
        case .engine(let engine, let link)?:
            // The engine shares this executor: it takes the PDU now (and never waits in doing so).
            engine?.assumeIsolated { $0.receiveFromHost(payload, on: link) }
        case .smp?: return payload
        case .overflow?: controller.droppedFrames += 1
        case .kept?, nil: break
        }
        return nil
    }

    /// The L2CAP manager of a new link: ATT and SMP registered on behalf of their consumers (whose early frames the
    /// host keeps), and every SPSM this host listens on.
    func makeL2CAPManager(role: HCIRole) -> L2CAPChannelManager {
        var manager = L2CAPChannelManager(role: role, configuration: .init(signalingTimeout: configuration.l2capSignalingTimeout,
                                                                          creditReturn: .onConsumption))
        try? manager.registerFixedChannel(.att)
        try? manager.registerFixedChannel(.smp)
        for (spsm, listener) in l2cap.listeners { try? manager.listen(spsm: spsm, parameters: listener.parameters, security: listener.security) }
        return manager
    }

    // MARK: LE signaling (Core 5.4, Vol 3, Part A, 4)

    /// Sends a peripheral's Connection Parameter Update Request to the central. Returns once it is queued; the
    /// central's answer arrives as a `connectionUpdated` event when it applies the values.
    public func requestConnectionParameterUpdate(_ request: L2CAPConnectionParameterUpdateRequest, on connection: HostConnection) async throws {
        let handle = connection.handle
        guard current(handle, is: connection.link), var link = links[handle] else { throw HostError(.notConnected, "\(connection.link) is down") }
        let actions: [L2CAPChannelManager.Action]
        do {
            actions = try link.l2cap.requestConnectionParameterUpdate(request)
        } catch {
            throw HostError(.l2cap(error.code), error.reason)
        }
        links[handle] = link
        performL2CAP(actions, handle: handle)
    }
}
