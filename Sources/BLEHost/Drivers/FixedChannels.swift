import BLEProtocols
import BLEWire

/// Who takes the payloads of one fixed channel (CID 0x0001–0x003F) of a link.
enum FixedChannelHandler {
    /// The link's ``L2CAPChannelManager`` answers (LE signaling, 0x0005).
    case signaling
    /// The host's Security Manager (SMP, 0x0006).
    case securityManager
    /// The host's GATT driver, called in the step that reassembled the PDU (ATT, 0x0004; see
    /// ``HCIHost/openATT(on:)``).
    case gatt
    /// A stream consumer (``HCIHost/openFixedChannel(_:on:)``): it took the channel over.
    case stream(FixedChannelStream)
    /// Nobody yet: payloads kept, in order, for the consumer to come (so nothing sent right after connecting is lost).
    case held([[UInt8]])
}

/// A stream consumer of a fixed channel. A class, so that the handler and route enums holding it have a layout known
/// when compiling (`AsyncStream.Continuation`'s is not: an enum holding one goes through the runtime on every
/// packet).
final class FixedChannelStream {
    let continuation: AsyncStream<[UInt8]>.Continuation

    init(_ continuation: AsyncStream<[UInt8]>.Continuation) { self.continuation = continuation }
}

/// The fixed channels of one link, one handler per CID: the one table every fixed-channel payload is routed through
/// (ATT, SMP and LE signaling alike). A CID without an entry is not a channel this host serves: its frames are
/// dropped and counted. Core 5.4, Vol 3, Part A, 2.1.
///
/// A link starts with ATT held for its consumer, LE signaling answered by its L2CAP manager and SMP by the Security
/// Manager; a consumer registering a CID replaces its handler. Look-ups are a linear search over the few entries
/// (no hashing, no allocation): the notification path asks on every ATT PDU.
struct FixedChannelTable {
    /// Payloads kept per channel for a consumer that has not registered yet.
    static let heldLimit = 64

    private var handlers = SmallMap<L2CAPChannelID, FixedChannelHandler>()

    /// A new link's table: ATT held, LE signaling to the L2CAP manager, SMP to the Security Manager.
    static var standard: FixedChannelTable {
        var table = FixedChannelTable()
        table.handlers[.att] = .held([])
        table.handlers[.leSignaling] = .signaling
        table.handlers[.smp] = .securityManager
        return table
    }

    /// Whether `cid` is in the fixed range this table routes (0x0000–0x003F; the null CID has no entry).
    static func isFixed(_ cid: L2CAPChannelID) -> Bool { cid.rawValue < 0x0040 }

    /// What became of a payload handed to ``route(_:on:)``.
    enum Route {
        /// The link's L2CAP manager is to take the frame (LE signaling).
        case signaling
        /// The Security Manager is to take it.
        case securityManager
        /// The host's GATT driver is to take it.
        case gatt
        /// The stream consumer is to take it.
        case stream(FixedChannelStream)
        /// Kept for the consumer to come.
        case held
        /// Dropped: no handler for that CID, or too many kept already.
        case dropped
    }

    /// Routes one payload of channel `cid`: keeps it in place when nobody took the channel yet, else says who takes it.
    mutating func route(_ payload: [UInt8], on cid: L2CAPChannelID) -> Route {
        let route = handlers.withValue(forKey: cid) { handler -> Route in
            switch handler {
            case .signaling: return .signaling
            case .securityManager: return .securityManager
            case .gatt: return .gatt
            case .stream(let stream): return .stream(stream)
            case .held(var payloads):
                guard payloads.count < Self.heldLimit else { return .dropped }
                handler = .signaling  // the array leaves the enum, so the append does not copy it
                payloads.append(payload)
                handler = .held(payloads)
                return .held
            }
        }
        return route ?? .dropped
    }

    /// Whether `cid` is a fixed channel a consumer may register (0x0001–0x003F).
    static func validate(_ cid: L2CAPChannelID) throws(L2CAPError) {
        guard cid != .null, isFixed(cid) else {
            throw L2CAPError(.invalidFixedChannel, "\(cid) is not a fixed channel a consumer can register")
        }
    }

    /// Makes `handler` take channel `cid` from now on; returns the handler it replaces (the caller ends a consumer
    /// it replaced and hands a held backlog on).
    @discardableResult
    mutating func register(_ handler: FixedChannelHandler, on cid: L2CAPChannelID) -> FixedChannelHandler? {
        let previous = handlers[cid]
        handlers[cid] = handler
        return previous
    }

    /// The handlers, for the link's teardown.
    var allHandlers: [FixedChannelHandler] { handlers.values }
}
