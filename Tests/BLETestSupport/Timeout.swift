/// A test gave up waiting: thrown by ``withTimeout(_:_:)`` when its body has not finished in time, and by test bodies
/// whose awaited event never came (an event stream that ended first).
public struct TimedOut: Error, Equatable, CustomStringConvertible {
    /// The time limit that passed, in seconds; `nil` when the waiting ended some other way.
    public let seconds: Double?

    public init(after seconds: Double? = nil) { self.seconds = seconds }

    public var description: String {
        if let seconds { "timed out after \(seconds) s" } else { "timed out" }
    }
}

/// Runs `body` and returns its value, or throws ``TimedOut`` once `seconds` have passed, so that a broken test fails
/// instead of hanging. `body` is cancelled when the time is up; whichever ends first cancels the other.
public func withTimeout<T: Sendable>(
    _ seconds: Double = 10, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            throw TimedOut(after: seconds)
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw TimedOut(after: seconds) }
        return first
    }
}

/// Waits until `condition` holds, checking it every 20 ms; throws ``TimedOut`` once `seconds` have passed.
public func eventually(_ seconds: Double = 10, _ condition: @escaping @Sendable () async -> Bool) async throws {
    try await withTimeout(seconds) {
        while !(await condition()) { try await Task.sleep(for: .milliseconds(20)) }
    }
}
