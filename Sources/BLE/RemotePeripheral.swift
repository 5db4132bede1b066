/// How a value is written. Like CoreBluetooth's `CBCharacteristicWriteType`.
public enum WriteType: Sendable, Hashable {
    /// Write Request (or prepared writes for long values), acknowledged by the peripheral.
    case withResponse
    /// Write Command: unacknowledged, at most ``RemotePeripheral/maximumWriteValueLength(for:)`` bytes.
    case withoutResponse
}

/// A connected peripheral, seen from the central: GATT discovery, reads, writes, notifications. Like CoreBluetooth's
/// `CBPeripheral`, with async calls.
public final class RemotePeripheral: Sendable, Identifiable {
    public let central: Central
    let engine: GATTEngine
    /// The link.
    public let connection: HostConnection
    /// The name it advertised, when known.
    public let name: String?

    init(central: Central, engine: GATTEngine, connection: HostConnection, name: String?) {
        self.central = central
        self.engine = engine
        self.connection = connection
        self.name = name
    }

    /// The peripheral's address.
    public var id: LEAddress { connection.peer }

    /// Exchanges MTUs (asking for 247); returns the effective ATT_MTU.
    @discardableResult
    public func exchangeMTU() async throws -> Int { try await engine.exchangeMTU(connection.handle) }

    /// The effective ATT_MTU.
    public var mtu: Int { get async { await engine.mtu(connection.handle) } }

    /// The longest value one write of `type` carries (ATT_MTU − 3). Longer `.withResponse` writes use prepared writes.
    public func maximumWriteValueLength(for type: WriteType) async -> Int {
        await engine.maximumWriteValueLength(connection.handle, withResponse: type == .withResponse)
    }

    /// Whether a write without response can go out now without queueing behind full controller buffers (like
    /// `canSendWriteWithoutResponse`).
    public var canSendWriteWithoutResponse: Bool { get async { await central.host.isReadyToSend(connection.handle) } }

    /// Discovers primary services (all, or those in `uuids`).
    public func discoverServices(_ uuids: [BluetoothUUID]? = nil) async throws -> [GATTService] {
        guard let uuids else { return try await engine.discoverPrimaryServices(connection.handle) }
        var found: [GATTService] = []
        for uuid in uuids { found += try await engine.discoverPrimaryServices(connection.handle, uuid: uuid) }
        return found.sorted { $0.startHandle < $1.startHandle }
    }

    /// Discovers the characteristics of a service (all, or those in `uuids`).
    public func discoverCharacteristics(_ uuids: [BluetoothUUID]? = nil, for service: GATTService) async throws -> [GATTCharacteristic] {
        let all = try await engine.discoverCharacteristics(connection.handle, of: service)
        guard let uuids else { return all }
        return all.filter { uuids.contains($0.uuid) }
    }

    /// Discovers a characteristic's descriptors.
    public func discoverDescriptors(for characteristic: GATTCharacteristic) async throws -> [GATTDescriptor] {
        try await engine.discoverDescriptors(connection.handle, of: characteristic)
    }

    /// Reads a characteristic's value (a long value whole).
    public func readValue(for characteristic: GATTCharacteristic) async throws -> [UInt8] {
        try await engine.read(connection.handle, attribute: characteristic.valueHandle)
    }

    /// Reads a descriptor's value.
    public func readValue(for descriptor: GATTDescriptor) async throws -> [UInt8] {
        try await engine.read(connection.handle, attribute: descriptor.handle)
    }

    /// Writes a characteristic's value.
    public func writeValue(_ value: [UInt8], for characteristic: GATTCharacteristic, type: WriteType) async throws {
        switch type {
        case .withResponse: try await engine.write(connection.handle, attribute: characteristic.valueHandle, value: value)
        case .withoutResponse: try await engine.writeWithoutResponse(connection.handle, attribute: characteristic.valueHandle, value: value)
        }
    }

    /// Subscribes to a characteristic (notifications, or indications when it only indicates) and returns its values.
    public func notifications(for characteristic: GATTCharacteristic) async throws -> AsyncStream<[UInt8]> {
        let descriptors = try await discoverDescriptors(for: characteristic)
        guard let cccd = descriptors.first(where: { $0.uuid == .clientCharacteristicConfiguration }) else {
            throw GATTError(.att(.requestNotSupported, handle: characteristic.valueHandle), "\(characteristic.uuid) cannot notify")
        }
        let indications = !characteristic.properties.contains(.notify) && characteristic.properties.contains(.indicate)
        return try await engine.subscribe(connection.handle, valueHandle: characteristic.valueHandle, cccdHandle: cccd.handle,
                                          indications: indications)
    }

    /// Stops notifications of a characteristic.
    public func stopNotifications(for characteristic: GATTCharacteristic) async throws {
        let descriptors = try await discoverDescriptors(for: characteristic)
        guard let cccd = descriptors.first(where: { $0.uuid == .clientCharacteristicConfiguration }) else { return }
        try await engine.unsubscribe(connection.handle, valueHandle: characteristic.valueHandle, cccdHandle: cccd.handle)
    }

    /// The link's RSSI in dBm (HCI Read RSSI).
    public func readRSSI() async throws -> Int8 {
        try await central.host.send(HCIReadRSSI(handle: connection.handle)).rssi
    }
}
