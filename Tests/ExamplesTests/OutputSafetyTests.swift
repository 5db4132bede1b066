import BLE
import Foundation
import Testing

/// Names from the air never reach a terminal raw: the `ble` tool, run as a process against a peripheral whose
/// advertised name carries an escape sequence, a newline, a carriage return, a C1 control and a bidirectional
/// override, prints it escaped on its own line, and its `--json` lines all parse, with the name intact.
@Suite(.timeLimit(.minutes(2))) struct OutputSafetyTests {
    static let hostile = "Ev\u{1B}[2J\nFAKE\r\u{9B}\u{202E}x"

    @Test func theEscapingShowsEveryControlVisibly() {
        #expect(Self.hostile.escapingControlCharacters == #"Ev\u{1B}[2J\nFAKE\r\u{9B}\u{202E}x"#)
        #expect("tab\there\\".escapingControlCharacters == #"tab\there\\"#)
        #expect("Żółw 🐢 name".escapingControlCharacters == "Żółw 🐢 name")
        #expect("\u{0}\u{7F}\u{2066}".escapingControlCharacters == #"\u{0}\u{7F}\u{2066}"#)
    }

    @Test func theToolEscapesNamesAndItsJSONStaysValid() async throws {
        let air = try DemoAir()
        defer { air.shutdown() }
        let manager = try await air.peripheralManager(named: "Hostile", at: 1)
        try await manager.startAdvertising(name: Self.hostile)

        let text = try DemoProcess("ble", arguments: ["scan", "--hci", air.specification, "--timeout", "2"], hci: nil)
        let (status, lines) = await text.finish()
        #expect(status == 0)
        #expect(lines.contains { $0.contains(#""Ev\u{1B}[2J\nFAKE\r\u{9B}\u{202E}x""#) }, "\(lines)")
        #expect(!lines.contains { $0.hasPrefix("FAKE") })
        #expect(lines.allSatisfy { line in !line.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) } })

        let json = try DemoProcess("ble", arguments: ["scan", "--hci", air.specification, "--timeout", "2", "--json"], hci: nil)
        let (jsonStatus, jsonLines) = await json.finish()
        #expect(jsonStatus == 0)
        var names: [String] = []
        for line in jsonLines {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object != nil, "not a JSON object: \(line)")
            if let name = object?["name"] as? String { names.append(name) }
        }
        #expect(names.contains(Self.hostile))
        withExtendedLifetime(manager) {}
    }
}
