import BLEFixtures
import BLEHost
import BLEProtocols
import BLEVirtualController
import BLEWire
import Foundation
import Testing

/// A raw peer — a bare virtual controller driven with HCI commands and raw ACL packets, no host — sends malformed ACL,
/// L2CAP, signaling and ATT to a host serving GATT. Each case checks the exact reply the Core Specification requires
/// (or that there is none), then that the same link and another central's link are still served.
@Suite(.timeLimit(.minutes(1))) struct HostileLinkTests {
    final class Rig: Sendable {
        let world = World()
        let host: HCIHost
        let server: GATTEngine
        let raw: VirtualController
        let rawHandle: ConnectionHandle
        let other: HCIHost
        let client: GATTEngine
        let otherLink: HostConnection
        let battery: AttributeHandle
        /// A writable characteristic (value `01 02 03`), for prepared writes.
        let writable: AttributeHandle

        /// `services` come after the battery and writable ones.
        init(services: [GATTServiceDefinition] = []) async throws {
            let (host, hc) = try await world.host(aclSize: 251)
            self.host = host
            server = GATTEngine(host: host, database: GATTDatabase(services: [
                GATTServiceDefinition(uuid: 0x180F, characteristics: [GATTCharacteristicDefinition(uuid: 0x2A19, properties: .read, value: [87])]),
                GATTServiceDefinition(uuid: 0xFFF0, characteristics: [
                    GATTCharacteristicDefinition(uuid: 0xFFF1, properties: [.read, .write], permissions: [.readable, .writeable], value: [1, 2, 3]),
                ]),
            ] + services))
            await server.start()
            battery = try #require(await server.database.valueHandle(of: 0x2A19))
            writable = try #require(await server.database.valueHandle(of: 0xFFF1))
            try await host.startAdvertising(.init(data: AdvertisingData(flags: .leOnlyGeneralDiscoverable, localName: "Target")))
            raw = world.air.addController(.init(position: Position(x: 2), aclBufferSize: 251, aclBufferCount: 8), buffered: true)
            raw.receive(fromHost: .command(HCISetEventMask(mask: 0x3FFF_FFFF_FFFF_FFFF).packet))
            raw.receive(fromHost: .command(HCILESetEventMask(mask: 0xFFFF_FFFF & ~(1 << 9)).packet))  // legacy LE Connection Complete
            raw.receive(fromHost: .command(HCILECreateConnection(peerAddressType: .public, peerAddress: hc.address).packet))
            var handle: ConnectionHandle?
            for _ in 0..<400 where handle == nil {
                for case .event(let e) in raw.drainToHost() {
                    if case .le(.connectionComplete(let c)) = try? HCIEvent(packet: e), c.status == .success { handle = c.handle }
                }
                if handle == nil { try await Task.sleep(for: .milliseconds(5)) }
            }
            rawHandle = try #require(handle)
            // A second central, well behaved, on its own link.
            try await host.startAdvertising(.init(data: AdvertisingData(flags: .leOnlyGeneralDiscoverable, localName: "Target")))
            (other, _) = try await world.host(at: 3)
            client = GATTEngine(host: other)
            await client.start()
            otherLink = try await other.connect(to: LEAddress(hc.address, type: .public), timeout: .seconds(5))
        }

        /// Sends one ACL packet as is.
        func sendACL(_ boundary: HCIACLPacket.Boundary, _ data: [UInt8]) {
            raw.receive(fromHost: .acl(HCIACLPacket(handle: rawHandle, boundary: boundary, data: data)))
        }

        /// Sends a well-formed basic L2CAP frame on `cid`.
        func send(_ payload: [UInt8], cid: UInt16) {
            sendACL(.firstNonFlushable, [UInt8(truncatingIfNeeded: payload.count), UInt8(payload.count >> 8),
                                         UInt8(truncatingIfNeeded: cid), UInt8(cid >> 8)] + payload)
        }

        /// The L2CAP frames (channel, payload) the host sent the raw peer within `seconds`: stops early once `count`
        /// frames arrived.
        func frames(within seconds: Double, count: Int = .max) async throws -> [(UInt16, [UInt8])] {
            var frames: [(UInt16, [UInt8])] = []
            var pending: [UInt8] = []
            let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
            while ContinuousClock.now < deadline, frames.count < count {
                for case .acl(let packet) in raw.drainToHost() {
                    if packet.boundary != .continuing { pending = [] }
                    pending += packet.data
                    guard pending.count >= 4 else { continue }
                    let length = Int(pending[0]) | Int(pending[1]) << 8
                    if pending.count >= 4 + length {
                        frames.append((UInt16(pending[2]) | UInt16(pending[3]) << 8, Array(pending[4..<(4 + length)])))
                        pending = []
                    }
                }
                try await Task.sleep(for: .milliseconds(5))
            }
            return frames
        }

        /// Nothing comes back within 300 ms.
        func silence(sourceLocation: SourceLocation = #_sourceLocation) async throws {
            let got = try await frames(within: 0.3)
            #expect(got.isEmpty, "expected no reply, got \(got.map { "\($0.0): \($0.1.hexString())" })", sourceLocation: sourceLocation)
        }

        /// The raw peer's link answers an ATT read, and so does the other central's.
        func stillServed(sourceLocation: SourceLocation = #_sourceLocation) async throws {
            send([0x0A, UInt8(truncatingIfNeeded: battery.rawValue), UInt8(battery.rawValue >> 8)], cid: 0x0004)
            let reply = try await frames(within: 2, count: 1)
            #expect(reply.first?.0 == 0x0004 && reply.first?.1 == [0x0B, 87], "\(reply)", sourceLocation: sourceLocation)
            #expect(try await client.read(otherLink, attribute: battery) == [87], sourceLocation: sourceLocation)
            #expect(await host.connections.count == 2, sourceLocation: sourceLocation)
        }
    }

    @Test func aContinuationWithoutAStartIsDropped() async throws {
        let rig = try await Rig()
        rig.sendACL(.continuing, [0x01, 0x02, 0x03])
        try await rig.silence()
        try await rig.stillServed()
    }

    /// A frame whose L2CAP length promises more than arrives is abandoned when the next frame starts; the next frame
    /// is served.
    @Test func aFrameCutShortIsAbandonedAtTheNextStart() async throws {
        let rig = try await Rig()
        rig.sendACL(.firstNonFlushable, [0x0A, 0x00, 0x04, 0x00, 0x0A, 0x03])
        try await rig.stillServed()
    }

    /// An L2CAP header split over two ACL fragments is reassembled.
    @Test func aHeaderSplitOverFragmentsIsReassembled() async throws {
        let rig = try await Rig()
        let handle = rig.battery.rawValue
        rig.sendACL(.firstNonFlushable, [0x03, 0x00])
        rig.sendACL(.continuing, [0x04, 0x00, 0x0A, UInt8(truncatingIfNeeded: handle), UInt8(handle >> 8)])
        let reply = try await rig.frames(within: 2, count: 1)
        #expect(reply.first?.0 == 0x0004 && reply.first?.1 == [0x0B, 87])
        try await rig.stillServed()
    }

    /// Frames for fixed channels nobody uses, and empty frames on the signaling and SMP channels, get no answer.
    @Test func unknownChannelsAndEmptyFramesAreDroppedSilently() async throws {
        let rig = try await Rig()
        rig.send([0x01, 0x02], cid: 0x0003)
        rig.send([0x0A, 0x01, 0x00], cid: 0x003F)
        rig.send([], cid: 0x0005)
        rig.send([], cid: 0x0006)
        rig.send([], cid: 0x0004)
        try await rig.silence()
        try await rig.stillServed()
    }

    /// LE signaling: an unknown command is rejected as not understood (0x0000) with the request's identifier; a
    /// Disconnection Request for a channel never opened is rejected as an invalid CID (0x0002) naming both CIDs;
    /// a response nobody asked for is ignored. Core 5.4, Vol 3, Part A, 4.1 and 4.6.
    @Test func signalingRejectsWhatItMustAndIgnoresStrayResponses() async throws {
        let rig = try await Rig()
        rig.send([0x7F, 0x05, 0x00, 0x00], cid: 0x0005)
        var reply = try await rig.frames(within: 2, count: 1)
        #expect(reply.first?.0 == 0x0005 && reply.first?.1 == [0x01, 0x05, 0x02, 0x00, 0x00, 0x00], "\(reply.map { $0.1.hexString() })")
        rig.send([0x06, 0x07, 0x04, 0x00, 0x40, 0x00, 0x41, 0x00], cid: 0x0005)
        reply = try await rig.frames(within: 2, count: 1)
        #expect(reply.first?.1 == [0x01, 0x07, 0x06, 0x00, 0x02, 0x00, 0x40, 0x00, 0x41, 0x00], "\(reply.map { $0.1.hexString() })")
        // A Disconnection Response and a Connection Parameter Update Response nobody asked for.
        rig.send([0x07, 0x09, 0x04, 0x00, 0x40, 0x00, 0x41, 0x00], cid: 0x0005)
        rig.send([0x13, 0x0A, 0x02, 0x00, 0x00, 0x00], cid: 0x0005)
        try await rig.silence()
        try await rig.stillServed()
    }

    /// ATT: an unknown request gets Request Not Supported, a truncated one Invalid PDU, an unknown command nothing.
    /// Core 5.4, Vol 3, Part F, 3.4.1.1 and 3.3.
    @Test func attAnswersMalformedRequestsAndIgnoresUnknownCommands() async throws {
        let rig = try await Rig()
        rig.send([0x24, 0x01], cid: 0x0004)
        var reply = try await rig.frames(within: 2, count: 1)
        #expect(reply.first?.1 == [0x01, 0x24, 0x00, 0x00, 0x06], "\(reply.map { $0.1.hexString() })")
        rig.send([0x0A, 0x03], cid: 0x0004)
        reply = try await rig.frames(within: 2, count: 1)
        #expect(reply.first?.1 == [0x01, 0x0A, 0x00, 0x00, 0x04], "\(reply.map { $0.1.hexString() })")
        rig.send([0x7E, 0x01, 0x02], cid: 0x0004)
        try await rig.silence()
        try await rig.stillServed()
    }
}

