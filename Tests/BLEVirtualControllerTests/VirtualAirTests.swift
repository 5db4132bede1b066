@testable import BLEVirtualController
import BLEWire
import Testing

@Suite struct VirtualAirTests {
    @Test func advanceMovesTheClockExactly() {
        let air = VirtualAir(clock: .manual)
        #expect(air.now == .zero)
        air.advance(by: .milliseconds(1500))
        #expect(air.now == .milliseconds(1500))
        air.advance(by: .nanoseconds(7))
        #expect(air.now == .nanoseconds(1_500_000_007))
        // Negative durations do not move time backwards.
        air.advance(by: .seconds(-3))
        #expect(air.now == .nanoseconds(1_500_000_007))
    }

    @Test func runUntilIdleStopsWhenNothingIsScheduled() throws {
        let bench = Bench()
        let central = try bench.controller()
        let peripheral = try bench.controller(at: 1)
        let (ch, _) = try bench.connect(central, peripheral, timeoutUnits: 0x0064)
        // Connected and nobody advertises: nothing is scheduled, so the air is idle at once and time stays put.
        let before = bench.air.now
        #expect(bench.air.runUntilIdle(limit: .seconds(10)))
        #expect(bench.air.now == before)
        // Out of range: the supervision timeout is the only event; running until idle fires it and stops there.
        peripheral.position = Position(x: 5000)
        #expect(bench.air.runUntilIdle(limit: .seconds(10)))
        #expect(bench.air.now == before + .seconds(1))
        #expect(bench.disconnections(try bench.drain(central)) == [.init(handle: ch, reason: .connectionTimeout)])
    }

    @Test func runUntilIdleHonoursItsLimit() throws {
        let bench = Bench()
        let a = try bench.controller()
        try bench.advertise(a)
        // Advertising never lets the queue run empty.
        #expect(!bench.air.runUntilIdle(limit: .milliseconds(750)))
        #expect(bench.air.now == .milliseconds(750))
    }

    @Test func controllersGetDistinctAddressesAndNames() {
        let air = VirtualAir()
        let a = air.addController()
        let b = air.addController()
        let named = air.addController(.init(address: BluetoothAddress(0xC0FFEE), name: "kitchen"))
        #expect(a.address != b.address)
        #expect(a.address == BluetoothAddress(0x005B_0000_0001) && b.address == BluetoothAddress(0x005B_0000_0002))
        #expect(a.name == "controller 01" && b.name == "controller 02")
        #expect(named.name == "kitchen" && named.address == BluetoothAddress(0xC0FFEE))
    }

    @Test func manualAirHasNoDriverRunning() {
        let air = VirtualAir(clock: .manual)
        air.advance(by: .seconds(1))
        // A real-time call on a manual air and the reverse are harmless no-ops.
        let rt = VirtualAir(clock: .realTime)
        defer { rt.shutdown() }
        rt.advance(by: .seconds(100))
        #expect(!rt.runUntilIdle(limit: .seconds(100)))
        #expect(rt.now < .seconds(100))
    }

    @Test(.timeLimit(.minutes(1))) func realTimeDriverStopsWhenTheAirIsReleased() async {
        weak var released: VirtualAir?
        let driver: RealTimeDriver
        do {
            let air = VirtualAir(clock: .realTime)
            released = air
            driver = air.driver
            let a = air.addController(buffered: true)
            // Keep the driver busy with advertising events.
            a.receive(fromHost: .command(HCILESetAdvertisingParameters(intervalMin: 0x20, intervalMax: 0x20).packet))
            a.receive(fromHost: .command(HCILESetAdvertisingEnable(isEnabled: true).packet))
            #expect(a.isAdvertising)
        }
        // No shutdown(): dropping the last reference ends the driver thread.
        for await _ in driver.finished {}
        #expect(released == nil)
    }

    @Test(.timeLimit(.minutes(1))) func shutdownStopsTheDriver() async {
        let air = VirtualAir(clock: .realTime)
        air.shutdown()
        for await _ in air.driver.finished {}
    }
}

@Suite struct EventQueueTests {
    @Test func ordersByTimeThenByInsertion() {
        var queue = EventQueue<String>()
        queue.schedule("c1", at: 30)
        queue.schedule("a1", at: 10)
        queue.schedule("b1", at: 20)
        queue.schedule("a2", at: 10)
        queue.schedule("c2", at: 30)
        queue.schedule("a3", at: 10)
        #expect(queue.count == 6 && queue.nextTime == 10)
        #expect(queue.popDue(notAfter: 9) == nil, "nothing is due before 10")
        var order: [String] = []
        while let (_, event) = queue.popDue(notAfter: 25) { order.append(event) }
        #expect(order == ["a1", "a2", "a3", "b1"])
        queue.schedule("c0", at: 30)
        while let (_, event) = queue.popDue(notAfter: .max) { order.append(event) }
        #expect(order == ["a1", "a2", "a3", "b1", "c1", "c2", "c0"])
        #expect(queue.isEmpty && queue.nextTime == nil)
    }

    @Test func manyEqualTimesStayFirstInFirstOut() {
        var queue = EventQueue<Int>()
        var rng = SplitMix64(seed: 3)
        var expected: [UInt64: [Int]] = [:]
        for i in 0..<500 {
            let time = rng.next() % 7
            queue.schedule(i, at: time)
            expected[time, default: []].append(i)
        }
        var popped: [UInt64: [Int]] = [:]
        var lastTime: UInt64 = 0
        while let (time, event) = queue.popDue(notAfter: .max) {
            #expect(time >= lastTime)
            lastTime = time
            popped[time, default: []].append(event)
        }
        #expect(popped == expected)
    }
}
