import Testing

#if os(Linux)
/// `heart-rate-demo`: HeartRateKit's manager on a simulated chest strap in a simulated world (Linux, where
/// `import CoreBluetooth` gives the simulated world).
@Suite(.timeLimit(.minutes(1))) struct HeartRateDemoTests {
    @Test func theManagerFindsTheStrapAndReconnectsAfterItsBatteryIsChanged() async throws {
        let demo = try DemoProcess("heart-rate-demo", hci: nil)
        let (status, output) = await demo.finish()
        #expect(status == 0, "\(output)")
        #expect(output.contains("connected to Chest Strap"), "\(output)")
        #expect(output.contains { $0.hasSuffix("ready (worn: wrist), 79 bpm") }, "\(output)")
        #expect(output.contains { $0.hasSuffix(": reconnecting (worn: wrist), 79 bpm") }, "\(output)")
        #expect(output.last == "reconnected 1 time(s)", "\(output)")
    }
}
#endif
