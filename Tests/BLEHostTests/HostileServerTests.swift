import BLEFixtures
import BLEHost
import BLEProtocols
import BLETransport
import BLEVirtualController
import BLEWire
import Testing

/// A fake peripheral answering from a script of raw ATT responses, through the whole stack: the findings of the
/// hostile-input probe against our central. Each malformed answer fails its procedure with `malformedResponse`; the
/// central never crashes, the link stays up and the next request is served.
@Suite(.timeLimit(.minutes(1))) struct HostileServerTests {
    /// A fake server that answers each request with the next response of `script` (then Request Not Supported).
    func setUp(_ script: [ATTPDU]) async throws -> (World, GATTEngine, HCIHost, HostConnection, Task<Void, Never>) {
        let world = World()
        let (fake, fc) = try await world.host()
        let (central, _) = try await world.host(at: 1)
        let client = await central.gattEngine()
        // The fake's own Connection Complete can be processed after the central's connect call returns: wait for it.
        let fakeEvents = await fake.events()
        try await fake.startAdvertising(.init(data: AdvertisingData(localName: "Fake")))
        let c = try await central.connect(to: LEAddress(fc.address, type: .public), timeout: .seconds(5))
        let fakeLink = try await next(fakeEvents) { if case .connected(let c) = $0 { c } else { nil } }
        let att = try await fake.openFixedChannel(.att, on: fakeLink)
        let responder = Task {
            var script = script
            for await request in att {
                let opcode = ATTOpcode(rawValue: request.first ?? 0)
                let response = script.isEmpty ? ATTPDU.errorResponse(.init(requestOpcode: opcode, handle: 0, error: .requestNotSupported))
                    : script.removeFirst()
                try? await fake.sendL2CAP(response.encoded, channel: .att, on: fakeLink)
            }
        }
        return (world, client, central, c, responder)
    }

    func declaration(_ handle: AttributeHandle, value: UInt16) -> ATTReadByTypeResponse.Entry {
        .init(handle: handle, value: [0x10, UInt8(truncatingIfNeeded: value), UInt8(value >> 8), 0x37, 0x2A])
    }

    /// The probe's crash: a characteristic whose value handle is 0xFFFF (descriptor discovery computed 0xFFFF + 1).
    @Test func aValueHandleAt0xFFFFIsNotACrash() async throws {
        let (world, client, central, c, responder) = try await setUp([
            .readByTypeResponse(.init(entries: [declaration(0xFFFE, value: 0xFFFF)])),
        ])
        defer { responder.cancel(); withExtendedLifetime(world) {} }
        let service = GATTService(uuid: 0x180D, isPrimary: true, startHandle: 0xFFF0, endHandle: 0xFFFF)
        let characteristics = try await client.discoverCharacteristics(c, of: service)
        #expect(characteristics.map(\.valueHandle) == [0xFFFF])
        #expect(try await client.discoverDescriptors(c, of: characteristics[0]).isEmpty)
        #expect(await central.connections.count == 1)
    }

    /// Declarations out of order within one response (a descriptor would land on the wrong characteristic).
    @Test func declarationsOutOfOrderFailDiscovery() async throws {
        let (world, client, central, c, responder) = try await setUp([
            .readByTypeResponse(.init(entries: [declaration(0x0020, value: 0x0021), declaration(0x0010, value: 0x0011)])),
            .readResponse(.init(value: [42])),
        ])
        defer { responder.cancel(); withExtendedLifetime(world) {} }
        let service = GATTService(uuid: 0x180D, isPrimary: true, startHandle: 0x0001, endHandle: 0x0030)
        await #expect(throws: GATTError(.malformedResponse, "")) { try await client.discoverCharacteristics(c, of: service) }
        // The link is up and the next request is served.
        #expect(try await client.read(c, attribute: 0x0003) == [42])
        #expect(await central.connections.count == 1)
    }

    /// A value longer than an attribute may be (512 bytes) is refused, and so is an Error Response naming another
    /// request, or a response of the wrong kind.
    @Test func oversizedValuesAndMismatchedResponsesAreRefused() async throws {
        let (world, client, central, c, responder) = try await setUp([
            .exchangeMTUResponse(.init(mtu: 517)),
            .readResponse(.init(value: Array(repeating: 1, count: 516))),
            .errorResponse(.init(requestOpcode: .writeRequest, handle: 3, error: .invalidHandle)),
            .writeResponse(.init()),
            .readResponse(.init(value: [7])),
        ])
        defer { responder.cancel(); withExtendedLifetime(world) {} }
        _ = try await client.exchangeMTU(c)
        await #expect(throws: GATTError(.malformedResponse, "")) { try await client.read(c, attribute: 3) }
        await #expect(throws: GATTError(.malformedResponse, "")) { try await client.read(c, attribute: 3) }
        await #expect(throws: GATTError(.malformedResponse, "")) { try await client.read(c, attribute: 3) }
        #expect(try await client.read(c, attribute: 3) == [7])
        #expect(await central.connections.count == 1)
    }
}
