import BLEWire
import Synchronization

/// An in-process pair of connected transports: what one end sends, the other receives, in order.
public enum HCIPipe {
    /// Creates a connected pair. Closing either end finishes both ends' `incoming`.
    public static func makePair() -> (host: any HCITransport, controller: any HCITransport) {
        let (a, aContinuation) = AsyncThrowingStream.makeStream(of: HCIPacket.self, throwing: (any Error).self)
        let (b, bContinuation) = AsyncThrowingStream.makeStream(of: HCIPacket.self, throwing: (any Error).self)
        let shared = PipeShared(continuations: [aContinuation, bContinuation])
        return (PipeEnd(incoming: a, peer: bContinuation, shared: shared),
                PipeEnd(incoming: b, peer: aContinuation, shared: shared))
    }
}

final class PipeShared: Sendable {
    let closed = Atomic<Bool>(false)
    let continuations: [AsyncThrowingStream<HCIPacket, any Error>.Continuation]
    init(continuations: [AsyncThrowingStream<HCIPacket, any Error>.Continuation]) { self.continuations = continuations }
    func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        for c in continuations { c.finish() }
    }
}

final class PipeEnd: HCITransport {
    let incoming: AsyncThrowingStream<HCIPacket, any Error>
    private let peer: AsyncThrowingStream<HCIPacket, any Error>.Continuation
    private let shared: PipeShared

    init(incoming: AsyncThrowingStream<HCIPacket, any Error>, peer: AsyncThrowingStream<HCIPacket, any Error>.Continuation,
         shared: PipeShared) {
        self.incoming = incoming
        self.peer = peer
        self.shared = shared
    }

    func send(_ packet: HCIPacket) async throws {
        guard !shared.closed.load(ordering: .acquiring) else { throw TransportError(.closed, "pipe closed") }
        peer.yield(packet)
    }

    func send(_ packets: [HCIPacket]) async throws {
        guard !shared.closed.load(ordering: .acquiring) else { throw TransportError(.closed, "pipe closed") }
        for packet in packets { peer.yield(packet) }
    }

    func close() async { shared.close() }
}
