import Foundation
import Testing

/// How much of Apple's public CoreBluetooth API `import CoreBluetooth` gives on Linux, as a number the suite prints.
///
/// `Tests/CoreBluetoothAPI/apple-api.txt` lists Apple's API (iOS 18 / macOS 15), one symbol a line with one line of
/// Swift that uses it. The test type-checks every use in one `swiftc -typecheck` run, each in a function of its own
/// on a line of its own, so that an error is attributed to the symbol of its line and one missing symbol hides no
/// other; it prints the coverage over the non-deprecated symbols with the list of those missing, and fails when the
/// coverage falls below `coverage-threshold.txt` (the number reached, so that it can only go up).
@Suite(.timeLimit(.minutes(2))) struct AppleAPICoverageTests {
    /// One line of the list.
    struct Symbol {
        let name: String
        let use: String
        let deprecated: Bool
    }

    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("CoreBluetoothAPI")

    /// The directory the test bundle and the modules were built in.
    static let products = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()

    static func symbols() throws -> [Symbol] {
        let text = try String(contentsOf: directory.appendingPathComponent("apple-api.txt"), encoding: .utf8)
        return try text.split(separator: "\n", omittingEmptySubsequences: true).compactMap { line -> Symbol? in
            let line = String(line)
            if line.hasPrefix("#") || line.allSatisfy(\.isWhitespace) { return nil }
            guard let separator = line.range(of: " :: ") else {
                throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "no ' :: ' in \(line)"])
            }
            var use = String(line[separator.upperBound...])
            let deprecated = use.hasSuffix("# deprecated")
            if deprecated { use = String(use.dropLast("# deprecated".count)) }
            return Symbol(name: String(line[..<separator.lowerBound]), use: use.trimmingCharacters(in: .whitespaces),
                          deprecated: deprecated)
        }
    }

    /// The source checked: the import on line 1, then symbol `i`'s use alone in a function on line `i + 2`.
    static func source(_ symbols: [Symbol]) -> String {
        #if os(Linux)
        let module = "CoreBluetooth"
        #else
        let module = "CoreBluetoothCompat"
        #endif
        return "import \(module)\n" + symbols.enumerated().map { "func use\($0.offset)() { \($0.element.use) }" }
            .joined(separator: "\n") + "\n"
    }

    @Test func appleCoreBluetoothAPICoverage() throws {
        let symbols = try Self.symbols()
        #expect(symbols.count > 250)
        let (status, diagnostics) = try Self.typecheck(Self.source(symbols))
        // Errors of the checked file, by line: `uses.swift:LINE:COLUMN: error: ...`.
        var failing: [Int: [String]] = [:]
        for line in diagnostics.split(separator: "\n") {
            guard let range = line.range(of: "uses.swift:"), line.contains(": error: ") else { continue }
            let rest = line[range.upperBound...]
            guard let number = Int(rest.prefix { $0.isNumber }) else { continue }
            failing[number, default: []].append(String(line[(line.range(of: "error: ")?.upperBound ?? line.startIndex)...]))
        }
        #expect(failing[1] == nil, "the module does not import: \(diagnostics)")
        #expect(status == 0 || !failing.isEmpty, "swiftc failed without an error attributable to a symbol: \(diagnostics)")
        let outside = failing.keys.filter { $0 < 2 || $0 > symbols.count + 1 }
        #expect(outside.isEmpty, "errors outside the uses: \(diagnostics)")

        let missing = symbols.enumerated().filter { failing[$0.offset + 2] != nil }
        let current = symbols.filter { !$0.deprecated }
        let missingCurrent = missing.filter { !$0.element.deprecated }
        let covered = current.count - missingCurrent.count
        let percent = Double(covered) * 100 / Double(current.count)
        let deprecated = symbols.filter(\.deprecated)
        let coveredDeprecated = deprecated.count - missing.filter { $0.element.deprecated }.count
        var report = "CoreBluetooth API coverage: \(covered)/\(current.count) non-deprecated symbols (\(String(format: "%.1f", percent))%)"
        report += "; deprecated ones: \(coveredDeprecated)/\(deprecated.count)\n"
        for (index, symbol) in missing {
            report += "  missing\(symbol.deprecated ? " (deprecated)" : ""): \(symbol.name): \(failing[index + 2]?.first ?? "")\n"
        }
        print(report, terminator: "")

        let thresholdText = try String(contentsOf: Self.directory.appendingPathComponent("coverage-threshold.txt"), encoding: .utf8)
        let threshold = Int(thresholdText.trimmingCharacters(in: .whitespacesAndNewlines)) ?? Int.max
        #expect(covered >= threshold, "coverage fell below the recorded \(threshold) symbols:\n\(report)")
        if covered > threshold { print("CoreBluetooth API coverage rose above the recorded \(threshold): record \(covered) in coverage-threshold.txt") }
    }

    /// Type-checks `source` with `swiftc` against the modules built beside the tests.
    static func typecheck(_ source: String) throws -> (status: Int32, diagnostics: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cb-api-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("uses.swift")
        try source.write(to: file, atomically: true, encoding: .utf8)
        // SwiftPM 6 keeps the modules in `Modules/`; older versions beside the products.
        let modules = FileManager.default.fileExists(atPath: products.appendingPathComponent("Modules/CoreBluetoothCompat.swiftmodule").path)
            ? products.appendingPathComponent("Modules") : products
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["swiftc", "-typecheck", "-parse-as-library", "-swift-version", "6", "-I", modules.path,
                             "-module-cache-path", products.appendingPathComponent("PublicSurfaceModuleCache").path, file.path]
        let output = Pipe()
        process.standardError = output
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
