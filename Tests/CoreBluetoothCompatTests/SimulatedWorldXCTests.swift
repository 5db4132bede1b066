import CoreBluetoothCompat
import Foundation
import XCTest

/// The simulated world under XCTest, as an iOS project's existing test suite would use it: an `XCTestCase` whose test
/// declares a monitor, creates the app's client in the world and advances time until the client has what it wants.
final class SimulatedWorldXCTests: XCTestCase {
    func testTheClientReadsTheSensorLocationAndHearsTheHeartRate() async throws {
        let world = SimulatedWorld()
        let monitor = SimulatedWorldTests.monitor()
        try await world.add(monitor)
        try await world.run {
            let app = HeartRateClient()
            app.start()
            let located = await world.advance(until: { app.location != nil })
            XCTAssertTrue(located, "no Body Sensor Location read")
            XCTAssertEqual(app.location, Data([0x01]))
            XCTAssertEqual(app.state, .connected)

            var subscribed = false
            for _ in 0..<100 where !subscribed {
                await world.advance(by: .milliseconds(10))
                subscribed = try await monitor.setValue(Data([0x00, 70]), for: HeartRateClient.measurement) > 0
            }
            XCTAssertTrue(subscribed, "the app never subscribed")
            let sent = try await monitor.setValue(Data([0x00, 88]), for: HeartRateClient.measurement)
            XCTAssertEqual(sent, 1)
            let heard = await world.advance(until: { app.beats.last == 88 })
            XCTAssertTrue(heard, "the notification did not reach the app")
        }
    }
}
