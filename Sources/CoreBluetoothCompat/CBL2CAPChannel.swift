import BLE
import Foundation

/// An open LE credit based L2CAP channel, as CoreBluetooth's `CBL2CAPChannel`: bytes in through ``inputStream``,
/// out through ``outputStream``.
///
/// As on iOS, set each stream's delegate, open it, and read when it reports `hasBytesAvailable`, write when it
/// reports `hasSpaceAvailable`. Stream events arrive on the manager's delegate queue (whatever run loop a stream is
/// scheduled in: on Linux a command-line program often runs `dispatchMain()`, which runs no run loop). Reading never
/// blocks: with nothing buffered, `read` returns 0 until more arrives (and at the end of the stream, once the channel
/// closed). Each `write` sends at most one SDU of the peer's MTU. Closing both streams closes the channel, once
/// every byte written before was delivered (the controller confirmed it; 5 s at most); a central's
/// `cancelPeripheralConnection` lets the bytes written on its channels go first as well.
public final class CBL2CAPChannel: NSObject, @unchecked Sendable {
    /// The device at the other end: a ``CBPeripheral`` for a channel a central opened, a ``CBCentral`` for one a
    /// peripheral manager accepted.
    public let peer: CBPeer
    /// The bytes the peer sends.
    public let inputStream: InputStream
    /// The bytes to send to the peer.
    public let outputStream: OutputStream
    /// The channel's PSM.
    public let psm: CBL2CAPPSM
    /// What moves the streams' bytes (and orders their writes before the channel's close).
    let pipe: ChannelPipe

    init(_ channel: L2CAPChannel, peer: CBPeer, psm: CBL2CAPPSM, deliveringOn queue: DispatchQueue) {
        self.peer = peer
        self.psm = psm
        let pipe = ChannelPipe(channel: channel, queue: queue)
        self.pipe = pipe
        let input = ChannelInputStream(pipe: pipe)
        let output = ChannelOutputStream(pipe: pipe)
        inputStream = input
        outputStream = output
        super.init()
        pipe.start(input: UncheckedBox(input), output: UncheckedBox(output))
    }

    /// The PSM and the peer.
    public override var description: String { "CBL2CAPChannel PSM \(psm) peer \(peer.identifier.uuidString)" }
}

/// A value handed between tasks and the delegate queue although its type is not `Sendable`: the streams, which the
/// application uses on the delegate queue and this module only touches there or under the pipe's lock.
struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// The state shared by a channel's two streams and the tasks that move its bytes.
final class ChannelPipe: Sendable {
    struct State {
        var buffer: [UInt8] = []
        var readOffset = 0
        var ended = false
        var inputOpen = false
        var inputClosed = false
        var outputOpen = false
        var outputClosed = false
        /// Bytes given to `write` and not yet sent.
        var unsent = 0
        /// The reader waits for room (the application has not read the buffered bytes).
        var roomWaiter: CheckedContinuation<Void, Never>?
        var owesSpace = false
        var pump: Task<Void, Never>?
    }

    /// How many received bytes wait for the application before the channel stops taking SDUs (and so stops giving
    /// the peer credits).
    static let bufferLimit = 64 * 1024
    /// How many bytes may wait to be sent before the output stream reports no space.
    static let sendLimit = 16 * 1024

    let state = Locked(State())
    let channel: L2CAPChannel
    let queue: DispatchQueue
    let sends = OrderedOperations()

    init(channel: L2CAPChannel, queue: DispatchQueue) {
        self.channel = channel
        self.queue = queue
    }

    func start(input: UncheckedBox<ChannelInputStream>, output: UncheckedBox<ChannelOutputStream>) {
        let incoming = channel.incoming
        let pump = Task { [weak self] in
            for await sdu in incoming {
                guard let self else { return }
                let full = self.state.withLock { state in
                    state.buffer.append(contentsOf: sdu)
                    return state.buffer.count - state.readOffset >= Self.bufferLimit
                }
                self.event(.hasBytesAvailable, on: input)
                if full {
                    await withCheckedContinuation { continuation in
                        let resumeNow = self.state.withLock { state in
                            guard state.buffer.count - state.readOffset >= Self.bufferLimit, !state.inputClosed else { return true }
                            state.roomWaiter = continuation
                            return false
                        }
                        if resumeNow { continuation.resume() }
                    }
                }
            }
            guard let self else { return }
            self.state.withLock { $0.ended = true }
            self.event(.endEncountered, on: input)
            self.event(.endEncountered, on: output)
        }
        state.withLock { $0.pump = pump }
    }

    /// Tells a stream's delegate about `event` on the delegate queue, if the stream is open.
    func event<S: Stream>(_ event: Stream.Event, on stream: UncheckedBox<S>) {
        queue.async {
            let stream = stream.value
            guard stream.streamStatus != .closed, stream.streamStatus != .notOpen else { return }
            stream.delegate?.stream(stream, handle: event)
        }
    }

    func read(into buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        let (count, waiter) = state.withLock { state -> (Int, CheckedContinuation<Void, Never>?) in
            let available = state.buffer.count - state.readOffset
            let count = min(available, max(0, maxLength))
            for i in 0..<count { buffer[i] = state.buffer[state.readOffset + i] }
            state.readOffset += count
            if state.readOffset == state.buffer.count {
                state.buffer.removeAll(keepingCapacity: true)
                state.readOffset = 0
            } else if state.readOffset > 4096 {
                state.buffer.removeFirst(state.readOffset)
                state.readOffset = 0
            }
            guard state.buffer.count - state.readOffset < Self.bufferLimit, let waiter = state.roomWaiter else { return (count, nil) }
            state.roomWaiter = nil
            return (count, waiter)
        }
        waiter?.resume()
        return count
    }

