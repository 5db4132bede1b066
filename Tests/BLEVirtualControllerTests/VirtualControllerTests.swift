import BLETransport
import BLEVirtualController
import BLEWire
import Testing

/// The host side of a controller: transports, removal, and answers to commands it does not implement.
@Suite struct VirtualControllerTests {
    /// The next event on `iterator`, decoded (ACL packets skipped).
    func nextEvent(_ iterator: inout AsyncThrowingStream<HCIPacket, any Error>.Iterator) async throws -> HCIEvent? {
        while let packet = try await iterator.next() {
            if case .event(let e) = packet { return try HCIEvent(packet: e) }
        }
        return nil
    }

    @Test(.timeLimit(.minutes(1))) func attachServesATransportUntilItCloses() async throws {
        let bench = Bench()
        let controller = bench.air.addController()
        let central = try bench.controller(at: 1)
        let (host, controllerEnd) = HCIPipe.makePair()
        let attached = Task { await controller.attach(controllerEnd) }
        var incoming = host.incoming.makeAsyncIterator()

        try await host.send(.command(HCIReadBDADDR().packet))
        let bdaddr = try #require(try await nextEvent(&incoming))
        #expect(bdaddr == .commandComplete(.init(for: HCIReadBDADDR.self, .init(address: controller.address))))
        for command in [HCILESetAdvertisingParameters(intervalMin: 0x20, intervalMax: 0x20).packet,
                        HCILESetAdvertisingEnable(isEnabled: true).packet] {
            try await host.send(.command(command))
            guard case .commandComplete(let c) = try await nextEvent(&incoming) else { Issue.record("no answer"); return }
            #expect(c.status == .success)
        }
        #expect(controller.isAdvertising)

        // A central connects to it; then the host behind the transport goes away.
        try bench.expectSuccess(central, HCILECreateConnection(peerAddressType: .public, peerAddress: controller.address,
                                                               supervisionTimeout: 0x0064))
        bench.advance(.milliseconds(100))
        let ch = try #require(bench.connectionCompletes(try bench.drain(central)).first?.handle)
        await host.close()
        await attached.value
        #expect(controller.connectionCount == 0)
        bench.advance(.milliseconds(1010))
        #expect(bench.disconnections(try bench.drain(central)) == [.init(handle: ch, reason: .connectionTimeout)])
    }

    @Test(.timeLimit(.minutes(1))) func closingTheHostTransportRemovesTheController() async throws {
        let air = VirtualAir(clock: .manual)
        let controller = air.addController()
        let transport = controller.makeHostTransport()
        var incoming = transport.incoming.makeAsyncIterator()
        try await transport.send(.command(HCILESetAdvertisingEnable(isEnabled: true).packet))
        guard case .commandComplete(let c) = try await nextEvent(&incoming) else { Issue.record("no answer"); return }
        #expect(c.status == .success && controller.isAdvertising)
        await transport.close()
        #expect(!controller.isAdvertising)
        // Its output ends and it accepts nothing more.
        #expect(try await incoming.next() == nil)
        await #expect(throws: TransportError.self) { try await transport.send(.command(HCIReset().packet)) }
    }

    @Test func unimplementedCommandsAnswerInTheirOwnCompletionStyle() throws {
        let bench = Bench()
        let a = try bench.controller()
        // Commands whose outcome comes in a later event answer Unknown HCI Command with Command Status …
        for opcode in [HCIOpcode.readRemoteVersionInformation, HCIOpcode(ogf: 0x01, ocf: 0x0005),
                       HCIOpcode(ogf: 0x08, ocf: 0x0026), HCIOpcode(ogf: 0x08, ocf: 0x0085)] {
            #expect(try bench.send(a, HCICommandPacket(opcode: opcode, parameters: [0, 0])) ==
                    [.commandStatus(.init(status: .unknownCommand, opcode: opcode))], "\(opcode)")
        }
        // … the others with Command Complete carrying only the status.
        for opcode in [HCIOpcode(ogf: 0x08, ocf: 0x004B), .leClearFilterAcceptList, .readLocalName, HCIOpcode(ogf: 0x3F, ocf: 0x0123)] {
            #expect(try bench.send(a, HCICommandPacket(opcode: opcode)) ==
                    [.commandComplete(.init(opcode: opcode, returnParameters: [HCIStatus.unknownCommand.rawValue]))], "\(opcode)")
        }
        // Every answer grants exactly one command credit.
        for packet in a.drainToHost() { Issue.record("unexpected \(packet)") }
        let events = try bench.send(a, HCICommandPacket(opcode: .leSetPHY))
        if case .commandStatus(let s) = events.first { #expect(s.numHCICommandPackets == 1) } else { Issue.record("\(events)") }
        if case .commandComplete(let c) = try bench.send(a, HCILERand()).first { #expect(c.numHCICommandPackets == 1) }
    }

    @Test func removedControllersEndTheirOutput() async {
        let air = VirtualAir(clock: .manual)
        let controller = air.addController()
        controller.remove()
        var iterator = controller.toHost.makeAsyncIterator()
        #expect(await iterator.next() == nil)
    }
}
