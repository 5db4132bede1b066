import BLE
@testable import BLEGateway
import Testing

/// The presence rule, synchronously with injected time: gateways exchange their outputs as the broker would.
@Suite struct PresenceMachineTests {
    /// A fleet of machines joined by a perfect broker: every view and decision a machine publishes reaches the others.
    struct Fleet {
        var machines: [String: PresenceMachine]
        /// Decisions published, in order, with who published them.
        var published: [(at: Duration, decision: PresenceDecision)] = []
        var online: Set<String>

        init(_ ids: [String], configuration: PresenceMachine.Configuration = .init(), ticksEveryDevice: Bool = false) {
            machines = Dictionary(uniqueKeysWithValues: ids.map { id in
                var machine = PresenceMachine(gatewayID: id, configuration: configuration)
                machine.ticksEveryDevice = ticksEveryDevice
                return (id, machine)
            })
            online = Set(ids)
        }

        mutating func deliver(_ outputs: [PresenceMachine.Output], from gateway: String, now: Duration) {
            var pending = outputs.map { (gateway, $0) }
            while !pending.isEmpty {
                let (source, output) = pending.removeFirst()
                for id in machines.keys.sorted() where online.contains(id) {
                    var machine = machines[id]!
                    switch output {
                    case .publishView(let device, let view):
                        pending += machine.receive(view: view, device: device, now: now).map { (id, $0) }
                    case .publishPresence(let decision):
                        if id == source { published.append((now, decision)) }
                        pending += machine.receive(decision: decision, now: now).map { (id, $0) }
                    }
                    machines[id] = machine
                }
            }
        }

        /// Gateway `id` hears `device` at `rssi`.
        mutating func hear(_ id: String, _ device: String, rssi: Int, at now: Duration) {
            guard online.contains(id) else { return }
            let outputs = machines[id]!.observe(device: device, rssi: rssi, now: now)
            deliver(outputs, from: id, now: now)
        }

        mutating func tick(at now: Duration) {
            for id in machines.keys.sorted() where online.contains(id) {
                let outputs = machines[id]!.tick(now: now)
                deliver(outputs, from: id, now: now)
            }
        }

        mutating func goOffline(_ id: String, at now: Duration) {
            online.remove(id)
            for other in machines.keys.sorted() where online.contains(other) {
                let outputs = machines[other]!.gatewayWentOffline(id, now: now)
                deliver(outputs, from: other, now: now)
            }
        }

        func holders(_ device: String) -> Set<String?> { Set(online.map { machines[$0]!.holder(of: device) }) }
    }

    /// A device walks from A (strong at A) to C over 30 s; each gateway hears it every 100 ms with the RSSI of a
    /// straight line. The presence goes A → B → C, each change published once by its new holder.
    @Test func aWalkFromRoomToRoomIsFollowedOnce() {
        var fleet = Fleet(["A", "B", "C"])
        let positions: [String: Double] = ["A": 0, "B": 5, "C": 10]
        var t = Duration.zero
        while t <= .seconds(30) {
            let x = min(10, max(0, (t / .seconds(1) - 2) * 0.4))   // 0 m until 2 s, then 0.4 m/s to 10 m (at 27 s)
            for (id, position) in positions.sorted(by: { $0.key < $1.key }) {
                let distance = max(0.5, abs(position - x))
                fleet.hear(id, "D", rssi: Int((-59 - 20 * log10(distance)).rounded()), at: t)
            }
            fleet.tick(at: t)
            t += .milliseconds(100)
        }
        #expect(fleet.published.map(\.decision.gateway) == ["A", "B", "C"], "\(fleet.published.map { ($0.at, $0.decision.gateway) })")
        #expect(fleet.holders("D") == ["C"], "every gateway agrees")
        // B took over only after the dwell: the device crossed the A/B midpoint (2.5 m) at 8.25 s.
        if let b = fleet.published.first(where: { $0.decision.gateway == "B" }) {
            #expect(b.at >= .seconds(8) + .seconds(3), "B at \(b.at)")
        }
    }

