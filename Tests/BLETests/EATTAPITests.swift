import BLE
import BLEFixtures
import BLEHost
import BLEProtocols
import BLETestSupport
import BLEVirtualController
import Testing

/// Enhanced ATT through the public API: the application pairs, opens the bearers, and its concurrent reads travel at
/// once (the peripheral's application holds every answer until all four reads reached it, which one bearer could
/// never deliver); the bearers are never named. Multiple values pushed at once reach their subscribers.
@Suite(.timeLimit(.minutes(1))) struct EATTAPITests {
    static let service = BluetoothUUID("0000EA00-0000-1000-8000-00805F9B34FB") ?? 0
    static let values = (1...4).map { BluetoothUUID("0000EA0\($0)-0000-1000-8000-00805F9B34FB") ?? 0 }

    @Test func concurrentReadsOfARemotePeripheralTravelAtOnce() async throws {
        let devices = try await TwoDevices(peripheralName: "EATT")
        defer { devices.shutdown() }
        let manager = devices.peripheral
        try await manager.add(GATTServiceDefinition(uuid: Self.service, characteristics: Self.values.map {
            GATTCharacteristicDefinition(uuid: $0, properties: .read, source: .application)
        }))
        let requests = await manager.requests()
        let application = Task {
            var held: [AttributeRequest] = []
            for await event in requests {
                guard case .application(let request) = event.kind, case .read = request.kind else { continue }
                held.append(request)
                if held.count == 4 { break }
            }
            for request in held { await request.respond(with: request.characteristic.map { Array($0.description.prefix(8).utf8) } ?? []) }
            return held.count
        }
        let centralEvents = await manager.centralEvents()
        let bearersSeen = Task {
            for await event in centralEvents { if case .enhancedATTBearers(_, let count) = event, count == 3 { return count } }
            return 0
        }
        try await manager.startAdvertising(name: "EATT")
        let remote = try await devices.connect()
        try await remote.pair()
        #expect(try await remote.openEnhancedBearers(count: 3) == 3)
        #expect(await remote.enhancedBearerCount == 3)
        // The peripheral's application hears of the central's bearers as they open (`ble serve` prints it).
        #expect(await bearersSeen.value == 3)
        let services = try await remote.discoverAll(descriptors: false)
        let characteristics = try #require(services.first { $0.service.uuid == Self.service }).characteristics.map(\.characteristic)
        #expect(characteristics.count == 4)
        let read = try await withThrowingTaskGroup(of: (BluetoothUUID, [UInt8]).self) { group in
            for c in characteristics { group.addTask { (c.uuid, try await remote.readValue(for: c)) } }
            var read: [BluetoothUUID: [UInt8]] = [:]
            for try await (uuid, value) in group { read[uuid] = value }
            return read
        }
        #expect(await application.value == 4)
        for uuid in Self.values { #expect(read[uuid] == Array(uuid.description.prefix(8).utf8)) }
    }
}