/// LE credit based channels abused by the raw peer: the refusals the Core Specification names, and a channel whose
/// peer breaks its rules disconnected (a K-frame larger than the MPS; credits pushed past 65,535). Core 5.4, Vol 3,
/// Part A, 4.22–4.24 and 10.1.
extension HostileLinkTests {
    /// An LE Credit Based Connection Request.
    static func request(_ id: UInt8, spsm: UInt16, scid: UInt16, mtu: UInt16 = 100, mps: UInt16 = 50, credits: UInt16 = 5) -> [UInt8] {
        var w = ByteWriter()
        for v in [spsm, scid, mtu, mps, credits] { w.write(v) }
        return [0x14, id, 0x0A, 0x00] + w.bytes
    }

    /// The response to request `id`: its DCID and result.
    func response(_ rig: Rig, _ id: UInt8) async throws -> (dcid: UInt16, result: UInt16)? {
        let reply = try await rig.frames(within: 2, count: 1)
        guard let r = reply.first?.1, r.count == 14, r[0] == 0x15, r[1] == id else { return nil }
        return (UInt16(r[4]) | UInt16(r[5]) << 8, UInt16(r[12]) | UInt16(r[13]) << 8)
    }

    @Test func creditBasedChannelRequestsAreRefusedAsTheSpecificationSays() async throws {
        let rig = try await Rig()
        let incoming = try await rig.host.listen(spsm: L2CAPSPSM(rawValue: 0x0080))
        defer { withExtendedLifetime(incoming) {} }
        rig.send(Self.request(1, spsm: 0x00F1, scid: 0x0040), cid: 0x0005)
        #expect(try await response(rig, 1)?.result == 0x0002)    // SPSM not supported
        rig.send(Self.request(2, spsm: 0x0080, scid: 0x0020), cid: 0x0005)
        #expect(try await response(rig, 2)?.result == 0x0009)    // Invalid Source CID
        rig.send(Self.request(3, spsm: 0x0080, scid: 0x0041, mtu: 22), cid: 0x0005)
        #expect(try await response(rig, 3)?.result == 0x000B)    // Unacceptable parameters (MTU below 23)
        rig.send(Self.request(4, spsm: 0x0080, scid: 0x0040), cid: 0x0005)
        let opened = try #require(try await response(rig, 4))
        #expect(opened.result == 0x0000 && (0x0040...0x007F).contains(opened.dcid))
        rig.send(Self.request(5, spsm: 0x0080, scid: 0x0040), cid: 0x0005)
        #expect(try await response(rig, 5)?.result == 0x000A)    // Source CID already allocated
        try await rig.stillServed()
    }

