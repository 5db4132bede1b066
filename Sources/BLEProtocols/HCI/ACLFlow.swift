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
    /// Per connection: packets in the controller's buffers, and the counts since it came up.
    private var counts: [ConnectionHandle: Counts] = [:]
    private var queues: [ConnectionHandle: FIFO<HCIACLPacket>] = [:]
    private var order: [ConnectionHandle] = []
    private var cursor = 0

    /// Creates a flow for a controller with `bufferCount` buffers of `bufferSize` octets (both at least 1).
    public init(bufferSize: Int, bufferCount: Int) {
        self.bufferSize = max(1, bufferSize)
        self.bufferCount = max(1, bufferCount)
        self.freeBuffers = self.bufferCount
    }

    private struct Counts: Sendable {
        var inFlight = 0
        var queued: UInt64 = 0
        var completed: UInt64 = 0
    }

    /// Packets queued, over all connections.
    public var queuedPacketCount: Int { queues.values.reduce(0) { $0 + $1.count } }
    /// Packets sent on `handle` and not yet completed.
    public func inFlightCount(handle: ConnectionHandle) -> Int { counts[handle]?.inFlight ?? 0 }
    /// Packets queued for `handle`.
    public func queuedCount(handle: ConnectionHandle) -> Int { queues[handle]?.count ?? 0 }
    /// Packets queued for `handle` since it came up (each fragment counts; sent or not): the mark that "everything
    /// queued until now" is complete when ``completedTotal(handle:)`` reaches it. 0 for a connection the flow does not
    /// know (any more).
    public func queuedTotal(handle: ConnectionHandle) -> UInt64 { counts[handle]?.queued ?? 0 }
    /// Packets of `handle` the controller reported completed since it came up (Number Of Completed Packets).
    public func completedTotal(handle: ConnectionHandle) -> UInt64 { counts[handle]?.completed ?? 0 }
    /// Packets of `handle` queued or in flight: not yet completed by the controller.
    public func outstandingCount(handle: ConnectionHandle) -> Int { queuedCount(handle: handle) + inFlightCount(handle: handle) }

    /// Fragments an L2CAP PDU for `handle`, queues it, and returns the packets that may be sent now.
    public mutating func enqueue(handle: ConnectionHandle, pdu: [UInt8]) -> [HCIACLPacket] {
        var fragments: [HCIACLPacket] = []
        var offset = 0
        repeat {
            let end = min(offset + bufferSize, pdu.count)
            fragments.append(HCIACLPacket(handle: handle, boundary: offset == 0 ? .firstNonFlushable : .continuing,
                                          data: Array(pdu[offset..<end])))
            offset = end
        } while offset < pdu.count
        if queues[handle] == nil {
            queues[handle] = FIFO()
            order.append(handle)
        }
        queues[handle, default: FIFO()].append(contentsOf: fragments)
        counts[handle, default: Counts()].queued += UInt64(fragments.count)
        return drain()
    }

    /// Feeds an event: Number Of Completed Packets returns credits, Disconnection Complete drops the connection's
    /// queue and credits. Returns the packets that may be sent now.
    public mutating func receive(_ event: HCIEvent) -> [HCIACLPacket] {
        switch event {
        case .numberOfCompletedPackets(let e):
            for entry in e.entries {
                guard var count = counts[entry.handle] else { continue }
                // Never trust the controller to return more than we gave it.
                let returned = min(count.inFlight, Int(entry.completedPackets))
                count.inFlight -= returned
                count.completed += UInt64(returned)
                counts[entry.handle] = count
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
        freeBuffers = min(bufferCount, freeBuffers + (counts[handle]?.inFlight ?? 0))
        counts[handle] = nil
        queues[handle] = nil
        order.removeAll { $0 == handle }
        return drain()
    }

    /// The number of packets an L2CAP PDU of `length` octets takes.
    public func fragmentCount(forPDULength length: Int) -> Int { max(1, (length + bufferSize - 1) / bufferSize) }

    private mutating func drain() -> [HCIACLPacket] {
        var out: [HCIACLPacket] = []
        while freeBuffers > 0, !order.isEmpty {
            var sentOne = false
            for _ in 0..<order.count {
                if cursor >= order.count { cursor = 0 }
                let handle = order[cursor]
                cursor += 1
                guard queues[handle]?.isEmpty == false, let packet = queues[handle]?.popFirst() else { continue }
                out.append(packet)
                counts[handle, default: Counts()].inFlight += 1
                freeBuffers -= 1
                sentOne = true
                break
            }
            if !sentOne { break }
        }
        return out
    }
}
