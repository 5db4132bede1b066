import BLEFiles
import BLEWire

/// Every simulated device of the package, by the name `ble serve --device` takes: the lab device made for testing
/// centrals, the SIG's standard devices, the tutorials' vendor devices and a BTHome sensor. Each GATT device starts its simulator on a
/// ``PeripheralManager`` of its own (it advertises as the simulator does: its name and its services' UUIDs,
/// connectable, again after each connection; the phone solicits its ANCS service instead, as a phone does), serves the simulator's database and changing values, and can log
/// what centrals do to it. The BTHome sensor only broadcasts its readings. The process's embedded world holds one of
/// each GATT device (``EmbeddedDevices``).
///
/// ```swift
/// let manager = try await PeripheralManager(.tcp(host: "127.0.0.1", port: 9100), deviceName: SimulatedDevice.glucose.defaultName)
/// let meter = try await SimulatedDevice.glucose.start(on: manager) { text, _ in print(text) }
/// ```
public enum SimulatedDevice: String, CaseIterable, Sendable {
    /// The lab device (``SampleDevice/lab``): Battery, Heart Rate, Device Information and a custom service of test
    /// characteristics.
    case lab
    /// A chest strap (``SimulatedHeartRateMonitor``): Heart Rate with sensor contact, energy and RR intervals,
    /// Battery, Device Information.
    case heartRate = "heart-rate"
    /// A battery-powered device (``SimulatedBattery``): Battery and Device Information, draining.
    case battery
    /// A blood pressure monitor (``SimulatedBloodPressureMonitor``): cuff pressures notified, results indicated.
    case bloodPressure = "blood-pressure"
    /// A health thermometer (``SimulatedThermometer``): intermediate temperatures notified, final ones indicated.
    case thermometer
    /// A weight scale (``SimulatedWeightScale`` without Body Composition): weights indicated.
    case weightScale = "weight-scale"
    /// A body composition scale (``SimulatedWeightScale``): weights and body compositions indicated.
    case bodyComposition = "body-composition"
    /// A glucose meter (``SimulatedGlucoseMeter``): stored records reported through the Record Access Control Point.
    case glucose
    /// A clock (``SimulatedClock``): Current Time, Local Time Information, Reference Time Information.
    case currentTime = "current-time"
    /// The tutorials' fitness band (``SimulatedFitnessBand``): steps and battery notified, alerts written.
    case band
    /// The tutorials' LED piano (``SimulatedLEDPiano``): key events notified, LED frames written.
    case piano
    /// The tutorials' streaming health scale (``SimulatedHealthScale``): length-prefixed frames cut into
    /// notifications.
    case scale
    /// A phone serving the Apple Notification Center Service (``SimulatedNotificationProvider``): notifications
    /// announced, their attributes served and actions performed, on an encrypted (bonded) link only.
    case phone
    /// A BTHome v2 temperature and humidity sensor (``SimulatedBTHomeSensor``): a broadcaster, not connectable,
    /// whose readings change in its advertisement's service data (0xFCD2). It publishes no service and is not one of
    /// the embedded world's residents (``EmbeddedDevices``).
    case bthome

    /// The name it advertises unless told otherwise (its simulator's).
    public var defaultName: String {
        switch self {
        case .lab: SampleDevice.lab.defaultName
        case .heartRate: SimulatedHeartRateMonitor.defaultName
        case .battery: SimulatedBattery.defaultName
        case .bloodPressure: SimulatedBloodPressureMonitor.defaultName
        case .thermometer: SimulatedThermometer.defaultName
        case .weightScale: SimulatedWeightScale.defaultName
        case .bodyComposition: SimulatedWeightScale.bodyCompositionName
        case .glucose: SimulatedGlucoseMeter.defaultName
        case .currentTime: SimulatedClock.defaultName
        case .band: SimulatedFitnessBand.defaultName
        case .piano: SimulatedLEDPiano.defaultName
        case .scale: SimulatedHealthScale.defaultName
        case .phone: SimulatedNotificationProvider.defaultName
        case .bthome: SimulatedBTHomeSensor.defaultName
        }
    }

    /// What it does, in a few words (a line of a command's help).
    public var summary: String {
        switch self {
        case .lab: "Battery, Heart Rate, DIS, test characteristics"
        case .heartRate: "heart rate, contact, energy, RR each second"
        case .battery: "Battery level draining, Device Information"
        case .bloodPressure: "cuff pressure notified, results indicated"
        case .thermometer: "temperatures notified and indicated"
        case .weightScale: "weight, BMI and height indicated"
        case .bodyComposition: "weight and body composition indicated"
        case .glucose: "stored records through the RACP (0x2A52)"
        case .currentTime: "Current Time, local and reference time"
        case .band: "steps and battery notified, alert level"
        case .piano: "MIDI key events notified, LED frames written"
        case .scale: "framed readings cut into notifications"
        case .phone: "ANCS notifications (pairing required)"
        case .bthome: "BTHome v2 readings advertised (0xFCD2)"
        }
    }

