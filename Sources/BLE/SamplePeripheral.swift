import BLEHost
import BLEProtocols
import BLEWire

/// A running sample device (``SampleDevice``) on the public peripheral API: what `ble serve` runs and what the
/// embedded world's devices are. Advertising restarts after each connection so several centrals can connect;
/// heart-rate notifications go out every `interval`. The lab device's test characteristics behave as
/// ``SampleDevice`` describes: a notification burst to each central that subscribes to it, numbered indications (each
/// confirmed before the next), a control point that disconnects the central writing `disconnect`, a counter computed
/// on each read, a guarded value that refuses `refuse` with an application error, and a value answered slowly.
public actor SamplePeripheral {
    /// What happened, for a log: a line of text and its fields as typed JSON values (`"event"`, a string, names what
    /// happened; handles, counts and the MTU are numbers, flags booleans, values hex strings), for example
    /// `["event": "mtu", "connection": 64, "mtu": 247]`.
    public typealias Log = @Sendable (_ text: String, _ fields: [String: JSONValue]) -> Void

    /// The peripheral manager underneath.
    public let manager: PeripheralManager
    /// The device.
    public let device: SampleDevice
    /// The advertised and GAP name.
    public let name: String
    var tasks: [Task<Void, Never>] = []
    var reads: UInt32 = 0
    var guarded: [UInt8] = Array("guarded".utf8)
    var slow: [UInt8] = Array("slow".utf8)

    /// A sample device on `adapter` (powered on); call ``start(notifyEvery:log:)``.
    public init(adapter: Adapter, device: SampleDevice, name: String? = nil) async {
        self.device = device
        self.name = name ?? device.defaultName
        manager = await PeripheralManager(adapter: adapter, deviceName: self.name)
    }

    /// A sample device on a peripheral manager (which should publish nothing else); `name` becomes its advertised
    /// and GAP device name. Call ``start(notifyEvery:log:)``.
    public init(manager: PeripheralManager, device: SampleDevice, name: String? = nil) async {
        self.device = device
        self.name = name ?? device.defaultName
        self.manager = manager
        await manager.engine.setDeviceName(self.name)
    }

    /// The JSON fields of a successful pairing.
    public static func pairedFields(_ outcome: PairingOutcome, peer: LEAddress) -> [String: JSONValue] {
        ["event": "paired", "peer": .string(peer.address.description), "method": .string(outcome.method.jsonName),
         "secure_connections": .bool(outcome.security.secureConnections), "authenticated": .bool(outcome.security.authenticated),
         "key_size": .integer(outcome.security.keySize), "bonded": .bool(outcome.bonded),
         "identity": .string(outcome.peerIdentity.address.description)]
    }

    /// Publishes the device's services, starts advertising and serving.
    public func start(notifyEvery interval: Duration = .seconds(1), log: Log? = nil) async throws {
        for service in device.services { try await manager.add(service) }
        let centrals = await manager.centralEvents()
        let requests = await manager.requests()
        let options = device.advertising(name: name)
        try await manager.startAdvertising(Advertisement(data: options.data, scanResponse: options.scanResponse, kind: .connectable),
                                           restartAfterConnection: true)
        tasks.append(Task {
            for await event in centrals {
                let entry = event.logEntry
                log?(entry.text, entry.fields)
            }
        })
        tasks.append(Task { [weak self] in
            for await request in requests {
                if case .application(let asked) = request.kind { await self?.answer(asked, log: log) } else { await self?.handle(request, log: log) }
            }
        })
        let manager = manager
        tasks.append(Task {
            var bpm: UInt8 = 60
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                bpm = bpm >= 99 ? 60 : bpm + 1
                _ = try? await manager.updateValue([0x00, bpm], for: 0x2A37)
            }
        })
    }

    private func handle(_ request: PeripheralRequest, log: Log?) {
        let link = request.central
        let manager = manager
        switch request.kind {
        case .write(let characteristic, _, let value, _):
            if let entry = request.logEntry { log?(entry.text, entry.fields) }
            if characteristic == SampleDevice.customControl, value == Array("disconnect".utf8) {
                log?("control point: disconnecting handle \(link.handle)", ["event": "disconnecting", "connection": .integer(link.handle.rawValue)])
                tasks.append(Task {
                    // After the Write Response has left (it is queued before this event is delivered).
                    try? await Task.sleep(for: .milliseconds(100))
                    _ = try? await manager.disconnect(link)
                })
            }
        case .subscription(let characteristic, _, let notify, let indicate):
            if let entry = request.logEntry { log?(entry.text, entry.fields) }
            if characteristic == SampleDevice.customBurst, notify {
                tasks.append(Task {
                    let length = await manager.maximumUpdateValueLength(for: link)
                    var sent = 0
                    for index in 0..<SampleDevice.burstCount {
                        let value = Array(SampleDevice.burstValue(index).prefix(length))
                        guard let reached = try? await manager.updateValue(value, for: SampleDevice.customBurst, onSubscribedCentrals: [link]),
                              !reached.isEmpty else { break }
                        sent += 1
                    }
                    log?("burst: \(sent) notification(s) sent to handle \(link.handle)", ["event": "burst", "connection": .integer(link.handle.rawValue), "sent": .int(sent)])
                })
            }
            if characteristic == SampleDevice.customIndicate, indicate {
                tasks.append(Task {
                    var confirmed = 0
                    for index in 0..<SampleDevice.indicationCount {
                        let value = [UInt8(truncatingIfNeeded: index), UInt8(truncatingIfNeeded: index >> 8)]
                        guard let reached = try? await manager.updateValue(value, for: SampleDevice.customIndicate, onSubscribedCentrals: [link]),
                              !reached.isEmpty else { break }
                        confirmed += 1
                    }
                    log?("indications: \(confirmed) confirmed by handle \(link.handle)",
                         ["event": "indications", "connection": .integer(link.handle.rawValue), "confirmed": .int(confirmed)])
                })
            }
        case .mtuChanged:
            if let entry = request.logEntry { log?(entry.text, entry.fields) }
        case .application:
            break   // answered by answer(_:log:)
        }
    }

    /// Answers the lab device's application characteristics.
    private func answer(_ request: AttributeRequest, log: Log?) async {
        let refusal = Array("refuse".utf8)
        switch (request.characteristic, request.kind) {
        case (SampleDevice.customCounter, .read(let offset)):
            reads &+= 1
            let value = [UInt8(truncatingIfNeeded: reads), UInt8(truncatingIfNeeded: reads >> 8),
                         UInt8(truncatingIfNeeded: reads >> 16), UInt8(truncatingIfNeeded: reads >> 24)]
            log?("counter read by handle \(request.central.handle): \(reads)", ["event": "counter", "connection": .integer(request.central.handle.rawValue), "count": .integer(reads)])
            await request.respond(with: Array(value.dropFirst(min(offset, value.count))))
        case (SampleDevice.customGuarded, .read(let offset)), (SampleDevice.customSlow, .read(let offset)):
            let value = request.characteristic == SampleDevice.customGuarded ? guarded : slow
            if offset > value.count { await request.refuse(.invalidOffset) } else { await request.respond(with: Array(value[offset...])) }
        case (SampleDevice.customGuarded, .write(let value, _)):
            if value == refusal {
                log?("guarded write refused (0x80) from handle \(request.central.handle)", ["event": "refused", "connection": .integer(request.central.handle.rawValue)])
                await request.refuse(SampleDevice.refusalError)
            } else {
                guarded = value
                await request.accept()
            }
        case (SampleDevice.customSlow, .write(let value, _)):
            slow = value
            tasks.append(Task {
                try? await Task.sleep(for: SampleDevice.slowAnswerDelay)
                await request.accept()
            })
        case (_, .preparedWrites(let parts)):
            // Assemble each value the set writes; a part writing `refuse` to the guarded value refuses the whole set.
            let database = await manager.database
            let guardedHandle = database.valueHandle(of: SampleDevice.customGuarded)
            let slowHandle = database.valueHandle(of: SampleDevice.customSlow)
            var values: [AttributeHandle: [UInt8]] = [:]
            for part in parts {
                guard part.handle == guardedHandle || part.handle == slowHandle else { return await request.refuse(.writeNotPermitted) }
                var value = values[part.handle] ?? (part.handle == guardedHandle ? guarded : slow)
                let offset = Int(part.offset)
                guard offset <= value.count else { return await request.refuse(.invalidOffset) }
                value.replaceSubrange(offset..<min(value.count, offset + part.value.count), with: part.value)
                values[part.handle] = value
            }
            if parts.contains(where: { $0.handle == guardedHandle && $0.value == refusal }) {
                log?("prepared writes refused (0x80) from handle \(request.central.handle)", ["event": "refused", "connection": .integer(request.central.handle.rawValue)])
                return await request.refuse(SampleDevice.refusalError)
            }
            if let guardedHandle, let value = values[guardedHandle] { guarded = value }
            if let slowHandle, let value = values[slowHandle] { slow = value }
            await request.accept()
        default:
            await request.refuse(.requestNotSupported)
        }
    }

    /// Stops serving (the manager's links stay up).
    public func stop() {
        for t in tasks { t.cancel() }
        tasks = []
    }
}

