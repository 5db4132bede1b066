/// One beacon in a ranging update.
public struct RangedBeacon: Sendable, Hashable {
    /// Which beacon.
    public var identifier: BeaconIdentifier
    /// Its latest frame.
    public var frame: BeaconFrame
    /// The expected RSSI at 1 m used for the distance, in dBm.
    public var measuredPower: Int
    /// The latest raw RSSI, in dBm.
    public var rssi: Int
    /// The smoothed RSSI, in dBm (`nil` when the beacon has not been heard recently).
    public var smoothedRSSI: Double?
    /// The estimated distance, in metres (`nil`: unknown).
    public var distance: Double?
    /// The one-sigma uncertainty of ``distance``, in metres (`nil`: unknown). It covers the RSSI noise the filter
    /// still sees, not an error in the path-loss exponent or the beacon's calibration.
    public var accuracy: Double?
    /// The proximity class, with hysteresis.
    public var proximity: Proximity
    /// When it was last heard (the session's time).
    public var lastSeen: Duration
    /// How many advertisements were heard since ranging began.
    public var sampleCount: Int
    /// The latest Eddystone telemetry of the device (TLM frames interleaved with its UID or URL frames), if any.
    public var telemetry: EddystoneTLM?
}

/// The ranging core: per-beacon RSSI smoothing, distance, accuracy and proximity, published at a fixed rate with
/// the nearest beacon first. A pure value driven with injected time: feed it advertisements with ``observe(_:rssi:at:)``
/// and move time with ``advance(to:)``; it has no clock of its own.
public struct BeaconRanger: Sendable {
    /// Tuning.
    public struct Configuration: Sendable, Hashable {
        /// The path-loss model (its exponent is the environment's).
        public var pathLoss: PathLossModel
        /// RSSI smoothing.
        public var filter: RSSIFilter.Configuration
        /// Proximity boundaries and hysteresis.
        public var proximity: ProximityClassifier.Configuration
        /// How often an update is published (1 s, like CoreLocation).
        public var updateInterval: Duration
        /// A beacon not heard for this long has an unknown distance and proximity (and starts afresh when heard
        /// again).
        public var staleAfter: Duration
        /// A beacon not heard for this long leaves the updates.
        public var forgetAfter: Duration

        /// Creates a configuration.
        public init(pathLoss: PathLossModel = PathLossModel(), filter: RSSIFilter.Configuration = .init(),
                    proximity: ProximityClassifier.Configuration = .init(), updateInterval: Duration = .seconds(1),
                    staleAfter: Duration = .seconds(5), forgetAfter: Duration = .seconds(30)) {
            self.pathLoss = pathLoss
            self.filter = filter
            self.proximity = proximity
            self.updateInterval = updateInterval > .zero ? updateInterval : .seconds(1)
            self.staleAfter = staleAfter
            self.forgetAfter = max(forgetAfter, staleAfter)
        }
    }

    /// One update: the time it is for and the beacons, nearest first.
    public struct Update: Sendable, Hashable {
        /// The update's time (a multiple of the update interval).
        public var time: Duration
        /// The beacons heard within the forget time, nearest first (unknown distances last).
        public var beacons: [RangedBeacon]
    }

    private struct Track: Sendable {
        var frame: BeaconFrame
        var measuredPower: Int
        var rssi: Int
        var filter: RSSIFilter
        var classifier: ProximityClassifier
        var lastSeen: Duration
        var count: Int
        var telemetry: EddystoneTLM?
    }

    /// The tuning.
    public let configuration: Configuration
    private var tracks: [BeaconIdentifier: Track] = [:]
    private var nextUpdate: Duration?

    /// Creates a ranger; updates fall on whole multiples of the update interval, the first one after the first call
    /// that carries a time.
    public init(configuration: Configuration = Configuration()) { self.configuration = configuration }

