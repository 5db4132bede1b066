#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import BLEWire
import Foundation
import Logging
import Synchronization

/// An ``HCITransport`` over an open file descriptor: a TCP socket, a serial port, a pipe, or a Linux HCI socket.
///
/// A dedicated reader thread waits with `poll(2)` on the descriptor and on a wake-up pipe, reads, and yields
/// packets to ``incoming`` in order (or, for a host that takes them so, the packets of each read together to an
/// inbox it drains in batches). Writes are serialised and loop over partial writes. ``close()`` wakes the
/// reader, which closes the descriptor and finishes the stream.
///
/// Two framings share everything else: ``Framing/stream`` (H4 over a byte stream, deframed by ``H4Deframer``) and
/// ``Framing/datagram`` (one H4 packet per read, as the Linux HCI user channel delivers them).
public final class FileDescriptorTransport: HCITransport, HCIPacketInboxProviding, HCISynchronousSending {
    /// How packets are delimited on the descriptor.
    public enum Framing: Sendable {
        /// H4 over a byte stream.
        case stream
        /// One H4 packet per read/write.
        case datagram
    }

    /// Pipes (not sockets) can only avoid SIGPIPE through the signal's disposition: ignored once per process.
    private static let ignoreSIGPIPEForPipes: Void = {
        _ = signal(SIGPIPE, SIG_IGN)
    }()

    private struct State {
        var closed = false
        /// Whether the reader thread runs (it starts at creation, or at the first use of ``incoming`` or
        /// ``startReading(handler:)`` for a transport made with `startReading: false`).
        var reading = false
    }

    /// What a reader thread hands to a handler given to ``startReading(handler:)``.
    public enum Inbound: Sendable {
        /// The packets one read completed, in order.
        case packets([HCIPacket])
        /// The descriptor reached its end or failed (with the error), or the transport was closed: nothing follows.
        case finished((any Error)?)
    }

    /// Packets read from the descriptor, in order. For a transport made with `startReading: false`, the first use
    /// starts the reader thread; after ``startReading(handler:)`` the packets go to the handler and this stays empty.
    public var incoming: AsyncThrowingStream<HCIPacket, any Error> {
        _ = begin(handler: nil)
        return stream
    }
    private let stream: AsyncThrowingStream<HCIPacket, any Error>
    private let continuation: AsyncThrowingStream<HCIPacket, any Error>.Continuation
    private let fd: Int32
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let framing: Framing
    /// The descriptor is a socket (TCP, the HCI user channel): a write copies into the kernel's socket buffer and
    /// returns at once, where a serial port's may wait for the line (see ``writesWithoutWaiting``).
    private let isSocket: Bool
    private let state = Mutex(State())
    private let writeLock = Mutex(())
    private let framingErrors = Atomic<Int>(0)
    /// Where the reader thread hands packets when no handler was given: ``incoming``, or the inbox a host took
    /// (``takeInbox()``) before any packet arrived.
    private let target = Mutex<Target>(Target())
    private struct Target {
        var inbox: HCIPacketInbox?
        /// A packet or the end went to ``incoming``: too late for an inbox.
        var delivered = false
    }
    private let logger: Logger
    private let label: String

    /// Framing errors seen so far (unknown indicators, undecodable packets); the stream carries on after each.
    public var framingErrorCount: Int { framingErrors.load(ordering: .relaxed) }

    /// Takes ownership of `fd` and starts reading it (with `startReading: false`, when ``incoming`` is first used or
    /// ``startReading(handler:)`` is called).
    public init(fileDescriptor fd: Int32, framing: Framing = .stream, label: String, startReading: Bool = true) throws {
        Self.ignoreSIGPIPEForPipes
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else {
            throw TransportError(.openFailed, "\(label): cannot create a wake-up pipe", errno: errno)
        }
        self.fd = fd
        self.wakeRead = fds[0]
        self.wakeWrite = fds[1]
        self.framing = framing
        var status = stat()
        self.isSocket = fstat(fd, &status) == 0 && (status.st_mode & S_IFMT) == S_IFSOCK
        self.label = label
        self.logger = Logger(label: "ble.transport")
        (stream, continuation) = AsyncThrowingStream.makeStream(of: HCIPacket.self, throwing: (any Error).self)
        if startReading { _ = begin(handler: nil) }
    }

