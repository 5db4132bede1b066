import BLE
import Foundation

/// A value behind a lock: the mutable state of the compatibility objects, which the application reads on its
/// delegate queue (or any thread) while the stack's tasks update it.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

/// Runs asynchronous operations one at a time, in the order they were submitted (the stack's calls behind the
/// synchronous CoreBluetooth methods, so that a `stopScan` never overtakes the `scanForPeripherals` before it and
/// writes go out in the order the application made them).
final class OrderedOperations: Sendable {
    typealias Operation = @Sendable () async -> Void
    private let operations: AsyncStream<Operation>.Continuation
    private let worker: Task<Void, Never>

    init() {
        let (stream, continuation) = AsyncStream.makeStream(of: Operation.self)
        operations = continuation
        worker = Task {
            for await operation in stream { await operation() }
        }
    }

    /// Queues an operation after those already submitted.
    func submit(_ operation: @escaping Operation) { operations.yield(operation) }

    /// Drops the operations not started yet; the one running finishes.
    func finish() {
        operations.finish()
    }
}

/// A serial queue that delivers delegate callbacks on `target` (the main queue when `nil`), in submission order,
/// one at a time, even when `target` is concurrent.
func makeDelegateQueue(_ label: String, target: DispatchQueue?) -> DispatchQueue {
    DispatchQueue(label: label, target: target ?? .main)
}
