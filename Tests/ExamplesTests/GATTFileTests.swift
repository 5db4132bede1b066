import BLE
import BLEFiles
import Foundation
import Testing

/// `ble serve --gatt FILE` and `ble explore --save FILE` as processes on a private air: a served file explored and
/// saved comes back as the same database (handles, declarations, values, refusals); a clone of the lab device
/// explored beside the original prints the same tree and values; a malformed file is refused with its path.
@Suite(.timeLimit(.minutes(3))) struct GATTFileTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func temporary(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("gatt-\(UUID().uuidString)-\(name)").path
    }

    /// Starts `ble serve` with `arguments` on served controller `port`; returns the process and the address it serves from.
    static func serve(_ air: DemoAir, port: Int, _ arguments: [String]) async throws -> (DemoProcess, String) {
        let server = try DemoProcess("ble", arguments: ["serve"] + arguments + ["--hci", air.specification(port), "--json", "--run-for", "90",
                                                                        "--bonds", temporary("bonds.json")], hci: nil)
        let serving = try #require(await server.waitFor { $0.contains(#""event":"serving""#) }, "ble serve \(arguments) did not start")
        let address = try #require(serving.firstMatch(of: /"address":"([0-9A-F:]+)"/)?.1, "\(serving)")
        return (server, String(address))
    }

    /// `ble explore TARGET --json [more]` on served controller `port`: its lines.
    static func explore(_ air: DemoAir, port: Int, _ target: String, _ more: [String] = []) async throws -> [String] {
        let explorer = try DemoProcess("ble", arguments: ["explore", target, "--hci", air.specification(port), "--json",
                                                                 "--bonds", temporary("bonds.json")] + more, hci: nil)
        let (status, output) = await explorer.finish(timeout: .seconds(60))
        #expect(status == 0, "\(output)")
        return output
    }

    /// The attributes a central can observe: handle, type, the declarations' values, readable values, the refusals.
    static func observable(_ database: GATTDatabase) -> [String] {
        database.attributes.map { a in
            var line = "\(a.handle.rawValue) \(a.type)"
            switch a.role {
            case .serviceDeclaration(let end): line += " service to \(end.rawValue) \(a.value.hexString())"
            case .include, .characteristicDeclaration: line += " \(a.value.hexString())"
            case .characteristicValue(let properties):
                if properties.contains(.read) { line += " = \(a.value.hexString())" }
                line += " read \(a.permissions.intersection([.readable, .readEncryptionRequired, .readAuthenticationRequired]).rawValue)"
            case .clientConfiguration: line += " CCCD"
            case .descriptor: line += " = \(a.value.hexString())"
            }
            if let e = a.readError { line += " ! \(e.rawValue)" }
            return line
        }
    }

    @Test func aServedFileExploredAndSavedIsTheSameDatabase() async throws {
        let air = try DemoAir(ports: 2)
        defer { air.shutdown() }
        let file = Self.root.appendingPathComponent("Examples/gatt/secure-lock.json").path
        let (server, address) = try await Self.serve(air, port: 0, ["--gatt", file])
        let saved = Self.temporary("lock.json")
        let lines = try await Self.explore(air, port: 1, address, ["--save", saved])
        #expect(lines.contains { $0.contains(#""event":"saved""#) }, "\(lines)")
        // The refused value shows its application error.
        #expect(lines.contains { $0.contains(#""att_error":128"#) && $0.contains("8E400004") }, "\(lines)")
        let original = try GATTDeviceDescription(json: Array(try Data(contentsOf: URL(fileURLWithPath: file))))
        let clone = try GATTDeviceDescription(json: Array(try Data(contentsOf: URL(fileURLWithPath: saved))))
        #expect(clone.suppliesGenericServices)
        #expect(clone.advertising.name == "GATT Lock" && clone.advertising.serviceUUIDs == original.advertising.serviceUUIDs)
        #expect(Self.observable(try clone.database()) == Self.observable(try original.database()))
        #expect(try clone.database().hash == (try original.database()).hash)
        // The server logged the pairing the explore needed for the encrypted value.
        #expect(await server.waitFor { $0.contains(#""event":"paired""#) } != nil)
        _ = await server.finish(timeout: .milliseconds(100))
    }

    @Test func aCloneOfTheLabDeviceExploresTheSameAsTheOriginal() async throws {
        let air = try DemoAir(ports: 4)
        defer { air.shutdown() }
        let (original, originalAddress) = try await Self.serve(air, port: 0, ["--device", "lab"])
        let saved = Self.temporary("lab.json")
        let first = try await Self.explore(air, port: 1, originalAddress, ["--save", saved])
        #expect(first.contains { $0.contains(#""event":"saved""#) }, "\(first)")
        let (clone, cloneAddress) = try await Self.serve(air, port: 2, ["--gatt", saved])
        let again = try await Self.explore(air, port: 3, originalAddress)
        let ofClone = try await Self.explore(air, port: 3, cloneAddress)
        // The tree and the values, line by line: all but the connection line (the address) and the values the lab
        // device changes by itself or on each read (the heart rate, the battery draining, the read counter DEF8).
        let changing = ["\"2A37\"", "\"2A19\"", "12345678-1234-5678-1234-56789ABCDEF8"]
        func comparable(_ lines: [String]) -> [String] {
            // Addresses differ (another controller): an error naming the peer is compared without it.
            lines.filter { $0.contains(#""kind":"#) }.map { $0.replacing(/([0-9A-F]{2}:){5}[0-9A-F]{2}/, with: "ADDRESS") }.map { line in
                changing.contains { line.contains($0) } ? line.replacing(/"value":"[0-9a-f]*"/, with: "\"value\":\"…\"")
                    .replacing(/"decoded":\{[^}]*\},?/, with: "") : line
            }
        }
        #expect(comparable(again).count > 30)
        #expect(comparable(ofClone) == comparable(again))
        // The value needing an authenticated key is refused by both the same way (Just Works gives none).
        #expect(ofClone.contains { $0.contains("ABCDEFB") && $0.contains(#""att_error":5"#) })
        _ = await original.finish(timeout: .milliseconds(100))
        _ = await clone.finish(timeout: .milliseconds(100))
    }

    @Test func aMalformedFileIsRefusedWithItsPath() async throws {
        let bad = Self.temporary("bad.json")
        try Data(#"{"services": [{"uuid": "180F", "characteristics": [{"uuid": "2A19", "properties": ["read", "notfy"]}]}]}"#.utf8)
            .write(to: URL(fileURLWithPath: bad))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("ble")
        process.arguments = ["serve", "--gatt", bad, "--run-for", "5"]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 1)
        #expect(text.hasPrefix("error: \(bad): $.services[0].characteristics[0].properties[1]: unknown property \"notfy\" (expected one of broadcast, read,"), "\(text)")
        #expect(text.contains("(line 1, column 92)"), "\(text)")
    }
}
