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

        init() async throws {
            let (host, hc) = try await world.host(aclSize: 251)
            self.host = host
            server = GATTEngine(host: host, database: GATTDatabase(services: [
                GATTServiceDefinition(uuid: 0x180F, characteristics: [GATTCharacteristicDefinition(uuid: 0x2A19, properties: .read, value: [87])]),
            ]))
            await server.start()
            battery = try #require(await server.database.valueHandle(of: 0x2A19))
            try await host.startAdvertising(.init(data: AdvertisingData(flags: .leOnlyGeneralDiscoverable, localName: "Target")))
            raw = world.air.addController(.init(position: Position(x: 2), aclBufferSize: 251, aclBufferCount: 8), buffered: true)
            raw.receive(fromHost: .command(HCISetEventMask(mask: 0x3FFF_FFFF_FFFF_FFFF).packet))
            raw.receive(fromHost: .command(HCILESetEventMask(mask: 0xFFFF_FFFF).packet))
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
            #expect(try await client.read(otherLink.handle, attribute: battery) == [87], sourceLocation: sourceLocation)
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
