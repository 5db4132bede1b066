import BLE
import BLEFiles
import BLEProfiles

/// Which devices a gateway connects to, to publish the values of their standard services (``ActiveSensorScheduler``).
///
/// `ble gateway --connect known|none|ADDRESS,...`; the default is ``known``.
public enum ConnectPolicy: Sendable, Hashable {
    /// Never connect: records carry only what advertisements say.
    case none
    /// Connect to connectable devices that advertise a service of ``ActiveSensorScheduler/sensedServices``.
    case known
    /// Connect to these devices only (by address; identity addresses of bonded devices), whatever they advertise.
    case addresses(Set<BluetoothAddress>)

    /// Parses `known`, `none`, or a comma-separated list of addresses; `nil` for anything else.
    public init?(argument: String) {
        switch argument {
        case "known": self = .known
        case "none": self = .none
        default:
            var addresses: Set<BluetoothAddress> = []
            for part in argument.split(separator: ",", omittingEmptySubsequences: false) {
                guard let address = BluetoothAddress(String(part)) else { return nil }
                addresses.insert(address)
            }
            guard !addresses.isEmpty else { return nil }
            self = .addresses(addresses)
        }
    }

    /// Whether a device heard with `services`, connectable or not, is one to connect to.
    public func admits(_ device: BluetoothAddress, services: [BluetoothUUID], connectable: Bool) -> Bool {
        guard connectable else { return false }
        switch self {
        case .none: return false
        case .known: return services.contains { ActiveSensorScheduler.sensedServices.contains($0) }
        case .addresses(let addresses): return addresses.contains(device)
        }
    }
}

/// Decides which devices a gateway holds links to, and when it tries again: a value type without clocks or I/O
/// (time is passed in), driven by the gateway.
///
/// - A device the ``ConnectPolicy`` admits becomes a candidate when heard (``heard(_:services:connectable:now:)``).
/// - ``due(now:)`` hands out the candidates to connect now: heard within ``Configuration/freshness``, not waiting
///   for a retry, at most ``Configuration/maximumLinks`` links (connecting or connected) at a time, the device heard
///   first served first.
/// - A failed attempt (``failed(_:refused:reason:now:)``) waits before the next: ``Configuration/firstRetry``, doubled
///   at each further failure up to ``Configuration/maximumRetry``. A device that refuses (pairing needed, its
///   database unreadable) is marked ``State/refused(until:reason:)`` and tried again after
///   ``Configuration/refusalRetry``. A link that drops (``lost(_:now:)``) is retried after the first delay.
/// - At most ``Configuration/capacity`` devices are remembered; beyond it the one heard least recently without a link
///   is forgotten.
public struct ActiveSensorScheduler: Sendable {
    /// The services the gateway reads and subscribes to (each has a client or a decoder in BLEProfiles): Heart Rate,
    /// Battery, Health Thermometer, Weight Scale, Blood Pressure, Glucose, Body Composition, Current Time, Device
    /// Information.
    public static let sensedServices: Set<BluetoothUUID> = [
        HeartRateService.uuid, BatteryService.uuid, HealthThermometerService.uuid, WeightScaleService.uuid,
        BloodPressureService.uuid, GlucoseService.uuid, BodyCompositionService.uuid, CurrentTimeService.uuid,
        DeviceInformationService.uuid,
    ]

    /// The scheduler's limits and delays.
    public struct Configuration: Sendable, Hashable {
        /// The most links held (or being made) at a time. Default 4.
        public var maximumLinks: Int
        /// The delay after a first failure or a lost link. Default 2 s.
        public var firstRetry: Duration
        /// The longest delay between attempts. Default 2 minutes.
        public var maximumRetry: Duration
        /// The delay before trying again a device that refused. Default 5 minutes.
        public var refusalRetry: Duration
        /// A candidate is connected to only if heard this recently. Default 15 s.
        public var freshness: Duration
        /// The most devices remembered. Default 1,024.
        public var capacity: Int

