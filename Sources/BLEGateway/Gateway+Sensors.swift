import BLE
import BLEBeacons
import BLEFiles
import BLEProfiles
import MQTT

/// Active sensors: connections to the devices whose values only a connection gives, as the
/// ``ActiveSensorScheduler`` decides.
extension Gateway {
    // MARK: - Active sensors

    /// Connects, one attempt at a time, to the devices the scheduler says are due, among those whose presence this
    /// gateway holds (so that of a fleet, one gateway connects: the one that hears the device best).
    func connectForever() async {
        let me = configuration.topics.gatewayID
        while !Task.isCancelled {
            let presence = presence
            for device in scheduler.due(now: now, allowed: { presence.holder(of: $0.description) == me }) {
                if Task.isCancelled { return }
                await attempt(device)
            }
            try? await Task.sleep(for: .milliseconds(200))
        }
    }

    /// Whether an error means the device refuses us (security, or a database it will not show) rather than a
    /// transient failure.
    static func isRefusal(_ error: any Error) -> Bool {
        guard let code = (error as? GATTError)?.code.attError else { return false }
        return code == .insufficientAuthentication || code == .insufficientEncryption || code == .insufficientAuthorization
            || code == .readNotPermitted
    }

    /// Connects to a due device (or takes the link a request made), discovers it, subscribes and reads as its
    /// ``ActiveSensorPlan`` says, and follows the link until it drops.
    func attempt(_ device: BluetoothAddress) async {
        let name = device.description
        guard let found = devices.report(of: device) else {
            scheduler.failed(device, reason: "not heard", now: now)
            return
        }
        let peripheral: RemotePeripheral
        if let link = links[device], case .connected = await link.peripheral.state {
            peripheral = link.peripheral
        } else {
            do {
                peripheral = try await connect(found, timeout: .seconds(10))
            } catch {
                let again = scheduler.failed(device, reason: Self.gatewayError(error).reason, now: now)
                eventSink.yield(.sensor(device: name, state: "failed", detail: "\(Self.gatewayError(error).reason); again in \(inSeconds(again))"))
                return
            }
            links[device] = Link(peripheral: peripheral)
        }
        let services: [GATTDiscoveredService]
        do {
            services = try await peripheral.discoverAll()
            links[device]?.services = services
        } catch {
            let refused = !(error is GATTError) || Self.isRefusal(error)
            let again = scheduler.failed(device, refused: refused, reason: Self.gatewayError(error).reason, now: now)
            eventSink.yield(.sensor(device: name, state: refused ? "refused" : "failed",
                                    detail: "discovery: \(Self.gatewayError(error).reason); again in \(inSeconds(again))"))
            await release(device, peripheral)
            return
        }
        let plan = ActiveSensorPlan(services: services)
        guard !plan.isEmpty else {
            // Nothing it serves is something the gateway reads: the link is better left free.
            let again = scheduler.failed(device, refused: true, reason: "nothing to read", now: now)
            eventSink.yield(.sensor(device: name, state: "refused", detail: "no characteristic the gateway reads; again in \(inSeconds(again))"))
            await release(device, peripheral)
            return
        }
        scheduler.connected(device)
        let subscribed = plan.subscribe.map(\.characteristic.description).joined(separator: ",")
        let polled = plan.poll.map(\.characteristic.description).joined(separator: ",")
        eventSink.yield(.sensor(device: name, state: "connected",
                                detail: "subscribed [\(subscribed)], read [\(polled)]\(plan.glucoseRecords ? ", glucose records" : "")"))
        sensing[device]?.cancel()
        sensing[device] = Task { await self.sense(device, peripheral, plan, services) }
    }

    /// How long until `instant`, in whole seconds, for the log.
    func inSeconds(_ instant: Duration?) -> String {
        guard let instant else { return "?" }
        return "\(max(0, (instant - now).components.seconds)) s"
    }

    /// Runs a sensed link: subscriptions and reads each in a task of its own, until the link drops (or the gateway
    /// stops); then the scheduler is told.
    func sense(_ device: BluetoothAddress, _ peripheral: RemotePeripheral, _ plan: ActiveSensorPlan,
                       _ services: [GATTDiscoveredService]) async {
        let updates = await peripheral.stateUpdates()
        func characteristic(_ item: ActiveSensorPlan.Item) -> GATTCharacteristic? {
            services.first { $0.service.uuid == item.service }?.characteristics.first { $0.characteristic.uuid == item.characteristic }?.characteristic
        }
        let reads = plan.readOnce.compactMap(characteristic)
        let polls = plan.poll.compactMap(characteristic)
        let subscriptions = plan.subscribe.compactMap(characteristic)
        let interval = configuration.readInterval
        // The subscriptions, the reads and the link's watcher are children of this task: when the link drops (the
        // watcher returns its last state) or the gateway stops (this task is cancelled), they all end.
        let state = await withTaskGroup(of: PeripheralConnectionState?.self) { group -> PeripheralConnectionState? in
            for c in subscriptions {
                group.addTask {
                    guard let stream = try? await peripheral.notifications(for: c) else { return nil }
                    var decoder = CharacteristicDecoder()
                    for await value in stream {
                        guard let decoded = try? decoder.decode(uuid: c.uuid, value: value) else { continue }
                        await self.sensed(device, c.uuid, decoded)
                    }
                    return nil
                }
            }
            group.addTask {
                var first = true
                while !Task.isCancelled {
                    for c in (first ? reads : []) + polls {
                        guard let value = try? await peripheral.readValue(for: c),
                              let decoded = try? CharacteristicDecoder.decode(uuid: c.uuid, value: value) else { continue }
                        await self.sensed(device, c.uuid, decoded)
                    }
                    if plan.glucoseRecords, let meter = try? await GlucoseClient(peripheral: peripheral),
                       let last = try? await meter.records(.last).last {
                        await self.sensed(device, GlucoseService.measurement, .glucose(last.measurement))
                    }
                    first = false
                    try? await Task.sleep(for: interval)
                }
                return nil
            }
            group.addTask {
                var state = await peripheral.state
                if case .connected = state {
                    for await update in updates {
                        state = update
                        if case .disconnected = update { break }
                    }
                }
                return state
            }
            var last: PeripheralConnectionState?
            while let result = await group.next() {
                if let result {
                    last = result
                    break
                }
            }
            group.cancelAll()
            return last
        }
        guard !Task.isCancelled, !stopped else { return }
        scheduler.lost(device, now: now)
        if let link = links[device], link.peripheral === peripheral { links[device] = nil }
        sensing[device] = nil
        eventSink.yield(.sensor(device: device.description, state: "lost", detail: "\(state.map { "\($0)" } ?? "stopped"); again in \(configuration.sensors.firstRetry.components.seconds) s"))
    }

    /// Disconnects a link the gateway made for sensing (not one a request holds).
    func release(_ device: BluetoothAddress, _ peripheral: RemotePeripheral) async {
        if let link = links[device], link.peripheral === peripheral, link.subscriptions.isEmpty { links[device] = nil }
        _ = try? await central.disconnect(peripheral)
    }

    /// A value read or notified: kept, and the device's record published at once when it changed.
    func sensed(_ device: BluetoothAddress, _ characteristic: BluetoothUUID, _ value: DecodedValue) async {
        guard !stopped, let record = devices.sensed(device, characteristic: characteristic, value: value) else { return }
        await offer(record)
    }
}
