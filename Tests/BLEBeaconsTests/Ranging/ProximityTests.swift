import BLEBeacons
import Testing

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
