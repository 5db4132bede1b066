import BLE
import BLEProfiles
import BLETransport
import BLEVirtualController
import Foundation
import Synchronization
import Testing

/// A private simulated air whose first controller is served over H4/TCP, so that a demo process started with
/// `SWIFT_BLE_HCI=tcp:127.0.0.1:PORT` joins it, beside devices the test runs and controls.
final class DemoAir: Sendable {
    let air = VirtualAir(clock: .realTime)
    let servers: [H4TCPServer]
    private let accepting: [Task<Void, Never>]
    private let accepted = AcceptCounter()

    /// An air with `ports` TCP-served controllers (each serves one host connection at a time); controller `index`
    /// has `profiles[index]` (``ControllerProfile/full`` past the end).
    init(ports: Int = 1, profiles: [ControllerProfile] = []) throws {
        servers = try (0..<ports).map { _ in try H4TCPServer(host: "127.0.0.1", port: 0) }
        let air = air
        var tasks: [Task<Void, Never>] = []
        for (index, server) in servers.enumerated() {
            tasks.append(Task { [accepted] in
                for await client in server.connections {
                    accepted.count.withLock { $0 += 1 }
                    let profile = index < profiles.count ? profiles[index] : .full
                    let controller = air.addController(.init(position: Position(x: Double(index) * 0.5), profile: profile))
                    Task { await controller.attach(client) }
                }
            })
        }
        accepting = tasks
    }

    /// The host connections the servers accepted so far.
    var connectionsAccepted: Int { accepted.count.withLock { $0 } }

    /// The `SWIFT_BLE_HCI` value of the first served controller.
    var specification: String { specification(0) }

    /// The `SWIFT_BLE_HCI` value of served controller `index`.
    func specification(_ index: Int) -> String { "tcp:127.0.0.1:\(servers[index].port)" }

    /// A peripheral manager on a new controller of this air.
    func peripheralManager(named name: String, at x: Double) async throws -> PeripheralManager {
        try await PeripheralManager(transport: air.addController(.init(position: Position(x: x))).makeHostTransport(), deviceName: name)
    }

    func shutdown() {
        for task in accepting { task.cancel() }
        for server in servers { server.close() }
        air.shutdown()
    }
}

/// A demo executable running as a child process, its standard output read line by line.
final class DemoProcess: Sendable {
    private let process: Process
    private let input: FileHandle?
    private let lines = Mutex<(buffered: [String], waiter: (id: Int, continuation: CheckedContinuation<String?, Never>)?, ended: Bool, next: Int)>(([], nil, false, 0))
    private let all = Mutex<[String]>([])

    /// Starts `name` (built next to the test bundle) with `arguments`, on the controller `hci` names (`nil`: the
    /// embedded world).
    init(_ name: String, arguments: [String] = [], hci: String?, withInput: Bool = false) throws {
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        process = Process()
        process.executableURL = directory.appendingPathComponent(name)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BLE_HCI"] = hci
        process.environment = environment
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.standardError
        if withInput {
            let stdin = Pipe()
            process.standardInput = stdin
            input = stdin.fileHandleForWriting
        } else {
            process.standardInput = FileHandle.nullDevice
            input = nil
        }
        try process.run()
        let handle = pipe.fileHandleForReading
        Thread.detachNewThread { [weak self] in
            var pending = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: 0x0A) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending.removeSubrange(pending.startIndex...newline)
                    self?.push(line)
                }
            }
            self?.end()
        }
    }

    private func push(_ line: String) {
        all.withLock { $0.append(line) }
        let waiter = lines.withLock { state -> CheckedContinuation<String?, Never>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter.continuation
            }
            state.buffered.append(line)
            return nil
        }
        waiter?.resume(returning: line)
    }

    private func end() {
        let waiter = lines.withLock { state -> CheckedContinuation<String?, Never>? in
            state.ended = true
            defer { state.waiter = nil }
            return state.waiter?.continuation
        }
        waiter?.resume(returning: nil)
    }

    private func expire(_ id: Int) {
        let waiter = lines.withLock { state -> CheckedContinuation<String?, Never>? in
            guard let waiter = state.waiter, waiter.id == id else { return nil }
            state.waiter = nil
            return waiter.continuation
        }
        waiter?.resume(returning: nil)
    }

    /// Writes a line to the process's standard input (started `withInput`).
    func type(_ line: String) {
        input?.write(Data((line + "\n").utf8))
    }

    /// Closes the process's standard input.
    func endInput() {
        try? input?.close()
    }

    /// The next line of output, or `nil` at the end of the output or after `timeout`.
    func nextLine(timeout: Duration = .seconds(20)) async -> String? {
        await withCheckedContinuation { continuation in
            let id = lines.withLock { state -> Int? in
                if !state.buffered.isEmpty {
                    continuation.resume(returning: state.buffered.removeFirst())
                    return nil
                }
                if state.ended {
                    continuation.resume(returning: nil)
                    return nil
                }
                state.next += 1
                state.waiter = (state.next, continuation)
                return state.next
            }
            guard let id else { return }
            Task { [weak self] in
                try? await Task.sleep(for: timeout)
                self?.expire(id)
            }
        }
    }

    /// Reads lines until one satisfies `predicate`; returns it, or `nil` at the end of the output or after `timeout`.
    func waitFor(timeout: Duration = .seconds(20), _ predicate: (String) -> Bool) async -> String? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            guard let line = await nextLine(timeout: deadline - ContinuousClock.now) else { return nil }
            if predicate(line) { return line }
        }
        return nil
    }

    /// Waits for the process to end (killing it after `timeout`); returns its exit status and every line it printed.
    func finish(timeout: Duration = .seconds(30)) async -> (status: Int32, output: [String]) {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(50)) }
        if process.isRunning {
            process.terminate()
            try? await Task.sleep(for: .milliseconds(200))
        }
        while await nextLine(timeout: .milliseconds(500)) != nil {}
        return (process.isRunning ? -1 : process.terminationStatus, all.withLock { $0 })
    }
}

/// The number of host connections a ``DemoAir`` accepted.
final class AcceptCounter: Sendable {
    let count = Mutex(0)
}
