import BLEWire

/// ACL data and L2CAP on LE: fixed channels ATT (0x0004), LE signaling (0x0005) and SMP (0x0006).
/// Core 5.4, Vol 3, Part A.
extension HCIHost {
    /// Frames kept for a fixed channel nobody has opened yet (so nothing sent right after connecting is lost).
    static let pendingFrameLimit = 64

    /// The payloads arriving on fixed channel `channel` of connection `handle`, in order. The stream finishes when
    /// the link goes down. Frames that arrived before the channel was opened are delivered first. Opening a channel
    /// the host answers itself (LE signaling, SMP) takes it over: the host stops answering on it.
    public func openFixedChannel(_ channel: L2CAPChannelID, handle: UInt16) throws -> AsyncStream<[UInt8]> {
        guard var link = links[handle] else { throw HostError(.notConnected, "no connection with handle \(handle)") }
        let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self)
        link.channels[channel]?.finish()
        link.channels[channel] = continuation
        for payload in link.pending.removeValue(forKey: channel) ?? [] { continuation.yield(payload) }
        links[handle] = link
        return stream
    }

    /// Sends one L2CAP payload on a channel, fragmented to the controller's buffers under flow control.
    ///
    /// Back-pressure: while the link already has ``linkQueueLimit`` packets waiting for controller buffers, the call
    /// waits until Number Of Completed Packets drains them, so a sender can never queue without bound.
    public func sendL2CAP(_ payload: [UInt8], channel: L2CAPChannelID, handle: UInt16) async throws {
        while links[handle] != nil, aclFlow.queuedCount(handle: handle) >= linkQueueLimit {
            await withCheckedContinuation { sendWaiters.append($0) }
        }
        guard links[handle] != nil else { throw HostError(.notConnected, "no connection with handle \(handle)") }
        await sendACL(aclFlow.enqueue(handle: handle, pdu: L2CAPBasicFrame(channelID: channel, payload: payload).encoded))
    }

    /// Queues one L2CAP payload without waiting for queue room: for the answers the packet-reading path sends itself.
    /// Waiting there would deadlock: only that path reads the Number Of Completed Packets events that make room.
    func enqueueL2CAP(_ payload: [UInt8], channel: L2CAPChannelID, handle: UInt16) async {
        guard links[handle] != nil else { return }
        await sendACL(aclFlow.enqueue(handle: handle, pdu: L2CAPBasicFrame(channelID: channel, payload: payload).encoded))
    }

    /// Packets a link may have waiting for controller buffers before senders wait.
    public var linkQueueLimit: Int { max(16, 2 * aclFlow.bufferCount) }

    /// Whether a send on `handle` would go out without waiting (the ready signal behind
    /// `canSendWriteWithoutResponse` and `peripheralManagerIsReady(toUpdateSubscribers:)`).
    public func isReadyToSend(_ handle: UInt16) -> Bool { aclFlow.queuedCount(handle: handle) < linkQueueLimit }

    /// Wakes senders waiting for queue room (after buffers came back or a link closed).
    func wakeSenders() {
        let waiters = sendWaiters
        sendWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    /// Packets queued on the controller's behalf that it has no buffer for yet, over all links.
    public var queuedACLPacketCount: Int { aclFlow.queuedPacketCount }

    /// Hands packets to the transport in order. Sends suspend the actor, so packets released meanwhile (by Number Of
    /// Completed Packets) join one outbox that a single pump drains: no two loops ever interleave.
    func sendACL(_ packets: [HCIACLPacket]) async {
        aclOutbox.append(contentsOf: packets)
        guard !aclPumping else { return }
        aclPumping = true
        defer { aclPumping = false }
        while let packet = aclOutbox.popFirst() {
            do {
                try await transport.send(.acl(packet))
            } catch {
                aclOutbox.removeAll()
                transportEnded(error)
                return
            }
        }
    }

    func receiveACL(_ packet: HCIACLPacket) async {
        guard var link = links[packet.handle] else {
            droppedFrames += 1
            return
        }
        let frame: L2CAPBasicFrame?
        do {
            frame = try link.reassembler.append(isStart: packet.boundary.isStart, data: packet.data)
        } catch {
            logger.warning("handle \(packet.handle): bad L2CAP fragment: \(error)")
            droppedFrames += 1
            links[packet.handle] = link
            return
        }
        links[packet.handle] = link
        guard let frame else { return }
        switch frame.channelID {
        case .leSignaling where link.channels[.leSignaling] == nil:
            await handleSignaling(frame.payload, handle: packet.handle)
        case .smp where link.channels[.smp] == nil:
            await answerSMP(frame.payload, handle: packet.handle)
        default:
            deliver(frame.payload, channel: frame.channelID, handle: packet.handle)
        }
    }

    private func deliver(_ payload: [UInt8], channel: L2CAPChannelID, handle: UInt16) {
        guard var link = links[handle] else { return }
        if let continuation = link.channels[channel] {
            continuation.yield(payload)
        } else if channel == .att || channel == .smp {
            var queue = link.pending[channel, default: []]
            if queue.count < Self.pendingFrameLimit { queue.append(payload) } else { droppedFrames += 1 }
            link.pending[channel] = queue
            links[handle] = link
        } else {
            // A fixed channel LE does not define, or a dynamic one never opened: nothing to deliver to.
            droppedFrames += 1
        }
    }

    // MARK: LE signaling (Core 5.4, Vol 3, Part A, 4)

    private func handleSignaling(_ payload: [UInt8], handle: UInt16) async {
        guard let link = links[handle] else { return }
        // Identifier 0x00 is illegal (Core 5.4, Vol 3, Part A, 4): such a command cannot be answered (a reply would
        // carry the illegal identifier too), so it is dropped.
        guard L2CAPSignalingPDU.identifier(of: payload) != 0 else {
            droppedFrames += 1
            return
        }
        let pdu: L2CAPSignalingPDU
        do {
            pdu = try L2CAPSignalingPDU(bytes: payload)
        } catch {
            // Truncated or malformed: Command Reject "not understood", echoing the identifier when readable.
            await sendSignaling(.commandReject(identifier: L2CAPSignalingPDU.identifier(of: payload) ?? 0, reason: .commandNotUnderstood),
                                handle: handle)
            return
        }
        switch pdu {
        case .unknown(let command):
            await sendSignaling(.commandReject(identifier: command.identifier, reason: .commandNotUnderstood), handle: handle)
        case .connectionParameterUpdateRequest(let id, let request):
            guard link.connection.role == .central else {
                // Only a central receives this request. Core 5.4, Vol 3, Part A, 4.20.
                await sendSignaling(.commandReject(identifier: id, reason: .commandNotUnderstood), handle: handle)
                return
            }
            let accepted = request.isValid
            await sendSignaling(.connectionParameterUpdateResponse(identifier: id, result: accepted ? .accepted : .rejected), handle: handle)
            if accepted {
                await submitDetached(HCILEConnectionUpdate(handle: handle, intervalMin: request.intervalMin,
                                                           intervalMax: request.intervalMax, maxLatency: request.latency,
                                                           supervisionTimeout: request.timeout))
            }
        case .disconnectionRequest(let id, let destination, let source):
            // No dynamic channels are open: the CID is invalid. Core 5.4, Vol 3, Part A, 4.6.
            await sendSignaling(.commandReject(identifier: id, reason: .invalidCID(local: destination, remote: source)), handle: handle)
        case .leCreditBasedConnectionRequest(let id, _):
            // No SPSM is registered: "SPSM not supported" (0x0002).
            await sendSignaling(.leCreditBasedConnectionResponse(identifier: id, .init(destinationCID: 0, mtu: 0, mps: 0,
                                                                                      initialCredits: 0, result: .spsmNotSupported)),
                                handle: handle)
        case .creditBasedConnectionRequest(let id, let request):
            // No SPSM is registered: every channel refused, "SPSM not supported" (0x0002).
            await sendSignaling(.creditBasedConnectionResponse(identifier: id, .init(
                mtu: 0, mps: 0, initialCredits: 0, result: .spsmNotSupported,
                destinationCIDs: Array(repeating: 0, count: min(request.sourceCIDs.count, 5)))), handle: handle)
        case .creditBasedReconfigureRequest(let id, _):
            // No channel is open: the Destination CIDs are invalid.
            await sendSignaling(.creditBasedReconfigureResponse(identifier: id, result: .invalidDestinationCID), handle: handle)
        case .flowControlCredit(let id, let cid, _):
            await sendSignaling(.commandReject(identifier: id, reason: .invalidCID(local: cid, remote: 0)), handle: handle)
        case .commandReject, .connectionParameterUpdateResponse, .disconnectionResponse, .leCreditBasedConnectionResponse,
             .creditBasedConnectionResponse, .creditBasedReconfigureResponse:
            // Responses to requests this host did not send are ignored.
            break
        }
    }

    /// Sends a peripheral's Connection Parameter Update Request to the central.
    public func requestConnectionParameterUpdate(_ request: L2CAPConnectionParameterUpdateRequest, handle: UInt16) async throws {
        guard var link = links[handle] else { throw HostError(.notConnected, "no connection with handle \(handle)") }
        link.signalingIdentifier = link.signalingIdentifier == 0xFF ? 1 : link.signalingIdentifier + 1
        links[handle] = link
        await sendSignaling(.connectionParameterUpdateRequest(identifier: link.signalingIdentifier, request), handle: handle)
    }

    private func sendSignaling(_ pdu: L2CAPSignalingPDU, handle: UInt16) async {
        await enqueueL2CAP(pdu.encoded, channel: .leSignaling, handle: handle)
    }

    // MARK: SMP until pairing exists (Core 5.4, Vol 3, Part H, 3.5.5)

    private func answerSMP(_ payload: [UInt8], handle: UInt16) async {
        let reason: SMPPairingFailedReason
        do {
            switch try SMPPDU(bytes: payload) {
            case .pairingFailed: return
            case .unknown: reason = .commandNotSupported
            default: reason = .pairingNotSupported
            }
        } catch {
            reason = .invalidParameters
        }
        await enqueueL2CAP(SMPPDU.pairingFailed(reason).encoded, channel: .smp, handle: handle)
    }
}
