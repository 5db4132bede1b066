/// How near a beacon is, in CoreLocation's classes.
public enum Proximity: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// No estimate (not heard recently).
    case unknown
    /// Within about half a metre.
    case immediate
    /// Within a few metres.
    case near
    /// Further.
    case far

    public var description: String { rawValue }
}

/// Turns distance estimates into ``Proximity`` classes with hysteresis: a beacon changes class only when its
/// distance crosses a boundary by a margin, so one standing at a boundary does not flicker between two classes.
///
/// The margin is a ratio, as the distance error of a log-distance model is: with `hysteresis` 0.25 and the near/far
/// boundary at 3 m, a near beacon becomes far beyond 3.75 m and a far beacon becomes near within 2.4 m.
public struct ProximityClassifier: Sendable, Hashable {
    /// Boundaries and margin.
    public struct Configuration: Sendable, Hashable {
        /// The immediate/near boundary, in metres.
        public var immediateLimit: Double
        /// The near/far boundary, in metres.
        public var nearLimit: Double
        /// The margin, as a fraction of the boundary (0: no hysteresis).
        public var hysteresis: Double
        /// Creates a configuration.
        public init(immediateLimit: Double = 0.5, nearLimit: Double = 3, hysteresis: Double = 0.25) {
            self.immediateLimit = immediateLimit
            self.nearLimit = nearLimit
            self.hysteresis = max(0, hysteresis)
        }

        /// The class of `distance` with the boundaries as they are (no hysteresis).
        public func plainClass(of distance: Double) -> Proximity {
            distance < immediateLimit ? .immediate : distance < nearLimit ? .near : .far
        }
    }

    /// The boundaries and margin.
    public let configuration: Configuration
    /// The current class.
    public private(set) var current: Proximity = .unknown

    /// Creates a classifier in the unknown class.
    public init(configuration: Configuration = Configuration()) { self.configuration = configuration }

    /// Classifies a new distance estimate (`nil`: no estimate, the class becomes unknown) and returns the class.
    @discardableResult
    public mutating func update(distance: Double?) -> Proximity {
        guard let distance, distance.isFinite, distance >= 0 else {
            current = .unknown
            return current
        }
        let c = configuration, widen = 1 + c.hysteresis
        // The current class's range widened by the margin on each side.
        let range: ClosedRange<Double>? = switch current {
        case .immediate: 0...(c.immediateLimit * widen)
        case .near: (c.immediateLimit / widen)...(c.nearLimit * widen)
        case .far: (c.nearLimit / widen)...Double.infinity
        case .unknown: nil
        }
        if let range, range.contains(distance) { return current }
        current = c.plainClass(of: distance)
        return current
    }

    /// Back to the unknown class.
    public mutating func reset() { current = .unknown }
}
