import BLE
import BLEFixtures
import BLEVirtualController
import Testing

/// A consumer that does not keep up with notifications: its stream holds at most its buffering limit (the newest
/// values, in order), the rest are counted as dropped, and another consumer of the same characteristic that keeps up
/// gets everything.
@Suite(.timeLimit(.minutes(1))) struct SlowConsumerTests {
    @Test func aSlowConsumerKeepsTheNewestValuesWithinItsLimit() async throws {
        let devices = try await TwoDevices(peripheralName: "Fast", peripheralController: .init(aclBufferSize: 251),
                                           centralController: .init(position: Position(x: 1), aclBufferSize: 251), seed: 5)
        defer { devices.shutdown() }
        let manager = devices.peripheral
        try await manager.add(GATTServiceDefinition(uuid: 0xFE00, characteristics: [
            GATTCharacteristicDefinition(uuid: 0xFE01, properties: .notify),
        ]))
        try await manager.startAdvertising(name: "Fast")
        let device = try await devices.connect()
        let service = try #require(try await device.discoverServices([0xFE00]).first)
        let characteristic = try #require(try await device.discoverCharacteristics(for: service).first)
        let slow = try await device.notifications(for: characteristic, bufferingLimit: 16)
        let keepingUp = try await device.notifications(for: characteristic)
        let everything = Task { await keepingUp.prefix(200).reduce(into: [UInt8]()) { $0.append($1.first ?? 0) } }

        for i in 0..<200 { try await manager.updateValue([UInt8(i)], for: 0xFE01) }
        let all = await everything.value
        #expect(all == (0..<200).map { UInt8($0) })
        #expect(await device.droppedNotificationCount == 184)
        let kept = await slow.prefix(16).reduce(into: [UInt8]()) { $0.append($1.first ?? 0) }
        #expect(kept == (184..<200).map { UInt8($0) })
    }
}
