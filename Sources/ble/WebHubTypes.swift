import BLE
import BLEBeacons
import BLEFiles
import BLEProfiles
import BLETransport
import BLEWeb
import BLEWire
import Foundation

/// A request the hub refuses, with the message the page shows.
struct WebRequestFailure: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// What the scanner knows of one device.
struct ScanRowState {
    let key: String
    var device: DiscoveredPeripheral
    let firstSeen: Duration
    var lastSeen: Duration
    var reports = 0
    /// The mean time between reports (the advertising interval as heard, with the packets missed).
    var meanInterval: Duration?

    init(key: String, device: DiscoveredPeripheral, firstSeen: Duration) {
        self.key = key
        self.device = device
        self.firstSeen = firstSeen
        self.lastSeen = firstSeen
    }

    mutating func update(_ device: DiscoveredPeripheral, at time: Duration) {
        if reports > 0 {
            let gap = time - lastSeen
            meanInterval = meanInterval.map { ($0 * 7 + gap) / 8 } ?? gap
        }
        reports += 1
        lastSeen = time
        // A report without the name (an advertisement after a scan response) keeps what was known.
        var merged = device
        if device.name == nil, self.device.name != nil {
            var structures = self.device.advertisementData.structures
            for s in device.advertisementData.structures where !structures.contains(s) { structures.append(s) }
            merged.advertisementData = AdvertisingData(structures: structures)
        }
        self.device = merged
    }

    /// What the last batch's row of this device carried of what rarely changes (the advertising data, whether it is
    /// connectable, its TX power), and when it was last sent whole.
    private var sentSignature: [UInt8]?
    private var lastWhole: Duration?

    private var signature: [UInt8] {
        device.advertisementData.encoded + [device.isConnectable ? 1 : 0, UInt8(bitPattern: device.txPower ?? 127)]
    }

    /// The row for the next batch: whole when what rarely changes changed (or every 5 s, for a tab that skipped a
    /// batch), else only the address, RSSI, interval and count, which the page merges into the row it has.
    mutating func nextUpdate(at time: Duration) -> JSONValue {
        let current = signature
        if current != sentSignature || lastWhole.map({ time - $0 >= .seconds(5) }) ?? true {
            sentSignature = current
            lastWhole = time
            return json
        }
        return ["address": .string(key), "rssi": .integer(device.rssi), "intervalMs": intervalMilliseconds.map(JSONValue.int) ?? .null,
                "reports": .int(reports)]
    }

    private var intervalMilliseconds: Int? {
        meanInterval.map { Int($0.components.seconds * 1000 + $0.components.attoseconds / 1_000_000_000_000_000) }
    }

    /// The whole row.
    var json: JSONValue {
        let d = device
        let ms = intervalMilliseconds
        let structures: [JSONValue] = d.advertisementData.structures.map { s in
            ["type": .integer(s.type.rawValue), "hex": .string(s.data.hexString())]
        }
        return ["address": .string(key), "addressType": .string("\(d.address.type)"),
                "name": d.name.map(JSONValue.string) ?? .null, "rssi": .integer(d.rssi),
                "txPower": d.txPower.map(JSONValue.integer) ?? ((try? d.advertisementData.txPowerLevel()) ?? nil).map(JSONValue.integer) ?? .null,
                "connectable": .bool(d.isConnectable),
                "services": .array(d.serviceUUIDs.map { ["uuid": .string($0.description), "name": $0.name.map(JSONValue.string) ?? .null] }),
                "detail": .string(ScanTable.detail(of: d)),
                "raw": .string(d.advertisementData.encoded.hexString()), "ad": .array(structures),
                "intervalMs": ms.map(JSONValue.int) ?? .null, "reports": .int(reports)]
    }
}

/// A link the page made.
struct WebLink {
    let address: String
    let name: String?
    let peripheral: RemotePeripheral
    let mtu: Int
    let services: [GATTDiscoveredService]
    var characteristics: [UInt16: GATTCharacteristic] = [:]
    var descriptors: [UInt16: GATTDescriptor] = [:]
    var subscriptions: [UInt16: Task<Void, Never>] = [:]
    /// How the link is secured, once the page paired.
    var security: String?
    /// The link's PHYs (`TX 1M, RX 1M`).
    var phy: String

    init(address: String, name: String?, peripheral: RemotePeripheral, mtu: Int, services: [GATTDiscoveredService]) {
        self.address = address
        self.name = name
        self.peripheral = peripheral
        self.mtu = mtu
        self.services = services
        phy = "TX 1M, RX 1M"
        for s in services {
            for c in s.characteristics {
                characteristics[c.characteristic.valueHandle.rawValue] = c.characteristic
                for d in c.descriptors { descriptors[d.handle.rawValue] = d }
            }
        }
    }