extension CentralEvent {
    /// The event for a log, as ``SamplePeripheral`` and `ble serve` print it: a line of text and its fields as typed
    /// JSON values (`"event"` names what happened: `connected`, `disconnected`, `passkey`, `encrypted`, `paired`,
    /// `pairing_failed`).
    public var logEntry: (text: String, fields: [String: JSONValue]) {
        switch self {
        case .connected(let c):
            ("connected: \(c.peer.address) handle \(c.handle)", ["event": "connected", "peer": .string(c.peer.address.description), "handle": .integer(c.handle.rawValue)])
        case .disconnected(let c, let reason):
            ("disconnected: handle \(c.handle), \(reason)", ["event": "disconnected", "handle": .integer(c.handle.rawValue), "reason": .string("\(reason)"),
                                                           "reason_code": .integer(reason.rawValue)])
        case .passkey(let c, let passkey):
            ("passkey for \(c.peer.address): \(Passkey.text(passkey))", ["event": "passkey", "peer": .string(c.peer.address.description), "passkey": .integer(Int(passkey))])
        case .encrypted(let c, let security, let usingBond):
            ("encrypted: \(c.peer.address), \(security.level.map { "\($0)" } ?? "")\(usingBond ? " (bonded, no pairing)" : "")",
             ["event": "encrypted", "peer": .string(c.peer.address.description), "bonded": .bool(usingBond)])
        case .paired(let c, let outcome):
            ("paired: \(c.peer.address)\(outcome.peerIdentity == c.peer ? "" : " (identity \(outcome.peerIdentity.address))"), \(outcome.method), \(outcome.security)\(outcome.bonded ? ", bonded" : "")",
             SamplePeripheral.pairedFields(outcome, peer: c.peer))
        case .pairingFailed(let c, let failure):
            ("pairing failed: \(c.peer.address), \(failure)", ["event": "pairing_failed", "peer": .string(c.peer.address.description),
                                                                 "reason": failure.reason.map { .integer(Int($0.rawValue)) } ?? .null, "error": .string("\(failure)")])
        }
    }
}

