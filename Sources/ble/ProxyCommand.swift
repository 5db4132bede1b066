import ArgumentParser
import BLE
import BLEFiles
import ESPHomeAPI
import Foundation

/// `ble proxy`: an ESPHome native API server, so that Home Assistant and bleak programs use this radio as a
/// Bluetooth proxy (see docs/proxy.md).
struct ProxyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "proxy",
        abstract: "Serve the ESPHome native API as a Bluetooth proxy for Home Assistant and bleak (bleak-esphome).",
        discussion: """
            Clients connect over TCP (loopback unless --listen says otherwise) with the ESPHome API's Noise encryption:
            --key FILE holds the key as ESPHome's `api: encryption: key:` (base64 of 32 bytes; make one with
            `head -c 32 /dev/urandom | base64`). Without --key the proxy refuses to start unless --insecure-plaintext
            is given: a proxy gives GATT access to every device in a home. A client with a wrong key is refused and
            logged. Raw advertisements go out in batches; connections (with or without the client's cache), GATT
            services, reads, writes, descriptors, notifications, pairing, unpairing and cache clearing are forwarded,
            ATT errors with their codes. Unless --no-mdns, the proxy is announced over mDNS as ESPHome nodes are
            (NAME._esphomelib._tcp.local), except when it listens on loopback.
            """)

    @OptionGroup var options: HostOptions

    @OptionGroup var security: SecurityOptions

    @Option(help: "Where to listen: HOST:PORT (default 127.0.0.1:6053; [::1]:6053 for IPv6).")
    var listen: String = "127.0.0.1:6053"

    @Option(help: "The node name clients see.")
    var name: String = "swift-ble-proxy"

    @Option(help: "A file holding the API encryption key (base64 of 32 bytes).")
    var key: String?

    @Flag(help: "Serve without encryption (anybody who reaches the port can use every device in range).")
    var insecurePlaintext = false

    @Option(help: "The most devices connected at once through the proxy.")
    var maxConnections: Int = 8

    @Option(help: "The most API clients at once.")
    var maxClients: Int = 8

    @Option(help: "How much of the time the radio listens for advertisements: full (the scan window fills the interval, as ESPHome proxies are configured) or half (30 ms in every 60 ms).")
    var scanDuty: ScanDuty = .full

    @Flag(help: "Do not announce the proxy over mDNS (_esphomelib._tcp; never announced when listening on loopback).")
    var noMdns = false

    @Option(help: "Seconds between two reports of the proxy's counters (advertisements heard, forwarded to clients, dropped for slow clients; clients; devices connected); 0: only the last, when the proxy stops.")
    var statsInterval: Int = 60

    @Option(help: "Primary advertising PHYs to scan and forward: 1m (default), coded (long range: advertisements Home Assistant cannot hear otherwise) or both (also written 1m,coded). Coded needs a controller with extended advertising and LE Coded.")
    var phy: ScanPHY = .oneM

    func validate() throws {
        guard Self.parseListen(listen) != nil else { throw ValidationError("--listen \(listen): expected HOST:PORT") }
        guard key != nil || insecurePlaintext else {
            throw ValidationError("ble proxy needs --key FILE (the API encryption key, base64 of 32 bytes); --insecure-plaintext serves without encryption")
        }
        guard !(key != nil && insecurePlaintext) else { throw ValidationError("--key and --insecure-plaintext exclude each other") }
        guard (1...63).contains(name.utf8.count), !name.contains(".") else {
            throw ValidationError("--name '\(name)' must be one DNS label (1 to 63 bytes, no dot): mDNS announces NAME._esphomelib._tcp.local")
        }
        guard maxConnections >= 1 else { throw ValidationError("--max-connections must be at least 1") }
        guard maxClients >= 1 else { throw ValidationError("--max-clients must be at least 1") }
        guard statsInterval >= 0 else { throw ValidationError("--stats-interval must be 0 or more seconds") }
    }

    static func parseListen(_ text: String) -> (host: String, port: Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65_535).contains(port) else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return host.isEmpty ? nil : (host, port)
    }

    /// Reads the key file: base64 of exactly 32 bytes (surrounding white space ignored).
    static func readKey(_ path: String) throws -> [UInt8] {
        let text: String
        do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
            throw CommandFailure.failed("--key \(path): \(error.localizedDescription)")
        }
        guard let data = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)), data.count == 32 else {
            throw CommandFailure.failed("--key \(path): expected base64 of 32 bytes (as ESPHome's api encryption key)")
        }
        return Array(data)
    }

    func run() async throws {
        guard let (host, port) = Self.parseListen(listen) else { throw ValidationError("--listen \(listen): expected HOST:PORT") }
        let psk = try key.map(Self.readKey)
        let json = options.json
        let limit = maxConnections
        let name = name
        let maxClients = maxClients
        let securityConfiguration = security.configuration(for: try options.spec())
        let agent = security.agent(json: json)
        try await options.withCentral(security: securityConfiguration) { central in
            await central.setPairingAgent(agent)
            // As on an ESPHome proxy, a read refused for security goes back to the client with its ATT code; the client
            // asks for pairing (BluetoothDeviceRequest PAIR) when it wants it.
            await central.setPairsOnDemand(false)
            let mac = await central.address?.address.description ?? "00:00:00:00:00:00"
            let features: ESPHomeBluetoothProxyFeatures = [.passiveScan, .activeConnections, .remoteCaching, .pairing, .cacheClearing,
                                                          .rawAdvertisements, .stateAndMode, .connectionParameters]
            let info = DeviceInfoResponse(name: name, macAddress: mac, esphomeVersion: "2025.12.0", model: "swift-ble",
                                          manufacturer: "swift-ble", friendlyName: name, bluetoothProxyFeatureFlags: features.rawValue,
                                          bluetoothMACAddress: mac, apiEncryptionSupported: psk != nil)
            let session = ESPHomeAPIServerSession.Configuration(name: name, macAddress: mac, deviceInfo: info, encryptionKey: psk)
            let proxy = BluetoothProxy(central: central, limit: limit, phys: phy.phys, continuous: scanDuty == .full, json: json)
            try await proxy.startScanning()
            let server: ESPHomeAPIServer
            do {
                server = try await ESPHomeAPIServer.start(.init(host: host, port: port, session: session, maximumClients: maxClients)) { connection in
                    await proxy.serve(connection)
                }
            } catch {
                await proxy.shutdown()
                throw CommandFailure.failed("cannot listen on \(listen): \(error)")
            }
            emit(json, "proxy \(name) listening on \(host):\(server.port) (\(psk == nil ? "PLAINTEXT: no encryption" : "encrypted")), "
                 + "\(limit) connection slots, scanning \(phy.rawValue), on \(options.hci) (\(mac))",
                 ["event": "listening", "host": .string(host), "port": .int(server.port), "encrypted": .bool(psk != nil),
                  "slots": .int(limit), "mac": .string(mac)])
            let mdns = noMdns ? nil : await Self.announce(name: name, host: host, port: server.port, mac: mac, encrypted: psk != nil, json: json)
            // Until interrupted (SIGINT or SIGTERM cancels this task), with the counters every --stats-interval.
            let interval: Duration = statsInterval > 0 ? .seconds(statsInterval) : .seconds(3600)
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                if statsInterval > 0, !Task.isCancelled { await proxy.reportStatistics() }
            }
            if let mdns { await cleanUp { await mdns.stop() } }
            await cleanUp { await server.stop() }
            await cleanUp { await proxy.shutdown() }
            await proxy.reportStatistics(final: true)
            emit(json, "proxy stopped", ["event": "stopped"])
        }
    }
}

