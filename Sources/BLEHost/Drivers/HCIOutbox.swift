import BLETransport
import BLEWire
import Synchronization

/// Where the host's packets leave for the controller: one queue, in order, drained by one sender at a time.
///
/// Handing packets over never suspends (``write(_:)``, ``writeOrDrain(_:)``), so a driver registers the continuation
/// that receives a reply before the request leaves, in one step, and no reply can overtake it; and packets keep the
/// order in which the host's steps handed them over. The outbox alone decides how it drains and by whom: when packets
/// arrive while nobody is draining, it sends them in the writer's step when the transport's write returns at once
/// (``sendsInPlace``: a socket's); otherwise a writer that can wait (``writeOrDrain(_:)``: the host's waiting send)
/// drains it off the host's executor, and a writer that cannot (``write(_:)``) gets a task that does. Either way the
/// host goes on while the transport works, and what it hands over meanwhile leaves in the same batch.
final class HCIOutbox: Sendable {
    private let transport: any HCITransport
    /// The transport, when its write is a short system call that does not wait for the line (a socket's): the
    /// drainer then sends in its own step.
    private let inPlace: (any HCISynchronousSending)?
    private let state = Mutex(Pending())
    /// Told when a write fails.
    private let failureHandler = Mutex<(@Sendable (any Error) async -> Void)?>(nil)

    private struct Pending: ~Copyable {
        var packets: [HCIPacket] = []
        var draining = false
        var closed = false
    }

    init(_ transport: any HCITransport) {
        self.transport = transport
        self.inPlace = (transport as? any HCISynchronousSending).flatMap { $0.writesWithoutWaiting ? $0 : nil }
    }

    /// Whether the drainer sends in the writer's step (``drainInPlace()``) rather than in a task off the host's
    /// executor (``drain()``): for a socket, whose write is a short system call, a task and a thread's wake-up per
    /// batch would cost more than the write, and they sit on the round trip that flow control waits for. (Not for a
    /// serial port, whose write may wait for the line: the host's executor would wait with it.)
    var sendsInPlace: Bool { inPlace != nil }

    /// Sets what is told when a write fails (the transport has ended).
    func onFailure(_ handler: @escaping @Sendable (any Error) async -> Void) {
        failureHandler.withLock { $0 = handler }
    }

    /// Hands `packets` over without suspending, in order after everything handed over before; when nobody is
    /// draining, the outbox starts draining (in this step, or in a task: see the type's description). Throws when the
    /// transport has ended.
    func write(_ packets: [HCIPacket]) throws {
        guard try enqueue(packets) else { return }
        if sendsInPlace { drainInPlace() } else { Task { await self.drain() } }
    }

    /// Hands `packets` over as ``write(_:)`` does, in the caller's step (before any suspension: the order of the
    /// host's steps is kept); when nobody is draining and the transport is not written in place, the caller drains
    /// the outbox itself, off its executor (`nonsending`: the hand-over runs on the caller's executor, with no hop),
    /// and returns once it is empty. Throws when the transport has ended.
    nonisolated(nonsending) func writeOrDrain(_ packets: [HCIPacket]) async throws {
        guard try enqueue(packets) else { return }
        if sendsInPlace { drainInPlace() } else { await drain() }
    }

    /// Sends what is queued, batch after batch, in the caller's step (``sendsInPlace`` transports only).
    private func drainInPlace() {
        guard let inPlace else { return }
        while true {
            let batch = takeBatch()
            guard !batch.isEmpty else { return }
            do {
                try inPlace.sendNow(batch)
            } catch {
                failed(error)
                return
            }
        }
    }

    private func takeBatch() -> [HCIPacket] {
        state.withLock { pending -> [HCIPacket] in
            let batch = pending.packets
            pending.packets = []
            if batch.isEmpty { pending.draining = false }
            return batch
        }
    }

    /// A write failed: what waits is dropped, and the host is told (in a task: its handler is async).
    private func failed(_ error: any Error) {
        state.withLock { pending in
            pending.packets = []
            pending.draining = false
        }
        let handler = failureHandler.withLock { $0 }
        Task { await handler?(error) }
    }

    /// Drops what is waiting and refuses what comes (the transport ended): writes throw from now on.
    func close() {
        state.withLock { pending in
            pending.closed = true
            pending.packets = []
        }
    }

    /// Queues `packets`; returns whether the caller must drain (nobody is).
    private func enqueue(_ packets: [HCIPacket]) throws -> Bool {
        guard !packets.isEmpty else { return false }
        let (accepted, mustDrain) = state.withLock { pending -> (Bool, Bool) in
            guard !pending.closed else { return (false, false) }
            pending.packets.append(contentsOf: packets)
            guard !pending.draining else { return (true, false) }
            pending.draining = true
            return (true, true)
        }
        guard accepted else { throw TransportError(.closed, "the transport closed") }
        return mustDrain
    }

    /// Sends what is queued, batch after batch, until the queue is empty: the drainer (a task, or a writer that can
    /// wait), off the host's executor.
    private func drain() async {
        while true {
            let batch = takeBatch()
            guard !batch.isEmpty else { return }
            do {
                try await transport.send(batch)
            } catch {
                state.withLock { pending in
                    pending.packets = []
                    pending.draining = false
                }
                await failureHandler.withLock { $0 }?(error)
                return
            }
        }
    }
}
