import BLE
import BLEFiles
import BLEProfiles
import Foundation

/// Writes a line to standard output unbuffered, so a peer process reading it (or a kill) never loses it. When the
/// reader has gone (`ble scan --duplicates | head -3`: EPIPE), there is nobody left to tell anything: the tool ends
/// quietly with status 0, as `yes | head` does, instead of trapping in Foundation's non-throwing `write`.
func writeLine(_ line: String) {
    do {
        try FileHandle.standardOutput.write(contentsOf: Data((line + "\n").utf8))
    } catch {
        exit(0)
    }
}

/// Writes a line to standard error (dropped when standard error is closed: there is nowhere else to say it).
func writeErrorLine(_ line: String) {
    try? FileHandle.standardError.write(contentsOf: Data((line + "\n").utf8))
}

/// Prints one result: `text` for people, or with `--json` the `fields` as one JSON object on a line (keys sorted,
/// JSON's own types: numbers, booleans, arrays; strings only for text and hex).
func emit(_ json: Bool, _ text: @autoclosure () -> String, _ fields: [String: JSONValue]) {
    if json {
        writeLine(JSONValue.object(fields.map { (key: $0.key, value: $0.value) }).encoded(sortingKeys: true))
    } else {
        writeLine(text())
    }
}

/// Writes one JSON object per line, members in the order given.
func writeJSONLine(_ fields: [(String, JSONValue)]) {
    writeLine(JSONValue.object(fields.map { (key: $0.0, value: $0.1) }).encoded())
}

/// Whether standard output is a terminal (the live table then redraws in place).
var standardOutputIsTerminal: Bool { isatty(STDOUT_FILENO) != 0 }

/// Renders properties like `read|write|notify`.
func describe(_ p: GATTCharacteristicProperties) -> String { propertyNames(p).joined(separator: "|") }

/// The names of a characteristic's properties, in the order of their bits.
func propertyNames(_ p: GATTCharacteristicProperties) -> [String] {
    let names: [(GATTCharacteristicProperties, String)] = [(.broadcast, "broadcast"), (.read, "read"), (.writeWithoutResponse, "writeWithoutResponse"),
                                                           (.write, "write"), (.notify, "notify"), (.indicate, "indicate"),
                                                           (.authenticatedSignedWrites, "signedWrite"), (.extendedProperties, "extended")]
    return names.filter { p.contains($0.0) }.map(\.1)
}

/// Shows a value whole: as text and hex when it is printable text, else as hex.
func show(_ value: [UInt8]) -> String {
    let text = String(decoding: value, as: UTF8.self)
    let printable = !value.isEmpty && text.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value < 0x7F }
    let hex = value.isEmpty ? "(empty)" : value.hexString()
    return printable ? "\"\(text)\" (\(hex))" : hex
}

/// A handle as four hex digits.
func hex4(_ v: UInt16) -> String { [UInt8(v >> 8), UInt8(truncatingIfNeeded: v)].hexString() }

/// A service, characteristic or descriptor UUID with its name when it has one: `2A29 (Manufacturer Name String) `.
func named(_ uuid: BluetoothUUID) -> String { "\(uuid) \(uuid.name.map { "(\($0)) " } ?? "")" }

extension JSONValue {
    /// An attribute handle as a JSON number.
    static func integer(_ handle: AttributeHandle) -> JSONValue { .integer(handle.rawValue) }
}

/// An attribute handle as four hex digits.
func hex4(_ handle: AttributeHandle) -> String { hex4(handle.rawValue) }

/// Decodes the values of one characteristic (or one subscription: the health scale's frames are reassembled across
/// notifications) with `BLEProfiles`' ``CharacteristicDecoder``, for printing beside the hex.
struct ValueDecoding {
    private var decoder = CharacteristicDecoder()

    /// The text to print after the value (empty when the characteristic is not one a profile knows) and the JSON
    /// fields to add: `"decoded"` (typed) or `"decode_error"` (the value did not decode: malformed bytes).
    mutating func decode(_ uuid: BluetoothUUID, _ value: [UInt8]) -> (text: String, fields: [String: JSONValue]) {
        do {
            guard let decoded = try decoder.decode(uuid: uuid, value: value) else { return ("", [:]) }
            // A string is shown as text already (see show(_:)).
            if case .text = decoded, show(value).hasPrefix("\"") { return ("", ["decoded": .object(decoded.jsonFields)]) }
            return (" = \(decoded.description.escapingControlCharacters)", ["decoded": .object(decoded.jsonFields)])
        } catch {
            return (" (does not decode: \(error.reason))", ["decode_error": .string(error.reason)])
        }
    }
}

extension Dictionary where Key == String, Value == JSONValue {
    /// These fields with `other`'s added.
    func adding(_ other: [String: JSONValue]) -> [String: JSONValue] { merging(other) { _, new in new } }
}
