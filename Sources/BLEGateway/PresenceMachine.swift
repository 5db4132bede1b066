import BLE
import BLEBeacons
import BLEFiles

/// One gateway's smoothed view of one device, as gateways share them on `PREFIX/ID/rssi/DEVICE`:
/// `{"gateway":"kitchen","rssi":-61.3,"distance_m":1.84}`.
public struct PresenceView: Sendable, Hashable {
    /// The gateway that hears the device.
    public var gateway: String
    /// The smoothed RSSI, in dBm.
    public var rssi: Double
    /// The distance the smoothed RSSI suggests, in metres (when the device advertises a measured or TX power).
    public var distance: Double?

    /// Creates a view.
    public init(gateway: String, rssi: Double, distance: Double? = nil) {
        self.gateway = gateway
        self.rssi = rssi
        self.distance = distance
    }

    /// The JSON published.
    public var json: JSONValue {
        var fields: [(key: String, value: JSONValue)] = [("gateway", .string(gateway)), ("rssi", .number(rssi, decimals: 1))]
        if let distance { fields.append(("distance_m", .number(distance, decimals: 2))) }
        return .object(fields)
    }

    /// Parses a published view; `nil` when the payload is not one.
    public init?(json payload: [UInt8]) {
        guard let object = GatewayJSON.object(payload), case .some(.string(let gateway)) = object["gateway"],
              let rssi = GatewayJSON.double(object["rssi"]), rssi.isFinite else { return nil }
        self.init(gateway: gateway, rssi: rssi, distance: GatewayJSON.double(object["distance_m"]))
    }
}

/// Which gateway hears a device best, as published (retained) on `PREFIX/presence/DEVICE`:
/// `{"device":"00:5B:00:00:00:04","gateway":"kitchen","rssi":-58.2,"distance_m":1.1}`.
public struct PresenceDecision: Sendable, Hashable {
    /// The device.
    public var device: String
    /// The gateway that hears it best.
    public var gateway: String
    /// That gateway's smoothed RSSI when it took the device over.
    public var rssi: Double
    /// The distance from that gateway, in metres, when known.
    public var distance: Double?

    /// Creates a decision.
    public init(device: String, gateway: String, rssi: Double, distance: Double? = nil) {
        self.device = device
        self.gateway = gateway
        self.rssi = rssi
        self.distance = distance
    }

    /// The JSON published.
    public var json: JSONValue {
        var fields: [(key: String, value: JSONValue)] = [("device", .string(device)), ("gateway", .string(gateway)),
                                                         ("rssi", .number(rssi, decimals: 1))]
        if let distance { fields.append(("distance_m", .number(distance, decimals: 2))) }
        return .object(fields)
    }

    /// Parses a published decision; `nil` when the payload is not one (an empty retained message clears a topic).
    public init?(json payload: [UInt8]) {
        guard let object = GatewayJSON.object(payload), case .some(.string(let device)) = object["device"],
              case .some(.string(let gateway)) = object["gateway"] else { return nil }
        self.init(device: device, gateway: gateway, rssi: GatewayJSON.double(object["rssi"]) ?? -127,
                  distance: GatewayJSON.double(object["distance_m"]))
    }
}

/// Room presence across a fleet, as a machine without I/O or clocks: which gateway hears each device best, with
/// hysteresis so that a device standing between two rooms does not flicker.
///
/// Every gateway runs one. It smooths its own samples of each device (`RSSIFilter` (BLEBeacons): a median then a Kalman
/// filter) and asks for them to be published as its view (``Output/publishView(device:view:)``): the first at once,
/// then when the smoothed RSSI has moved by ``Configuration/viewChange`` since the last one published (at most once
/// per ``Configuration/viewInterval``), and otherwise once per ``Configuration/viewRefresh`` so that the others keep
/// it fresh; it takes in the other gateways' views, their status (a gateway that
/// goes offline takes its views with it) and the presence decisions published.
///
/// The rule, the same on every gateway over the same views:
/// - The candidate is the gateway with the strongest fresh view (a view is fresh for
///   ``Configuration/viewLifetime``); on equal RSSI the smaller gateway identifier.
/// - With no holder, or a holder whose view is no longer fresh (the device left its range, the gateway went
///   offline), the candidate takes the device once it has stayed the candidate for ``Configuration/settle`` (1 s by
///   default): time for the gateways that heard a new device at the same moment to exchange their first views, so
///   that only the best of them claims it.
/// - Otherwise the candidate takes it over only after being stronger than the holder by at least
///   ``Configuration/hysteresis`` dB for ``Configuration/dwell`` without interruption; equal or slightly better never
///   switches.
/// - Only the new holder publishes the decision (``Output/publishPresence(_:)``, retained): one gateway publishes each
///   change, and the others learn it from the broker.
public struct PresenceMachine: Sendable {
    /// Tuning.
    public struct Configuration: Sendable, Hashable {
        /// How much stronger (dB) another gateway must hear a device to take it over. Default 4 dB.
        public var hysteresis: Double
        /// How long it must stay that much stronger. Default 3 s.
        public var dwell: Duration
        /// How long the strongest gateway must stay the strongest before taking a device nobody holds. Default 1 s.
        public var settle: Duration
        /// How long a view counts after it was last updated. Default 6 s.
        public var viewLifetime: Duration
        /// The shortest time between two publications of this gateway's view of one device. Default 1 s.
        public var viewInterval: Duration
        /// How far (dB) the smoothed RSSI must move from the view last published for a new one to go out before
        /// ``viewRefresh``. Default 1 dB (a quarter of the default hysteresis). 0 publishes every ``viewInterval``.
        public var viewChange: Double
        /// The longest time between two publications of an unchanged view of a device still heard: well within
        /// ``viewLifetime``, so that one lost view (they go at QoS 0) does not make it stale. Default 2 s.
        public var viewRefresh: Duration
        /// How the gateway's own samples are smoothed.
        public var filter: RSSIFilter.Configuration
        /// How RSSI becomes distance.
        public var pathLoss: PathLossModel