    /// How often its values change by default (the simulator's tick; the lab device's heart-rate interval).
    public var defaultTick: Duration {
        switch self {
        case .piano: .milliseconds(250)
        case .scale: .milliseconds(200)
        case .band, .battery: .milliseconds(500)
        default: .seconds(1)
        }
    }

    /// The primary services it publishes (after the GAP and GATT services), in order.
    public var services: [BluetoothUUID] {
        switch self {
        case .lab: [BatteryService.uuid, HeartRateService.uuid, DeviceInformationService.uuid, SampleDevice.customService]
        case .heartRate: [HeartRateService.uuid, BatteryService.uuid, DeviceInformationService.uuid]
        case .battery: [BatteryService.uuid, DeviceInformationService.uuid]
        case .bloodPressure: [BloodPressureService.uuid, DeviceInformationService.uuid]
        case .thermometer: [HealthThermometerService.uuid, DeviceInformationService.uuid]
        case .weightScale: [WeightScaleService.uuid, DeviceInformationService.uuid]
        case .bodyComposition: [WeightScaleService.uuid, BodyCompositionService.uuid, DeviceInformationService.uuid]
        case .glucose: [GlucoseService.uuid, DeviceInformationService.uuid]
        case .currentTime: [CurrentTimeService.uuid, DeviceInformationService.uuid]
        case .band: [FitnessBand.service, FitnessBand.immediateAlertService]
        case .piano: [LEDPiano.keyService, LEDPiano.ledService]
        case .scale: [HealthScale.service]
        case .phone: [ANCS.service]
        case .bthome: []
        }
    }

    /// Starts the device on `manager` (powered on, publishing nothing else): publishes its services, advertises
    /// `name` (``defaultName`` when `nil`) and changes its values every `tick` (``defaultTick`` when `nil`).
    ///
    /// With `log`, what centrals do to it is logged as it happens: connections and disconnections, pairing,
    /// subscriptions, MTU exchanges, writes, and the requests its application answers (a Record Access Control Point
    /// request decoded, as `"event":"racp"`), each as a line of text and typed JSON fields (see
    /// ``CentralEvent/logEntry`` and ``PeripheralRequest/logEntry``).
    public func start(on manager: PeripheralManager, name: String? = nil, tick: Duration? = nil,
                      log: DeviceLog? = nil) async throws -> RunningSimulatedDevice {
        let name = name ?? defaultName
        let tick = tick ?? defaultTick
        // Opened before the simulator starts, so that nothing a central does is missed; they only watch. (The lab
        // device logs itself, its test characteristics' doings included.)
        var watchers: [Task<Void, Never>] = []
        if let log, self != .lab {
            watchers.append(Self.watchRequests(await manager.requests(), log: log))
            let events = await manager.centralEvents()
            watchers.append(Task {
                for await event in events {
                    let entry = event.logEntry
                    log(entry.text, entry.fields)
                }
            })
        }
        do {
            let (simulator, stop) = try await startSimulator(on: manager, name: name, tick: tick, log: log)
            return RunningSimulatedDevice(device: self, name: name, simulator: simulator, watchers: watchers, stop: stop)
        } catch {
            for task in watchers { task.cancel() }
            throw error
        }
    }

    /// Starts the simulator itself; returns it and how to stop it.
    private func startSimulator(on manager: PeripheralManager, name: String, tick: Duration, log: DeviceLog?) async throws
        -> (any Sendable, @Sendable () async -> Void) {
        switch self {
        case .lab:
            let lab = await SamplePeripheral(manager: manager, device: .lab, name: name)
            try await lab.start(notifyEvery: tick, entries: log)
            return (lab, { await lab.stop() })
        case .heartRate:
            let monitor = await SimulatedHeartRateMonitor(manager: manager, name: name, energyExpended: 120)
            try await monitor.start(tick: tick)
            return (monitor, { await monitor.stop() })
        case .battery:
            let battery = await SimulatedBattery(manager: manager, name: name, level: 80)
            try await battery.start(tick: tick)
            return (battery, { await battery.stop() })
        case .bloodPressure:
            let monitor = await SimulatedBloodPressureMonitor(manager: manager, name: name)
            try await monitor.start(tick: tick)
            return (monitor, { await monitor.stop() })
        case .thermometer:
            let thermometer = await SimulatedThermometer(manager: manager, name: name)
            try await thermometer.start(tick: tick)
            return (thermometer, { await thermometer.stop() })
        case .weightScale, .bodyComposition:
            let scale = await SimulatedWeightScale(manager: manager, name: name, bodyComposition: self == .bodyComposition)
            try await scale.start(tick: tick)
            return (scale, { await scale.stop() })
        case .glucose:
            let meter = await SimulatedGlucoseMeter(manager: manager, name: name)
            try await meter.start(tick: tick)
            return (meter, { await meter.stop() })
        case .currentTime:
            let clock = await SimulatedClock(manager: manager, name: name)
            try await clock.start(tick: tick)
            return (clock, { await clock.stop() })
        case .band:
            let band = await SimulatedFitnessBand(manager: manager, name: name)
            try await band.start(tick: tick)
            return (band, { await band.stop() })
        case .piano:
            let piano = await SimulatedLEDPiano(manager: manager, name: name)
            try await piano.start(tick: tick)
            return (piano, { await piano.stop() })
        case .scale:
            let scale = await SimulatedHealthScale(manager: manager, name: name)
            try await scale.start(tick: tick)
            return (scale, { await scale.stop() })
        case .phone:
            let phone = await SimulatedNotificationProvider(manager: manager, name: name)
            try await phone.start(tick: tick)
            return (phone, { await phone.stop() })
        case .bthome:
            let sensor = await SimulatedBTHomeSensor(manager: manager, name: name)
            try await sensor.start(tick: tick, log: log)
            return (sensor, { await sensor.stop() })
        }
    }

