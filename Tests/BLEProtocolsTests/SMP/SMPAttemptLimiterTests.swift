import BLEProtocols
import BLEWire
import Testing

/// The repeated-attempts wait. Core 5.4, Vol 3, Part H, 2.3.6.
@Suite struct SMPAttemptLimiterTests {
    @Test func theWaitDoublesUpToTheCapAndResetsAfterSuccess() {
        var limiter = SMPAttemptLimiter<String>(initialDelay: .seconds(2), maximumDelay: .seconds(8))
        #expect(limiter.mayPair("peer", now: .zero))
        limiter.recordFailure("peer", now: .seconds(10))
        #expect(limiter.delay(for: "peer") == .seconds(2))
        #expect(!limiter.mayPair("peer", now: .seconds(11)))
        #expect(limiter.mayPair("other", now: .seconds(11)))
        #expect(limiter.mayPair("peer", now: .seconds(12)))
        limiter.recordFailure("peer", now: .seconds(12))
        #expect(limiter.delay(for: "peer") == .seconds(4))
        #expect(!limiter.mayPair("peer", now: .seconds(15)))
        limiter.recordFailure("peer", now: .seconds(16))
        limiter.recordFailure("peer", now: .seconds(24))
        #expect(limiter.delay(for: "peer") == .seconds(8))
        limiter.recordFailure("peer", now: .seconds(32))
        #expect(limiter.delay(for: "peer") == .seconds(8))
        #expect(!limiter.mayPair("peer", now: .seconds(39)))
        #expect(limiter.mayPair("peer", now: .seconds(40)))
        limiter.recordSuccess("peer")
        #expect(limiter.delay(for: "peer") == .zero)
        #expect(limiter.mayPair("peer", now: .seconds(40)))
    }

    @Test func theNumberOfPeersIsBounded() {
        var limiter = SMPAttemptLimiter<Int>(capacity: 3)
        for peer in 0..<10 { limiter.recordFailure(peer, now: .seconds(peer)) }
        #expect((0..<10).filter { !limiter.mayPair($0, now: .seconds(8)) }.count == 3)
        #expect(!limiter.mayPair(9, now: .seconds(8)) && limiter.mayPair(0, now: .seconds(8)))
    }

    @Test func aRefusedPeerGetsRepeatedAttempts() throws {
        var limiter = SMPAttemptLimiter<BluetoothAddress>()
        let peer = SMPFixtures.initiatorAddress.address
        limiter.recordFailure(peer, now: .seconds(100))
        var configuration = SMPPairing.Configuration()
        configuration.refusal = limiter.mayPair(peer, now: .seconds(101)) ? nil : .repeatedAttempts
        var link = try SMPLink(.init(), configuration)
        link.pair()
        #expect(link.failure(.responder) == .sent(.repeatedAttempts))
        #expect(link.failure(.initiator) == .received(.repeatedAttempts))
        #expect(link.sent(.responder) == [.pairingFailed(.repeatedAttempts)])
    }
}
