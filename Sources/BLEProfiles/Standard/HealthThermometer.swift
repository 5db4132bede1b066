import BLEWire

/// Health Thermometer Service 1.0 (0x1809): temperature measurements indicated, intermediate temperatures notified,
/// and where the temperature is taken.
public enum HealthThermometerService {
    /// The service UUID (0x1809).
    public static let uuid = BluetoothUUID(0x1809)
    /// Temperature Measurement (0x2A1C), indicate.
    public static let temperatureMeasurement = BluetoothUUID(0x2A1C)
    /// Temperature Type (0x2A1D), read.
    public static let temperatureType = BluetoothUUID(0x2A1D)
    /// Intermediate Temperature (0x2A1E), notify.
    public static let intermediateTemperature = BluetoothUUID(0x2A1E)

    /// Measurement Interval (0x2A21), read and write: seconds between periodic measurements, 0 for none.
    public static let measurementInterval = BluetoothUUID(0x2A21)
    /// Valid Range descriptor (0x2906) of the measurement interval: the lowest and highest values a write may set.
    public static let validRange = BluetoothUUID(0x2906)

    /// The service: measurement (indicate), temperature type (read) and intermediate temperature (notify); with
    /// `intervalRange`, a measurement interval (read, write) answered by the application, with a Valid Range
    /// descriptor.
    public static func definition(type: TemperatureType, intervalRange: ClosedRange<UInt16>? = nil) -> GATTServiceDefinition {
        var characteristics = [
            GATTCharacteristicDefinition(uuid: temperatureMeasurement, properties: .indicate, permissions: []),
            GATTCharacteristicDefinition(uuid: temperatureType, properties: .read, value: [type.rawValue]),
            GATTCharacteristicDefinition(uuid: intermediateTemperature, properties: .notify, permissions: []),
        ]
        if let intervalRange {
            var range = ByteWriter()
            range.write(intervalRange.lowerBound)
            range.write(intervalRange.upperBound)
            characteristics.append(GATTCharacteristicDefinition(
                uuid: measurementInterval, properties: [.read, .write], permissions: [.readable, .writeable],
                descriptors: [GATTDescriptorDefinition(uuid: validRange, value: range.bytes)], source: .application))
        }
        return GATTServiceDefinition(uuid: uuid, characteristics: characteristics)
    }
}

/// Health Thermometer Service 1.0, 3.1 (Temperature Measurement, 0x2A1C; Intermediate Temperature, 0x2A1E has the
/// same layout): flags, the temperature (FLOAT) in °C or °F, optionally a time stamp and the temperature type.
/// Reserved flag bits 3–7 are ignored.
public struct TemperatureMeasurement: Sendable, Hashable, WireCodable {
    /// The unit of the temperature (flag bit 0).
    public enum Unit: Sendable, Hashable {
        /// Degrees Celsius.
        case celsius
        /// Degrees Fahrenheit.
        case fahrenheit
    }
    /// The temperature.
    public var temperature: MedFloat
    /// Its unit.
    public var unit: Unit
    /// When it was taken (flag bit 1).
    public var timestamp: DateTime?
    /// Where it was taken (flag bit 2).
    public var temperatureType: TemperatureType?

    /// Creates a measurement.
    public init(temperature: MedFloat, unit: Unit = .celsius, timestamp: DateTime? = nil, temperatureType: TemperatureType? = nil) {
        self.temperature = temperature
        self.unit = unit
        self.timestamp = timestamp
        self.temperatureType = temperatureType
    }

    /// The temperature in degrees Celsius (converted from °F when sent so).
    public var celsius: Double {
        unit == .celsius ? temperature.doubleValue : (temperature.doubleValue - 32) * 5 / 9
    }

    /// The flags byte this measurement is sent with.
    public var flags: UInt8 {
        (unit == .fahrenheit ? 0x01 : 0) | (timestamp != nil ? 0x02 : 0) | (temperatureType != nil ? 0x04 : 0)
    }

    /// Decodes the measurement; throws ``WireError`` (truncated) when a field the flags announce is missing.
    public init(from reader: inout ByteReader) throws(WireError) {
        let flags = try reader.readUInt8("Temperature Measurement flags")
        temperature = try MedFloat(from: &reader)
        unit = flags & 0x01 != 0 ? .fahrenheit : .celsius
        timestamp = flags & 0x02 != 0 ? try DateTime(from: &reader) : nil
        temperatureType = flags & 0x04 != 0 ? try TemperatureType(from: &reader) : nil
    }

