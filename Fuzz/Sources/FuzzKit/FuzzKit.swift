import CFuzz
import Foundation

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
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                     seeds: () -> [[UInt8]], _ target: @escaping ([UInt8]) -> Void) -> CInt {
    if argc > 1, let first = argv?[1].map({ String(cString: $0) }), first.hasPrefix("--write-seeds=") {
        let directory = URL(fileURLWithPath: String(first.dropFirst("--write-seeds=".count)))
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            for (index, seed) in seeds().enumerated() {
                let name = "seed-" + (index < 10 ? "0" : "") + String(index)
                try Data(seed).write(to: directory.appendingPathComponent(name))
            }
            return 0
        } catch {
            print("cannot write seeds: \(error)")
            return 1
        }
    }
    registered = target
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments) { data, size in testOneInput(data, size) }
}

/// An input read as a sequence of events: a tag byte, then a chunk (a length byte and up to that many bytes).
public struct FuzzInput {
    private let bytes: [UInt8]
    private var position = 0

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public var isAtEnd: Bool { position >= bytes.count }

    /// The next byte, or nil at the end.
    public mutating func byte() -> UInt8? {
        guard position < bytes.count else { return nil }
        defer { position += 1 }
        return bytes[position]
    }

    /// A length byte, then up to that many bytes (fewer at the end of the input); nil at the end.
    public mutating func chunk() -> [UInt8]? {
        guard let length = byte() else { return nil }
        let end = min(bytes.count, position + Int(length))
        defer { position = end }
        return Array(bytes[position..<end])
    }

    /// Everything not read yet.
    public mutating func rest() -> [UInt8] {
        defer { position = bytes.count }
        return Array(bytes[min(position, bytes.count)...])
    }

    /// The encoding of events as ``byte()`` + ``chunk()`` reads them (payloads longer than 255 bytes are cut).
    public static func events(_ events: [(tag: UInt8, payload: [UInt8])]) -> [UInt8] {
        events.flatMap { event in [event.tag, UInt8(min(255, event.payload.count))] + event.payload.prefix(255) }
    }
}

/// Stops the fuzzer (a crash libFuzzer records) when an invariant of the code under test does not hold.
public func invariant(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
                      file: StaticString = #file, line: UInt = #line) {
    if !condition() { preconditionFailure("invariant broken: " + message(), file: file, line: line) }
}

/// Bytes from hex text (spaces ignored), for seeds.
public func hex(_ text: String) -> [UInt8] {
    let digits = Array(text.filter { !$0.isWhitespace })
    return stride(from: 0, to: digits.count - 1, by: 2).compactMap { UInt8(String(digits[$0...$0 + 1]), radix: 16) }
}
