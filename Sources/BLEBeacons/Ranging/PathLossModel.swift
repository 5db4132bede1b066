#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The log-distance path-loss model: `RSSI(d) = P₁ − 10 · n · log10(d / 1 m)`, with `P₁` the measured power (the
/// RSSI at 1 m the beacon advertises) and `n` the path-loss exponent (2 in free space, 2.5–4 indoors).
public struct PathLossModel: Sendable, Hashable {
    /// The path-loss exponent n.
    public var exponent: Double

    /// Creates a model.
    public init(exponent: Double = 2) { self.exponent = max(0.1, exponent) }

    /// The distance in metres at which the mean RSSI is `rssi`, for a beacon whose RSSI at 1 m is `measuredPower`.
    public func distance(rssi: Double, measuredPower: Double) -> Double {
        pow(10, (measuredPower - rssi) / (10 * exponent))
    }

    /// The mean RSSI at `distance` metres.
    public func rssi(atDistance distance: Double, measuredPower: Double) -> Double {
        measuredPower - 10 * exponent * log10(max(distance, 0.01))
    }

    /// Half the width of the distance interval that an RSSI uncertainty of ±`sigma` dB maps to: the distance's
    /// one-sigma uncertainty, in metres.
    public func accuracy(rssi: Double, sigma: Double, measuredPower: Double) -> Double {
        (distance(rssi: rssi - sigma, measuredPower: measuredPower) - distance(rssi: rssi + sigma, measuredPower: measuredPower)) / 2
    }
}