        /// Creates a configuration.
        public init(hysteresis: Double = 4, dwell: Duration = .seconds(3), settle: Duration = .seconds(1), viewLifetime: Duration = .seconds(6),
                    viewInterval: Duration = .seconds(1), viewChange: Double = 1, viewRefresh: Duration = .seconds(2),
                    filter: RSSIFilter.Configuration = .init(), pathLoss: PathLossModel = .init()) {
            self.hysteresis = max(0, hysteresis)
            self.dwell = dwell
            self.settle = settle
            self.viewLifetime = viewLifetime
            self.viewInterval = viewInterval
            self.viewChange = max(0, viewChange)
            self.viewRefresh = max(viewInterval, viewRefresh)
            self.filter = filter
            self.pathLoss = pathLoss
        }
    }

    /// What the gateway is to publish.
    public enum Output: Sendable, Hashable {
        /// This gateway's view of `device`, on `PREFIX/ID/rssi/DEVICE`.
        case publishView(device: String, view: PresenceView)
        /// This gateway took `device` over: publish on `PREFIX/presence/DEVICE`, retained.
        case publishPresence(PresenceDecision)
    }

    /// This gateway.
    public let gatewayID: String
    /// The tuning.
    public let configuration: Configuration

    /// This gateway's own samples of a device.
    fileprivate struct Local {
        var filter: RSSIFilter
        var measuredPower: Int?
        var lastSample: Duration
        /// When this gateway's view was last published, and its RSSI then.
        var lastPublished: Duration?
        var publishedRSSI: Double = 0

        /// Whether the view with `rssi` goes out at `now`.
        func isViewDue(_ rssi: Double, now: Duration, configuration: Configuration) -> Bool {
            guard let lastPublished else { return true }
            let elapsed = now - lastPublished
            return elapsed >= configuration.viewRefresh
                || (elapsed >= configuration.viewInterval && abs(rssi - publishedRSSI) >= configuration.viewChange)
        }
    }

    /// One gateway's view of a device, and when it was last updated.
    fileprivate struct Heard {
        var view: PresenceView
        var at: Duration
    }

    /// Everything known of one device, in one entry: a sample costs one look-up of the device (a device is heard by
    /// a few gateways at most, so its views are a short list, not a table).
    fileprivate struct Device {
        var local: Local?
        /// The views of the gateways that hear it, one per gateway.
        var views: [Heard] = []
        var holder: PresenceDecision?
        /// A gateway stronger than the holder by the hysteresis, and since when.
        var challenger: (gateway: String, since: Duration)?
        /// Until when a tick cannot change this entry: the rule gives what it gave when last applied until a view
        /// grows stale or a timer runs out (``tick(now:)`` passes the others by; set each time the rule is applied).
        var quietUntil: Duration = .zero

        var isEmpty: Bool { local == nil && views.isEmpty && holder == nil }

        mutating func setView(_ view: PresenceView, at now: Duration) {
            if let index = views.firstIndex(where: { $0.view.gateway == view.gateway }) {
                views[index] = Heard(view: view, at: now)
            } else {
                views.append(Heard(view: view, at: now))
            }
        }
    }
    private var table: [String: Device] = [:]
    /// Whether ``tick(now:)`` applies the rule to every device, the quiet ones too (for tests: the outputs must be
    /// the same either way).
    var ticksEveryDevice = false

