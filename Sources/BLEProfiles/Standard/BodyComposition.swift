import BLEWire

/// Body Composition Service 1.0 (0x181B): body composition measurements indicated and the features the analyser
/// reports.
public enum BodyCompositionService {
    /// The service UUID (0x181B).
    public static let uuid = BluetoothUUID(0x181B)
    /// Body Composition Feature (0x2A9B), read.
    public static let feature = BluetoothUUID(0x2A9B)
    /// Body Composition Measurement (0x2A9C), indicate.
    public static let measurement = BluetoothUUID(0x2A9C)

    /// The service: feature (read) and measurement (indicate).
    public static func definition(features: BodyCompositionFeature) -> GATTServiceDefinition {
        GATTServiceDefinition(uuid: uuid, characteristics: [
            GATTCharacteristicDefinition(uuid: feature, properties: .read, value: features.encoded),
            GATTCharacteristicDefinition(uuid: measurement, properties: .indicate, permissions: []),
        ])
    }
}

/// Body Composition Service 1.0, 3.2 (Body Composition Measurement, 0x2A9C): 16 flag bits, the body fat percentage
/// (0.1 %) and the optional fields the flags announce, in this order: time stamp, user ID, basal metabolism (kJ),
/// muscle percentage (0.1 %), muscle mass, fat free mass, soft lean mass, body water mass (mass steps of 0.005 kg or
/// 0.01 lb), impedance (0.1 Ω), weight (mass steps) and height (0.001 m or 0.1 in); bit 12 says the measurement
/// continues in another indication. Reserved flag bits 13–15 are ignored. A value of 0xFFFF means "measurement
/// unsuccessful".
public struct BodyCompositionMeasurement: Sendable, Hashable, WireCodable {
    /// SI or imperial (bit 0).
    public var units: MeasurementUnitSystem
    /// Body fat in steps of 0.1 %.
    public var bodyFatPercentage: UInt16
    /// When it was taken (bit 1).
    public var timestamp: DateTime?
    /// The user, 0...254, or 255 for an unknown user (bit 2).
    public var userID: UInt8?
    /// Basal metabolism in kJ (bit 3).
    public var basalMetabolism: UInt16?
    /// Muscle percentage in steps of 0.1 % (bit 4).
    public var musclePercentage: UInt16?
    /// Muscle mass in mass steps (bit 5).
    public var muscleMass: UInt16?
    /// Fat free mass in mass steps (bit 6).
    public var fatFreeMass: UInt16?
    /// Soft lean mass in mass steps (bit 7).
    public var softLeanMass: UInt16?
    /// Body water mass in mass steps (bit 8).
    public var bodyWaterMass: UInt16?
    /// Impedance in steps of 0.1 Ω (bit 9).
    public var impedance: UInt16?
    /// Weight in mass steps (bit 10).
    public var weight: UInt16?
    /// Height in height steps (bit 11).
    public var height: UInt16?
    /// The measurement continues in another indication (bit 12).
    public var isMultiplePacket: Bool

    /// Creates a measurement from raw steps.
    public init(units: MeasurementUnitSystem = .si, bodyFatPercentage: UInt16, timestamp: DateTime? = nil, userID: UInt8? = nil,
                basalMetabolism: UInt16? = nil, musclePercentage: UInt16? = nil, muscleMass: UInt16? = nil, fatFreeMass: UInt16? = nil,
                softLeanMass: UInt16? = nil, bodyWaterMass: UInt16? = nil, impedance: UInt16? = nil, weight: UInt16? = nil,
                height: UInt16? = nil, isMultiplePacket: Bool = false) {
        self.units = units
        self.bodyFatPercentage = bodyFatPercentage
        self.timestamp = timestamp
        self.userID = userID
        self.basalMetabolism = basalMetabolism
        self.musclePercentage = musclePercentage
        self.muscleMass = muscleMass
        self.fatFreeMass = fatFreeMass
        self.softLeanMass = softLeanMass
        self.bodyWaterMass = bodyWaterMass
        self.impedance = impedance
        self.weight = weight
        self.height = height
        self.isMultiplePacket = isMultiplePacket
    }

    /// The body fat in percent.
    public var bodyFat: Double { Double(bodyFatPercentage) / 10 }

    /// The optional UInt16 fields in wire order with their flag bits.
    var optionalFields: [(UInt16, UInt16?)] {
        [(0x0008, basalMetabolism), (0x0010, musclePercentage), (0x0020, muscleMass), (0x0040, fatFreeMass), (0x0080, softLeanMass),
         (0x0100, bodyWaterMass), (0x0200, impedance), (0x0400, weight), (0x0800, height)]
    }

    /// The 16 flag bits this measurement is sent with.
    public var flags: UInt16 {
        var flags: UInt16 = (units == .imperial ? 0x0001 : 0) | (timestamp != nil ? 0x0002 : 0) | (userID != nil ? 0x0004 : 0)
        for (bit, value) in optionalFields where value != nil { flags |= bit }
        return flags | (isMultiplePacket ? 0x1000 : 0)
    }

