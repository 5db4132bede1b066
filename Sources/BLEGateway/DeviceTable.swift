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
        /// The record as published (numbered with ``DeviceTable/readings``): the MQTT payload, exactly the bytes of
        /// `record`'s encoding.
        var payload: [UInt8]
        /// The record as a JSON value, when ``DeviceTable/offer(_:now:makingRecord:)`` was asked for it.
        var record: JSONValue?
        /// Home Assistant discovery configurations not announced before: topic and retained payload.
        var discoveries: [(topic: String, payload: String)]
    }

    let topics: GatewayTopics
    /// The Home Assistant discovery prefix, when the gateway announces sensors.
    let discoveryPrefix: String?
    /// The shortest time between two records of one device whose content did not change (``DeviceRateLimiter``'s
    /// rule, applied to each entry's memory).
    let interval: Duration
    /// The device records published (the last `seq`).
    private(set) var readings: UInt64 = 0
    /// Advertisements heard.
    private(set) var advertisements: UInt64 = 0
    private var announced: Set<String> = []
    /// The sensors (object identifiers) announced for each device, to know without making the configs.
    private var announcedObjects: [BluetoothAddress: Set<String>] = [:]
    /// What the table knows of each device heard, by (identity) address.
    private var entries: [BluetoothAddress: Entry] = [:]
    /// The latest record of each device the sensor scheduler watches, republished when a connected value changes.
    private var watched: [BluetoothAddress: DeviceRecord] = [:]
    private var profileValues = ProfileValues()
    private var nextStamp: UInt64 = 1

    /// Everything kept of one device, in one entry: an advertisement costs one look-up of its address, and one whose
    /// data repeats the last one reuses the last record (only the RSSI is new) without decoding.
    struct Entry {
        /// The address as text (the presence machine's key and the record topic's last level), made once per device.
        var name: String
        /// The device's record topic, made once per device.
        var topic: String
        /// The last report, as heard (its advertiser's address, RSSI and PHY).
        var report: DiscoveredPeripheral
        /// The identity the advertiser's address resolved to, if any.
        var identity: LEAddress?
        /// The record the last report with new data made.
        var record: DeviceRecord
        /// The latest identifying beacon frame and telemetry, carried over into records of the other kind.
        var beacon: BeaconFrameMemory
        /// When the device was last heard.
        var at: Duration
        /// The encoded content of the record stamped `content.stamp` (made when it was first offered).
        var content: Content?
        /// The last record published: its content and when (`nil` before the first).
        var published: DeviceRateLimiter.Memory<[UInt8]>?

        /// Whether `report` says what the one this entry was made from said (the RSSI and the PHY aside).
        func repeats(_ report: DiscoveredPeripheral, identity: LEAddress?) -> Bool {
            self.identity == identity && self.report.address == report.address && self.report.isConnectable == report.isConnectable
                && self.report.advertisementData == report.advertisementData
        }

        /// The last report under the device's identity address (what requests by address or name see).
        var known: DiscoveredPeripheral {
            var known = report
            known.address = identity ?? report.address
            return known
        }

        /// Runs `body` on this entry in place (called on a dictionary's element: one look-up of its key).
        mutating func modify<R>(_ body: (inout Self) -> R) -> R { body(&self) }
    }

    /// A record's content encoded (the bytes of ``DeviceRecord/contentKey``): the rate limiter's key, and the start
    /// of every payload of records with the same stamp.
    struct Content {
        var stamp: UInt64
        var bytes: [UInt8]

        init(_ record: DeviceRecord) {
            stamp = record.stamp
            bytes = JSONValue.object(record.contentFields).encodedBytes()
        }

        /// The payload of a record of this content with `signal` (its members after the content): the content's
        /// encoding with the signal's members spliced in before its closing brace, the bytes an encoding of the
        /// whole record gives, without encoding the content again.
        func payload(_ signal: [(key: String, value: JSONValue)]) -> [UInt8] {
            let tail = JSONValue.object(signal).encodedBytes()
            var payload: [UInt8] = []
            payload.reserveCapacity(bytes.count + tail.count)
            // `{content}` and `{signal}`, neither empty: `{content,signal}`.
            payload.append(contentsOf: bytes.dropLast())
            if signal.isEmpty {
                payload.append(UInt8(ascii: "}"))
            } else {
                payload.append(UInt8(ascii: ","))
                payload.append(contentsOf: tail.dropFirst())
            }
            return payload
        }
    }

    /// Devices remembered before ``heard(_:identity:now:)`` forgets those not heard for a minute.
    static let memoryLimit = 20_000

    init(topics: GatewayTopics, interval: Duration, discoveryPrefix: String?) {
        self.topics = topics
        self.discoveryPrefix = discoveryPrefix
        self.interval = interval
    }

    /// Devices the table holds (the `devices` counter).
    var deviceCount: Int { entries.count }

    /// An advertisement heard at `now`, its advertiser resolved to `identity` when the central knows it: the
    /// device's record.
    mutating func heard(_ report: DiscoveredPeripheral, identity: LEAddress?, now: Duration) -> DeviceRecord {
        hear(report, identity: identity, now: now).record
    }

    /// ``heard(_:identity:now:)``, with the device's name (its address as text, the presence machine's key) from
    /// the same look-up.
    mutating func hear(_ report: DiscoveredPeripheral, identity: LEAddress?, now: Duration) -> (record: DeviceRecord, name: String) {
        advertisements &+= 1
        let key = (identity ?? report.address).address
        let values = profileValues.values(of: key)
        let index = entries.index(forKey: key)
        if let index {
            // Read and changed in place (a copy of the entry would retain each of its members).
            let repeated: (DeviceRecord, String)? = entries.values[index].modify { entry in
                guard entry.repeats(report, identity: identity) else { return nil }
                // The same data again (most advertisements): the last record with this RSSI. The beacon memory cannot
                // have changed since (only this device's records change it), so the merge would give the same record.
                entry.at = now
                entry.report = report
                var record = entry.record
                record.rssi = Int(report.rssi)
                if !values.isEmpty || !record.connectedValues.isEmpty {
                    // Values read over a link may have changed: a record of its own.
                    record.connectedValues = values
                    record.stamp = nextStamp
                    nextStamp &+= 1
                }
                return (record, entry.name)
            }
            if let repeated { return repeated }
        }
        var record = DeviceRecord(report, identity: identity)
        record.connectedValues = values
        record.stamp = nextStamp
        nextStamp &+= 1
        if let index {
            return entries.values[index].modify { entry in
                // Eddystone beacons send their UID (or URL) and TLM frames in turns: a record keeps the latest of each.
                entry.beacon.merge(into: &record)
                entry.report = report
                entry.identity = identity
                entry.record = record
                entry.at = now
                entry.content = nil
                return (record, entry.name)
            }
        }
        var memory = BeaconFrameMemory()
        memory.merge(into: &record)
        let name = key.description
        entries[key] = Entry(name: name, topic: topics.device(name), report: report, identity: identity, record: record, beacon: memory, at: now)
        return (record, name)
    }

    /// Whether the table holds more devices than ``memoryLimit``: time for ``forget(now:isWatched:)``.
    var isFull: Bool { entries.count > Self.memoryLimit }

    /// Forgets the devices not heard for a minute before `now`, and the watched records of the devices `isWatched`
    /// no longer names.
    mutating func forget(now: Duration, isWatched: (BluetoothAddress) -> Bool) {
        let cutoff = now - .seconds(60)
        entries = entries.filter { $0.value.at >= cutoff }
        watched = watched.filter { isWatched($0.key) }
    }

    /// Keeps `record` as the latest of a device the sensor scheduler watches.
    mutating func watch(_ record: DeviceRecord) {
        watched[record.address.address] = record
    }

    /// What publishing `record` at `now` comes to: `nil` when the rate limiter holds it back. The publication's
    /// JSON value is made only when `makingRecord` (its payload always).
    mutating func offer(_ record: DeviceRecord, now: Duration, makingRecord: Bool = true) -> Publication? {
        let key = record.address.address
        let interval = interval
        let decided: (topic: String, content: Content)?
        if let index = entries.index(forKey: key) {
            decided = entries.values[index].modify { entry in
                // A record's content is made once per stamp: the repeats of an advertisement share their record's.
                let content: Content
                if record.stamp != 0, let known = entry.content, known.stamp == record.stamp {
                    content = known
                } else {
                    content = Content(record)
                    if record.stamp != 0, entry.record.stamp == record.stamp { entry.content = content }
                }
                if let verdict = entry.published?.offer(content.bytes, now: now, interval: interval) {
                    guard verdict != .suppressed else { return nil }
                } else {
                    entry.published = DeviceRateLimiter.Memory(content: content.bytes, at: now)
                }
                return (entry.topic, content)
            }
        } else {
            // A device the table does not hold (forgotten since its record was made): nothing to compare with.
            decided = (topics.device(key.description), Content(record))
        }
        guard let (topic, content) = decided else { return nil }
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
        let signal = record.signalFields(sequence: readings)
        return Publication(topic: topic, payload: content.payload(signal),
                           record: makingRecord ? .object(record.contentFields + signal) : nil, discoveries: discoveries)
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
    func report(of address: BluetoothAddress) -> DiscoveredPeripheral? { entries[address]?.known }

    /// The device a request names: by address, else by advertised name.
    func find(_ device: String) -> DiscoveredPeripheral? {
        if let wanted = BluetoothAddress(device) { return report(of: wanted) }
        return entries.values.first { $0.report.name == device }?.known
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
