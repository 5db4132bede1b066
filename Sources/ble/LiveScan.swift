import BLE
import BLEBeacons
import Foundation

/// What `ble scan --live` knows of one device.
struct ScanRow {
    var address: LEAddress
    var name: String?
    var rssi: Int
    /// The last RSSI values, oldest first (at most ``ScanTable/historyLength``).
    var history: [Int]
    var connectable: Bool
    var services: [BluetoothUUID]
    /// A beacon frame or manufacturer data, decoded where a format is known.
    var detail: String
    var firstSeen: ContinuousClock.Instant
    var lastSeen: ContinuousClock.Instant
    /// The gaps between reports (the recent ones), for the advertising interval.
    var gaps: [Duration]

    /// The advertising interval: the median gap between reports, leaving out the scan response that follows its
    /// advertisement within milliseconds.
    var interval: Duration? {
        let gaps = self.gaps.filter { $0 >= .milliseconds(5) }.sorted()
        return gaps.isEmpty ? nil : gaps[gaps.count / 2]
    }
}

/// The live table of `ble scan --live`: rows by address, sorted and filtered, drawn as lines.
struct ScanTable {
    enum Sort: String, CaseIterable {
        case rssi = "RSSI", name, lastSeen = "last seen"
    }
    static let historyLength = 8
    var rows: [BluetoothAddress: ScanRow] = [:]
    var sort: Sort = .rssi
    var filter = ""

    mutating func update(_ device: DiscoveredPeripheral, at now: ContinuousClock.Instant) {
        let address = device.address.address
        var row = rows[address] ?? ScanRow(address: device.address, name: nil, rssi: Int(device.rssi), history: [], connectable: device.isConnectable,
                                           services: [], detail: "", firstSeen: now, lastSeen: now, gaps: [])
        if rows[address] != nil { row.gaps = Array((row.gaps + [now - row.lastSeen]).suffix(32)) }
        row.name = device.name ?? row.name
        row.rssi = Int(device.rssi)
        row.history = Array((row.history + [Int(device.rssi)]).suffix(Self.historyLength))
        row.connectable = device.isConnectable
        row.services = device.serviceUUIDs
        row.detail = Self.detail(of: device)
        row.lastSeen = now
        rows[address] = row
    }

    /// A beacon frame decoded (iBeacon, AltBeacon, Eddystone), else the manufacturer data with its company.
    static func detail(of device: DiscoveredPeripheral) -> String {
        if let frame = try? BeaconFrame(advertisingData: device.advertisementData) {
            switch frame {
            case .iBeacon(let beacon): return "\(beacon.description) \(beacon.measuredPower) dBm"
            case .altBeacon(let beacon): return beacon.description
            case .eddystone(let frame): return "\(frame)"
            }
        }
        return device.manufacturerData.map { data in
            let text = String(decoding: data.data, as: UTF8.self)
            let printable = !data.data.isEmpty && text.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value < 0x7F }
            return "mfr \(data.companyID) \(printable ? "\"\(text)\"" : data.data.hexString())"
        }.joined(separator: ", ")
    }

    /// The rows shown: those the filter matches (in the name or a service, case-insensitively), sorted.
    var visible: [ScanRow] {
        let needle = filter.lowercased()
        let shown = rows.values.filter { row in
            needle.isEmpty || (row.name ?? "").lowercased().contains(needle)
                || row.services.contains { "\($0)".lowercased().contains(needle) || ($0.name ?? "").lowercased().contains(needle) }
        }
        return shown.sorted { a, b in
            switch sort {
            case .rssi: a.rssi != b.rssi ? a.rssi > b.rssi : a.address.address.description < b.address.address.description
            case .name: (a.name ?? "\u{10FFFF}", a.address.address.description) < (b.name ?? "\u{10FFFF}", b.address.address.description)
            case .lastSeen: a.lastSeen != b.lastSeen ? a.lastSeen > b.lastSeen : a.address.address.description < b.address.address.description
            }
        }
    }

    /// The table as lines of at most `width` characters: a title, the keys, a header, a row per device.
    func lines(now: ContinuousClock.Instant, width: Int, editingFilter: Bool) -> [String] {
        let shown = visible
        var lines = ["ble scan --live: \(rows.count) device\(rows.count == 1 ? "" : "s"), \(shown.count) shown, sorted by \(sort.rawValue)"
                     + (filter.isEmpty && !editingFilter ? "" : ", filter: \(filter.escapingControlCharacters)\(editingFilter ? "_" : "")"),
                     "keys: s sort, / filter, Esc clear filter, q quit",
                     Self.columns("NAME", "ADDRESS", "RSSI", "", "HISTORY", "INTERVAL", "LAST", "SERVICES", "DATA")]
        for row in shown {
            let interval = row.interval.map { "\(Int(($0 / .milliseconds(1)).rounded())) ms" } ?? "-"
            let seen = "\(fixed1((now - row.lastSeen) / .seconds(1))) s"
            lines.append(Self.columns((row.name ?? "(no name)").escapingControlCharacters, row.address.address.description, "\(row.rssi)",
                                      Self.bar(row.rssi), Self.sparkline(row.history), interval, seen,
                                      row.services.map { $0.name ?? "\($0)" }.joined(separator: ","), row.detail.escapingControlCharacters))
        }
        return lines.map { String($0.prefix(width)) }
    }

    static func columns(_ name: String, _ address: String, _ rssi: String, _ bar: String, _ history: String, _ interval: String,
                        _ seen: String, _ services: String, _ detail: String) -> String {
        [pad(name, 22), pad(address, 17), pad(rssi, 4, right: true), pad(bar, 5), pad(history, 8), pad(interval, 8, right: true),
         pad(seen, 7, right: true), pad(services, 34), detail].joined(separator: " ")
    }

    static func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
        let cut = String(text.prefix(width))
        let fill = String(repeating: " ", count: max(0, width - cut.count))
        return right ? fill + cut : cut + fill
    }

    /// -100 dBm (nothing) to -30 dBm (full) in five blocks.
    static func bar(_ rssi: Int) -> String {
        let filled = max(0, min(5, (rssi + 100 + 7) / 14))
        return String(repeating: "█", count: filled) + String(repeating: "·", count: 5 - filled)
    }

    /// The history as a sparkline, -100 to -30 dBm.
    static func sparkline(_ history: [Int]) -> String {
        let levels = Array("▁▂▃▄▅▆▇█")
        return String(history.map { levels[max(0, min(7, ($0 + 100) * 8 / 71))] })
    }
}

