import BLEWire

/// The host side of HCI ACL data flow control. Core 5.4, Vol 4, Part E, 4.1.1.
///
/// The controller has `bufferCount` buffers of `bufferSize` octets (LE Read Buffer Size). The host never has more
/// ACL packets outstanding than buffers; each Number Of Completed Packets event returns credits, and a Disconnection
/// Complete returns every credit still held by that connection's packets. Outgoing L2CAP PDUs are fragmented to the
/// buffer size here and queued per connection; connections are served round-robin so one busy link cannot starve
/// the others.
///
/// Per connection it also counts, since the connection came up, the packets queued and the packets the controller
/// completed (``queuedTotal(handle:)``, ``completedTotal(handle:)``): a connection's packets complete in the order they
/// were queued, so "completed total ≥ the queued total at some moment" says everything queued before that moment was
/// completed. ``ACLDrain`` waits on these counts before a channel or a link closes.
///
/// Sans-I/O: ``enqueue(handle:pdu:)`` and ``receive(_:)`` return the packets to hand to the transport now.
public struct ACLFlow: Sendable {
    /// Maximum ACL payload per packet.
    public let bufferSize: Int
    /// Total controller buffers.
    public let bufferCount: Int
    /// Buffers currently free.
    public private(set) var freeBuffers: Int
    /// Per connection: its queue, packets in the controller's buffers, and the counts since it came up. Looked up on
    /// every packet: a `SmallMap` (a linear search over the few links up, no hashing).
    private var links = SmallMap<ConnectionHandle, LinkFlow>()
    /// The connections with a queue, in the order they are served.
    private var order: [ConnectionHandle] = []
    private var cursor = 0
    /// Packets queued, over all connections (kept as a count: a drain with nothing queued looks nothing up).
    public private(set) var queuedPacketCount = 0

    /// Creates a flow for a controller with `bufferCount` buffers of `bufferSize` octets (both at least 1).
    public init(bufferSize: Int, bufferCount: Int) {
        self.bufferSize = max(1, bufferSize)
        self.bufferCount = max(1, bufferCount)
        self.freeBuffers = self.bufferCount
    }

    private struct LinkFlow: Sendable {
        var queue = FIFO<HCIACLPacket>()
        var inFlight = 0
        var queued: UInt64 = 0
        var completed: UInt64 = 0
    }

    /// Packets sent on `handle` and not yet completed.
    public func inFlightCount(handle: ConnectionHandle) -> Int { links[handle]?.inFlight ?? 0 }
    /// Packets queued for `handle`.
    public func queuedCount(handle: ConnectionHandle) -> Int {
        guard queuedPacketCount > 0 else { return 0 }
        return links[handle]?.queue.count ?? 0
    }
    /// Packets queued for `handle` since it came up (each fragment counts; sent or not): the mark that "everything
    /// queued until now" is complete when ``completedTotal(handle:)`` reaches it. 0 for a connection the flow does not
    /// know (any more).
    public func queuedTotal(handle: ConnectionHandle) -> UInt64 { links[handle]?.queued ?? 0 }
    /// Packets of `handle` the controller reported completed since it came up (Number Of Completed Packets).
    public func completedTotal(handle: ConnectionHandle) -> UInt64 { links[handle]?.completed ?? 0 }
    /// Packets of `handle` queued or in flight: not yet completed by the controller.
    public func outstandingCount(handle: ConnectionHandle) -> Int { queuedCount(handle: handle) + inFlightCount(handle: handle) }

    /// Fragments an L2CAP PDU for `handle`, queues it, and returns the packets that may be sent now.
    public mutating func enqueue(handle: ConnectionHandle, pdu: [UInt8]) -> [HCIACLPacket] {
        let bufferSize = bufferSize
        func fragment(into queue: inout FIFO<HCIACLPacket>) -> Int {
            // A PDU that fits one buffer is queued as it is (no copy of its octets).
            guard pdu.count > bufferSize else {
                queue.append(HCIACLPacket(handle: handle, boundary: .firstNonFlushable, data: pdu))
                return 1
            }
            var offset = 0
            var fragments = 0
            repeat {
                let end = min(offset + bufferSize, pdu.count)
                queue.append(HCIACLPacket(handle: handle, boundary: offset == 0 ? .firstNonFlushable : .continuing,
                                          data: Array(pdu[offset..<end])))
                fragments += 1
                offset = end
            } while offset < pdu.count
            return fragments
        }
        let added: Int
        if let n = links.withValue(forKey: handle, { link -> Int in
            let n = fragment(into: &link.queue)
            link.queued += UInt64(n)
            return n
        }) {
            added = n
        } else {
            var link = LinkFlow()
            added = fragment(into: &link.queue)
            link.queued = UInt64(added)
            links[handle] = link
            order.append(handle)
        }
        queuedPacketCount += added
        return drain()
    }

    /// Feeds an event: Number Of Completed Packets returns credits, Disconnection Complete drops the connection's
    /// queue and credits. Returns the packets that may be sent now.
    public mutating func receive(_ event: HCIEvent) -> [HCIACLPacket] {
        switch event {
        case .numberOfCompletedPackets(let e):
            for entry in e.entries {
                // Never trust the controller to return more than we gave it.
                guard let returned = links.withValue(forKey: entry.handle, { link -> Int in
                    let returned = min(link.inFlight, Int(entry.completedPackets))
                    link.inFlight -= returned
                    link.completed += UInt64(returned)
                    return returned
                }) else { continue }
                freeBuffers = min(bufferCount, freeBuffers + returned)
            }
            return drain()
        case .disconnectionComplete(let e) where e.status == .success:
            return connectionClosed(handle: e.handle)
        default:
            return []
        }
    }

    /// Forgets `handle`: its queued packets are dropped, its buffers come back, and its counts start again at 0.
    public mutating func connectionClosed(handle: ConnectionHandle) -> [HCIACLPacket] {
        if let link = links.removeValue(forKey: handle) {
            freeBuffers = min(bufferCount, freeBuffers + link.inFlight)
            queuedPacketCount -= link.queue.count
        }
        order.removeAll { $0 == handle }
        return drain()
    }

    /// The number of packets an L2CAP PDU of `length` octets takes.
    public func fragmentCount(forPDULength length: Int) -> Int { max(1, (length + bufferSize - 1) / bufferSize) }

    private mutating func drain() -> [HCIACLPacket] {
        guard freeBuffers > 0, queuedPacketCount > 0 else { return [] }
        var out: [HCIACLPacket] = []
        while freeBuffers > 0, queuedPacketCount > 0 {
            var sentOne = false
            for _ in 0..<order.count {
                if cursor >= order.count { cursor = 0 }
                let handle = order[cursor]
                cursor += 1
                guard let sent = links.withValue(forKey: handle, { link -> HCIACLPacket? in
                    guard let packet = link.queue.popFirst() else { return nil }
                    link.inFlight += 1
                    return packet
                }), let packet = sent else { continue }
                out.append(packet)
                queuedPacketCount -= 1
                freeBuffers -= 1
                sentOne = true
                break
            }
            if !sentOne { break }
        }
        return out
    }
}
