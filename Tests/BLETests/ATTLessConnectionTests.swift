import BLE
import BLEFixtures
import BLEHost
import BLEVirtualController
import Testing

/// A link does not depend on ATT (Core 5.4, Vol 3, Part F, 3.3.3: a transaction timeout ends the ATT bearer, not the
/// link). A peer with no ATT server — a Linux kernel where nothing serves GATT, an L2CAP-only accessory — never answers
/// the MTU exchange the central starts as it connects: `Central.connect` returns as soon as the link is up, the
/// exchange waits beside it, and a credit based channel opens on the link and carries data both ways.
@Suite(.timeLimit(.minutes(1))) struct ATTLessConnectionTests {
    @Test func aPeerThatNeverAnswersATTStillGetsAConnectionAndAChannel() async throws {
        let world = World()
        // The peer: a host with no GATT at all; it takes its ATT channel itself and answers nothing on it.
        let (silent, sc) = try await world.host()
        let silentEvents = await silent.events()
        let channels = try await silent.listen(spsm: L2CAPSPSM(rawValue: 0x0080))
        try await silent.startAdvertising(.init(data: AdvertisingData(localName: "NoATT")))
        let central = try await Central(transport: world.air.addController(.init(position: Position(x: 1))).makeHostTransport())
        let remote = try await central.connect(LEAddress(sc.address, type: .public), timeout: .seconds(5))
        let link = try await next(silentEvents) { if case .connected(let c) = $0 { c } else { nil } }
        var att = try await silent.openFixedChannel(.att, on: link).makeAsyncIterator()
        // The central asked for the MTU as it connected (Exchange MTU Request, 247), and got no answer.
        #expect(await att.next() == [0x02, 0xF7, 0x00])

        let channel = try await remote.openL2CAPChannel(L2CAPSPSM(rawValue: 0x0080))
        var accepted = channels.makeAsyncIterator()
        let peer = try #require(await accepted.next())
        try await channel.send(Array("no ATT needed".utf8))
        var atPeer = peer.incoming.makeAsyncIterator()
        #expect(await atPeer.next() == Array("no ATT needed".utf8))
        try await peer.send([0xBE, 0xEF])
        var atCentral = channel.incoming.makeAsyncIterator()
        #expect(await atCentral.next() == [0xBE, 0xEF])
        #expect(await central.adapter.connections.count == 1, "the link is up")
    }
}
