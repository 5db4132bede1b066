import BLEProtocols
import BLEWire

extension HCIHost {
    /// What became of an L2CAP payload offered with ``sendL2CAPNow(_:channel:on:)``.
    enum SendNow {
        /// Handed to the outbox, in order; when `mustDrain`, the caller drains it (nobody else is).
        case handedOver(mustDrain: Bool)
        /// The link's queue is full: the caller waits for room (``sendL2CAP(_:channel:on:)``).
        case noRoom
        /// The link is gone, or the transport ended: nothing was sent.
        case notConnected
    }

    /// Hands one L2CAP payload to the outbox in this step when its link has queue room now: the part of
    /// ``sendL2CAP(_:channel:on:)`` that never suspends, for callers on this host's executor (a ``GATTEngine``
    /// sending a notification), which then need no suspension at all unless they must drain the outbox.
    func sendL2CAPNow(_ payload: [UInt8], channel: L2CAPChannelID, on connection: HostConnection) -> SendNow {
        guard current(connection.handle, is: connection.link) else { return .notConnected }
        guard acl.hasRoom(on: connection.handle) else { return .noRoom }
        let packets = acl.flow.enqueue(handle: connection.handle, pdu: L2CAPBasicFrame(channelID: channel, payload: payload).encoded)
        guard !packets.isEmpty else { return .handedOver(mustDrain: false) }
        do {
            return .handedOver(mustDrain: try outbox.handOver(packets.map { .acl($0) }))
        } catch {
            transportEnded(error)
            return .notConnected
        }
    }
}
