import BLE
import BLEFiles
import Foundation

/// Reading JSON from the broker (other gateways' views, requests): strict RFC 8259 by `JSONDecoder`, into
/// `JSONValue`. Malformed text is `nil`, never a trap.
enum GatewayJSON {
    /// Decodes any JSON value.
    private struct AnyValue: Decodable {
        var value: JSONValue

        init(from decoder: any Decoder) throws {
            if var array = try? decoder.unkeyedContainer() {
                var values: [JSONValue] = []
                while !array.isAtEnd { values.append(try array.decode(AnyValue.self).value) }
                value = .array(values)
                return
            }
            if let object = try? decoder.container(keyedBy: Key.self) {
                var members: [(key: String, value: JSONValue)] = []
                for key in object.allKeys.sorted(by: { $0.stringValue < $1.stringValue }) {
                    members.append((key.stringValue, try object.decode(AnyValue.self, forKey: key).value))
                }
                value = .object(members)
                return
            }
            let single = try decoder.singleValueContainer()
            if single.decodeNil() {
                value = .null
            } else if let b = try? single.decode(Bool.self) {
                value = .bool(b)
            } else if let i = try? single.decode(Int.self) {
                value = .int(i)
            } else if let d = try? single.decode(Double.self) {
                value = .number(d)
            } else {
                value = .string(try single.decode(String.self))
            }
        }
    }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// The value of JSON text; `nil` when it is not JSON.
    static func parse(_ bytes: [UInt8]) -> JSONValue? {
        try? JSONDecoder().decode(AnyValue.self, from: Data(bytes)).value
    }

    /// The members of a JSON object; `nil` when the text is not one.
    static func object(_ bytes: [UInt8]) -> [String: JSONValue]? {
        guard case .object(let members) = parse(bytes) else { return nil }
        var result: [String: JSONValue] = [:]
        for member in members where result[member.key] == nil { result[member.key] = member.value }
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
