import BLEVirtualController
import BLEWire
import Testing

@Suite struct EncryptionTests {
    let key = Array(UInt8(1)...UInt8(16))

    @Test func matchingKeysEncryptBothSides() throws {
        let bench = Bench()
        let central = try bench.controller()
        let peripheral = try bench.controller(at: 1)
        let (ch, ph) = try bench.connect(central, peripheral)
        let start = try bench.send(central, HCILEEnableEncryption(handle: ch, randomNumber: 0x1122, encryptedDiversifier: 0x33, longTermKey: key))
        #expect(start == [.commandStatus(.init(status: .success, opcode: .leEnableEncryption))])
        #expect(try bench.drain(peripheral) == [.le(.longTermKeyRequest(.init(handle: ph, randomNumber: 0x1122, encryptedDiversifier: 0x33)))])
        let reply = try bench.send(peripheral, HCILELongTermKeyRequestReply(handle: ph, longTermKey: key))
        #expect(reply.contains(.commandComplete(.init(for: HCILELongTermKeyRequestReply.self, .init(handle: ph)))))
        #expect(reply.contains(.encryptionChange(.init(handle: ph, encryptionEnabled: 1))))
        #expect(try bench.drain(central) == [.encryptionChange(.init(handle: ch, encryptionEnabled: 1))])
        // Starting again on an encrypted link refreshes the key.
        _ = try bench.send(central, HCILEEnableEncryption(handle: ch, randomNumber: 0x1122, encryptedDiversifier: 0x33, longTermKey: key))
        _ = try bench.drain(peripheral)
        _ = try bench.send(peripheral, HCILELongTermKeyRequestReply(handle: ph, longTermKey: key))
        #expect(try bench.drain(central) == [.encryptionKeyRefreshComplete(.init(handle: ch))])
    }

    @Test func mismatchingKeysDisconnectWithMICFailure() throws {
        let bench = Bench()
        let central = try bench.controller()
        let peripheral = try bench.controller(at: 1)
        let (ch, ph) = try bench.connect(central, peripheral)
        _ = try bench.send(central, HCILEEnableEncryption(handle: ch, randomNumber: 0, encryptedDiversifier: 0, longTermKey: key))
        _ = try bench.drain(peripheral)
        let reply = try bench.send(peripheral, HCILELongTermKeyRequestReply(handle: ph, longTermKey: key.reversed()))
        #expect(bench.disconnections(reply) == [.init(handle: ph, reason: .connectionTerminatedMICFailure)])
        #expect(bench.disconnections(try bench.drain(central)) == [.init(handle: ch, reason: .connectionTerminatedMICFailure)])
    }

    @Test func negativeReplyLeavesTheLinkUp() throws {
        let bench = Bench()
        let central = try bench.controller()
        let peripheral = try bench.controller(at: 1)
        let (ch, ph) = try bench.connect(central, peripheral)
        _ = try bench.send(central, HCILEEnableEncryption(handle: ch, randomNumber: 0, encryptedDiversifier: 0, longTermKey: key))
        _ = try bench.drain(peripheral)
        _ = try bench.send(peripheral, HCILELongTermKeyRequestNegativeReply(handle: ph))
        #expect(try bench.drain(central) == [.encryptionChange(.init(status: .pinOrKeyMissing, handle: ch, encryptionEnabled: 0))])
        #expect(central.connectionCount == 1)
    }

    @Test func onlyTheCentralStartsEncryption() throws {
        let bench = Bench()
        let central = try bench.controller()
        let peripheral = try bench.controller(at: 1)
        let (_, ph) = try bench.connect(central, peripheral)
        let events = try bench.send(peripheral, HCILEEnableEncryption(handle: ph, randomNumber: 0, encryptedDiversifier: 0, longTermKey: key))
        #expect(bench.status(of: .leEnableEncryption, in: events) == .commandDisallowed)
        let stray = try bench.send(peripheral, HCILELongTermKeyRequestReply(handle: ph, longTermKey: key))
        #expect(bench.status(of: .leLongTermKeyRequestReply, in: stray) == .commandDisallowed)
    }

    @Test func aMaskedKeyRequestIsRejectedLikeANegativeReply() throws {
        let bench = Bench()
        let central = try bench.controller()
        let peripheral = try bench.controller(at: 1)
        let (ch, _) = try bench.connect(central, peripheral)
        // The peripheral's host masks LE Long Term Key Request (LE event mask bit 4) and so cannot answer it.
        try bench.expectSuccess(peripheral, HCILESetEventMask(mask: 0x1F & ~0x10))
        let events = try bench.send(central, HCILEEnableEncryption(handle: ch, randomNumber: 0, encryptedDiversifier: 0, longTermKey: key))
        #expect(try bench.drain(peripheral).isEmpty)
        #expect(events == [.commandStatus(.init(status: .success, opcode: .leEnableEncryption)),
                           .encryptionChange(.init(status: .pinOrKeyMissing, handle: ch, encryptionEnabled: 0))])
        #expect(central.connectionCount == 1)
    }

    @Test func oneEncryptionStartAtATime() throws {
        let bench = Bench()
        let central = try bench.controller()
        let peripheral = try bench.controller(at: 1)
        let (ch, ph) = try bench.connect(central, peripheral)
        let start = HCILEEnableEncryption(handle: ch, randomNumber: 7, encryptedDiversifier: 9, longTermKey: key)
        _ = try bench.send(central, start)
        #expect(bench.status(of: .leEnableEncryption, in: try bench.send(central, start)) == .commandDisallowed)
        #expect(bench.status(of: .leEnableEncryption, in: try bench.send(central, HCILEEnableEncryption(
            handle: 0x0999, randomNumber: 0, encryptedDiversifier: 0, longTermKey: key))) == .unknownConnectionIdentifier)
        // A reply for a handle with no request pending is refused.
        _ = try bench.send(peripheral, HCILELongTermKeyRequestReply(handle: ph, longTermKey: key))
        let late = try bench.send(peripheral, HCILELongTermKeyRequestNegativeReply(handle: ph))
        #expect(bench.status(of: .leLongTermKeyRequestNegativeReply, in: late) == .commandDisallowed)
        #expect(try bench.drain(central) == [.encryptionChange(.init(handle: ch, encryptionEnabled: 1))])
    }
}
