import BLEWire

/// Ranging and region monitoring together, fed with raw advertisements: decodes the beacon frame, keeps only the
/// beacons of the regions of interest, and drives a ``BeaconRanger`` and a ``RegionMonitor``. A pure value driven
/// with injected time, which the live wrappers and the simulations share.
public struct BeaconTracker: Sendable {
    /// The ranging core.
    public private(set) var ranger: BeaconRanger
    /// The monitoring core.
    public private(set) var monitor: RegionMonitor
    /// Range only the beacons of these regions (empty: every beacon with an identity).
    public let rangedRegions: [BeaconRegion]
    /// Advertisements whose beacon frame was malformed (skipped).
    public private(set) var malformedCount = 0
    /// The identity each advertiser sent last, to tie its telemetry frames to it.
    private var identities: [BluetoothAddress: BeaconIdentifier] = [:]

    /// Creates a tracker.
    public init(ranging configuration: BeaconRanger.Configuration = .init(), rangedRegions: [BeaconRegion] = [],
                monitoring regions: [BeaconRegion] = [], exitTimeout: Duration = .seconds(30)) {
        ranger = BeaconRanger(configuration: configuration)
        monitor = RegionMonitor(regions: regions, exitTimeout: exitTimeout)
        self.rangedRegions = rangedRegions
    }

    /// Records one advertisement heard at `time` with `rssi`; returns the region events it causes (exits that fell
    /// due first, then entries). Advertisements without a beacon frame are ignored; malformed frames are counted.
    /// With the advertiser's `address`, an Eddystone-TLM frame is attached to the identity that address sent last.
    public mutating func observe(_ data: AdvertisingData, rssi: Int, at time: Duration, from address: BluetoothAddress? = nil)
        -> [RegionEvent]
    {
        let decoded: BeaconFrame?
        do {
            decoded = try BeaconFrame(advertisingData: data)
        } catch {
            malformedCount += 1
            return []
        }
        if case .eddystone(.tlm(let telemetry)) = decoded, let address, let identifier = identities[address] {
            ranger.observeTelemetry(telemetry, for: identifier)
        }
        guard let frame = decoded, let identifier = frame.identifier else { return [] }
        if let address { identities[address] = identifier }
        if rangedRegions.isEmpty || rangedRegions.contains(where: { $0.matches(identifier) }) {
            ranger.observe(frame, rssi: rssi, at: time)
        }
        return monitor.observe(identifier, at: time)
    }

    /// Moves time to `now`: the ranging updates due and the region exits due.
    public mutating func advance(to now: Duration) -> (updates: [BeaconRanger.Update], events: [RegionEvent]) {
        (ranger.advance(to: now), monitor.advance(to: now))
    }
}