    /// Decodes the measurement; throws ``WireError`` (truncated) when a field the flags announce is missing.
    public init(from reader: inout ByteReader) throws(WireError) {
        let flags = try reader.readUInt16("Body Composition Measurement flags")
        func field(_ bit: UInt16, _ name: String) throws(WireError) -> UInt16? {
            flags & bit != 0 ? try reader.readUInt16("Body Composition Measurement \(name)") : nil
        }
        units = flags & 0x0001 != 0 ? .imperial : .si
        isMultiplePacket = flags & 0x1000 != 0
        bodyFatPercentage = try reader.readUInt16("Body Composition Measurement body fat percentage")
        timestamp = flags & 0x0002 != 0 ? try DateTime(from: &reader) : nil
        userID = flags & 0x0004 != 0 ? try reader.readUInt8("Body Composition Measurement user ID") : nil
        basalMetabolism = try field(0x0008, "basal metabolism")
        musclePercentage = try field(0x0010, "muscle percentage")
        muscleMass = try field(0x0020, "muscle mass")
        fatFreeMass = try field(0x0040, "fat free mass")
        softLeanMass = try field(0x0080, "soft lean mass")
        bodyWaterMass = try field(0x0100, "body water mass")
        impedance = try field(0x0200, "impedance")
        weight = try field(0x0400, "weight")
        height = try field(0x0800, "height")
    }

    /// Appends the measurement.
    public func encode(into writer: inout ByteWriter) {
        writer.write(flags)
        writer.write(bodyFatPercentage)
        timestamp?.encode(into: &writer)
        if let userID { writer.write(userID) }
        for (_, value) in optionalFields { if let value { writer.write(value) } }
    }
}

/// Body Composition Service 1.0, 3.1 (Body Composition Feature, 0x2A9B): the fields the analyser reports and its mass
/// and height resolutions. Reserved bits are kept as sent.
public struct BodyCompositionFeature: OptionSet, Sendable, Hashable, WireCodable {
    /// The 32 bits.
    public var rawValue: UInt32
    /// Features from their bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Time stamps (bit 0).
    public static let timeStamp = BodyCompositionFeature(rawValue: 1 << 0)
    /// Several users (bit 1).
    public static let multipleUsers = BodyCompositionFeature(rawValue: 1 << 1)
    /// Basal metabolism (bit 2).
    public static let basalMetabolism = BodyCompositionFeature(rawValue: 1 << 2)
    /// Muscle percentage (bit 3).
    public static let musclePercentage = BodyCompositionFeature(rawValue: 1 << 3)
    /// Muscle mass (bit 4).
    public static let muscleMass = BodyCompositionFeature(rawValue: 1 << 4)
    /// Fat free mass (bit 5).
    public static let fatFreeMass = BodyCompositionFeature(rawValue: 1 << 5)
    /// Soft lean mass (bit 6).
    public static let softLeanMass = BodyCompositionFeature(rawValue: 1 << 6)
    /// Body water mass (bit 7).
    public static let bodyWaterMass = BodyCompositionFeature(rawValue: 1 << 7)
    /// Impedance (bit 8).
    public static let impedance = BodyCompositionFeature(rawValue: 1 << 8)
    /// Weight (bit 9).
    public static let weight = BodyCompositionFeature(rawValue: 1 << 9)
    /// Height (bit 10).
    public static let height = BodyCompositionFeature(rawValue: 1 << 10)

    /// The mass resolution index (bits 11–14), as in ``WeightScaleFeature/weightResolution``.
    public var massResolution: UInt8 {
        get { UInt8(truncatingIfNeeded: (rawValue >> 11) & 0xF) }
        set { rawValue = (rawValue & ~(0xF << 11)) | (UInt32(newValue & 0xF) << 11) }
    }
    /// The height resolution index (bits 15–17), as in ``WeightScaleFeature/heightResolution``.
    public var heightResolution: UInt8 {
        get { UInt8(truncatingIfNeeded: (rawValue >> 15) & 0x7) }
        set { rawValue = (rawValue & ~(0x7 << 15)) | (UInt32(newValue & 0x7) << 15) }
    }

    /// Decodes the four bytes.
    public init(from reader: inout ByteReader) throws(WireError) { rawValue = try reader.readUInt32("Body Composition Feature") }
    /// Appends the four bytes.
    public func encode(into writer: inout ByteWriter) { writer.write(rawValue) }
}

/// A Body Composition Service client on a connected peripheral.
public struct BodyCompositionClient: Sendable {
    let service: StandardDiscoveredService

    /// Discovers the Body Composition Service of `peripheral`; throws ``StandardServiceError/serviceNotFound(_:)``
    /// when it has none.
    public init(peripheral: RemotePeripheral) async throws {
        service = try await .discover(BodyCompositionService.uuid, on: peripheral)
    }

    /// Reads the analyser's features.
    public func readFeature() async throws -> BodyCompositionFeature {
        try await service.read(BodyCompositionService.feature, BodyCompositionFeature.standardDecode)
    }

