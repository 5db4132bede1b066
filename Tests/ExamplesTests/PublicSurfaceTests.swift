import Foundation
import Testing

/// What `import BLE` gives a program: enough to scan, connect, serve and pair (the `only-import-ble` example, run
/// here), and no way to name the host stack underneath (`HCIHost`), which only a program importing `BLEHost` by name
/// reaches, through `HCIHost.owned(by:)`.
@Suite(.timeLimit(.minutes(2))) struct PublicSurfaceTests {
    /// The directory the test bundle and the products were built in.
    static let products = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()

    @Test func aProgramWithOnlyImportBLEScansConnectsServesAndPairs() async throws {
        let process = Process()
        process.executableURL = Self.products.appendingPathComponent("only-import-ble")
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(process.terminationStatus == 0, "only-import-ble failed: \(lines.suffix(3))")
        for step in ["the scan finds the advertised service", "the central connects", "the application answers a write and a read",
                     "the central is notified", "passkey pairing gives an authenticated bond",
                     "an authenticated read succeeds after pairing", "the peripheral sees the passkey pairing",
                     "the central forgets the bond", "the central disconnects"] {
            #expect(lines.contains("ok: \(step)"), "missing: \(step)")
        }
        #expect(lines.last == "PASS")
    }

    @Test func onlyImportBLECannotNameHCIHost() throws {
        // The vocabulary and the adapter are there with `import BLE` alone (this also proves the compiler finds the
        // built modules, so that the failure below is the one expected and not a missing module).
        let vocabulary = """
            import BLE
            let adapter: Adapter? = nil
            let uuid: BluetoothUUID = 0x180D
            let definition = GATTServiceDefinition(uuid: uuid, characteristics: [])
            let spec: HCITransportSpec = .virtual
            let agent: any PairingAgent = AutomaticPairingAgent()
            let error: ATTErrorCode? = nil
            func parts(_ request: AttributeRequest) -> [ATTPrepareWriteRequest] {
                if case .preparedWrites(let parts) = request.kind { return parts } else { return [] }
            }
            func reason(_ failure: SMPPairingFailure) -> SMPPairingFailedReason? { failure.reason }
            """
        let accepted = try Self.typecheck(vocabulary)
        #expect(accepted.status == 0, "\(accepted.diagnostics)")

        let named = try Self.typecheck("import BLE\nlet _: HCIHost? = nil\n")
        #expect(named.status != 0)
        #expect(named.diagnostics.contains("cannot find type 'HCIHost' in scope"), "\(named.diagnostics)")

        let hostless = try Self.typecheck("import BLE\nfunc f(_ adapter: Adapter) { _ = HCIHost.owned(by: adapter) }\n")
        #expect(hostless.diagnostics.contains("cannot find 'HCIHost' in scope"), "\(hostless.diagnostics)")

        // The escape hatch: with BLEHost imported by name, the adapter's host is reachable.
        let escape = try Self.typecheck("""
            import BLE
            import BLEHost
            func host(of adapter: Adapter) -> HCIHost { HCIHost.owned(by: adapter) }
            func adapter(over host: HCIHost) -> Adapter { Adapter(host: host) }
            """)
        #expect(escape.status == 0, "\(escape.diagnostics)")
    }

    /// Type-checks `source` with `swiftc` against the modules built beside the tests.
    static func typecheck(_ source: String) throws -> (status: Int32, diagnostics: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("public-surface-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("main.swift")
        try source.write(to: file, atomically: true, encoding: .utf8)
        // SwiftPM 6 keeps the modules in `Modules/`; older versions beside the products.
        let modules = FileManager.default.fileExists(atPath: products.appendingPathComponent("Modules/BLE.swiftmodule").path)
            ? products.appendingPathComponent("Modules") : products
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["swiftc", "-typecheck", "-swift-version", "6", "-I", modules.path,
                             "-module-cache-path", products.appendingPathComponent("PublicSurfaceModuleCache").path, file.path]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = errors
        try process.run()
        let data = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
