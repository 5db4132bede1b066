import BLEWire

/// Blood Pressure Service 1.0 (0x1810): blood pressure measurements indicated, the cuff pressure notified while
/// measuring, and the features the monitor supports.
public enum BloodPressureService {
    /// The service UUID (0x1810).
    public static let uuid = BluetoothUUID(0x1810)
    /// Blood Pressure Measurement (0x2A35), indicate.
    public static let measurement = BluetoothUUID(0x2A35)
    /// Intermediate Cuff Pressure (0x2A36), notify.
    public static let intermediateCuffPressure = BluetoothUUID(0x2A36)
    /// Blood Pressure Feature (0x2A49), read.
    public static let feature = BluetoothUUID(0x2A49)

    /// The service: measurement (indicate), intermediate cuff pressure (notify) and feature (read).
    public static func definition(features: BloodPressureFeature) -> GATTServiceDefinition {
        GATTServiceDefinition(uuid: uuid, characteristics: [
            GATTCharacteristicDefinition(uuid: measurement, properties: .indicate, permissions: []),
            GATTCharacteristicDefinition(uuid: intermediateCuffPressure, properties: .notify, permissions: []),
            GATTCharacteristicDefinition(uuid: feature, properties: .read, value: features.encoded),
        ])
    }
}

/// Blood Pressure Service 1.0, 3.1 (Blood Pressure Measurement, 0x2A35; Intermediate Cuff Pressure, 0x2A36 has the
/// same layout, with the current cuff pressure as systolic and NaN diastolic and mean pressures): flags, systolic,
/// diastolic and mean arterial pressures (SFLOAT, mmHg or kPa), optionally a time stamp, the pulse rate (SFLOAT,
/// beats per minute), a user ID and the measurement status. Reserved flag bits 5–7 are ignored.
public struct BloodPressureMeasurement: Sendable, Hashable, WireCodable {
    /// The unit of the pressures (flag bit 0).
    public enum Unit: Sendable, Hashable {
        /// Millimetres of mercury.
        case mmHg
        /// Kilopascals.
        case kPa
    }
    /// Systolic pressure (the current cuff pressure in an intermediate cuff pressure).
    public var systolic: SFloat
    /// Diastolic pressure (NaN in an intermediate cuff pressure).
    public var diastolic: SFloat
    /// Mean arterial pressure (NaN in an intermediate cuff pressure).
    public var meanArterialPressure: SFloat
    /// The unit of the three pressures.
    public var unit: Unit
    /// When it was taken (flag bit 1).
    public var timestamp: DateTime?
    /// Pulse rate in beats per minute (flag bit 2).
    public var pulseRate: SFloat?
    /// The user it belongs to, 0...254, or 255 for an unknown user (flag bit 3).
    public var userID: UInt8?
    /// What the monitor detected while measuring (flag bit 4).
    public var status: BloodPressureMeasurementStatus?

    /// Creates a measurement.
    public init(systolic: SFloat, diastolic: SFloat, meanArterialPressure: SFloat, unit: Unit = .mmHg, timestamp: DateTime? = nil,
                pulseRate: SFloat? = nil, userID: UInt8? = nil, status: BloodPressureMeasurementStatus? = nil) {
        self.systolic = systolic
        self.diastolic = diastolic
        self.meanArterialPressure = meanArterialPressure
        self.unit = unit
        self.timestamp = timestamp
        self.pulseRate = pulseRate
        self.userID = userID
        self.status = status
    }

    /// An intermediate cuff pressure: the current pressure, diastolic and mean pressures NaN.
    public static func cuffPressure(_ pressure: SFloat, unit: Unit = .mmHg, timestamp: DateTime? = nil) -> BloodPressureMeasurement {
        BloodPressureMeasurement(systolic: pressure, diastolic: .nan, meanArterialPressure: .nan, unit: unit, timestamp: timestamp)
    }

    /// The flags byte this measurement is sent with.
    public var flags: UInt8 {
        (unit == .kPa ? 0x01 : 0) | (timestamp != nil ? 0x02 : 0) | (pulseRate != nil ? 0x04 : 0) | (userID != nil ? 0x08 : 0)
            | (status != nil ? 0x10 : 0)
    }

