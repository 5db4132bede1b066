import BLEHost
import BLEProtocols
import BLEWire

/// What a scan remembers of the devices it hears: each one's advertising data, scan response and what was last
/// reported, so that a device is reported once (and again when its merged data changes) and its scan response merges
/// with its advertisement. At most ``limit`` devices are remembered: beyond that, those heard least recently are
/// forgotten (a quarter of the table at a time), so a scan among any number of advertisers — or one address-rotating
/// device that never repeats — uses bounded memory. A forgotten device heard again is reported again, as a new one.
public struct ScanTracker: Sendable {
    struct Entry: Sendable {
        var advertisement: AdvertisingData?
        var response: AdvertisingData?
        /// The raw bytes of the last advertisement and scan response, to recognise a repeat without decoding.
        var advertisementBytes: [UInt8]?
        var responseBytes: [UInt8]?
        var connectable: Bool
        var reported: AdvertisingData?
        var lastHeard: UInt64
    }

    /// The most devices remembered.
    public let limit: Int
    /// Whether every advertisement is reported (not only a device's first, or a change).
    public let allowDuplicates: Bool
    /// A device, or one advertising set of a device (extended advertisements: the same address with several SIDs).
    struct Key: Hashable {
        var address: BluetoothAddress
        var sid: UInt8?
    }
    private var entries: [Key: Entry] = [:]
    /// The SID of each extended advertiser's latest advertisement. An extended scan response may come without ADI
    /// (SID 0xFF: AUX_SCAN_RSP need not carry one, Core 5.4, Vol 6, Part B, 2.3.2.3); it answers the scan request
    /// sent to the advertisement just heard, so it belongs to that advertisement's set.
    private var latestSID: [BluetoothAddress: UInt8] = [:]
    private var clock: UInt64 = 0
    /// Devices forgotten to stay within ``limit``.
    public private(set) var forgotten = 0

    /// Creates a tracker remembering at most `limit` devices (at least 1).
    public init(limit: Int = 4096, allowDuplicates: Bool = false) {
        self.limit = max(1, limit)
        self.allowDuplicates = allowDuplicates
    }

    /// The devices remembered now.
    public var count: Int { entries.count }

    /// Takes one advertising report and returns the device to report, if any: its advertisement merged with its
    /// scan response, once per change unless duplicates are allowed.
    public mutating func receive(_ report: AdvertisementReport) -> DiscoveredPeripheral? {
        clock &+= 1
        var sid = report.advertisingSID
        if report.isScanResponse {
            if sid == nil, !report.isLegacy { sid = latestSID[report.address.address] }
        } else {
            latestSID[report.address.address] = sid
        }
        let address = Key(address: report.address.address, sid: sid)
        var entry = entries[address] ?? Entry(connectable: report.isConnectable, lastHeard: clock)
        // A repeat of what this device sent last (most reports of a scan): nothing to merge or compare.
        let repeated = report.isScanResponse ? entry.responseBytes == report.rawData
            : entry.advertisementBytes == report.rawData && entry.connectable == report.isConnectable
        if repeated, entry.reported != nil {
            entry.lastHeard = clock
            entries[address] = entry
            guard allowDuplicates, let reported = entry.reported else { return nil }
            var discovered = DiscoveredPeripheral(address: report.address, advertisementData: reported, rssi: report.rssi,
                                                  isConnectable: entry.connectable, from: report)
            discovered.advertisingSID = sid
            return discovered
        }
        if report.isScanResponse {
            entry.responseBytes = report.rawData
            entry.response = report.data
        } else {
            entry.advertisementBytes = report.rawData
            entry.advertisement = report.data
            entry.connectable = report.isConnectable
        }
        entry.lastHeard = clock
        let merged = (entry.advertisement ?? AdvertisingData()).merged(withScanResponse: entry.response ?? AdvertisingData())
        let changed = entry.reported != merged
        entry.reported = merged
        if entries.updateValue(entry, forKey: address) == nil, entries.count > limit { forgetLeastRecent() }
        guard allowDuplicates || changed else { return nil }
        var discovered = DiscoveredPeripheral(address: report.address, advertisementData: merged, rssi: report.rssi,
                                              isConnectable: entry.connectable, from: report)
        discovered.advertisingSID = sid
        return discovered
    }

    /// Forgets the least recently heard quarter of the table (amortised: one sort per `limit / 4` new devices).
    private mutating func forgetLeastRecent() {
        let excess = entries.count - limit + max(1, limit / 4)
        let oldest = entries.sorted { $0.value.lastHeard < $1.value.lastHeard }.prefix(excess)
        for (address, _) in oldest { entries[address] = nil }
        forgotten += oldest.count
        let remembered = Set(entries.keys.map(\.address))
        latestSID = latestSID.filter { remembered.contains($0.key) }
    }
}