    /// Starts the reader thread handing every read's packets to `handler`, on that thread, instead of yielding them
    /// to ``incoming``: no task hop per packet, and the packets of one read arrive together (a controller answers a
    /// burst in one write). The handler must not block for long: the descriptor is not read meanwhile. Returns
    /// `false`, changing nothing, when reading has already started (``incoming`` was used, or the transport was made
    /// with `startReading: true`).
    public func startReading(handler: @escaping @Sendable (Inbound) -> Void) -> Bool {
        begin(handler: handler)
    }

    /// Switches the packets read to an inbox the host takes in batches (the packets of each read together, one
    /// wake-up for them) instead of ``incoming``, which finishes. `nil` when packets already went to ``incoming``,
    /// or a handler reads them (``startReading(handler:)``). Starts the reader thread if it has not started.
    package func takeInbox() -> HCIPacketInbox? {
        let inbox = HCIPacketInbox()
        let taken = target.withLock { t -> Bool in
            guard t.inbox == nil, !t.delivered else { return false }
            t.inbox = inbox
            return true
        }
        guard taken else { return nil }
        let started = begin(handler: nil)
        let closed = state.withLock { $0.closed }
        if !started, closed {
            // Closed before anything was read: there is no reader thread to end the inbox.
            inbox.finish()
        }
        continuation.finish()
        return inbox
    }

    private func begin(handler: (@Sendable (Inbound) -> Void)?) -> Bool {
        let start = state.withLock { s in
            defer { s.reading = true }
            return !s.reading
        }
        guard start else { return false }
        // A handler takes every read: no inbox can be taken from now on.
        if handler != nil { target.withLock { $0.delivered = true } }
        let thread = Thread { [self] in self.readLoop(handler: handler) }
        thread.name = "ble.transport.\(label)"
        thread.start()
        return true
    }

    deinit {
        Glibc.close(wakeWrite)
    }

    /// Writes one packet.
    public func send(_ packet: HCIPacket) async throws {
        try sendNow(packet)
    }

    /// Writes packets in order: on a byte stream all of them in one write (one system call for the fragments a host
    /// releases together), on a datagram descriptor one write each.
    public func send(_ packets: [HCIPacket]) async throws {
        try sendNow(packets)
    }

    /// Sends synchronously (the write is short and the descriptor blocking).
    public func sendNow(_ packet: HCIPacket) throws {
        try write(packet.h4Bytes)
    }

    /// Sends packets synchronously, in order: on a byte stream in one write.
    public func sendNow(_ packets: [HCIPacket]) throws {
        guard framing != .datagram, packets.count > 1 else {
            for packet in packets { try sendNow(packet) }
            return
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(packets.reduce(0) { $0 + 1 + $1.body.count })
        for packet in packets {
            bytes.append(packet.type.rawValue)
            bytes.append(contentsOf: packet.body)
        }
        try write(bytes)
    }

    private func write(_ bytes: [UInt8]) throws {
        try writeLock.withLock { _ in
            if state.withLock({ $0.closed }) { throw TransportError(.closed, "\(label): transport closed") }
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeBytes { raw in
                    writeNoSignal(raw.baseAddress.map { $0 + offset }, bytes.count - offset)
                }
                if n < 0 {
                    if errno == EINTR || errno == EAGAIN { continue }
                    throw TransportError(.ioFailed, "\(label): write failed", errno: errno)
                }
                if framing == .datagram, n != bytes.count {
                    throw TransportError(.ioFailed, "\(label): short datagram write (\(n) of \(bytes.count))")
                }
                offset += n
            }
        }
    }

    /// Closes the transport.
    public func close() async { closeNow() }

