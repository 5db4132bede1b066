#if canImport(Glibc)
import Glibc
#endif
import BLEWire
import Foundation
import Synchronization

/// H4 over TCP: the framing Bumble's and our virtual controllers expose, and what many serial-to-TCP bridges speak.
public enum TCPTransport {
    /// Connects to an H4/TCP server (IPv4 or IPv6) and returns the transport.
    public static func connect(host: String, port: UInt16) throws -> FileDescriptorTransport {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &result)
        guard rc == 0, let first = result else {
            throw TransportError(.openFailed, "tcp:\(host):\(port): cannot resolve host (\(String(cString: gai_strerror(rc))))")
        }
        defer { freeaddrinfo(result) }
        var lastErrno: Int32 = 0
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), info.pointee.ai_protocol)
            if fd >= 0 {
                if Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 {
                    var one: Int32 = 1
                    setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                    return try FileDescriptorTransport(fileDescriptor: fd, label: "tcp:\(host):\(port)")
                }
                lastErrno = errno
                Glibc.close(fd)
            } else {
                lastErrno = errno
            }
            entry = info.pointee.ai_next
        }
        throw TransportError(.openFailed, "tcp:\(host):\(port): connection failed (\(String(cString: strerror(lastErrno))))",
                             errno: lastErrno)
    }
}

/// A TCP server whose every accepted client is an H4 ``FileDescriptorTransport``: how a controller (ours in
/// `ble controller --tcp`) is offered to hosts in other processes.
public final class H4TCPServer: Sendable {
    /// The bound port (useful when asked for port 0).
    public let port: UInt16
    /// The bound host.
    public let host: String
    /// Accepted clients, in order. Finishes when the server is closed.
    public let connections: AsyncStream<FileDescriptorTransport>
    private let continuation: AsyncStream<FileDescriptorTransport>.Continuation
    private let fd: Int32
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let closed = Atomic<Bool>(false)
    private let startsReading: Bool

    /// Listens on `host` (an IPv4 address, e.g. `127.0.0.1`) and `port` (0 for any free port). With `startReading`
    /// false, an accepted transport reads nothing until its ``FileDescriptorTransport/incoming`` is first used or
    /// ``FileDescriptorTransport/startReading(handler:)`` is called (as `VirtualController`'s `attach` does, to
    /// handle packets on the reader thread from the first).
    public init(host: String = "127.0.0.1", port: UInt16, startReading: Bool = true) throws {
        self.startsReading = startReading
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            throw TransportError(.invalidSpecification, "\(host) is not an IPv4 address")
        }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TransportError(.openFailed, "socket() failed", errno: errno) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            let e = errno
            Glibc.close(fd)
            throw TransportError(.openFailed, "cannot listen on \(host):\(port) (\(String(cString: strerror(e))))", errno: e)
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else {
            Glibc.close(fd)
            throw TransportError(.openFailed, "cannot create a wake-up pipe", errno: errno)
        }
        self.fd = fd
        self.wakeRead = fds[0]
        self.wakeWrite = fds[1]
        self.host = host
        self.port = UInt16(bigEndian: actual.sin_port)
        (connections, continuation) = AsyncStream.makeStream(of: FileDescriptorTransport.self)
        let thread = Thread { [self] in self.acceptLoop() }
        thread.name = "ble.tcp-server.\(self.port)"
        thread.start()
    }

    /// Stops listening; ``connections`` finishes. Accepted transports stay open.
    public func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var byte: UInt8 = 1
        _ = Glibc.write(wakeWrite, &byte, 1)
    }

    private func acceptLoop() {
        while true {
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 2, -1)
            if ready < 0 { if errno == EINTR { continue } else { break } }
            if fds[1].revents != 0 { break }
            let client = accept(fd, nil, nil)
            guard client >= 0 else { if errno == EINTR || errno == ECONNABORTED { continue } else { break } }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            var one: Int32 = 1
            setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            if let transport = try? FileDescriptorTransport(fileDescriptor: client, label: "tcp-client@\(port)", startReading: startsReading) {
                continuation.yield(transport)
            } else {
                Glibc.close(client)
            }
        }
        Glibc.close(fd)
        Glibc.close(wakeRead)
        Glibc.close(wakeWrite)
        continuation.finish()
    }
}
