import ArgumentParser
import BLE
import BLEBeacons
import BLEFiles
import BLETransport
import BLEVirtualController
import Foundation

/// The controller named by `--hci`, for the beacon commands: for `virtual`, a real-time virtual air of the command's
/// own on which `populate` places the peers the command needs (kept alive with it); any other controller is opened
/// through the public API (``Central/open(_:btsnoop:)``, ``PeripheralManager``).
struct BeaconHCI {
    let options: HostOptions
    let air: VirtualAir?
    let peers: [any Sendable]

    static func open(_ options: HostOptions, populate: (VirtualAir) async throws -> [any Sendable] = { _ in [] }) async throws -> BeaconHCI {
        guard case .virtual = try options.spec() else { return BeaconHCI(options: options, air: nil, peers: []) }
        let air = VirtualAir(clock: .realTime, seed: 2026, radio: RadioModel(noiseSigma: 2))
        return BeaconHCI(options: options, air: air, peers: try await populate(air))
    }

    /// The command's own controller on the virtual air, recorded with `--btsnoop`.
    private func virtualTransport(_ air: VirtualAir) throws -> any HCITransport {
        let transport = air.addController(.init(position: Position(), name: "ble")).makeHostTransport()
        guard let path = options.btsnoop else { return transport }
        return SnoopingTransport(transport, writer: try BTSnoopWriter(path: path), role: .host)
    }

    /// A powered-on central on the controller.
    func central() async throws -> Central {
        guard let air else { return try await Central.open(try options.spec(), btsnoop: options.btsnoop) }
        return try await Central(transport: try virtualTransport(air))
    }

    /// A powered-on peripheral manager on the controller.
    func peripheralManager(deviceName: String) async throws -> PeripheralManager {
        guard let air else { return try await PeripheralManager(try options.spec(), deviceName: deviceName, btsnoop: options.btsnoop) }
        return try await PeripheralManager(transport: try virtualTransport(air), deviceName: deviceName)
    }
}

