import BLETestSupport
import BLETransport
import BLEWire

/// Collects `count` packets from a transport's incoming stream.
func collect(_ transport: any HCITransport, _ count: Int) async throws -> [HCIPacket] {
    try await withTimeout(5) {
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
