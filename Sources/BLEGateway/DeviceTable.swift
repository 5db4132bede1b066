import BLE
import BLEBeacons
import BLEFiles
import BLEProfiles

/// What a gateway knows of the devices it hears, and what it publishes of them: a machine with no I/O and no clock of
/// its own (the gateway passes the time in), so that every decision is tested synchronously.
///
/// Each advertisement becomes a ``DeviceRecord`` (``heard(_:identity:now:)``): the identity address when the
/// central resolved one, the latest Eddystone frames of each kind merged in, and the values the gateway read over a
/// connection. ``offer(_:now:)`` decides whether a record is published (``DeviceRateLimiter``), numbers it, and names
/// the Home Assistant sensors it announces for the first time. ``sensed(_:characteristic:value:)`` republishes a
/// watched device's record when a connected value changes.
struct DeviceTable: Sendable {
    /// A record to publish, with the discovery configurations it brings.
    struct Publication: Sendable {
        /// The device's record topic.
        var topic: String
        /// The record as published (numbered with ``DeviceTable/readings``).
        var record: JSONValue
        /// Home Assistant discovery configurations not announced before: topic and retained payload.
        var discoveries: [(topic: String, payload: String)]
    }

    let topics: GatewayTopics
    /// The Home Assistant discovery prefix, when the gateway announces sensors.
    let discoveryPrefix: String?
    private var limiter: DeviceRateLimiter
    /// The device records published (the last `seq`).
    private(set) var readings: UInt64 = 0
    /// Advertisements heard.
    private(set) var advertisements: UInt64 = 0
    private var announced: Set<String> = []
    /// The latest report of each device by its (identity) address, for requests by address or name.
    private var seen: [BluetoothAddress: DiscoveredPeripheral] = [:]
    private var beaconMemory: [BluetoothAddress: (beacon: BeaconFrameMemory, at: Duration)] = [:]
    /// The latest record of each device the sensor scheduler watches, republished when a connected value changes.
    private var watched: [BluetoothAddress: DeviceRecord] = [:]
    private var profileValues = ProfileValues()

    /// Devices remembered before ``heard(_:identity:now:)`` forgets those not heard for a minute.
    static let memoryLimit = 20_000

    init(topics: GatewayTopics, interval: Duration, discoveryPrefix: String?) {
        self.topics = topics
        self.discoveryPrefix = discoveryPrefix
        limiter = DeviceRateLimiter(interval: interval)
    }

    /// Devices the rate limiter knows (the `devices` counter).
    var deviceCount: Int { limiter.count }

    /// An advertisement heard at `now`, its advertiser resolved to `identity` when the central knows it: the
    /// device's record.
    mutating func heard(_ report: DiscoveredPeripheral, identity: LEAddress?, now: Duration) -> DeviceRecord {
        advertisements &+= 1
        var record = DeviceRecord(report, identity: identity)
        let key = record.address.address
        // Eddystone beacons send their UID (or URL) and TLM frames in turns: a record keeps the latest of each.
        var memory = beaconMemory[key]?.beacon ?? BeaconFrameMemory()
        memory.merge(into: &record)
        beaconMemory[key] = (memory, now)
        var known = report
        known.address = record.address
        seen[key] = known
        record.connectedValues = profileValues.values(of: key)
        return record
    }

    /// Whether the table holds more devices than ``memoryLimit``: time for ``forget(now:isWatched:)``.
    var isFull: Bool { seen.count > Self.memoryLimit }

    /// Forgets the devices not heard for a minute before `now`, and the watched records of the devices `isWatched`
    /// no longer names.
    mutating func forget(now: Duration, isWatched: (BluetoothAddress) -> Bool) {
        let cutoff = now - .seconds(60)
        beaconMemory = beaconMemory.filter { $0.value.at >= cutoff }
        seen = seen.filter { beaconMemory[$0.key] != nil }
        watched = watched.filter { isWatched($0.key) }
    }

