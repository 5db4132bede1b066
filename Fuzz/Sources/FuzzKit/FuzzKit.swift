import CFuzz
import Foundation
@_exported import FuzzHarness

/// The fuzz target a program registered; libFuzzer calls ``testOneInput(_:_:)`` which runs it.
nonisolated(unsafe) private var registered: ([UInt8]) -> Void = { _ in }

/// The callback libFuzzer calls with each input.
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    registered(bytes)
    return 0
}

/// Runs a fuzz target under libFuzzer. `--write-seeds=DIR` (first argument) instead writes the target's seed inputs
/// into DIR, one file each (`seed-NN`), and exits.
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ target: FuzzTarget) -> CInt {
    if argc > 1, let first = argv?[1].map({ String(cString: $0) }), first.hasPrefix("--write-seeds=") {
        let directory = URL(fileURLWithPath: String(first.dropFirst("--write-seeds=".count)))
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            for (index, seed) in target.seeds().enumerated() {
                let name = "seed-" + (index < 10 ? "0" : "") + String(index)
                try Data(seed).write(to: directory.appendingPathComponent(name))
            }
            return 0
        } catch {
            print("cannot write seeds: \(error)")
            return 1
        }
    }
    registered = target.run
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments) { data, size in testOneInput(data, size) }
}

