import BLE
import BLEHost
import BLEWire

// The log entries of the sample and simulated devices and of `ble serve`: a line of text for a person and the same
// facts as typed JSON fields for a program (`"event"`, a string, names what happened; handles, counts and the MTU are
// numbers, flags booleans, values hex strings), for example `["event": "mtu", "connection": 64, "mtu": 247]`.

/// A log entry: a line of text and its fields as typed JSON values.
public typealias LogEntry = (text: String, fields: [String: JSONValue])

/// Where a simulated device reports what centrals do to it, as log entries (``LogEntry``): what `ble serve` prints.
public typealias DeviceLog = @Sendable (_ text: String, _ fields: [String: JSONValue]) -> Void

extension SamplePeripheral {
    /// Starts the device (``start(notifyEvery:log:)``), reporting its activity to `log` as log entries.
    public func start(notifyEvery interval: Duration = .seconds(1), entries log: DeviceLog?) async throws {
        var activityLog: Log?
        if let log {
            activityLog = { activity in
                if let entry = activity.logEntry { log(entry.text, entry.fields) }
            }
        }
        try await start(notifyEvery: interval, log: activityLog)
    }
}

extension SamplePeripheral.Activity {
    /// The activity for a log, as `ble serve` prints it (``LogEntry``); `nil` for a request that has none
    /// (``PeripheralRequest/logEntry``).
    public var logEntry: LogEntry? {
        switch self {
        case .central(let event): return event.logEntry
        case .request(let request): return request.logEntry
        case .disconnecting(let link):
            return ("control point: disconnecting handle \(link.handle)", ["event": "disconnecting", "connection": .integer(link.handle.rawValue)])
        case .burst(let link, let sent):
            return ("burst: \(sent) notification(s) sent to handle \(link.handle)", ["event": "burst", "connection": .integer(link.handle.rawValue), "sent": .int(sent)])
        case .indications(let link, let confirmed):
            return ("indications: \(confirmed) confirmed by handle \(link.handle)",
                    ["event": "indications", "connection": .integer(link.handle.rawValue), "confirmed": .int(confirmed)])
        case .counter(let link, let count):
            return ("counter read by handle \(link.handle): \(count)", ["event": "counter", "connection": .integer(link.handle.rawValue), "count": .integer(count)])
        case .refused(let link, let prepared):
            return ("\(prepared ? "prepared writes" : "guarded write") refused (0x80) from handle \(link.handle)",
                    ["event": "refused", "connection": .integer(link.handle.rawValue)])
        }
    }
}

extension SamplePeripheral {
    /// The JSON fields of a successful pairing.
    public static func pairedFields(_ outcome: PairingOutcome, peer: LEAddress) -> [String: JSONValue] {
        ["event": "paired", "peer": .string(peer.address.description), "method": .string(outcome.method.jsonName),
         "secure_connections": .bool(outcome.security.secureConnections), "authenticated": .bool(outcome.security.authenticated),
         "key_size": .integer(outcome.security.keySize), "bonded": .bool(outcome.bonded),
         "identity": .string(outcome.peerIdentity.address.description)]
    }
}

extension CentralEvent {
    /// The event for a log, as ``SamplePeripheral`` and `ble serve` print it: a line of text and its fields as typed
    /// JSON values (`"event"` names what happened: `connected`, `disconnected`, `passkey`, `encrypted`, `paired`,
    /// `pairing_failed`, `eatt`).
    public var logEntry: LogEntry {
        switch self {
        case .connected(let c):
            ("connected: \(c.peer.address) handle \(c.handle)", ["event": "connected", "peer": .string(c.peer.address.description), "handle": .integer(c.handle.rawValue)])
        case .disconnected(let c, let reason):
            ("disconnected: handle \(c.handle), \(reason)", ["event": "disconnected", "handle": .integer(c.handle.rawValue), "reason": .string("\(reason)"),
                                                           "reason_code": .integer(reason.rawValue)])
        case .passkey(let c, let passkey):
            ("passkey for \(c.peer.address): \(Passkey.text(passkey))", ["event": "passkey", "peer": .string(c.peer.address.description), "passkey": .integer(Int(passkey))])
        case .encrypted(let c, let security, let usingBond):
            ("encrypted: \(c.peer.address), \(security.level.map { "\($0)" } ?? "")\(usingBond ? " (bonded, no pairing)" : "")",
             ["event": "encrypted", "peer": .string(c.peer.address.description), "bonded": .bool(usingBond)])
        case .paired(let c, let outcome):
            ("paired: \(c.peer.address)\(outcome.peerIdentity == c.peer ? "" : " (identity \(outcome.peerIdentity.address))"), \(outcome.method), \(outcome.security)\(outcome.bonded ? ", bonded" : "")",
             SamplePeripheral.pairedFields(outcome, peer: c.peer))
        case .pairingFailed(let c, let failure):
            ("pairing failed: \(c.peer.address), \(failure)", ["event": "pairing_failed", "peer": .string(c.peer.address.description),
                                                                 "reason": failure.reason.map { .integer(Int($0.rawValue)) } ?? .null, "error": .string("\(failure)")])
        case .enhancedATTBearers(let c, let count):
            ("eatt: \(count) Enhanced ATT bearer(s) with \(c.peer.address)",
             ["event": "eatt", "peer": .string(c.peer.address.description), "bearers": .int(count)])
        }
    }
}

extension PeripheralRequest {
    /// The request for a log, as ``SamplePeripheral`` and `ble serve` print it: a line of text and its fields as typed
    /// JSON values. Writes to stored values (`"event":"write"`, with the attribute handle and the value in hex),
    /// subscription changes (`"subscription"`) and MTU exchanges (`"mtu"`) have one; application requests have none
    /// (what they mean is the application's to say).
    public var logEntry: LogEntry? {
        let link = central
        switch kind {
        case .write(_, let handle, let value, let withResponse):
            return ("write from handle \(link.handle) to \(handle) (\(withResponse ? "request" : "command")): \(displayed(value))",
                    ["event": "write", "connection": .integer(link.handle.rawValue), "attribute": .integer(handle.rawValue), "value": .string(value.hexString()),
                     "with_response": .bool(withResponse)])
        case .subscription(let characteristic, _, let notify, let indicate):
            return ("subscription from handle \(link.handle) to \(characteristic?.description ?? "?"): notify \(notify) indicate \(indicate)",
                    ["event": "subscription", "connection": .integer(link.handle.rawValue), "characteristic": characteristic.map { .string($0.description) } ?? .null,
                     "notify": .bool(notify), "indicate": .bool(indicate)])
        case .mtuChanged(let mtu):
            return ("MTU on handle \(link.handle): \(mtu)", ["event": "mtu", "connection": .integer(link.handle.rawValue), "mtu": .int(mtu)])
        case .application:
            return nil
        }
    }
}

/// A value as text when it is printable, else as hex.
func displayed(_ value: [UInt8]) -> String {
    let text = String(decoding: value, as: UTF8.self)
    let printable = !value.isEmpty && text.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value < 0x7F }
    return printable ? "\"\(text)\" (\(value.hexString()))" : value.hexString()
}
