import BLEHost
import Synchronization
import Testing

/// ``NotificationStream`` on its own: order, the buffering limit, the two ways it ends and what each does to the
/// values waiting, and its termination handler. No sockets and no sleeps: a consumer that must be waiting is
/// awaited through the stream itself.
@Suite struct NotificationStreamTests {
    /// Records how a stream ended, and how many times.
    final class Terminations: Sendable {
        let seen = Mutex<[NotificationStream.Termination]>([])
        var handler: @Sendable (NotificationStream.Termination) -> Void { { t in self.seen.withLock { $0.append(t) } } }
        var all: [NotificationStream.Termination] { seen.withLock { $0 } }
    }

    @Test func valuesArriveInOrderAndFinishingDeliversWhatIsBuffered() async {
        let (stream, source) = NotificationStream.makeStream(bufferingLimit: 8)
        let ended = Terminations()
        source.onTermination = ended.handler
        for i in 0..<5 { #expect(source.yield([UInt8(i)]) == .enqueued) }
        source.finish()
        #expect(source.isTerminated)
        #expect(source.yield([9]) == .terminated)
        var got: [[UInt8]] = []
        for await value in stream { got.append(value) }
        #expect(got == [[0], [1], [2], [3], [4]])
        #expect(ended.all == [.finished])
    }

    @Test func aFullBufferDropsTheOldestForTheNewest() async {
        let (stream, source) = NotificationStream.makeStream(bufferingLimit: 3)
        let results = (0..<7).map { source.yield([UInt8($0)]) }
        #expect(results == [.enqueued, .enqueued, .enqueued, .dropped, .dropped, .dropped, .dropped])
        source.finish()
        var got: [[UInt8]] = []
        for await value in stream { got.append(value) }
        #expect(got == [[4], [5], [6]])
    }

    @Test func aLimitBelowOneKeepsOneValue() async {
        let (stream, source) = NotificationStream.makeStream(bufferingLimit: 0)
        #expect(source.yield([1]) == .enqueued)
        #expect(source.yield([2]) == .dropped)
        source.finish()
        var iterator = stream.makeAsyncIterator()
        #expect(await iterator.next() == [2])
        #expect(await iterator.next() == nil)
        #expect(await iterator.next() == nil)
    }

    /// Values taken from the front while more arrive at the back: the buffer's taken prefix is dropped now and then,
    /// and no value is lost or repeated.
    @Test func takingAndYieldingInTurnsKeepsTheOrder() async {
        let (stream, source) = NotificationStream.makeStream(bufferingLimit: 1000)
        var iterator = stream.makeAsyncIterator()
        var next: UInt16 = 0, taken: [UInt16] = []
        func yield(_ n: Int) {
            for _ in 0..<n {
                #expect(source.yield([UInt8(next & 0xFF), UInt8(next >> 8)]) == .enqueued)
                next += 1
            }
        }
        func take(_ n: Int) async {
            for _ in 0..<n {
                guard let v = await iterator.next(), v.count == 2 else { return }
                taken.append(UInt16(v[0]) | UInt16(v[1]) << 8)
            }
        }
        yield(200); await take(150)
        yield(300); await take(100)
        yield(10); await take(260)
        yield(1); await take(1)
        source.finish()
        #expect(await iterator.next() == nil)
        #expect(taken == Array(0..<511))
    }

    /// A consumer on another task, taking values as they come, 20,000 of them.
    @Test func aConcurrentConsumerGetsEveryValueInOrder() async {
        let (stream, source) = NotificationStream.makeStream(bufferingLimit: 20_000)
        let consumer = Task {
            var expected: UInt16 = 0, wrong = 0
            for await value in stream {
                if value != [UInt8(expected & 0xFF), UInt8(expected >> 8)] { wrong += 1 }
                expected &+= 1
            }
            return (expected, wrong)
        }
        for i in 0..<20_000 {
            #expect(source.yield([UInt8(i & 0xFF), UInt8(i >> 8)]) == .enqueued)
            if i % 500 == 0 { await Task.yield() }
        }
        source.finish()
        let (count, wrong) = await consumer.value
        #expect(count == 20_000)
        #expect(wrong == 0)
    }

    @Test func aWaitingConsumerGetsTheNextValueAndTheEnd() async {
        let (stream, source) = NotificationStream.makeStream()
        let (ready, readySource) = NotificationStream.makeStream()
        let consumer = Task {
            var got: [[UInt8]] = []
            var iterator = stream.makeAsyncIterator()
            readySource.yield([])
            while let value = await iterator.next() { got.append(value) }
            return got
        }
        for await _ in ready { break }
        source.yield([0xAA])
        source.yield([0xBB, 0xCC])
        source.finish()
        #expect(await consumer.value == [[0xAA], [0xBB, 0xCC]])
    }

    @Test func cancellingTheConsumerEndsTheStreamAndDiscardsItsValues() async {
        let (stream, source) = NotificationStream.makeStream()
        let ended = Terminations()
        source.onTermination = ended.handler
        let (ready, readySource) = NotificationStream.makeStream()
        let consumer = Task {
            var iterator = stream.makeAsyncIterator()
            readySource.yield([])
            return await iterator.next()
        }
        for await _ in ready { break }
        consumer.cancel()
        #expect(await consumer.value == nil)
        #expect(ended.all == [.cancelled])
        #expect(source.isTerminated)
        #expect(source.yield([1]) == .terminated)
        // Finishing afterwards does not run the handler again.
        source.finish()
        #expect(ended.all == [.cancelled])
    }

    @Test func anAlreadyCancelledTaskGetsTheEndAtOnce() async {
        let (stream, source) = NotificationStream.makeStream()
        let ended = Terminations()
        source.onTermination = ended.handler
        let consumer = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            var iterator = stream.makeAsyncIterator()
            return await iterator.next()
        }
        #expect(await consumer.value == nil)
        #expect(ended.all == [.cancelled])
    }

    @Test func releasingTheStreamCancelsIt() {
        let ended = Terminations()
        let source: NotificationStream.Source
        do {
            let (stream, made) = NotificationStream.makeStream()
            source = made
            source.onTermination = ended.handler
            source.yield([1])
            // An iterator keeps the consumer alive after the stream itself is gone.
            var iterator: NotificationStream.AsyncIterator? = stream.makeAsyncIterator()
            #expect(ended.all.isEmpty)
            iterator = nil
            _ = iterator
        }
        #expect(ended.all == [.cancelled])
        #expect(source.yield([2]) == .terminated)
    }

    @Test func releasingTheSourceFinishesTheStream() async {
        var source: NotificationStream.Source?
        let stream: NotificationStream
        (stream, source) = NotificationStream.makeStream()
        source?.yield([7])
        source = nil
        var got: [[UInt8]] = []
        for await value in stream { got.append(value) }
        #expect(got == [[7]])
    }

    @Test func aHandlerSetOnAnEndedStreamRunsAtOnce() {
        let (stream, source) = NotificationStream.makeStream()
        source.finish()
        let ended = Terminations()
        source.onTermination = ended.handler
        #expect(ended.all == [.finished])
        #expect(source.onTermination == nil)
        withExtendedLifetime(stream) {}
        // A stream nobody kept is cancelled at once.
        let (_, unkept) = NotificationStream.makeStream()
        let unkeptEnded = Terminations()
        unkept.onTermination = unkeptEnded.handler
        #expect(unkeptEnded.all == [.cancelled])
    }
}
