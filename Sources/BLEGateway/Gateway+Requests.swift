import BLE
import BLEBeacons
import BLEFiles
import BLEProfiles
import MQTT

/// The broker's requests (``GatewayRequest``): connect, discover, read, write, subscribe and pair, answered on the
/// response topics.
extension Gateway {
    // MARK: - Requests

    /// Answers requests: those naming one device in order, one at a time; those naming different devices
    /// concurrently (a slow read on one device does not hold another's). A malformed request is answered at once.
    func serveRequests() async {
        for await payload in requestStream {
            if Task.isCancelled { return }
            switch GatewayRequest.parse(payload) {
            case .failure(let error):
                let id = GatewayRequest.requestID(of: payload)
                await respond(GatewayResponse.topicLevel(id), GatewayResponse.failure(error, id: id))
            case .success(let request):
                if let start = requestQueue.enqueue(request, device: request.device) { begin(start) }
            }
        }
    }

    /// Starts answering `request` (the queue said its turn came); the next request of its device starts after it.
    func begin(_ request: GatewayRequest) {
        requestTasks[request.device] = Task {
            await self.answer(request)
            self.finished(request.device)
        }
    }

    func finished(_ device: String) {
        requestTasks[device] = nil
        guard !stopped, let next = requestQueue.finished(device) else { return }
        begin(next)
    }

    func answer(_ request: GatewayRequest) async {
        do {
            let fields = try await perform(request)
            await respond(request.id, GatewayResponse.success(id: request.id, [("op", .string(request.operation.rawValue))] + fields))
        } catch {
            await respond(request.id, GatewayResponse.failure(Self.gatewayError(error), id: request.id))
        }
    }

    func respond(_ level: String, _ json: JSONValue) async {
        let topic = configuration.topics.response(level)
        _ = try? await client.publish(MQTTMessage(topic: topic, text: json.encoded(), qos: .atLeastOnce))
        eventSink.yield(.answered(topic: topic, response: json))
    }

    /// Connects, one attempt at a time (a controller makes one connection at a time: the requests' and the sensors'
    /// attempts wait for each other).
    func connect(_ found: DiscoveredPeripheral, timeout: Duration) async throws -> RemotePeripheral {
        await withCheckedContinuation { turn in
            if connectGate.acquire(or: turn) { turn.resume() }
        }
        defer { connectGate.release()?.resume() }
        return try await central.connect(found, timeout: timeout)
    }

    /// Maps the stack's errors to a request's error.
    static func gatewayError(_ error: any Error) -> GatewayError {
        switch error {
        case let e as GatewayError: return e
        case let e as GATTError:
            if let code = e.code.attError { return GatewayError.attError(code.rawValue, e.reason) }
            switch e.code {
            case .timeout: return GatewayError(.timeout, e.reason)
            case .disconnected: return GatewayError(.notConnected, e.reason)
            default: return GatewayError(.protocolError, e.reason)
            }
        case let e as HostError:
            // By category: timed out (a command or a connection), refused or malformed (a status, a response).
            if e.code == .notConnected { return GatewayError(.notConnected, e.reason) }
            switch e.category {
            case .timedOut: return GatewayError(.timeout, e.reason)
            case .protocolError where e.code.opcode != nil || e.code.hciStatus != nil: return GatewayError(.protocolError, e.reason)
            default: return GatewayError(.failed, e.reason)
            }
        case let e as SecurityError:
            switch e.code {
            case .timedOut: return GatewayError(.timeout, e.reason)
            case .disconnected: return GatewayError(.notConnected, e.reason)
            default: return GatewayError(.protocolError, e.reason)
            }
        case let e as any BLEError: return GatewayError(.failed, e.reason)
        default: return GatewayError(.failed, "\(error)")
        }
    }

