import BLEFixtures
import BLEHost
import BLEProtocols
import BLETransport
import BLEVirtualController
import BLEWire
import Synchronization
import Testing

/// A fake peripheral that sends whatever ATT PDUs the test writes, when it writes them, against our central through the
/// whole stack: responses nobody asked for, notifications and indications for handles nobody subscribed to, an
/// indication flood, a server that never answers. Core 5.4, Vol 3, Part F, 3.3 and 3.4.7.
extension HostileServerTests {
    final class Fake: Sendable {
        let world: World
        let fake: HCIHost
        let central: HCIHost
        let client: GATTEngine
        let link: HostConnection
        let fakeLink: HostConnection
        /// Every ATT PDU the central sent the fake.
        final class Log: Sendable { let pdus = Mutex<[[UInt8]]>([]) }
        let received = Log()
        let reader: Task<Void, Never>

        init(transactionTimeout: Duration? = nil) async throws {
            world = World()
            let (fake, fc) = try await world.host()
            self.fake = fake
            (central, _) = try await world.host(at: 1)
            client = await central.gattEngine()
            if let transactionTimeout { await client.setTransactionTimeout(transactionTimeout) }
            let fakeEvents = await fake.events()
            try await fake.startAdvertising(.init(data: AdvertisingData(localName: "Fake")))
            link = try await central.connect(to: LEAddress(fc.address, type: .public), timeout: .seconds(5))
            fakeLink = try await next(fakeEvents) { if case .connected(let c) = $0 { c } else { nil } }
            let att = try await fake.openFixedChannel(.att, on: fakeLink)
            let log = received
            reader = Task {
                for await pdu in att { log.pdus.withLock { $0.append(pdu) } }
            }
        }

        deinit { reader.cancel() }

        func send(_ pdu: [UInt8]) async throws {
            try await fake.sendL2CAP(pdu, channel: .att, on: fakeLink)
        }

        /// Waits (up to two seconds) until the central has sent `count` PDUs in all, and returns them.
        func waitForReceived(_ count: Int) async throws -> [[UInt8]] {
            for _ in 0..<400 {
                let all = received.pdus.withLock { $0 }
                if all.count >= count { return all }
                try await Task.sleep(for: .milliseconds(5))
            }
            return received.pdus.withLock { $0 }
        }
    }

    /// Subscribes the central to value handle 0x0010 (its CCCD at 0x0011), the fake accepting the CCCD write.
    func subscribe(_ f: Fake, indications: Bool) async throws -> NotificationStream {
        async let stream = f.client.subscribe(f.link, valueHandle: 0x0010, cccdHandle: 0x0011, indications: indications)
        let write = try await f.waitForReceived(1)
        #expect(write.last == [0x12, 0x11, 0x00, indications ? 0x02 : 0x01, 0x00])
        try await f.send([0x13])
        return try await stream
    }

    /// The central reads handle 3 and the fake answers `[value]`.
    func readServed(_ f: Fake, _ value: UInt8, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let before = f.received.pdus.withLock { $0.count }
        async let read = f.client.read(f.link, attribute: 3)
        let sent = try await f.waitForReceived(before + 1)
        #expect(sent.last == [0x0A, 0x03, 0x00], sourceLocation: sourceLocation)
        try await f.send([0x0B, value])
        #expect(try await read == [value], sourceLocation: sourceLocation)
        #expect(await f.central.connections.count == 1, sourceLocation: sourceLocation)
    }

    @Test func responsesNobodyAskedForAreIgnored() async throws {
        let f = try await Fake()
        // Read, Write, Error, Exchange MTU, Read By Type and Execute Write responses, with no request outstanding.
        for pdu: [UInt8] in [[0x0B, 9], [0x13], [0x01, 0x0A, 0x03, 0x00, 0x0A], [0x03, 0x17, 0x00],
                             [0x09, 0x07, 0x02, 0x00, 0x02, 0x03, 0x00, 0x00, 0x2A], [0x19]] {
            try await f.send(pdu)
        }
        try await Task.sleep(for: .milliseconds(200))
        #expect(f.received.pdus.withLock { $0.isEmpty }, "the central answered a response")
        // The next read gets its own answer, not one of those.
        try await readServed(f, 42)
    }

    @Test func notificationsAndIndicationsForUnknownHandlesAreDroppedAndIndicationsStillConfirmed() async throws {
        let f = try await Fake()
        let values = try await subscribe(f, indications: false)
        try await f.send([0x1B, 0x99, 0x00, 1])            // a notification for a handle nobody subscribed to
        try await f.send([0x1D, 0x98, 0x00, 2])            // an indication for one: confirmed all the same
        try await f.send([0x1B])                           // a notification too short for a handle
        try await f.send([0x1B, 0x10, 0x00, 3])
        var iterator = values.makeAsyncIterator()
        #expect(await iterator.next() == [3])
        let sent = try await f.waitForReceived(2)
        #expect(Array(sent.dropFirst()) == [[0x1E]])
        try await readServed(f, 7)
    }

    @Test func anIndicationFloodIsDeliveredInOrderAndEachConfirmed() async throws {
        let f = try await Fake()
        let values = try await subscribe(f, indications: true)
        // A server must wait for each confirmation; this one sends 40 indications at once.
        for index in 0..<40 { try await f.send([0x1D, 0x10, 0x00, UInt8(index)]) }
        var got: [[UInt8]] = []
        for await value in values {
            got.append(value)
            if got.count == 40 { break }
        }
        #expect(got == (0..<40).map { [UInt8($0)] })
        let sent = try await f.waitForReceived(41)
        #expect(sent.count == 41 && sent.dropFirst().allSatisfy { $0 == [0x1E] })
        try await readServed(f, 8)
    }

    /// A server that never answers: the request fails at the ATT transaction timeout and the central's ATT bearer on
    /// that link ends, as the specification requires (no further ATT on a bearer that timed out: nothing more is sent,
    /// later requests fail at once); the link stays up (Core 5.4, Vol 3, Part F, 3.3.3). The timeout itself is tested
    /// with injected time in `ATTBearerTests`; here it is shortened to 300 ms to prove the wiring.
    @Test func aSilentServerTimesOutAndItsBearerEnds() async throws {
        let f = try await Fake(transactionTimeout: .milliseconds(300))
        await #expect(throws: GATTError(.timeout, "")) { try await f.client.read(f.link, attribute: 3) }
        #expect(try await f.waitForReceived(1).first == [0x0A, 0x03, 0x00])
        await #expect(throws: GATTError(.timeout, "")) { try await f.client.read(f.link, attribute: 4) }
        await #expect(throws: GATTError(.timeout, "")) {
            try await f.client.writeWithoutResponse(f.link, attribute: 4, value: [1])
        }
        try await Task.sleep(for: .milliseconds(100))
        #expect(try await f.waitForReceived(1).count == 1, "nothing more went out on the bearer")
        #expect(await f.central.connections.count == 1, "the link stays up")
    }
}
