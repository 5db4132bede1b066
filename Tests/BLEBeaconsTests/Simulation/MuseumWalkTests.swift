import BLE
import BLEBeacons
import BLEVirtualController
import Testing

/// The museum walk: three rooms 25 m apart, one iBeacon each (one region each), an observer walking through at
/// 1 m/s and stopping 8 s at each exhibit, indoor propagation (n = 3) with σ = 4 dB noise and a receiver
/// sensitivity of −85 dBm: about 7 m of range, a lucky packet now and then up to about 16 m (2 σ above the mean
/// there), none from the next room. Checks that each region is entered once on the way in and left once
/// on the way out (no flicker), and that the nearest exhibit is the one the observer stands at.
@Suite(.timeLimit(.minutes(2))) struct MuseumWalkTests {
    static let uuid = BluetoothUUID("F7826DA6-4FA2-4E98-8024-BC5B71E0893E") ?? BluetoothUUID(0)
    static let rooms = [("Fossils", 0.0), ("Meteorites", 25.0), ("Minerals", 50.0)]
    static let exitTimeout = Duration.seconds(10)

    struct Observation {
        var events: [(RegionEvent, Position)] = []
        var nearestAtPause: [String: [String]] = [:]
    }

    static func walk(seed: UInt64) async throws -> Observation {
        let radio = RadioModel(pathLossAt1m: 40, exponent: 3, noiseSigma: 4, sensitivity: -85)
        let placed = rooms.enumerated().map { i, room in
            BeaconSimulation.Placed(name: room.0, position: Position(x: room.1),
                                    frame: .iBeacon(IBeacon(proximityUUID: uuid, major: 1, minor: UInt16(i + 1), measuredPower: -59)),
                                    txPower: -19)
        }
        let regions = rooms.enumerated().map { i, room in BeaconRegion(name: room.0, uuid: uuid, major: 1, minor: UInt16(i + 1)) }
        var legs: [Walk.Leg] = []
        for room in rooms {
            legs.append(.walk(to: Position(x: room.1, y: 1), speed: 1))
            legs.append(.pause(.seconds(8)))
        }
        legs.append(.walk(to: Position(x: 75, y: 1), speed: 1))
        legs.append(.pause(.seconds(15)))
        let walk = Walk(start: Position(x: -25, y: 1), legs: legs)
        let tracker = BeaconTracker(ranging: .init(pathLoss: PathLossModel(exponent: 3)), monitoring: regions, exitTimeout: exitTimeout)
        var simulation = try await BeaconSimulation(radio: radio, seed: seed, beacons: placed, observerAt: walk.start, tracker: tracker)
        var observation = Observation()
        for position in walk.positions(step: .milliseconds(100)) {
            let (updates, events) = try await simulation.step(to: position, by: .milliseconds(100))
            observation.events += events.map { ($0, position) }
            // At an exhibit (standing within 1.5 m of it), which one the ranging says is nearest.
            if let room = rooms.first(where: { Position(x: $0.1).distance(to: position) < 1.5 }), let update = updates.last,
               let nearest = update.beacons.first(where: { $0.proximity != .unknown }),
               case .iBeacon(_, _, let minor) = nearest.identifier {
                observation.nearestAtPause[room.0, default: []].append(rooms[Int(minor) - 1].0)
            }
        }
        return observation
    }

    @Test(arguments: [2026, 11, 12] as [UInt64])
    func entersAndExitsEachRoomOnceAtTheRightPlaces(seed: UInt64) async throws {
        let observation = try await Self.walk(seed: seed)
        for (event, position) in observation.events {
            print("MUSEUM seed \(seed): \(event.kind) \(event.region.name) at \(event.time) with the observer at x = \(position.x) m")
        }
        for (name, x) in Self.rooms {
            let mine = observation.events.filter { $0.0.region.name == name }
            // Exactly one entry then one exit: no flicker.
            #expect(mine.map(\.0.kind) == [.enter, .exit], "\(name): \(mine.map(\.0.kind))")
            guard mine.count == 2 else { continue }
            // Entered on the way in, within hearing range (about 7 m, up to about 16 m on a lucky packet) and before
            // reaching the exhibit.
            let enteredAt = mine[0].1.x - x
            #expect((-18.0 ... -3.0).contains(enteredAt), "\(name) entered \(enteredAt) m from the exhibit")
            // Left on the way out: out of range (the last packet heard at most about 16 m past it), then the 10 s
            // timeout, walking on or pausing at the next exhibit 25 m on.
            let leftAt = mine[1].1.x - x
            #expect((12.0 ... 26.0).contains(leftAt), "\(name) left \(leftAt) m past the exhibit")
        }
        // Standing at each exhibit, the nearest beacon is that exhibit's, in every ranging update there.
        for (name, _) in Self.rooms {
            let nearest = observation.nearestAtPause[name] ?? []
            #expect(nearest.count >= 5)
            #expect(nearest.allSatisfy { $0 == name }, "at \(name): \(nearest)")
        }
    }
}
