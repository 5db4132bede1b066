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

/// The host's side of the ``L2CAPPort``: it records what the L2CAP driver asks while it works on a link in place,
/// and ``HCIHost/performL2CAP(_:handle:)`` carries it out, in order, once that step is over.
struct HostL2CAPPort: L2CAPPort {
    /// One thing the driver asked.
    enum Request {
        case send([UInt8])
        case deliverFixed([UInt8], L2CAPChannelID)
        case opened(L2CAPChannelInfo, AsyncStream<[UInt8]>, ChannelDelivery)
        case handedOn(L2CAPChannelID)
        case closed(L2CAPChannelID)
        case updateConnection(L2CAPConnectionParameterUpdateRequest)
    }

    /// The link's handle.
    let handle: ConnectionHandle
    /// The host whose timers call back (held weakly: a timer outlives nothing).
    weak var host: HCIHost?
    /// What was asked, in order.
    private(set) var requests: [Request] = []

    mutating func send(_ frame: [UInt8]) { requests.append(.send(frame)) }
    mutating func deliverFixed(_ payload: [UInt8], channel: L2CAPChannelID) { requests.append(.deliverFixed(payload, channel)) }
    mutating func opened(_ info: L2CAPChannelInfo, stream: AsyncStream<[UInt8]>, delivery: ChannelDelivery) {
        requests.append(.opened(info, stream, delivery))
    }
    mutating func handedOn(_ cid: L2CAPChannelID) { requests.append(.handedOn(cid)) }
    mutating func closed(_ cid: L2CAPChannelID) { requests.append(.closed(cid)) }
    mutating func updateConnection(_ request: L2CAPConnectionParameterUpdateRequest) { requests.append(.updateConnection(request)) }

    func timerHandler(for key: L2CAPTimerKey) -> @Sendable (TimerSet<L2CAPTimerKey>.Firing) async -> Void {
        { [weak host, handle] firing in await host?.l2capTimerFired(firing, handle: handle) }
    }
}
