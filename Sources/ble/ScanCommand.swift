import ArgumentParser
import BLE
import BLEBeacons
import BLEFiles
import Foundation

/// `ble scan`: list advertising devices, one line each (or every report), or watch them in a live table.
struct Scan: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Scan for advertising devices.",
        discussion: """
            One line per device by default, its advertisement merged with its scan response (a device is held up to \
            \(Int(ScanPrinter.hold.components.seconds * 1000 + ScanPrinter.hold.components.attoseconds / 1_000_000_000_000_000)) ms \
            for its scan response, then printed once); --duplicates prints every report. --live shows a table that \
            updates in place: name, address, RSSI with a bar and its recent history, advertising interval, last \
            seen, services, decoded beacon or manufacturer data. Keys: s sort (RSSI, name, last seen), / filter by \
            name or service (Enter ends it, Esc clears it), q quit. When standard output is not a terminal, --live \
            prints the table as plain lines once a second.
            """)
    @OptionGroup var options: HostOptions
    @Option(name: .customLong("service"), help: "Only devices advertising this service UUID (repeatable).")
    var services: [BluetoothUUID] = []
    @Flag(help: "Report every advertisement, not one line per device.")
    var duplicates = false
    @Flag(help: "Passive scan: no scan requests, no scan responses.")
    var passive = false
    @Flag(help: "A full-screen table of the devices that updates in place (keys: s sort, / filter, q quit).")
    var live = false
    @Option(help: "Only devices whose name or a service contains this text (--live; / changes it).")
    var filter: String?
    @Option(help: "Seconds to scan (default: 3; with --live, until q or Ctrl-C).")
    var timeout: Double?
    @Option(help: "Primary advertising PHYs to scan: 1m (default), coded (long range) or both. Coded needs a controller with extended advertising.")
    var phy: ScanPHY = .oneM

    func validate() throws {
        if let timeout { guard timeout > 0, timeout.isFinite else { throw ValidationError("--timeout must be a positive number of seconds") } }
        if live, options.json { throw ValidationError("--live draws a table: use it without --json") }
    }

    func run() async throws {
        let json = options.json
        let duration = (live ? timeout : timeout ?? 3).map { Duration.milliseconds(Int(($0 * 1000).rounded())) }
        try await options.withCentral { central in
            // The central's scan merges advertising data with scan responses, filters on services found in either,
            // and reports a device again when its data changes (every report with duplicates). It stops by itself.
            let results = try await during("scanning") {
                try await central.scan(services: services, allowDuplicates: duplicates || live, active: !passive, timeout: duration,
                                       phys: phy.phys)
            }
            if live {
                var table = LiveScan(filter: filter ?? "")
                try await table.run(results)
                return
            }
            var printer = ScanPrinter(everyReport: duplicates, waitsForScanResponses: !passive)
            let (ticks, ticking) = AsyncStream.makeStream(of: Void.self)
            let ticker = Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(100))
                    ticking.yield()
                }
            }
            defer { ticker.cancel() }
            // Reports and ticks in one loop: a device waiting for its scan response is printed when it comes or when
            // its hold ends, whichever is first.
            let events = AsyncThrowingStream<DiscoveredPeripheral?, any Error> { continuation in
                let reading = Task {
                    do {
                        for try await device in results { continuation.yield(device) }
                        continuation.finish()
                    } catch {
                        continuation.finish(throwing: error)
                    }
                }
                let clock = Task {
                    for await _ in ticks { continuation.yield(nil) }
                }
                continuation.onTermination = { _ in
                    reading.cancel()
                    clock.cancel()
                }
            }
            for try await event in events {
                for device in printer.receive(event, at: .now) { Self.print(device, json: json) }
            }
            for device in printer.flush() { Self.print(device, json: json) }
        }
    }

    static func print(_ device: DiscoveredPeripheral, json: Bool) {
        let uuids = device.serviceUUIDs.map(\.description)
        let manufacturer = device.manufacturerData.map { "\($0.companyID):\($0.data.hexString())" }.joined(separator: ",")
        // How it was heard: the primary PHY, and for extended advertising its SID, secondary PHY, TX power and size.
        var air = "\(phyName(device.primaryPHY)) \(device.isLegacy ? "legacy" : "extended")"
        if !device.isLegacy {
            if let sid = device.advertisingSID { air += " SID \(sid)" }
            if let secondary = device.secondaryPHY { air += " secondary \(phyName(secondary))" }
            if let tx = device.txPower { air += " TX \(tx) dBm" }
            air += " \(device.advertisementData.encoded.count) bytes\(device.isTruncated ? " truncated" : "")"
        }
        emit(json, "\(device.address.address) \(device.address.type) RSSI \(device.rssi) dBm\(device.isConnectable ? " connectable" : "") \(device.name.map { "\"\($0.escapingControlCharacters)\"" } ?? "(no name)") services \(uuids)\(manufacturer.isEmpty ? "" : " mfr \(manufacturer)") [\(air)]",
             ["address": .string(device.address.address.description), "addressType": .string("\(device.address.type)"),
              "rssi": .integer(device.rssi), "name": device.name.map(JSONValue.string) ?? .null,
              "services": .array(uuids.map(JSONValue.string)),
              "manufacturer": .array(device.manufacturerData.map { ["companyID": .integer($0.companyID.rawValue), "data": .string($0.data.hexString())] }),
              "connectable": .bool(device.isConnectable), "advertising": advertisingJSON(device)])
    }

    /// How a device was heard: `{"phy":"1M"|"Coded","extended":BOOL[,"sid":N][,"secondaryPHY":..][,"txPower":N],
    /// "dataLength":N,"truncated":BOOL}`.
    static func advertisingJSON(_ device: DiscoveredPeripheral) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [("phy", .string(phyName(device.primaryPHY))), ("extended", .bool(!device.isLegacy))]
        if let sid = device.advertisingSID { members.append(("sid", .integer(sid))) }
        if let secondary = device.secondaryPHY { members.append(("secondaryPHY", .string(phyName(secondary)))) }
        if let tx = device.txPower { members.append(("txPower", .integer(tx))) }
        members.append(("dataLength", .integer(device.advertisementData.encoded.count)))
        members.append(("truncated", .bool(device.isTruncated)))
        return .object(members)
    }

    /// "1M", "2M" or "Coded".
    static func phyName(_ phy: LEPHY) -> String {
        switch phy {
        case .le2M: "2M"
        case .leCoded: "Coded"
        default: "1M"
        }
    }
}