/// `ble proxy --scan-duty`: how much of the time the scan listens.
enum ScanDuty: String, ExpressibleByArgument, CaseIterable {
    case full
    case half
}

extension ProxyCommand {
    /// Announces the proxy over mDNS as ESPHome nodes are announced (`NAME._esphomelib._tcp.local`), on the address
    /// it listens on or, for 0.0.0.0, on every IPv4 interface that can multicast; not when it listens on loopback.
    static func announce(name: String, host: String, port: Int, mac: String, encrypted: Bool, json: Bool) async -> ESPHomeMDNSAdvertiser? {
        let loopback = host == "localhost" || host.hasPrefix("127.") || host == "::1"
        guard !loopback else {
            emit(json, "mDNS: not announced (listening on loopback)", ["event": "mdns", "announced": .bool(false), "reason": .string("loopback")])
            return nil
        }
        do {
            let interfaces = try ESPHomeMDNSAdvertiser.multicastInterfaces().map(\.address)
            let specific = host.split(separator: ".").compactMap { UInt8($0) }
            let addresses = host == "0.0.0.0" || host == "::" ? interfaces : (specific.count == 4 ? [specific] : interfaces)
            var txt = ["friendly_name=\(name)", "version=2025.12.0", "mac=\(mac.replacingOccurrences(of: ":", with: "").lowercased())",
                       "platform=swift-ble", "network=ethernet"]
            if encrypted { txt.append("api_encryption=\(NoiseNNpsk0Handshake.protocolName)") }
            let responder = try ESPHomeMDNSResponder(name: name, port: UInt16(port), addresses: addresses, txt: txt)
            let advertiser = try await ESPHomeMDNSAdvertiser.start(responder)
            let list = addresses.map { $0.map(String.init).joined(separator: ".") }
            emit(json, "mDNS: \(responder.instance) on \(list.joined(separator: ", "))",
                 ["event": "mdns", "announced": .bool(true), "instance": .string(responder.instance), "addresses": .array(list.map { .string($0) })])
            return advertiser
        } catch {
            emit(json, "mDNS: not announced: \(error)", ["event": "mdns", "announced": .bool(false), "reason": .string("\(error)")])
            return nil
        }
    }
}