        /// Creates a configuration.
        public init(maximumLinks: Int = 4, firstRetry: Duration = .seconds(2), maximumRetry: Duration = .seconds(120),
                    refusalRetry: Duration = .seconds(300), freshness: Duration = .seconds(15), capacity: Int = 1024) {
            self.maximumLinks = max(0, maximumLinks)
            self.firstRetry = firstRetry
            self.maximumRetry = max(firstRetry, maximumRetry)
            self.refusalRetry = refusalRetry
            self.freshness = freshness
            self.capacity = max(1, capacity)
        }
    }

    /// Where a device stands.
    public enum State: Sendable, Hashable {
        /// Waiting for a free link.
        case waiting
        /// An attempt is under way.
        case connecting
        /// Linked.
        case connected
        /// Waiting until `until` after `failures` failed attempts in a row.
        case backingOff(until: Duration, failures: Int)
        /// It refused; tried again at `until`.
        case refused(until: Duration, reason: String)
    }

    struct Entry {
        var state: State
        var heard: Duration
        var firstHeard: Duration
        var failures: Int
    }

    /// The policy.
    public let policy: ConnectPolicy
    /// The configuration.
    public let configuration: Configuration
    private var entries: [BluetoothAddress: Entry] = [:]

    /// Creates a scheduler.
    public init(policy: ConnectPolicy, configuration: Configuration = .init()) {
        self.policy = policy
        self.configuration = configuration
    }

    /// Where `device` stands; `nil` when it is no candidate.
    public func state(of device: BluetoothAddress) -> State? { entries[device]?.state }

    /// The links held or being made.
    public var linkCount: Int { entries.values.count { $0.state == .connecting || $0.state == .connected } }

    /// The candidates remembered.
    public var count: Int { entries.count }

    /// A device was heard; it becomes a candidate when the policy admits it. Returns whether it is one.
    @discardableResult
    public mutating func heard(_ device: BluetoothAddress, services: [BluetoothUUID], connectable: Bool, now: Duration) -> Bool {
        if entries[device] != nil {
            entries[device]?.heard = now
            return true
        }
        guard policy.admits(device, services: services, connectable: connectable) else { return false }
        if entries.count >= configuration.capacity {
            let idle = entries.filter { $0.value.state != .connecting && $0.value.state != .connected }
            guard let oldest = idle.min(by: { $0.value.heard < $1.value.heard })?.key else { return false }
            entries.removeValue(forKey: oldest)
        }
        entries[device] = Entry(state: .waiting, heard: now, firstHeard: now, failures: 0)
        return true
    }

    /// The devices to connect to now, each marked ``State/connecting``; the caller reports the outcome with
    /// ``connected(_:)`` or ``failed(_:refused:reason:now:)``. Only devices `allowed` says yes to are handed out
    /// (the gateway allows those whose presence it holds: of a fleet, the gateway that hears a device best connects
    /// to it, and only that one).
    public mutating func due(now: Duration, allowed: (BluetoothAddress) -> Bool = { _ in true }) -> [BluetoothAddress] {
        var free = configuration.maximumLinks - linkCount
        guard free > 0 else { return [] }
        var ready: [(BluetoothAddress, Duration)] = []
        for (device, entry) in entries where now - entry.heard <= configuration.freshness && allowed(device) {
            switch entry.state {
            case .waiting: ready.append((device, entry.firstHeard))
            case .backingOff(let until, _) where now >= until: ready.append((device, entry.firstHeard))
            case .refused(let until, _) where now >= until: ready.append((device, entry.firstHeard))
            default: break
            }
        }
        ready.sort { $0.1 != $1.1 ? $0.1 < $1.1 : $0.0.description < $1.0.description }
        var result: [BluetoothAddress] = []
        for (device, _) in ready where free > 0 {
            entries[device]?.state = .connecting
            result.append(device)
            free -= 1
        }
        return result
    }

