import ArgumentParser
import BLE
import BLEFiles
import Foundation

/// `ble info [--hci SPEC] [--json]`: what the controller is and can do, as the host read it at power-on.
struct Info: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Power the controller on and print what it is and can do.",
        discussion: """
            Prints the controller's HCI and LMP versions, its maker, its public address, its ACL buffers, the largest \
            data length it supports, its PHYs, its list sizes, its LMP and LE features and the HCI commands it lists, \
            as the host read them at power-on. The host sends a controller none of the commands it does not list. \
            With --json, one JSON object with the same fields.
            """)

    @OptionGroup var options: HostOptions

    func run() async throws {
        try await options.prepareWorld()
        let adapter = try await Adapter.open(try options.spec(), btsnoop: options.btsnoop)
        let capabilities = await adapter.capabilities
        await cleanUp { await adapter.powerOff() }
        if options.json {
            writeJSONLine(Self.fields(capabilities))
        } else {
            for line in Self.lines(capabilities) { writeLine(line) }
        }
    }

    /// `0x0000006000000000`.
    static func hex64(_ value: UInt64) -> String {
        "0x" + (0..<8).map { UInt8(truncatingIfNeeded: value >> (8 * (7 - UInt64($0)))) }.hexString().uppercased()
    }

    /// `0xFFFF`.
    static func hex16(_ value: UInt16) -> String { "0x" + hex4(value).uppercased() }

    /// The LMP features of page 0 by bit number (Core 5.4, Vol 2, Part C, 3.3, Table 3.2); bit 8 was used before
    /// and the reserved bits have no name.
    static let lmpFeatureNames: [Int: String] = [
        0: "3 slot packets",
        1: "5 slot packets",
        2: "Encryption",
        3: "Slot offset",
        4: "Timing accuracy",
        5: "Role switch",
        6: "Hold mode",
        7: "Sniff mode",
        9: "Power control requests",
        10: "Channel quality driven data rate (CQDDR)",
        11: "SCO link",
        12: "HV2 packets",
        13: "HV3 packets",
        14: "u-law log synchronous data",
        15: "A-law log synchronous data",
        16: "CVSD synchronous data",
        17: "Paging parameter negotiation",
        18: "Power control",
        19: "Transparent synchronous data",
        20: "Flow control lag (least significant bit)",
        21: "Flow control lag (middle bit)",
        22: "Flow control lag (most significant bit)",
        23: "Broadcast Encryption",
        25: "Enhanced Data Rate ACL 2 Mb/s mode",
        26: "Enhanced Data Rate ACL 3 Mb/s mode",
        27: "Enhanced inquiry scan",
        28: "Interlaced inquiry scan",
        29: "Interlaced page scan",
        30: "RSSI with inquiry results",
        31: "Extended SCO link (EV3 packets)",
        32: "EV4 packets",
        33: "EV5 packets",
        35: "AFH capable peripheral",
        36: "AFH classification peripheral",
        37: "BR/EDR Not Supported",
        38: "LE Supported (Controller)",
        39: "3-slot Enhanced Data Rate ACL packets",
        40: "5-slot Enhanced Data Rate ACL packets",
        41: "Sniff subrating",
        42: "Pause encryption",
        43: "AFH capable central",
        44: "AFH classification central",
        45: "Enhanced Data Rate eSCO 2 Mb/s mode",
        46: "Enhanced Data Rate eSCO 3 Mb/s mode",
        47: "3-slot Enhanced Data Rate eSCO packets",
        48: "Extended Inquiry Response",
        49: "Simultaneous LE and BR/EDR to Same Device Capable (Controller)",
        51: "Secure Simple Pairing (Controller Support)",
        52: "Encapsulated PDU",
        53: "Erroneous Data Reporting",
        54: "Non-flushable Packet Boundary Flag",
        56: "HCI_Link_Supervision_Timeout_Changed event",
        57: "Variable Inquiry TX Power Level",
        58: "Enhanced Power Control",
        63: "Extended features",
    ]

    static func lmpFeatureList(_ features: UInt64) -> [String] {
        (0..<64).filter { features & (1 << UInt64($0)) != 0 }.map { lmpFeatureNames[$0] ?? "bit \($0)" }
    }

    static func phyNames(_ phys: LEPHYs) -> [String] {
        [(LEPHYs.le1M, "LE 1M"), (.le2M, "LE 2M"), (.leCoded, "LE Coded")].filter { phys.contains($0.0) }.map(\.1)
    }

    static func company(_ id: CompanyIdentifier) -> String { id.name ?? "unknown company" }

    /// The text form.
    static func lines(_ c: ControllerCapabilities) -> [String] {
        var out: [String] = []
        func row(_ label: String, _ value: String) { out.append(label.padding(toLength: 20, withPad: " ", startingAt: 0) + value) }
        if let v = c.version {
            row("HCI version", "\(v.hciVersion) (0x\([v.hciVersion.rawValue].hexString().uppercased())), revision \(hex16(v.hciRevision))")
            row("LMP version", "\(v.lmpVersion) (0x\([v.lmpVersion.rawValue].hexString().uppercased())), subversion \(hex16(v.lmpSubversion))")
            row("manufacturer", "\(company(v.company)) (\(hex16(v.company.rawValue)))")
        } else {
            row("version", "not read (Read Local Version Information is not supported)")
        }
        row("public address", c.publicAddress.map { "\($0)" } ?? "none")
        if let b = c.buffers {
            row("ACL buffers", "\(b.aclPacketCount) x \(b.aclPacketLength) octets (\(b.source))")
            if b.isoPacketCount > 0 { row("ISO buffers", "\(b.isoPacketCount) x \(b.isoPacketLength) octets") }
        }
        if let d = c.maximumDataLength {
            row("max data length", "TX \(d.maxTxOctets) octets / \(d.maxTxTime) µs, RX \(d.maxRxOctets) octets / \(d.maxRxTime) µs")
        } else {
            row("max data length", "27 octets (no LE Data Length Extension)")
        }
        row("PHYs", phyNames(c.supports(.phyUpdate) ? c.phys : .le1M).joined(separator: ", "))
        row("filter accept list", c.filterAcceptListSize.map { "\($0) entries" } ?? "size not readable")
        row("resolving list", c.resolvingListSize.map { "\($0) entries" } ?? "size not readable")
        row("LMP features", "\(hex64(c.lmpFeatures)): \(lmpFeatureList(c.lmpFeatures).joined(separator: ", "))")
        row("LE features", "\(hex64(c.leFeatures.rawValue)): \(c.leFeatures.names.joined(separator: ", "))")
        let names = c.supportedCommands.listedNames
        let source = c.commandSource == .controller ? "as the controller lists them" : "assumed: the controller did not list them"
        out.append("supported commands  \(names.count) (\(source)):")
        out += names.map { "  \($0)" }
        return out
    }

    /// The JSON form: the same fields.
    static func fields(_ c: ControllerCapabilities) -> [(String, JSONValue)] {
        var out: [(String, JSONValue)] = []
        if let v = c.version {
            out += [("hciVersion", .string(v.hciVersion.description)), ("hciVersionNumber", .int(Int(v.hciVersion.rawValue))),
                    ("hciRevision", .int(Int(v.hciRevision))),
                    ("lmpVersion", .string(v.lmpVersion.description)), ("lmpVersionNumber", .int(Int(v.lmpVersion.rawValue))),
                    ("lmpSubversion", .int(Int(v.lmpSubversion))),
                    ("companyIdentifier", .int(Int(v.company.rawValue))), ("company", .string(company(v.company)))]
        } else {
            out += [("hciVersion", .null), ("lmpVersion", .null), ("companyIdentifier", .null), ("company", .null)]
        }
        out.append(("publicAddress", c.publicAddress.map { .string("\($0)") } ?? .null))
        if let b = c.buffers {
            out.append(("aclBuffers", .object([(key: "length", value: .int(b.aclPacketLength)), (key: "count", value: .int(b.aclPacketCount)),
                                                (key: "source", value: .string(b.source.description))])))
            out.append(("isoBuffers", .object([(key: "length", value: .int(b.isoPacketLength)), (key: "count", value: .int(b.isoPacketCount))])))
        } else {
            out += [("aclBuffers", .null), ("isoBuffers", .null)]
        }
        if let d = c.maximumDataLength {
            out.append(("maximumDataLength", .object([(key: "txOctets", value: .int(d.maxTxOctets)), (key: "txTime", value: .int(d.maxTxTime)),
                                                       (key: "rxOctets", value: .int(d.maxRxOctets)), (key: "rxTime", value: .int(d.maxRxTime))])))
        } else {
            out.append(("maximumDataLength", .null))
        }
        out.append(("dataLengthExtension", .bool(c.supports(.dataLengthExtension))))
        out.append(("phys", .array(phyNames(c.supports(.phyUpdate) ? c.phys : .le1M).map { .string($0) })))
        out.append(("filterAcceptListSize", c.filterAcceptListSize.map { .int($0) } ?? .null))
        out.append(("resolvingListSize", c.resolvingListSize.map { .int($0) } ?? .null))
        out.append(("lmpFeatures", .string(hex64(c.lmpFeatures))))
        out.append(("lmpFeatureNames", .array(lmpFeatureList(c.lmpFeatures).map { .string($0) })))
        out.append(("leFeatures", .string(hex64(c.leFeatures.rawValue))))
        out.append(("leFeatureNames", .array(c.leFeatures.names.map { .string($0) })))
        out.append(("supportedCommandsSource", .string(c.commandSource.description)))
        out.append(("supportedCommands", .array(c.supportedCommands.listedNames.map { .string($0) })))
        out.append(("supportedCommandsMask", .string(c.supportedCommands.octets.hexString())))
        return out
    }
}