/// The bridge between API clients and the public BLE API: one scan feeding every client that asked for
/// advertisements, and the devices connected on clients' behalf (each owned by the client that connected it).
actor BluetoothProxy {
    /// A device connected (or being connected) on a client's behalf.
    struct Device {
        let owner: ObjectIdentifier
        var peripheral: RemotePeripheral?
        var attempt: Task<Void, Never>?
        var watcher: Task<Void, Never>?
        var services: [GATTDiscoveredService]?
        var notifications: [UInt16: Task<Void, Never>] = [:]
    }

    let central: Central
    let limit: Int
    let phys: LEPHYs
    let continuous: Bool
    let json: Bool
    private var clients: [ObjectIdentifier: ESPHomeAPIConnection] = [:]
    private var slotWatchers: Set<ObjectIdentifier> = []
    private var devices: [UInt64: Device] = [:]
    private var scanner: Task<Void, Never>?
    private var active = true
    private var scanState: UInt32 = 0
    /// Connection attempts one after another (the host makes one at a time).
    private var connectChain: Task<Void, Never>?
    /// The address type each address was last heard with, for connection requests that do not say it (clients before
    /// aioesphomeapi required it); bounded: forgotten whole when it grows past ``addressTypeLimit``.
    private var addressTypes: [UInt64: LEAddressType] = [:]
    static let addressTypeLimit = 8192
    /// GATT requests under way per client; beyond ``maximumInFlight`` a request is refused at once, so that a client
    /// cannot pile up tasks without bound.
    private var inFlight: [ObjectIdentifier: Int] = [:]
    static let maximumInFlight = 64
    /// Advertising reports heard by the scan, cumulative.
    private var heard: UInt64 = 0
    /// The forwarded and dropped counts of clients that left (those present are asked).
    private var forwardedToGone: UInt64 = 0
    private var droppedForGone: UInt64 = 0

    init(central: Central, limit: Int, phys: LEPHYs, continuous: Bool, json: Bool) {
        self.central = central
        self.limit = limit
        self.phys = phys
        self.continuous = continuous
        self.json = json
    }

    static func number(_ address: LEAddress) -> UInt64 { address.address.uint64 }

    static func text(_ address: UInt64) -> String { BluetoothAddress(address).description }

    // MARK: Scanning

    func startScanning() async throws {
        scanner?.cancel()
        await central.stopScan()
        scanState = 1
        let reports = try await central.advertisementReportBatches(active: active, phys: phys, continuous: continuous)
        scanState = 2
        broadcastScannerState()
        scanner = Task { [weak self] in
            do {
                // A batch per burst the host took: one hop here and one per client for all of it.
                for try await batch in reports {
                    guard let self else { return }
                    await self.forward(batch)
                }
            } catch {
                await self?.scanFailed(error)
            }
        }
    }

    private func scanFailed(_ error: any Error) {
        scanState = 3
        log("scan failed: \(describeError(error))", ["event": "scan_failed", "error": .string(describeError(error))])
        broadcastScannerState()
    }

    private func forward(_ reports: [AdvertisementReport]) async {
        heard &+= UInt64(reports.count)
        var advertisements: [BluetoothLERawAdvertisement] = []
        advertisements.reserveCapacity(reports.count)
        for report in reports {
            let number = Self.number(report.address)
            let type: LEAddressType = report.address.type.isRandom ? .random : .public
            if addressTypes[number] != type {
                if addressTypes.count >= Self.addressTypeLimit { addressTypes.removeAll(keepingCapacity: true) }
                addressTypes[number] = type
            }
            advertisements.append(BluetoothLERawAdvertisement(address: number, rssi: Int32(report.rssi), addressType: type == .random ? 1 : 0,
                                                              data: report.rawData))
        }
        for client in clients.values { await client.advertise(advertisements) }
    }

    private var scannerState: BluetoothScannerStateResponse {
        BluetoothScannerStateResponse(state: scanState, mode: active ? 1 : 0, configuredMode: active ? 1 : 0)
    }

    private func broadcastScannerState() {
        let state = scannerState
        for client in clients.values { Task { await client.send(state) } }
    }

    // MARK: Clients

    func serve(_ connection: ESPHomeAPIConnection) async {
        let id = ObjectIdentifier(connection)
        for await event in connection.events {
            switch event {
            case .clientReady(let info):
                clients[id] = connection
                log("client \(connection.peer) connected: \(info.escapingControlCharacters)",
                    ["event": "client", "peer": .string(connection.peer), "info": .string(info)])
            case .request(let request):
                await handle(request, from: connection)
            case .closed(let reason) where clients[id] == nil:
                // Before hello: a wrong key, a plaintext client, a malformed handshake, silence.
                log("client \(connection.peer) refused: \(reason.escapingControlCharacters)",
                    ["event": "client_refused", "peer": .string(connection.peer), "reason": .string(reason)])
            case .closed(let reason):
                log("client \(connection.peer) gone: \(reason.escapingControlCharacters)",
                    ["event": "client_gone", "peer": .string(connection.peer), "reason": .string(reason)])
            }
        }
        forwardedToGone &+= UInt64(await connection.forwardedAdvertisements)
        droppedForGone &+= UInt64(await connection.droppedAdvertisements)
        clients[id] = nil
        slotWatchers.remove(id)
        // The devices it connected are disconnected: nobody is left to use them.
        for (address, device) in devices where device.owner == id { await release(address, reason: "its client went away") }
    }

    // MARK: Counters

    /// Reports the counters (`"event":"stats"`; the last, when the proxy stops, with `"final":true`): advertising
    /// reports heard, advertisements forwarded to clients and dropped for clients that read too slowly (both summed
    /// over every client, those gone included), clients now, devices connected or connecting now.
    func reportStatistics(final: Bool = false) async {
        var forwarded = forwardedToGone
        var dropped = droppedForGone
        for client in clients.values {
            forwarded &+= UInt64(await client.forwardedAdvertisements)
            dropped &+= UInt64(await client.droppedAdvertisements)
        }
        var fields: [String: JSONValue] = ["event": "stats", "advertisements": .integer(heard), "forwarded": .integer(forwarded),
                                           "dropped": .integer(dropped), "clients": .int(clients.count), "devices": .int(devices.count)]
        if final { fields["final"] = .bool(true) }
        log("stats\(final ? " (final)" : ""): \(heard) advertisements heard, \(forwarded) forwarded, \(dropped) dropped; "
            + "\(clients.count) clients, \(devices.count) devices", fields)
    }

    func shutdown() async {
        scanner?.cancel()
        for address in devices.keys { await release(address, reason: "the proxy stops") }
        await central.stopScan()
    }

    private func handle(_ request: ESPHomeAPIRequest, from client: ESPHomeAPIConnection) async {
        switch request {
        case .subscribeAdvertisements:
            await client.send(scannerState)
        case .unsubscribeAdvertisements:
            break
        case .subscribeConnectionsFree:
            slotWatchers.insert(ObjectIdentifier(client))
            await client.send(slots)
        case .setScannerMode(let mode):
            let wanted = mode == 1
            guard wanted != active else { return await client.send(scannerState) }
            active = wanted
            do { try await startScanning() } catch { scanFailed(error) }
        case .device(let request):
            await device(request, from: client)
        case .getServices(let request):
            await services(request, client: client)
        case .read(let r):
            await gatt(client, r.address, r.handle) { p in
                BluetoothGATTReadResponse(address: r.address, handle: r.handle, data: try await p.readValue(at: AttributeHandle(rawValue: UInt16(r.handle))))
            }
        case .readDescriptor(let r):
            await gatt(client, r.address, r.handle) { p in
                BluetoothGATTReadResponse(address: r.address, handle: r.handle, data: try await p.readValue(at: AttributeHandle(rawValue: UInt16(r.handle))))
            }
        case .write(let r):
            await gatt(client, r.address, r.handle) { p in
                try await p.writeValue(r.data, at: AttributeHandle(rawValue: UInt16(r.handle)), type: r.response ? .withResponse : .withoutResponse)
                return BluetoothGATTWriteResponse(address: r.address, handle: r.handle)
            }
        case .writeDescriptor(let r):
            await gatt(client, r.address, r.handle) { p in
                try await p.writeValue(r.data, at: AttributeHandle(rawValue: UInt16(r.handle)), type: .withResponse)
                return BluetoothGATTWriteResponse(address: r.address, handle: r.handle)
            }
        case .notify(let r):
            await notify(r, client: client)
        case .setConnectionParameters(let r):
            await setConnectionParameters(r, client: client)
        }
    }

    // MARK: Slots

    private var slots: BluetoothConnectionsFreeResponse {
        BluetoothConnectionsFreeResponse(free: UInt32(max(0, limit - devices.count)), limit: UInt32(limit), allocated: devices.keys.sorted())
    }

    private func slotsChanged() {
        let message = slots
        for id in slotWatchers { if let c = clients[id] { Task { await c.send(message) } } }
    }

    // MARK: Devices

    private func device(_ request: BluetoothDeviceRequest, from client: ESPHomeAPIConnection) async {
        let address = request.address
        switch request.requestType {
        case .connect, .connectV3WithCache, .connectV3WithoutCache:
            if let existing = devices[address] {
                if let p = existing.peripheral { await client.send(BluetoothDeviceConnectionResponse(address: address, connected: true, mtu: UInt32(await p.mtu))) }
                return
            }
            guard devices.count < limit else {
                // ESPHome answers a connection beyond its slots with a failed connection.
                return await client.send(BluetoothDeviceConnectionResponse(address: address, connected: false, error: 0x0D))
            }
            // The type the client gives, else the one the address was heard with (public when never heard).
            let type: LEAddressType = request.hasAddressType ? (request.addressType == 1 ? .random : .public)
                : addressTypes[address] ?? .public
            let target = LEAddress(BluetoothAddress(address), type: type)
            let previous = connectChain
            let attempt = Task { [weak self] in
                await previous?.value
                await self?.connect(target, number: address, client: client)
            }
            connectChain = attempt
            devices[address] = Device(owner: ObjectIdentifier(client), attempt: attempt)
            slotsChanged()
        case .disconnect:
            guard devices[address] != nil else {
                return await client.send(BluetoothDeviceConnectionResponse(address: address, connected: false))
            }
            await release(address, reason: "the client asked")
        case .pair:
            guard let p = devices[address]?.peripheral else {
                return await client.send(BluetoothDevicePairingResponse(address: address, success: false, error: 0x02))
            }
            do {
                try await p.pair()
                await client.send(BluetoothDevicePairingResponse(address: address, success: true, error: 0))
            } catch {
                await client.send(BluetoothDevicePairingResponse(address: address, success: false, error: Self.code(of: error)))
            }
        case .unpair:
            do {
                // The request carries no address type: a bond under either is removed.
                let asPublic = try await central.removeBond(LEAddress(BluetoothAddress(address), type: .public))
                let asRandom = try await central.removeBond(LEAddress(BluetoothAddress(address), type: .random))
                let removed = asPublic || asRandom
                await client.send(BluetoothDeviceUnpairingResponse(address: address, success: removed, error: removed ? 0 : 0x02))
            } catch {
                await client.send(BluetoothDeviceUnpairingResponse(address: address, success: false, error: Self.code(of: error)))
            }
        case .clearCache:
            // The proxy keeps a device's services only while it is connected: clearing forgets them, so that the next
            // services request discovers again.
            devices[address]?.services = nil
            await client.send(BluetoothDeviceClearCacheResponse(address: address, success: true, error: 0))
        default:
            log("unknown device request \(request.requestType.rawValue)", ["event": "unknown_request", "type": .int(Int(request.requestType.rawValue))])
        }
    }

    private func connect(_ target: LEAddress, number: UInt64, client: ESPHomeAPIConnection) async {
        guard devices[number] != nil else { return }   // disconnected before its turn came
        do {
            let peripheral = try await central.connect(target, timeout: .seconds(20))
            guard devices[number] != nil else {
                _ = try? await central.disconnect(peripheral)
                return
            }
            let states = await peripheral.stateUpdates()
            devices[number]?.peripheral = peripheral
            devices[number]?.watcher = Task { [weak self] in
                for await state in states {
                    if case .disconnected(let status) = state {
                        await self?.lost(number, status: status)
                        return
                    }
                }
            }
            let mtu = await peripheral.mtu
            log("connected \(target) for \(client.peer)", ["event": "connected", "address": .string(target.address.description), "mtu": .int(mtu)])
            await client.send(BluetoothDeviceConnectionResponse(address: number, connected: true, mtu: UInt32(mtu)))
        } catch {
            devices[number] = nil
            slotsChanged()
            log("connecting \(target) failed: \(describeError(error))", ["event": "connect_failed", "address": .string(target.address.description)])
            await client.send(BluetoothDeviceConnectionResponse(address: number, connected: false, error: Self.code(of: error)))
        }
    }

    /// The link dropped (not on request): the client is told and the slot comes back.
    private func lost(_ number: UInt64, status: HCIStatus) async {
        guard let device = devices.removeValue(forKey: number) else { return }
        for task in device.notifications.values { task.cancel() }
        slotsChanged()
        log("disconnected \(Self.text(number)) (\(status))", ["event": "disconnected", "address": .string(Self.text(number))])
        if let c = clients[device.owner] { await c.send(BluetoothDeviceConnectionResponse(address: number, connected: false, error: Int32(status.rawValue))) }
    }

    private func release(_ number: UInt64, reason: String) async {
        guard let device = devices.removeValue(forKey: number) else { return }
        device.watcher?.cancel()
        device.attempt?.cancel()
        for task in device.notifications.values { task.cancel() }
        if let p = device.peripheral {
            _ = try? await central.disconnect(p)
        } else {
            await central.cancelConnectionAttempt(to: LEAddress(BluetoothAddress(number), type: .public))
            await central.cancelConnectionAttempt(to: LEAddress(BluetoothAddress(number), type: .random))
        }
        slotsChanged()
        log("released \(Self.text(number)): \(reason)", ["event": "released", "address": .string(Self.text(number))])
        if let c = clients[device.owner] { await c.send(BluetoothDeviceConnectionResponse(address: number, connected: false)) }
    }

    // MARK: GATT

    private func connected(_ number: UInt64, for client: ESPHomeAPIConnection) -> RemotePeripheral? {
        guard let device = devices[number], device.owner == ObjectIdentifier(client) else { return nil }
        return device.peripheral
    }

    /// The error code a client gets: the ATT code of an ATT error, otherwise ESP-IDF's generic GATT error (0x85).
    static func code(of error: any Error) -> Int32 {
        if let code = (error as? GATTError)?.code.attError { return Int32(code.rawValue) }
        return 0x85
    }

    private func gatt<Answer: ESPHomeAPIMessage>(_ client: ESPHomeAPIConnection, _ number: UInt64, _ handle: UInt32,
                                                 _ body: @escaping @Sendable (RemotePeripheral) async throws -> Answer) async {
        let id = ObjectIdentifier(client)
        guard let p = connected(number, for: client), handle <= 0xFFFF, inFlight[id, default: 0] < Self.maximumInFlight else {
            return await client.send(BluetoothGATTErrorResponse(address: number, handle: handle, error: 0x85))
        }
        inFlight[id, default: 0] += 1
        // The request runs beside the actor, so that a slow device does not hold up the others.
        Task {
            do {
                await client.send(try await body(p))
            } catch {
                await client.send(BluetoothGATTErrorResponse(address: number, handle: handle, error: Self.code(of: error)))
            }
            finished(id)
        }
    }

    private func finished(_ id: ObjectIdentifier) {
        inFlight[id, default: 1] -= 1
        if inFlight[id] == 0 { inFlight[id] = nil }
    }

    private func discovered(_ number: UInt64, _ p: RemotePeripheral) async throws -> [GATTDiscoveredService] {
        if let services = devices[number]?.services { return services }
        let services = try await p.discoverAll()
        devices[number]?.services = services
        return services
    }

    private func services(_ request: BluetoothGATTGetServicesRequest, client: ESPHomeAPIConnection) async {
        let number = request.address
        guard let p = connected(number, for: client) else {
            return await client.send(BluetoothGATTErrorResponse(address: number, handle: 0, error: 0x85))
        }
        do {
            for service in try await discovered(number, p) {
                let characteristics = service.characteristics.map { c in
                    BluetoothGATTCharacteristic(uuid: Self.uuid(c.characteristic.uuid), handle: UInt32(c.characteristic.valueHandle.rawValue),
                                                properties: UInt32(c.characteristic.properties.rawValue),
                                                descriptors: c.descriptors.map { .init(uuid: Self.uuid($0.uuid), handle: UInt32($0.handle.rawValue)) })
                }
                let message = BluetoothGATTService(uuid: Self.uuid(service.service.uuid), handle: UInt32(service.service.startHandle.rawValue),
                                                   characteristics: characteristics)
                await client.send(BluetoothGATTGetServicesResponse(address: number, services: [message]))
            }
            await client.send(BluetoothGATTGetServicesDoneResponse(address: number))
        } catch {
            await client.send(BluetoothGATTErrorResponse(address: number, handle: 0, error: Self.code(of: error)))
        }
    }

    static func uuid(_ uuid: BluetoothUUID) -> ESPHomeUUID {
        ESPHomeUUID(bigEndian: uuid.bigEndianBytes) ?? ESPHomeUUID(high: 0, low: 0)
    }

    private func notify(_ request: BluetoothGATTNotifyRequest, client: ESPHomeAPIConnection) async {
        let number = request.address
        guard let p = connected(number, for: client), request.handle <= 0xFFFF else {
            return await client.send(BluetoothGATTErrorResponse(address: number, handle: request.handle, error: 0x85))
        }
        let handle = UInt16(request.handle)
        do {
            let services = try await discovered(number, p)
            guard let characteristic = services.lazy.flatMap(\.characteristics).first(where: { $0.characteristic.valueHandle.rawValue == handle })?
                .characteristic else {
                return await client.send(BluetoothGATTErrorResponse(address: number, handle: request.handle, error: Int32(ATTErrorCode.invalidHandle.rawValue)))
            }
            devices[number]?.notifications.removeValue(forKey: handle)?.cancel()
            if request.enable {
                let values = try await p.notifications(for: characteristic)
                devices[number]?.notifications[handle] = Task {
                    for await value in values {
                        await client.send(BluetoothGATTNotifyDataResponse(address: number, handle: request.handle, data: value))
                    }
                }
            } else {
                try await p.stopNotifications(for: characteristic)
            }
            await client.send(BluetoothGATTNotifyResponse(address: number, handle: request.handle))
        } catch {
            await client.send(BluetoothGATTErrorResponse(address: number, handle: request.handle, error: Self.code(of: error)))
        }
    }

    private func setConnectionParameters(_ r: BluetoothSetConnectionParamsRequest, client: ESPHomeAPIConnection) async {
        guard let p = connected(r.address, for: client) else {
            return await client.send(BluetoothSetConnectionParamsResponse(address: r.address, error: Int32(HCIStatus.unknownConnectionIdentifier.rawValue)))
        }
        // HCI's ranges (Core 5.4, Vol 4, Part E, 7.8.18); what lies outside is refused before the controller sees it.
        guard (0x0006...0x0C80).contains(r.minInterval), (r.minInterval...0x0C80).contains(r.maxInterval), r.latency <= 499,
              (0x000A...0x0C80).contains(r.timeout) else {
            return await client.send(BluetoothSetConnectionParamsResponse(address: r.address, error: Int32(HCIStatus.invalidCommandParameters.rawValue)))
        }
        Task {
            do {
                try await p.updateConnectionParameters(interval: UInt16(r.minInterval)...UInt16(r.maxInterval), latency: UInt16(r.latency),
                                                       supervisionTimeout: UInt16(r.timeout))
                await client.send(BluetoothSetConnectionParamsResponse(address: r.address, error: 0))
            } catch {
                var status = HCIStatus.unspecifiedError
                if let host = error as? HostError, host.code.opcode != nil, let s = host.code.hciStatus { status = s }
                await client.send(BluetoothSetConnectionParamsResponse(address: r.address, error: Int32(status.rawValue)))
            }
        }
    }

    private func log(_ text: String, _ fields: [String: JSONValue]) { emit(json, text, fields) }
}
