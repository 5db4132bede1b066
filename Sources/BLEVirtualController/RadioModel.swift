#if canImport(Glibc)
import Glibc
#endif

/// A position in metres on the simulated air.
public struct Position: Hashable, Sendable, CustomStringConvertible {
    /// East, in metres.
    public var x: Double
    /// North, in metres.
    public var y: Double
    /// Up, in metres.
    public var z: Double
    /// Creates a position.
    public init(x: Double = 0, y: Double = 0, z: Double = 0) {
        self.x = x
        self.y = y
        self.z = z
    }
    /// Distance in metres.
    public func distance(to other: Position) -> Double {
        let dx = x - other.x, dy = y - other.y, dz = z - other.z
        return (dx * dx + dy * dy + dz * dz).squareRoot()
    }
    /// The coordinates, for logs: `(x, y, z) m`.
    public var description: String { "(\(x), \(y), \(z)) m" }
}

/// The radio propagation model of the simulated air: log-distance path loss plus optional Gaussian noise.
///
/// `RSSI = txPower − (pathLossAt1m + 10 · exponent · log10(d / 1 m)) + N(0, noiseSigma)`, with distances below
/// 0.1 m clamped to 0.1 m. Receivers hear nothing weaker than ``sensitivity``.
public struct RadioModel: Sendable, Hashable {
    /// Path loss at the 1 m reference distance, in dB. The default 40 dB is free space at 2.44 GHz:
    /// 20 · log10(4π · 1 m / λ) with λ = c / 2.44 GHz ≈ 0.123 m gives 40.2 dB.
    public var pathLossAt1m: Double
    /// The path-loss exponent n (2 in free space, 2.5–4 indoors).
    public var exponent: Double
    /// Standard deviation of the per-packet Gaussian noise, in dB (0: deterministic).
    public var noiseSigma: Double
    /// The weakest signal a receiver decodes, in dBm.
    public var sensitivity: Double

    /// Creates a model.
    public init(pathLossAt1m: Double = 40, exponent: Double = 2, noiseSigma: Double = 0, sensitivity: Double = -100) {
        self.pathLossAt1m = pathLossAt1m
        self.exponent = exponent
        self.noiseSigma = noiseSigma
        self.sensitivity = sensitivity
    }

    /// The mean received power, in dBm, at `distance` metres from a transmitter of `txPower` dBm.
    public func meanRSSI(txPower: Double, distance: Double) -> Double {
        txPower - (pathLossAt1m + 10 * exponent * log10(max(distance, 0.1)))
    }
}

/// SplitMix64: a small, fast, seedable generator, so every simulated run can be replayed exactly.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64
    /// Creates a generator; the same seed gives the same sequence.
    public init(seed: UInt64) { state = seed }
    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A standard normal sample (Box–Muller).
    public mutating func nextGaussian() -> Double {
        let u1 = max(Double(next() >> 11) / Double(1 << 53), .leastNonzeroMagnitude)
        let u2 = Double(next() >> 11) / Double(1 << 53)
        return (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
    }
}