    /// The device a request names: by address, else by advertised name, waiting for the scan to hear it.
    func find(_ device: String, timeout: Duration) async throws -> DiscoveredPeripheral {
        let deadline = clock.now + timeout
        while true {
            if let found = devices.find(device) { return found }
            guard clock.now < deadline else { throw GatewayError(.notFound, "no device '\(device)' heard within \(timeout)") }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    func link(_ device: String, timeout: Duration, connecting: Bool = true) async throws -> (BluetoothAddress, Link) {
        if let address = BluetoothAddress(device), let link = links[address], case .connected = await link.peripheral.state { return (address, link) }
        for (address, link) in links where devices.report(of: address)?.name == device {
            if case .connected = await link.peripheral.state { return (address, link) }
        }
        guard connecting else { throw GatewayError(.notConnected, "not connected to '\(device)'") }
        let found = try await find(device, timeout: timeout)
        let peripheral = try await connect(found, timeout: timeout)
        _ = try? await peripheral.exchangeMTU()
        let link = Link(peripheral: peripheral)
        links[found.address.address] = link
        return (found.address.address, link)
    }

    func characteristic(_ request: GatewayRequest, _ address: BluetoothAddress, _ link: Link) async throws -> GATTCharacteristic {
        var link = link
        if link.services == nil {
            link.services = try await link.peripheral.discoverAll()
            links[address]?.services = link.services
        }
        guard let uuid = request.characteristic else { throw GatewayError(.malformedRequest, "no characteristic") }
        for entry in link.services ?? [] where request.service == nil || entry.service.uuid == request.service {
            if let found = entry.characteristics.first(where: { $0.characteristic.uuid == uuid }) { return found.characteristic }
        }
        throw GatewayError(.notFound, "\(request.device) has no characteristic \(uuid)\(request.service.map { " in service \($0)" } ?? "")")
    }

    func perform(_ request: GatewayRequest) async throws -> [(key: String, value: JSONValue)] {
        switch request.operation {
        case .connect:
            let (address, _) = try await link(request.device, timeout: request.timeout)
            return [("device", .string(address.description))]
        case .disconnect:
            let (address, link) = try await self.link(request.device, timeout: request.timeout, connecting: false)
            for (_, task) in link.subscriptions { task.cancel() }
            links[address] = nil
            _ = try await central.disconnect(link.peripheral)
            return [("device", .string(address.description))]
        case .discover:
            let (address, link) = try await self.link(request.device, timeout: request.timeout)
            let services = try await link.peripheral.discoverAll()
            links[address]?.services = services
            return [("device", .string(address.description)), ("services", .array(services.map { entry in
                .object([("uuid", .string(entry.service.uuid.description)),
                         ("characteristics", .array(entry.characteristics.map { c in
                             .object([("uuid", .string(c.characteristic.uuid.description)),
                                      ("properties", .array(Self.propertyNames(c.characteristic.properties).map(JSONValue.string)))])
                         }))])
            }))]
        case .read:
            let (address, link) = try await self.link(request.device, timeout: request.timeout)
            let c = try await characteristic(request, address, link)
            let value = try await link.peripheral.readValue(for: c)
            var fields: [(key: String, value: JSONValue)] = [("device", .string(address.description)), ("characteristic", .string(c.uuid.description)),
                                                             ("value", .string(value.hexString()))]
            if let decoded = try? CharacteristicDecoder.decode(uuid: c.uuid, value: value) { fields.append(("decoded", .object(decoded.jsonFields))) }
            return fields
        case .write:
            let (address, link) = try await self.link(request.device, timeout: request.timeout)
            let c = try await characteristic(request, address, link)
            try await link.peripheral.writeValue(request.value ?? [], for: c, type: request.withResponse ? .withResponse : .withoutResponse)
            return [("device", .string(address.description)), ("characteristic", .string(c.uuid.description)), ("withResponse", .bool(request.withResponse))]
        case .subscribe:
            let (address, link) = try await self.link(request.device, timeout: request.timeout)
            let c = try await characteristic(request, address, link)
            let topic = configuration.topics.notifications(address.description, c.uuid)
            if link.subscriptions[c.uuid] == nil {
                let stream = try await link.peripheral.notifications(for: c)
                let client = client
                let uuid = c.uuid
                links[address]?.subscriptions[c.uuid] = Task {
                    var decoder = CharacteristicDecoder()
                    for await value in stream {
                        var fields: [(key: String, value: JSONValue)] = [("value", .string(value.hexString()))]
                        if let decoded = try? decoder.decode(uuid: uuid, value: value) { fields.append(("decoded", .object(decoded.jsonFields))) }
                        _ = try? await client.publish(MQTTMessage(topic: topic, text: JSONValue.object(fields).encoded(), qos: .atLeastOnce))
                    }
                }
            }
            return [("device", .string(address.description)), ("characteristic", .string(c.uuid.description)), ("topic", .string(topic))]
        case .unsubscribe:
            let (address, link) = try await self.link(request.device, timeout: request.timeout, connecting: false)
            let c = try await characteristic(request, address, link)
            links[address]?.subscriptions.removeValue(forKey: c.uuid)?.cancel()
            try await link.peripheral.stopNotifications(for: c)
            return [("device", .string(address.description)), ("characteristic", .string(c.uuid.description))]
        case .pair:
            let (address, link) = try await self.link(request.device, timeout: request.timeout)
            let security = try await link.peripheral.pair()
            return [("device", .string(address.description)), ("encrypted", .bool(security.isEncrypted)),
                    ("authenticated", .bool(security.isAuthenticated)), ("bonded", .bool(security.isBonded))]
        }
    }

    static func propertyNames(_ p: GATTCharacteristicProperties) -> [String] {
        var names: [String] = []
        if p.contains(.broadcast) { names.append("broadcast") }
        if p.contains(.read) { names.append("read") }
        if p.contains(.writeWithoutResponse) { names.append("writeWithoutResponse") }
        if p.contains(.write) { names.append("write") }
        if p.contains(.notify) { names.append("notify") }
        if p.contains(.indicate) { names.append("indicate") }
        if p.contains(.authenticatedSignedWrites) { names.append("authenticatedSignedWrites") }
        return names
    }
}
