#if canImport(Glibc)
import Glibc
#endif
import BLEWire
import Synchronization

/// Which way a captured packet went.
public enum BTSnoopDirection: Sendable, Hashable {
    /// Host to controller (commands, outgoing ACL).
    case sent
    /// Controller to host (events, incoming ACL).
    case received
}

/// One btsnoop record.
public struct BTSnoopRecord: Hashable, Sendable {
    /// Host to controller or controller to host.
    public var direction: BTSnoopDirection
    /// Microseconds since 0000-01-01 (the btsnoop epoch).
    public var timestamp: Int64
    /// The packet with its H4 indicator.
    public var h4Bytes: [UInt8]

    /// Creates a record: `timestamp` in microseconds since the Unix epoch (as ``BTSnoopReader`` returns them).
    public init(direction: BTSnoopDirection, timestamp: Int64, h4Bytes: [UInt8]) {
        self.direction = direction
        self.timestamp = timestamp
        self.h4Bytes = h4Bytes
    }
}

/// Writes btsnoop version 1 files with datalink 1002 (HCI UART / H4), which Wireshark and `btmon` read.
///
/// Each record is written with one `write(2)`, so a capture is complete up to the last packet even if the
/// process dies.
public final class BTSnoopWriter: Sendable {
    /// Microseconds between the btsnoop epoch (year 0) and the Unix epoch.
    public static let unixEpochOffset: Int64 = 0x00DC_DDB3_0F2F_8000
    private let fd: Int32
    private let now: @Sendable () -> Int64
    private let lock = Mutex(false)

    /// The btsnoop file header for datalink 1002.
    public static let header: [UInt8] = Array("btsnoop".utf8) + [0, 0, 0, 0, 1, 0, 0, 0x03, 0xEA]

    /// Creates (truncates) `path` and writes the header. `now` returns microseconds since the Unix epoch.
    public init(path: String, now: @escaping @Sendable () -> Int64 = BTSnoopWriter.wallClockMicroseconds) throws {
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw TransportError(.openFailed, "btsnoop: cannot create \(path)", errno: errno) }
        self.fd = fd
        self.now = now
        try writeAll(Self.header)
    }

    deinit { Glibc.close(fd) }

    /// Microseconds since the Unix epoch from the system clock.
    @Sendable public static func wallClockMicroseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
    }

    /// Appends a record for `packet`.
    public func write(_ packet: HCIPacket, direction: BTSnoopDirection) {
        let bytes = packet.h4Bytes
        var w = ByteWriter(capacity: 24 + bytes.count)
        let length = UInt32(truncatingIfNeeded: bytes.count)
        w.write(length.bigEndianBytes)
        w.write(length.bigEndianBytes)
        // Flags: bit 0 = received (controller → host), bit 1 = command or event.
        var flags: UInt32 = direction == .received ? 1 : 0
        if packet.type == .command || packet.type == .event { flags |= 2 }
        w.write(flags.bigEndianBytes)
        w.write(UInt32(0).bigEndianBytes)   // cumulative drops
        let timestamp = UInt64(bitPattern: now() + Self.unixEpochOffset)
        w.write(timestamp.bigEndianBytes)
        w.write(bytes)
        try? writeAll(w.bytes)
    }

    private func writeAll(_ bytes: [UInt8]) throws {
        try lock.withLock { _ in
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress.map { $0 + offset }, bytes.count - offset) }
                if n < 0 {
                    if errno == EINTR { continue }
                    throw TransportError(.ioFailed, "btsnoop: write failed", errno: errno)
                }
                offset += n
            }
        }
    }
}

extension FixedWidthInteger {
    /// The value's bytes, most significant first (btsnoop records are big-endian).
    var bigEndianBytes: [UInt8] { (0..<(Self.bitWidth / 8)).reversed().map { UInt8(truncatingIfNeeded: self >> (8 * $0)) } }
}

/// Reads btsnoop files written by ``BTSnoopWriter`` (or any datalink-1002 capture).
public enum BTSnoopReader {
    /// Parses a whole capture.
    public static func parse(_ bytes: [UInt8]) throws(WireError) -> [BTSnoopRecord] {
        var reader = ByteReader(bytes)
        let magic = try reader.readBytes(8, "btsnoop magic")
        guard magic == Array("btsnoop".utf8) + [0] else { throw WireError(.invalidValue, "not a btsnoop file") }
        let version = try reader.readUInt32("version").byteSwapped
        let datalink = try reader.readUInt32("datalink").byteSwapped
        guard version == 1, datalink == 1002 else {
            throw WireError(.invalidValue, "btsnoop version \(version) datalink \(datalink); expected 1 / 1002")
        }
        var records: [BTSnoopRecord] = []
        while !reader.isAtEnd {
            let original = Int(try reader.readUInt32("original length").byteSwapped)
            let included = Int(try reader.readUInt32("included length").byteSwapped)
            let flags = try reader.readUInt32("flags").byteSwapped
            _ = try reader.readUInt32("drops")
            let timestamp = Int64(bitPattern: try reader.readUInt64("timestamp").byteSwapped)
            guard included <= original else { throw WireError(.lengthMismatch, "btsnoop record: included > original") }
            let data = try reader.readBytes(included, "btsnoop packet")
            records.append(BTSnoopRecord(direction: flags & 1 == 1 ? .received : .sent,
                                         timestamp: timestamp - BTSnoopWriter.unixEpochOffset, h4Bytes: data))
        }
        return records
    }
}

/// Wraps a transport and records every packet that crosses it into a btsnoop capture.
public final class SnoopingTransport: HCITransport {
    /// Which end of the link the wrapped transport is: it decides which direction counts as "sent".
    public enum Role: Sendable {
        /// The wrapped transport belongs to a host: sent = host → controller.
        case host
        /// The wrapped transport belongs to a controller: received packets come from the host.
        case controller
    }

    /// The wrapped transport's packets, recorded as they pass.
    public let incoming: AsyncThrowingStream<HCIPacket, any Error>
    private let inner: any HCITransport
    private let writer: BTSnoopWriter
    private let role: Role
    private let pump: Task<Void, Never>

    /// The wrapped transport's clock.
    public var clock: any TransportClock { inner.clock }

    /// Wraps `inner`, recording to `writer`.
    public init(_ inner: any HCITransport, writer: BTSnoopWriter, role: Role = .host) {
        self.inner = inner
        self.writer = writer
        self.role = role
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: HCIPacket.self, throwing: (any Error).self)
        incoming = stream
        let inboundDirection: BTSnoopDirection = role == .host ? .received : .sent
        pump = Task {
            do {
                for try await packet in inner.incoming {
                    writer.write(packet, direction: inboundDirection)
                    continuation.yield(packet)
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
    }

    /// Records and sends a packet.
    public func send(_ packet: HCIPacket) async throws {
        writer.write(packet, direction: role == .host ? .sent : .received)
        try await inner.send(packet)
    }

    /// Records each packet, then sends them together through the wrapped transport.
    public func send(_ packets: [HCIPacket]) async throws {
        for packet in packets { writer.write(packet, direction: role == .host ? .sent : .received) }
        try await inner.send(packets)
    }

    /// Closes the wrapped transport.
    public func close() async { await inner.close() }
}