    /// The earliest time a waiting device may become due (for a caller that sleeps until then); `nil` when none waits.
    public func nextRetry() -> Duration? {
        entries.values.compactMap { entry -> Duration? in
            switch entry.state {
            case .backingOff(let until, _), .refused(let until, _): until
            default: nil
            }
        }.min()
    }

    /// The attempt succeeded: the link counts against the budget until ``lost(_:now:)``.
    public mutating func connected(_ device: BluetoothAddress) {
        guard entries[device] != nil else { return }
        entries[device]?.state = .connected
        entries[device]?.failures = 0
    }

    /// The attempt failed. A refusal (`refused`: pairing needed, the database refused) waits
    /// ``Configuration/refusalRetry``; another failure backs off. Returns when the device is tried again.
    @discardableResult
    public mutating func failed(_ device: BluetoothAddress, refused: Bool = false, reason: String = "", now: Duration) -> Duration? {
        guard var entry = entries[device] else { return nil }
        entry.failures += 1
        let until: Duration
        if refused {
            until = now + configuration.refusalRetry
            entry.state = .refused(until: until, reason: reason)
        } else {
            until = now + delay(afterFailures: entry.failures)
            entry.state = .backingOff(until: until, failures: entry.failures)
        }
        entries[device] = entry
        return until
    }

    /// A link dropped: the device is tried again after ``Configuration/firstRetry``.
    public mutating func lost(_ device: BluetoothAddress, now: Duration) {
        guard entries[device] != nil else { return }
        entries[device]?.failures = 0
        entries[device]?.state = .backingOff(until: now + configuration.firstRetry, failures: 0)
    }

    /// The delay after `failures` failures in a row: the first delay doubled each time, at most the maximum.
    public func delay(afterFailures failures: Int) -> Duration {
        var delay = configuration.firstRetry
        for _ in 1..<max(1, min(failures, 32)) {
            delay = delay * 2
            if delay >= configuration.maximumRetry { return configuration.maximumRetry }
        }
        return min(delay, configuration.maximumRetry)
    }
}

/// What the gateway does with the characteristics of a connected device: which it subscribes to, which it reads (once
/// after connecting, then every read period), and whether it asks a glucose meter for its last record.
///
/// Only characteristics of ``ActiveSensorScheduler/sensedServices`` that `CharacteristicDecoder` decodes are kept;
/// control points and the glucose records (fetched through the Record Access Control Point by `GlucoseClient`) are
/// left out. A characteristic that notifies or indicates is subscribed to, and read once too when readable (a
/// battery level's value before its first change).
public struct ActiveSensorPlan: Sendable, Hashable {
    /// One characteristic, as discovered.
    public struct Item: Sendable, Hashable {
        /// Its service.
        public var service: BluetoothUUID
        /// Its type.
        public var characteristic: BluetoothUUID
        /// Its properties.
        public var properties: GATTCharacteristicProperties

        /// Creates an item.
        public init(service: BluetoothUUID, characteristic: BluetoothUUID, properties: GATTCharacteristicProperties) {
            self.service = service
            self.characteristic = characteristic
            self.properties = properties
        }
    }

    /// The characteristics to subscribe to.
    public var subscribe: [Item] = []
    /// The characteristics read after connecting (the subscribed ones that are readable too).
    public var readOnce: [Item] = []
    /// The characteristics read after connecting and then every read period (neither notified nor indicated).
    public var poll: [Item] = []
    /// Whether the device is a glucose meter whose last record is asked for every read period.
    public var glucoseRecords = false

    /// Characteristics never read or subscribed to by the plan: control points and records handled otherwise.
    static let excluded: Set<BluetoothUUID> = [
        GlucoseService.measurement, GlucoseService.measurementContext, GlucoseService.recordAccessControlPoint,
        HeartRateService.controlPoint,
    ]

