import BLEProtocols
import BLEWire

/// The HCI command driver: runs ``HCICommandFlow`` (commands under the controller's credits, one timeout each) and
/// hands each command's outcome to the completion registered with it when it was submitted, so an outcome never
/// arrives before somebody is there to take it.
struct CommandDriver {
    /// What a command's outcome goes to. It runs in the host's isolation, while the host handles the event (or the
    /// timeout, or the reset) that ended the command.
    typealias Completion = (HCICommandFlow.Outcome) -> Void

    private(set) var flow: HCICommandFlow
    private var completions: [HCICommandFlow.Token: Completion] = [:]
    /// The commands' timeouts.
    var timers = TimerSet<HCICommandFlow.Token>()

    init(timeout: Duration) {
        flow = HCICommandFlow(timeout: timeout)
    }

    /// Queues `command`; `completion` gets its outcome. Returns the flow's actions (the command goes out now when the
    /// controller has a credit for it).
    mutating func submit<C: HCICommand>(_ command: C, then completion: @escaping Completion) -> [HCICommandFlow.Action] {
        let (token, actions) = flow.submit(command)
        completions[token] = completion
        return actions
    }

    /// Command Complete and Command Status go to the flow; whether it consumed the event, and its actions.
    mutating func receive(_ event: HCIEvent) -> (consumed: Bool, actions: [HCICommandFlow.Action]) {
        flow.receive(event)
    }

    /// A command's timer fired.
    mutating func timedOut(_ token: HCICommandFlow.Token) -> [HCICommandFlow.Action] {
        flow.timerFired(token)
    }

    /// The completion of a finished command (taken: it runs once).
    mutating func completion(of token: HCICommandFlow.Token) -> Completion? {
        completions.removeValue(forKey: token)
    }

    /// Every command in flight or queued ends as `cancelled` (the controller was reset or the transport closed).
    mutating func reset() -> [HCICommandFlow.Action] {
        timers.cancelAll()
        return flow.reset()
    }
}

/// The ACL data driver: ``ACLFlow`` (the controller's LE buffers, shared fairly between links), the senders
/// waiting for room in a link's queue, and the closes waiting for a link's data to complete first (``ACLDrain``).
struct ACLDriver {
    var flow = ACLFlow(bufferSize: 27, bufferCount: 1)
    private var waiters: [CheckedContinuation<Void, Never>] = []
    /// Channel closes and link disconnections waiting for the controller to complete what was queued before them.
    var drain = ACLDrain<Int>()
    /// What takes each drain wait's outcome, in the host's isolation.
    var drainWaiters: [Int: (DeliveryOutcome) -> Void] = [:]
    /// The drain waits' time limits.
    var drainTimers = TimerSet<Int>()
    private var lastDrainKey = 0

    /// An identity for a new drain wait.
    mutating func newDrainKey() -> Int {
        lastDrainKey += 1
        return lastDrainKey
    }

    /// Packets a link may have waiting for controller buffers before senders wait.
    var queueLimit: Int { max(16, 2 * flow.bufferCount) }

    /// Whether a send on `handle` would go out without waiting for queue room.
    func hasRoom(on handle: ConnectionHandle) -> Bool { flow.queuedCount(handle: handle) < queueLimit }

    /// Waits (the caller's continuation) until room may have been made.
    mutating func waitForRoom(_ continuation: CheckedContinuation<Void, Never>) { waiters.append(continuation) }

    /// Wakes every waiting sender (buffers came back, or a link closed): each checks its link again.
    mutating func wakeSenders() {
        let woken = waiters
        waiters = []
        for waiter in woken { waiter.resume() }
    }
}
