import BLE
import BLEFiles
import BLEHost
import BLEProtocols
import BLETestSupport
import BLETransport
import BLEVirtualController
import Foundation
import Testing

/// ``GATTCapture``: what a btsnoop capture of a client session shows of the server.
@Suite(.timeLimit(.minutes(1))) struct GATTCaptureTests {
    static let service = BluetoothUUID("0000CA00-0000-1000-8000-00805F9B34FB") ?? 0
    static let long = BluetoothUUID("0000CA01-0000-1000-8000-00805F9B34FB") ?? 0
    static let secret = BluetoothUUID("0000CA02-0000-1000-8000-00805F9B34FB") ?? 0
    static let counter = BluetoothUUID("0000CA03-0000-1000-8000-00805F9B34FB") ?? 0
    static let longValue = (0..<300).map { UInt8(truncatingIfNeeded: $0 * 7) }

    /// A session on the virtual air, captured at the central: discovery of everything, a long read, a read the
    /// server refuses, a write, notifications. The capture shows all of it, at the server's handles.
    @Test func aCapturedSessionShowsTheServersDatabaseValuesAndErrors() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let pc = air.addController(.init())
        let manager = try await PeripheralManager(transport: pc.makeHostTransport(), deviceName: "Captured")
        try await manager.add(GATTServiceDefinition(uuid: Self.service, characteristics: [
            GATTCharacteristicDefinition(uuid: Self.long, properties: [.read, .write], permissions: [.readable, .writeable], value: Self.longValue,
                                         userDescription: "long"),
            GATTCharacteristicDefinition(uuid: Self.secret, properties: .read, permissions: [], value: [9]),
            GATTCharacteristicDefinition(uuid: Self.counter, properties: [.read, .notify], value: [0]),
        ]))
        try await manager.startAdvertising(name: "Captured", serviceUUIDs: [Self.service])
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("capture-\(UUID().uuidString).btsnoop").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try BTSnoopWriter(path: path)
        let central = try await Central(transport: SnoopingTransport(air.addController(.init(position: Position(x: 1))).makeHostTransport(), writer: writer))
        // Scan first, as `ble explore` does, so the capture holds the advertisement.
        var seen: DiscoveredPeripheral? = nil
        for try await found in try await central.scan(services: [Self.service], timeout: .seconds(5)) { seen = found; break }
        #expect(seen?.name == "Captured")
        let remote = try await central.connect(LEAddress(pc.address, type: .public), timeout: .seconds(5))
        let tree = try await remote.discoverAll()
        let characteristics = tree.flatMap(\.characteristics)
        let long = try #require(characteristics.first { $0.characteristic.uuid == Self.long }?.characteristic)
        let secret = try #require(characteristics.first { $0.characteristic.uuid == Self.secret }?.characteristic)
        let counter = try #require(characteristics.first { $0.characteristic.uuid == Self.counter }?.characteristic)
        #expect(try await remote.readValue(for: long) == Self.longValue)
        await #expect(throws: GATTError.self) { try await remote.readValue(for: secret) }
        try await remote.writeValue([1, 2], for: long, type: .withResponse)
        let stream = try await remote.notifications(for: counter)
        try await manager.updateValue([7], for: Self.counter)
        try await manager.updateValue([8], for: Self.counter)
        var got: [[UInt8]] = []
        for await value in stream { got.append(value); if got.count == 2 { break } }
        #expect(got == [[7], [8]])
        _ = try await central.disconnect(remote)

        let capture = try GATTCapture(btsnoop: Array(try Data(contentsOf: URL(fileURLWithPath: path))))
        #expect(capture.skipped.isEmpty, "\(capture.skipped)")
        let server = try #require(capture.servers.first)
        #expect(capture.servers.count == 1)
        #expect(server.address.address == pc.address)
        #expect((try? AdvertisingData(bytes: server.advertisingData ?? []))?.localName == "Captured")
        // The database as the server has it: every service and characteristic at its handle.
        let database = await manager.database
        #expect(server.services.map(\.start) == database.services.map(\.start))
        #expect(server.services.map(\.uuid) == database.services.map(\.uuid))
        let declared = database.attributes.filter { $0.type == BluetoothUUID(0x2803) }.map(\.handle)
        #expect(server.characteristics.map(\.declaration) == declared)
        let longHandle = try #require(server.characteristics.first { $0.uuid == Self.long }?.valueHandle)
        #expect(server.values[longHandle] == Self.longValue, "the long read's blobs are put back together")
        let secretHandle = try #require(server.characteristics.first { $0.uuid == Self.secret }?.valueHandle)
        #expect(server.readErrors[secretHandle] == .readNotPermitted)
        #expect(server.acceptedWrites.contains(longHandle))
        let counterHandle = try #require(server.characteristics.first { $0.uuid == Self.counter }?.valueHandle)
        #expect(server.notifications.filter { $0.handle == counterHandle }.map(\.value) == [[7], [8]])
        // Descriptors by Find Information: the user description and the CCCD.
        #expect(server.attributeTypes.values.contains(BluetoothUUID(0x2901)))
        #expect(server.attributeTypes.values.contains(BluetoothUUID(0x2902)))
        #expect(server.mtu != nil)
    }

    /// Fragments put back together, a response without a request, bytes that are not HCI: counted, never a crash.
    @Test func fragmentsAndGarbage() throws {
        func event(_ bytes: [UInt8]) -> BTSnoopRecord { BTSnoopRecord(direction: .received, timestamp: 0, h4Bytes: [0x04] + bytes) }
        func acl(_ direction: BTSnoopDirection, start: Bool, _ data: [UInt8]) -> BTSnoopRecord {
            BTSnoopRecord(direction: direction, timestamp: 10, h4Bytes: [0x02, 0x40, start ? 0x20 : 0x10, UInt8(data.count), 0] + data)
        }
        // LE Connection Complete: handle 0x0040, central, public peer 11:22:33:44:55:66.
        let connected = event([0x3E, 0x13, 0x01, 0x00, 0x40, 0x00, 0x00, 0x00, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
                               0x18, 0x00, 0x00, 0x00, 0x48, 0x00, 0x00])
        // Read Request 0x0003, then a Read Response of 20 octets split across two ACL fragments.
        let request = acl(.sent, start: true, [0x03, 0x00, 0x04, 0x00, 0x0A, 0x03, 0x00])
        let value = (1...20).map { UInt8($0) }
        let response = [UInt8(21), 0x00, 0x04, 0x00, 0x0B] + value
        let records = [
            BTSnoopRecord(direction: .received, timestamp: 0, h4Bytes: [0x09, 0x01]),     // no such packet type
            event([0x3E, 0x02, 0x01]),                                                        // truncated LE meta event
            connected, request,
            acl(.received, start: true, Array(response.prefix(9))),
            acl(.received, start: false, Array(response.dropFirst(9))),
            acl(.received, start: true, [0x01, 0x00, 0x04, 0x00, 0x13]),                  // Write Response, no request
            acl(.received, start: false, [0x01]),                                             // continuation of nothing
            acl(.received, start: true, [0x02, 0x00, 0x04, 0x00, 0x0B]),                  // length says 2, one octet there...
            acl(.received, start: true, [0x02, 0x00, 0x04, 0x00, 0x01, 0x0A]),            // ...then a new PDU: a short Error Response
        ]
        let capture = GATTCapture(records: records)
        let server = try #require(capture.servers.first)
        #expect(server.address == LEAddress(BluetoothAddress(bigEndian: [0x11, 0x22, 0x33, 0x44, 0x55, 0x66]) ?? .zero, type: .public))
        #expect(server.values[AttributeHandle(rawValue: 3)] == value)
        #expect(capture.skipped.map(\.record) == [0, 1, 6, 7, 9, 9])
    }
}
