import BLEHost
import BLEProtocols
import BLEVirtualController
import BLEWire
import Testing

/// The raw peer against the ATT server (Core 5.4, Vol 3, Part F, 3.4) and against enhanced credit based channels
/// (Part A, 4.25 and 10.1): the exact error each bad request gets, then the link and the other central still served.
extension HostileLinkTests {
    static func le(_ value: UInt16) -> [UInt8] { [UInt8(truncatingIfNeeded: value), UInt8(value >> 8)] }

    /// Sends an ATT PDU and returns the first ATT frame that comes back within two seconds.
    func att(_ rig: Rig, _ pdu: [UInt8]) async throws -> [UInt8]? {
        rig.send(pdu, cid: 0x0004)
        return try await rig.frames(within: 2, count: 1).first { $0.0 == 0x0004 }?.1
    }

    /// An ATT Error Response.
    static func error(_ opcode: UInt8, _ handle: UInt16, _ code: UInt8) -> [UInt8] { [0x01, opcode] + le(handle) + [code] }

    @Test func attRefusesBadHandlesRangesGroupTypesOffsetsAndLengths() async throws {
        let rig = try await Rig()
        let battery = rig.battery.rawValue
        // Handle 0, and a range whose start is 0 or above its end: Invalid Handle, naming the (start) handle.
        #expect(try await att(rig, [0x0A, 0x00, 0x00]) == Self.error(0x0A, 0, 0x01))
        #expect(try await att(rig, [0x04, 0x05, 0x00, 0x03, 0x00]) == Self.error(0x04, 5, 0x01))
        #expect(try await att(rig, [0x08, 0x00, 0x00, 0xFF, 0xFF, 0x03, 0x28]) == Self.error(0x08, 0, 0x01))
        // A handle nobody has: Invalid Handle.
        #expect(try await att(rig, [0x0A, 0x00, 0x01]) == Self.error(0x0A, 0x0100, 0x01))
        // Read By Group Type of a type that is not a grouping type: Unsupported Group Type, naming the start handle.
        #expect(try await att(rig, [0x10, 0x01, 0x00, 0xFF, 0xFF, 0x03, 0x28]) == Self.error(0x10, 1, 0x10))
        // Read Blob past the end of the 1-octet value: Invalid Offset.
        #expect(try await att(rig, [0x0C] + Self.le(battery) + [0x02, 0x00]) == Self.error(0x0C, battery, 0x07))
        // Too short and too long for their opcode: Invalid PDU (handle 0).
        #expect(try await att(rig, [0x0A, 0x03]) == Self.error(0x0A, 0, 0x04))
        #expect(try await att(rig, [0x02, 0x17]) == Self.error(0x02, 0, 0x04))
        #expect(try await att(rig, [0x0A] + Self.le(battery) + [0x00]) == Self.error(0x0A, 0, 0x04))
        try await rig.stillServed()
    }

    @Test func anMTUBelowTheMinimumIsTakenAs23AndPipelinedRequestsAreAnsweredInOrder() async throws {
        let rig = try await Rig()
        // Exchange MTU with 22: the server answers its own MTU and the link's MTU stays 23.
        let reply = try #require(try await att(rig, [0x02, 0x16, 0x00]))
        #expect(reply.count == 3 && reply[0] == 0x03)
        // A value read with a 23-octet MTU: at most 22 octets come back (the 3-octet value whole).
        let writable = rig.writable.rawValue
        #expect(try await att(rig, [0x0A] + Self.le(writable)) == [0x0B, 1, 2, 3])
        // Three requests sent without waiting (a client must not; the server answers each, in order).
        rig.send([0x0A] + Self.le(rig.battery.rawValue), cid: 0x0004)
        rig.send([0x0A] + Self.le(writable), cid: 0x0004)
        rig.send([0x0A, 0x00, 0x00], cid: 0x0004)
        let answers = try await rig.frames(within: 2, count: 3).filter { $0.0 == 0x0004 }.map(\.1)
        #expect(answers == [[0x0B, 87], [0x0B, 1, 2, 3], Self.error(0x0A, 0, 0x01)])
        try await rig.stillServed()
    }

