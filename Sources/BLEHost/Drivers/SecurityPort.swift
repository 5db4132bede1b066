import BLEProtocols
import BLEWire

/// A caller of ``HCIHost/pair(_:mitm:force:)`` waiting for the outcome.
typealias SecurityWaiter = CheckedContinuation<LinkSecurity, any Error>

/// A question for the pairing agent (``PairingAgent``). The host asks it from a task of its own (the reader never
/// waits for the user); the answer comes back to ``SecurityManager/answered(_:on:port:)`` in a later step.
enum PairingQuestion: Sendable {
    /// Whether to accept the central's Pairing Request.
    case consent
    /// Show this passkey (no answer).
    case display(UInt32)
    /// The passkey the peer displays.
    case passkey
    /// Whether both devices show this number.
    case number(UInt32)
    /// Whether to go on with a Just Works pairing.
    case justWorks

    /// Asks `agent` about `peer`; `nil` for a question without an answer.
    func ask(_ agent: any PairingAgent, about peer: LEAddress) async -> PairingAnswer? {
        switch self {
        case .consent: return .consent(await agent.acceptPairing(from: peer))
        case .display(let passkey):
            await agent.displayPasskey(passkey, for: peer)
            return nil
        case .passkey: return .passkey(await agent.enterPasskey(for: peer))
        case .number(let number): return .number(await agent.confirmNumber(number, for: peer))
        case .justWorks: return .justWorks(await agent.confirmJustWorks(for: peer))
        }
    }
}

/// The pairing agent's answer to a ``PairingQuestion``.
enum PairingAnswer: Sendable {
    case consent(Bool)
    case passkey(UInt32?)
    case number(Bool)
    case justWorks(Bool)
}

/// The HCI commands the Security Manager has its host send.
enum SecurityCommand {
    /// Central: LE Enable Encryption with a bond's key for a caller of ``HCIHost/pair(_:mitm:force:)``. Refused, the
    /// encryption ends here and the callers are told (``SecurityManager/bondEncryptionRefused(_:on:port:)``).
    case encryptWithBond(HCILEEnableEncryption)
    /// LE Enable Encryption with a pairing's key, or a bond's answering a Security Request. Refused, it ends as a
    /// failed Encryption Change would (``SecurityManager/encryptionRefused(_:on:port:)``).
    case enableEncryption(HCILEEnableEncryption)
    /// Peripheral: the key for the controller's LE Long Term Key Request; refused, as ``enableEncryption(_:)``.
    case longTermKeyReply(HCILELongTermKeyRequestReply)
    /// Peripheral: no key for the controller's LE Long Term Key Request.
    case longTermKeyNegativeReply
}

/// The narrow port through which the ``SecurityManager`` talks back to its host (swift-nio-ssh's multiplexer and its
/// delegate are the model): send on SMP, submit a command, publish an event, ask the agent, end callers' waits.
///
/// The manager works on a link in place (``LinkRegistry/update(_:_:)``); the host carries out what it was asked, in
/// order, once that step on the link is over (a send can end the transport, which takes every link down).
protocol SecurityPort {
    /// This side's identity address (bonds belong to it); `nil` before bring-up.
    var localIdentity: LEAddress? { get }
    /// Sends `pdu` on `connection`'s SMP channel, without waiting for queue room.
    mutating func send(_ pdu: SMPPDU, on connection: HostConnection)
    /// Submits `command` for `connection`'s link.
    mutating func submit(_ command: SecurityCommand, on connection: HostConnection)
    /// Publishes `event` about `connection`.
    mutating func publish(_ event: HostEvent, about connection: HostConnection)
    /// Puts `question` to `agent` about `connection`'s peer.
    mutating func ask(_ agent: any PairingAgent, _ question: PairingQuestion, on connection: HostConnection)
    /// Ends the waits of `waiters` with `outcome`.
    mutating func notify(_ waiters: [SecurityWaiter], _ outcome: Result<LinkSecurity, SecurityError>)
    /// What the Security Manager timer of `connection`'s link calls when it fires
    /// (``SecurityManager/timerFired(_:on:port:)``).
    func timerHandler(for connection: HostConnection) -> @Sendable (TimerSet<LinkID>.Firing) async -> Void
}

