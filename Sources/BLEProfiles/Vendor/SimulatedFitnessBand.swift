/// A simulated fitness band on a peripheral manager (the Mi Band 1 layout, see ``FitnessBand``): its step count
/// grows by a seeded pseudo-random 1–30 steps every tick and is notified to subscribers; its battery drops by one
/// percent every 10 ticks; it records every alert written to it (for tests).
public actor SimulatedFitnessBand {
    /// The default advertised name.
    public static let defaultName = "SwiftBLE Band"

    /// The peripheral manager underneath.
    public nonisolated let manager: PeripheralManager
    /// The advertised name.
    public nonisolated let name: String
    /// The device information it serves.
    public nonisolated let deviceInfo: FitnessBandDeviceInfo
    /// The step count now.
    public private(set) var steps: UInt32 = 0
    /// The battery now.
    public private(set) var battery: FitnessBandBattery
    /// The alerts written to it, in order (a value that is neither 0–2 nor `SHAKE` is ignored and not recorded).
    public private(set) var alerts: [FitnessBandAlert] = []
    /// Whether it vibrates now (the last alert was not ``FitnessBandAlert/stop``).
    public var isVibrating: Bool { alerts.last?.vibrates ?? false }
    private var generator: SeededGenerator
    private var ticks = 0
    private var tasks: [Task<Void, Never>] = []

    /// A band on `manager` (which should publish nothing else), advertising `name`; `seed` fixes its step counts.
    /// Call ``start(tick:)``.
    public init(manager: PeripheralManager, name: String = SimulatedFitnessBand.defaultName, seed: UInt64 = 1) async {
        self.manager = manager
        self.name = name
        generator = SeededGenerator(seed: seed)
        deviceInfo = FitnessBandDeviceInfo(deviceID: [0x88, 0x0F, 0x10, 0x42, 0x05, 0x01, 0x02, 0x9A],
                                           profileVersion: 0x0100_0000, firmwareVersion: 0x0102_0304)
        battery = FitnessBandBattery(percent: 87, lastCharged: .init(year: 2026, month: 11, day: 22, hour: 20, minute: 15, second: 0),
                                     chargeCycles: 12, state: .notCharging)
    }

    /// Publishes the band's services, advertises its name and services (connectable, again after each connection)
    /// and starts counting steps every `tick`.
    public func start(tick: Duration = .seconds(1)) async throws {
        try await manager.add(GATTServiceDefinition(uuid: FitnessBand.service, characteristics: [
            GATTCharacteristicDefinition(uuid: FitnessBand.deviceInfo, properties: .read, value: deviceInfo.encoded),
            GATTCharacteristicDefinition(uuid: FitnessBand.steps, properties: [.read, .notify], value: FitnessBandSteps(steps).encoded),
            GATTCharacteristicDefinition(uuid: FitnessBand.battery, properties: [.read, .notify], value: battery.encoded),
        ]))
        try await manager.add(GATTServiceDefinition(uuid: FitnessBand.immediateAlertService, characteristics: [
            GATTCharacteristicDefinition(uuid: FitnessBand.alertLevel, properties: .writeWithoutResponse, permissions: .writeable),
        ]))
        let requests = await manager.requests()
        try await manager.startAdvertising(name: name, serviceUUIDs: [FitnessBand.service, FitnessBand.immediateAlertService],
                                           restartAfterConnection: true)
        tasks.append(Task { [weak self] in
            for await request in requests {
                if case .write(FitnessBand.alertLevel, _, let value, _) = request.kind { await self?.alerted(value) }
            }
        })
        tasks.append(Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: tick)
                guard let self, !Task.isCancelled else { return }
                await self.advance()
            }
        })
    }

    /// Stops counting and serving (links stay up; the services stay published).
    public func stop() {
        for task in tasks { task.cancel() }
        tasks = []
    }

    private func alerted(_ value: [UInt8]) {
        if let alert = try? FitnessBandAlert(bytes: value) { alerts.append(alert) }
    }

    /// One tick: more steps, and now and then less battery; both notified.
    private func advance() async {
        ticks += 1
        steps &+= UInt32(generator.next() % 30) + 1
        _ = try? await manager.updateValue(FitnessBandSteps(steps).encoded, for: FitnessBand.steps)
        if ticks % 10 == 0, battery.percent > 0 {
            battery.percent -= 1
            _ = try? await manager.updateValue(battery.encoded, for: FitnessBand.battery)
        }
    }
}