    /// Creates the machine of gateway `gatewayID`.
    public init(gatewayID: String, configuration: Configuration = .init()) {
        self.gatewayID = gatewayID
        self.configuration = configuration
    }

    /// The gateway that holds `device`, as last published.
    public func holder(of device: String) -> String? { table[device]?.holder?.gateway }

    /// The fresh views of `device` at `now`, strongest first.
    public func views(of device: String, now: Duration) -> [PresenceView] {
        guard let entry = table[device] else { return [] }
        return Self.fresh(entry, now: now, lifetime: configuration.viewLifetime).sorted(by: Self.stronger)
    }

    /// The devices with any view or decision.
    public var devices: Set<String> { Set(table.compactMap { !$0.value.views.isEmpty || $0.value.holder != nil ? $0.key : nil }) }

    /// A sample of `device` heard by this gateway; `measuredPower` (RSSI at 1 m) gives the view a distance.
    public mutating func observe(device: String, rssi: Int, measuredPower: Int? = nil, now: Duration) -> [Output] {
        let configuration = configuration
        let gatewayID = gatewayID
        // One look-up: the device's entry is changed in place.
        return table[device, default: Device()].modify { entry in
            var local = entry.local ?? Local(filter: RSSIFilter(configuration: configuration.filter), measuredPower: nil, lastSample: now)
            local.filter.add(Double(rssi), at: now)
            local.lastSample = now
            if let measuredPower { local.measuredPower = measuredPower }
            var outputs: [Output] = []
            if let estimate = local.filter.estimate {
                let distance = local.measuredPower.map { configuration.pathLoss.distance(rssi: estimate, measuredPower: Double($0)) }
                let view = PresenceView(gateway: gatewayID, rssi: estimate, distance: distance)
                entry.setView(view, at: now)
                if local.isViewDue(estimate, now: now, configuration: configuration) {
                    local.lastPublished = now
                    local.publishedRSSI = estimate
                    outputs.append(.publishView(device: device, view: view))
                }
            }
            entry.local = local
            if let decision = Self.decide(device, &entry, now: now, gatewayID: gatewayID, configuration: configuration) {
                outputs.append(decision)
            }
            return outputs
        }
    }

    /// Another gateway's view of `device`, received at `now` (this gateway's own, echoed by the broker, is ignored).
    public mutating func receive(view: PresenceView, device: String, now: Duration) -> [Output] {
        guard view.gateway != gatewayID else { return [] }
        return decided(device, now: now) { $0.setView(view, at: now) }
    }

    /// A presence decision published (by any gateway, this one included, or retained from before).
    public mutating func receive(decision: PresenceDecision, now: Duration) -> [Output] {
        decided(decision.device, now: now) { entry in
            if entry.holder?.gateway != decision.gateway { entry.challenger = nil }
            entry.holder = decision
        }
    }

    /// A gateway went offline (its status said so): its views go, and the devices it held go to the strongest of the
    /// others after ``Configuration/settle``.
    public mutating func gatewayWentOffline(_ gateway: String, now: Duration) -> [Output] {
        guard gateway != gatewayID else { return [] }
        let touched = table.compactMap { $0.value.views.contains { $0.view.gateway == gateway } ? $0.key : nil }
        return touched.sorted().flatMap { device in decided(device, now: now) { $0.views.removeAll { $0.view.gateway == gateway } } }
    }

    /// Time passed: dwell timers may expire, views grow stale. Call it about every quarter of a second.
    public mutating func tick(now: Duration) -> [Output] {
        // Forget what nobody has heard for a long time.
        let forgetAfter = configuration.viewLifetime * 4
        let gatewayID = gatewayID
        let configuration = configuration
        var decided: [(device: String, output: Output)] = []
        var forgotten: [String] = []
        // Walked by index and changed in place (iterating `table.keys` while changing `table` would copy the table).
        var index = table.startIndex
        while index != table.endIndex {
            defer { table.formIndex(after: &index) }
            // Most devices: heard again within their views' lifetime, no challenger: nothing a tick can change.
            if now <= table.values[index].quietUntil && !ticksEveryDevice { continue }
            let key = table.keys[index]
            table.values[index].modify { entry in
                if let local = entry.local, now - local.lastSample > forgetAfter { entry.local = nil }
                if !entry.views.isEmpty {
                    entry.views.removeAll { now - $0.at > forgetAfter }
                    if entry.views.isEmpty { entry.challenger = nil }
                }
                guard !entry.views.isEmpty else {
                    if entry.isEmpty { forgotten.append(key) }
                    entry.quietUntil = Self.quietUntil(entry, now: now, configuration: configuration)
                    return
                }
                if let output = Self.decide(key, &entry, now: now, gatewayID: gatewayID, configuration: configuration) {
                    decided.append((key, output))
                }
            }
        }
        for key in forgotten { table[key] = nil }
        // The devices' outputs in the order of their names (each device's decision depends on its entry alone).
        return decided.sorted { $0.device < $1.device }.map(\.output)
    }

