import BLEVirtualController
import BLEWire
import Foundation
import Testing

@Suite struct RadioModelTests {
    @Test func logDistancePathLoss() {
        let model = RadioModel()
        // Defaults: 40 dB at 1 m, exponent 2, no noise, sensitivity −100 dBm.
        #expect(model.meanRSSI(txPower: 0, distance: 1) == -40)
        #expect(abs(model.meanRSSI(txPower: 0, distance: 10) - -60) < 1e-9)
        #expect(abs(model.meanRSSI(txPower: 4, distance: 100) - -76) < 1e-9)
        // Below 0.1 m the distance is clamped (no infinite power at 0 m).
        #expect(abs(model.meanRSSI(txPower: 0, distance: 0) - -20) < 1e-9)
        let indoor = RadioModel(pathLossAt1m: 41, exponent: 3)
        #expect(abs(indoor.meanRSSI(txPower: 0, distance: 10) - -71) < 1e-9)
        #expect(Position(x: 3, y: 4).distance(to: Position()) == 5)
    }

    @Test func splitMix64MatchesTheReferenceSequence() {
        // The reference SplitMix64 (Steele, Lea, Flood 2014; Vigna's splitmix64.c) seeded with 0.
        var rng = SplitMix64(seed: 0)
        #expect(rng.next() == 0xE220_A839_7B1D_CDAF)
        #expect(rng.next() == 0x6E78_9E6A_A1B9_65F4)
        #expect(rng.next() == 0x06C4_5D18_8009_454F)
    }

    @Test func gaussianSamplesHaveUnitSpread() {
        var rng = SplitMix64(seed: 99)
        let samples = (0..<20_000).map { _ in rng.nextGaussian() }
        let mean = samples.reduce(0, +) / Double(samples.count)
        let variance = samples.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(samples.count)
        #expect(abs(mean) < 0.03)
        #expect(abs(variance - 1) < 0.05)
        #expect(samples.allSatisfy { $0.isFinite })
    }

    @Test func sensitivityIsTheEdgeOfRange() throws {
        // 0 dBm − (40 + 20·log10(d)) = −100 dBm at d = 1000 m: −99.99 dBm at 999 m, −100.01 dBm at 1001 m.
        let bench = Bench()
        let a = try bench.controller()
        let edge = try bench.controller(at: 999)
        let beyond = try bench.controller(at: 1001)
        try bench.advertise(a)
        try bench.scan(edge, active: false)
        try bench.scan(beyond, active: false)
        bench.advance(.seconds(1))
        let seen = bench.reports(try bench.drain(edge))
        #expect(!seen.isEmpty && seen.allSatisfy { $0.rssi == -100 })
        #expect(bench.reports(try bench.drain(beyond)).isEmpty)
    }

    @Test func txPowerCanChangeWhileRunning() throws {
        let bench = Bench()
        let a = try bench.controller(txPower: 0)
        let b = try bench.controller(at: 10)
        try bench.advertise(a)
        try bench.scan(b, active: false)
        bench.advance(.milliseconds(500))
        #expect(bench.reports(try bench.drain(b)).allSatisfy { $0.rssi == -60 })
        a.txPower = -8
        #expect(a.txPower == -8)
        bench.advance(.milliseconds(500))
        let reports = bench.reports(try bench.drain(b))
        #expect(!reports.isEmpty && reports.allSatisfy { $0.rssi == -68 })
        // So low that B is out of range: nothing more arrives.
        a.txPower = -45
        bench.advance(.milliseconds(500))
        #expect(bench.reports(try bench.drain(b)).isEmpty)
    }

    @Test func changingTheRadioModelReevaluatesLinks() throws {
        let bench = Bench()
        let central = try bench.controller()
        let peripheral = try bench.controller(at: 50)
        let (ch, _) = try bench.connect(central, peripheral, timeoutUnits: 0x0064)
        // A much worse environment: −40 − 40·log10(50) ≈ −108 dBm < −100 dBm.
        bench.air.radio = RadioModel(exponent: 4)
        bench.advance(.milliseconds(1010))
        #expect(bench.disconnections(try bench.drain(central)) == [.init(handle: ch, reason: .connectionTimeout)])
    }
}
