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
/// filter) and asks for them to be published as its view (``Output/publishView(device:view:)``, at most once per
/// ``Configuration/viewInterval`` per device); it takes in the other gateways' views, their status (a gateway that
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
        /// How the gateway's own samples are smoothed.
        public var filter: RSSIFilter.Configuration
        /// How RSSI becomes distance.
        public var pathLoss: PathLossModel

        /// Creates a configuration.
        public init(hysteresis: Double = 4, dwell: Duration = .seconds(3), settle: Duration = .seconds(1), viewLifetime: Duration = .seconds(6),
                    viewInterval: Duration = .seconds(1), filter: RSSIFilter.Configuration = .init(), pathLoss: PathLossModel = .init()) {
            self.hysteresis = max(0, hysteresis)
            self.dwell = dwell
            self.settle = settle
            self.viewLifetime = viewLifetime
            self.viewInterval = viewInterval
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

    private struct Local {
        var filter: RSSIFilter
        var measuredPower: Int?
        var lastSample: Duration
        var lastPublished: Duration?
    }
    private var local: [String: Local] = [:]
    /// Views by device, then gateway, with the time each was last updated.
    private var views: [String: [String: (view: PresenceView, at: Duration)]] = [:]
    private var holders: [String: PresenceDecision] = [:]
    /// A gateway stronger than the holder by the hysteresis, and since when.
    private var challengers: [String: (gateway: String, since: Duration)] = [:]

    /// Creates the machine of gateway `gatewayID`.
    public init(gatewayID: String, configuration: Configuration = .init()) {
        self.gatewayID = gatewayID
        self.configuration = configuration
    }

    /// The gateway that holds `device`, as last published.
    public func holder(of device: String) -> String? { holders[device]?.gateway }

    /// The fresh views of `device` at `now`, strongest first.
    public func views(of device: String, now: Duration) -> [PresenceView] {
        fresh(device, now: now).sorted(by: Self.stronger)
    }

    /// The devices with any view or decision.
    public var devices: Set<String> { Set(views.keys).union(holders.keys) }

    /// A sample of `device` heard by this gateway; `measuredPower` (RSSI at 1 m) gives the view a distance.
    public mutating func observe(device: String, rssi: Int, measuredPower: Int? = nil, now: Duration) -> [Output] {
        var entry = local[device] ?? Local(filter: RSSIFilter(configuration: configuration.filter), measuredPower: nil, lastSample: now)
        entry.filter.add(Double(rssi), at: now)
        entry.lastSample = now
        if let measuredPower { entry.measuredPower = measuredPower }
        var outputs: [Output] = []
        if let estimate = entry.filter.estimate {
            let distance = entry.measuredPower.map { configuration.pathLoss.distance(rssi: estimate, measuredPower: Double($0)) }
            let view = PresenceView(gateway: gatewayID, rssi: estimate, distance: distance)
            views[device, default: [:]][gatewayID] = (view, now)
            if entry.lastPublished.map({ now - $0 >= configuration.viewInterval }) ?? true {
                entry.lastPublished = now
                outputs.append(.publishView(device: device, view: view))
            }
        }
        local[device] = entry
        return outputs + decide(device, now: now)
    }

    /// Another gateway's view of `device`, received at `now` (this gateway's own, echoed by the broker, is ignored).
    public mutating func receive(view: PresenceView, device: String, now: Duration) -> [Output] {
        guard view.gateway != gatewayID else { return [] }
        views[device, default: [:]][view.gateway] = (view, now)
        return decide(device, now: now)
    }

    /// A presence decision published (by any gateway, this one included, or retained from before).
    public mutating func receive(decision: PresenceDecision, now: Duration) -> [Output] {
        if holders[decision.device]?.gateway != decision.gateway { challengers[decision.device] = nil }
        holders[decision.device] = decision
        return decide(decision.device, now: now)
    }

    /// A gateway went offline (its status said so): its views go, and the devices it held go to the strongest of the
    /// others after ``Configuration/settle``.
    public mutating func gatewayWentOffline(_ gateway: String, now: Duration) -> [Output] {
        guard gateway != gatewayID else { return [] }
        var touched: [String] = []
        for (device, byGateway) in views where byGateway[gateway] != nil {
            views[device]?[gateway] = nil
            touched.append(device)
        }
        return touched.sorted().flatMap { decide($0, now: now) }
    }

    /// Time passed: dwell timers may expire, views grow stale. Call it about every quarter of a second.
    public mutating func tick(now: Duration) -> [Output] {
        // Forget what nobody has heard for a long time.
        let forgetAfter = configuration.viewLifetime * 4
        for (device, entry) in local where now - entry.lastSample > forgetAfter { local[device] = nil }
        var outputs: [Output] = []
        for device in views.keys.sorted() {
            if let byGateway = views[device] {
                let kept = byGateway.filter { now - $0.value.at <= forgetAfter }
                if kept.isEmpty { views[device] = nil; challengers[device] = nil; continue }
                if kept.count != byGateway.count { views[device] = kept }
            }
            outputs += decide(device, now: now)
        }
        return outputs
    }

    // MARK: - The rule

    private func fresh(_ device: String, now: Duration) -> [PresenceView] {
        (views[device] ?? [:]).values.filter { now - $0.at <= configuration.viewLifetime }.map(\.view)
    }

    /// Whether `a` ranks before `b`: stronger, or as strong with the smaller gateway identifier.
    static func stronger(_ a: PresenceView, _ b: PresenceView) -> Bool {
        a.rssi != b.rssi ? a.rssi > b.rssi : a.gateway < b.gateway
    }

    private mutating func decide(_ device: String, now: Duration) -> [Output] {
        let candidates = fresh(device, now: now)
        guard let best = candidates.min(by: Self.stronger) else {
            challengers[device] = nil
            return []
        }
        let holder = holders[device]
        let holderView = holder.flatMap { h in candidates.first { $0.gateway == h.gateway } }
        var winner: PresenceView?
        /// The candidate wins once it has been the challenger for `wait`.
        func challenge(_ wait: Duration) {
            if let challenger = challengers[device], challenger.gateway == best.gateway {
                if now - challenger.since >= wait { winner = best }
            } else {
                challengers[device] = (best.gateway, now)
                if wait <= .zero { winner = best }
            }
        }
        if let holderView {
            if best.gateway != holderView.gateway && best.rssi >= holderView.rssi + configuration.hysteresis {
                challenge(configuration.dwell)
            } else {
                challengers[device] = nil
            }
        } else {
            challenge(configuration.settle)
        }
        guard let winner, winner.gateway == gatewayID, holder?.gateway != gatewayID else { return [] }
        let decision = PresenceDecision(device: device, gateway: gatewayID, rssi: winner.rssi, distance: winner.distance)
        holders[device] = decision
        challengers[device] = nil
        return [.publishPresence(decision)]
    }
}