    /// Between two rooms, each gateway alternately ahead by a few dB (less than the hysteresis): no change after the
    /// first decision, however long it lasts.
    @Test func aDeviceBetweenTwoRoomsDoesNotFlicker() {
        var fleet = Fleet(["A", "B"])
        var t = Duration.zero
        for step in 0..<600 {
            let swing = step / 20 % 2 == 0 ? 2 : -2   // every 2 s the other gateway is ahead by 4 dB at most
            fleet.hear("A", "D", rssi: -70 + swing, at: t)
            fleet.hear("B", "D", rssi: -70 - swing, at: t)
            if step % 3 == 0 { fleet.tick(at: t) }
            t += .milliseconds(100)
        }
        #expect(fleet.published.count == 1, "\(fleet.published.map { ($0.at, $0.decision.gateway) })")
        #expect(fleet.holders("D").count == 1)
    }

    /// A stronger gateway that is not stronger for long enough does not take over: a 2 s burst is less than the 3 s
    /// dwell. Held longer, it does.
    @Test func theDwellMustPassWithoutInterruption() {
        var fleet = Fleet(["A", "B"])
        var t = Duration.zero
        func run(_ seconds: Int, a: Int, b: Int) {
            for _ in 0..<(seconds * 10) {
                fleet.hear("A", "D", rssi: a, at: t)
                fleet.hear("B", "D", rssi: b, at: t)
                fleet.tick(at: t)
                t += .milliseconds(100)
            }
        }
        run(3, a: -60, b: -75)
        #expect(fleet.published.map(\.decision.gateway) == ["A"])
        run(2, a: -75, b: -60)   // the filters follow within a second; then B is ahead for about a second
        run(3, a: -60, b: -75)
        #expect(fleet.published.map(\.decision.gateway) == ["A"], "a short burst does not switch")
        run(6, a: -75, b: -60)
        #expect(fleet.published.map(\.decision.gateway) == ["A", "B"])
    }

    /// Equal RSSI: the smaller gateway identifier wins the first decision, and equality never switches.
    @Test func tiesGoToTheSmallerIdentifierAndStay() {
        var fleet = Fleet(["kitchen", "hall"])
        var t = Duration.zero
        // "kitchen" hears the device first, but both hear it within the settle time: hall, the smaller identifier.
        for step in 0..<100 {
            fleet.hear("kitchen", "D", rssi: -65, at: t)
            if step > 2 { fleet.hear("hall", "D", rssi: -65, at: t) }
            fleet.tick(at: t)
            t += .milliseconds(100)
        }
        #expect(fleet.published.map(\.decision.gateway) == ["hall"])
        #expect(fleet.published.first.map { $0.at >= .seconds(1) } == true, "after the settle time")
        // Equality never moves it, whoever is ahead by less than the hysteresis.
        for _ in 0..<100 {
            fleet.hear("kitchen", "D", rssi: -63, at: t)
            fleet.hear("hall", "D", rssi: -65, at: t)
            fleet.tick(at: t)
            t += .milliseconds(100)
        }
        #expect(fleet.published.count == 1)
    }

    /// Three gateways hear a new device at the same moment: one decision, by the strongest, not one each.
    @Test func simultaneousFirstSightingsMakeOneDecision() {
        var fleet = Fleet(["A", "B", "C"])
        var t = Duration.zero
        for _ in 0..<30 {
            fleet.hear("C", "D", rssi: -70, at: t)
            fleet.hear("A", "D", rssi: -66, at: t)
            fleet.hear("B", "D", rssi: -60, at: t)
            fleet.tick(at: t)
            t += .milliseconds(100)
        }
        #expect(fleet.published.map(\.decision.gateway) == ["B"])
    }

