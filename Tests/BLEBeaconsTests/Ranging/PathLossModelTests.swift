import BLEBeacons
import Testing

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
