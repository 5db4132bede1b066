import Foundation
import Testing

/// Where tmux is, if it is installed.
let tmuxPath = ["/usr/bin/tmux", "/usr/local/bin/tmux", "/opt/homebrew/bin/tmux"].first { FileManager.default.isExecutableFile(atPath: $0) }

/// `ble scan --live` in a terminal: run under tmux (a private server), its screen read with capture-pane and keys
/// sent with send-keys. Rows appear for the embedded world's devices and update; `s` sorts by name; `/` filters by
/// name or service; `q` quits. Without a terminal it prints the table as plain lines.
@Suite(.timeLimit(.minutes(2)), .enabled(if: tmuxPath != nil, "tmux is not installed (apt-get install -y tmux)"))
struct LiveScanTests {
    static let names = ["SwiftBLELab", "SwiftBLE HRM", "SwiftBLE Battery", "SwiftBLE BPM", "SwiftBLE Thermometer", "SwiftBLE Weight",
                        "SwiftBLE Body", "SwiftBLE Glucose", "SwiftBLE Clock", "SwiftBLE Band", "SwiftBLE Piano", "SwiftBLE Scale",
                        "SwiftBLE Phone"]

    /// A tmux server of this test's own (its socket name), so nothing else's sessions are touched.
    struct Tmux {
        let socket = "ble-live-\(ProcessInfo.processInfo.processIdentifier)-\(UInt32.random(in: 0...UInt32.max))"

