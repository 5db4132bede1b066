import BLEHost
import BLETransport

/// One Bluetooth controller and the host stack that runs it: what ``Central``, ``PeripheralManager`` and
/// CoreBluetoothCompat's managers share when they use the same radio.
///
/// An adapter is made from the same choices a central or a peripheral manager accepts: a `--hci` style
/// specification (`.virtual`, `.tcp(host:port:)`, `.userChannel(index:)`, `.serial(…)`), or a transport. It says
/// what state the controller is in and reports its changes, gives its address, keeps the bonds and the pairing
/// agent, and powers the controller off. Both roles can run on one adapter at once:
///
/// ```swift
/// let adapter = await Adapter(.virtual)
/// let central = Central(adapter: adapter)
/// let manager = await PeripheralManager(adapter: adapter, deviceName: "Both")
/// ```
///
/// The host stack underneath (`HCIHost`, in the `BLEHost` module) is not part of this module's API. A program that
/// needs it imports `BLEHost` by name and reaches it through `HCIHost.owned(by:)`; see `Adapter+Host.swift`.
public final class Adapter: Sendable {
    /// The host stack this adapter owns.
    let host: HCIHost

    /// Wraps a host; the host stays the caller's to power on.
    init(wrapping host: HCIHost) {
        self.host = host
    }

    /// Opens the controller named by a `--hci` style specification (`virtual` joins the process's
    /// ``EmbeddedWorld``) and powers it on. Like `CBCentralManager`, it never fails: when the controller cannot be
    /// opened or brought up, ``state`` says so (`unauthorized` for a permission error, `unsupported` otherwise) and
    /// ``unavailableReason`` says why. ``open(_:btsnoop:security:)`` throws instead.
    ///
    /// - Parameters:
    ///   - spec: the controller.
    ///   - security: how the adapter pairs and where its bonds live.
    public convenience init(_ spec: HCITransportSpec, security: SecurityConfiguration = SecurityConfiguration()) async {
        var configuration = HCIHost.Configuration()
        configuration.security = security
        let host: HCIHost
        do {
            host = try await HCIHost.open(spec, configuration: configuration)
        } catch let error as TransportError {
            host = HCIHost(unavailable: error)
        } catch {
            host = HCIHost(unavailable: TransportError(.openFailed, "\(error)"))
        }
        self.init(wrapping: host)
    }

    /// Opens the controller named by a `--hci` style specification and powers it on, or throws an error saying what
    /// failed (for example "no controller at tcp:127.0.0.1:9100: connection refused").
    ///
    /// - Parameters:
    ///   - spec: the controller (`virtual` joins the process's ``EmbeddedWorld``).
    ///   - btsnoop: a file to record the host's HCI traffic in (btsnoop, H4 datalink, readable by Wireshark), from
    ///     the first command on; `nil` records nothing.
    ///   - security: how the adapter pairs and where its bonds live.
    /// - Throws: ``TransportError`` when the controller cannot be opened, ``HostError`` when it does not come up.
    public static func open(_ spec: HCITransportSpec, btsnoop: String? = nil,
                            security: SecurityConfiguration = SecurityConfiguration()) async throws -> Adapter {
        var configuration = HCIHost.Configuration()
        configuration.security = security
        return Adapter(wrapping: try await HCIHost.open(spec, btsnoop: btsnoop, configuration: configuration))
    }

    /// Brings up the controller behind `transport` (for example one that ``EmbeddedWorld/makeTransport(at:)`` made).
    ///
    /// - Parameters:
    ///   - transport: the controller's HCI transport.
    ///   - security: how the adapter pairs and where its bonds live.
    /// - Throws: ``HostError`` when the controller does not come up.
    public convenience init(transport: any HCITransport, security: SecurityConfiguration = SecurityConfiguration()) async throws {
        var configuration = HCIHost.Configuration()
        configuration.security = security
        let host = HCIHost(transport: transport, configuration: configuration)
        try await host.powerOn()
        self.init(wrapping: host)
    }

    // MARK: State

    /// The adapter state now.
    public var state: AdapterState { get async { await host.state } }