    /// Appends the measurement.
    public func encode(into writer: inout ByteWriter) {
        writer.write(flags)
        temperature.encode(into: &writer)
        timestamp?.encode(into: &writer)
        temperatureType?.encode(into: &writer)
    }
}

/// GATT Specification Supplement (Temperature Type, 0x2A1D): where a temperature is taken. Values 0 and 10...255 are
/// reserved and kept as sent.
public struct TemperatureType: RawRepresentable, Sendable, Hashable, WireCodable {
    /// The byte.
    public var rawValue: UInt8
    /// A type from its byte.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Armpit (1).
    public static let armpit = TemperatureType(rawValue: 1)
    /// Body, general (2).
    public static let body = TemperatureType(rawValue: 2)
    /// Ear, usually the ear lobe (3).
    public static let ear = TemperatureType(rawValue: 3)
    /// Finger (4).
    public static let finger = TemperatureType(rawValue: 4)
    /// Gastro-intestinal tract (5).
    public static let gastrointestinalTract = TemperatureType(rawValue: 5)
    /// Mouth (6).
    public static let mouth = TemperatureType(rawValue: 6)
    /// Rectum (7).
    public static let rectum = TemperatureType(rawValue: 7)
    /// Toe (8).
    public static let toe = TemperatureType(rawValue: 8)
    /// Tympanum, the ear drum (9).
    public static let tympanum = TemperatureType(rawValue: 9)

    /// Decodes the byte.
    public init(from reader: inout ByteReader) throws(WireError) { rawValue = try reader.readUInt8("Temperature Type") }
    /// Appends the byte.
    public func encode(into writer: inout ByteWriter) { writer.write(rawValue) }
}

/// A Health Thermometer Service client on a connected peripheral.
public struct HealthThermometerClient: Sendable {
    let service: StandardDiscoveredService

    /// Discovers the Health Thermometer Service of `peripheral`; throws
    /// ``StandardServiceError/serviceNotFound(_:)`` when it has none.
    public init(peripheral: RemotePeripheral) async throws {
        service = try await .discover(HealthThermometerService.uuid, on: peripheral)
    }

    /// Subscribes to the (indicated) measurements; the stream ends with the error of a malformed one.
    public func measurements() async throws -> AsyncThrowingStream<TemperatureMeasurement, any Error> {
        try await service.updates(HealthThermometerService.temperatureMeasurement, TemperatureMeasurement.standardDecode)
    }

    /// Subscribes to the intermediate temperatures (notified while a measurement is being taken).
    public func intermediateTemperatures() async throws -> AsyncThrowingStream<TemperatureMeasurement, any Error> {
        try await service.updates(HealthThermometerService.intermediateTemperature, TemperatureMeasurement.standardDecode)
    }

    /// Reads where the temperature is taken.
    public func readTemperatureType() async throws -> TemperatureType {
        try await service.read(HealthThermometerService.temperatureType, TemperatureType.standardDecode)
    }

    /// Reads the seconds between periodic measurements (0: none).
    public func readMeasurementInterval() async throws -> UInt16 {
        try await service.read(HealthThermometerService.measurementInterval) { bytes throws(WireError) in
            var reader = ByteReader(bytes)
            let seconds = try reader.readUInt16("Measurement Interval")
            try reader.expectEnd("Measurement Interval")
            return seconds
        }
    }

    /// Sets the seconds between periodic measurements (0: none); a value outside the thermometer's valid range is
    /// refused with ATT error 0xFF (Out of Range), thrown as a `GATTError`.
    public func setMeasurementInterval(_ seconds: UInt16) async throws {
        try await service.write([UInt8(truncatingIfNeeded: seconds), UInt8(truncatingIfNeeded: seconds >> 8)],
                                to: HealthThermometerService.measurementInterval)
    }
}

