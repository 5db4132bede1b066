import BLE
import BLEWire
import Foundation
import GRPCCore

/// The Bluetooth side of a Pandora server: the adapter (reopened by FactoryReset), its two roles, and the links the
/// server has handed out connection tokens for.
actor PandoraDevice {
    /// One link the server knows, by the opaque token (`Connection.cookie.value`) it gave for it.
    struct Link {
        let token: Data
        var connection: HostConnection
        /// The central's handle on a link this side initiated (ConnectLE), to disconnect it through the central.
        var remote: RemotePeripheral?
        var isConnected = true
        /// Whether WaitConnection has returned it already (it returns each link once).
        var waited = false
        /// Connection parameter changes seen on it (interval, latency, supervision timeout).
        var updates = 0
        /// The link's security as the host last reported it.
        var security = LinkSecurity()
        /// Pairings on it that succeeded, failed, and encryptions the controller refused (counted, so that a wait
        /// sees the ones after it started).
        var pairings = 0
        var pairingFailures = 0
        var encryptionFailures = 0
    }

    /// The adapter, a central and a peripheral manager over it, and the task following its events.
    struct Stack {
        let adapter: Adapter
        let central: Central
        let peripheral: PeripheralManager
        let events: Task<Void, Never>
    }

    let open: @Sendable () async throws -> Adapter
    let deviceName: String
    /// The pairing agent of every adapter the server opens: it hands pairing events to OnPairing.
    nonisolated let pairing: PairingEvents
    private(set) var stack: Stack?
    private var links: [Data: Link] = [:]
    private var nextToken: UInt64 = 1
    private var watchers: [UInt64: AsyncStream<Void>.Continuation] = [:]
    private var nextWatcher: UInt64 = 0
    /// How many Resets the server has begun (Advertise and Scan streams end at the next one).
    private(set) var resets = 0

    init(deviceName: String, open: @escaping @Sendable () async throws -> Adapter) {
        self.deviceName = deviceName
        self.open = open
        self.pairing = PairingEvents()
        pairing.device = self
    }

    /// The running stack, opened on first use.
    func current() async throws -> Stack {
        if let stack { return stack }
        let adapter: Adapter
        do {
            adapter = try await open()
        } catch {
            throw RPCError(code: .unavailable, message: "cannot open the controller: \(error)")
        }
        let events = await adapter.events()
        await adapter.setPairingAgent(pairing)
        let central = Central(adapter: adapter)
        let peripheral = await PeripheralManager(adapter: adapter, deviceName: deviceName)
        let task = Task { [weak self] in
            for await event in events {
                guard let self else { return }
                await self.handle(event)
            }
        }
        let stack = Stack(adapter: adapter, central: central, peripheral: peripheral, events: task)
        self.stack = stack
        return stack
    }

    /// Forgets every bond, closes the adapter and opens it again (a fresh controller state), and forgets every link.
    func factoryReset() async throws {
        if let stack {
            stack.events.cancel()
            // Off first: powering off lets each link finish (its queued data, a key distribution under way), and a
            // bond saved then must go too.
            await stack.adapter.powerOff()
            self.stack = nil
            do {
                for bond in try await stack.adapter.bonds() { _ = try await stack.adapter.removeBond(bond.peer) }
            } catch {
                throw RPCError(code: .internalError, message: "FactoryReset: cannot forget the bonds: \(error)")
            }
        }
        for token in links.keys { links[token]?.isConnected = false }
        notify()
        links = [:]
        _ = try await current()
    }

    /// Powers the adapter off and forgets it.
    func close() async {
        guard let stack else { return }
        stack.events.cancel()
        await stack.adapter.powerOff()
        self.stack = nil
    }

    /// Resets the controller in place (HCI Reset on the same transport, ``Adapter/powerOn()`` on a running adapter):
    /// its links end, advertising and scanning stop, the bonds and the address stay. The server forgets which links
    /// WaitConnection returned, and marks every link down now (the host's events saying so may still be on their way).
    func reset() async throws {
        let stack = try await current()
        resets += 1
        notify()
        do {
            try await stack.adapter.powerOn()
        } catch {
            throw RPCError(code: .internalError, message: "Reset: the controller did not come up again: \(error)")
        }
        for token in links.keys {
            links[token]?.isConnected = false
            links[token]?.waited = false
        }
        notify()
    }

    /// Returns once a Reset after the `seen`-th begins (at once if one has), or throws when the task is cancelled.
    func waitForReset(after seen: Int) async throws {
        let (changes, id) = watch()
        defer { unwatch(id) }
        if resets != seen { return }
        for await _ in changes where resets != seen { return }
        throw CancellationError()
    }

    // MARK: Links

    private func handle(_ event: HostEvent) {
        switch event {
        case .connected(let connection):
            _ = register(connection)
        case .disconnected(let connection, _):
            if let token = token(of: connection) { links[token]?.isConnected = false }
        case .connectionUpdated(let connection):
            // Also reported for a new data length or PHY: only new connection parameters count as an update.
            if let token = token(of: connection), let old = links[token]?.connection {
                links[token]?.connection = connection
                if (old.interval, old.latency, old.supervisionTimeout) != (connection.interval, connection.latency, connection.supervisionTimeout) {
                    links[token]?.updates += 1
                }
            }
        case .securityChanged(let connection, let security), .encrypted(let connection, let security, _):
            if let token = token(of: connection) { links[token]?.security = security }
        case .pairingCompleted(let connection, _):
            if let token = token(of: connection) { links[token]?.pairings += 1 }
        case .pairingFailed(let connection, _):
            if let token = token(of: connection) { links[token]?.pairingFailures += 1 }
        case .encryptionChanged(let handle, let status, _) where status != .success:
            if let token = links.first(where: { $0.value.isConnected && $0.value.connection.handle == handle })?.key {
                links[token]?.encryptionFailures += 1
            }
        default:
            return
        }
        notify()
    }

    private func token(of connection: HostConnection) -> Data? {
        links.first { $0.value.connection.link == connection.link }?.key
    }

    /// The token of `connection`, made when the link is new to the server.
    func register(_ connection: HostConnection, remote: RemotePeripheral? = nil) -> Data {
        if let token = token(of: connection) {
            if let remote { links[token]?.remote = remote }
            return token
        }
        var token = Data(count: 8)
        for index in 0..<8 { token[index] = UInt8(truncatingIfNeeded: nextToken >> (56 - 8 * UInt64(index))) }
        nextToken += 1
        links[token] = Link(token: token, connection: connection, remote: remote)
        notify()
        return token
    }

    func link(_ token: Data) -> Link? { links[token] }

    /// The token of the link up with `peer` (the address the link has), the newest when there are several.
    func token(ofPeer peer: LEAddress) -> Data? {
        links.values.filter { $0.isConnected && $0.connection.peer == peer }.max { $0.connection.link < $1.connection.link }?.token
    }

    /// Records the security a caller read from the host (the event may still be on its way).
    func setSecurity(_ security: LinkSecurity, of token: Data) {
        guard links[token]?.isConnected == true else { return }
        links[token]?.security = security
        notify()
    }

    func markWaited(_ token: Data) { links[token]?.waited = true }

    /// Whether a link to `peer` (compared by its 48 bits) is up.
    func isConnected(to peer: BluetoothAddress) -> Bool {
        links.values.contains { $0.isConnected && $0.connection.peer.address == peer }
    }

    /// Waits until `condition` holds over the links (checked now and after every change), or the task is cancelled.
    func wait<T: Sendable>(_ condition: @Sendable (_ links: [Data: Link]) -> T?) async throws -> T {
        let (changes, id) = watch()
        defer { unwatch(id) }
        if let value = condition(links) { return value }
        for await _ in changes {
            if let value = condition(links) { return value }
        }
        throw CancellationError()
    }

    private func watch() -> (AsyncStream<Void>, UInt64) {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = nextWatcher
        nextWatcher += 1
        watchers[id] = continuation
        return (stream, id)
    }

    private func unwatch(_ id: UInt64) {
        watchers.removeValue(forKey: id)?.finish()
    }

    private func notify() {
        for watcher in watchers.values { watcher.yield() }
    }
}
