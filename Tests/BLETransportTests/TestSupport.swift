import BLETransport
import BLEWire

struct TimedOut: Error {}

/// Runs `body`, failing with `TimedOut` after `seconds` so a broken test fails instead of hanging.
func withTimeout<T: Sendable>(_ seconds: Double = 5, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            throw TimedOut()
        }
        guard let first = try await group.next() else { throw TimedOut() }
        group.cancelAll()
        return first
    }
}

/// Collects `count` packets from a transport's incoming stream.
func collect(_ transport: any HCITransport, _ count: Int) async throws -> [HCIPacket] {
    try await withTimeout {
        var out: [HCIPacket] = []
        for try await packet in transport.incoming {
            out.append(packet)
            if out.count == count { break }
        }
        return out
    }
}

/// A fixed mix of packets of every kind.
let samplePackets: [HCIPacket] = [
    .command(HCIReset().packet),
    .event(HCICommandCompleteEvent(opcode: .reset, returnParameters: [0]).packet),
    .acl(HCIACLPacket(handle: 0x40, boundary: .firstFlushable, data: Array(0..<27))),
    .acl(HCIACLPacket(handle: 0x40, boundary: .continuing, data: Array(repeating: 0xEE, count: 300))),
    .event(HCIEventPacket(code: .leMeta, parameters: Array(repeating: 7, count: 255))),
    .command(HCILESetAdvertisingData(data: [2, 1, 6]).packet),
    .other(type: .iso, body: [0x01, 0x00, 0x02, 0x00, 0xAA, 0xBB]),
]
