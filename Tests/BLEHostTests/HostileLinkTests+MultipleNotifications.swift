import BLEHost
import BLEProtocols
import BLEWire
import Testing

/// Multiple Handle Value Notification on the wire, seen by the raw peer: sent only to a client that set bit 2 of its
/// Client Supported Features, single notifications before. Core 5.4, Vol 3, Part F, 3.4.7.4 and Part G, 7.2.
extension HostileLinkTests {
    @Test func multipleHandleValueNotificationGoesOnlyToAClientThatEnabledIt() async throws {
        let rig = try await Rig(services: [
            GATTServiceDefinition(uuid: 0xFFA0, characteristics: [
                GATTCharacteristicDefinition(uuid: 0xFFA1, properties: [.read, .notify], value: [0]),
                GATTCharacteristicDefinition(uuid: 0xFFA2, properties: [.read, .notify], value: [0]),
            ]),
        ])
        let a = try #require(await rig.server.database.valueHandle(of: 0xFFA1)).rawValue
        let b = try #require(await rig.server.database.valueHandle(of: 0xFFA2)).rawValue
        let features = try #require(await rig.server.database.valueHandle(of: 0x2B29)).rawValue
        // Subscribed to both (each CCCD follows its value).
        #expect(try await att(rig, [0x12] + Self.le(a + 1) + [0x01, 0x00]) == [0x13])
        #expect(try await att(rig, [0x12] + Self.le(b + 1) + [0x01, 0x00]) == [0x13])

        // Without the bit: one notification per value.
        _ = try await rig.server.updateValues([(AttributeHandle(rawValue: a), [0x11]), (AttributeHandle(rawValue: b), [0x22, 0x23])])
        let single = try await rig.frames(within: 2, count: 2).filter { $0.0 == 0x0004 }.map(\.1)
        #expect(single == [[0x1B] + Self.le(a) + [0x11], [0x1B] + Self.le(b) + [0x22, 0x23]])

        // Multiple Handle Value Notifications enabled: one PDU of (handle, length, value) tuples.
        #expect(try await att(rig, [0x12] + Self.le(features) + [0x04]) == [0x13])
        _ = try await rig.server.updateValues([(AttributeHandle(rawValue: a), [0x31]), (AttributeHandle(rawValue: b), [0x42, 0x43])])
        let multiple = try await rig.frames(within: 2, count: 1).filter { $0.0 == 0x0004 }.map(\.1)
        #expect(multiple == [[0x23] + Self.le(a) + Self.le(1) + [0x31] + Self.le(b) + Self.le(2) + [0x42, 0x43]])
        try await rig.silence()
        try await rig.stillServed()
    }
}
