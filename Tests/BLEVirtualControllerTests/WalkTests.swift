import BLEVirtualController
import Testing

@Suite struct WalkTests {
    @Test func parsing() {
        #expect(Walk(parsing: "1:0,5,10:4") == Walk(index: 1, waypoints: [0, 5, 10], legDuration: .seconds(4)))
        #expect(Walk(parsing: "0:2.5:0.5") == Walk(index: 0, waypoints: [2.5], legDuration: .milliseconds(500)))
        for bad in ["", "1", "1:0,5", "x:0,5:1", "-1:0,5:1", "1::1", "1:0,,5:1", "1:0,5:0", "1:0,5:-2", "1:0,nan:1", "1:0,5:1:2"] {
            #expect(Walk(parsing: bad) == nil, "\(bad)")
        }
    }

    @Test func theWalkerMovesLegByLegThenStays() {
        let walk = Walk(index: 1, waypoints: [0, 10, 4], legDuration: .seconds(2))
        #expect(walk.duration == .seconds(4))
        #expect(walk.x(after: .zero) == 0)
        #expect(walk.x(after: .seconds(1)) == 5)
        #expect(walk.x(after: .seconds(2)) == 10)
        #expect(walk.x(after: .seconds(3)) == 7)
        #expect(walk.x(after: .seconds(4)) == 4)
        #expect(walk.x(after: .seconds(60)) == 4)
        #expect(walk.x(after: .seconds(-1)) == 0)
    }

    /// Moving a controller as the walk says changes what a scanner hears: the RSSI falls as the walker leaves.
    @Test func aWalkingControllerIsHeardFainter() {
        let air = VirtualAir(clock: .manual)
        let walker = air.addController(.init(position: Position(x: 0)))
        let walk = Walk(index: 0, waypoints: [1, 20], legDuration: .seconds(10))
        walker.position = Position(x: walk.x(after: .zero))
        let near = air.radio.meanRSSI(txPower: 0, distance: walker.position.distance(to: Position(x: 0)))
        walker.position = Position(x: walk.x(after: .seconds(10)))
        let far = air.radio.meanRSSI(txPower: 0, distance: walker.position.distance(to: Position(x: 0)))
        #expect(walker.position.x == 20)
        #expect(far < near - 20, "\(near) → \(far)")
        air.shutdown()
    }
}