private func fixed1(_ value: Double) -> String {
    let tenths = Int((value * 10).rounded())
    return "\(tenths / 10).\(tenths % 10)"
}

/// `ble scan --live`: the table, redrawn in place on a terminal (the alternate screen, keys read raw), or printed as
/// plain lines once a second when standard output is not a terminal.
struct LiveScan {
    var table = ScanTable()
    var editingFilter = false

    init(filter: String) { table.filter = filter }

    enum Event {
        case device(DiscoveredPeripheral)
        case key(UInt8)
        case tick
        case inputEnded
    }

    mutating func run(_ results: AsyncThrowingStream<DiscoveredPeripheral, any Error>) async throws {
        let terminal = standardOutputIsTerminal
        let keyboard = terminal && isatty(STDIN_FILENO) != 0 ? RawKeyboard() : nil
        if terminal { writeRaw("\u{1B}[?1049h\u{1B}[?25l") }
        defer {
            if terminal { writeRaw("\u{1B}[?25h\u{1B}[?1049l") }
            keyboard?.restore()
        }
        let (events, continuation) = AsyncThrowingStream.makeStream(of: Event.self)
        let reading = Task {
            do {
                for try await device in results { continuation.yield(.device(device)) }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        let ticking = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: terminal ? .milliseconds(250) : .seconds(1))
                continuation.yield(.tick)
            }
        }
        keyboard?.start { byte in continuation.yield(byte.map(Event.key) ?? .inputEnded) }
        defer {
            reading.cancel()
            ticking.cancel()
        }
        for try await event in events {
            switch event {
            case .device(let device):
                table.update(device, at: .now)
            case .key(let key):
                if handle(key) { return }
                if terminal { draw() }
            case .tick:
                if terminal { draw() } else { printPlain() }
            case .inputEnded:
                break
            }
        }
        if !terminal { printPlain() }
    }

    /// A key; returns whether to quit.
    mutating func handle(_ key: UInt8) -> Bool {
        if editingFilter {
            switch key {
            case 0x0D, 0x0A: editingFilter = false
            case 0x1B: editingFilter = false; table.filter = ""
            case 0x7F, 0x08: if !table.filter.isEmpty { table.filter.removeLast() }
            case 0x20..<0x7F: table.filter.append(Character(UnicodeScalar(key)))
            default: break
            }
            return false
        }
        switch key {
        case UInt8(ascii: "q"), UInt8(ascii: "Q"), 0x03: return true
        case UInt8(ascii: "s"):
            let all = ScanTable.Sort.allCases
            table.sort = all[((all.firstIndex(of: table.sort) ?? 0) + 1) % all.count]
        case UInt8(ascii: "/"), UInt8(ascii: "f"):
            editingFilter = true
            table.filter = ""
        case 0x1B: table.filter = ""
        default: break
        }
        return false
    }

    func draw() {
        var size = winsize()
        let width = ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 0 ? Int(size.ws_col) : 120
        let height = size.ws_row > 0 ? Int(size.ws_row) : 40
        let lines = table.lines(now: .now, width: width, editingFilter: editingFilter).prefix(max(1, height - 1))
        writeRaw("\u{1B}[H" + lines.map { $0 + "\u{1B}[K" }.joined(separator: "\r\n") + "\u{1B}[J")
    }

    func printPlain() {
        writeLine(table.lines(now: .now, width: 1000, editingFilter: false).joined(separator: "\n") + "\n")
    }
}

/// Writes without a newline (the live table's escape sequences).
func writeRaw(_ text: String) {
    do {
        try FileHandle.standardOutput.write(contentsOf: Data(text.utf8))
    } catch {
        exit(0)
    }
}

/// Standard input in raw mode (no echo, a key at a time), read on a thread of its own; the settings are restored by
/// ``restore()``.
final class RawKeyboard: @unchecked Sendable {
    private var original = termios()
    private let saved: Bool

    init() {
        saved = tcgetattr(STDIN_FILENO, &original) == 0
        guard saved else { return }
        var raw = original
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        withUnsafeMutableBytes(of: &raw.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        tcsetattr(STDIN_FILENO, TCSANOW, &raw)
    }

    /// Calls `key` with each byte typed, then with `nil` at the end of the input.
    func start(_ key: @escaping @Sendable (UInt8?) -> Void) {
        Thread.detachNewThread {
            var byte: UInt8 = 0
            while read(STDIN_FILENO, &byte, 1) == 1 { key(byte) }
            key(nil)
        }
    }

    func restore() {
        if saved { tcsetattr(STDIN_FILENO, TCSANOW, &original) }
    }
}