        /// Runs tmux with `arguments` on this server (posix_spawn and waitpid: Foundation's Process left the client
        /// that daemonises the server unreaped); its status and standard output.
        @discardableResult
        func run(_ arguments: [String]) async throws -> (status: Int32, output: String) {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(socket)-\(UUID().uuidString).out").path
            defer { unlink(path) }
            let argv = [tmuxPath ?? "tmux", "-L", socket] + arguments
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_addopen(&actions, 1, path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            var cArguments = argv.map { strdup($0) } + [nil]
            defer { for argument in cArguments { free(argument) } }
            var pid: pid_t = 0
            let spawned = posix_spawn(&pid, argv[0], &actions, nil, &cArguments, environ)
            guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EINVAL) }
            var status: Int32 = 0
            let deadline = ContinuousClock.now + .seconds(10)
            while waitpid(pid, &status, WNOHANG) == 0 {
                guard ContinuousClock.now < deadline else {
                    kill(pid, SIGKILL)
                    _ = waitpid(pid, &status, 0)
                    break
                }
                try await Task.sleep(for: .milliseconds(10))
            }
            let exited = status & 0x7F == 0
            return (exited ? (status >> 8) & 0xFF : -1, String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self))
        }

        func screen() async throws -> [String] {
            try await run(["capture-pane", "-p", "-t", "live"]).output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        }

        /// Polls the screen until `done` says yes (or `timeout`); returns the last screen.
        func wait(timeout: Duration = .seconds(15), _ done: ([String]) -> Bool) async throws -> [String] {
            let deadline = ContinuousClock.now + timeout
            var lines = try await screen()
            while !done(lines), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
                lines = try await screen()
            }
            return lines
        }
    }

    /// The device rows of a screen: lines that start with a known name, in order.
    static func rows(_ screen: [String]) -> [String] {
        screen.filter { line in names.contains { line.hasPrefix($0 + " ") } }
    }

    static func name(_ row: String) -> String { names.filter { row.hasPrefix($0 + " ") }.max { $0.count < $1.count } ?? "" }

    @Test func rowsAppearUpdateSortFilterAndQuit() async throws {
        let ble = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("ble").path
        let tmux = Tmux()
        defer {
            // Its own server only (the -L socket): ends the session and ble with it.
            let killing = Process()
            killing.executableURL = URL(fileURLWithPath: tmuxPath ?? "tmux")
            killing.arguments = ["-L", tmux.socket, "kill-server"]
            try? killing.run()
        }
        try await tmux.run(["new-session", "-d", "-s", "live", "-x", "200", "-y", "30", "\(ble) scan --live"])

        // Every device appears, sorted by RSSI (strongest first).
        let first = try await tmux.wait { Set(Self.rows($0).map(Self.name)) == Set(Self.names) }
        #expect(Set(Self.rows(first).map(Self.name)) == Set(Self.names), "\(first.joined(separator: "\n"))")
        #expect(first.first?.hasPrefix("ble scan --live: 13 devices, 13 shown, sorted by RSSI") == true, "\(first.first ?? "")")
        let rssi = Self.rows(first).compactMap { row in row.split(separator: " ").first { Int($0) != nil }.flatMap { Int($0) } }
        #expect(rssi.count == 13 && rssi == rssi.sorted(by: >), "\(rssi)")

        // It updates in place: a second later the rows have changed (last seen, history, interval) on the same screen.
        try await Task.sleep(for: .milliseconds(1500))
        let later = try await tmux.screen()
        #expect(Self.rows(later).count == 13)
        #expect(Self.rows(later) != Self.rows(first), "the table did not change")
        #expect(Self.rows(later).allSatisfy { $0.contains(" ms ") }, "no advertising interval: \(later.joined(separator: "\n"))")

        // s: sorted by name.
        try await tmux.run(["send-keys", "-t", "live", "s"])
        let byName = try await tmux.wait { $0.first?.contains("sorted by name") == true }
        let names = Self.rows(byName).map(Self.name)
        #expect(names == names.sorted() && names.count == 13, "\(byName.joined(separator: "\n"))")

        // / then text then Enter: filtered by name.
        try await tmux.run(["send-keys", "-t", "live", "/", "Glucose", "Enter"])
        let glucose = try await tmux.wait { $0.first?.contains("1 shown") == true }
        #expect(Self.rows(glucose).map(Self.name) == ["SwiftBLE Glucose"], "\(glucose.joined(separator: "\n"))")
        #expect(glucose.first?.contains("filter: Glucose") == true)

        // By service: Weight Scale (181D) is published by two devices.
        try await tmux.run(["send-keys", "-t", "live", "/", "181D", "Enter"])
        let scales = try await tmux.wait { $0.first?.contains("2 shown") == true }
        #expect(Set(Self.rows(scales).map(Self.name)) == ["SwiftBLE Weight", "SwiftBLE Body"], "\(scales.joined(separator: "\n"))")

        // Esc clears the filter; q quits (the session ends with its only program).
        try await tmux.run(["send-keys", "-t", "live", "Escape"])
        let all = try await tmux.wait { $0.first?.contains("13 shown") == true }
        #expect(Self.rows(all).count == 13)
        try await tmux.run(["send-keys", "-t", "live", "q"])
        let deadline = ContinuousClock.now + .seconds(10)
        while try await tmux.run(["has-session", "-t", "live"]).status == 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(try await tmux.run(["has-session", "-t", "live"]).status != 0, "ble scan --live did not quit on q")
    }

    @Test func withoutATerminalItPrintsPlainLines() async throws {
        let scan = try DemoProcess("ble", arguments: ["scan", "--live", "--timeout", "2.5", "--filter", "SwiftBLE B"], hci: nil)
        let (status, lines) = await scan.finish()
        #expect(status == 0)
        #expect(lines.allSatisfy { !$0.contains("\u{1B}") }, "escape sequences in \(lines)")
        #expect(lines.filter { $0.hasPrefix("ble scan --live: ") }.count >= 2, "\(lines)")
        // The filter as given: the names with "SwiftBLE B" (the battery, the blood pressure monitor, the body scale, the band).
        let shown = Set(lines.compactMap { line in Self.names.first { line.hasPrefix($0 + " ") } })
        #expect(shown == ["SwiftBLE Battery", "SwiftBLE BPM", "SwiftBLE Body", "SwiftBLE Band"], "\(lines)")
    }
}
