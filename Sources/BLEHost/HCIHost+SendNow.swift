import BLEProtocols
import BLEWire

extension HCIHost {
    /// What became of an L2CAP payload offered with ``sendL2CAPNow(_:channel:on:)``.
    enum SendNow {
        /// Handed to the outbox, in order; when `mustDrain`, the caller drains it (nobody else is).
        case handedOver(mustDrain: Bool)
        /// The link's queue is full: the caller waits for room (``sendL2CAP(_:channel:on:)``).
        case noRoom
        /// The link is gone: nothing was sent.
        case notConnected
        /// The transport ended as the packets were handed over (the host is told): nothing was sent.
        case transportEnded
    }

    /// Hands one L2CAP payload to the outbox in this step when its link has queue room now: the part of
    /// ``sendL2CAP(_:channel:on:)`` that never suspends, for callers on this host's executor (a ``GATTEngine``
    /// sending a notification), which then need no suspension at all unless they must drain the outbox.
    func sendL2CAPNow(_ payload: [UInt8], channel: L2CAPChannelID, on connection: HostConnection) -> SendNow {
        sendL2CAPNow(payload, channel: channel, handle: connection.handle, link: connection.link)
    }

    /// ``sendL2CAPNow(_:channel:on:)`` by handle, on the link `link` when given (otherwise whichever has the handle).
    func sendL2CAPNow(_ payload: [UInt8], channel: L2CAPChannelID, handle: ConnectionHandle, link: LinkID?) -> SendNow {
        guard current(handle, is: link) else { return .notConnected }
        guard acl.hasRoom(on: handle) else { return .noRoom }
        let packets = acl.flow.enqueue(handle: handle, pdu: L2CAPBasicFrame(channelID: channel, payload: payload).encoded)
        guard !packets.isEmpty else { return .handedOver(mustDrain: false) }
        // Handed over in this step, in the order the flow released them (after any fragments of an earlier PDU that
        // Number Of Completed Packets let go).
        do {
            return .handedOver(mustDrain: try outbox.handOver(packets.map { .acl($0) }))
        } catch {
            transportEnded(error)
            return .transportEnded
        }
    }
}