    // MARK: - The rule

    /// Changes `device`'s entry with `change`, then decides it.
    private mutating func decided(_ device: String, now: Duration, _ change: (inout Device) -> Void) -> [Output] {
        let gatewayID = gatewayID
        let configuration = configuration
        return table[device, default: Device()].modify { entry in
            change(&entry)
            return Self.decide(device, &entry, now: now, gatewayID: gatewayID, configuration: configuration).map { [$0] } ?? []
        }
    }

    private static func fresh(_ entry: Device, now: Duration, lifetime: Duration) -> [PresenceView] {
        entry.views.compactMap { now - $0.at <= lifetime ? $0.view : nil }
    }

    /// Whether `a` ranks before `b`: stronger, or as strong with the smaller gateway identifier.
    static func stronger(_ a: PresenceView, _ b: PresenceView) -> Bool {
        a.rssi != b.rssi ? a.rssi > b.rssi : a.gateway < b.gateway
    }

    /// Applies the rule to one device's entry; the decision to publish, when this gateway takes the device. Sets the
    /// entry's ``Device/quietUntil``.
    private static func decide(_ device: String, _ entry: inout Device, now: Duration, gatewayID: String,
                               configuration: Configuration) -> Output? {
        let output = rule(device, &entry, now: now, gatewayID: gatewayID, configuration: configuration)
        entry.quietUntil = quietUntil(entry, now: now, configuration: configuration)
        return output
    }

    /// Until when the rule, applied to `entry` at `now`, gives the same and changes nothing, and a tick forgets
    /// nothing of it: with a challenger, not at all (its timer runs); else until the first fresh view grows stale, or
    /// the first stale view or the gateway's own samples are old enough to forget. The rule's outcome depends on the
    /// time only through which views are fresh and the challenger's timer, so with neither changing it gives what it
    /// gave: without a challenger, the fresh views it left either had nobody to take over, or the holder its own or
    /// no stronger challenger (a challenge would have left a challenger).
    fileprivate static func quietUntil(_ entry: Device, now: Duration, configuration: Configuration) -> Duration {
        guard entry.challenger == nil else { return .zero }
        let forgetAfter = configuration.viewLifetime * 4
        var until = Duration.seconds(Int64.max)
        for heard in entry.views {
            let fresh = now - heard.at <= configuration.viewLifetime
            until = min(until, heard.at + (fresh ? configuration.viewLifetime : forgetAfter))
        }
        if let local = entry.local { until = min(until, local.lastSample + forgetAfter) }
        return until
    }

    /// The rule itself (``decide(_:_:now:gatewayID:configuration:)`` without the bookkeeping).
    private static func rule(_ device: String, _ entry: inout Device, now: Duration, gatewayID: String,
                             configuration: Configuration) -> Output? {
        // The strongest fresh view, without a list of them (the common case is one view: this gateway's).
        var best: PresenceView?
        var holderView: PresenceView?
        let holder = entry.holder
        for heard in entry.views where now - heard.at <= configuration.viewLifetime {
            if best.map({ stronger(heard.view, $0) }) ?? true { best = heard.view }
            if let holder, heard.view.gateway == holder.gateway, holderView == nil { holderView = heard.view }
        }
        guard let best else {
            entry.challenger = nil
            return nil
        }
        var winner: PresenceView?
        /// The candidate wins once it has been the challenger for `wait`.
        func challenge(_ wait: Duration) {
            if let challenger = entry.challenger, challenger.gateway == best.gateway {
                if now - challenger.since >= wait { winner = best }
            } else {
                entry.challenger = (best.gateway, now)
                if wait <= .zero { winner = best }
            }
        }
        if let holderView {
            if best.gateway != holderView.gateway && best.rssi >= holderView.rssi + configuration.hysteresis {
                challenge(configuration.dwell)
            } else {
                entry.challenger = nil
            }
        } else {
            challenge(configuration.settle)
        }
        guard let winner, winner.gateway == gatewayID, holder?.gateway != gatewayID else { return nil }
        let decision = PresenceDecision(device: device, gateway: gatewayID, rssi: winner.rssi, distance: winner.distance)
        entry.holder = decision
        entry.challenger = nil
        return .publishPresence(decision)
    }
}

fileprivate extension PresenceMachine.Device {
    /// Runs `body` on this entry in place (called on a dictionary's element, one look-up of its key).
    mutating func modify<R>(_ body: (inout Self) -> R) -> R { body(&self) }
}
