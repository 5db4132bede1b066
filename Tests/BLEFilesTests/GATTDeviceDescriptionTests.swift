import BLE
import BLEFiles
import BLEProtocols
import BLEVirtualController
import Foundation
import Testing

/// The device description format: strict JSON with positions, every mistake named by its JSON path, the layout with
/// explicit handles, the writer read back, and the examples shipped in the repository.
@Suite struct GATTDeviceDescriptionTests {
    /// The error reading `text` gives (a recorded issue when it reads).
    func failure(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> GATTDeviceDescriptionError? {
        do {
            _ = try GATTDeviceDescription(json: text)
            Issue.record("read without error: \(text)", sourceLocation: sourceLocation)
            return nil
        } catch {
            return error
        }
    }

    static let minimal = #"{"services": [{"uuid": "180F", "characteristics": [{"uuid": "2A19", "properties": ["read"], "value": "64"}]}]}"#

    @Test func aMinimalFileGetsTheBuiltInGenericServicesFirst() throws {
        let d = try GATTDeviceDescription(json: Self.minimal)
        let db = try d.database()
        #expect(db.services.map(\.uuid) == [0x1800, 0x1801, 0x180F])
        #expect(db.attribute(db.valueHandle(of: 0x2A19) ?? 0)?.value == [0x64])
    }

    @Test(arguments: [
        // Syntax: each with its line and column.
        ("{\"services\": [}", "$.services[0]", 1, 15),
        ("{\n  \"name\": \"x\",\n}", "$", 3, 1),
        ("{\"name\": 'x'}", "$.name", 1, 10),
        ("{\"appearance\": 012}", "$.appearance", 1, 17),
        ("{\"name\": \"a\u{01}\"}", "$.name", 1, 12),
        ("{\"name\": \"x\", \"name\": \"y\"}", "$.name", 1, 21),
        ("{\"name\": \"\\q\"}", "$.name", 1, 12),
        ("{} {}", "$", 1, 4),
        ("[1, 2,]", "$", 1, 7),
        ("{\"name\": \"\\uD800x\"}", "$.name", 1, 17),
    ] as [(String, String, Int, Int)])
    func syntaxErrorsNameTheLineAndColumn(_ text: String, _ path: String, _ line: Int, _ column: Int) throws {
        let error = try #require(failure(text))
        #expect(error.isSyntaxError)
        #expect(error.path == path)
        #expect(error.code.line == line && error.column == column, "\(error)")
    }

    @Test func deepNestingIsRefusedNotACrash() throws {
        let error = try #require(failure(String(repeating: "[", count: 10_000)))
        #expect(error.reason.contains("nested deeper"))
    }

    static func file(_ characteristic: String, service: String = "", more: String = "") -> String {
        #"{"services": [{"uuid": "180F"\#(service), "characteristics": [\#(characteristic)]}\#(more)]}"#
    }

    @Test(arguments: [
        (file(#"{"uuid": "2A19", "properties": ["read", "notfy"]}"#), "$.services[0].characteristics[0].properties[1]", "unknown property \"notfy\" (expected one of broadcast, read,"),
        (file(#"{"uuid": "2A19", "properties": ["read"], "permissions": ["reed"]}"#), "$.services[0].characteristics[0].permissions[0]", "unknown permission \"reed\""),
        (file(#"{"uuid": "2G19", "properties": ["read"]}"#), "$.services[0].characteristics[0].uuid", "\"2G19\" is not a UUID"),
        (file(#"{"uuid": "2A19", "properties": "read"}"#), "$.services[0].characteristics[0].properties", "expected an array, found a string"),
        (file(#"{"uuid": "2A19", "properties": ["read"], "value": "ABC"}"#), "$.services[0].characteristics[0].value", "an odd number of digits"),
        (file(#"{"uuid": "2A19", "properties": ["read"], "value": "zz"}"#), "$.services[0].characteristics[0].value", "'z' is not a hex digit"),
        (file(#"{"uuid": "2A19", "properties": ["read"], "value": {"hex": "00", "text": "a"}}"#), "$.services[0].characteristics[0].value", "not both"),
        (file(#"{"uuid": "2A19", "properties": ["read"], "value": {"text": "\#(String(repeating: "x", count: 513))"}}"#), "$.services[0].characteristics[0].value", "513 octets"),
        (file(#"{"uuid": "2A19", "properties": ["read"], "value": "\#(String(repeating: "00", count: 513))"}"#), "$.services[0].characteristics[0].value", "at most 512"),
        (file(#"{"uuid": "2A19", "properties": ["read"], "notify": {"everyMs": 100, "values": ["01"]}}"#), "$.services[0].characteristics[0].notify", "needs the notify or indicate property"),
        (file(#"{"uuid": "2A19", "properties": ["notify"], "notify": {"everyMs": 1, "values": ["01"]}}"#), "$.services[0].characteristics[0].notify.everyMs", "outside 10...3600000"),
        (file(#"{"uuid": "2A19", "properties": ["notify"], "notify": {"everyMs": 100, "values": []}}"#), "$.services[0].characteristics[0].notify.values", "at least one value"),
        (file(#"{"uuid": "2A19", "properties": ["notify"], "notify": {"everyMs": 100, "values": ["01", 2]}}"#), "$.services[0].characteristics[0].notify.values[1]", "found a number"),
        (file(#"{"uuid": "2A19", "properties": ["read"], "colour": "red"}"#), "$.services[0].characteristics[0].colour", "unknown member \"colour\""),
        (file(#"{"properties": ["read"]}"#), "$.services[0].characteristics[0]", "\"uuid\" is missing"),
        (file(#"{"uuid": "2A19", "properties": ["read"], "readError": "0x00"}"#), "$.services[0].characteristics[0].readError", "outside 1...255"),
        (file(#"{"uuid": "2A19", "properties": ["notify"], "descriptors": [{"uuid": "2902", "value": "0100"}]}"#), "$.services[0].characteristics[0].descriptors[0].value", "each client's own"),
        (file("", service: #", "includes": [3]"#), "$.services[0].includes[0]", "service 3 does not exist"),
        (file("", service: #", "includes": ["nowhere"]"#), "$.services[0].includes[0]", "no service has the id \"nowhere\""),
        (file("", service: #", "includes": [0]"#), "$.services[0].includes[0]", "cannot include itself"),
        (file(#"{"uuid": "2A19", "properties": ["read"], "handle": 0}"#), "$.services[0].characteristics[0].handle", "outside 1...65535"),
        (file(#"{"uuid": "2A19", "properties": ["read"], "handle": 40}, {"uuid": "2A1A", "properties": ["read"], "handle": 40}"#, service: #", "handle": 30"#),
         "$.services[0].characteristics[1].handle", "0x0028 is not after the previous attribute"),
        (file(#"{"uuid": "2A19", "properties": ["read"], "valueHandle": 31}"#, service: #", "handle": 32"#), "$.services[0].characteristics[0].valueHandle", "not after the previous attribute"),
        (file("", service: #", "handle": 40, "endHandle": 50"#, more: #", {"uuid": "180A", "handle": 45}"#), "$.services[1].handle", "0x002D is not after"),
        (file(#"{"uuid": "2A19", "properties": ["read"]}"#, service: #", "handle": 40, "endHandle": 40"#), "$.services[0].endHandle", "before the service's last attribute"),
        // The built-in Generic Access and Generic Attribute services take handles 1-13.
        (file("", service: #", "handle": 5"#), "$.services[0].handle", "0x0005 is not after the previous attribute (the next free handle is 0x000E)"),
        (file("", service: #", "handle": "0xFFFF""#, more: #", {"uuid": "180A"}"#), "$.services[1].handle", "no handle is left"),
        (#"{"advertising": {"name": "\#(String(repeating: "n", count: 40))"}}"#, "$.advertising", "does not fit"),
        (#"{"advertising": {"manufacturerData": [{"company": 70000}]}}"#, "$.advertising.manufacturerData[0].company", "outside 0...65535"),
        (#"{"services": {}}"#, "$.services", "expected an array, found an object"),
        (#"{"services": [{"uuid": "180F", "primary": "yes"}]}"#, "$.services[0].primary", "expected true or false"),
        (#"[]"#, "$", "expected an object, found an array"),
    ] as [(String, String, String)])
    func mistakesAreNamedByTheirPath(_ text: String, _ path: String, _ reason: String) throws {
        let error = try #require(failure(text))
        #expect(!error.isSyntaxError)
        #expect(error.path == path, "\(error)")
        #expect(error.reason.contains(reason), "\(error)")
        #expect("\(error)".hasPrefix(path + ": "))
    }

    @Test func theMessageGivesThePathTheReasonAndThePlace() throws {
        let error = try #require(failure("{\n  \"services\": [\n    {\"uuid\": \"180F\", \"characteristics\": [{\"uuid\": \"2A19\", \"properties\": [\"notfy\"]}]}\n  ]\n}"))
        #expect("\(error)" == #"$.services[0].characteristics[0].properties[0]: unknown property "notfy" (expected one of broadcast, read, writeWithoutResponse, write, notify, indicate, authenticatedSignedWrites, extendedProperties) (line 3, column 74)"#)
    }

    /// A clone's layout: its own GAP and GATT services, explicit handles with gaps, an end handle past the last
    /// attribute, a CCCD where the file puts it, a read refused with an application error, an included secondary
    /// service.
    static let clone = #"""
    {"services": [
      {"uuid": "1800", "handle": 1, "endHandle": 7, "characteristics": [
        {"uuid": "2A00", "handle": 2, "valueHandle": 3, "properties": ["read"], "value": {"text": "Clone"}}]},
      {"uuid": "1801", "handle": 8, "characteristics": [
        {"uuid": "2A05", "handle": 9, "properties": ["indicate"], "permissions": [], "descriptors": [{"uuid": "2902", "handle": 11}]},
        {"uuid": "2B2A", "handle": 12, "properties": ["read"], "value": "00000000000000000000000000000000"}]},
      {"uuid": "180F", "primary": false, "handle": 20, "characteristics": []},
      {"uuid": "1234", "handle": 32, "endHandle": 65535, "includes": [2], "characteristics": [
        {"uuid": "5678", "handle": 40, "valueHandle": 42, "properties": ["read", "notify"], "readError": "0x80",
         "descriptors": [{"uuid": "2901", "handle": 44, "value": {"text": "refused"}}, {"uuid": "2902", "handle": 45}]}]}
    ]}
    """#

    @Test func handlesThatGoBackwardsAreRefused() throws {
        let moved = Self.clone.replacingOccurrences(of: #""handle": 20"#, with: #""handle": 14"#)
            .replacingOccurrences(of: #""handle": 8,"#, with: #""handle": 15,"#)
        let error = try #require(failure(moved))
        #expect(error.path == "$.services[1].characteristics[0].handle", "\(error)")
    }

    @Test func aCloneIsLaidOutWithItsOwnHandles() throws {
        let d = try GATTDeviceDescription(json: Self.clone)
        #expect(d.suppliesGenericServices)
        let db = try d.database()
        #expect(db.services.map { [Int($0.start.rawValue), Int($0.end.rawValue)] } == [[1, 7], [8, 13], [20, 20], [32, 65535]])
        #expect(db.attributes.map { Int($0.handle.rawValue) } == [1, 2, 3, 8, 9, 10, 11, 12, 13, 20, 32, 33, 40, 42, 44, 45])
        // The include points at the secondary service's handles; the declaration at handle 40 names value handle 42.
        #expect(db.attribute(33)?.value == [20, 0, 20, 0, 0x0F, 0x18])
        #expect(db.attribute(40)?.value == [0x12, 42, 0, 0x78, 0x56])
        #expect(db.attribute(42)?.readError == ATTErrorCode(rawValue: 0x80))
        guard case .clientConfiguration(let valueHandle, _) = db.attribute(45)?.role else { Issue.record("no CCCD at 45"); return }
        #expect(valueHandle == 42)
        // The Database Hash served is the computed one, not the file's zeros.
        #expect(db.attribute(13)?.value == db.hash && db.hash != Array(repeating: 0, count: 16))
    }

    @Test func theWriterReadsBackEqual() throws {
        for text in [Self.minimal, try Self.example("thermometer.json"), try Self.example("secure-lock.json")] {
            let d = try GATTDeviceDescription(json: text)
            let again = try GATTDeviceDescription(json: d.jsonText())
            #expect(again == d)
        }
    }

    static func example(_ name: String) throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return try String(contentsOf: root.appendingPathComponent("Examples/gatt/\(name)"), encoding: .utf8)
    }

    @Test func everyShippedExampleLoads() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let names = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("Examples/gatt").path).filter { $0.hasSuffix(".json") }
        #expect(names.count >= 2)
        for name in names {
            let d = try GATTDeviceDescription(json: try Self.example(name))
            _ = try d.database()
            _ = try d.advertisement()
        }
    }
}