/// `ble beacon`: advertise beacon frames, non-connectable.
struct BeaconCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "beacon",
        abstract: "Advertise as a beacon: iBeacon, AltBeacon, Eddystone-URL, Eddystone-UID (several rotate).",
        discussion: """
            Examples:
              ble beacon --ibeacon E2C56DB5-DFFB-48D2-B060-D0F5A71096E0 --major 1 --minor 2 --power -59
              ble beacon --eddystone-url https://swift.org
              ble beacon --eddystone-uid EDD1EBEAC04E5DEFA017:0123456789AB
              ble beacon --altbeacon 2F234454-CF6D-4A0F-ADF2-F4911BA9FFA6:1:2 --power -59
            """)

    @OptionGroup var options: HostOptions
    @Option(name: .customLong("ibeacon"), help: "Advertise an iBeacon with this proximity UUID.")
    var iBeaconUUID: String?
    @Option(help: "The iBeacon major.")
    var major: UInt16 = 0
    @Option(help: "The iBeacon minor.")
    var minor: UInt16 = 0
    @Option(parsing: .unconditional, help: "The iBeacon measured power: the RSSI at 1 m, in dBm.")
    var power: Int = -59
    @Option(name: .customLong("altbeacon"), help: "Advertise an AltBeacon: ID1:ID2:ID3 (a UUID, two numbers); --power is its reference RSSI.")
    var altBeacon: String?
    @Option(name: .customLong("eddystone-url"), help: "Advertise an Eddystone-URL frame with this URL.")
    var eddystoneURL: String?
    @Option(name: .customLong("eddystone-uid"), help: "Advertise an Eddystone-UID frame: NAMESPACE:INSTANCE in hex (10 and 6 bytes).")
    var eddystoneUID: String?
    @Option(name: .customLong("eddystone-power"), parsing: .unconditional, help: "The Eddystone TX power at 0 m, in dBm.")
    var eddystonePower: Int = -18
    @Option(help: "Advertising interval in milliseconds (20...10240).")
    var interval: Int = 100
    @Option(help: "With several frames, milliseconds each one is advertised before the next.")
    var dwell: Int = 1000
    @Option(help: "Stop after this many seconds (0: until interrupted).")
    var runFor: Double = 0

    func frames() throws -> [BeaconFrame] {
        var frames: [BeaconFrame] = []
        guard let measured = Int8(exactly: power), let eddystone = Int8(exactly: eddystonePower) else {
            throw ValidationError("--power and --eddystone-power must be within -128...127 dBm")
        }
        if let iBeaconUUID {
            guard let uuid = BluetoothUUID(iBeaconUUID), iBeaconUUID.filter(\.isHexDigit).count == 32 else {
                throw ValidationError("--ibeacon: '\(iBeaconUUID)' is not a 128-bit UUID")
            }
            frames.append(.iBeacon(IBeacon(proximityUUID: uuid, major: major, minor: minor, measuredPower: measured)))
        }
        if let altBeacon {
            let parts = altBeacon.split(separator: ":").map(String.init)
            guard parts.count == 3, let id1 = BluetoothUUID(parts[0]), parts[0].filter(\.isHexDigit).count == 32,
                  let id2 = UInt16(parts[1]), let id3 = UInt16(parts[2]) else {
                throw ValidationError("--altbeacon: expected ID1:ID2:ID3, a 128-bit UUID and two numbers 0...65535")
            }
            frames.append(.altBeacon(AltBeacon(id1: id1, id2: id2, id3: id3, referenceRSSI: measured)))
        }
        if let eddystoneURL {
            do { frames.append(.eddystone(.url(try EddystoneURL(txPowerAt0m: eddystone, url: eddystoneURL)))) } catch {
                throw ValidationError("--eddystone-url: \(error.reason)")
            }
        }
        if let eddystoneUID {
            let parts = eddystoneUID.split(separator: ":").map(String.init)
            guard parts.count == 2, let namespace = [UInt8](hex: parts[0]), let instance = [UInt8](hex: parts[1]),
                  let uid = try? EddystoneUID(txPowerAt0m: eddystone, namespace: namespace, instance: instance) else {
                throw ValidationError("--eddystone-uid: expected NAMESPACE:INSTANCE, 20 and 12 hex digits")
            }
            frames.append(.eddystone(.uid(uid)))
        }
        guard !frames.isEmpty else { throw ValidationError("give --ibeacon, --altbeacon, --eddystone-url or --eddystone-uid") }
        return frames
    }

    func validate() throws {
        _ = try frames()
        guard (20...10240).contains(interval) else { throw ValidationError("--interval must be within 20...10240 ms") }
        guard dwell > 0 else { throw ValidationError("--dwell must be at least 1 ms") }
    }

    func run() async throws {
        let frames = try frames()
        let hci = try await BeaconHCI.open(options)
        defer { hci.air?.shutdown() }
        let manager = try await hci.peripheralManager(deviceName: "ble beacon")
        do {
            try await advertise(frames, on: manager)
        } catch {
            await cleanUp { await manager.powerOff() }
            throw error
        }
        await cleanUp { await manager.powerOff() }
    }

    func advertise(_ frames: [BeaconFrame], on manager: PeripheralManager) async throws {
        let advertiser = BeaconAdvertiser(peripheral: manager)
        try await during("advertising") { try await advertiser.start(frames, interval: .milliseconds(interval), dwell: .milliseconds(dwell)) }
        for frame in frames {
            let bytes = frame.advertisingData.encoded
            if options.json {
                writeJSONLine([("event", .string("advertising")), ("frame", .string(frame.identifier?.description ?? "\(frame)")),
                               ("data", .string(bytes.hexString())), ("length", .int(bytes.count)), ("interval_ms", .int(interval))])
            } else {
                writeLine("advertising \(frame.identifier?.description ?? "\(frame)") every \(interval) ms, non-connectable (\(bytes.count) bytes: \(bytes.hexString()))")
            }
        }
        if frames.count > 1, !options.json { writeLine("rotating every \(dwell) ms") }
        if runFor > 0 {
            try await Task.sleep(for: .seconds(runFor))
        } else {
            while true { try await Task.sleep(for: .seconds(3600)) }
        }
        try await advertiser.stop()
    }
}

