import BLE
import Foundation
import PandoraInterfaces
import Synchronization

/// The pairing agent of a Pandora server's adapters: each question the host puts to the user becomes a
/// `PairingEvent` on the open `OnPairing` stream, and the stream's answer goes back to the host.
///
/// - Just Works (asked on both sides: the server's adapters run with `SecurityConfiguration.confirmsJustWorks`) and
///   Numeric Comparison: `just_works` / `numeric_comparison`, answered with `confirm`.
/// - Passkey Entry, this side typing: `passkey_entry_request`, answered with `passkey` (no answer: cancelled,
///   Passkey Entry Failed).
/// - Passkey Entry, this side showing: `passkey_entry_notification`, nothing to answer.
/// - A central's Pairing Request to this peripheral is accepted without an event (as Bumble's server does).
///
/// Without an open stream the agent answers as a device with no user: it goes on with Just Works and Numeric
/// Comparison and cancels Passkey Entry. When the stream closes, the questions still open are answered no.
final class PairingEvents: PairingAgent {
    private struct Pending {
        let event: Pandora_PairingEvent
        let continuation: CheckedContinuation<Reply, Never>
    }

    private struct Session {
        let id: UInt64
        let events: AsyncStream<Pandora_PairingEvent>.Continuation
        var pending: [Pending] = []
    }

    private struct State {
        weak var device: PandoraDevice?
        var session: Session?
        var nextSession: UInt64 = 0
    }

    private let state = Mutex(State())

    /// The device whose links name the events' connections.
    var device: PandoraDevice? {
        get { state.withLock { $0.device } }
        set { state.withLock { $0.device = newValue } }
    }

    // MARK: The OnPairing stream

    /// Opens a stream of events; one at a time: a new one closes the previous one.
    func open() -> (id: UInt64, events: AsyncStream<Pandora_PairingEvent>) {
        let (stream, continuation) = AsyncStream<Pandora_PairingEvent>.makeStream()
        let (id, previous) = state.withLock { state -> (UInt64, Session?) in
            let previous = state.session
            state.nextSession += 1
            state.session = Session(id: state.nextSession, events: continuation)
            return (state.nextSession, previous)
        }
        if let previous { Self.end(previous) }
        return (id, stream)
    }

    /// Closes stream `id` (when it is still the open one): its questions are answered no.
    func close(_ id: UInt64) {
        let session = state.withLock { state -> Session? in
            guard state.session?.id == id else { return nil }
            defer { state.session = nil }
            return state.session
        }
        if let session { Self.end(session) }
    }

    private static func end(_ session: Session) {
        session.events.finish()
        for pending in session.pending { pending.continuation.resume(returning: .answered(nil)) }
    }

    /// An answer from stream `id`: it goes to the open question with the same event, else to the oldest one.
    func answer(_ answer: Pandora_PairingEventAnswer, from id: UInt64) {
        let pending = state.withLock { state -> Pending? in
            guard var session = state.session, session.id == id, !session.pending.isEmpty else { return nil }
            let index = session.pending.firstIndex { $0.event == answer.event } ?? 0
            let pending = session.pending.remove(at: index)
            state.session = session
            return pending
        }
        pending?.continuation.resume(returning: .answered(answer))
    }

    // MARK: Questions

    private enum Reply: Sendable {
        case noStream
        case answered(Pandora_PairingEventAnswer?)
    }

    /// Puts `event` on the open stream and waits for its answer.
    private func ask(_ event: Pandora_PairingEvent) async -> Reply {
        await withCheckedContinuation { continuation in
            let sent = state.withLock { state -> Bool in
                guard var session = state.session else { return false }
                session.pending.append(Pending(event: event, continuation: continuation))
                state.session = session
                session.events.yield(event)
                return true
            }
            if !sent { continuation.resume(returning: .noStream) }
        }
    }

    /// An event about `peer`'s link, with its connection token (waiting a little for a link the server has not
    /// registered yet), or with the address when the server knows no link.
    private func event(for peer: LEAddress, _ method: Pandora_PairingEvent.OneOf_Method) async -> Pandora_PairingEvent {
        var event = Pandora_PairingEvent()
        event.method = method
        var token: Data?
        if let device {
            for _ in 0..<50 {
                token = await device.token(ofPeer: peer)
                if token != nil { break }
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
        if let token {
            event.connection = HostService.connection(token)
        } else {
            event.address = Data(peer.address.bytes)
        }
        return event
    }

    // MARK: PairingAgent

    func acceptPairing(from peer: LEAddress) async -> Bool { true }

    func displayPasskey(_ passkey: UInt32, for peer: LEAddress) async {
        let event = await event(for: peer, .passkeyEntryNotification(passkey))
        state.withLock { _ = $0.session?.events.yield(event) }
    }

    func enterPasskey(for peer: LEAddress) async -> UInt32? {
        switch await ask(await event(for: peer, .passkeyEntryRequest(.init()))) {
        case .noStream: return nil
        case .answered(let answer):
            if case .passkey(let passkey)? = answer?.answer { return passkey }
            return nil
        }
    }

    func confirmNumber(_ number: UInt32, for peer: LEAddress) async -> Bool {
        await confirm(await event(for: peer, .numericComparison(number)))
    }

    func confirmJustWorks(for peer: LEAddress) async -> Bool {
        await confirm(await event(for: peer, .justWorks(.init())))
    }

    private func confirm(_ event: Pandora_PairingEvent) async -> Bool {
        switch await ask(event) {
        case .noStream: return true
        case .answered(let answer):
            if case .confirm(let confirmed)? = answer?.answer { return confirmed }
            return false
        }
    }
}
