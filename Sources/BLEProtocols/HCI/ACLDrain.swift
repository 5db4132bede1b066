import BLEWire

/// How a wait for the controller to complete the ACL data queued on a link ended (see ``ACLDrain``).
public enum DeliveryOutcome: Sendable, Hashable, CustomStringConvertible {
    /// The controller reported every packet the wait covered completed (HCI Number Of Completed Packets).
    case completed
    /// The wait's time ran out first; `unconfirmedPackets` of the packets it covered were not completed (and the close
    /// went ahead).
    case timedOut(unconfirmedPackets: Int)
    /// The link went down first, with `unconfirmedPackets` of the packets the wait covered not completed.
    case linkClosed(unconfirmedPackets: Int)

    /// The packets the wait covered that the controller did not report completed: 0 for ``completed``.
    public var unconfirmedPackets: Int {
        switch self {
        case .completed: 0
        case .timedOut(let packets), .linkClosed(let packets): packets
        }
    }

    public var description: String {
        switch self {
        case .completed: "every packet completed"
        case .timedOut(let packets): "timed out with \(packets) packet(s) not completed"
        case .linkClosed(let packets): "the link closed with \(packets) packet(s) not completed"
        }
    }
}

/// Closes that wait for the data queued before them: an L2CAP channel's Disconnection Request waits until the
/// channel's K-frames have all gone to the controller and the controller completed them, a link's HCI Disconnect
/// until the controller completed every packet the host had queued on the link when the disconnection was asked for.
/// Each wait is bounded: when its time runs out the close goes ahead and the outcome says so.
///
/// Why: the host's send returns once data is queued, and a Disconnection Request or an HCI Disconnect issued next
/// overtakes the packets still waiting for controller buffers (HCI ACL flow control, Core 5.4, Vol 4, Part E, 4.1.1)
/// or sitting in them; a controller that disconnects discards what it holds.
///
/// Sans-I/O and clock-free, over the counts ``ACLFlow`` keeps per link (packets queued since the link came up, and
/// packets completed): the host reports progress — packets completed, a channel's credit queue running empty, a timer
/// firing, the link going down — and performs the returned actions. Nothing here touches the ACL data path: a wait
/// is a mark in the link's packet count, checked when completions arrive.
public struct ACLDrain<Key: Hashable & Sendable>: Sendable {
    /// What the host must do, in order.
    public enum Action: Sendable, Hashable {
        /// Start the wait's timer; call ``timerFired(_:flow:)`` when it expires.
        case startTimer(Key, Duration)
        /// Cancel the wait's timer.
        case cancelTimer(Key)
        /// The wait is over: go ahead with the close (or, for ``DeliveryOutcome/linkClosed(unconfirmedPackets:)``,
        /// report it: the link is gone).
        case finish(Key, DeliveryOutcome)
    }

    private struct Wait: Sendable {
        let handle: ConnectionHandle
        /// The channel whose K-frames, still waiting for the peer's credits, must join the flow before the mark is set.
        var channel: L2CAPChannelID?
        /// The link's queued-packet count to reach: every packet up to it completed.
        var mark: UInt64?
    }

    private var waits: [Key: Wait] = [:] {
        didSet { isEmpty = waits.isEmpty }
    }

    /// An empty set of waits.
    public init() {}

    /// Whether no wait is going on (the host skips the bookkeeping on completions then). Stored, not read from the
    /// waits: the host asks on every Number Of Completed Packets, and reading a `[Key: Wait]` from outside this module
    /// instantiates its generic metadata (about 330 instructions a call).
    public private(set) var isEmpty = true

    /// Starts waiting until the controller completed every packet queued on `handle` so far. With `channel` given and
    /// `channelQueued` true, the K-frames still waiting for the peer's credits on that channel are waited for first:
    /// the mark is set once ``channelQueueEmptied(_:handle:flow:)`` says they all joined the flow. Finishes at once
    /// when nothing is outstanding; otherwise starts a timer of `timeout`.
    public mutating func wait(_ key: Key, handle: ConnectionHandle, after channel: L2CAPChannelID? = nil, channelQueued: Bool = false,
                              flow: ACLFlow, timeout: Duration) -> [Action] {
        var wait = Wait(handle: handle)
        if let channel, channelQueued {
            wait.channel = channel
        } else {
            wait.mark = flow.queuedTotal(handle: handle)
            if flow.completedTotal(handle: handle) >= flow.queuedTotal(handle: handle) { return [.finish(key, .completed)] }
        }
        waits[key] = wait
        return [.startTimer(key, timeout)]
    }

    /// Every K-frame `channel` had waiting for credits has joined the flow: the waits behind it set their marks (and
    /// finish when the flow has completed everything already).
    public mutating func channelQueueEmptied(_ channel: L2CAPChannelID, handle: ConnectionHandle, flow: ACLFlow) -> [Action] {
        guard !waits.isEmpty else { return [] }
        for (key, wait) in waits where wait.handle == handle && wait.channel == channel && wait.mark == nil {
            waits[key]?.channel = nil
            waits[key]?.mark = flow.queuedTotal(handle: handle)
        }
        return completed(flow: flow)
    }

    /// The flow recorded completed packets (after Number Of Completed Packets): the waits whose marks are reached finish.
    public mutating func completed(flow: ACLFlow) -> [Action] {
        guard !waits.isEmpty else { return [] }
        var actions: [Action] = []
        for (key, wait) in waits {
            guard let mark = wait.mark, flow.completedTotal(handle: wait.handle) >= mark else { continue }
            waits[key] = nil
            actions += [.cancelTimer(key), .finish(key, .completed)]
        }
        return actions
    }

    /// A wait's timer fired: the wait ends, with the packets it covered that were not completed (for a wait still
    /// behind its channel's credit queue, every packet outstanding on the link).
    public mutating func timerFired(_ key: Key, flow: ACLFlow) -> [Action] {
        guard let wait = waits.removeValue(forKey: key) else { return [] }
        return [.finish(key, .timedOut(unconfirmedPackets: unconfirmed(wait, flow: flow)))]
    }

    /// The link with `handle` went down (call before the flow forgets it): its waits end.
    public mutating func linkClosed(handle: ConnectionHandle, flow: ACLFlow) -> [Action] {
        guard !waits.isEmpty else { return [] }
        var actions: [Action] = []
        for (key, wait) in waits where wait.handle == handle {
            waits[key] = nil
            actions += [.cancelTimer(key), .finish(key, .linkClosed(unconfirmedPackets: unconfirmed(wait, flow: flow)))]
        }
        return actions
    }

    /// Abandons a wait (its caller went away): its timer stops, nothing finishes.
    public mutating func cancel(_ key: Key) -> [Action] {
        guard waits.removeValue(forKey: key) != nil else { return [] }
        return [.cancelTimer(key)]
    }

    private func unconfirmed(_ wait: Wait, flow: ACLFlow) -> Int {
        let completed = flow.completedTotal(handle: wait.handle)
        let mark = wait.mark ?? flow.queuedTotal(handle: wait.handle)
        return mark > completed ? Int(clamping: mark - completed) : 0
    }
}
