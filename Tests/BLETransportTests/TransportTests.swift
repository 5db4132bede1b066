import BLETestSupport
import BLETransport
import BLEWire
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite struct TransportTests {
    @Test func pipeDeliversInOrderBothWays() async throws {
        let (host, controller) = HCIPipe.makePair()
        for p in samplePackets { try await host.send(p) }
        #expect(try await collect(controller, samplePackets.count) == samplePackets)
        // A transport without its own batch write sends a batch one packet at a time, in order.
        try await host.send(Array(samplePackets.reversed()))
        #expect(try await collect(controller, samplePackets.count) == samplePackets.reversed())
        try await controller.send(samplePackets[1])
        #expect(try await collect(host, 1) == [samplePackets[1]])
        await host.close()
        await #expect(throws: TransportError.self) { try await controller.send(samplePackets[0]) }
    }

    @Test func tcpServerAndClientExchangePackets() async throws {
        let server = try H4TCPServer(host: "127.0.0.1", port: 0)
        #expect(server.port != 0)
        let client = try TCPTransport.connect(host: "127.0.0.1", port: server.port)
        let accepted = try await withTimeout(5) { () async throws -> FileDescriptorTransport in
            for await connection in server.connections { return connection }
            throw TimedOut()
        }
        for p in samplePackets { try await client.send(p) }
        #expect(try await collect(accepted, samplePackets.count) == samplePackets)
        for p in samplePackets.reversed() { try await accepted.send(p) }
        #expect(try await collect(client, samplePackets.count) == samplePackets.reversed())
        // A batch goes as one write and arrives whole, in order; so does a batch of one, and none.
        try await client.send(samplePackets + samplePackets)
        try await client.send([samplePackets[0]])
        try await client.send([])
        #expect(try await collect(accepted, 2 * samplePackets.count + 1) == samplePackets + samplePackets + [samplePackets[0]])
        // Closing the client ends the server side's stream.
        await client.close()
        let rest = try await withTimeout(5) { () async throws -> Int in
            var n = 0
            for try await _ in accepted.incoming { n += 1 }
            return n
        }
        #expect(rest == 0)
        await #expect(throws: TransportError.self) { try await client.send(samplePackets[0]) }
        server.close()
    }

    /// A host takes a socket's packets from an inbox, each read's packets together: they arrive whole and in order,
    /// then the end when the peer closes; `incoming` is finished at once, and a second inbox is refused. A transport
    /// whose packets already went to `incoming` keeps them there.
    @Test func aSocketHandsItsPacketsToAnInboxWhenTaken() async throws {
        let server = try H4TCPServer(host: "127.0.0.1", port: 0)
        defer { server.close() }
        let client = try TCPTransport.connect(host: "127.0.0.1", port: server.port)
        let accepted = try await withTimeout(5) { () async throws -> FileDescriptorTransport in
            for await connection in server.connections { return connection }
            throw TimedOut()
        }
        // A socket's write returns once the kernel has the bytes: a host sends from its own step.
        #expect(client.writesWithoutWaiting)
        let inbox = try #require(client.takeInbox())
        #expect(client.takeInbox() == nil)
        var unused = 0
        for try await _ in client.incoming { unused += 1 }
        #expect(unused == 0)
        try await accepted.send(samplePackets + samplePackets)
        try await accepted.send([samplePackets[0]])
        let got = try await withTimeout(5) { () async throws -> [HCIPacket] in
            var got: [HCIPacket] = []
            while got.count < 2 * samplePackets.count + 1, let batch = try await inbox.next() { got += batch }
            return got
        }
        #expect(got == samplePackets + samplePackets + [samplePackets[0]])
        await accepted.close()
        let end = try await withTimeout(5) { () async throws -> [HCIPacket]? in try await inbox.next() }
        #expect(end == nil)

        // Packets already read into `incoming`: no inbox.
        let second = try TCPTransport.connect(host: "127.0.0.1", port: server.port)
        let secondAccepted = try await withTimeout(5) { () async throws -> FileDescriptorTransport in
            for await connection in server.connections { return connection }
            throw TimedOut()
        }
        try await secondAccepted.send(samplePackets[1])
        #expect(try await collect(second, 1) == [samplePackets[1]])
        #expect(second.takeInbox() == nil)
        await second.close()
        await secondAccepted.close()

        // A transport read by a handler: no inbox either.
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let handled = try FileDescriptorTransport(fileDescriptor: fds[0], label: "handled", startReading: false)
        #expect(handled.startReading { _ in })
        #expect(handled.takeInbox() == nil)
        #expect(!handled.writesWithoutWaiting)
        handled.closeNow()
        close(fds[1])
    }

    /// A server made with `startReading: false` hands over transports that read nothing until asked: given a handler,
    /// the reader thread passes it each read's packets (a batch written at once arrives at once) and then the end;
    /// the stream stays unused, and a second start is refused. One that starts through `incoming` reads as usual.
    @Test func deferredReadingHandsReadsToAHandler() async throws {
        let server = try H4TCPServer(host: "127.0.0.1", port: 0, startReading: false)
        defer { server.close() }
        let client = try TCPTransport.connect(host: "127.0.0.1", port: server.port)
        let accepted = try await withTimeout(5) { () async throws -> FileDescriptorTransport in
            for await connection in server.connections { return connection }
            throw TimedOut()
        }
        // Sent before the handler exists: kept in the socket, not lost.
        try await client.send(samplePackets[0])
        let (reads, readsContinuation) = AsyncStream.makeStream(of: FileDescriptorTransport.Inbound.self)
        #expect(accepted.startReading { readsContinuation.yield($0) })
        #expect(!accepted.startReading { _ in })
        var iterator = reads.makeAsyncIterator()
        guard case .packets(let first) = await iterator.next() else { Issue.record("no packets"); return }
        #expect(first == [samplePackets[0]])
        try await client.send(samplePackets)
        var received: [HCIPacket] = []
        while received.count < samplePackets.count, case .packets(let batch) = await iterator.next() { received += batch }
        #expect(received == samplePackets)
        await client.close()
        guard case .finished(let error) = await iterator.next() else { Issue.record("no end"); return }
        #expect(error == nil)

        // Started by `incoming`: a stream as usual, and no handler afterwards.
        let second = try TCPTransport.connect(host: "127.0.0.1", port: server.port)
        let streamed = try await withTimeout(5) { () async throws -> FileDescriptorTransport in
            for await connection in server.connections { return connection }
            throw TimedOut()
        }
        try await second.send(samplePackets)
        #expect(try await collect(streamed, samplePackets.count) == samplePackets)
        #expect(!streamed.startReading { _ in })
        await second.close()
        // Closing one never read: the stream just ends.
        let third = try TCPTransport.connect(host: "127.0.0.1", port: server.port)
        let unread = try await withTimeout(5) { () async throws -> FileDescriptorTransport in
            for await connection in server.connections { return connection }
            throw TimedOut()
        }
        await unread.close()
        let rest = try await withTimeout(5) { () async throws -> Int in
            var n = 0
            for try await _ in unread.incoming { n += 1 }
            return n
        }
        #expect(rest == 0)
        await third.close()
    }

    @Test func tcpConnectFailureIsClear() {
        // Port 1 on loopback is closed on this machine.
        #expect(throws: TransportError.self) { try TCPTransport.connect(host: "127.0.0.1", port: 1) }
    }

    @Test func garbageOnTheWireIsCountedAndSkipped() async throws {
        let server = try H4TCPServer(host: "127.0.0.1", port: 0)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = server.port.bigEndian
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        #expect(rc == 0)
        let accepted = try await withTimeout(5) { () async throws -> FileDescriptorTransport in
            for await connection in server.connections { return connection }
            throw TimedOut()
        }
        let bytes: [UInt8] = [0x77, 0x78] + samplePackets[0].h4Bytes
        _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        #expect(try await collect(accepted, 1) == [samplePackets[0]])
        #expect(accepted.framingErrorCount == 2)
        Glibc.close(fd)
        await accepted.close()
        server.close()
    }

    @Test func serialOverPseudoTerminal() async throws {
        // A pseudo-terminal pair: /dev/ptmx, unlocked (TIOCSPTLCK), its slave number from TIOCGPTN.
        let master = Glibc.open("/dev/ptmx", O_RDWR | O_NOCTTY)
        try #require(master >= 0)
        defer { Glibc.close(master) }
        var unlock: Int32 = 0
        var number: UInt32 = 0
        #expect(ioctl(master, 0x4004_5431, &unlock) == 0)
        #expect(ioctl(master, 0x8004_5430, &number) == 0)
        let path = "/dev/pts/\(number)"
        let serial = try SerialTransport.open(path: path, baudRate: 1_000_000, flowControl: false)
        // A serial port's write may wait for the line: a host drains it off its executor.
        #expect(!serial.writesWithoutWaiting)
        let bytes = samplePackets.flatMap(\.h4Bytes)
        _ = bytes.withUnsafeBytes { Glibc.write(master, $0.baseAddress, $0.count) }
        #expect(try await collect(serial, samplePackets.count) == samplePackets)
        // And the other way.
        try await serial.send(samplePackets[0])
        var buffer = [UInt8](repeating: 0, count: 16)
        let n = buffer.withUnsafeMutableBytes { Glibc.read(master, $0.baseAddress, $0.count) }
        #expect(Array(buffer.prefix(max(0, n))) == samplePackets[0].h4Bytes)
        await serial.close()
    }

    @Test func serialRejectsUnsupportedBaudAndMissingDevice() {
        #expect(throws: TransportError.self) { try SerialTransport.open(path: "/dev/null", baudRate: 12345) }
        do {
            _ = try SerialTransport.open(path: "/dev/does-not-exist-ble", baudRate: 115_200)
            Issue.record("expected an error")
        } catch let error as TransportError {
            #expect(error.code == .openFailed)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func userChannelFailsClearlyWithoutKernelBluetooth() {
        do {
            _ = try UserChannelTransport.open(deviceIndex: 0)
            Issue.record("this machine has no kernel Bluetooth; opening hci0 should fail")
        } catch let error as TransportError {
            // No AF_BLUETOOTH here; elsewhere permission or a missing adapter are the expected failures.
            #expect([.unsupported, .permissionDenied, .openFailed].contains(error.code))
            #expect(error.reason.contains("hci0"))
            if error.code == .unsupported { #expect(error.reason.contains("no Bluetooth support")) }
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func specParsing() throws {
        #expect(try HCITransportSpec(parsing: "virtual") == .virtual)
        #expect(try HCITransportSpec(parsing: "tcp:127.0.0.1:9100") == .tcp(host: "127.0.0.1", port: 9100))
        #expect(try HCITransportSpec(parsing: "tcp:[::1]:9100") == .tcp(host: "::1", port: 9100))
        #expect(try HCITransportSpec(parsing: "serial:/dev/ttyUSB0@1000000") == .serial(path: "/dev/ttyUSB0", baudRate: 1_000_000, flowControl: true))
        #expect(try HCITransportSpec(parsing: "serial:/dev/ttyACM0,noflow") == .serial(path: "/dev/ttyACM0", baudRate: 115_200, flowControl: false))
        #expect(try HCITransportSpec(parsing: "hci1") == .userChannel(index: 1))
        for bad in ["", "tcp:", "tcp:host", "tcp:host:99999", "serial:", "serial:/dev/x@fast", "hcix", "bluetooth"] {
            #expect(throws: TransportError.self, "\(bad)") { try HCITransportSpec(parsing: bad) }
        }
    }
}

@Suite struct PeerGoneTests {
    /// Sending after the peer closed fails with a TransportError. (The test runner already ignores SIGPIPE, so this
    /// checks the error path only; the `ble` tool relies on MSG_NOSIGNAL / SIG_IGN in the transport for the rest.)
    @Test func sendingToAGonePeerThrows() async throws {
        let server = try H4TCPServer(host: "127.0.0.1", port: 0)
        let client = try TCPTransport.connect(host: "127.0.0.1", port: server.port)
        let accepted = try await withTimeout(5) { () async throws -> FileDescriptorTransport in
            for await connection in server.connections { return connection }
            throw TimedOut()
        }
        await accepted.close()
        // The first writes may still be buffered; keep sending until the kernel reports the broken connection.
        var failed = false
        for _ in 0..<200 {
            do {
                try await client.send(samplePackets[3])
            } catch {
                failed = true
                break
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(failed, "a send to a closed peer must fail")
        await client.close()
        server.close()
    }
}
