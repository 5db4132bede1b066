import ArgumentParser
import BLE
import BLEBeacons
import BLEVirtualController
import Foundation

/// `ble demo beacons`: the museum walk on the embedded virtual air.
struct BeaconDemo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "beacons",
        abstract: "Walk through a virtual museum: three rooms, one iBeacon each; region events and the nearest exhibit.",
        discussion: """
            Three exhibits 25 m apart each advertise an iBeacon (a PeripheralManager each); an observer (a Central) \
            walks past them at 1 m/s, stopping 8 s at each. Indoor propagation (path-loss exponent 3), σ = 4 dB RSSI \
            noise with a fixed seed, −85 dBm receiver sensitivity. Every advertisement crosses HCI and the simulated \
            air; time is the air's manual clock, run --pace times faster than real time.
            """)

    @Option(help: "Simulated seconds per real second (0: as fast as possible).")
    var pace: Double = 50
    @Option(help: "The seed of the RSSI noise.")
    var seed: UInt64 = 2026

    static let uuid = BluetoothUUID("F7826DA6-4FA2-4E98-8024-BC5B71E0893E") ?? BluetoothUUID(0)
    static let rooms = [("Fossils", 0.0), ("Meteorites", 25.0), ("Minerals", 50.0)]

    /// The observer's positions every 100 ms: from 25 m before the first exhibit to 25 m past the last, 8 s at each.
    static func path() -> [Double] {
        var xs: [Double] = []
        var x = -25.0
        for (_, exhibit) in rooms + [("exit", 75.0)] {
            while x < exhibit - 1e-9 {
                x = min(exhibit, x + 0.1)
                xs.append(x)
            }
            xs += Array(repeating: exhibit, count: 80)
        }
        return xs
    }

    func say(_ time: Duration, _ x: Double, _ text: String) {
        writeLine(String(format: "[%6.1f s] x = %5.1f m  ", Double(time.components.seconds) + Double(time.components.attoseconds) / 1e18, x) + text)
    }

    func run() async throws {
        let air = VirtualAir(clock: .manual, seed: seed, radio: RadioModel(pathLossAt1m: 40, exponent: 3, noiseSigma: 4, sensitivity: -85))
        writeLine("swift-ble beacon demo: a museum with three rooms on the virtual air (seed \(seed))")
        var advertisers: [BeaconAdvertiser] = []
        var regions: [BeaconRegion] = []
        for (i, (name, x)) in Self.rooms.enumerated() {
            let minor = UInt16(i + 1)
            let controller = air.addController(.init(position: Position(x: x), txPower: -19, name: name))
            let advertiser = BeaconAdvertiser(peripheral: try await PeripheralManager(transport: controller.makeHostTransport()))
            try await advertiser.start(.iBeacon(IBeacon(proximityUUID: Self.uuid, major: 1, minor: minor, measuredPower: -59)))
            advertisers.append(advertiser)
            regions.append(BeaconRegion(name: name, uuid: Self.uuid, major: 1, minor: minor))
            writeLine("  exhibit \(name) at x = \(Int(x)) m: iBeacon \(Self.uuid.fullString) major 1 minor \(minor), every 100 ms")
        }
        let observer = air.addController(.init(position: Position(x: -25, y: 1), name: "visitor"))
        let central = try await Central(transport: observer.makeHostTransport())
        var reports = try await central.scan(allowDuplicates: true, active: false).makeAsyncIterator()
        var tracker = BeaconTracker(ranging: .init(pathLoss: PathLossModel(exponent: 3)), monitoring: regions, exitTimeout: .seconds(10))
        writeLine("  the visitor walks from x = -25 m to x = 75 m at 1 m/s, 1 m beside the exhibits; regions exit after 10 s unheard\n")

        var consumed = 0
        var nearest = "none"
        let step = Duration.milliseconds(100)
        let clock = ContinuousClock()
        let start = clock.now
        for x in Self.path() {
            observer.position = Position(x: x, y: 1)
            air.advance(by: step)
            let now = air.now
            var events: [RegionEvent] = []
            while consumed < observer.advertisingReportCount, let report = try await reports.next() {
                consumed += 1
                events += tracker.observe(report.advertisementData, rssi: Int(report.rssi), at: now)
            }
            let (updates, exits) = tracker.advance(to: now)
            for event in events + exits {
                say(event.time, x, event.kind == .enter ? "entered \(event.region.name)" : "left \(event.region.name)")
            }
            if let update = updates.last {
                let closest = update.beacons.first { $0.proximity != .unknown }
                let name = closest.flatMap { b -> String? in
                    guard case .iBeacon(_, _, let minor) = b.identifier, let room = Self.rooms.element(at: Int(minor) - 1) else { return nil }
                    return String(format: "%@ (%.1f m, %@)", room.0, b.distance ?? 0, b.proximity.rawValue)
                } ?? "none"
                // Said again when the nearest exhibit or its proximity class changes.
                let label = closest.map { "\(name.components(separatedBy: " (").first ?? name) \($0.proximity)" } ?? "none"
                if label != nearest {
                    nearest = label
                    say(update.time, x, "nearest exhibit: \(name)")
                }
            }
            if pace > 0 { try await clock.sleep(until: start + .seconds(Self.seconds(now) / pace)) }
        }
        await central.stopScan()
        await central.powerOff()
        for advertiser in advertisers {
            try await advertiser.stop()
            await advertiser.peripheral.powerOff()
        }
        writeLine("\ndone: \(consumed) advertisements crossed the virtual air and HCI in \(air.now) of simulated time.")
    }

    static func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }
}

extension Array {
    /// The element at `index`, or `nil` out of bounds.
    func element(at index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