extension PeripheralRequest {
    /// The request for a log, as ``SamplePeripheral`` and `ble serve` print it: a line of text and its fields as typed
    /// JSON values. Writes to stored values (`"event":"write"`, with the attribute handle and the value in hex),
    /// subscription changes (`"subscription"`) and MTU exchanges (`"mtu"`) have one; application requests have none
    /// (what they mean is the application's to say).
    public var logEntry: (text: String, fields: [String: JSONValue])? {
        let link = central
        switch kind {
        case .write(_, let handle, let value, let withResponse):
            return ("write from handle \(link.handle) to \(handle) (\(withResponse ? "request" : "command")): \(displayed(value))",
                    ["event": "write", "connection": .integer(link.handle.rawValue), "attribute": .integer(handle.rawValue), "value": .string(value.hexString()),
                     "with_response": .bool(withResponse)])
        case .subscription(let characteristic, _, let notify, let indicate):
            return ("subscription from handle \(link.handle) to \(characteristic?.description ?? "?"): notify \(notify) indicate \(indicate)",
                    ["event": "subscription", "connection": .integer(link.handle.rawValue), "characteristic": characteristic.map { .string($0.description) } ?? .null,
                     "notify": .bool(notify), "indicate": .bool(indicate)])
        case .mtuChanged(let mtu):
            return ("MTU on handle \(link.handle): \(mtu)", ["event": "mtu", "connection": .integer(link.handle.rawValue), "mtu": .int(mtu)])
        case .application:
            return nil
        }
    }
}

/// A value as text when it is printable, else as hex.
func displayed(_ value: [UInt8]) -> String {
    let text = String(decoding: value, as: UTF8.self)
    let printable = !value.isEmpty && text.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value < 0x7F }
    return printable ? "\"\(text)\" (\(value.hexString()))" : value.hexString()
}
