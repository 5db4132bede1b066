import BLETransport
import BLEWire
import Synchronization

/// Where the host's packets leave for the controller: in order, and without suspending whoever writes them.
///
/// Nothing the host sends makes it wait for the transport, so a driver registers the continuation that receives a
/// reply before the request leaves, in one step, and no reply can overtake it. An ``ImmediateHCITransport`` (the
/// in-process pipe, the virtual controller, sockets and serial ports) is written at once; any other transport is
/// written by one task that drains what gathered meanwhile in one batch.
final class HCIOutbox: Sendable {
    private let transport: any HCITransport
    private let immediate: (any ImmediateHCITransport)?
    private let state = Mutex(Pending())
    /// Told when a write by the draining task fails (an immediate write throws to its caller instead).
    private let failureHandler = Mutex<(@Sendable (any Error) async -> Void)?>(nil)

    private struct Pending: ~Copyable {
        var packets: [HCIPacket] = []
        var draining = false
        var closed = false
    }

    init(_ transport: any HCITransport) {
        self.transport = transport
        self.immediate = transport as? any ImmediateHCITransport
    }

    /// Sets what is told when a write by the draining task fails.
    func onFailure(_ handler: @escaping @Sendable (any Error) async -> Void) {
        failureHandler.withLock { $0 = handler }
    }

    /// Hands `packets` on, in order after everything written before. Throws when an immediate write fails; a
    /// failure of the draining task reaches the ``onFailure(_:)`` handler.
    func write(_ packets: [HCIPacket]) throws {
        guard !packets.isEmpty else { return }
        if let immediate {
            try immediate.sendNow(packets)
            return
        }
        let (accepted, startDraining) = state.withLock { pending -> (Bool, Bool) in
            guard !pending.closed else { return (false, false) }
            pending.packets.append(contentsOf: packets)
            guard !pending.draining else { return (true, false) }
            pending.draining = true
            return (true, true)
        }
        guard accepted else { throw TransportError(.closed, "the transport closed") }
        if startDraining { Task { await self.drain() } }
    }

    /// Drops what is waiting and refuses what comes (the transport ended): writes throw from now on.
    func close() {
        state.withLock { pending in
            pending.closed = true
            pending.packets = []
        }
    }

    private func drain() async {
        while true {
            let batch = state.withLock { pending -> [HCIPacket] in
                let batch = pending.packets
                pending.packets = []
                if batch.isEmpty { pending.draining = false }
                return batch
            }
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
