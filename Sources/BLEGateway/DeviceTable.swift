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
    /// The sensors (object identifiers) announced for each device, to know without making the configs.
    private var announcedObjects: [BluetoothAddress: Set<String>] = [:]
    /// The latest report of each device by its (identity) address, for requests by address or name.
    private var seen: [BluetoothAddress: DiscoveredPeripheral] = [:]
    private var beaconMemory: [BluetoothAddress: (beacon: BeaconFrameMemory, at: Duration)] = [:]
    /// The latest record of each device the sensor scheduler watches, republished when a connected value changes.
    private var watched: [BluetoothAddress: DeviceRecord] = [:]
    private var profileValues = ProfileValues()
    /// What the last advertisement of each device made, by (identity) address: an advertisement whose data repeats
    /// the last one reuses its record (only the RSSI is new) and the record's content key, without decoding.
    private var recent: [BluetoothAddress: Recent] = [:]
    private var nextStamp: UInt64 = 1

    struct Recent {
        /// The address as text (the rate limiter's and the presence machine's key), made once per device.
        var name: String
        var report: DiscoveredPeripheral
        var identity: LEAddress?
        var record: DeviceRecord
        /// ``DeviceRecord/contentKey`` of the record whose ``DeviceRecord/stamp`` is `keyStamp`.
        var contentKey: String?
        var keyStamp: UInt64 = 0

        /// Whether `report` says what the one this entry was made from said (the RSSI and the PHY aside).
        func repeats(_ report: DiscoveredPeripheral, identity: LEAddress?) -> Bool {
            self.identity == identity && self.report.address == report.address && self.report.isConnectable == report.isConnectable
                && self.report.advertisementData == report.advertisementData
        }
    }

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
        let key = (identity ?? report.address).address
        var known = report
        known.address = identity ?? report.address
        if var entry = recent[key], entry.repeats(report, identity: identity) {
            // The same data again (most advertisements): the last record with this RSSI. The beacon memory cannot have
            // changed since (only this device's records change it), so the merge would give the same record.
            beaconMemory[key]?.at = now
            seen[key] = known
            var record = entry.record
            record.rssi = Int(report.rssi)
            let values = profileValues.values(of: key)
            if !values.isEmpty || !record.connectedValues.isEmpty {
                // Values read over a link may have changed: a record of its own.
                record.connectedValues = values
                record.stamp = nextStamp
                nextStamp &+= 1
            }
            entry.report = report
            recent[key] = entry
            return record
        }
        var record = DeviceRecord(report, identity: identity)
        // Eddystone beacons send their UID (or URL) and TLM frames in turns: a record keeps the latest of each.
        var memory = beaconMemory[key]?.beacon ?? BeaconFrameMemory()
        memory.merge(into: &record)
        beaconMemory[key] = (memory, now)
        seen[key] = known
        record.connectedValues = profileValues.values(of: key)
        record.stamp = nextStamp
        nextStamp &+= 1
        recent[key] = Recent(name: recent[key]?.name ?? key.description, report: report, identity: identity, record: record)
        return record
    }

    /// The device's address as text, as the rate limiter and the presence machine name it.
    func name(of device: BluetoothAddress) -> String { recent[device]?.name ?? device.description }

    /// Whether the table holds more devices than ``memoryLimit``: time for ``forget(now:isWatched:)``.
    var isFull: Bool { seen.count > Self.memoryLimit }

    /// Forgets the devices not heard for a minute before `now`, and the watched records of the devices `isWatched`
    /// no longer names.
    mutating func forget(now: Duration, isWatched: (BluetoothAddress) -> Bool) {
        let cutoff = now - .seconds(60)
        beaconMemory = beaconMemory.filter { $0.value.at >= cutoff }
        seen = seen.filter { beaconMemory[$0.key] != nil }
        recent = recent.filter { beaconMemory[$0.key] != nil }
        watched = watched.filter { isWatched($0.key) }
    }

    /// Keeps `record` as the latest of a device the sensor scheduler watches.
    mutating func watch(_ record: DeviceRecord) {
        watched[record.address.address] = record
    }

    /// What publishing `record` at `now` comes to: `nil` when the rate limiter holds it back.
    mutating func offer(_ record: DeviceRecord, now: Duration) -> Publication? {
        let key = record.address.address
        let device = name(of: key)
        let content: String
        if record.stamp != 0, let entry = recent[key], entry.keyStamp == record.stamp, let known = entry.contentKey {
            content = known
        } else {
            content = record.contentKey
            if record.stamp != 0, record.stamp == recent[key]?.record.stamp {
                recent[key]?.contentKey = content
                recent[key]?.keyStamp = record.stamp
            }
        }
        guard limiter.offer(device: device, content: content, now: now) != .suppressed else { return nil }
        readings &+= 1
        var discoveries: [(topic: String, payload: String)] = []
        if let discoveryPrefix {
            // The configs are made only when the record has a sensor not announced for this device yet (most records
            // of a device have the sensors of the one before).
            let objects = HomeAssistantDiscovery.quantities(of: record).map(\.objectID)
            if !objects.allSatisfy({ announcedObjects[key]?.contains($0) == true }) {
                for sensor in HomeAssistantDiscovery.sensors(for: record, topics: topics, discoveryPrefix: discoveryPrefix)
                where !announced.contains(sensor.topic) {
                    announced.insert(sensor.topic)
                    discoveries.append((sensor.topic, sensor.payload))
                }
                announcedObjects[key, default: []].formUnion(objects)
            }
        }
        return Publication(topic: topics.device(device), record: record.json(sequence: readings), discoveries: discoveries)
    }

    /// A value read or notified over a connection: the watched device's record to offer again when the value
    /// changed, else `nil`.
    mutating func sensed(_ device: BluetoothAddress, characteristic: BluetoothUUID, value: DecodedValue) -> DeviceRecord? {
        guard profileValues.update(device, characteristic: characteristic, value: value), var record = watched[device] else { return nil }
        record.connectedValues = profileValues.values(of: device)
        record.stamp = 0
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
