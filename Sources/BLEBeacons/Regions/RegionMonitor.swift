/// The region monitoring core: entries when a matching beacon is heard, exits when none has been heard for
/// ``exitTimeout``, for any number of regions at once. A pure value driven with injected time.
public struct RegionMonitor: Sendable {
    /// How long a region stays entered after its last matching beacon (30 s by default, as beacons fade in and
    /// out while a phone is carried around).
    public let exitTimeout: Duration
    /// The monitored regions, in the order they were added.
    public private(set) var regions: [BeaconRegion]
    /// When each entered region last heard a matching beacon.
    private var lastHeard: [BeaconRegion: Duration] = [:]

    /// Creates a monitor; every region starts outside.
    public init(regions: [BeaconRegion] = [], exitTimeout: Duration = .seconds(30)) {
        self.regions = []
        self.exitTimeout = exitTimeout
        for region in regions { add(region) }
    }

    /// Starts monitoring a region (outside until a matching beacon is heard). Adding it twice does nothing.
    public mutating func add(_ region: BeaconRegion) {
        if !regions.contains(region) { regions.append(region) }
    }

    /// Stops monitoring a region (no exit event follows).
    public mutating func remove(_ region: BeaconRegion) {
        regions.removeAll { $0 == region }
        lastHeard[region] = nil
    }

    /// Whether the region is entered now.
    public func isInside(_ region: BeaconRegion) -> Bool { lastHeard[region] != nil }

    /// Records a beacon heard at `time`: the exits due before it, then an entry for each matching region that was
    /// outside.
    public mutating func observe(_ beacon: BeaconIdentifier, at time: Duration) -> [RegionEvent] {
        var events = advance(to: time)
        for region in regions where region.matches(beacon) {
            if lastHeard[region] == nil {
                events.append(RegionEvent(kind: .enter, region: region, time: time, beacon: beacon))
            }
            lastHeard[region] = max(lastHeard[region] ?? time, time)
        }
        return events
    }

    /// Moves time to `now`: the exits whose timeout ran out by then, earliest first.
    public mutating func advance(to now: Duration) -> [RegionEvent] {
        var events: [RegionEvent] = []
        for region in regions {
            guard let heard = lastHeard[region], now - heard >= exitTimeout else { continue }
            lastHeard[region] = nil
            events.append(RegionEvent(kind: .exit, region: region, time: heard + exitTimeout))
        }
        return events.sorted { $0.time < $1.time }
    }
}
