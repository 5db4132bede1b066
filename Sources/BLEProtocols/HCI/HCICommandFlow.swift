import BLEWire

/// The host side of HCI command flow control. Core 5.4, Vol 4, Part E, 4.4.
///
/// The controller grants command credits through `Num_HCI_Command_Packets` in Command Complete and Command Status
/// events; the host never has more commands outstanding than it was granted. Commands queue here until a credit is
/// free, each gets a timer when it is sent, and each completes exactly once: with its return parameters, with the
/// status of its Command Status, or with a failure (an error status, a timeout, a reset).
///
/// Sans-I/O: the caller performs the returned ``Action``s (send the packet, start or cancel the timer, resume the
/// waiting caller) and feeds events and timer expiries back in.
public struct HCICommandFlow: Sendable {
    /// Identifies one submitted command.
    public struct Token: Hashable, Sendable, CustomStringConvertible {
        /// A number unique within the flow.
        public let value: UInt64
        public var description: String { "cmd#\(value)" }
    }

    /// How a command ended.
    public enum Outcome: Hashable, Sendable {
        /// Command Complete arrived with a success status; the return parameters (status first).
        case complete(returnParameters: [UInt8])
        /// Command Status arrived with a success status; a later event carries the result.
        case pending
        /// The controller answered with an error status.
        case failed(HCIStatus)
        /// No answer arrived before the deadline.
        case timedOut
        /// The flow was reset (controller reset, transport closed) before an answer arrived.
        case cancelled
    }

    /// What the caller must do.
    public enum Action: Hashable, Sendable {
        /// Send this packet to the controller.
        case send(HCICommandPacket)
        /// Start the command's timer.
        case startTimer(Token, Duration)
        /// Cancel the command's timer.
        case cancelTimer(Token)
        /// Resume whoever waits for the command.
        case finish(Token, Outcome)
    }

    private struct Entry: Sendable {
        var token: Token
        var packet: HCICommandPacket
        var completion: HCICommandCompletion
    }

    /// How long a sent command may stay unanswered.
    public var timeout: Duration
    /// Commands the controller currently accepts.
    public private(set) var credits: Int
    private var nextToken: UInt64 = 1
    private var waiting: [Entry] = []
    private var inFlight: [Entry] = []

    /// Creates a flow with one initial credit, as the specification sets after power-on.
    public init(timeout: Duration = .seconds(5), initialCredits: Int = 1) {
        self.timeout = timeout
        self.credits = initialCredits
    }

    /// Commands sent and not yet answered.
    public var outstandingCount: Int { inFlight.count }
    /// Commands waiting for a credit.
    public var queuedCount: Int { waiting.count }

    /// Submits a command. Returns its token and the actions to perform now.
    public mutating func submit(_ packet: HCICommandPacket, completion: HCICommandCompletion) -> (Token, [Action]) {
        let token = Token(value: nextToken)
        nextToken &+= 1
        waiting.append(Entry(token: token, packet: packet, completion: completion))
        return (token, pump())
    }

    /// Submits a typed command.
    public mutating func submit<C: HCICommand>(_ command: C) -> (Token, [Action]) {
        submit(command.packet, completion: C.completion)
    }

    /// Feeds an event. Command Complete and Command Status are consumed (returns `true` in `consumed`); every other
    /// event is left to the caller.
    public mutating func receive(_ event: HCIEvent) -> (consumed: Bool, actions: [Action]) {
        switch event {
        case .commandComplete(let e):
            credits = Int(e.numHCICommandPackets)
            var actions: [Action] = []
            if e.opcode.rawValue != 0x0000, let index = inFlight.firstIndex(where: { $0.packet.opcode == e.opcode }) {
                let entry = inFlight.remove(at: index)
                let status = e.status ?? .success
                let outcome: Outcome = status == .success ? .complete(returnParameters: e.returnParameters) : .failed(status)
                actions += [.cancelTimer(entry.token), .finish(entry.token, outcome)]
            }
            return (true, actions + pump())
        case .commandStatus(let e):
            credits = Int(e.numHCICommandPackets)
            var actions: [Action] = []
            if e.opcode.rawValue != 0x0000, let index = inFlight.firstIndex(where: { $0.packet.opcode == e.opcode }) {
                let entry = inFlight.remove(at: index)
                let outcome: Outcome
                if e.status != .success {
                    outcome = .failed(e.status)
                } else if entry.completion == .commandStatus {
                    outcome = .pending
                } else {
                    // A success Command Status for a command that completes with Command Complete is a protocol
                    // error on the controller's side; report it rather than wait forever.
                    outcome = .failed(.unspecifiedError)
                }
                actions += [.cancelTimer(entry.token), .finish(entry.token, outcome)]
            }
            return (true, actions + pump())
        default:
            return (false, [])
        }
    }

    /// The timer of `token` fired. The command fails; its credit is restored so later commands can go out (the
    /// controller may have lost it), as hosts commonly do.
    public mutating func timerFired(_ token: Token) -> [Action] {
        guard let index = inFlight.firstIndex(where: { $0.token == token }) else { return [] }
        inFlight.remove(at: index)
        credits = max(credits, 1)
        return [.finish(token, .timedOut)] + pump()
    }

    /// Fails every queued and outstanding command and restores one credit (after HCI Reset or a transport loss).
    public mutating func reset() -> [Action] {
        var actions: [Action] = []
        for entry in inFlight { actions += [.cancelTimer(entry.token), .finish(entry.token, .cancelled)] }
        for entry in waiting { actions.append(.finish(entry.token, .cancelled)) }
        inFlight.removeAll()
        waiting.removeAll()
        credits = 1
        return actions
    }

    private mutating func pump() -> [Action] {
        var actions: [Action] = []
        while credits > 0, !waiting.isEmpty {
            let entry = waiting.removeFirst()
            credits -= 1
            inFlight.append(entry)
            actions += [.send(entry.packet), .startTimer(entry.token, timeout)]
        }
        return actions
    }
}