    var hasBytesAvailable: Bool { state.withLock { $0.buffer.count > $0.readOffset } }
    var isAtEnd: Bool { state.withLock { $0.ended && $0.buffer.count == $0.readOffset } }
    var hasSpaceAvailable: Bool { state.withLock { !$0.ended && $0.unsent < Self.sendLimit } }

    func write(_ bytes: [UInt8], output: UncheckedBox<ChannelOutputStream>) -> Int {
        let accepted = state.withLock { state -> Bool in
            guard !state.ended, state.unsent < Self.sendLimit else {
                state.owesSpace = true
                return false
            }
            state.unsent += bytes.count
            return true
        }
        guard accepted else { return 0 }
        let channel = channel
        sends.submit { [weak self] in
            let sent = (try? await channel.send(bytes)) != nil
            guard let self else { return }
            let space = self.state.withLock { state -> Bool in
                state.unsent -= bytes.count
                if !sent { state.ended = true }
                guard state.owesSpace, state.unsent < Self.sendLimit, !state.ended else { return false }
                state.owesSpace = false
                return true
            }
            if space { self.event(.hasSpaceAvailable, on: output) }
        }
        return bytes.count
    }

    /// The largest SDU the peer takes.
    var peerMTU: Int { channel.peerMTU }

    func opened(input: Bool) {
        state.withLock { input ? ($0.inputOpen = true) : ($0.outputOpen = true) }
    }

    /// Returns once the writes and the close submitted so far are done (the close once the channel's data was
    /// delivered).
    func settled() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            sends.submit { continuation.resume() }
        }
    }

    /// A stream closed; when both are, the channel closes (after the writes before it: the close waits until the
    /// controller confirmed their bytes).
    func closed(input: Bool) {
        let (both, waiter) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
            if input { state.inputClosed = true } else { state.outputClosed = true }
            let waiter = input ? state.roomWaiter : nil
            if input { state.roomWaiter = nil }
            return (state.inputClosed && state.outputClosed, waiter)
        }
        waiter?.resume()
        guard both else { return }
        let channel = channel
        sends.submit { _ = try? await channel.close() }
    }
}

/// The input stream of a ``CBL2CAPChannel``.
final class ChannelInputStream: InputStream {
    private let pipe: ChannelPipe
    private let status = Locked(Stream.Status.notOpen)
    private weak var streamDelegate: (any StreamDelegate)?

    init(pipe: ChannelPipe) {
        self.pipe = pipe
        super.init(data: Data())
    }

    override var delegate: (any StreamDelegate)? {
        get { streamDelegate }
        set { streamDelegate = newValue }
    }

    override func open() {
        status.withLock { if $0 == .notOpen { $0 = .open } }
        pipe.opened(input: true)
        pipe.event(.openCompleted, on: UncheckedBox(self))
        if pipe.hasBytesAvailable { pipe.event(.hasBytesAvailable, on: UncheckedBox(self)) }
        if pipe.isAtEnd { pipe.event(.endEncountered, on: UncheckedBox(self)) }
    }

    override func close() {
        status.withLock { $0 = .closed }
        pipe.closed(input: true)
    }

    override var streamStatus: Stream.Status {
        let status = status.withLock { $0 }
        return status == .open && pipe.isAtEnd ? .atEnd : status
    }

    override var hasBytesAvailable: Bool { pipe.hasBytesAvailable }

    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
        guard status.withLock({ $0 }) == .open else { return -1 }
        return pipe.read(into: buffer, maxLength: len)
    }

    override func getBuffer(_ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length len: UnsafeMutablePointer<Int>) -> Bool { false }

    override func schedule(in aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {}
    override func remove(from aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {}
}

/// The output stream of a ``CBL2CAPChannel``.
final class ChannelOutputStream: OutputStream {
    /// The channel's pipe (`nil` only for a stream made with Foundation's `init(toMemory:)`, which writes nowhere).
    private let pipe: ChannelPipe?
    private let status = Locked(Stream.Status.notOpen)
    private weak var streamDelegate: (any StreamDelegate)?

    init(pipe: ChannelPipe) {
        self.pipe = pipe
        super.init(toMemory: ())
    }

    required init(toMemory: ()) {
        pipe = nil
        super.init(toMemory: ())
    }

    override var delegate: (any StreamDelegate)? {
        get { streamDelegate }
        set { streamDelegate = newValue }
    }

    override func open() {
        status.withLock { if $0 == .notOpen { $0 = .open } }
        guard let pipe else { return }
        pipe.opened(input: false)
        pipe.event(.openCompleted, on: UncheckedBox(self))
        if pipe.hasSpaceAvailable { pipe.event(.hasSpaceAvailable, on: UncheckedBox(self)) }
    }

    override func close() {
        status.withLock { $0 = .closed }
        pipe?.closed(input: false)
    }

    override var streamStatus: Stream.Status { status.withLock { $0 } }

    override var hasSpaceAvailable: Bool { pipe?.hasSpaceAvailable ?? false }

    override func write(_ buffer: UnsafePointer<UInt8>, maxLength len: Int) -> Int {
        guard status.withLock({ $0 }) == .open, let pipe else { return -1 }
        let count = min(max(0, len), pipe.peerMTU)
        guard count > 0 else { return 0 }
        return pipe.write(Array(UnsafeBufferPointer(start: buffer, count: count)), output: UncheckedBox(self))
    }

    override func schedule(in aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {}
    override func remove(from aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {}
}
