import BLEBeacons
import Testing

@Suite struct RSSIFilterTests {
    @Test func aSingleOutlierBarelyMovesTheEstimate() {
        var filter = RSSIFilter()
        for i in 0..<10 { filter.add(-60, at: .milliseconds(100 * i)) }
        filter.add(-30, at: .milliseconds(1000))   // a reflection 30 dB too strong
        #expect(abs((filter.estimate ?? 0) + 60) < 0.5)
        filter.add(-60, at: .milliseconds(1100))
        #expect(abs((filter.estimate ?? 0) + 60) < 0.5)
    }

    @Test func followsAStepWithinAFewSeconds() {
        var filter = RSSIFilter()
        for i in 0..<20 { filter.add(-60, at: .milliseconds(100 * i)) }
        for i in 20..<50 { filter.add(-70, at: .milliseconds(100 * i)) }
        #expect(abs((filter.estimate ?? 0) + 70) < 1.5, "\(filter.estimate ?? 0)")
    }

    @Test func afterAGapNewSamplesCountMore() {
        var filter = RSSIFilter()
        for i in 0..<30 { filter.add(-60, at: .milliseconds(100 * i)) }
        let settled = filter.variance
        // Ten silent seconds: the old samples leave the median window and the variance grows, so three samples at
        // the new level move the estimate most of the way.
        for i in 0..<3 { filter.add(-80, at: .seconds(13) + .milliseconds(100 * i)) }
        #expect(filter.variance > settled)
        #expect((filter.estimate ?? 0) < -75, "\(filter.estimate ?? 0)")
    }

    @Test func medianOfEvenAndOddCounts() {
        var filter = RSSIFilter(configuration: .init(medianWindow: 4))
        filter.add(-50, at: .zero)
        #expect(filter.estimate == -50)
        filter.reset()
        #expect(filter.estimate == nil)
    }
}

@Suite struct PathLossModelTests {
    @Test func distances() {
        let free = PathLossModel(exponent: 2)
        #expect(abs(free.distance(rssi: -59, measuredPower: -59) - 1) < 1e-9)
        #expect(abs(free.distance(rssi: -79, measuredPower: -59) - 10) < 1e-9)
        #expect(abs(free.distance(rssi: -53, measuredPower: -59) - 0.501) < 0.001)
        let indoor = PathLossModel(exponent: 3)
        #expect(abs(indoor.distance(rssi: -89, measuredPower: -59) - 10) < 1e-9)
        #expect(abs(indoor.rssi(atDistance: 10, measuredPower: -59) + 89) < 1e-9)
        // ±2 dB at 10 m with n = 2: 7.94...12.59 m, half-width 2.32 m.
        #expect(abs(free.accuracy(rssi: -79, sigma: 2, measuredPower: -59) - 2.32) < 0.01)
    }
}

@Suite struct ProximityClassifierTests {
    @Test func classesWithHysteresis() {
        var c = ProximityClassifier()   // 0.5 m, 3 m, 25 %
        #expect(c.update(distance: nil) == .unknown)
        #expect(c.update(distance: 2.9) == .near)
        #expect(c.update(distance: 3.1) == .near)    // past 3 m but within 3.75 m
        #expect(c.update(distance: 3.7) == .near)
        #expect(c.update(distance: 3.8) == .far)
        #expect(c.update(distance: 2.5) == .far)     // within 3 m but not within 2.4 m
        #expect(c.update(distance: 2.3) == .near)
        #expect(c.update(distance: 0.45) == .near)   // the immediate boundary is 0.5 / 1.25 = 0.4 m from near
        #expect(c.update(distance: 0.39) == .immediate)
        #expect(c.update(distance: 0.6) == .immediate)
        #expect(c.update(distance: 0.7) == .near)
        #expect(c.update(distance: 10) == .far)
        #expect(c.update(distance: 0.1) == .immediate)   // a jump crosses every margin
        #expect(c.update(distance: nil) == .unknown)
        #expect(c.update(distance: 3.2) == .far)        // from unknown: plain boundaries
    }

    @Test func standingOnABoundaryDoesNotFlicker() {
        var c = ProximityClassifier()
        var changes = 0
        var last = Proximity.unknown
        // Estimates wobbling ±15 % around the 3 m boundary.
        for i in 0..<100 {
            let p = c.update(distance: 3 * (i % 2 == 0 ? 0.85 : 1.15))
            if p != last { changes += 1 }
            last = p
        }
        #expect(changes == 1)
        var plain = ProximityClassifier(configuration: .init(hysteresis: 0))
        last = .unknown
        changes = 0
        for i in 0..<100 {
            let p = plain.update(distance: 3 * (i % 2 == 0 ? 0.85 : 1.15))
            if p != last { changes += 1 }
            last = p
        }
        #expect(changes == 100)
    }
}
