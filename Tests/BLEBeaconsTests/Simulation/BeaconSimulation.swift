import BLE
import BLEBeacons
import BLEVirtualController

/// Beacons and an observer on a manual-clock virtual air, through the whole stack: each beacon is a
/// `PeripheralManager` advertising through ``BeaconAdvertiser``; the observer is a `Central` scanning passively. Time
/// moves in steps; after each step the observer reads exactly the reports its controller sent
/// (`VirtualController.advertisingReportCount`) and feeds them, stamped with the air's time, to a ``BeaconTracker``.
struct BeaconSimulation {
    /// A beacon of the plan.
    struct Placed {
        var name: String
        var position: Position
        var frame: BeaconFrame
        /// The controller's TX power: the RSSI at 1 m is `txPower − pathLossAt1m` (40 dB by default).
        var txPower: Int8
    }

    let air: VirtualAir
    let observer: VirtualController
    let central: Central
    let advertisers: [BeaconAdvertiser]
    private var reports: AsyncThrowingStream<DiscoveredPeripheral, any Error>.Iterator
    private var consumed = 0
    var tracker: BeaconTracker

    /// Builds the world and starts every beacon advertising every `interval`.
    init(radio: RadioModel, seed: UInt64, beacons: [Placed], observerAt start: Position, tracker: BeaconTracker,
         interval: Duration = .milliseconds(100)) async throws {
        air = VirtualAir(clock: .manual, seed: seed, radio: radio)
        var advertisers: [BeaconAdvertiser] = []
        for beacon in beacons {
            let controller = air.addController(.init(position: beacon.position, txPower: beacon.txPower, name: beacon.name))
            let advertiser = BeaconAdvertiser(peripheral: try await PeripheralManager(transport: controller.makeHostTransport()))
            try await advertiser.start(beacon.frame, interval: interval)
            advertisers.append(advertiser)
        }
        self.advertisers = advertisers
        observer = air.addController(.init(position: start, name: "observer"))
        central = try await Central(transport: observer.makeHostTransport())
        reports = try await central.scan(allowDuplicates: true, active: false).makeAsyncIterator()
        self.tracker = tracker
    }

    /// The air's time.
    var now: Duration { air.now }

    /// Puts the observer at `position`, lets `duration` of simulated time pass, and feeds what was heard to the
    /// tracker. Returns the ranging updates and region events that fell due.
    mutating func step(to position: Position, by duration: Duration) async throws
        -> (updates: [BeaconRanger.Update], events: [RegionEvent])
    {
        observer.position = position
        air.advance(by: duration)
        let time = air.now
        var events: [RegionEvent] = []
        while consumed < observer.advertisingReportCount {
            guard let report = try await reports.next() else { break }
            consumed += 1
            events += tracker.observe(report.advertisementData, rssi: Int(report.rssi), at: time)
        }
        let due = tracker.advance(to: time)
        return (due.updates, events + due.events)
    }
}

/// A walk: straight segments at a speed, and pauses, sampled every `step`.
struct Walk {
    enum Leg {
        case walk(to: Position, speed: Double)
        case pause(Duration)
    }
    var start: Position
    var legs: [Leg]

    /// The observer's positions, one per step.
    func positions(step: Duration) -> [Position] {
        let dt = Double(step.components.seconds) + Double(step.components.attoseconds) / 1e18
        var out: [Position] = []
        var here = start
        for leg in legs {
            switch leg {
            case .walk(let target, let speed):
                let length = here.distance(to: target)
                let steps = max(1, Int((length / (speed * dt)).rounded(.up)))
                for i in 1...steps {
                    let f = Double(i) / Double(steps)
                    out.append(Position(x: here.x + (target.x - here.x) * f, y: here.y + (target.y - here.y) * f, z: here.z))
                }
                here = target
            case .pause(let duration):
                let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
                out += Array(repeating: here, count: Int((seconds / dt).rounded()))
            }
        }
        return out
    }
}
