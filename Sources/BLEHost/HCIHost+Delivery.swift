import BLEProtocols
import BLEWire
import Synchronization

/// What became of the octets an application handed to an ``L2CAPChannel``: how many it sent, and how many of those
/// the controller confirmed (HCI Number Of Completed Packets) before the channel closed.
///
/// ``L2CAPChannel/close()`` returns it when every octet was confirmed, and throws
/// ``HostErrorCode/undeliveredData(_:)`` with it when some were not (the close's wait ran out, or the link went down).
/// Confirmation is per SDU: an SDU counts as confirmed once the controller completed the last of its packets. A
/// controller completes a packet once the peer's link layer acknowledged it, so "confirmed" means it reached the peer's
/// controller; octets not confirmed may still have arrived, but nobody can say so.
public struct L2CAPDelivery: Sendable, Hashable, CustomStringConvertible {
    /// SDU octets the channel accepted for sending (``L2CAPChannel/send(_:)``) while it was open.
    public var sentOctets: Int
    /// Of ``sentOctets``, the octets the controller confirmed before the channel closed.
    public var confirmedOctets: Int

    /// Creates a delivery report.
    public init(sentOctets: Int, confirmedOctets: Int) {
        self.sentOctets = sentOctets
        self.confirmedOctets = confirmedOctets
    }

    /// Octets sent and not confirmed: 0 when everything was delivered.
    public var unconfirmedOctets: Int { max(0, sentOctets - confirmedOctets) }

    public var description: String { "\(confirmedOctets) of \(sentOctets) octet(s) confirmed delivered" }
}

/// One channel's ``DeliveryLedger``, shared by the host (which records) and the channel's values (whose close reads it,
/// even after the link went down).
final class ChannelDelivery: Sendable {
    private let ledger = Mutex(DeliveryLedger())

    /// The report so far.
    var report: L2CAPDelivery {
        ledger.withLock { L2CAPDelivery(sentOctets: $0.sentOctets, confirmedOctets: $0.confirmedOctets) }
    }

    /// The channel accepted an SDU of `octets`.
    func sent(_ octets: Int) { ledger.withLock { $0.sent(octets) } }

    /// Every octet sent so far is in the link's ACL queue, which has queued `queuedTotal` packets since the link came up;
    /// of those the controller completed `completedTotal`.
    func handedOn(throughPacket queuedTotal: UInt64, completedTotal: UInt64) {
        ledger.withLock {
            $0.confirm(completedThrough: completedTotal)
            $0.handedOn(throughPacket: queuedTotal)
        }
    }

    /// The controller completed `completedTotal` packets of the link since it came up.
    func confirm(completedThrough completedTotal: UInt64) { ledger.withLock { $0.confirm(completedThrough: completedTotal) } }
}

/// Closing after the data: a channel's Disconnection Request and a link's HCI Disconnect wait, bounded, until the
/// controller completed what was queued before them (``ACLDrain``).
extension HCIHost {
    /// Waits until the controller completed every packet queued on `handle` so far — after the K-frames `channel` still
    /// has waiting for the peer's credits, when one is given — or until `timeout` runs out, or the link goes down. A
    /// cancelled caller stops waiting at once (as if the time had run out).
    func awaitDelivery(on handle: ConnectionHandle, after channel: L2CAPChannelID? = nil, timeout: Duration) async -> DeliveryOutcome {
        let key = acl.newDrainKey()
        let queued = channel.map { (links[handle]?.l2cap.queuedFrameCount(on: $0) ?? 0) > 0 } ?? false
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<DeliveryOutcome, Never>) in
                acl.drainWaiters[key] = { continuation.resume(returning: $0) }
                performDrain(acl.drain.wait(key, handle: handle, after: channel, channelQueued: queued, flow: acl.flow, timeout: timeout))
            }
        } onCancel: {
            Task { await self.endDeliveryWait(key) }
        }
    }

    /// Carries out the drain machine's actions.
    func performDrain(_ actions: [ACLDrain<Int>.Action]) {
        for action in actions {
            switch action {
            case .startTimer(let key, let duration):
                acl.drainTimers.start(key, after: duration) { [weak self] firing in await self?.drainTimerFired(firing) }
            case .cancelTimer(let key):
                acl.drainTimers.cancel(key)
            case .finish(let key, let outcome):
                acl.drainWaiters.removeValue(forKey: key)?(outcome)
            }
        }
    }

    /// Every K-frame `cid` had waiting for credits went to the flow: its ledger records the point, and closes waiting
    /// behind its queue set their marks.
    func channelHandedOn(_ cid: L2CAPChannelID, handle: ConnectionHandle) {
        links[handle]?.deliveries[cid]?.handedOn(throughPacket: acl.flow.queuedTotal(handle: handle),
                                                 completedTotal: acl.flow.completedTotal(handle: handle))
        if !acl.drain.isEmpty { performDrain(acl.drain.channelQueueEmptied(cid, handle: handle, flow: acl.flow)) }
    }

    private func drainTimerFired(_ firing: TimerSet<Int>.Firing) {
        guard acl.drainTimers.expire(firing) else { return }
        performDrain(acl.drain.timerFired(firing.key, flow: acl.flow))
    }

    /// A waiting caller was cancelled: its wait ends now, with what is not completed yet.
    private func endDeliveryWait(_ key: Int) {
        acl.drainTimers.cancel(key)
        performDrain(acl.drain.timerFired(key, flow: acl.flow))
    }
}
