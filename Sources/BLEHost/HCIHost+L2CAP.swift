import BLEProtocols
import BLEWire

/// ACL data and L2CAP on LE: each reassembled frame of a fixed channel goes through the link's
/// ``FixedChannelTable`` (ATT to its consumer, SMP to the Security Manager, LE signaling to the link's
/// ``L2CAPChannelManager``, which answers it), the frames of credit based channels to the manager.
/// Core 5.4, Vol 3, Part A.
extension HCIHost {
    /// The payloads arriving on fixed channel `channel` of `connection`'s link, in order. The stream finishes when
    /// the link goes down. Frames that arrived before the channel was opened are delivered first. Opening a channel
    /// the host answers itself (LE signaling, SMP) takes it over: the host stops answering on it.
    /// Throws when that link is down (even if a newer link got its handle).
    public func openFixedChannel(_ channel: L2CAPChannelID, on connection: HostConnection) throws -> AsyncStream<[UInt8]> {
        let handle = connection.handle
        guard current(handle, is: connection.link) else { throw HostError(.notConnected, "no connection with handle \(handle)") }
        do {
            try FixedChannelTable.validate(channel)
        } catch {
            throw HostError(.l2cap(error.code), error.reason)
        }
        let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self)
        let previous = links.update(handle) { $0.fixed.register(.stream(FixedChannelStream(continuation)), on: channel) } ?? nil
        switch previous {
        case .stream(let replaced)?: replaced.continuation.finish()
        case .gatt?: gatt.driver?.attChannelEnded(connection.link, host: self)
        case .held(let early)?: for payload in early { continuation.yield(payload) }
        case .signaling?, .securityManager?, nil: break
        }
        return stream
    }

    /// Hands `connection`'s ATT PDUs to the GATT driver from now on, in the step that reassembles each
    /// (``GATTDriver/receiveFromHost(_:on:host:)``): the ones kept since the link came up at once, in order. Another
    /// consumer of the channel (``openFixedChannel(_:on:)``) ends.
    func openATT(on connection: HostConnection) throws {
        let handle = connection.handle
        guard current(handle, is: connection.link) else { throw HostError(.notConnected, "no connection with handle \(handle)") }
        guard let driver = gatt.driver else { return }
        let previous = links.update(handle) { $0.fixed.register(.gatt, on: .att) } ?? nil
        switch previous {
        case .stream(let replaced)?: replaced.continuation.finish()
        case .held(let early)?:
            for payload in early { driver.receiveFromHost(payload, on: connection.link, host: self) }
        case .gatt?, .signaling?, .securityManager?, nil: break
        }
    }

    func receiveACL(_ packet: HCIACLPacket) {
        // What the fragment led to, worked out on the link in place (no copy of it on the data path).
        enum Outcome {
            case incomplete
            case badFragment(any Error)
            case fixed(FixedChannelTable.Route, [UInt8], LinkID)
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
            if FixedChannelTable.isFixed(frame.channelID) {
                let route = link.fixed.route(frame.payload, on: frame.channelID)
                guard case .signaling = route else { return .fixed(route, frame.payload, link.connection.link) }
            }
            // LE signaling, answered by the manager, and the credit based channels.
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
        case .fixed(let route, let payload, let link)?:
            deliverFixed(payload, by: route, handle: packet.handle, link: link)
        case .l2cap(let actions, let dropped)?:
            controller.droppedFrames += dropped
            performL2CAP(actions, handle: packet.handle)
        }
    }

    /// Hands a fixed channel's payload to the handler its link's table routed it to.
    @inline(__always)
    private func deliverFixed(_ payload: [UInt8], by route: FixedChannelTable.Route, handle: ConnectionHandle, link: LinkID) {
        switch route {
        case .gatt:
            // The driver takes the PDU now (and never waits in doing so).
            gatt.driver?.receiveFromHost(payload, on: link, host: self)
        case .stream(let stream):
            stream.continuation.yield(payload)
        case .securityManager:
            receiveSMP(payload, handle: handle)
        case .dropped:
            controller.droppedFrames += 1
        case .held, .signaling:
            // Kept in the table; signaling frames never reach here (the manager took them).
            break
        }
    }

    /// A payload a link's L2CAP manager delivered on a fixed channel (it delivers none while the host routes fixed
    /// channels through the table, but its action is handled the same way).
    func deliverFixed(_ payload: [UInt8], channel: L2CAPChannelID, handle: ConnectionHandle) {
        guard let (route, link) = links.update(handle, { ($0.fixed.route(payload, on: channel), $0.connection.link) }) else { return }
        deliverFixed(payload, by: route, handle: handle, link: link)
    }

    /// The L2CAP manager of a new link: LE signaling and every SPSM this host listens on (the fixed channels go
    /// through the link's ``FixedChannelTable``, not through the manager).
    func makeL2CAPManager(role: HCIRole) -> L2CAPChannelManager {
        var manager = L2CAPChannelManager(role: role, configuration: .init(signalingTimeout: configuration.l2capSignalingTimeout,
                                                                          creditReturn: .onConsumption))
        for (spsm, listener) in l2cap.listeners { try? manager.listen(spsm: spsm, parameters: listener.parameters, security: listener.security) }
        return manager
    }

    // MARK: LE signaling (Core 5.4, Vol 3, Part A, 4)

    /// Sends a peripheral's Connection Parameter Update Request to the central. Returns once it is queued; the
    /// central's answer arrives as a `connectionUpdated` event when it applies the values.
    public func requestConnectionParameterUpdate(_ request: L2CAPConnectionParameterUpdateRequest, on connection: HostConnection) async throws {
        let handle = connection.handle
        let actions = try onL2CAP(handle, link: connection.link) { l2cap throws(L2CAPError) in
            try l2cap.requestConnectionParameterUpdate(request)
        }
        performL2CAP(actions, handle: handle)
    }
}