    /// Records one advertisement. Frames without an identity or a calibrated power (telemetry) are ignored.
    public mutating func observe(_ frame: BeaconFrame, rssi: Int, at time: Duration) {
        guard let identifier = frame.identifier, let measuredPower = frame.measuredPowerAt1m else { return }
        if nextUpdate == nil { nextUpdate = firstUpdate(after: time) }
        var track = tracks[identifier] ?? Track(frame: frame, measuredPower: measuredPower, rssi: rssi,
                                                filter: RSSIFilter(configuration: configuration.filter),
                                                classifier: ProximityClassifier(configuration: configuration.proximity),
                                                lastSeen: time, count: 0)
        if time - track.lastSeen > configuration.staleAfter {
            // Heard again after a long silence: the old estimate says nothing about where it is now.
            track.filter.reset()
            track.classifier.reset()
        }
        track.frame = frame
        track.measuredPower = measuredPower
        track.rssi = rssi
        track.filter.add(Double(rssi), at: time)
        track.lastSeen = max(track.lastSeen, time)
        track.count += 1
        tracks[identifier] = track
    }

    /// Records telemetry for a beacon being ranged (ignored for a beacon not heard yet): Eddystone-TLM frames carry no
    /// identity, so the caller ties them to the identity their advertiser sent last.
    public mutating func observeTelemetry(_ telemetry: EddystoneTLM, for identifier: BeaconIdentifier) {
        tracks[identifier]?.telemetry = telemetry
    }

    /// Moves time to `now` and returns the updates due on the way (usually zero or one; several when time jumped
    /// by several intervals).
    public mutating func advance(to now: Duration) -> [Update] {
        guard var due = nextUpdate else {
            nextUpdate = firstUpdate(after: now)
            return []
        }
        var updates: [Update] = []
        while due <= now {
            updates.append(update(at: due))
            due += configuration.updateInterval
        }
        nextUpdate = due
        return updates
    }

    /// The first multiple of the update interval after `time`: updates fall on whole intervals of session time, so a
    /// live ticker that wakes on those instants publishes them on time.
    private func firstUpdate(after time: Duration) -> Duration {
        let intervals = Int((time / configuration.updateInterval).rounded(.down)) + 1
        return configuration.updateInterval * intervals
    }

    /// Computes an update for `time` now, whatever the schedule (the classes move with it).
    public mutating func update(at time: Duration) -> Update {
        var beacons: [RangedBeacon] = []
        for identifier in tracks.keys.sorted() {
            guard var track = tracks[identifier] else { continue }
            // An advertisement handled just after the instant the update is for counts as heard at that instant.
            let age = max(.zero, time - track.lastSeen)
            if age > configuration.forgetAfter {
                tracks[identifier] = nil
                continue
            }
            var smoothed: Double?, distance: Double?, accuracy: Double?
            if age <= configuration.staleAfter, let estimate = track.filter.estimate {
                let power = Double(track.measuredPower)
                smoothed = estimate
                distance = configuration.pathLoss.distance(rssi: estimate, measuredPower: power)
                accuracy = configuration.pathLoss.accuracy(rssi: estimate, sigma: track.filter.variance.squareRoot(), measuredPower: power)
            }
            let proximity = track.classifier.update(distance: distance)
            tracks[identifier] = track
            beacons.append(RangedBeacon(identifier: identifier, frame: track.frame, measuredPower: track.measuredPower, rssi: track.rssi,
                                        smoothedRSSI: smoothed, distance: distance, accuracy: accuracy, proximity: proximity,
                                        lastSeen: track.lastSeen, sampleCount: track.count, telemetry: track.telemetry))
        }
        beacons.sort { a, b in
            switch (a.distance, b.distance) {
            case let (x?, y?): x != y ? x < y : a.identifier < b.identifier
            case (.some, nil): true
            case (nil, .some): false
            case (nil, nil): a.identifier < b.identifier
            }
        }
        return Update(time: time, beacons: beacons)
    }
}
