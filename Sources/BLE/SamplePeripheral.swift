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
    /// What the device did, for a log (`ble serve` prints each as a line of text or of JSON: see `BLEFiles`'
    /// `SamplePeripheral.Activity.logEntry`).
    public enum Activity: Sendable {
        /// A central connected, disconnected, paired or encrypted (its event, as ``PeripheralManager/centralEvents()``
        /// gives it).
        case central(CentralEvent)
        /// A central wrote a stored value, subscribed or exchanged MTUs (the request, as
        /// ``PeripheralManager/requests()`` gives it; application requests are answered and reported as below).
        case request(PeripheralRequest)
        /// The control point was told to disconnect `central`; the link ends once its Write Response has left.
        case disconnecting(HostConnection)
        /// `sent` notifications of the burst went to `central` (fewer than ``SampleDevice/burstCount`` when it left).
        case burst(HostConnection, sent: Int)
        /// `central` confirmed `confirmed` numbered indications.
        case indications(HostConnection, confirmed: Int)
        /// `central` read the counter, which is now `count`.
        case counter(HostConnection, count: UInt32)
        /// A write of `refuse` from `central` to the guarded value (directly, or in a set of prepared writes when
        /// `prepared`) was refused with ``SampleDevice/refusalError``.
        case refused(HostConnection, prepared: Bool)
    }

    /// Where the device reports its ``Activity``.
    public typealias Log = @Sendable (Activity) -> Void

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
                log?(.central(event))
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
            log?(.request(request))
            if characteristic == SampleDevice.customControl, value == Array("disconnect".utf8) {
                log?(.disconnecting(link))
                tasks.append(Task {
                    // After the Write Response has left (it is queued before this event is delivered).
                    try? await Task.sleep(for: .milliseconds(100))
                    _ = try? await manager.disconnect(link)
                })
            }
        case .subscription(let characteristic, _, let notify, let indicate):
            log?(.request(request))
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
                    log?(.burst(link, sent: sent))
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
                    log?(.indications(link, confirmed: confirmed))
                })
            }
        case .mtuChanged:
            log?(.request(request))
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
            log?(.counter(request.central, count: reads))
            await request.respond(with: Array(value.dropFirst(min(offset, value.count))))
        case (SampleDevice.customGuarded, .read(let offset)), (SampleDevice.customSlow, .read(let offset)):
            let value = request.characteristic == SampleDevice.customGuarded ? guarded : slow
            if offset > value.count { await request.refuse(.invalidOffset) } else { await request.respond(with: Array(value[offset...])) }
        case (SampleDevice.customGuarded, .write(let value, _)):
            if value == refusal {
                log?(.refused(request.central, prepared: false))
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
                log?(.refused(request.central, prepared: true))
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
