/// Smooths one beacon's RSSI: a sliding median over the latest samples, followed by a one-dimensional Kalman
/// filter on the median. Pure value; time is passed in.
///
/// The median throws away outliers (a reflection, a body in the way: single samples 10–20 dB off) without the
/// lag a long mean would add; the Kalman filter then averages the medians with a weight that depends on the time
/// since the last update, so a gap in the samples (a missed advertising event, a scanner off channel) makes the
/// next samples count more instead of being averaged with stale ones. Its variance is the filter's own estimate of
/// how well it knows the mean RSSI, which ``BeaconRanger`` turns into an accuracy.
public struct RSSIFilter: Sendable, Hashable {
    /// Tuning.
    public struct Configuration: Sendable, Hashable {
        /// How many of the latest samples the median takes.
        public var medianWindow: Int
        /// Samples older than this leave the median window whatever its size.
        public var sampleLifetime: Duration
        /// How fast the true mean RSSI may drift, in dB² per second (a random walk): larger follows a moving
        /// observer faster, smaller smooths more.
        public var processNoise: Double
        /// The variance of one median, in dB².
        public var measurementNoise: Double

        /// Creates a configuration. The defaults suit beacons advertising about every 100 ms heard through a
        /// 50 % scan duty cycle, with per-packet noise of a few dB, and an observer walking.
        public init(medianWindow: Int = 7, sampleLifetime: Duration = .seconds(3), processNoise: Double = 2,
                    measurementNoise: Double = 9) {
            self.medianWindow = max(1, medianWindow)
            self.sampleLifetime = sampleLifetime
            self.processNoise = max(0, processNoise)
            self.measurementNoise = max(0.01, measurementNoise)
        }
    }

    /// The tuning.
    public let configuration: Configuration
    private var times: [Duration] = []
    private var values: [Double] = []
    /// The smoothed RSSI in dBm (`nil` before the first sample).
    public private(set) var estimate: Double?
    /// The variance of ``estimate``, in dB².
    public private(set) var variance: Double = 0
    private var lastUpdate: Duration = .zero

    /// Creates an empty filter.
    public init(configuration: Configuration = Configuration()) { self.configuration = configuration }

    /// Adds one sample taken at `time` (times must not go backwards; an earlier time counts as `lastUpdate`).
    public mutating func add(_ rssi: Double, at time: Duration) {
        let now = max(time, lastUpdate)
        // The median window: the latest samples still young enough.
        times.append(now)
        values.append(rssi)
        while times.count > configuration.medianWindow || (times.first.map { now - $0 > configuration.sampleLifetime } ?? false) {
            times.removeFirst()
            values.removeFirst()
        }
        let median = Self.median(values) ?? rssi
        guard let previous = estimate else {
            estimate = median
            variance = configuration.measurementNoise
            lastUpdate = now
            return
        }
        // Predict: the mean may have drifted since the last update.
        let seconds = Double((now - lastUpdate).components.seconds) + Double((now - lastUpdate).components.attoseconds) / 1e18
        let predicted = variance + configuration.processNoise * seconds
        // Correct with the median.
        let gain = predicted / (predicted + configuration.measurementNoise)
        estimate = previous + gain * (median - previous)
        variance = (1 - gain) * predicted
        lastUpdate = now
    }

    /// Forgets every sample and the estimate.
    public mutating func reset() {
        times = []
        values = []
        estimate = nil
        variance = 0
    }

    /// The median of `values` (the mean of the middle two for an even count), `nil` when empty.
    static func median(_ values: [Double]) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }
}
