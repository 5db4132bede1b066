// What every fuzz target shares: the input read as events, invariants, hex for seeds, and the catalog of targets.
//
// These files are compiled twice: as the `FuzzHarness` module of the fuzz package (Fuzz/Package.swift, under
// libFuzzer and AddressSanitizer) and as the `BLEFuzzHarness` module of the main package, whose `FuzzReplayTests`
// run every target on its committed corpus and on seeded mutations of it in every `swift test`.

/// A fuzz target: its name (the libFuzzer executable's and the corpus directory's), its seed inputs and its body.
public struct FuzzTarget: Sendable {
    /// The target's name, e.g. `FuzzATTServer`.
    public let name: String
    /// Inputs built from valid PDUs and real exchanges; `scripts/fuzz --write-seeds` writes them to the corpus.
    public let seeds: @Sendable () -> [[UInt8]]
    /// Feeds one input to the code under test and checks the target's invariants.
    public let run: @Sendable ([UInt8]) -> Void
}

/// Every fuzz target.
public enum FuzzTargets {
    public static let h4Deframer = FuzzTarget(name: "FuzzH4Deframer", seeds: H4DeframerFuzz.seeds, run: H4DeframerFuzz.run)
    public static let hciEvent = FuzzTarget(name: "FuzzHCIEvent", seeds: HCIEventFuzz.seeds, run: HCIEventFuzz.run)
    public static let aclReassembly = FuzzTarget(name: "FuzzACLReassembly", seeds: ACLReassemblyFuzz.seeds, run: ACLReassemblyFuzz.run)
    public static let l2capSignaling = FuzzTarget(name: "FuzzL2CAPSignaling", seeds: L2CAPSignalingFuzz.seeds, run: L2CAPSignalingFuzz.run)
    public static let attPDU = FuzzTarget(name: "FuzzATTPDU", seeds: ATTPDUFuzz.seeds, run: ATTPDUFuzz.run)
    public static let attServer = FuzzTarget(name: "FuzzATTServer", seeds: ATTServerFuzz.seeds, run: ATTServerFuzz.run)
    public static let gattClient = FuzzTarget(name: "FuzzGATTClient", seeds: GATTClientFuzz.seeds, run: GATTClientFuzz.run)
    public static let smpPDU = FuzzTarget(name: "FuzzSMPPDU", seeds: SMPPDUFuzz.seeds, run: SMPPDUFuzz.run)
    public static let smpPairing = FuzzTarget(name: "FuzzSMPPairing", seeds: SMPPairingFuzz.seeds, run: SMPPairingFuzz.run)
    public static let advertisingData = FuzzTarget(name: "FuzzAdvertisingData", seeds: AdvertisingDataFuzz.seeds, run: AdvertisingDataFuzz.run)
    public static let mqttPacket = FuzzTarget(name: "FuzzMQTTPacket", seeds: MQTTPacketFuzz.seeds, run: MQTTPacketFuzz.run)
    public static let esphomeAPI = FuzzTarget(name: "FuzzESPHomeAPI", seeds: ESPHomeAPIFuzz.seeds, run: ESPHomeAPIFuzz.run)

    /// All of them, in the order above.
    public static let all = [h4Deframer, hciEvent, aclReassembly, l2capSignaling, attPDU, attServer, gattClient, smpPDU,
                             smpPairing, advertisingData, mqttPacket, esphomeAPI]
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

/// What happens when an invariant breaks: by default the process stops (a crash libFuzzer records with its input);
/// a test sets ``onBroken`` for its task to record the failure and go on.
public enum FuzzInvariant {
    /// Called with the message of a broken invariant instead of stopping the process, when set.
    @TaskLocal public static var onBroken: (@Sendable (String) -> Void)?
}

/// Checks an invariant of the code under test; see ``FuzzInvariant``.
public func invariant(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
                      file: StaticString = #file, line: UInt = #line) {
    guard !condition() else { return }
    if let onBroken = FuzzInvariant.onBroken {
        onBroken(message())
    } else {
        preconditionFailure("invariant broken: " + message(), file: file, line: line)
    }
}

/// Bytes from hex text (spaces ignored), for seeds.
public func hex(_ text: String) -> [UInt8] {
    let digits = Array(text.filter { !$0.isWhitespace })
    return stride(from: 0, to: digits.count - 1, by: 2).compactMap { UInt8(String(digits[$0...$0 + 1]), radix: 16) }
}
