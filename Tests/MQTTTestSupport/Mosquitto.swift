#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A failure of the test broker or of a program it starts.
public struct BrokerTestError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A Mosquitto broker of a test's own on a free loopback port (the Debian package; `scripts/test` installs it),
/// stopped when it goes away. Shared by the MQTT client's tests and the gateway's.
public final class Mosquitto: @unchecked Sendable {
    /// The broker program, when installed.
    public static let path = ["/usr/sbin/mosquitto", "/usr/bin/mosquitto", "/usr/local/sbin/mosquitto"].first { FileManager.default.isExecutableFile(atPath: $0) }
    /// Its port on 127.0.0.1.
    public let port: Int
    /// Its configuration, log and (when persistent) session store.
    public let directory: URL
    private var pid: pid_t?

    /// A broker on a free port: `listener` lines follow the listener's own (TLS files, a password file); `anonymous`
    /// lets clients without a user name in; `persistent` keeps sessions across a stop and start.
    public init(listener: [String] = [], anonymous: Bool = true, persistent: Bool = false) throws {
        port = try Self.freePort()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("mosquitto-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var lines = ["per_listener_settings false", "listener \(port) 127.0.0.1"] + listener
        lines += ["allow_anonymous \(anonymous)", "log_dest file \(directory.path)/mosquitto.log"]
        if persistent { lines += ["persistence true", "persistence_location \(directory.path)/", "autosave_interval 0"] }
        if getuid() == 0 { lines.append("user root") }
        try (lines.joined(separator: "\n") + "\n").write(to: directory.appendingPathComponent("mosquitto.conf"), atomically: true, encoding: .utf8)
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Starts the broker and waits until it accepts connections.
    public func start() throws {
        guard let path = Self.path else { throw BrokerTestError("mosquitto is not installed (apt-get install mosquitto)") }
        pid = try Self.spawn([path, "-c", directory.appendingPathComponent("mosquitto.conf").path], output: "/dev/null")
        for _ in 0..<100 {
            if Self.accepts(port) { return }
            usleep(50_000)
        }
        throw BrokerTestError("mosquitto did not start on port \(port)")
    }

    /// Stops the broker (SIGTERM: it saves its persistent sessions) and waits for it to exit (SIGKILL after 5 s).
    public func stop() {
        guard let child = pid else { return }
        pid = nil
        kill(child, SIGTERM)
        var status: Int32 = 0
        for _ in 0..<100 {
            if waitpid(child, &status, WNOHANG) == child { return }
            usleep(50_000)
        }
        kill(child, SIGKILL)
        waitpid(child, &status, 0)
    }

    /// Starts a program with every signal unblocked and at its default (a child of Foundation's Process inherits the
    /// test process's blocked SIGTERM and never stops), standard input from /dev/null, standard output and error to
    /// `output`. Returns its process id; the caller waits for it.
    public static func spawn(_ arguments: [String], output: String) throws -> pid_t {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var child: pid_t = 0
        guard let program = arguments.first, posix_spawn(&child, program, &actions, &attributes, &argv, environ) == 0 else {
            throw BrokerTestError("cannot start \(arguments.first ?? "nothing")")
        }
        return child
    }

    /// Runs a program to completion (openssl, mosquitto_passwd: short-lived, they exit by themselves).
    public static func run(_ path: String, _ arguments: [String], in directory: URL) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.currentDirectoryURL = directory
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw BrokerTestError("\(path) \(arguments.joined(separator: " ")) exited with \(process.terminationStatus)") }
    }

    /// Writes in `work` a certificate authority of the test's own (`ca.pem`), a server certificate it signed for
    /// `localhost` and 127.0.0.1 (`server.pem`, `server.key`) and a password file (`passwd`) with one user; returns
    /// the `listener` lines of a broker that uses them (TLS, passwords required: pass `anonymous: false`).
    public static func tlsListener(in work: URL, user: String, password: String) throws -> [String] {
        let openssl = "/usr/bin/openssl"
        let curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try run(openssl, ["req", "-x509"] + curve + ["-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=swift-ble test CA"], in: work)
        try run(openssl, ["req"] + curve + ["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost"], in: work)
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\n".write(to: work.appendingPathComponent("san.ext"), atomically: true, encoding: .utf8)
        try run(openssl, ["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "server.pem",
                          "-days", "2", "-extfile", "san.ext"], in: work)
        try run("/usr/bin/mosquitto_passwd", ["-b", "-c", "passwd", user, password], in: work)
        // The broker (dropping to its own user when not told otherwise) must be able to read them.
        for file in ["ca.pem", "server.pem", "server.key", "passwd"] { chmod(work.appendingPathComponent(file).path, 0o644) }
        chmod(work.path, 0o755)
        return ["cafile \(work.path)/ca.pem", "certfile \(work.path)/server.pem", "keyfile \(work.path)/server.key", "password_file \(work.path)/passwd"]
    }

    /// A TCP port on 127.0.0.1 nobody listens on now.
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw BrokerTestError("no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether something accepts connections on `port` of 127.0.0.1.
    public static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}