    /// The holder goes offline: the next best gateway takes the device after the settle time (no dwell), and
    /// publishes it.
    @Test func aGatewayGoingOfflineHandsItsDevicesOver() {
        var fleet = Fleet(["A", "B", "C"])
        var t = Duration.zero
        for _ in 0..<50 {
            fleet.hear("A", "D", rssi: -55, at: t)
            fleet.hear("B", "D", rssi: -70, at: t)
            fleet.hear("C", "D", rssi: -80, at: t)
            fleet.tick(at: t)
            t += .milliseconds(100)
        }
        #expect(fleet.published.map(\.decision.gateway) == ["A"])
        let offline = t
        fleet.goOffline("A", at: t)
        for _ in 0..<15 {
            fleet.hear("B", "D", rssi: -70, at: t)
            fleet.hear("C", "D", rssi: -80, at: t)
            fleet.tick(at: t)
            t += .milliseconds(100)
        }
        #expect(fleet.published.map(\.decision.gateway) == ["A", "B"])
        #expect(fleet.published.last.map { $0.at - offline <= .milliseconds(1100) } == true, "after the settle time, not the dwell")
        #expect(fleet.holders("D") == ["B"])
    }

    /// A holder that stops hearing the device (it left its range) is replaced once its view is stale.
    @Test func aStaleHolderIsReplaced() {
        var fleet = Fleet(["A", "B"], configuration: .init(viewLifetime: .seconds(2)))
        var t = Duration.zero
        for _ in 0..<20 {
            fleet.hear("A", "D", rssi: -50, at: t)
            fleet.hear("B", "D", rssi: -52, at: t)
            t += .milliseconds(100)
        }
        for _ in 0..<30 {
            fleet.hear("B", "D", rssi: -52, at: t)   // A hears nothing any more
            fleet.tick(at: t)
            t += .milliseconds(100)
        }
        #expect(fleet.published.map(\.decision.gateway) == ["A", "B"])
    }

    /// A tick passes by the devices it cannot change (no challenger, no view growing stale, nothing to forget): two
    /// fleets, one whose ticks apply the rule to every device, live through the same seeded script of sightings,
    /// silences, ticks and a gateway going offline, and publish the same decisions at the same times.
    @Test func ticksThatPassQuietDevicesByDecideTheSame() {
        struct SplitMix64 {
            var state: UInt64
            mutating func next(_ bound: Int) -> Int {
                state &+= 0x9E37_79B9_7F4A_7C15
                var z = state
                z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
                z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
                return Int((z ^ (z >> 31)) % UInt64(bound))
            }
        }
        let configuration = PresenceMachine.Configuration(dwell: .seconds(2), settle: .milliseconds(500), viewLifetime: .seconds(3))
        let gateways = ["A", "B", "C"], devices = ["d0", "d1", "d2", "d3", "d4", "d5"]
        for seed in [UInt64(1), 2, 3] {
            var quiet = Fleet(gateways, configuration: configuration)
            var every = Fleet(gateways, configuration: configuration, ticksEveryDevice: true)
            var random = SplitMix64(state: seed)
            // Each device's distance from each gateway drifts; some devices go silent for a while.
            var level = Dictionary(uniqueKeysWithValues: devices.flatMap { d in gateways.map { ("\(d)@\($0)", -70) } })
            var silentUntil: [String: Duration] = [:]
            var t = Duration.zero
            var ticks = 0
            for step in 0..<6000 {
                t += .milliseconds(random.next(120))
                if step == 4000 {
                    quiet.goOffline("C", at: t)
                    every.goOffline("C", at: t)
                }
                switch random.next(20) {
                case 0...2:
                    quiet.tick(at: t)
                    every.tick(at: t)
                    ticks += 1
                case 3:
                    silentUntil[devices[random.next(devices.count)]] = t + .milliseconds(random.next(25_000))
                default:
                    let device = devices[random.next(devices.count)], gateway = gateways[random.next(gateways.count)]
                    guard t >= silentUntil[device] ?? .zero else { continue }
                    let key = "\(device)@\(gateway)"
                    level[key] = max(-95, min(-40, (level[key] ?? -70) + random.next(9) - 4))
                    let rssi = (level[key] ?? -70) + random.next(5) - 2
                    quiet.hear(gateway, device, rssi: rssi, at: t)
                    every.hear(gateway, device, rssi: rssi, at: t)
                }
                for device in devices where quiet.holders(device) != every.holders(device) {
                    Issue.record("seed \(seed), step \(step), \(t): \(device) held by \(quiet.holders(device)), not \(every.holders(device))")
                    return
                }
            }
            let a = quiet.published.map { "\($0.at) \($0.decision.device) \($0.decision.gateway)" }
            let b = every.published.map { "\($0.at) \($0.decision.device) \($0.decision.gateway)" }
            #expect(a == b, "seed \(seed)")
            #expect(a.count >= 10 && ticks > 500, "the script moves devices between gateways: \(a.count) decisions")
            #expect(Set(quiet.online.flatMap { quiet.machines[$0]?.devices ?? [] }) == Set(every.online.flatMap { every.machines[$0]?.devices ?? [] }))
        }
    }

