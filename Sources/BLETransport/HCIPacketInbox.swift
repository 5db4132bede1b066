import BLEWire
import Synchronization

/// A single-consumer queue of HCI packets for an in-process transport: the producer appends under a lock and wakes
/// the consumer only when it is parked; the consumer takes everything queued at each wake-up (``next()``), so a burst
/// of packets costs one wake-up, not one per packet. Not generic, and no `AsyncStream` machinery on the way.
///
/// Nothing is dropped: the queue is unbounded, as the transport's `incoming` stream is (the host's reader never
/// waits, so what a controller sends is bounded by the host's flow control, not by this queue).
package final class HCIPacketInbox: Sendable {
    private struct State: ~Copyable {
        var packets: [HCIPacket] = []
        var waiter: UnsafeContinuation<Void, Never>?
        var finished = false
        var failure: (any Error)?
    }

    private let state = Mutex(State())

    package init() {}

    /// Appends `packet`, waking the consumer if it waits. Returns `false` (nothing appended) once finished.
    @discardableResult
    package func yield(_ packet: HCIPacket) -> Bool {
        let (accepted, waiter) = state.withLock { s -> (Bool, UnsafeContinuation<Void, Never>?) in
            guard !s.finished else { return (false, nil) }
            s.packets.append(packet)
            let waiter = s.waiter
            s.waiter = nil
            return (true, waiter)
        }
        waiter?.resume()
        return accepted
    }

    /// Appends `packets` in order, waking the consumer if it waits (one lock and at most one wake-up for all of
    /// them). Returns `false` (nothing appended) once finished.
    @discardableResult
    package func yield(contentsOf packets: [HCIPacket]) -> Bool {
        let (accepted, waiter) = state.withLock { s -> (Bool, UnsafeContinuation<Void, Never>?) in
            guard !s.finished else { return (false, nil) }
            s.packets.append(contentsOf: packets)
            let waiter = s.waiter
            s.waiter = nil
            return (true, waiter)
        }
        waiter?.resume()
        return accepted
    }

    /// Ends the queue: the consumer gets what is queued, then the end (or `error`). Idempotent.
    package func finish(throwing error: (any Error)? = nil) {
        let waiter = state.withLock { s -> UnsafeContinuation<Void, Never>? in
            guard !s.finished else { return nil }
            s.finished = true
            s.failure = error
            let waiter = s.waiter
            s.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Whether the consumer took every packet queued and waits for more (or the queue finished): it handled all it
    /// was sent, as far as the queue can tell (a simulated world's settling step asks, ``VirtualAir/hostsAreIdle``).
    package var isDrained: Bool {
        state.withLock { s in s.packets.isEmpty && (s.waiter != nil || s.finished) }
    }

    /// Every packet queued, in order, waiting for one when none is; `nil` once finished and empty; throws the error
    /// the queue finished with, after the packets before it. One consumer at a time. A cancelled consumer is not
    /// woken by its cancellation: the queue ends when its producer finishes it (the transport's close).
    package func next() async throws -> [HCIPacket]? {
        while true {
            enum Step { case batch([HCIPacket]), end((any Error)?), wait }
            let step = state.withLock { s -> Step in
                if !s.packets.isEmpty {
                    var batch: [HCIPacket] = []
                    batch.reserveCapacity(s.packets.count)
                    swap(&batch, &s.packets)
                    return .batch(batch)
                }
                if s.finished {
                    let failure = s.failure
                    s.failure = nil
                    return .end(failure)
                }
                return .wait
            }
            switch step {
            case .batch(let batch):
                return batch
            case .end(let failure):
                if let failure { throw failure }
                return nil
            case .wait:
                await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                    let ready = state.withLock { s -> Bool in
                        guard s.packets.isEmpty, !s.finished else { return true }
                        s.waiter = continuation
                        return false
                    }
                    if ready { continuation.resume() }
                }
            }
        }
    }
}

/// A transport that can write synchronously (a file descriptor's): when its writes return without waiting for the
/// other end (``writesWithoutWaiting``: a socket's), a host sends from its own step, without a task and a thread's
/// wake-up in between.
package protocol HCISynchronousSending: HCITransport {
    /// Writes `packets` in order, now.
    func sendNow(_ packets: [HCIPacket]) throws
    /// Whether a write returns once the bytes are handed to the kernel, without waiting for the line.
    var writesWithoutWaiting: Bool { get }
}

/// A transport that can hand its incoming packets over as an ``HCIPacketInbox`` instead of its `incoming` stream
/// (the in-process virtual controller's, and a file descriptor's: TCP, serial, the HCI user channel): the host's
/// reader then takes them in batches.
package protocol HCIPacketInboxProviding: HCITransport {
    /// Switches the transport's incoming packets to an inbox and returns it; `incoming` finishes at once. `nil`
    /// (nothing changed) when the transport cannot, or when its packets already flow. Call it at most once, before
    /// the first packet is sent.
    func takeInbox() -> HCIPacketInbox?
}
