import BLE
import BLEBeacons
import BLEFiles
import BLEProfiles
import BLETransport
import BLEWeb
import BLEWire
import Foundation

/// The Bluetooth side of `ble web`: one adapter (scanning as a central, its links, the virtual devices it started) shared
/// by every tab, through the public API. It adds no Bluetooth logic: it scans, connects, reads, writes, subscribes and
/// serves as the commands do, and tells the tabs, coalesced (devices at most 4 times a second, values at most 10).
actor WebHub {
    let adapter: Adapter
    let central: Central
    let spec: HCITransportSpec
    let hciName: String
    let readOnly: Bool
    /// The btsnoop file the adapter records in (`nil`: `--no-trace`).
    let tracePath: String?

    private var clients: [Int: WebClient] = [:]
    private var tracePaused: Set<Int> = []
    private var rows: [String: ScanRowState] = [:]
    /// The devices heard since the last batch (their rows are written when the batch goes).
    private var deviceUpdates = Coalescer<String, Bool>(interval: .milliseconds(250))
    private var valueUpdates = Coalescer<String, JSONValue>(interval: .milliseconds(100))
    private var links: [String: WebLink] = [:]
    private var connecting: Set<String> = []
    private var virtuals: [Int: VirtualEntry] = [:]
    private var nextVirtual = 1
    private var traceOffset = 0
    private var traceLines: [JSONValue] = []
    private var decoders: [String: ValueDecoding] = [:]
    private var tasks: [Task<Void, Never>] = []
    /// Each tab's reader, ended when the tab goes.
    private var clientTasks: [Int: Task<Void, Never>] = [:]
    /// Each link's watcher of its state, ended with the link.
    private var linkWatchers: [String: Task<Void, Never>] = [:]
    /// Updates not sent to a tab that was behind.
    private var droppedUpdates = 0
    /// Pairing prompts shown in the tabs and waiting for an answer, by number.
    private var prompts: [Int: CheckedContinuation<PromptAnswer, Never>] = [:]
    private var nextPrompt = 1
    private let clock = ContinuousClock()
    private let origin: ContinuousClock.Instant

    init(adapter: Adapter, spec: HCITransportSpec, hciName: String, readOnly: Bool, tracePath: String?) {
        self.adapter = adapter
        self.central = Central(adapter: adapter)
        self.spec = spec
        self.hciName = hciName
        self.readOnly = readOnly
        self.tracePath = tracePath
        origin = clock.now
    }

    private var now: Duration { clock.now - origin }

    /// Scans, serves the tabs and flushes the updates until cancelled.
    func run(_ server: WebServer) async throws {
        // The user's part in pairing happens in the page (refused in --read-only: nothing pairs from a read-only page).
        await central.setPairingAgent(WebPairingAgent(hub: self))
        if readOnly { await central.setPairsOnDemand(false) }
        let scan = try await central.scan(allowDuplicates: true, bufferingLimit: 4096)
        tasks.append(Task { [weak self] in
            do {
                for try await device in scan { await self?.heard(device) }
            } catch {
                await self?.broadcast(["type": "notice", "message": .string("the scan ended: \(describeError(error))")])
            }
        })
        tasks.append(Task { [weak self] in
            for await client in server.clients { await self?.attach(client) }
        })
        var tick = 0
        while !Task.isCancelled {
            try await Task.sleep(for: .milliseconds(50))
            flush()
            tick += 1
            if tick % 2 == 0 { readTrace() }   // 10 times a second
        }
    }

    /// Stops the virtual devices, disconnects and powers the controller off.
    func stop() async {
        for task in tasks + Array(clientTasks.values) + Array(linkWatchers.values) { task.cancel() }
        for entry in virtuals.values { await entry.stop() }
        virtuals.removeAll()
        for link in links.values {
            for task in link.subscriptions.values { task.cancel() }
            _ = try? await central.disconnect(link.peripheral)
        }
        for waiting in prompts.values { waiting.resume(returning: PromptAnswer(passkey: nil, confirmed: false)) }
        prompts.removeAll()
        for client in clients.values { client.close() }
        await adapter.powerOff()
    }

    // MARK: Tabs

    private func attach(_ client: WebClient) async {
        // The greeting first, then the updates (a batch sent while the greeting was being written would come before it).
        let greeting = await hello()
        clients[client.id] = client
        send(client, greeting)
        clientTasks[client.id] = Task { [weak self] in
            // Each request in a task of its own: a long one (connecting, pairing) must not hold up the next (the
            // passkey that pairing waits for comes in a later message of the same tab).
            await withDiscardingTaskGroup { group in
                for await text in client.messages {
                    group.addTask { await self?.received(text, from: client) }
                }
            }
            await self?.detach(client)
        }
    }

    private func detach(_ client: WebClient) {
        clients[client.id] = nil
        clientTasks[client.id] = nil
        tracePaused.remove(client.id)
    }

    private func send(_ client: WebClient, _ message: JSONValue) { client.send(message.encoded()) }

    private func broadcast(_ message: JSONValue) {
        let text = message.encoded()
        for client in clients.values { client.send(text) }
    }

    /// Sends an update every tab will get a newer one of, skipping the tabs that are behind (see
    /// ``WebClient/sendUpdate(_:)``).
    private func broadcastUpdate(_ message: JSONValue) {
        let text = message.encoded()
        for client in clients.values where !client.sendUpdate(text) { droppedUpdates += 1 }
    }

    /// What a new tab is told first: the mode, the controller, the simulated devices it may start, and everything
    /// known now.
    private func hello() async -> JSONValue {
        let capabilities = await adapter.capabilities
        return ["type": "hello", "readOnly": .bool(readOnly), "hci": .string(hciName), "trace": .bool(tracePath != nil),
                "address": .string(await adapter.address.map { "\($0.address)" } ?? "?"),
                "controller": .array(Info.lines(capabilities).map(JSONValue.string)),
                "simulated": .array(SimulatedDevice.allCases.map { .string($0.rawValue) }),
                "devices": .array(rows.values.sorted { $0.key < $1.key }.map(\.json)),
                "links": .array(links.values.map(\.json)),
                "virtuals": .array(virtuals.sorted { $0.key < $1.key }.map { $0.value.json(id: $0.key) })]
    }

    private func received(_ text: String, from client: WebClient) async {
        let request: PageRequest
        do {
            request = try PageRequest(json: text)
        } catch {
            send(client, ["type": "error", "id": PageRequest.id(in: text).map(JSONValue.int) ?? .null, "message": .string(error.message)])
            return
        }
        let id: JSONValue = request.id.map(JSONValue.int) ?? .null
        if readOnly, request.isWrite {
            send(client, ["type": "error", "id": id, "message": "refused: this server was started with --read-only (no writes, no pairing, no virtual devices)"])
            return
        }
        do {
            let answer = try await perform(request.operation, client: client)
            send(client, .object([("type", "done"), ("id", id)] + answer))
        } catch let error as WebRequestFailure {
            send(client, ["type": "error", "id": id, "message": .string(error.message)])
        } catch let error as GATTDeviceDescriptionError {
            send(client, ["type": "descriptionError", "id": id, "message": .string(error.reason),
                          "path": .string(error.code.path), "line": error.code.line.map(JSONValue.int) ?? .null,
                          "column": error.code.column.map(JSONValue.int) ?? .null])
        } catch {
            send(client, ["type": "error", "id": id, "message": .string(describeError(error))])
        }
    }

    private func perform(_ operation: PageRequest.Operation, client: WebClient) async throws -> [(key: String, value: JSONValue)] {
        switch operation {
        case .connect(let address):
            try await connect(address)
            return [("address", .string(address))]
        case .disconnect(let address):
            let link = try link(address)
            _ = try await central.disconnect(link.peripheral)
            return [("address", .string(address))]
        case .read(let address, let handle):
            let link = try link(address)
            let value: [UInt8]
            let uuid: BluetoothUUID
            if let c = link.characteristics[handle] {
                value = try await link.peripheral.readValue(for: c)
                uuid = c.uuid
            } else if let d = link.descriptors[handle] {
                value = try await link.peripheral.readValue(for: d)
                uuid = d.uuid
            } else {
                throw WebRequestFailure("\(address) has no characteristic value or descriptor at handle 0x\(hex4(handle))")
            }
            return [("address", .string(address)), ("handle", .integer(handle))] + describeValue(uuid, value, key: address)
        case .write(let address, let handle, let value, let withResponse):
            let link = try link(address)
            if let c = link.characteristics[handle] {
                try await link.peripheral.writeValue(value, for: c, type: withResponse ? .withResponse : .withoutResponse)
            } else if let d = link.descriptors[handle] {
                try await link.peripheral.writeValue(value, for: d)
            } else {
                throw WebRequestFailure("\(address) has no characteristic value or descriptor at handle 0x\(hex4(handle))")
            }
            return [("address", .string(address)), ("handle", .integer(handle)), ("written", .int(value.count))]
        case .subscribe(let address, let handle):
            try await subscribe(address, handle)
            return [("address", .string(address)), ("handle", .integer(handle))]
        case .unsubscribe(let address, let handle):
            var link = try link(address)
            guard let c = link.characteristics[handle], let task = link.subscriptions[handle] else {
                throw WebRequestFailure("not subscribed to handle 0x\(hex4(handle)) of \(address)")
            }
            task.cancel()
            link.subscriptions[handle] = nil
            links[address] = link
            try await link.peripheral.stopNotifications(for: c)
            broadcast(link.json.adding("type", "link"))
            return [("address", .string(address)), ("handle", .integer(handle))]
        case .pair(let address):
            let link = try link(address)
            let security = try await link.peripheral.pair()
            links[address]?.security = "\(security)"
            broadcast(["type": "secured", "address": .string(address), "security": .string("\(security)")])
            return [("address", .string(address)), ("security", .string("\(security)"))]
        case .pairingAnswer(let prompt, let passkey, let confirmed):
            guard let waiting = prompts.removeValue(forKey: prompt) else {
                throw WebRequestFailure("pairing prompt #\(prompt) is no longer waiting (answered in another tab, or timed out)")
            }
            waiting.resume(returning: PromptAnswer(passkey: passkey, confirmed: confirmed))
            broadcast(["type": "promptClosed", "prompt": .int(prompt)])
            return [("prompt", .int(prompt))]
        case .setPHY(let address, let name):
            let link = try link(address)
            let wanted: LEPHYs = name == "2M" ? .le2M : name == "Coded" ? .leCoded : .le1M
            let phys = try await link.peripheral.setPreferredPHY(transmit: wanted, receive: wanted)
            let text = "TX \(Scan.phyName(phys.transmit)), RX \(Scan.phyName(phys.receive))"
            links[address]?.phy = text
            if let updated = links[address] { broadcast(updated.json.adding("type", "link")) }
            return [("address", .string(address)), ("phy", .string(text))]
        case .checkDescription(let text):
            let description = try GATTDeviceDescription(json: text)
            return [("services", .int(description.services.count))]
        case .startDevice(let name):
            guard let device = SimulatedDevice(rawValue: name) else {
                throw WebRequestFailure("no simulated device '\(name)' (there are \(SimulatedDevice.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            let (manager, own) = try await peripheralManager(name: device.defaultName)
            do {
                let running = try await device.start(on: manager)
                return startedVirtual(VirtualEntry(name: device.defaultName, kind: device.rawValue, manager: manager, ownsAdapter: own,
                                                   stopper: { await running.stop() }))
            } catch {
                if own { await manager.powerOff() }
                throw error
            }
        case .startDescription(let text):
            let description = try GATTDeviceDescription(json: text)
            let name = description.advertising.name ?? description.name ?? "swift-ble"
            let (manager, own) = try await peripheralManager(name: name)
            do {
                let device = try await manager.serve(description)
                return startedVirtual(VirtualEntry(name: name, kind: "GATT file", manager: manager, ownsAdapter: own,
                                                   stopper: { await device.stop() }))
            } catch {
                if own { await manager.powerOff() }
                throw error
            }
        case .startAdvertiser(let advertiser):
            let (label, start) = try Self.advertising(advertiser)
            let (manager, own) = try await peripheralManager(name: "ble web advertiser")
            do {
                let stop = try await start(manager)
                return startedVirtual(VirtualEntry(name: label, kind: "advertiser", manager: manager, ownsAdapter: own, stopper: stop))
            } catch {
                if own { await manager.powerOff() }
                throw error
            }
        case .stopDevice(let id):
            guard let entry = virtuals.removeValue(forKey: id) else { throw WebRequestFailure("no virtual device #\(id)") }
            await entry.stop()
            broadcastVirtuals()
            return [("device", .int(id))]
        case .trace(let paused):
            if paused { tracePaused.insert(client.id) } else { tracePaused.remove(client.id) }
            return [("paused", .bool(paused))]
        }
    }

    // MARK: Pairing

    /// Shows a prompt in every tab and waits for the first answer (at most 60 s; then, or with no tab open, the
    /// answer is "no").
    func prompt(kind: String, peer: LEAddress, number: UInt32?) async -> PromptAnswer {
        guard !readOnly, !clients.isEmpty else { return PromptAnswer(passkey: nil, confirmed: false) }
        let id = nextPrompt
        nextPrompt += 1
        var message: [(key: String, value: JSONValue)] = [("type", "prompt"), ("prompt", .int(id)), ("kind", .string(kind)),
                                                         ("peer", .string("\(peer.address)"))]
        if let number { message.append(("number", .string(Passkey.text(number)))) }
        broadcast(.object(message))
        let timeout = Task { [weak self] in
            try? await Task.sleep(for: .seconds(60))
            await self?.expire(id)
        }
        defer { timeout.cancel() }
        return await withCheckedContinuation { continuation in prompts[id] = continuation }
    }

    private func expire(_ id: Int) {
        guard let waiting = prompts.removeValue(forKey: id) else { return }
        waiting.resume(returning: PromptAnswer(passkey: nil, confirmed: false))
        broadcast(["type": "promptClosed", "prompt": .int(id), "reason": "timed out"])
    }

    /// Tells the tabs the passkey to type on the device.
    func show(passkey: UInt32, peer: LEAddress) {
        broadcast(["type": "prompt", "kind": "display", "peer": .string("\(peer.address)"), "number": .string(Passkey.text(passkey))])
    }

    // MARK: Scanner

    private func heard(_ device: DiscoveredPeripheral) {
        let key = "\(device.address.address)"
        let at = now
        var row = rows[key] ?? ScanRowState(key: key, device: device, firstSeen: at)
        row.update(device, at: at)
        rows[key] = row
        deviceUpdates.offer(key, true)
    }

    private func flush() {
        let at = now
        let devices = deviceUpdates.flush(now: at).compactMap { entry -> JSONValue? in
            rows[entry.key]?.nextUpdate(at: at)
        }
        if !devices.isEmpty { broadcastUpdate(["type": "devices", "devices": .array(devices), "time": .number(seconds(now), decimals: 2),
                                           "dropped": .int(droppedUpdates)]) }
        let values = valueUpdates.flush(now: now)
        if !values.isEmpty { broadcastUpdate(["type": "notifications", "values": .array(values.map(\.value))]) }
    }

    private func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }

    // MARK: Links

    private func link(_ address: String) throws -> WebLink {
        guard let link = links[address] else { throw WebRequestFailure("not connected to \(address)") }
        return link
    }

    private func connect(_ address: String) async throws {
        guard links[address] == nil else { return }
        guard let row = rows[address] else { throw WebRequestFailure("no device \(address) in the scanner") }
        guard row.device.isConnectable else { throw WebRequestFailure("\(address) does not accept connections (it advertises as non-connectable)") }
        guard connecting.insert(address).inserted else { throw WebRequestFailure("already connecting to \(address)") }
        defer { connecting.remove(address) }
        broadcast(["type": "linkState", "address": .string(address), "state": "connecting"])
        let peripheral: RemotePeripheral
        do {
            peripheral = try await central.connect(row.device, timeout: .seconds(10))
        } catch {
            broadcast(["type": "linkState", "address": .string(address), "state": "disconnected"])
            throw error
        }
        let mtu = await peripheral.mtu   // exchanged on connect
        let services: [GATTDiscoveredService]
        do {
            services = try await peripheral.discoverAll()
        } catch {
            _ = try? await central.disconnect(peripheral)
            broadcast(["type": "linkState", "address": .string(address), "state": "disconnected"])
            throw error
        }
        var link = WebLink(address: address, name: row.device.name, peripheral: peripheral, mtu: mtu, services: services)
        let connection = await peripheral.connection
        link.phy = "TX \(Scan.phyName(connection.txPHY)), RX \(Scan.phyName(connection.rxPHY))"
        links[address] = link
        broadcast(link.json.adding("type", "link"))
        let updates = await peripheral.stateUpdates()
        linkWatchers[address] = Task { [weak self] in
            for await state in updates {
                if case .disconnected = state {
                    await self?.lost(address, peripheral: peripheral)
                    return
                }
            }
        }
    }

    private func lost(_ address: String, peripheral: RemotePeripheral) {
        guard let link = links[address], link.peripheral === peripheral else { return }
        for task in link.subscriptions.values { task.cancel() }
        links[address] = nil
        linkWatchers[address] = nil
        broadcast(["type": "linkState", "address": .string(address), "state": "disconnected"])
    }

    private func subscribe(_ address: String, _ handle: UInt16) async throws {
        var link = try link(address)
        guard let c = link.characteristics[handle] else {
            throw WebRequestFailure("\(address) has no characteristic value at handle 0x\(hex4(handle))")
        }
        guard c.properties.contains(.notify) || c.properties.contains(.indicate) else {
            throw WebRequestFailure("characteristic \(named(c.uuid))at 0x\(hex4(handle)) neither notifies nor indicates")
        }
        guard link.subscriptions[handle] == nil else { return }
        let stream = try await link.peripheral.notifications(for: c)
        let uuid = c.uuid
        link.subscriptions[handle] = Task { [weak self] in
            for await value in stream { await self?.notified(address, handle, uuid, value) }
        }
        links[address] = link
        broadcast(link.json.adding("type", "link"))
    }

    private func notified(_ address: String, _ handle: UInt16, _ uuid: BluetoothUUID, _ value: [UInt8]) {
        let fields: [(key: String, value: JSONValue)] = [("address", .string(address)), ("handle", .integer(handle)),
                                                        ("time", .number(seconds(now), decimals: 3))]
        valueUpdates.offer("\(address)/\(handle)", .object(fields + describeValue(uuid, value, key: address)))
    }

    /// A value as the page shows it: hex, text when printable, the profile's decoding, and the number a chart plots
    /// (the first number the decoding has, with its field's name as the unit).
    private func describeValue(_ uuid: BluetoothUUID, _ value: [UInt8], key: String) -> [(key: String, value: JSONValue)] {
        var out: [(key: String, value: JSONValue)] = [("uuid", .string(uuid.description)), ("hex", .string(value.hexString()))]
        let text = String(decoding: value, as: UTF8.self)
        if !value.isEmpty, text.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value < 0x7F }) { out.append(("text", .string(text))) }
        var decoder = decoders[key, default: ValueDecoding()]
        let decoded = decoder.decode(uuid, value)
        decoders[key] = decoder
        if !decoded.text.isEmpty { out.append(("decoded", .string(String(decoded.text.dropFirst(3))))) }
        if case .object(let members)? = decoded.fields["decoded"] {
            if let number = members.first(where: { if case .int = $0.value { true } else if case .number = $0.value { true } else { false } }) {
                out.append(("number", number.value))
                let unit = members.first { $0.key == "unit" }.flatMap { if case .string(let u) = $0.value { u } else { nil } }
                out.append(("unit", .string(unit.map { "\(number.key) (\($0))" } ?? number.key)))
            }
        }
        return out
    }

    // MARK: Virtual devices

    /// A peripheral manager for a virtual device: on the embedded world a controller of its own (so that this page's
    /// scanner hears it like any device around), on a real controller the shared adapter.
    private func peripheralManager(name: String) async throws -> (PeripheralManager, ownsAdapter: Bool) {
        if case .virtual = spec {
            let own = try await Adapter.open(.virtual)
            return (await PeripheralManager(adapter: own, deviceName: name), true)
        }
        guard virtuals.isEmpty else { throw WebRequestFailure("\(hciName) already serves a virtual device: stop it first") }
        return (await PeripheralManager(adapter: adapter, deviceName: name), false)
    }

    /// What an advertiser is called in the page, and how it starts on a peripheral manager (returning how it stops):
    /// a beacon through `BeaconAdvertiser`, custom data as a non-connectable advertisement.
    private static func advertising(_ advertiser: PageRequest.Advertiser) throws
        -> (String, @Sendable (PeripheralManager) async throws -> @Sendable () async -> Void) {
        switch advertiser {
        case .iBeacon(let text, let major, let minor, let power):
            guard let uuid = BluetoothUUID(text), text.filter(\.isHexDigit).count == 32 else {
                throw WebRequestFailure("'\(text)' is not a 128-bit UUID (an iBeacon's proximity UUID)")
            }
            let frame = BeaconFrame.iBeacon(IBeacon(proximityUUID: uuid, major: major, minor: minor, measuredPower: power))
            return ("\(frame)", { manager in
                let beacons = BeaconAdvertiser(peripheral: manager)
                try await beacons.start(frame)
                return { try? await beacons.stop() }
            })
        case .eddystoneURL(let url, let power):
            let frame: BeaconFrame
            do {
                frame = .eddystone(.url(try EddystoneURL(txPowerAt0m: power, url: url)))
            } catch {
                throw WebRequestFailure("cannot make an Eddystone-URL of '\(url)': \(error.reason)")
            }
            return ("Eddystone-URL \(url)", { manager in
                let beacons = BeaconAdvertiser(peripheral: manager)
                try await beacons.start(frame)
                return { try? await beacons.stop() }
            })
        case .custom(let bytes):
            let data: AdvertisingData
            do {
                data = try AdvertisingData(bytes: bytes)
            } catch {
                throw WebRequestFailure("the advertising data does not parse: \(error.reason)")
            }
            guard bytes.count <= 31 else { throw WebRequestFailure("legacy advertising data holds at most 31 bytes, not \(bytes.count)") }
            return ("custom advertising data \(bytes.hexString())", { manager in
                try await manager.startAdvertising(Advertisement(data: data))
                return { try? await manager.stopAdvertising() }
            })
        }
    }

    private func startedVirtual(_ entry: VirtualEntry) -> [(key: String, value: JSONValue)] {
        let id = nextVirtual
        nextVirtual += 1
        virtuals[id] = entry
        broadcastVirtuals()
        return [("device", .int(id))]
    }

    private func broadcastVirtuals() {
        broadcast(["type": "virtuals", "virtuals": .array(virtuals.sorted { $0.key < $1.key }.map { $0.value.json(id: $0.key) })])
    }

    // MARK: Trace

    /// Reads the records the btsnoop file gained since the last call and sends them to the tabs that have not paused.
    private func readTrace() {
        guard let tracePath, let handle = FileHandle(forReadingAtPath: tracePath) else { return }
        defer { try? handle.close() }
        let start = max(traceOffset, BTSnoopWriter.header.count)
        guard (try? handle.seek(toOffset: UInt64(start))) != nil, let data = try? handle.readToEnd(), !data.isEmpty else { return }
        let bytes = [UInt8](data)
        // Whole records only: 24 bytes of record header (the included length at 4...7), then the packet.
        var end = 0
        while end + 24 <= bytes.count {
            let length = Int(bytes[end + 4]) << 24 | Int(bytes[end + 5]) << 16 | Int(bytes[end + 6]) << 8 | Int(bytes[end + 7])
            guard end + 24 + length <= bytes.count else { break }
            end += 24 + length
        }
        guard end > 0, let records = try? BTSnoopReader.parse(BTSnoopWriter.header + bytes[0..<end]) else { return }
        traceOffset = start + end
        // At most 100 packets a batch (1,000 a second): beyond, the newest, and how many were skipped.
        let lines = records.suffix(100).map(TraceLine.json)
        let message: JSONValue = ["type": "trace", "packets": .array(lines), "skipped": .int(records.count - lines.count)]
        let text = message.encoded()
        for (id, client) in clients where !tracePaused.contains(id) && !client.sendUpdate(text) { droppedUpdates += 1 }
    }
}
