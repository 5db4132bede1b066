import BLEProtocols
import Synchronization

/// The values of a characteristic's notifications (or indications), in the order they arrived: an `AsyncSequence` of
/// byte arrays that ends when the subscription does.
///
/// It behaves as an `AsyncStream<[UInt8]>` with a `.bufferingNewest(limit)` policy would, and costs less per value:
/// it is not generic, so nothing on its path looks up generic metadata at run time, and a consumer that keeps up takes
/// each value with one lock and no allocation of its own.
///
/// - Values the consumer has not taken yet wait in a buffer of at most `bufferingLimit` values; when it is full, the
///   oldest is dropped for the newest (notifications have no flow control, so the alternative would be memory without
///   bound), and ``Source/yield(_:)`` says so.
/// - The stream ends when its ``Source`` finishes it (or is released): the values already buffered are still
///   delivered, then iteration ends.
/// - It also ends when the task iterating it is cancelled, or when every copy of the stream and of its iterators is
///   released: buffered values are then discarded, and the source's termination handler runs.
///
/// One task iterates a stream at a time; a second iteration running at the same time gets the values the first one
/// does not (each value goes to one consumer).
public struct NotificationStream: AsyncSequence, Sendable {
    public typealias Element = [UInt8]
    public typealias Failure = Never

    /// How a stream ended, as its ``Source/onTermination`` handler is told.
    public enum Termination: Sendable, Equatable {
        /// The source finished it.
        case finished
        /// The consumer went away: its task was cancelled, or the stream and its iterators were released.
        case cancelled
    }

    /// What became of a value handed to ``Source/yield(_:)``.
    public enum YieldResult: Sendable, Equatable {
        /// It waits for the consumer (or was handed to it at once).
        case enqueued
        /// It was taken, but the buffer was full: the oldest value waiting was dropped for it.
        case dropped
        /// The stream had ended: the value was discarded.
        case terminated
    }

    /// The producing end of a ``NotificationStream``. Releasing the last reference to it finishes the stream.
    public final class Source: Sendable {
        let core: Core

        init(core: Core) { self.core = core }

        deinit { core.finish() }

        /// Hands a value to the consumer (see ``YieldResult``).
        @discardableResult
        public func yield(_ value: [UInt8]) -> YieldResult { core.yield(value) }

        /// Ends the stream: the consumer gets the values already buffered, then the end. Later values are discarded.
        public func finish() { core.finish() }

        /// Whether the stream has ended (finished, or its consumer gone).
        public var isTerminated: Bool { core.isTerminated }

        /// Runs once when the stream ends, however it ends. Set it before handing the stream out; setting it on an
        /// ended stream runs it at once.
        public var onTermination: (@Sendable (Termination) -> Void)? {
            get { core.terminationHandler }
            set { core.setTerminationHandler(newValue) }
        }
    }

    /// Makes a stream and the source that feeds it. `bufferingLimit` (at least 1) is the most values that wait for
    /// the consumer.
    public static func makeStream(bufferingLimit: Int = 4096) -> (stream: NotificationStream, source: Source) {
        let core = Core(limit: Swift.max(1, bufferingLimit))
        return (NotificationStream(consumer: Consumer(core: core)), Source(core: core))
    }

    /// The consuming side's lifetime: when the stream and all its iterators are gone, the consumer is.
    final class Consumer: Sendable {
        let core: Core
        init(core: Core) { self.core = core }
        deinit { core.cancel() }
    }