    /// A gateway's view of a device goes out at once, then only when the smoothed RSSI moved by the view change (at
    /// most once per view interval) or when the refresh is due; a device heard ten times a second at a steady RSSI
    /// costs one view per refresh, not one per interval.
    @Test func viewsGoOutOnChangeOrRefreshNotEveryInterval() {
        var machine = PresenceMachine(gatewayID: "A")   // interval 1 s, change 1 dB, refresh 2 s
        var views: [(at: Duration, rssi: Double)] = []
        func hear(_ rssi: Int, from start: Duration, to end: Duration) {
            var t = start
            while t < end {
                for case .publishView(_, let view) in machine.observe(device: "D", rssi: rssi, now: t) { views.append((t, view.rssi)) }
                t += .milliseconds(100)
            }
        }
        hear(-60, from: .zero, to: .seconds(7))
        // The first sample at once, then the refreshes: 2 s, 4 s, 6 s (not 1 s, 2 s, 3 s, ...).
        #expect(views.map(\.at) == [.zero, .seconds(2), .seconds(4), .seconds(6)], "\(views)")
        #expect(views.allSatisfy { $0.rssi == -60 })
        // The device comes 10 dB closer: the smoothed RSSI moves, and views follow each interval while it moves.
        views = []
        hear(-50, from: .seconds(7), to: .seconds(12))
        #expect(views.first.map { $0.at >= .seconds(7) && $0.at <= .seconds(8) } == true, "\(views)")
        #expect(views.count >= 3, "\(views)")
        for (a, b) in zip(views, views.dropFirst()) { #expect(b.at - a.at >= .seconds(1)) }
        #expect(views.last.map { abs($0.rssi - -50) < 1 } == true, "\(views)")
        // Settled again: back to one per refresh.
        views = []
        hear(-50, from: .seconds(15), to: .seconds(21))
        #expect(views.count == 3, "\(views)")

        // viewChange 0 keeps the old behaviour: one view per interval.
        machine = PresenceMachine(gatewayID: "A", configuration: .init(viewChange: 0))
        views = []
        hear(-60, from: .zero, to: .seconds(5))
        #expect(views.map(\.at) == [.zero, .seconds(1), .seconds(2), .seconds(3), .seconds(4)], "\(views)")
    }

    /// Views and decisions survive their JSON; junk is refused without a trap.
    @Test func viewsAndDecisionsRoundTripAndJunkIsRefused() {
        let view = PresenceView(gateway: "kitchen", rssi: -61.3, distance: 1.84)
        #expect(view.json.encoded() == #"{"gateway":"kitchen","rssi":-61.3,"distance_m":1.84}"#)
        #expect(PresenceView(json: Array(view.json.encoded().utf8)) == view)
        let decision = PresenceDecision(device: "00:5B:00:00:00:04", gateway: "hall", rssi: -58.25)
        #expect(PresenceDecision(json: Array(decision.json.encoded().utf8))?.gateway == "hall")
        for junk in ["", "{", "[]", "null", #"{"gateway":3,"rssi":-50}"#, #"{"gateway":"a"}"#, "\u{FF}\u{FE}", #"{"gateway":"a","rssi":"x"}"#] {
            #expect(PresenceView(json: Array(junk.utf8)) == nil, "\(junk)")
            #expect(PresenceDecision(json: Array(junk.utf8)) == nil, "\(junk)")
        }
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