    /// The plan for a device's characteristics.
    public init(_ items: [Item]) {
        for item in items where ActiveSensorScheduler.sensedServices.contains(item.service) {
            if item.service == GlucoseService.uuid && item.characteristic == GlucoseService.recordAccessControlPoint
                && item.properties.contains(.indicate) {
                glucoseRecords = items.contains { $0.service == GlucoseService.uuid && $0.characteristic == GlucoseService.measurement }
            }
            guard !Self.excluded.contains(item.characteristic), CharacteristicDecoder.knows(item.characteristic) else { continue }
            if item.properties.contains(.notify) || item.properties.contains(.indicate) {
                subscribe.append(item)
                if item.properties.contains(.read) { readOnce.append(item) }
            } else if item.properties.contains(.read) {
                poll.append(item)
            }
        }
    }

    /// The plan for a discovered database.
    public init(services: [GATTDiscoveredService]) {
        self.init(services.flatMap { entry in
            entry.characteristics.map { Item(service: entry.service.uuid, characteristic: $0.characteristic.uuid, properties: $0.characteristic.properties) }
        })
    }

    /// Whether there is anything to do.
    public var isEmpty: Bool { subscribe.isEmpty && poll.isEmpty && readOnce.isEmpty && !glucoseRecords }
}

/// The values read from connected devices, by device and name, with change detection: a value goes out (in the
/// device's record) when it differs from the last one kept.
///
/// A value's name is its decoded type (`heart_rate_measurement`, `battery_level`, `temperature_measurement`...,
/// the `type` member of `DecodedValue.jsonFields`), except the text of Device Information strings, named after their
/// characteristic (``name(of:characteristic:)``). The value is the decoded fields without `type`.
public struct ProfileValues: Sendable {
    private var values: [BluetoothAddress: [String: JSONValue]] = [:]

    /// Creates an empty store.
    public init() {}

    /// The name a decoded value has in a record's `values` object.
    public static func name(of value: DecodedValue, characteristic: BluetoothUUID) -> String {
        switch value {
        case .text:
            return textNames[characteristic] ?? "text_\(characteristic.description)"
        case .features:
            return "features_\(characteristic.description)"
        default:
            for field in value.jsonFields where field.key == "type" {
                if case .string(let name) = field.value { return name }
            }
            return "value_\(characteristic.description)"
        }
    }

    /// The Device Information strings' names.
    static let textNames: [BluetoothUUID: String] = [
        BluetoothUUID(0x2A29): "manufacturer_name", BluetoothUUID(0x2A24): "model_number", BluetoothUUID(0x2A25): "serial_number",
        BluetoothUUID(0x2A27): "hardware_revision", BluetoothUUID(0x2A26): "firmware_revision", BluetoothUUID(0x2A28): "software_revision",
    ]

    /// A decoded value's JSON in a record: its fields without `type`.
    public static func json(of value: DecodedValue) -> JSONValue {
        .object(value.jsonFields.filter { $0.key != "type" })
    }

    /// Keeps `value` as `name` of `device`; returns whether it changed (a first value is a change).
    @discardableResult
    public mutating func update(_ device: BluetoothAddress, name: String, value: JSONValue) -> Bool {
        if values[device]?[name] == value { return false }
        values[device, default: [:]][name] = value
        return true
    }

    /// Keeps a decoded value of `characteristic`; returns whether it changed.
    @discardableResult
    public mutating func update(_ device: BluetoothAddress, characteristic: BluetoothUUID, value: DecodedValue) -> Bool {
        update(device, name: Self.name(of: value, characteristic: characteristic), value: Self.json(of: value))
    }

    /// The values of `device`, by name in alphabetical order.
    public func values(of device: BluetoothAddress) -> [(key: String, value: JSONValue)] {
        // Asked for every advertisement a gateway hears; most gateways keep no values at all.
        guard !values.isEmpty, let kept = values[device] else { return [] }
        return kept.sorted { $0.key < $1.key }.map { (key: $0.key, value: $0.value) }
    }

    /// Forgets a device's values.
    public mutating func forget(_ device: BluetoothAddress) { values[device] = nil }

    /// The devices with values.
    public var devices: [BluetoothAddress] { Array(values.keys) }
}
