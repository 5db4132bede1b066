import BLEProtocols
import BLEWire

// ACL data in both directions. Incoming: ACL packets (decoded from the input) go through one L2CAP reassembler per
// connection handle; outgoing: PDUs are queued on an ACLFlow while the controller's events (decoded from the input)
// return buffers. Invariants: a reassembled frame has exactly its announced length; the flow never holds more
// buffers than the controller has nor sends fragments larger than its buffers.
enum ACLReassemblyFuzz {
    static func run(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        let limit = 23 + Int(input.byte() ?? 0)
        var reassemblers: [ConnectionHandle: L2CAPReassembler] = [:]
        var flow = ACLFlow(bufferSize: 27, bufferCount: 3)
        func sent(_ packets: [HCIACLPacket]) {
            for packet in packets { invariant(packet.data.count <= flow.bufferSize, "a fragment beyond the buffer size") }
            invariant((0...flow.bufferCount).contains(flow.freeBuffers), "free buffers out of range: \(flow.freeBuffers)")
        }
        while let tag = input.byte(), let chunk = input.chunk() {
            let handle = ConnectionHandle(rawValue: 0x40 + UInt16(tag >> 6))
            switch tag & 0x03 {
            case 0:
                guard let packet = try? HCIACLPacket(bytes: chunk) else { continue }
                var reassembler = reassemblers[packet.handle] ?? L2CAPReassembler(maximumPDULength: limit)
                if let frame = try? reassembler.append(isStart: packet.boundary.isStart, data: packet.data) {
                    invariant(frame.payload.count <= limit, "a frame beyond the limit")
                    invariant((try? L2CAPBasicFrame(bytes: frame.encoded)) == frame, "a frame does not re-encode")
                }
                reassemblers[packet.handle] = reassembler
            case 1:
                sent(flow.enqueue(handle: handle, pdu: chunk))
            case 2:
                guard let packet = try? HCIEventPacket(bytes: chunk), let event = try? HCIEvent(packet: packet) else { continue }
                sent(flow.receive(event))
            default:
                sent(flow.connectionClosed(handle: handle))
                invariant(flow.inFlightCount(handle: handle) == 0 && flow.queuedCount(handle: handle) == 0,
                          "a closed connection still holds packets")
            }
        }
    }

    static func seeds() -> [[UInt8]] {
        let read = hex("40 20 07 00 03 00 04 00 0A 03 00")          // complete: ATT Read Request on handle 0x40
        let first = hex("40 20 06 00 0A 00 04 00 12 03")            // start of a 10-byte frame
        let rest = hex("40 10 06 00 00 01 02 03 04 05")             // its continuation
        let orphan = hex("41 10 02 00 AA BB")                       // a continuation without a start
        let long = [UInt8](repeating: 0x5A, count: 80)              // a PDU in four fragments
        let completed = hex("13 05 01 40 00 02 00")                 // Number Of Completed Packets: 2 on 0x40
        let disconnected = hex("05 04 00 40 00 13")                 // Disconnection Complete 0x40
        return [
            [0xFF] + FuzzInput.events([(0, read), (0, first), (0, rest), (0, orphan)]),
            [0x00] + FuzzInput.events([(0, first), (0, first), (0, rest), (0, read)]),
            [0xFF] + FuzzInput.events([(1, long), (1, long), (2, completed), (2, completed), (1, read), (2, disconnected)]),
            [0x10] + FuzzInput.events([(1, long), (0x41, long), (3, []), (2, completed), (0, read)]),
        ]
    }
}