    /// Decodes the measurement; throws ``WireError`` (truncated) when a field the flags announce is missing.
    public init(from reader: inout ByteReader) throws(WireError) {
        let flags = try reader.readUInt8("Blood Pressure Measurement flags")
        unit = flags & 0x01 != 0 ? .kPa : .mmHg
        systolic = try SFloat(from: &reader)
        diastolic = try SFloat(from: &reader)
        meanArterialPressure = try SFloat(from: &reader)
        timestamp = flags & 0x02 != 0 ? try DateTime(from: &reader) : nil
        pulseRate = flags & 0x04 != 0 ? try SFloat(from: &reader) : nil
        userID = flags & 0x08 != 0 ? try reader.readUInt8("Blood Pressure Measurement user ID") : nil
        status = flags & 0x10 != 0 ? BloodPressureMeasurementStatus(rawValue: try reader.readUInt16("Blood Pressure Measurement status")) : nil
    }

    /// Appends the measurement.
    public func encode(into writer: inout ByteWriter) {
        writer.write(flags)
        systolic.encode(into: &writer)
        diastolic.encode(into: &writer)
        meanArterialPressure.encode(into: &writer)
        timestamp?.encode(into: &writer)
        pulseRate?.encode(into: &writer)
        if let userID { writer.write(userID) }
        if let status { writer.write(status.rawValue) }
    }
}

/// Blood Pressure Service 1.0, 3.1 (the Measurement Status field): what the monitor detected. Reserved bits 6–15 are kept
/// as sent.
public struct BloodPressureMeasurementStatus: OptionSet, Sendable, Hashable {
    /// The 16 bits.
    public var rawValue: UInt16
    /// A status from its bits.
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// Body movement during measurement (bit 0).
    public static let bodyMovement = BloodPressureMeasurementStatus(rawValue: 0x0001)
    /// The cuff fits too loosely (bit 1).
    public static let cuffTooLoose = BloodPressureMeasurementStatus(rawValue: 0x0002)
    /// Irregular pulse detected (bit 2).
    public static let irregularPulse = BloodPressureMeasurementStatus(rawValue: 0x0004)
    /// Improper measurement position (bit 5).
    public static let improperPosition = BloodPressureMeasurementStatus(rawValue: 0x0020)

    /// Where the pulse rate is (bits 3–4).
    public enum PulseRateRange: UInt16, Sendable, Hashable {
        /// Within range (0).
        case withinRange = 0
        /// Exceeds the upper limit (1).
        case exceedsUpperLimit = 1
        /// Below the lower limit (2).
        case belowLowerLimit = 2
        /// Reserved (3).
        case reserved = 3
    }

    /// Where the pulse rate is (bits 3–4).
    public var pulseRateRange: PulseRateRange {
        get { PulseRateRange(rawValue: (rawValue >> 3) & 0x3) ?? .reserved }
        set { rawValue = (rawValue & ~0x0018) | (newValue.rawValue << 3) }
    }
}

/// Blood Pressure Service 1.0, 3.3 (Blood Pressure Feature, 0x2A49): what the monitor can detect. Reserved bits are
/// kept as sent.
public struct BloodPressureFeature: OptionSet, Sendable, Hashable, WireCodable {
    /// The 16 bits.
    public var rawValue: UInt16
    /// Features from their bits.
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// Body movement detection (bit 0).
    public static let bodyMovementDetection = BloodPressureFeature(rawValue: 0x0001)
    /// Cuff fit detection (bit 1).
    public static let cuffFitDetection = BloodPressureFeature(rawValue: 0x0002)
    /// Irregular pulse detection (bit 2).
    public static let irregularPulseDetection = BloodPressureFeature(rawValue: 0x0004)
    /// Pulse rate range detection (bit 3).
    public static let pulseRateRangeDetection = BloodPressureFeature(rawValue: 0x0008)
    /// Measurement position detection (bit 4).
    public static let measurementPositionDetection = BloodPressureFeature(rawValue: 0x0010)
    /// Several bonds supported (bit 5).
    public static let multipleBonds = BloodPressureFeature(rawValue: 0x0020)

    /// Decodes the two bytes.
    public init(from reader: inout ByteReader) throws(WireError) { rawValue = try reader.readUInt16("Blood Pressure Feature") }
    /// Appends the two bytes.
    public func encode(into writer: inout ByteWriter) { writer.write(rawValue) }
}

/// A Blood Pressure Service client on a connected peripheral.
public struct BloodPressureClient: Sendable {
    let service: StandardDiscoveredService

    /// Discovers the Blood Pressure Service of `peripheral`; throws ``StandardServiceError/serviceNotFound(_:)`` when
    /// it has none.
    public init(peripheral: RemotePeripheral) async throws {
        service = try await .discover(BloodPressureService.uuid, on: peripheral)
    }