/// `ble range`: range beacons live, as a table refreshed in place or as JSON lines.
struct RangeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "range",
        abstract: "Range beacons: identifier, RSSI raw and smoothed, distance, proximity, last seen; refreshed every second.",
        discussion: """
            With --hci virtual (the default) three sample beacons stand 1, 3 and 6 m away on the embedded virtual air. \
            --json prints one object per beacon per update, numbers as numbers (last_seen: seconds since the beacon \
            was last heard).
            """)

    @OptionGroup var options: HostOptions
    @Option(help: "Only iBeacons and AltBeacons with this proximity UUID.")
    var uuid: String?
    @Option(help: "The path-loss exponent of the environment (2: free space, 2.5-4 indoors).")
    var exponent: Double = 2
    @Option(help: "Stop after this many seconds (0: until interrupted).")
    var runFor: Double = 0

    static let sampleUUID = BluetoothUUID("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0") ?? BluetoothUUID(0)

    /// Three beacons on the virtual air: iBeacons at 1 and 3 m, an Eddystone-URL at 6 m (−59 dBm at 1 m each).
    static func populate(_ air: VirtualAir) async throws -> [any Sendable] {
        let url = try EddystoneURL(txPowerAt0m: -18, url: "https://swift.org")
        let plan: [(Double, BeaconFrame)] = [
            (1, .iBeacon(IBeacon(proximityUUID: sampleUUID, major: 1, minor: 1, measuredPower: -59))),
            (3, .iBeacon(IBeacon(proximityUUID: sampleUUID, major: 1, minor: 2, measuredPower: -59))),
            (6, .eddystone(.url(url))),
        ]
        var advertisers: [any Sendable] = []
        for (x, frame) in plan {
            let controller = air.addController(.init(position: Position(x: x), txPower: -19))
            let advertiser = BeaconAdvertiser(peripheral: try await PeripheralManager(transport: controller.makeHostTransport()))
            try await advertiser.start(frame)
            advertisers.append(advertiser)
        }
        return advertisers
    }

    func validate() throws {
        if let uuid, BluetoothUUID(uuid) == nil { throw ValidationError("--uuid: '\(uuid)' is not a UUID") }
    }

    func run() async throws {
        var regions: [BeaconRegion] = []
        if let uuid, let parsed = BluetoothUUID(uuid) { regions = [BeaconRegion(name: "--uuid", uuid: parsed)] }
        let hci = try await BeaconHCI.open(options, populate: Self.populate)
        defer { hci.air?.shutdown() }
        let central = try await hci.central()
        do {
            try await range(regions, with: central)
        } catch {
            await cleanUp { await central.powerOff() }
            throw error
        }
        await cleanUp { await central.powerOff() }
    }

    func range(_ regions: [BeaconRegion], with central: Central) async throws {
        let updates = try await central.rangeBeacons(in: regions, configuration: .init(pathLoss: PathLossModel(exponent: exponent)))
        let json = options.json, terminal = standardOutputIsTerminal
        let ranging = Task {
            for try await update in updates {
                if json {
                    for beacon in update.beacons { writeJSONLine(Self.fields(beacon, time: update.time)) }
                } else {
                    let table = Self.table(update)
                    writeLine(terminal ? "\u{1B}[H\u{1B}[J" + table : table + "\n")
                }
            }
        }
        try await withTaskCancellationHandler {
            if runFor > 0 {
                try await Task.sleep(for: .seconds(runFor))
                ranging.cancel()
            } else {
                try await ranging.value
            }
        } onCancel: {
            ranging.cancel()
        }
        await central.stopScan()
    }

    static func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }

    /// One beacon as JSON fields.
    static func fields(_ beacon: RangedBeacon, time: Duration) -> [(String, JSONValue)] {
        var f: [(String, JSONValue)] = [("time", .number(seconds(time), decimals: 3)), ("identifier", .string(beacon.identifier.description))]
        switch beacon.identifier {
        case .iBeacon(let uuid, let major, let minor):
            f += [("format", .string("ibeacon")), ("uuid", .string(uuid.fullString)), ("major", .int(Int(major))), ("minor", .int(Int(minor)))]
        case .altBeacon(let id1, let id2, let id3):
            f += [("format", .string("altbeacon")), ("uuid", .string(id1.fullString)), ("major", .int(Int(id2))), ("minor", .int(Int(id3)))]
        case .eddystoneUID(let namespace, let instance):
            f += [("format", .string("eddystone-uid")), ("namespace", .string(namespace.hexString())), ("instance", .string(instance.hexString()))]
        case .eddystoneURL(let url):
            f += [("format", .string("eddystone-url")), ("url", .string(url))]
        case .eddystoneEID(let eid):
            f += [("format", .string("eddystone-eid")), ("eid", .string(eid.hexString()))]
        }
        f += [("measured_power", .int(beacon.measuredPower)), ("rssi", .int(beacon.rssi)),
              ("smoothed_rssi", beacon.smoothedRSSI.map { .number($0, decimals: 1) } ?? .null),
              ("distance", beacon.distance.map { .number($0, decimals: 2) } ?? .null),
              ("accuracy", beacon.accuracy.map { .number($0, decimals: 2) } ?? .null),
              ("proximity", .string(beacon.proximity.rawValue)),
              ("last_seen", .number(max(0, seconds(time - beacon.lastSeen)), decimals: 1)), ("samples", .int(beacon.sampleCount))]
        if let tlm = beacon.telemetry {
            f += [("battery_mv", .int(Int(tlm.batteryMillivolts))), ("temperature", tlm.temperature.map { .number($0, decimals: 2) } ?? .null),
                  ("advertising_count", .int(Int(tlm.advertisingPDUCount))), ("uptime", .number(Double(tlm.uptimeDeciseconds) / 10, decimals: 1))]
        }
        return f
    }

    /// The table of one update.
    static func table(_ update: BeaconRanger.Update) -> String {
        func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s : s + String(repeating: " ", count: n - s.count) }
        var lines = [String(format: "beacons at %.0f s, nearest first", seconds(update.time)),
                     pad("IDENTIFIER", 58) + pad("RSSI", 6) + pad("SMOOTH", 8) + pad("DISTANCE", 10) + pad("±", 8) + pad("PROXIMITY", 11) + "LAST SEEN"]
        for b in update.beacons {
            lines.append(pad(b.identifier.description.escapingControlCharacters, 58) + pad("\(b.rssi)", 6)
                         + pad(b.smoothedRSSI.map { String(format: "%.1f", $0) } ?? "-", 8)
                         + pad(b.distance.map { String(format: "%.2f m", $0) } ?? "-", 10)
                         + pad(b.accuracy.map { String(format: "%.2f m", $0) } ?? "-", 8)
                         + pad(b.proximity.rawValue, 11) + String(format: "%.1f s ago", max(0, seconds(update.time - b.lastSeen))))
            if let tlm = b.telemetry {
                lines.append("    telemetry: battery \(tlm.batteryMillivolts) mV, "
                             + (tlm.temperature.map { String(format: "%.2f °C", $0) } ?? "no temperature")
                             + ", \(tlm.advertisingPDUCount) PDUs, up " + String(format: "%.1f s", Double(tlm.uptimeDeciseconds) / 10))
            }
        }
        if update.beacons.isEmpty { lines.append("(none heard)") }
        return lines.joined(separator: "\n")
    }
}
