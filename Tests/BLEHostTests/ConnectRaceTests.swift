import BLEFixtures
import BLEHost
import BLETransport
import BLEVirtualController
import BLEWire
import Synchronization
import Testing

/// Delivers the controller's Command Status for LE Create Connection only together with the LE Connection Complete
/// that follows it, back to back, as a fast controller does (Bumble's answers both within 2 ms): the host must not
/// lose a connection that completes before its connect call has resumed from the Command Status.
final class CommandStatusWithCompletionTransport: HCITransport {
    let inner: any HCITransport
    let incoming: AsyncThrowingStream<HCIPacket, any Error>
    private let pump: Task<Void, Never>

    init(_ inner: any HCITransport) {
        self.inner = inner
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: HCIPacket.self, throwing: (any Error).self)
        incoming = stream
        pump = Task {
            var held: HCIPacket?
            do {
                for try await packet in inner.incoming {
                    if case .event(let e) = packet {
                        // Command Status (0x0F) for LE Create Connection (opcode 0x200D, little-endian at offset 2).
                        if e.code.rawValue == 0x0F, e.parameters.count >= 4, e.parameters[2] == 0x0D, e.parameters[3] == 0x20,
                           e.parameters[0] == 0x00 {
                            held = packet
                            continue
                        }
                        // LE Meta (0x3E): LE Connection Complete (0x01) or LE Enhanced Connection Complete (0x0A).
                        if e.code.rawValue == 0x3E, let sub = e.parameters.first, sub == 0x01 || sub == 0x0A, let status = held {
                            continuation.yield(status)
                            held = nil
                        }
                    }
                    continuation.yield(packet)
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
    }

    func send(_ packet: HCIPacket) async throws { try await inner.send(packet) }
    func close() async {
        pump.cancel()
        await inner.close()
    }
}

@Suite(.timeLimit(.minutes(1))) struct ConnectRaceTests {
    @Test func aConnectionCompletingWithItsCommandStatusIsNotLost() async throws {
        let air = VirtualAir(clock: .realTime, seed: 5)
        defer { air.shutdown() }
        let peripheralController = air.addController(.init())
        let peripheral = HCIHost(transport: peripheralController.makeHostTransport())
        try await peripheral.powerOn()
        let central = HCIHost(transport: CommandStatusWithCompletionTransport(
            air.addController(.init(position: Position(x: 1))).makeHostTransport()))
        try await central.powerOn()
        let events = await central.events()
        let advertising = HCIHost.AdvertisingOptions(data: AdvertisingData(flags: .leOnlyGeneralDiscoverable, localName: "P"))
        for round in 1...20 {
            try await peripheral.startAdvertising(advertising)
            let connection: HostConnection
            do {
                connection = try await central.connect(to: LEAddress(peripheralController.address, type: .public), timeout: .seconds(2))
            } catch {
                Issue.record("round \(round): \(error)")
                return
            }
            try await central.disconnect(connection)
            _ = try await next(events) { if case .disconnected(let c, _) = $0, c.link == connection.link { true } else { nil } }
        }
    }
}
