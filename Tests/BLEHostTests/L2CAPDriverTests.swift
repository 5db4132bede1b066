@testable import BLEHost
import BLEProtocols
import BLEWire
import Logging
import Testing

/// The L2CAP driver on its own, synchronously: a link's channel manager's actions carried out on a link value in
/// place, and what reaches beyond the link recorded by a port, in order.
@Suite struct L2CAPDriverTests {
    struct RecordingPort: L2CAPPort {
        enum Request: Equatable {
            case send([UInt8])
            case deliverFixed([UInt8], L2CAPChannelID)
            case opened(L2CAPChannelID)
            case handedOn(L2CAPChannelID)
            case closed(L2CAPChannelID)
            case updateConnection
        }
        var requests: [Request] = []
        var streams: [L2CAPChannelID: AsyncStream<[UInt8]>] = [:]

        mutating func send(_ frame: [UInt8]) { requests.append(.send(frame)) }
        mutating func deliverFixed(_ payload: [UInt8], channel: L2CAPChannelID) { requests.append(.deliverFixed(payload, channel)) }
        mutating func opened(_ info: L2CAPChannelInfo, stream: AsyncStream<[UInt8]>, delivery: ChannelDelivery) {
            requests.append(.opened(info.localCID))
            streams[info.localCID] = stream
        }
        mutating func handedOn(_ cid: L2CAPChannelID) { requests.append(.handedOn(cid)) }
        mutating func closed(_ cid: L2CAPChannelID) { requests.append(.closed(cid)) }
        mutating func updateConnection(_ request: L2CAPConnectionParameterUpdateRequest) { requests.append(.updateConnection) }
        func timerHandler(for key: L2CAPTimerKey) -> @Sendable (TimerSet<L2CAPTimerKey>.Firing) async -> Void { { _ in } }
    }

    static let cid = L2CAPChannelID(rawValue: 0x0040)
    static let logger = Logger(label: "test.l2cap")

    static func link() -> Link {
        let connection = HostConnection(link: LinkID(rawValue: 1), handle: ConnectionHandle(rawValue: 0x40), role: .central,
                                        peer: LEAddress(BluetoothAddress(0xC0_00_00_00_00_02), type: .public),
                                        localAddress: LEAddress(BluetoothAddress(0xC0_00_00_00_00_01), type: .public),
                                        interval: 24, latency: 0, supervisionTimeout: 72)
        return Link(connection: connection, reassembler: L2CAPReassembler(maximumPDULength: 1024), l2cap: L2CAPChannelManager(role: .central))
    }

    static func info(initiatedLocally: Bool = true) -> L2CAPChannelInfo {
        L2CAPChannelInfo(localCID: cid, remoteCID: L2CAPChannelID(rawValue: 0x0041), spsm: L2CAPSPSM(rawValue: 0x0080),
                         local: L2CAPChannelParameters(), peerMTU: 512, peerMPS: 247, isEnhanced: false,
                         initiatedLocally: initiatedLocally)
    }

    @Test func anOpenedChannelHasItsStreamBeforeTheSDUsOfTheSameStepAndFramesKeepTheirOrder() async {
        var driver = L2CAPDriver(), link = Self.link(), port = RecordingPort()
        let frame = L2CAPBasicFrame(channelID: L2CAPChannelID(rawValue: 0x0041), payload: [9])
        driver.perform([.channelOpened(Self.info()), .deliverSDU(Self.cid, [1, 2, 3]), .send(frame),
                        .deliverFixed(.att, [0x1B]), .readyToSend(Self.cid)], on: &link, port: &port, logger: Self.logger)
        #expect(port.requests == [.opened(Self.cid), .send(frame.encoded), .deliverFixed([0x1B], .att), .handedOn(Self.cid)])
        #expect(link.deliveries[Self.cid] != nil && link.sduStreams[Self.cid] != nil)
        // The SDU that came in the same step as the opening is on the channel's stream.
        var sdus = port.streams[Self.cid]?.makeAsyncIterator()
        #expect(await sdus?.next() == [1, 2, 3])
        // The channel closes: its stream ends, and the host is told (a close may wait behind its queue).
        driver.perform([.channelClosed(Self.cid, .remoteRequest)], on: &link, port: &port, logger: Self.logger)
        #expect(await sdus?.next() == nil)
        #expect(link.sduStreams[Self.cid] == nil)
        #expect(port.requests.last == .closed(Self.cid))
    }

    @Test func aFailedOpenReachesItsWaiterWithTheFailure() {
        var driver = L2CAPDriver(), link = Self.link(), port = RecordingPort()
        final class Outcome { var result: Result<L2CAPChannel, any Error>? }
        let outcome = Outcome()
        link.openWaiters[Self.cid] = { outcome.result = $0 }
        driver.perform([.connectionFailed(Self.cid, .timedOut)], on: &link, port: &port, logger: Self.logger)
        #expect(link.openWaiters.isEmpty && port.requests.isEmpty)
        guard case .failure(let error as HostError)? = outcome.result else {
            Issue.record("the waiter did not get a failure")
            return
        }
        #expect(error.code == .l2capConnectionFailed(.timedOut))
    }

    @Test func readyToSendWakesTheChannelsSendersOnly() async {
        var driver = L2CAPDriver(), link = Self.link(), port = RecordingPort()
        let other = L2CAPChannelID(rawValue: 0x0042)
        await withCheckedContinuation { (woken: CheckedContinuation<Void, Never>) in
            link.creditWaiters[1] = (Self.cid, woken)
            link.creditWaiters[2] = (other, woken)   // never resumed: another channel's sender
            driver.perform([.readyToSend(Self.cid)], on: &link, port: &port, logger: Self.logger)
        }
        #expect(link.creditWaiters.keys.sorted() == [2])
        #expect(port.requests == [.handedOn(Self.cid)])
    }
}
