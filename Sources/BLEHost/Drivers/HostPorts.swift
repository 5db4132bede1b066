import BLEProtocols
import BLEWire

// The host's sides of its drivers' ports: each records what its driver asks while the driver works in place, and
// `HCIHost` carries it out once the driver's step is over (a send can end the transport, which ends the links and
// the procedures the driver is working on).

/// The host's side of the ``SecurityPort``: it records what the Security Manager asks, and ``HCIHost`` carries it out
/// once the manager's step on the link is over.
struct HostSecurityPort: SecurityPort {
    /// One thing the manager asked.
    enum Request {
        case send(SMPPDU, HostConnection)
        case submit(SecurityCommand, HostConnection)
        case publish(HostEvent, HostConnection)
        case ask(any PairingAgent, PairingQuestion, HostConnection)
        case notify([SecurityWaiter], Result<LinkSecurity, SecurityError>)
    }

    let localIdentity: LEAddress?
    /// The host whose timers call back (held weakly: a timer outlives nothing).
    weak var host: HCIHost?
    /// What was asked, in order.
    private(set) var requests: [Request] = []

    init(localIdentity: LEAddress?, host: HCIHost) {
        self.localIdentity = localIdentity
        self.host = host
    }

    mutating func send(_ pdu: SMPPDU, on connection: HostConnection) { requests.append(.send(pdu, connection)) }
    mutating func submit(_ command: SecurityCommand, on connection: HostConnection) { requests.append(.submit(command, connection)) }
    mutating func publish(_ event: HostEvent, about connection: HostConnection) { requests.append(.publish(event, connection)) }
    mutating func ask(_ agent: any PairingAgent, _ question: PairingQuestion, on connection: HostConnection) {
        requests.append(.ask(agent, question, connection))
    }
    mutating func notify(_ waiters: [SecurityWaiter], _ outcome: Result<LinkSecurity, SecurityError>) {
        guard !waiters.isEmpty else { return }
        requests.append(.notify(waiters, outcome))
    }

    func timerHandler(for connection: HostConnection) -> @Sendable (TimerSet<LinkID>.Firing) async -> Void {
        guard let host else { return { _ in } }
        return host.securityTimerHandler(for: connection)
    }
}

/// The host's side of the ``GAPPort``: it records the commands the GAP driver asks for, and ``HCIHost`` sends them once
/// the driver's step is over.
struct HostGAPPort: GAPPort {
    /// One thing the driver asked.
    enum Request {
        case send(GAPProcedures.Command)
        case makeStaticAddress
    }

    let now: Duration
    /// The host whose timers call back (held weakly: a timer outlives nothing).
    weak var host: HCIHost?
    /// Makes a resolvable private address (the host's privacy, on its executor).
    let privateAddress: () -> LEAddress?
    /// What was asked, in order.
    private(set) var requests: [Request] = []

    mutating func send(_ command: GAPProcedures.Command) { requests.append(.send(command)) }
    mutating func makeStaticAddress() { requests.append(.makeStaticAddress) }
    func makePrivateAddress() -> LEAddress? { privateAddress() }

    func timerHandler() -> @Sendable (TimerSet<GAPProcedures.Timer>.Firing) async -> Void {
        { [weak host] firing in await host?.gapTimerFired(firing) }
    }
}
