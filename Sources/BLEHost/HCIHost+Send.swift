import BLEProtocols
import BLEWire

/// The one way L2CAP goes down: ``send(_:channel:on:whenFull:)`` frames a payload, ``ACLFlow`` fragments and queues it
/// under the controller's buffers, and ``HCIOutbox`` takes the packets it releases (and alone decides who drains it).
/// Nothing here suspends; ``sendL2CAP(_:channel:on:)`` is the one wrapper that waits for queue room.
/// (The shape of Bumble's `send_l2cap_pdu` → `send_acl_sdu`.)
extension HCIHost {
    /// What became of an L2CAP payload offered with ``send(_:channel:on:whenFull:)``.
    enum SendOutcome {
        /// Handed to the ACL flow and, as far as the controller has buffers, to the outbox, in order.
        case handedOver
        /// The link's queue is full (``linkQueueLimit``) and the sender asked to be refused: nothing was queued.
        case noRoom
        /// The link is gone: nothing was sent.
        case notConnected
        /// The transport ended as the packets were handed over (the host is told): nothing was sent.
        case transportEnded
    }

    /// What a send does when its link already has ``linkQueueLimit`` packets waiting for controller buffers.
    ///
    /// The rule, in one place: only a sender that can wait asks to be refused (``refuse``) and then waits for room
    /// (``sendL2CAP(_:channel:on:)``, a GATT notification or Write Command). Who cannot wait queues past the limit
    /// (``queue``): the packet-reading path, which alone reads the Number Of Completed Packets events that make room,
    /// and traffic its own protocol bounds (ATT requests, responses, indications and confirmations, one outstanding
    /// at a time; SMP; LE signaling; K-frames, which wait for the peer's credits, and whose sender waited for room
    /// before handing its SDU over).
    enum WhenFull {
        /// Refuse the send (``SendOutcome/noRoom``): the caller waits for room, or gives up.
        case refuse
        /// Queue it anyway.
        case queue
    }

    /// Sends one L2CAP payload on a channel of `connection`'s link (never on a newer link that got its handle),
    /// without suspending: framed as a basic frame, fragmented to the controller's buffers and handed over in this
    /// step, in order after everything sent before. `whenFull` says what happens when the link's queue is full.
    func send(_ payload: [UInt8], channel: L2CAPChannelID, on connection: HostConnection, whenFull: WhenFull) -> SendOutcome {
        sendFrame(L2CAPBasicFrame(channelID: channel, payload: payload).encoded, handle: connection.handle,
                  link: connection.link, whenFull: whenFull)
    }

    /// ``send(_:channel:on:whenFull:)`` of an encoded L2CAP frame, by handle, on the link `link` when given (otherwise
    /// whichever has the handle).
    func sendFrame(_ pdu: [UInt8], handle: ConnectionHandle, link: LinkID?, whenFull: WhenFull) -> SendOutcome {
        switch queue(pdu, handle: handle, link: link, whenFull: whenFull) {
        case .success(let packets): sendACL(packets) ? .handedOver : .transportEnded
        case .failure(let refusal): refusal.outcome
        }
    }

    /// Why ``queue(_:handle:link:whenFull:)`` queued nothing.
    struct Refusal: Error {
        let outcome: SendOutcome
    }

    /// The one step every L2CAP send takes: checks the link and its queue room, fragments the frame into the link's
    /// ACL queue and returns the packets the flow releases now (after any fragments of an earlier PDU that Number Of
    /// Completed Packets let go), for the caller to hand to the outbox in this same step, in that order.
    private func queue(_ pdu: [UInt8], handle: ConnectionHandle, link: LinkID?, whenFull: WhenFull) -> Result<[HCIACLPacket], Refusal> {
        guard current(handle, is: link) else { return .failure(Refusal(outcome: .notConnected)) }
        if case .refuse = whenFull, !acl.hasRoom(on: handle) { return .failure(Refusal(outcome: .noRoom)) }
        return .success(acl.flow.enqueue(handle: handle, pdu: pdu))
    }

    /// Sends one L2CAP payload on a channel of `connection`'s link (never on a newer link that got its handle),
    /// fragmented to the controller's buffers under flow control: ``send(_:channel:on:whenFull:)`` for a caller that
    /// can wait.
    ///
    /// Back-pressure: while the link already has ``linkQueueLimit`` packets waiting for controller buffers, the call
    /// waits until Number Of Completed Packets drains them, so a sender can never queue without bound.
    ///
    /// It takes the same step as ``send(_:channel:on:whenFull:)``, and hands the packets to the outbox as a writer that
    /// can wait (``HCIOutbox/writeOrDrain(_:)``): the outbox may have it drain them.
    public func sendL2CAP(_ payload: [UInt8], channel: L2CAPChannelID, on connection: HostConnection) async throws {
        let frame = L2CAPBasicFrame(channelID: channel, payload: payload).encoded
        while true {
            switch queue(frame, handle: connection.handle, link: connection.link, whenFull: .refuse) {
            case .success(let packets):
                guard !packets.isEmpty else { return }
                do {
                    try await outbox.writeOrDrain(packets.map { .acl($0) })
                } catch {
                    transportEnded(error)
                }
                return
            case .failure(let refusal) where refusal.outcome == .noRoom:
                await withCheckedContinuation { acl.waitForRoom($0) }
            case .failure:
                throw HostError(.notConnected, "no connection with handle \(connection.handle)")
            }
        }
    }

    /// Packets a link may have waiting for controller buffers before senders wait.
    public var linkQueueLimit: Int { acl.queueLimit }

    /// Whether a send on `handle` would go out without waiting (the ready signal behind
    /// `canSendWriteWithoutResponse` and `peripheralManagerIsReady(toUpdateSubscribers:)`).
    public func isReadyToSend(_ connection: HostConnection) -> Bool { acl.hasRoom(on: connection.handle) }

    /// Packets queued on the controller's behalf that it has no buffer for yet, over all links.
    public var queuedACLPacketCount: Int { acl.flow.queuedPacketCount }

    /// Hands packets the ACL flow released to the outbox, in order, all in one write (a byte-stream transport writes
    /// them with one system call). `false` when the transport has ended (the host is told).
    @discardableResult
    func sendACL(_ packets: [HCIACLPacket]) -> Bool {
        guard !packets.isEmpty else { return true }
        return write(packets.map { .acl($0) })
    }
}
