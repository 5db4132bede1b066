import BLEWire

/// Battery Service 1.0 (0x180F): the battery level of a device, read and notified.
public enum BatteryService {
    /// The service UUID (0x180F).
    public static let uuid = BluetoothUUID(0x180F)
    /// Battery Level (0x2A19).
    public static let batteryLevel = BluetoothUUID(0x2A19)

    /// The service with a readable, notifying Battery Level holding `level`.
    public static func definition(level: BatteryLevel) -> GATTServiceDefinition {
        GATTServiceDefinition(uuid: uuid, characteristics: [
            GATTCharacteristicDefinition(uuid: batteryLevel, properties: [.read, .notify], value: level.encoded),
        ])
    }
}

/// GATT Specification Supplement (Battery Level, 0x2A19): the charge left, 0...100 %, one byte.
public struct BatteryLevel: Sendable, Hashable, Comparable, WireCodable, CustomStringConvertible {
    /// The percentage, 0...100.
    public let percent: UInt8

    /// A level, or `nil` above 100 %.
    public init?(percent: UInt8) {
        guard percent <= 100 else { return nil }
        self.percent = percent
    }

    /// Decodes the byte; throws ``WireError`` (invalid value) above 100 (values 101...255 are prohibited).
    public init(from reader: inout ByteReader) throws(WireError) {
        let value = try reader.readUInt8("Battery Level")
        guard value <= 100 else { throw WireError(.invalidValue, "Battery Level \(value) is above 100 %") }
        percent = value
    }

    /// Appends the byte.
    public func encode(into writer: inout ByteWriter) { writer.write(percent) }

    /// Orders levels by percentage.
    public static func < (lhs: BatteryLevel, rhs: BatteryLevel) -> Bool { lhs.percent < rhs.percent }
    /// The level as `42 %`.
    public var description: String { "\(percent) %" }
}

/// A Battery Service client on a connected peripheral.
public struct BatteryServiceClient: Sendable {
    let service: StandardDiscoveredService

    /// Discovers the Battery Service of `peripheral`; throws ``StandardServiceError/serviceNotFound(_:)`` when it has
    /// none.
    public init(peripheral: RemotePeripheral) async throws {
        service = try await .discover(BatteryService.uuid, on: peripheral)
    }

    /// Reads the battery level.
    public func readLevel() async throws -> BatteryLevel {
        try await service.read(BatteryService.batteryLevel, BatteryLevel.standardDecode)
    }

    /// Subscribes to the battery level: each notified level (the stream ends with the error of a malformed one).
    public func levels() async throws -> AsyncThrowingStream<BatteryLevel, any Error> {
        try await service.updates(BatteryService.batteryLevel, BatteryLevel.standardDecode)
    }
}

/// A simulated battery-powered device (Battery Service and Device Information Service) whose level drains by one
/// percent a tick, down to a floor, and is then recharged to 100 %. Each change is notified.
public actor SimulatedBattery {
    /// The name it advertises unless told otherwise.
    public static let defaultName = "SwiftBLE Battery"
    /// The peripheral manager it publishes on.
    public let manager: PeripheralManager
    /// The advertised name.
    public let name: String
    /// What its Device Information Service says.
    public let information: DeviceInformation
    /// The level now.
    public private(set) var level: BatteryLevel
    /// The lowest level before it recharges.
    public let floor: UInt8
    var ticker: Task<Void, Never>?

    /// A device on `manager` starting at `level` percent that recharges when it reaches `floor` percent. Call
    /// ``start(tick:)``.
    public init(manager: PeripheralManager, name: String = SimulatedBattery.defaultName, level: UInt8 = 100, floor: UInt8 = 5,
                information: DeviceInformation = .simulated(model: "Battery-1")) async {
        self.manager = manager
        self.name = name
        self.level = BatteryLevel(clamping: level)
        self.floor = min(floor, 99)
        self.information = information
    }

    /// Publishes the services, advertises and drains one percent every `tick`.
    public func start(tick: Duration = .seconds(1)) async throws {
        guard ticker == nil else { return }
        try await standardPublish([BatteryService.definition(level: level), DeviceInformationService.definition(information)],
                                  on: manager, name: name)
        ticker = standardTicker(every: tick) { [weak self] in await self?.step() ?? false }
    }

    /// Moves the level one tick on and notifies it; returns whether to go on.
    func step() async -> Bool {
        let next = level.percent <= floor ? 100 : level.percent - 1
        level = BatteryLevel(clamping: next)
        _ = try? await manager.updateValue(level.encoded, for: BatteryService.batteryLevel)
        return true
    }

    /// Stops draining, advertising and serving (the services are removed).
    public func stop() async {
        ticker?.cancel()
        ticker = nil
        await standardUnpublish([BatteryService.uuid, DeviceInformationService.uuid], on: manager)
    }
}

extension BatteryLevel {
    /// A level already known to be 0...100 (clamped).
    init(clamping percent: UInt8) { self.percent = min(percent, 100) }
}
