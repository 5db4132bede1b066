import BLETransport
import BLEWire
import Synchronization

/// Where the host's packets leave for the controller: one queue, in order, drained by one sender at a time.
///
/// Handing packets over never suspends (``write(_:)``, ``handOver(_:)``), so a driver registers the continuation that
/// receives a reply before the request leaves, in one step, and no reply can overtake it; and packets keep the order
/// in which the host's steps handed them over. Whoever hands packets over while nobody is draining becomes the
/// drainer: an async caller with nothing to register (the ACL data path: ``handOver(_:)`` in its step, then
/// ``drain()``) drains itself, off the host's executor, so the host goes on while the transport works and what it
/// queues meanwhile leaves in the same batch; a synchronous caller starts a task that drains.
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

    /// Whether the drainer sends in its own step (``drainInPlace()``) rather than off the host's executor
    /// (``drain()``): for a socket, whose write is a short system call, a task and a thread's wake-up per batch would
    /// cost more than the write, and they sit on the round trip that flow control waits for. (Not for a serial port,
    /// whose write may wait for the line: the host's executor would wait with it.)
    var sendsInPlace: Bool { inPlace != nil }

    /// Sets what is told when a write fails (the transport has ended).
    func onFailure(_ handler: @escaping @Sendable (any Error) async -> Void) {
        failureHandler.withLock { $0 = handler }
    }

    /// Hands `packets` over without suspending, in order after everything handed over before; a task sends them
    /// when nobody is draining. Throws when the transport has ended.
    func write(_ packets: [HCIPacket]) throws {
        guard try enqueue(packets) else { return }
        if sendsInPlace { drainInPlace() } else { Task { await self.drain() } }
    }

    /// What the drainer does after ``handOver(_:)`` made it one: sends in its own step when the transport allows
    /// (``sendsInPlace``; `nonsending`: it runs on the caller's executor, with no hop), otherwise ``drain()``s off the
    /// caller's executor.
    nonisolated(nonsending) func drainAfterHandOver() async {
        if sendsInPlace { drainInPlace() } else { await drain() }
    }

    /// Sends what is queued, batch after batch, in the caller's step (``sendsInPlace`` transports only).
    func drainInPlace() {
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

    /// Hands `packets` over without suspending, in order after everything handed over before, and returns whether
    /// the caller must now ``drain()`` (nobody is draining). Throws when the transport has ended.
    ///
    /// Not an async "send": a nonisolated async function starts on another executor, so two of the host's steps
    /// could hand their packets over in the opposite order, and the fragments of two L2CAP PDUs (or a PDU's first
    /// fragments and the ones Number Of Completed Packets released meanwhile) would leave interleaved.
    func handOver(_ packets: [HCIPacket]) throws -> Bool {
        try enqueue(packets)
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

    /// Sends what is queued, batch after batch, until the queue is empty: for the caller ``handOver(_:)`` made the
    /// drainer.
    func drain() async {
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
