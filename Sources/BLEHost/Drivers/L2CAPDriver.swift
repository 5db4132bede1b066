import BLEProtocols
import BLEWire
import Logging

/// The narrow port through which the ``L2CAPDriver`` talks back to its host: what a link's channel manager decided
/// that reaches beyond the link (frames to send, fixed-channel payloads to route, channels to hand out, the delivery
/// ledgers, commands). The host carries the requests out in order once the driver's step on the link is over.
protocol L2CAPPort {
    /// Sends an encoded L2CAP frame on the link (queued past the link's limit: signaling is bounded by its
    /// protocol, K-frames by the peer's credits).
    mutating func send(_ frame: [UInt8])
    /// Routes a payload of a fixed channel (ATT, SMP, one a consumer opened).
    mutating func deliverFixed(_ payload: [UInt8], channel: L2CAPChannelID)
    /// A channel opened: its incoming SDUs come on `stream`, its delivery is recorded in `delivery`; the host makes
    /// the ``L2CAPChannel`` and hands it to whoever opened it or listens on its SPSM.
    mutating func opened(_ info: L2CAPChannelInfo, stream: AsyncStream<[UInt8]>, delivery: ChannelDelivery)
    /// Every K-frame of `cid` went to the ACL flow (its delivery ledger marks the point).
    mutating func handedOn(_ cid: L2CAPChannelID)
    /// `cid` closed: a close waiting behind its queue waits for what the flow has.
    mutating func closed(_ cid: L2CAPChannelID)
    /// Asks the controller to apply connection parameters (the central accepted a peripheral's request).
    mutating func updateConnection(_ request: L2CAPConnectionParameterUpdateRequest)
    /// What the RTX timer `key` calls when it fires.
    func timerHandler(for key: L2CAPTimerKey) -> @Sendable (TimerSet<L2CAPTimerKey>.Firing) async -> Void
}

/// The host-wide part of L2CAP (each link's part is its ``Link``): who listens on which SPSM, the identities of
/// waiters, and the RTX timers the links' channel managers asked for. ``perform(_:on:port:)`` carries out a link's
/// channel manager's actions on the link in place and asks the host, through its ``L2CAPPort``, for the rest.
struct L2CAPDriver {
    /// SPSMs this host accepts LE credit based connections on, with their parameters and consumers.
    var listeners: [L2CAPSPSM: L2CAPListener] = [:]
    private var lastListenerID = 0
    private var lastCreditWaiter = 0
    /// The RTX timers of the links' L2CAP managers.
    var timers = TimerSet<L2CAPTimerKey>()

    /// An identity for a new listener.
    mutating func newListenerID() -> Int {
        lastListenerID += 1
        return lastListenerID
    }

    /// An identity for a sender about to wait for credits.
    mutating func newCreditWaiter() -> Int {
        lastCreditWaiter += 1
        return lastCreditWaiter
    }

    /// Carries out the actions of `link`'s channel manager, in order: SDUs to their streams, failed opens to their
    /// waiters, closed channels' streams finished and senders woken, connection parameter outcomes to their
    /// waiters, timers; through `port`, the frames to send, fixed-channel payloads, opened channels, delivery
    /// marks and connection updates.
    mutating func perform(_ actions: [L2CAPChannelManager.Action], on link: inout Link, port: inout some L2CAPPort, logger: Logger) {
        let connection = link.connection
        for action in actions {
            switch action {
            case .send(let frame):
                port.send(frame.encoded)
            case .deliverFixed(let cid, let payload):
                port.deliverFixed(payload, channel: cid)
            case .deliverSDU(let cid, let sdu):
                link.sduStreams[cid]?.yield(sdu)
            case .channelOpened(let info):
                // The channel's stream and ledger are in place before anything else of this step reaches it.
                let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self)
                let delivery = ChannelDelivery()
                link.sduStreams[info.localCID] = continuation
                link.deliveries[info.localCID] = delivery
                link.closingChannels.remove(info.localCID)
                port.opened(info, stream: stream, delivery: delivery)
            case .connectionFailed(let cid, let failure):
                link.openWaiters.removeValue(forKey: cid)?(
                    .failure(HostError(.l2capConnectionFailed(failure), "\(cid) did not open: \(failure)")))
            case .channelClosed(let cid, let reason):
                logger.debug("handle \(connection.handle): \(cid) closed: \(reason)")
                link.sduStreams.removeValue(forKey: cid)?.finish()
                Self.wakeCreditWaiters(cid, on: &link)
                // Nothing more leaves on it (what it still held is dropped, and stays unconfirmed in its ledger).
                port.closed(cid)
            case .updateConnectionParameters(let request):
                port.updateConnection(request)
            case .connectionParameterUpdateFinished(let outcome):
                logger.debug("handle \(connection.handle): connection parameter update request: \(outcome)")
                // Accepted: the wait ends with LE Connection Update Complete (the link's teardown ends it otherwise).
                if outcome != .answered(.accepted) && outcome != .linkClosed {
                    let waiters = link.updateWaiters.values
                    link.updateWaiters = [:]
                    for waiter in waiters {
                        waiter.resume(throwing: HostError(.connectionParameterUpdateRefused(outcome),
                                                          "the central did not take the parameters: \(outcome)"))
                    }
                }
            case .reconfigurationFinished(let cids, let outcome):
                logger.debug("handle \(connection.handle): reconfiguration of \(cids): \(outcome)")
            case .startTimer(let timer, let duration):
                let key = L2CAPTimerKey(link: connection.link, timer: timer)
                timers.start(key, after: duration, handler: port.timerHandler(for: key))
            case .cancelTimer(let timer):
                timers.cancel(L2CAPTimerKey(link: connection.link, timer: timer))
            case .readyToSend(let cid):
                // This channel's K-frames are all in the flow (handed over above, in order).
                port.handedOn(cid)
                Self.wakeCreditWaiters(cid, on: &link)
            }
        }
    }

    /// Wakes the senders of `cid` waiting for the peer's credits.
    static func wakeCreditWaiters(_ cid: L2CAPChannelID, on link: inout Link) {
        let waiters = link.creditWaiters.filter { $0.value.cid == cid }
        for (id, waiter) in waiters {
            link.creditWaiters[id] = nil
            waiter.continuation.resume()
        }
    }
}
