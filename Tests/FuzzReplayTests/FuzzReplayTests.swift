import BLEFuzzHarness
import Foundation
import Synchronization
import Testing

/// Every fuzz target of `Fuzz/` in every `swift test`: its committed corpus (`Fuzz/Corpus/<target>`), its seeds, then
/// seeded mutations of them — a short, deterministic fuzz run without coverage guidance or AddressSanitizer (those
/// are `scripts/fuzz`'s), so that a decoder or machine that starts trapping or breaking an invariant on inputs near
/// the corpus fails CI. `SWIFT_BLE_FUZZ_ITERATIONS` sets the number of mutated inputs per target (default 20,000).
@Suite struct FuzzReplayTests {
    static let corpusRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz/Corpus")

    static let iterations = ProcessInfo.processInfo.environment["SWIFT_BLE_FUZZ_ITERATIONS"].flatMap { Int($0) } ?? 20_000

    /// The files of a target's committed corpus, in name order.
    static func corpus(of target: String) throws -> [[UInt8]] {
        let directory = corpusRoot.appendingPathComponent(target)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        return try names.map { [UInt8](try Data(contentsOf: directory.appendingPathComponent($0))) }
    }

    /// Runs one input, returning the invariants it broke (with the input, in hex).
    static func run(_ target: FuzzTarget, _ input: [UInt8]) -> [String] {
        let broken = Mutex<[String]>([])
        FuzzInvariant.$onBroken.withValue({ message in broken.withLock { $0.append(message) } }) {
            target.run(input)
        }
        let messages = broken.withLock { $0 }
        let hex = input.map { ($0 < 16 ? "0" : "") + String($0, radix: 16, uppercase: true) }.joined(separator: " ")
        return messages.map { "\(target.name): \($0) — input [\(hex)]" }
    }

    @Test(arguments: FuzzTargets.all.map(\.name))
    func replayTheCorpusAndMutationsOfIt(_ name: String) throws {
        let target = try #require(FuzzTargets.all.first { $0.name == name })
        let committed = try Self.corpus(of: name)
        #expect(committed.count >= 4, "the committed corpus of \(name) is missing")
        let inputs = committed + target.seeds()
        var failures: [String] = []
        for input in inputs { failures += Self.run(target, input) }
        var mutator = Mutator(seed: Mutator.seed(for: name), inputs: inputs)
        for _ in 0..<Self.iterations where failures.count < 5 {
            failures += Self.run(target, mutator.next())
        }
        for failure in failures.prefix(5) { Issue.record(Comment(rawValue: failure)) }
    }

    @Test func theMutatorIsDeterministicAndStaysWithinItsLengthLimit() {
        let inputs: [[UInt8]] = [[1, 2, 3], [], Array(repeating: 0xAA, count: 900)]
        var a = Mutator(seed: 7, inputs: inputs)
        var b = Mutator(seed: 7, inputs: inputs)
        var c = Mutator(seed: 8, inputs: inputs)
        let first = (0..<500).map { _ in a.next() }
        #expect(first == (0..<500).map { _ in b.next() })
        #expect(first != (0..<500).map { _ in c.next() })
        #expect(first.allSatisfy { $0.count <= Mutator.maximumLength })
        #expect(Set(first).count > 400, "mutations repeat")
    }
}

/// Seeded mutations of a set of inputs (bit flips, random and boundary bytes and words, insertions, deletions,
/// duplicated ranges, splices of two inputs, truncations), a few stacked per input, as a fuzzer's mutator makes them.
struct Mutator {
    static let maximumLength = 1024
    private var state: UInt64
    private let inputs: [[UInt8]]

    init(seed: UInt64, inputs: [[UInt8]]) {
        state = seed
        self.inputs = inputs.isEmpty ? [[]] : inputs
    }

    /// FNV-1a of the name: a seed stable across runs and platforms (unlike `hashValue`).
    static func seed(for name: String) -> UInt64 {
        name.utf8.reduce(0xCBF2_9CE4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01B3 }
    }

    /// SplitMix64.
    private mutating func random() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    private mutating func below(_ bound: Int) -> Int { bound <= 1 ? 0 : Int(random() % UInt64(bound)) }
    private mutating func byte() -> UInt8 { UInt8(truncatingIfNeeded: random()) }

    private static let boundaryBytes: [UInt8] = [0x00, 0x01, 0x02, 0x7F, 0x80, 0xFE, 0xFF]
    private static let boundaryWords: [UInt16] = [0x0000, 0x0001, 0x0017, 0x0040, 0x00F7, 0x0200, 0x0205, 0x7FFF, 0xFFFE, 0xFFFF]

    mutating func next() -> [UInt8] {
        var bytes = inputs[below(inputs.count)]
        for _ in 0...below(4) { mutate(&bytes) }
        if bytes.count > Self.maximumLength { bytes.removeLast(bytes.count - Self.maximumLength) }
        return bytes
    }

    private mutating func mutate(_ bytes: inout [UInt8]) {
        let operation = below(9)
        if bytes.isEmpty, operation != 3, operation != 6 {
            bytes = (0..<below(16)).map { _ in byte() }
            return
        }
        let position = below(bytes.count)
        switch operation {
        case 0: bytes[position] ^= 1 << UInt8(below(8))
        case 1: bytes[position] = byte()
        case 2: bytes[position] = Self.boundaryBytes[below(Self.boundaryBytes.count)]
        case 3: bytes.insert(contentsOf: (0..<1 + below(8)).map { _ in byte() }, at: below(bytes.count + 1))
        case 4: bytes.removeSubrange(position..<min(bytes.count, position + 1 + below(8)))
        case 5:
            let end = min(bytes.count, position + 1 + below(16))
            bytes.insert(contentsOf: Array(bytes[position..<end]), at: below(bytes.count + 1))
        case 6:
            let other = inputs[below(inputs.count)]
            bytes = Array(bytes.prefix(below(bytes.count + 1))) + other.suffix(below(other.count + 1))
        case 7: bytes.removeLast(bytes.count - position)
        default:
            let word = Self.boundaryWords[below(Self.boundaryWords.count)]
            bytes[position] = UInt8(truncatingIfNeeded: word)
            if position + 1 < bytes.count { bytes[position + 1] = UInt8(truncatingIfNeeded: word >> 8) }
        }
    }
}