    let consumer: Consumer

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(consumer: consumer) }

    /// Iterates a ``NotificationStream``.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let consumer: Consumer

        /// The next value, or `nil` once the stream has ended.
        public mutating func next() async -> [UInt8]? {
            await next(isolation: nil)
        }

        /// The next value, or `nil` once the stream has ended; waits on the caller's actor.
        public mutating func next(isolation actor: isolated (any Actor)?) async -> [UInt8]? {
            let core = consumer.core
            switch core.take() {
            case .value(let value): return value
            case .ended: return nil
            case .empty: break
            }
            return await withTaskCancellationHandler {
                await withUnsafeContinuation(isolation: actor) { (waiter: UnsafeContinuation<[UInt8]?, Never>) in
                    core.wait(waiter)
                }
            } onCancel: {
                core.cancel()
            }
        }
    }

    /// The state both ends share, under one lock.
    final class Core: Sendable {
        struct State {
            let limit: Int
            /// Waiting values, oldest first.
            var buffer = FIFO<[UInt8]>()
            var waiters: [UnsafeContinuation<[UInt8]?, Never>] = []
            var ended: Termination?
            var onTermination: (@Sendable (Termination) -> Void)?
        }

        enum Taken {
            case value([UInt8])
            case empty
            case ended
        }

        let state: Mutex<State>

        init(limit: Int) { state = Mutex(State(limit: limit)) }

        func take() -> Taken {
            state.withLock { s in
                if let value = s.buffer.popFirst() { return .value(value) }
                return s.ended == nil ? .empty : .ended
            }
        }

        func wait(_ waiter: UnsafeContinuation<[UInt8]?, Never>) {
            let now: [UInt8]?? = state.withLock { s in
                if let value = s.buffer.popFirst() { return .some(value) }
                if s.ended != nil { return .some(nil) }
                s.waiters.append(waiter)
                return nil
            }
            if let now { waiter.resume(returning: now) }
        }

        func yield(_ value: [UInt8]) -> YieldResult {
            let (result, waiter): (YieldResult, UnsafeContinuation<[UInt8]?, Never>?) = state.withLock { s in
                guard s.ended == nil else { return (.terminated, nil) }
                if !s.waiters.isEmpty { return (.enqueued, s.waiters.removeFirst()) }
                var result = YieldResult.enqueued
                if s.buffer.count >= s.limit {
                    _ = s.buffer.popFirst()
                    result = .dropped
                }
                s.buffer.append(value)
                return (result, nil)
            }
            waiter?.resume(returning: value)
            return result
        }

        func finish() { end(.finished) }

        func cancel() { end(.cancelled) }

        private func end(_ how: Termination) {
            let (waiters, handler): ([UnsafeContinuation<[UInt8]?, Never>], (@Sendable (Termination) -> Void)?) = state.withLock { s in
                guard s.ended == nil else {
                    // A consumer that goes away after the source finished drops what it never took.
                    if how == .cancelled { s.buffer.removeAll() }
                    return ([], nil)
                }
                s.ended = how
                if how == .cancelled { s.buffer.removeAll() }
                let waiters = s.waiters
                s.waiters = []
                let handler = s.onTermination
                s.onTermination = nil
                return (waiters, handler)
            }
            for waiter in waiters { waiter.resume(returning: nil) }
            handler?(how)
        }

        var isTerminated: Bool { state.withLock { $0.ended != nil } }

        var terminationHandler: (@Sendable (Termination) -> Void)? { state.withLock { $0.onTermination } }

        func setTerminationHandler(_ handler: (@Sendable (Termination) -> Void)?) {
            let endedAlready: Termination? = state.withLock { s in
                guard let ended = s.ended else {
                    s.onTermination = handler
                    return nil
                }
                return ended
            }
            if let endedAlready { handler?(endedAlready) }
        }
    }
}

/// Where a ``GATTEngine`` hands a subscription's values: `deliver` takes each value in order, on the engine's
/// executor, and returns `true` when the value made its consumer drop an older one; `end` runs once when the
/// subscription ends. (A ``NotificationStream``'s source, or the `BLE` module's fan-out to a peripheral's streams.)
package struct NotificationSink: Sendable {
    package let deliver: @Sendable ([UInt8]) -> Bool
    package let end: @Sendable () -> Void

    package init(deliver: @escaping @Sendable ([UInt8]) -> Bool, end: @escaping @Sendable () -> Void) {
        self.deliver = deliver
        self.end = end
    }
}