    /// Subscribes to the (indicated) measurements; the stream ends with the error of a malformed one.
    public func measurements() async throws -> AsyncThrowingStream<BloodPressureMeasurement, any Error> {
        try await service.updates(BloodPressureService.measurement, BloodPressureMeasurement.standardDecode)
    }

    /// Subscribes to the cuff pressure notified while measuring.
    public func intermediateCuffPressures() async throws -> AsyncThrowingStream<BloodPressureMeasurement, any Error> {
        try await service.updates(BloodPressureService.intermediateCuffPressure, BloodPressureMeasurement.standardDecode)
    }

    /// Reads the supported features.
    public func readFeature() async throws -> BloodPressureFeature {
        try await service.read(BloodPressureService.feature, BloodPressureFeature.standardDecode)
    }
}

/// A simulated upper-arm monitor (Blood Pressure and Device Information services): a measurement takes four ticks,
/// three notifying the cuff pressure as it deflates and a fourth indicating the result (mmHg, time stamped, pulse
/// rate, user 1, status), systolic around 120 and diastolic around 80, varied deterministically. Its clock advances
/// one minute a tick.
public actor SimulatedBloodPressureMonitor {
    /// The name it advertises unless told otherwise.
    public static let defaultName = "SwiftBLE BPM"
    /// The features it publishes.
    public static let features: BloodPressureFeature = [.bodyMovementDetection, .cuffFitDetection, .irregularPulseDetection,
                                                        .pulseRateRangeDetection]
    /// The peripheral manager it publishes on.
    public let manager: PeripheralManager
    /// The advertised name.
    public let name: String
    /// The device's clock.
    public private(set) var clock = DateTime(year: 2026, month: 1, day: 1, hours: 7, minutes: 30)
    /// The results indicated so far, latest last.
    public private(set) var measurements: [BloodPressureMeasurement] = []
    var generator: StandardSeededGenerator
    var ticks = 0
    var ticker: Task<Void, Never>?

    /// A monitor on `manager`; `seed` fixes its variation. Call ``start(tick:)``.
    public init(manager: PeripheralManager, name: String = SimulatedBloodPressureMonitor.defaultName, seed: UInt64 = 1) async {
        self.manager = manager
        self.name = name
        generator = StandardSeededGenerator(seed: seed)
    }

    /// Publishes the services, advertises and measures, one step every `tick`.
    public func start(tick: Duration = .seconds(1)) async throws {
        guard ticker == nil else { return }
        try await standardPublish([BloodPressureService.definition(features: Self.features), DeviceInformationService.definition(.simulated(model: "BPM-1"))],
                                  on: manager, name: name)
        ticker = standardTicker(every: tick) { [weak self] in await self?.step() ?? false }
    }

    func step() async -> Bool {
        ticks += 1
        clock = clock.adding(seconds: 60)
        let phase = ticks % 4
        if phase != 0 {
            let cuff = BloodPressureMeasurement.cuffPressure(SFloat(Double(190 - 40 * phase), fractionDigits: 0))
            _ = try? await manager.updateValue(cuff.encoded, for: BloodPressureService.intermediateCuffPressure)
            return true
        }
        let systolic = 120 + Double(Int(generator.next() % 17) - 8)
        let diastolic = 80 + Double(Int(generator.next() % 11) - 5)
        let pulse = 68 + Double(Int(generator.next() % 13) - 6)
        var status: BloodPressureMeasurementStatus = generator.next() % 5 == 0 ? .bodyMovement : []
        status.pulseRateRange = .withinRange
        let result = BloodPressureMeasurement(
            systolic: SFloat(systolic, fractionDigits: 0), diastolic: SFloat(diastolic, fractionDigits: 0),
            meanArterialPressure: SFloat(diastolic + (systolic - diastolic) / 3, fractionDigits: 1), timestamp: clock,
            pulseRate: SFloat(pulse, fractionDigits: 0), userID: 1, status: status)
        measurements.append(result)
        _ = try? await manager.updateValue(result.encoded, for: BloodPressureService.measurement)
        return true
    }

    /// Stops measuring, advertising and serving (the services are removed).
    public func stop() async {
        ticker?.cancel()
        ticker = nil
        await standardUnpublish([BloodPressureService.uuid, DeviceInformationService.uuid], on: manager)
    }
}