    /// Keeps `record` as the latest of a device the sensor scheduler watches.
    mutating func watch(_ record: DeviceRecord) {
        watched[record.address.address] = record
    }

    /// What publishing `record` at `now` comes to: `nil` when the rate limiter holds it back.
    mutating func offer(_ record: DeviceRecord, now: Duration) -> Publication? {
        let device = record.address.address.description
        guard limiter.offer(device: device, content: record.contentKey, now: now) != .suppressed else { return nil }
        readings &+= 1
        var discoveries: [(topic: String, payload: String)] = []
        if let discoveryPrefix {
            for sensor in HomeAssistantDiscovery.sensors(for: record, topics: topics, discoveryPrefix: discoveryPrefix)
            where !announced.contains(sensor.topic) {
                announced.insert(sensor.topic)
                discoveries.append((sensor.topic, sensor.payload))
            }
        }
        return Publication(topic: topics.device(device), record: record.json(sequence: readings), discoveries: discoveries)
    }

    /// A value read or notified over a connection: the watched device's record to offer again when the value
    /// changed, else `nil`.
    mutating func sensed(_ device: BluetoothAddress, characteristic: BluetoothUUID, value: DecodedValue) -> DeviceRecord? {
        guard profileValues.update(device, characteristic: characteristic, value: value), var record = watched[device] else { return nil }
        record.connectedValues = profileValues.values(of: device)
        watched[device] = record
        return record
    }

    /// The latest report of the device at `address`.
    func report(of address: BluetoothAddress) -> DiscoveredPeripheral? { seen[address] }

    /// The device a request names: by address, else by advertised name.
    func find(_ device: String) -> DiscoveredPeripheral? {
        if let wanted = BluetoothAddress(device) { return seen[wanted] }
        return seen.values.first { $0.name == device }
    }
}

/// The gateway's requests in the order each device must see them: requests naming one device run one at a time, in
/// the order they came; requests naming different devices run side by side (a slow read on one device does not hold
/// another's). A machine: ``enqueue(_:)`` and ``finished(_:)`` say which request starts.
struct RequestQueue<Request: Sendable>: Sendable {
    private var waiting: [String: [Request]] = [:]
    private var running: Set<String> = []

    /// A request for `device` arrived: returns it when it starts now (nothing of that device runs), else keeps it.
    mutating func enqueue(_ request: Request, device: String) -> Request? {
        guard running.insert(device).inserted else {
            waiting[device, default: []].append(request)
            return nil
        }
        return request
    }

    /// The running request of `device` finished: returns the next one of that device, which starts now.
    mutating func finished(_ device: String) -> Request? {
        guard var queue = waiting[device], !queue.isEmpty else {
            running.remove(device)
            waiting[device] = nil
            return nil
        }
        let next = queue.removeFirst()
        waiting[device] = queue.isEmpty ? nil : queue
        return next
    }

    /// Devices with a request running.
    var busyDevices: Int { running.count }
    /// Requests waiting for the one before them.
    var waitingCount: Int { waiting.values.reduce(0) { $0 + $1.count } }
}

/// One connection attempt at a time (a controller initiates one connection at a time: the requests' and the sensors'
/// attempts wait for each other), first come first served. A machine over whatever a waiter is (a continuation).
struct ConnectGate<Waiter: Sendable>: Sendable {
    private var busy = false
    private var waiters: [Waiter] = []

    /// An attempt wants to start: `true` when it may at once, else `waiter` is kept until ``release()`` hands it the
    /// turn.
    mutating func acquire(or waiter: Waiter) -> Bool {
        guard busy else {
            busy = true
            return true
        }
        waiters.append(waiter)
        return false
    }

    /// The attempt ended: the next waiter, whose turn it now is, if any.
    mutating func release() -> Waiter? {
        guard !waiters.isEmpty else {
            busy = false
            return nil
        }
        return waiters.removeFirst()
    }
}