/// `ble scan --phy`: the primary advertising PHYs scanned.
enum ScanPHY: String, ExpressibleByArgument, CaseIterable {
    case oneM = "1m"
    case coded
    case both

    /// `1m`, `coded`, `both`, or the PHYs as a comma-separated list (`1m,coded` or `coded,1m` is `both`, as the
    /// issue and ESPHome users write it); `nil` for anything else.
    init?(argument: String) {
        let text = argument.lowercased()
        if let value = ScanPHY(rawValue: text) {
            self = value
            return
        }
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        guard parts.count > 1, parts.allSatisfy({ $0 == "1m" || $0 == "coded" }) else { return nil }
        self = Set(parts).count == 2 ? .both : parts[0] == "1m" ? .oneM : .coded
    }

    var phys: LEPHYs {
        switch self {
        case .oneM: .le1M
        case .coded: .leCoded
        case .both: [.le1M, .leCoded]
        }
    }
}

/// Decides what `ble scan` prints: every report (`--duplicates`), or one line per device: on an active scan a
/// connectable device is held until its data changes once more (its scan response merged in) or for ``hold``, then
/// printed with what was heard, and never again.
struct ScanPrinter {
    /// How long a device is held for its scan response.
    static let hold: Duration = .milliseconds(400)
    let everyReport: Bool
    let waitsForScanResponses: Bool
    /// A device, or one advertising set of it (extended advertising: one address, several SIDs).
    struct Key: Hashable {
        var address: BluetoothAddress
        var sid: UInt8?
    }
    private var held: [Key: (device: DiscoveredPeripheral, since: ContinuousClock.Instant)] = [:]
    private var order: [Key] = []
    private var printed: Set<Key> = []

    init(everyReport: Bool, waitsForScanResponses: Bool = true) {
        self.everyReport = everyReport
        self.waitsForScanResponses = waitsForScanResponses
    }

    /// A report (`nil`: time passing) at `now`; returns the devices to print now, in the order they were first heard.
    mutating func receive(_ device: DiscoveredPeripheral?, at now: ContinuousClock.Instant) -> [DiscoveredPeripheral] {
        var out: [DiscoveredPeripheral] = []
        if let device {
            if everyReport { return [device] }
            let address = Key(address: device.address.address, sid: device.advertisingSID)
            if printed.contains(address) { return [] }
            if held[address] != nil {
                // The device's data changed after it was first heard: its scan response merged in. Print it now.
                held[address] = nil
                order.removeAll { $0 == address }
                printed.insert(address)
                out.append(device)
            } else if !device.isConnectable || !waitsForScanResponses {
                // A passive scan hears no scan response; most non-connectable advertisers (beacons) answer no scan
                // request. Nothing to wait for.
                printed.insert(address)
                out.append(device)
            } else {
                held[address] = (device, now)
                order.append(address)
            }
        }
        for address in order {
            guard let waiting = held[address], now - waiting.since >= Self.hold else { continue }
            held[address] = nil
            printed.insert(address)
            out.append(waiting.device)
        }
        order.removeAll { held[$0] == nil }
        return out
    }

    /// The devices still held when the scan ends.
    mutating func flush() -> [DiscoveredPeripheral] {
        let out = order.compactMap { held[$0]?.device }
        for address in order { printed.insert(address) }
        held = [:]
        order = []
        return out
    }
}