/// A simulated ear thermometer (Health Thermometer and Device Information services): every tick it notifies an
/// intermediate temperature and, each third tick, indicates a final measurement (°C, time stamped, type tympanum)
/// around 36.8 °C, varied deterministically. Its measurement interval (60 s at first, writable within
/// ``intervalRange``, refused with Out of Range beyond) spans three ticks: the clock advances a third of it a tick.
public actor SimulatedThermometer {
    /// The name it advertises unless told otherwise.
    public static let defaultName = "SwiftBLE Thermometer"
    /// The peripheral manager it publishes on.
    public let manager: PeripheralManager
    /// The advertised name.
    public let name: String
    /// The device's clock.
    public private(set) var clock = DateTime(year: 2026, month: 1, day: 1, hours: 8)
    /// The final measurements indicated so far, latest last.
    public private(set) var measurements: [TemperatureMeasurement] = []
    /// The seconds between final measurements (0: no periodic measurements, only intermediate temperatures).
    public private(set) var measurementInterval: UInt16 = 60
    /// The measurement intervals a client may set.
    public static let intervalRange: ClosedRange<UInt16> = 3...3600
    var generator: StandardSeededGenerator
    var ticks = 0
    var ticker: Task<Void, Never>?
    var listener: Task<Void, Never>?

    /// A thermometer on `manager`; `seed` fixes its variation. Call ``start(tick:)``.
    public init(manager: PeripheralManager, name: String = SimulatedThermometer.defaultName, seed: UInt64 = 1) async {
        self.manager = manager
        self.name = name
        generator = StandardSeededGenerator(seed: seed)
    }

    /// Publishes the services, advertises and measures every `tick`.
    public func start(tick: Duration = .seconds(1)) async throws {
        guard ticker == nil else { return }
        let requests = await manager.requests()
        try await standardPublish([HealthThermometerService.definition(type: .tympanum, intervalRange: Self.intervalRange),
                                   DeviceInformationService.definition(.simulated(model: "THERMO-1"))], on: manager, name: name)
        listener = Task { [weak self] in
            for await request in requests { if case .application(let asked) = request.kind { await self?.answer(asked) } }
        }
        ticker = standardTicker(every: tick) { [weak self] in await self?.step() ?? false }
    }

    /// The measurement interval: read, or written within ``intervalRange``.
    func answer(_ request: AttributeRequest) async {
        guard request.characteristic == HealthThermometerService.measurementInterval else { return await request.refuse(.requestNotSupported) }
        switch request.kind {
        case .read(let offset):
            let value = [UInt8(truncatingIfNeeded: measurementInterval), UInt8(truncatingIfNeeded: measurementInterval >> 8)]
            guard offset <= value.count else { return await request.refuse(.invalidOffset) }
            await request.respond(with: Array(value[offset...]))
        case .write(let value, _):
            guard value.count == 2 else { return await request.refuse(.invalidAttributeValueLength) }
            let seconds = UInt16(value[0]) | UInt16(value[1]) << 8
            guard seconds == 0 || Self.intervalRange.contains(seconds) else { return await request.refuse(.outOfRange) }
            measurementInterval = seconds
            await request.accept()
        case .preparedWrites:
            await request.refuse(.requestNotSupported)
        }
    }

    func step() async -> Bool {
        ticks += 1
        clock = clock.adding(seconds: Int(max(measurementInterval, 3) / 3))
        let final = 36.8 + Double(Int(generator.next() % 9) - 4) / 10
        if ticks % 3 == 0, measurementInterval != 0 {
            let measurement = TemperatureMeasurement(temperature: MedFloat(final, fractionDigits: 2), timestamp: clock, temperatureType: .tympanum)
            measurements.append(measurement)
            _ = try? await manager.updateValue(measurement.encoded, for: HealthThermometerService.temperatureMeasurement)
        } else {
            let rising = TemperatureMeasurement(temperature: MedFloat(final - Double(3 - ticks % 3) * 0.4, fractionDigits: 1))
            _ = try? await manager.updateValue(rising.encoded, for: HealthThermometerService.intermediateTemperature)
        }
        return true
    }

    /// Stops measuring, advertising and serving (the services are removed).
    public func stop() async {
        ticker?.cancel()
        ticker = nil
        listener?.cancel()
        listener = nil
        await standardUnpublish([HealthThermometerService.uuid, DeviceInformationService.uuid], on: manager)
    }
}
