import BLE
import BLEFiles

/// Reading JSON from the broker (other gateways' views and presence decisions, requests) into `JSONValue`, by the
/// strict RFC 8259 reader device files use (`JSONValue(strictJSON:)`): every decision and view a fleet shares passes
/// here, the gateway's own decisions among them, echoed by the broker (MQTT 3.1.1 has no No Local). A repeated member
/// name, like any text that is not JSON, makes the message unreadable (`nil`), never a trap.
enum GatewayJSON {
    /// The members of a JSON object; `nil` when the text is not one.
    static func object(_ bytes: [UInt8]) -> [String: JSONValue]? {
        guard case .object(let members)? = try? JSONValue(strictJSON: bytes) else { return nil }
        var result: [String: JSONValue] = [:]
        for member in members { result[member.key] = member.value }    // each name once: the parser refuses a repeat
        return result
    }

    /// A number as a `Double`.
    static func double(_ value: JSONValue?) -> Double? {
        switch value {
        case .int(let i): Double(i)
        case .number(let d, _): d
        default: nil
        }
    }
}