    /// Logs every request: stored writes, subscriptions and MTUs as ``PeripheralRequest/logEntry`` says, the
    /// application's reads and writes (a Record Access Control Point request decoded) here. It only watches: the
    /// simulator answers.
    private static func watchRequests(_ requests: AsyncStream<PeripheralRequest>, log: @escaping DeviceLog) -> Task<Void, Never> {
        Task {
            for await request in requests {
                if let entry = request.logEntry {
                    log(entry.text, entry.fields)
                } else if case .application(let asked) = request.kind {
                    let entry = applicationEntry(asked)
                    log(entry.text, entry.fields)
                }
            }
        }
    }

    /// A read or write the simulator's application answers, for the log.
    static func applicationEntry(_ asked: AttributeRequest) -> (text: String, fields: [String: JSONValue]) {
        let handle = asked.central.handle
        let uuid = asked.characteristic.map(\.description) ?? "?"
        switch asked.kind {
        case .read(let offset):
            return ("read from handle \(handle) of \(uuid)\(offset > 0 ? " at offset \(offset)" : "")",
                    ["event": "read", "connection": .integer(handle.rawValue), "characteristic": .string(uuid), "offset": .int(offset)])
        case .write(let value, let withResponse):
            if asked.characteristic == GlucoseService.recordAccessControlPoint {
                guard let request = try? RACPRequest(bytes: value) else {
                    return ("RACP request from handle \(handle): malformed \(value.hexString())",
                            ["event": "racp", "connection": .integer(handle.rawValue), "value": .string(value.hexString()), "error": "malformed"])
                }
                let operand = request.operand.isEmpty ? "" : ", operand \(request.operand.hexString())"
                return ("RACP request from handle \(handle): \(request.opCode), operator \(request.operator.rawValue)\(operand)",
                        ["event": "racp", "connection": .integer(handle.rawValue), "op_code": .int(Int(request.opCode.rawValue)),
                         "request": .string(request.opCode.description), "operator": .int(Int(request.operator.rawValue)),
                         "operand": .string(request.operand.hexString()), "value": .string(value.hexString())])
            }
            if asked.characteristic == ANCS.controlPoint {
                let command = (try? ANCSCommand(bytes: value)).map(\.name) ?? "malformed"
                return ("ANCS command from handle \(handle): \(command) (\(value.hexString()))",
                        ["event": "ancs", "connection": .integer(handle.rawValue), "command": .string(command), "value": .string(value.hexString())])
            }
            return ("write from handle \(handle) to \(uuid) (\(withResponse ? "request" : "command")): \(value.hexString())",
                    ["event": "write", "connection": .integer(handle.rawValue), "characteristic": .string(uuid),
                     "value": .string(value.hexString()), "with_response": .bool(withResponse)])
        case .preparedWrites(let parts):
            return ("reliable write from handle \(handle): \(parts.count) part(s)",
                    ["event": "prepared_writes", "connection": .integer(handle.rawValue), "parts": .int(parts.count)])
        }
    }

    /// The device as a resident of an embedded world: named ``defaultName``, at its place in the world's layout
    /// (the devices in a row, half a metre apart from 2 m on).
    public var resident: EmbeddedWorld.Resident {
        if self == .lab { return .lab }
        let index = Self.allCases.firstIndex(of: self) ?? 0
        return EmbeddedWorld.Resident(name: defaultName, position: Position(x: 2 + Double(index) * 0.5)) { manager in
            let running = try await self.start(on: manager)
            return { await running.stop() }
        }
    }
}

/// A ``SimulatedDevice`` running on a peripheral manager.
public struct RunningSimulatedDevice: Sendable {
    /// Which device.
    public let device: SimulatedDevice
    /// The name it advertises.
    public let name: String
    /// Its simulator (a ``SamplePeripheral``, ``SimulatedGlucoseMeter``, ``SimulatedFitnessBand``...), to look at
    /// what it did.
    public let simulator: any Sendable
    let watchers: [Task<Void, Never>]
    let stopping: @Sendable () async -> Void

    init(device: SimulatedDevice, name: String, simulator: any Sendable, watchers: [Task<Void, Never>], stop: @escaping @Sendable () async -> Void) {
        self.device = device
        self.name = name
        self.simulator = simulator
        self.watchers = watchers
        stopping = stop
    }

    /// Stops its simulator (values stop changing) and its log.
    public func stop() async {
        for task in watchers { task.cancel() }
        await stopping()
    }
}
