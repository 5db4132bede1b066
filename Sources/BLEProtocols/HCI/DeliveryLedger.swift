/// What one sender (an L2CAP channel) handed on, and how much of it the controller confirmed, in octets of its own
/// data (SDU octets, not L2CAP or HCI headers).
///
/// The controller confirms packets per link (HCI Number Of Completed Packets), not octets of one channel; and a link's
/// packets complete in the order they were queued. So whenever every octet the sender has handed on so far is in the
/// link's ACL queue (its own queue of K-frames waiting for credits is empty) the host records a mark: the link's
/// queued-packet count then (``ACLFlow/queuedTotal(handle:)``), with the sender's octet count. Once the link's
/// completed-packet count reaches a mark, the octets up to it are confirmed. Confirmation is therefore at the
/// granularity of the marks (an SDU, when one is recorded per SDU sent) and never overstated.
///
/// Sans-I/O; one small entry per mark still unconfirmed, nothing per packet.
public struct DeliveryLedger: Sendable, Hashable {
    private struct Mark: Sendable, Hashable {
        var packets: UInt64
        var octets: Int
    }

    /// Octets handed to the sender (accepted for sending), in total.
    public private(set) var sentOctets = 0
    /// Octets the controller confirmed, in total (at most ``sentOctets``).
    public private(set) var confirmedOctets = 0
    /// The marks not yet reached, oldest first.
    private var marks: [Mark] = []
    private var head = 0

    /// An empty ledger.
    public init() {}

    /// Octets handed on and not (yet) confirmed.
    public var unconfirmedOctets: Int { sentOctets - confirmedOctets }

    /// The sender accepted `octets` more for sending.
    public mutating func sent(_ octets: Int) { sentOctets += max(0, octets) }

    /// Everything sent so far is in the link's ACL queue, whose queued-packet count is now `queuedTotal`.
    public mutating func handedOn(throughPacket queuedTotal: UInt64) {
        if let last = marks.last, head < marks.count, last.packets >= queuedTotal {
            // A mark at the same point (or later: the count never goes back) already exists: it now covers more.
            marks[marks.count - 1].octets = max(last.octets, sentOctets)
            return
        }
        if marks.count - head == 0 {
            marks.removeAll(keepingCapacity: true)
            head = 0
        }
        marks.append(Mark(packets: queuedTotal, octets: sentOctets))
    }

    /// The link's controller has completed `completedTotal` packets since the link came up: the marks it reached are
    /// confirmed.
    public mutating func confirm(completedThrough completedTotal: UInt64) {
        while head < marks.count, marks[head].packets <= completedTotal {
            confirmedOctets = max(confirmedOctets, marks[head].octets)
            head += 1
        }
        if head == marks.count {
            marks.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 32, head * 2 >= marks.count {
            marks.removeFirst(head)
            head = 0
        }
    }
}
