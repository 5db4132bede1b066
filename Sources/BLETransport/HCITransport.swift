import BLEWire

/// A bidirectional carrier of HCI packets between a host and a controller.
///
/// The same abstraction serves both ends: a host sends commands and ACL data and receives events and ACL data;
/// a controller endpoint (the virtual controller's TCP server, the in-process pipe's far end) does the reverse.
/// Implementations: ``FileDescriptorTransport`` over a descriptor (H4 over TCP, a UART or a pipe; one packet per
/// datagram on the Linux HCI user channel), the in-process pipe (``HCIPipe``), and ``SnoopingTransport``.
public protocol HCITransport: AnyObject, Sendable {
    /// The packets arriving from the other end, in order. There is a single consumer. The sequence finishes when
    /// the transport is closed and throws ``TransportError`` when it fails.
    var incoming: AsyncThrowingStream<HCIPacket, any Error> { get }

    /// Sends one packet to the other end. Throws ``TransportError`` once the transport is closed or broken.
    func send(_ packet: HCIPacket) async throws

    /// Sends packets in order, as one write where the transport can (a byte stream takes them in one system call);
    /// by default one single-packet `send` each.
    func send(_ packets: [HCIPacket]) async throws

    /// Closes the transport; `incoming` finishes. Idempotent.
    func close() async
}

extension HCITransport {
    public func send(_ packets: [HCIPacket]) async throws {
        for packet in packets { try await send(packet) }
    }
}

/// Why a transport failed.
public struct TransportError: BLEError {
    /// The kind of failure.
    public enum Code: Sendable, Hashable {
        /// The transport is closed.
        case closed
        /// The operating system lacks what the transport needs (for example, no kernel Bluetooth).
        case unsupported
        /// The operating system denied access (for example, no CAP_NET_ADMIN for the HCI user channel).
        case permissionDenied
        /// Connecting, opening or configuring failed.
        case openFailed
        /// Reading or writing failed.
        case ioFailed
        /// The byte stream could not be framed into HCI packets.
        case framing
        /// An address or specification string could not be parsed.
        case invalidSpecification
    }

    /// The kind of failure.
    public var code: Code
    /// A human-readable explanation.
    public var reason: String
    /// The `errno` value behind the failure, when there is one.
    public var errno: Int32?
    /// The source file that raised the error.
    public var file: String
    /// The source line that raised the error.
    public var line: Int

    /// Creates an error.
    public init(_ code: Code, _ reason: String, errno: Int32? = nil, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.reason = reason
        self.errno = errno
        self.file = file
        self.line = line
    }

    public var description: String {
        if let errno { return "\(reason) (errno \(errno))" }
        return reason
    }
}
