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

    /// The clock a host on this transport lives by (``TransportClock``); the wall clock by default.
    var clock: any TransportClock { get }
}

extension HCITransport {
    public func send(_ packets: [HCIPacket]) async throws {
        for packet in packets { try await send(packet) }
    }
}

/// Why a transport failed. The `errno` behind it, when there is one, is its ``BLEFailure/underlying`` error
/// (a ``SystemErrno``), read by ``BLEFailure/errno``.
public typealias TransportError = BLEFailure<TransportErrorCode>

/// An `errno` value a system call failed with: the underlying error of a ``TransportError``.
public struct SystemErrno: Error, Hashable, Sendable, CustomStringConvertible {
    /// The value.
    public var value: Int32
    /// Wraps `value`.
    public init(_ value: Int32) { self.value = value }
    /// `errno 13`.
    public var description: String { "errno \(value)" }
}

extension BLEFailure where Code == TransportErrorCode {
    /// Creates a transport error with the `errno` behind it (`nil` when there is none).
    public init(_ code: TransportErrorCode, _ reason: String, errno: Int32?, file: String = #fileID, line: Int = #line) {
        self.init(code, reason, underlying: errno.map(SystemErrno.init), file: file, line: line)
    }

    /// The `errno` value behind the failure, when there is one.
    public var errno: Int32? { (underlying as? SystemErrno)?.value }
}

/// The kind of a ``TransportError``: an open struct, so a release may add kinds.
public struct TransportErrorCode: BLEErrorCode {
    private enum Backing: Hashable, Sendable {
        case closed
        case unsupported
        case permissionDenied
        case openFailed
        case ioFailed
        case framing
        case invalidSpecification
    }

    private let backing: Backing
    private init(_ backing: Backing) { self.backing = backing }

    /// The transport is closed. ``BLEErrorCategory/disconnected``.
    public static let closed = TransportErrorCode(.closed)
    /// The operating system lacks what the transport needs (for example, no kernel Bluetooth).
    /// ``BLEErrorCategory/unsupported``.
    public static let unsupported = TransportErrorCode(.unsupported)
    /// The operating system denied access (for example, no CAP_NET_ADMIN for the HCI user channel).
    /// ``BLEErrorCategory/unsupported``.
    public static let permissionDenied = TransportErrorCode(.permissionDenied)
    /// Connecting, opening or configuring failed. ``BLEErrorCategory/failure``.
    public static let openFailed = TransportErrorCode(.openFailed)
    /// Reading or writing failed. ``BLEErrorCategory/failure``.
    public static let ioFailed = TransportErrorCode(.ioFailed)
    /// The byte stream could not be framed into HCI packets. ``BLEErrorCategory/failure``.
    public static let framing = TransportErrorCode(.framing)
    /// An address or specification string could not be parsed. ``BLEErrorCategory/invalidInput``.
    public static let invalidSpecification = TransportErrorCode(.invalidSpecification)

    public var category: BLEErrorCategory {
        switch backing {
        case .closed: .disconnected
        case .unsupported, .permissionDenied: .unsupported
        case .openFailed, .ioFailed, .framing: .failure
        case .invalidSpecification: .invalidInput
        }
    }

    /// The kind's name: `closed`, `openFailed`...
    public var description: String {
        switch backing {
        case .closed: "closed"
        case .unsupported: "unsupported"
        case .permissionDenied: "permissionDenied"
        case .openFailed: "openFailed"
        case .ioFailed: "ioFailed"
        case .framing: "framing"
        case .invalidSpecification: "invalidSpecification"
        }
    }
}