    var json: JSONValue {
        let tree: [JSONValue] = services.map { s in
            ["uuid": .string(s.service.uuid.description), "name": s.service.uuid.name.map(JSONValue.string) ?? .null,
             "start": .integer(s.service.startHandle.rawValue), "end": .integer(s.service.endHandle.rawValue),
             "characteristics": .array(s.characteristics.map { c in
                 ["uuid": .string(c.characteristic.uuid.description), "name": c.characteristic.uuid.name.map(JSONValue.string) ?? .null,
                  "handle": .integer(c.characteristic.valueHandle.rawValue),
                  "properties": .array(propertyNames(c.characteristic.properties).map(JSONValue.string)),
                  "subscribed": .bool(subscriptions[c.characteristic.valueHandle.rawValue] != nil),
                  "descriptors": .array(c.descriptors.map { d in
                      ["uuid": .string(d.uuid.description), "name": d.uuid.name.map(JSONValue.string) ?? .null, "handle": .integer(d.handle.rawValue)]
                  })]
             })]
        }
        return ["address": .string(address), "name": name.map(JSONValue.string) ?? .null, "state": "connected",
                "mtu": .int(mtu), "phy": .string(phy), "security": security.map(JSONValue.string) ?? .null, "services": .array(tree)]
    }
}

/// A virtual device the page started.
struct VirtualEntry {
    let name: String
    let kind: String
    let manager: PeripheralManager
    let ownsAdapter: Bool
    let stopper: @Sendable () async -> Void

    func stop() async {
        await stopper()
        if ownsAdapter { await manager.powerOff() }
    }

    func json(id: Int) -> JSONValue { ["id": .int(id), "name": .string(name), "kind": .string(kind)] }
}

/// One HCI packet of the trace as the page lists it.
enum TraceLine {
    static let eventNames: [UInt8: String] = [
        0x05: "Disconnection Complete", 0x08: "Encryption Change", 0x0E: "Command Complete", 0x0F: "Command Status",
        0x13: "Number Of Completed Packets", 0x1A: "Data Buffer Overflow", 0x30: "Encryption Key Refresh Complete",
        0x3E: "LE Meta", 0xFF: "Vendor",
    ]

    static let leSubeventNames: [UInt8: String] = [
        0x01: "Connection Complete", 0x02: "Advertising Report", 0x03: "Connection Update Complete",
        0x04: "Read Remote Features Complete", 0x05: "Long Term Key Request", 0x06: "Remote Connection Parameter Request",
        0x07: "Data Length Change", 0x0A: "Enhanced Connection Complete", 0x0C: "PHY Update Complete",
        0x0D: "Extended Advertising Report", 0x12: "Advertising Set Terminated", 0x13: "Scan Request Received",
        0x29: "Enhanced Connection Complete [v2]",
    ]

    static let channelNames: [UInt16: String] = [0x0004: "ATT", 0x0005: "LE signaling", 0x0006: "SMP"]

    static func json(_ record: BTSnoopRecord) -> JSONValue {
        let direction = record.direction == .sent ? "host→controller" : "controller→host"
        var summary = "packet"
        if let packet = try? HCIPacket(h4: record.h4Bytes) {
            switch packet {
            case .command(let c):
                summary = "Command \(HCISupportedCommands.name(of: c.opcode) ?? "opcode \(c.opcode)") (\(c.parameters.count) bytes)"
            case .event(let e):
                let name = eventNames[e.code.rawValue] ?? "event \(e.code)"
                var detail = ""
                if e.code.rawValue == 0x3E, let sub = e.parameters.first {
                    detail = " " + (leSubeventNames[sub] ?? "subevent 0x\([sub].hexString())")
                }
                if e.code.rawValue == 0x0E, e.parameters.count >= 3 {
                    let opcode = HCIOpcode(rawValue: UInt16(e.parameters[1]) | UInt16(e.parameters[2]) << 8)
                    detail = " for \(HCISupportedCommands.name(of: opcode) ?? "\(opcode)")"
                }
                summary = "Event \(name)\(detail)"
            case .acl(let a):
                summary = "ACL handle \(a.handle) \(a.data.count) bytes"
                // The start of an L2CAP PDU: its length, then its channel; for ATT, its opcode.
                if a.boundary.isStart, a.data.count >= 4 {
                    let cid = UInt16(a.data[2]) | UInt16(a.data[3]) << 8
                    summary += ", L2CAP " + (channelNames[cid] ?? "CID 0x\(hex4(cid))")
                    if cid == 0x0004, a.data.count >= 5 { summary += " opcode 0x\([a.data[4]].hexString())" }
                }
            case .other(let type, let body):
                summary = "\(type) \(body.count) bytes"
            }
        }
        return ["dir": .string(direction), "summary": .string(summary), "hex": .string(record.h4Bytes.prefix(64).hexString())]
    }
}

extension JSONValue {
    /// An object with one more member in front.
    func adding(_ key: String, _ value: JSONValue) -> JSONValue {
        guard case .object(let members) = self else { return self }
        return .object([(key: key, value: value)] + members)
    }
}

/// What the user answered to a pairing prompt.
struct PromptAnswer: Sendable {
    var passkey: UInt32?
    var confirmed: Bool
}

/// The user's part in pairing, in the page: a passkey to type is asked in every open tab (the first answer counts), a
/// passkey to show is shown there, a numeric comparison is asked there.
struct WebPairingAgent: PairingAgent {
    weak let hub: WebHub?

    func acceptPairing(from peer: LEAddress) async -> Bool { hub != nil }

    func displayPasskey(_ passkey: UInt32, for peer: LEAddress) async { await hub?.show(passkey: passkey, peer: peer) }

    func enterPasskey(for peer: LEAddress) async -> UInt32? {
        await hub?.prompt(kind: "passkey", peer: peer, number: nil).passkey
    }

    func confirmNumber(_ number: UInt32, for peer: LEAddress) async -> Bool {
        await hub?.prompt(kind: "compare", peer: peer, number: number).confirmed ?? false
    }
}
