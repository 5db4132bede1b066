import BLEProtocols
import BLEWire

/// One LE link as the host runs it: its identity and parameters, L2CAP (reassembly, the channel manager, the
/// consumers of fixed and credit based channels), its security, and the callers waiting on it.
struct Link {
    var connection: HostConnection
    var reassembler: L2CAPReassembler
    /// L2CAP on this link: fixed channels, signaling, credit based channels.
    var l2cap: L2CAPChannelManager
    /// Per fixed channel (ATT, LE signaling, SMP, and any a consumer opened): who takes its payloads.
    var fixed = FixedChannelTable.standard
    /// Per open credit based channel (local CID): the stream of incoming SDUs.
    var sduStreams: [L2CAPChannelID: AsyncStream<[UInt8]>.Continuation] = [:]
    /// Per credit based channel (local CID) opened on this link: the octets sent on it and confirmed by the controller.
    var deliveries: [L2CAPChannelID: ChannelDelivery] = [:]
    /// Credit based channels whose close is waiting for their data to be delivered: they take no new SDUs.
    var closingChannels: Set<L2CAPChannelID> = []
    /// Senders waiting for the peer's credits: per waiter, its channel and continuation.
    var creditWaiters: [Int: (cid: L2CAPChannelID, continuation: CheckedContinuation<Void, Never>)] = [:]
    /// What takes the outcome of each channel this side is opening, per local CID (in place before the request
    /// leaves).
    var openWaiters: [L2CAPChannelID: (Result<L2CAPChannel, any Error>) -> Void] = [:]
    /// Pairing and encryption on this link.
    var security = LinkSecurityState()
    /// Callers of ``HCIHost/setPHY(_:transmit:receive:)`` waiting for LE PHY Update Complete.
    var phyWaiters: [Int: CheckedContinuation<HostConnection, any Error>] = [:]
    /// Callers of ``HCIHost/updateConnectionParameters(_:interval:latency:supervisionTimeout:)`` and
    /// ``HCIHost/requestConnectionParameters(_:interval:latency:supervisionTimeout:)`` waiting for LE Connection Update
    /// Complete.
    var updateWaiters: [Int: CheckedContinuation<HostConnection, any Error>] = [:]
}

/// The links up now, by connection handle, and the identities given to them: one ``LinkID`` per link, never reused
/// (controllers give a handle to the next link at once, so nothing that outlives a link is keyed on its handle).
/// The data path finds a link on every packet: a `SmallMap` (a linear search over the few links up, no hashing).
struct LinkRegistry: Sequence {
    private var links = SmallMap<ConnectionHandle, Link>()
    private var lastLinkID: UInt64 = 0
    private var lastWaiterID = 0

    /// The link with `handle`.
    subscript(handle: ConnectionHandle) -> Link? {
        get { links[handle] }
        set { links[handle] = newValue }
        // `links[handle]?.field = …` changes the link in place, without a copy of it.
        _modify { yield &links[handle] }
    }

    /// Runs `body` on the link with `handle` in place and returns its result; `nil` without one. Unlike
    /// `var link = self[handle]; …; self[handle] = link`, nothing is copied: not the link, and not its buffers and
    /// tables on write (the data path's way in).
    mutating func update<R>(_ handle: ConnectionHandle, _ body: (inout Link) throws -> R) rethrows -> R? {
        try links.withValue(forKey: handle, body)
    }

    /// A new link's identity.
    mutating func nextID() -> LinkID {
        lastLinkID += 1
        return LinkID(rawValue: lastLinkID)
    }

    /// An identity for a caller about to wait on a link (see ``Link/phyWaiters``).
    mutating func newWaiterID() -> Int {
        lastWaiterID += 1
        return lastWaiterID
    }

    /// Whether the link with `handle` is up and is `link` (not a newer link that got the same handle); any link with
    /// `handle` when `link` is `nil`.
    /// (Read in place: `self[handle]` copies the whole link, and the data path asks on every send.)
    mutating func isCurrent(_ handle: ConnectionHandle, is link: LinkID?) -> Bool {
        links.withValue(forKey: handle) { up in link == nil || up.connection.link == link } ?? false
    }

    /// The identity of the link with `handle`, read in place; `nil` without one.
    mutating func linkID(of handle: ConnectionHandle) -> LinkID? {
        links.withValue(forKey: handle) { $0.connection.link }
    }

    /// Whether a link with `handle` is up (no copy of it).
    func contains(_ handle: ConnectionHandle) -> Bool { links.contains(handle) }

    /// The links up, by handle.
    var connections: [HostConnection] { links.values.map(\.connection).sorted { $0.handle < $1.handle } }
    var handles: [ConnectionHandle] { links.keys }
    var values: [Link] { links.values }

    /// Takes the link with `handle` out of the registry.
    mutating func remove(_ handle: ConnectionHandle) -> Link? { links.removeValue(forKey: handle) }

    /// Takes every link out of the registry.
    mutating func removeAll() -> [Link] {
        let all = links.values
        links.removeAll()
        return all
    }

    func makeIterator() -> SmallMap<ConnectionHandle, Link>.Iterator { links.makeIterator() }
}