    /// Subscribes to the (indicated) measurements; the stream ends with the error of a malformed one.
    public func measurements() async throws -> AsyncThrowingStream<BodyCompositionMeasurement, any Error> {
        try await service.updates(BodyCompositionService.measurement, BodyCompositionMeasurement.standardDecode)
    }
}

/// A simulated body composition scale (Weight Scale, Body Composition and Device Information services, SI units,
/// user 1, 1.78 m): each third tick someone steps on it and it indicates a weight measurement (with BMI and height)
/// and a body composition measurement. Made with `bodyComposition: false`, it is a plain weight scale (Weight Scale
/// and Device Information only). The weight drifts deterministically around 72.4 kg; its clock advances one
/// hour a tick.
public actor SimulatedWeightScale {
    /// The name it advertises unless told otherwise.
    public static let defaultName = "SwiftBLE Weight"
    /// The name ``SimulatedDevice/bodyComposition`` advertises: the scale with its Body Composition service.
    public static let bodyCompositionName = "SwiftBLE Body"
    /// The weight scale features it publishes (time stamp, several users, BMI, 0.005 kg and 0.001 m resolutions).
    public static let weightFeatures: WeightScaleFeature = {
        var features: WeightScaleFeature = [.timeStamp, .multipleUsers, .bmi]
        features.weightResolution = 7
        features.heightResolution = 3
        return features
    }()
    /// The body composition features it publishes.
    public static let compositionFeatures: BodyCompositionFeature = {
        var features: BodyCompositionFeature = [.timeStamp, .multipleUsers, .musclePercentage, .bodyWaterMass, .weight, .height]
        features.massResolution = 7
        features.heightResolution = 3
        return features
    }()
    /// The peripheral manager it publishes on.
    public let manager: PeripheralManager
    /// The advertised name.
    public let name: String
    /// The device's clock.
    public private(set) var clock = DateTime(year: 2026, month: 1, day: 1, hours: 6)
    /// The weight measurements indicated so far, latest last.
    public private(set) var weighings: [WeightMeasurement] = []
    /// The body composition measurements indicated so far, latest last.
    public private(set) var compositions: [BodyCompositionMeasurement] = []
    var kilograms = 72.4
    var generator: StandardSeededGenerator
    var ticks = 0
    var ticker: Task<Void, Never>?
    /// Whether it publishes the Body Composition service (and indicates body composition measurements).
    public let bodyComposition: Bool

    /// A scale on `manager`; `seed` fixes its variation; `bodyComposition: false` leaves the Body Composition service
    /// out. Call ``start(tick:)``.
    public init(manager: PeripheralManager, name: String = SimulatedWeightScale.defaultName, seed: UInt64 = 1, bodyComposition: Bool = true) async {
        self.manager = manager
        self.name = name
        self.bodyComposition = bodyComposition
        generator = StandardSeededGenerator(seed: seed)
    }

    /// The services it publishes, after the GAP and GATT services.
    var services: [GATTServiceDefinition] {
        [WeightScaleService.definition(features: Self.weightFeatures)]
            + (bodyComposition ? [BodyCompositionService.definition(features: Self.compositionFeatures)] : [])
            + [DeviceInformationService.definition(.simulated(model: bodyComposition ? "SCALE-1" : "SCALE-0"))]
    }

    /// Publishes the services, advertises and weighs every third `tick`.
    public func start(tick: Duration = .seconds(1)) async throws {
        guard ticker == nil else { return }
        try await standardPublish(services, on: manager, name: name)
        ticker = standardTicker(every: tick) { [weak self] in await self?.step() ?? false }
    }

    func step() async -> Bool {
        ticks += 1
        clock = clock.adding(seconds: 3600)
        guard ticks % 3 == 0 else { return true }
        kilograms = min(80, max(65, kilograms + Double(Int(generator.next() % 9) - 4) * 0.05))
        let height = 1.78
        let units = MeasurementUnitSystem.si
        let bmi = kilograms / (height * height)
        let weighing = WeightMeasurement(units: units, weightSteps: units.massSteps(kilograms), timestamp: clock, userID: 1,
                                         bmiAndHeight: .init(bmiSteps: UInt16((bmi * 10).rounded()), heightSteps: units.heightSteps(height)))
        let fat = 180 + Int(generator.next() % 21) - 10
        // Flags, body fat, time stamp, user, muscle %, body water, weight and height: 20 bytes, one indication at
        // the default ATT_MTU.
        let composition = BodyCompositionMeasurement(
            units: units, bodyFatPercentage: UInt16(fat), timestamp: clock, userID: 1, musclePercentage: 420,
            bodyWaterMass: units.massSteps(kilograms * 0.55), weight: units.massSteps(kilograms), height: units.heightSteps(height))
        weighings.append(weighing)
        _ = try? await manager.updateValue(weighing.encoded, for: WeightScaleService.measurement)
        if bodyComposition {
            compositions.append(composition)
            _ = try? await manager.updateValue(composition.encoded, for: BodyCompositionService.measurement)
        }
        return true
    }

    /// Stops weighing, advertising and serving (the services are removed).
    public func stop() async {
        ticker?.cancel()
        ticker = nil
        await standardUnpublish(services.map(\.uuid), on: manager)
    }
}
