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