    /// A K-frame longer than the host's MPS, or credits past 65,535: the host disconnects that channel (and only it).
    @Test(arguments: [false, true]) func aChannelWhosePeerBreaksTheRulesIsDisconnected(creditOverflow: Bool) async throws {
        let rig = try await Rig()
        let incoming = try await rig.host.listen(spsm: L2CAPSPSM(rawValue: 0x0080), parameters: L2CAPChannelParameters(mtu: 100, mps: 50))
        defer { withExtendedLifetime(incoming) {} }
        rig.send(Self.request(1, spsm: 0x0080, scid: 0x0040), cid: 0x0005)
        let opened = try #require(try await response(rig, 1))
        #expect(opened.result == 0x0000)
        if creditOverflow {
            // LE Flow Control Credit: 5 credits granted at connection, then 65,535 more.
            rig.send([0x16, 0x02, 0x04, 0x00, 0x40, 0x00, 0xFF, 0xFF], cid: 0x0005)
        } else {
            // A first K-frame: SDU length 60, then 58 octets: 60 in all, over the host's MPS of 50.
            rig.send([60, 0x00] + Array(repeating: 0xAB, count: 58), cid: opened.dcid)
        }
        // The host asks to disconnect the channel: Disconnection Request naming its CID and ours.
        let reply = try await rig.frames(within: 2, count: 1)
        let request = try #require(reply.first)
        #expect(request.0 == 0x0005 && request.1.count == 8 && request.1[0] == 0x06)
        #expect(Array(request.1[4...]) == [UInt8(truncatingIfNeeded: 0x0040), 0x00, UInt8(truncatingIfNeeded: opened.dcid), UInt8(opened.dcid >> 8)])
        try await rig.stillServed()
    }
}
