import BLEProtocols
import BLEWire

/// The host-wide part of L2CAP (each link's part is its ``Link``): who listens on which SPSM, the identities of
/// waiters, and the RTX timers the links' channel managers asked for.
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
}
