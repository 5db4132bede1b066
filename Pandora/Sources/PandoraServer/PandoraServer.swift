import BLE
import GRPCCore
import GRPCNIOTransportHTTP2
import PandoraInterfaces

/// A Pandora server: the gRPC test interfaces of Google's Avatar suites (`pandora.Host`, `pandora.Security`,
/// `pandora.SecurityStorage` and `pandora.l2cap.L2CAP` for LE credit based channels) over one swift-ble adapter, so
/// that Avatar — or any Pandora client — can drive swift-ble as a device under test or a reference device.
///
/// The server opens its adapter with `open` on first use and again on every `FactoryReset` (after powering the old
/// one off and forgetting its bonds), so `open` must give a fresh adapter on the same controller each time:
///
/// ```swift
/// let server = PandoraServer {
///     try await Adapter.open(.tcp(host: "127.0.0.1", port: 6402), security: PandoraServer.security(ioCapability: .keyboardDisplay))
/// }
/// try await server.run(host: "127.0.0.1", port: 8999) { port in print("listening on", port) }
/// ```
///
/// Connection tokens (`Connection.cookie`) are opaque: 8 octets the server maps to the links it knows, never reused
/// within one server. The server is the pairing agent of its adapters (`OnPairing` streams the events); their
/// ``SecurityConfiguration`` comes with `open`: ``security(ioCapability:)`` gives one that asks about Just Works too,
/// so that `OnPairing` sees every pairing as Avatar expects. The BR/EDR calls answer UNIMPLEMENTED, as do enhanced
/// credit based and fixed L2CAP channels.
public struct PandoraServer: Sendable {
    let device: PandoraDevice

    /// Creates a server whose adapter `open` makes (called on first use and after each factory reset); `deviceName` is
    /// the GAP Device Name it serves and what `include_*_local_name` advertises.
    public init(deviceName: String = "swift-ble", open: @escaping @Sendable () async throws -> Adapter) {
        device = PandoraDevice(deviceName: deviceName, open: open)
    }

    /// The security configuration for a server's adapters: `ioCapability` (what the Pandora client pretends this
    /// device can show and type; its answers come through `OnPairing`), bonding, Secure Connections, and Just Works
    /// put to `OnPairing` (``SecurityConfiguration/confirmsJustWorks``).
    public static func security(ioCapability: SMPIOCapability) -> SecurityConfiguration {
        SecurityConfiguration(ioCapability: ioCapability, confirmsJustWorks: true)
    }

    /// Opens the adapter now rather than on the first call, so that a controller that cannot be reached fails the
    /// caller at once.
    public func openAdapter() async throws {
        _ = try await device.current()
    }

    /// Serves gRPC (HTTP/2, plaintext) on `host`:`port` until the task is cancelled. `port` 0 takes a free port;
    /// `listening` is called with the port once the server accepts connections. `host` is an IPv4 or IPv6 address.
    public func run(host: String = "127.0.0.1", port: Int = 8999, listening: @Sendable (Int) async -> Void = { _ in }) async throws {
        let address: SocketAddress = host.contains(":") ? .ipv6(host: host, port: port) : .ipv4(host: host, port: port)
        let transport = HTTP2ServerTransport.Posix(address: address, transportSecurity: .plaintext)
        let server = GRPCServer(transport: transport, services: [HostService(device: device), SecurityService(device: device),
                                                                SecurityStorageService(device: device),
                                                                L2CAPService(device: device, channels: PandoraChannels())])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.serve() }
            let bound = try await transport.listeningAddress
            await listening(bound.ipv4?.port ?? bound.ipv6?.port ?? port)
            do {
                try await group.next()
            } catch {
                group.cancelAll()
                throw error
            }
            group.cancelAll()
        }
    }

    /// Powers the adapter off (the server's calls then fail until it is opened again).
    public func close() async {
        await device.close()
    }
}
