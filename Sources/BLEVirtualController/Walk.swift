/// A controller walking along the x axis: through waypoints in order, each leg taking the same time, then standing at
/// the last one. `ble controller --walk INDEX:X1,X2,...:SECONDS` moves the controller of port INDEX this way (a beacon
/// or a wearable going from room to room past gateways).
public struct Walk: Sendable, Hashable {
    /// The index of the controller that walks (the port's position in the list).
    public var index: Int
    /// The x positions it passes through, in metres.
    public var waypoints: [Double]
    /// How long each leg takes.
    public var legDuration: Duration

    /// Creates a walk; `waypoints` must not be empty.
    public init(index: Int, waypoints: [Double], legDuration: Duration) {
        self.index = index
        self.waypoints = waypoints
        self.legDuration = legDuration
    }

    /// Parses `INDEX:X1,X2,...:SECONDS` (`1:0,5,10:4`: controller 1 from x = 0 to 5 to 10 m, 4 s per leg); `nil` when
    /// it is not that.
    public init?(parsing text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, let index = Int(parts[0]), index >= 0, let seconds = Double(parts[2]), seconds.isFinite, seconds > 0 else { return nil }
        let points = parts[1].split(separator: ",", omittingEmptySubsequences: false).map { Double($0) }
        guard !points.isEmpty, points.allSatisfy({ $0?.isFinite == true }) else { return nil }
        self.init(index: index, waypoints: points.compactMap { $0 }, legDuration: .milliseconds(Int((seconds * 1000).rounded())))
    }

    /// The total time of the walk.
    public var duration: Duration { legDuration * max(0, waypoints.count - 1) }

    /// Where the walker is `elapsed` after it set off: on the straight line between the waypoints of its current leg.
    public func x(after elapsed: Duration) -> Double {
        guard let first = waypoints.first else { return 0 }
        guard waypoints.count > 1, legDuration > .zero, elapsed > .zero else { return first }
        let legs = elapsed / legDuration
        let leg = Int(legs)
        guard leg < waypoints.count - 1 else { return waypoints[waypoints.count - 1] }
        let fraction = legs - Double(leg)
        return waypoints[leg] + (waypoints[leg + 1] - waypoints[leg]) * fraction
    }
}