    /// Adapter state changes, starting with the current state.
    public func stateUpdates() async -> AsyncStream<AdapterState> {
        let events = await host.events()
        return AsyncStream { continuation in
            let task = Task {
                for await event in events { if case .stateChanged(let s) = event { continuation.yield(s) } }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Why the controller could not be opened, for an adapter whose ``state`` is `unsupported` or `unauthorized`.
    public var unavailableReason: String? { get async { await host.unavailableReason.map(\.reason) } }

    /// This adapter's identity address: the controller's public address, or a random static one when it has none
    /// (`nil` before the controller is up). Bonds belong to it.
    public var address: LEAddress? { get async { await host.ownAddress } }

    /// With ``SecurityConfiguration/privacy`` on, the resolvable private address the adapter advertises, scans and
    /// connects with now; `nil` with privacy off.
    public var privateAddress: LEAddress? { get async { await host.privateAddress } }

    /// What the controller can do, as read when it powered on: its version and maker, the commands it lists, its
    /// LMP and LE features, its ACL buffers, its largest data length, its PHYs, its list sizes, its public address.
    /// Before the controller is up, nothing is known. The adapter sends the controller no command it does not list;
    /// a call that needs something it lacks throws ``HostError`` with code `.unsupportedByController(…)`.
    public var capabilities: ControllerCapabilities { get async { await host.capabilities } }

    /// The links up now, in both roles, ordered by connection handle.
    public var connections: [HostConnection] { get async { await host.connections } }

    /// Everything the host reports: state changes, links made and lost, link parameter updates, encryption and
    /// pairing outcomes. Each call returns a stream of its own.
    public func events() async -> AsyncStream<HostEvent> { await host.events() }

    /// Brings the controller up again after ``powerOff()`` or when it was never up: reset, event masks, buffer
    /// sizes, address. The state goes `resetting` → `poweredOn`. On an adapter that is on, this resets the controller
    /// in place (HCI Reset on the same transport): its links end (each reported `.disconnected` with Connection
    /// Terminated By Local Host; the peers lose them by supervision timeout), advertising and scans stop (scan
    /// streams end with an error), and the bonds stay.
    ///
    /// - Throws: ``HostError`` when the controller does not come up.
    public func powerOn() async throws { try await host.powerOn() }

    /// Powers the controller off: advertising and scanning stop, links drop without a Disconnect exchange and the
    /// transport closes; ``state`` becomes `poweredOff`. Idempotent.
    public func powerOff() async { await host.powerOff() }

    // MARK: Security

    /// Sets the agent that answers for the user during pairing, in either role: consent, passkeys to show or type,
    /// numeric comparison. The default accepts everything and enters no passkey (a device with no input and no
    /// output).
    public func setPairingAgent(_ agent: any PairingAgent) async { await host.setPairingAgent(agent) }

    /// Whether a read, write or discovery a peripheral refuses for security (Insufficient Authentication,
    /// Insufficient Encryption, Encryption Key Size Too Short) makes this adapter pair, or encrypt with the bond,
    /// and retry once, as CoreBluetooth does. On by default.
    public func setPairsOnDemand(_ on: Bool) async { await host.setPairsOnDemand(on) }

    /// The bonds of this adapter's identity (``address``), from its bond store.
    ///
    /// - Throws: ``BondStoreError`` when the store cannot be read.
    public func bonds() async throws -> [Bond] {
        guard let local = await host.ownAddress else { return [] }
        return try host.bondStore.bonds(local: local)
    }

    /// Forgets the bond with `peer` (its identity address): the next link with it pairs again. Returns whether there
    /// was one.
    ///
    /// - Throws: ``BondStoreError`` when the store cannot be written.
    @discardableResult
    public func removeBond(_ peer: LEAddress) async throws -> Bool { try await host.removeBond(with: peer) > 0 }

    /// The security of a link now: encryption and its level, whether a bond exists, the peer's identity; `nil` when
    /// the link is not up.
    public func security(of connection: HostConnection) async -> LinkSecurity? { await host.security(of: connection) }
}