    @Test func thePreparedWriteQueueIsBoundedAndCheckedAtExecution() async throws {
        let rig = try await Rig()
        let writable = rig.writable.rawValue
        func prepare(_ offset: UInt16, _ value: [UInt8]) -> [UInt8] { [0x16] + Self.le(writable) + Self.le(offset) + value }
        // 64 parts fill the queue; the 65th: Prepare Queue Full.
        for index in 0..<64 {
            let part: [UInt8] = [UInt8(index)]
            #expect(try await att(rig, prepare(UInt16(index), part)) == [0x17] + Self.le(writable) + Self.le(UInt16(index)) + part)
        }
        #expect(try await att(rig, prepare(64, [64])) == Self.error(0x16, writable, 0x09))
        // Cancelled: nothing written, and the queue is empty again.
        #expect(try await att(rig, [0x18, 0x00]) == [0x19])
        #expect(try await att(rig, [0x0A] + Self.le(writable)) == [0x0B, 1, 2, 3])
        // An offset past the end of the value: Invalid Offset at execution, nothing written.
        #expect(try await att(rig, prepare(0, [9])) == [0x17] + Self.le(writable) + [0x00, 0x00, 9])
        #expect(try await att(rig, prepare(10, [9])) == [0x17] + Self.le(writable) + [0x0A, 0x00, 9])
        #expect(try await att(rig, [0x18, 0x01]) == Self.error(0x18, writable, 0x07))
        #expect(try await att(rig, [0x0A] + Self.le(writable)) == [0x0B, 1, 2, 3])
        // Parts adding up to more than 512 octets: Invalid Attribute Value Length, nothing written.
        for offset in stride(from: 0, to: 520, by: 18) {
            let part = [UInt8](repeating: 0xEE, count: 18)
            #expect(try await att(rig, prepare(UInt16(offset), part)) == [0x17] + Self.le(writable) + Self.le(UInt16(offset)) + part)
        }
        #expect(try await att(rig, [0x18, 0x01]) == Self.error(0x18, writable, 0x0D))
        #expect(try await att(rig, [0x0A] + Self.le(writable)) == [0x0B, 1, 2, 3])
        // A well-formed long write still commits.
        #expect(try await att(rig, prepare(0, [7, 8, 9, 10])) != nil)
        #expect(try await att(rig, [0x18, 0x01]) == [0x19])
        #expect(try await att(rig, [0x0A] + Self.le(writable)) == [0x0B, 7, 8, 9, 10])
        try await rig.stillServed()
    }

    /// An L2CAP Credit Based Connection Request (enhanced) for `sources`.
    static func enhancedRequest(_ id: UInt8, spsm: UInt16, sources: [UInt16], mtu: UInt16 = 100, mps: UInt16 = 64) -> [UInt8] {
        let body = le(spsm) + le(mtu) + le(mps) + le(5) + sources.flatMap(le)
        return [0x17, id] + le(UInt16(body.count)) + body
    }

    @Test func anEnhancedRequestForMoreThanFiveChannelsIsRefusedWhole() async throws {
        let rig = try await Rig()
        let incoming = try await rig.host.listen(spsm: L2CAPSPSM(rawValue: 0x0080), parameters: L2CAPChannelParameters(mtu: 100, mps: 64))
        defer { withExtendedLifetime(incoming) {} }
        rig.send(Self.enhancedRequest(1, spsm: 0x0080, sources: Array(0x0040...0x0045)), cid: 0x0005)
        let refusal = try #require(try await rig.frames(within: 2, count: 1).first?.1)
        // Credit Based Connection Response: result Invalid Parameters (0x000C), six zero destination CIDs.
        #expect(refusal.count == 4 + 8 + 12 && refusal[0] == 0x18 && refusal[1] == 1)
        #expect(Array(refusal[10..<12]) == [0x0C, 0x00] && refusal[12...].allSatisfy { $0 == 0 })
        // Five are accepted.
        rig.send(Self.enhancedRequest(2, spsm: 0x0080, sources: Array(0x0040...0x0044)), cid: 0x0005)
        let accepted = try #require(try await rig.frames(within: 2, count: 1).first?.1)
        #expect(accepted.count == 4 + 8 + 10 && accepted[0] == 0x18 && Array(accepted[10..<12]) == [0, 0])
        #expect(stride(from: 12, to: 22, by: 2).allSatisfy { (0x0040...0x007F).contains(UInt16(accepted[$0]) | UInt16(accepted[$0 + 1]) << 8) })
        try await rig.stillServed()
    }

    /// An SDU announced longer than the host's MTU, or K-frames beyond the credits the host gave: the host disconnects
    /// that channel (Core 5.4, Vol 3, Part A, 3.4.3 and 10.1), the link goes on.
    @Test(arguments: [false, true]) func anSDUOverTheMTUOrAKFrameWithoutCreditsClosesTheChannel(withoutCredits: Bool) async throws {
        let rig = try await Rig()
        let incoming = try await rig.host.listen(spsm: L2CAPSPSM(rawValue: 0x0080),
                                                  parameters: L2CAPChannelParameters(mtu: 100, mps: 50, initialCredits: 2))
        defer { withExtendedLifetime(incoming) {} }
        rig.send(Self.request(1, spsm: 0x0080, scid: 0x0040), cid: 0x0005)
        let opened = try #require(try await response(rig, 1))
        #expect(opened.result == 0x0000)
        if withoutCredits {
            // Two credits, three one-frame SDUs; the channel's application reads nothing, so no credit comes back.
            for byte: UInt8 in [1, 2, 3] { rig.send([0x01, 0x00, byte], cid: opened.dcid) }
        } else {
            // SDU length 101 in the first K-frame, over the host's MTU of 100.
            rig.send([101, 0x00, 0xAB], cid: opened.dcid)
        }
        let reply = try await rig.frames(within: 2, count: 1)
        let request = try #require(reply.first)
        #expect(request.0 == 0x0005 && request.1.count == 8 && request.1[0] == 0x06, "\(reply)")
        #expect(Array(request.1[4...]) == Self.le(0x0040) + Self.le(opened.dcid))
        try await rig.stillServed()
    }
}