    /// Whether a write returns without waiting for the other end: true on a socket. A serial port's write can wait
    /// for the line (a slow baud rate, a controller holding CTS), so a host drains it off its executor instead.
    package var writesWithoutWaiting: Bool { isSocket }

    /// Writes without ever raising SIGPIPE when the peer has gone: `send(MSG_NOSIGNAL)` on sockets, `write` on
    /// other descriptors (a closed pipe's SIGPIPE is ignored once, process-wide, as the first transport opens).
    private func writeNoSignal(_ pointer: UnsafeRawPointer?, _ count: Int) -> Int {
        let n = Glibc.send(fd, pointer, count, Int32(MSG_NOSIGNAL))
        if n < 0, errno == ENOTSOCK { return Glibc.write(fd, pointer, count) }
        return n
    }

    /// Closes the transport; the reader thread closes the descriptor and finishes ``incoming``.
    public func closeNow() {
        let (wasClosed, wasReading) = state.withLock { s in
            defer { (s.closed, s.reading) = (true, true) }
            return (s.closed, s.reading)
        }
        guard !wasClosed else { return }
        guard wasReading else {
            // Never read: no reader thread to wake; close here.
            releaseDescriptor()
            Glibc.close(wakeRead)
            let inbox = target.withLock { t -> HCIPacketInbox? in
                t.delivered = true
                return t.inbox
            }
            inbox?.finish()
            continuation.finish()
            return
        }
        var byte: UInt8 = 1
        _ = Glibc.write(wakeWrite, &byte, 1)
    }

    /// Marks the transport closed and closes the descriptor, never while a write is under way. The number is free
    /// for the process to reuse from then on (a server's next accepted client gets it at once), so a writer that
    /// checked `closed` before must not go on sending to it: the bytes would land in another connection's stream.
    /// `shutdown` first, so that a writer blocked in `send` returns (with an error) and lets go of the write lock.
    private func releaseDescriptor() {
        _ = Glibc.shutdown(fd, Int32(SHUT_RDWR))
        writeLock.withLock { _ in
            state.withLock { $0.closed = true }
            Glibc.close(fd)
        }
    }

    private func readLoop(handler: (@Sendable (Inbound) -> Void)?) {
        var deframer = H4Deframer()
        var batch: [HCIPacket] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var failure: (any Error)?
        loop: while true {
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                failure = TransportError(.ioFailed, "\(label): poll failed", errno: errno)
                break
            }
            if fds[1].revents != 0 { break }
            guard fds[0].revents != 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n == 0 { break }    // end of stream
            if n < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                if state.withLock({ $0.closed }) { break }
                failure = TransportError(.ioFailed, "\(label): read failed", errno: errno)
                break
            }
            switch framing {
            case .stream:
                for result in deframer.push(buffer[0..<n]) { deliver(result, into: &batch) }
            case .datagram:
                do { deliver(.success(try HCIPacket(h4: buffer[0..<n])), into: &batch) } catch { deliver(.failure(error), into: &batch) }
            }
            guard !batch.isEmpty else { continue }
            if let handler {
                handler(.packets(batch))
            } else if let inbox = target.withLock({ t -> HCIPacketInbox? in
                if t.inbox == nil { t.delivered = true }
                return t.inbox
            }) {
                inbox.yield(contentsOf: batch)
            } else {
                for packet in batch { continuation.yield(packet) }
            }
            batch.removeAll(keepingCapacity: true)
        }
        releaseDescriptor()
        Glibc.close(wakeRead)
        let inbox = target.withLock { t -> HCIPacketInbox? in
            t.delivered = true
            return t.inbox
        }
        inbox?.finish(throwing: failure)
        if let failure { continuation.finish(throwing: failure) } else { continuation.finish() }
        handler?(.finished(failure))
    }

    private func deliver(_ result: Result<HCIPacket, WireError>, into batch: inout [HCIPacket]) {
        switch result {
        case .success(let packet):
            batch.append(packet)
        case .failure(let error):
            framingErrors.add(1, ordering: .relaxed)
            logger.warning("\(label): framing error: \(error)")
        }
    }
}
