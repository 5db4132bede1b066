import BLEWire

/// Weight Scale Service 1.0 (0x181D): weight measurements indicated and the scale's features.
public enum WeightScaleService {
    /// The service UUID (0x181D).
    public static let uuid = BluetoothUUID(0x181D)
    /// Weight Scale Feature (0x2A9E), read.
    public static let feature = BluetoothUUID(0x2A9E)
    /// Weight Measurement (0x2A9D), indicate.
    public static let measurement = BluetoothUUID(0x2A9D)

    /// The service: feature (read) and measurement (indicate).
    public static func definition(features: WeightScaleFeature) -> GATTServiceDefinition {
        GATTServiceDefinition(uuid: uuid, characteristics: [
            GATTCharacteristicDefinition(uuid: feature, properties: .read, value: features.encoded),
            GATTCharacteristicDefinition(uuid: measurement, properties: .indicate, permissions: []),
        ])
    }
}

/// The unit system of a weight or body composition measurement (flag bit 0).
public enum MeasurementUnitSystem: Sendable, Hashable {
    /// Kilograms (0.005 kg steps) and metres (0.001 m steps).
    case si
    /// Pounds (0.01 lb steps) and inches (0.1 in steps).
    case imperial

    /// The size of one step of a mass field: 0.005 kg or 0.01 lb.
    public var massResolution: Double { self == .si ? 0.005 : 0.01 }
    /// The size of one step of a height field: 0.001 m or 0.1 in.
    public var heightResolution: Double { self == .si ? 0.001 : 0.1 }

    /// The steps nearest `mass` (in kg or lb), clamped to 0...0xFFFE (0xFFFF means "measurement unsuccessful").
    public func massSteps(_ mass: Double) -> UInt16 { Self.steps(mass / massResolution) }
    /// The steps nearest `height` (in m or in), clamped to 0...0xFFFE.
    public func heightSteps(_ height: Double) -> UInt16 { Self.steps(height / heightResolution) }

    static func steps(_ value: Double) -> UInt16 {
        guard value.isFinite else { return 0 }
        return UInt16(max(0, min(65534, value.rounded())))
    }
}

/// Weight Scale Service 1.0, 3.2 (Weight Measurement, 0x2A9D): flags, the weight (UInt16 steps of 0.005 kg or
/// 0.01 lb; 0xFFFF when the measurement was unsuccessful), optionally a time stamp, a user ID, and BMI (0.1 kg/m²)
/// with height (0.001 m or 0.1 in). Reserved flag bits 4–7 are ignored.
public struct WeightMeasurement: Sendable, Hashable, WireCodable {
    /// SI or imperial.
    public var units: MeasurementUnitSystem
    /// The weight in steps of ``MeasurementUnitSystem/massResolution``.
    public var weightSteps: UInt16
    /// When it was taken (flag bit 1).
    public var timestamp: DateTime?
    /// The user, 0...254, or 255 for an unknown user (flag bit 2).
    public var userID: UInt8?
    /// Body mass index and height (flag bit 3: both or neither).
    public var bmiAndHeight: BMIAndHeight?

    /// The BMI and height fields of a weight measurement.
    public struct BMIAndHeight: Sendable, Hashable {
        /// Body mass index in steps of 0.1 kg/m².
        public var bmiSteps: UInt16
        /// Height in steps of ``MeasurementUnitSystem/heightResolution``.
        public var heightSteps: UInt16
        /// Creates the pair.
        public init(bmiSteps: UInt16, heightSteps: UInt16) {
            self.bmiSteps = bmiSteps
            self.heightSteps = heightSteps
        }
    }

    /// Creates a measurement from raw steps.
    public init(units: MeasurementUnitSystem = .si, weightSteps: UInt16, timestamp: DateTime? = nil, userID: UInt8? = nil,
                bmiAndHeight: BMIAndHeight? = nil) {
        self.units = units
        self.weightSteps = weightSteps
        self.timestamp = timestamp
        self.userID = userID
        self.bmiAndHeight = bmiAndHeight
    }

    /// Whether the scale could not measure (weight 0xFFFF).
    public var isUnsuccessful: Bool { weightSteps == 0xFFFF }
    /// The weight in kilograms (SI) or pounds (imperial); `nil` when unsuccessful.
    public var weight: Double? { isUnsuccessful ? nil : Double(weightSteps) * units.massResolution }
    /// The BMI in kg/m².
    public var bmi: Double? { bmiAndHeight.map { Double($0.bmiSteps) / 10 } }
    /// The height in metres (SI) or inches (imperial).
    public var height: Double? { bmiAndHeight.map { Double($0.heightSteps) * units.heightResolution } }

    /// The flags byte this measurement is sent with.
    public var flags: UInt8 {
        (units == .imperial ? 0x01 : 0) | (timestamp != nil ? 0x02 : 0) | (userID != nil ? 0x04 : 0) | (bmiAndHeight != nil ? 0x08 : 0)
    }

    /// Decodes the measurement; throws ``WireError`` (truncated) when a field the flags announce is missing.
    public init(from reader: inout ByteReader) throws(WireError) {
        let flags = try reader.readUInt8("Weight Measurement flags")
        units = flags & 0x01 != 0 ? .imperial : .si
        weightSteps = try reader.readUInt16("Weight Measurement weight")
        timestamp = flags & 0x02 != 0 ? try DateTime(from: &reader) : nil
        userID = flags & 0x04 != 0 ? try reader.readUInt8("Weight Measurement user ID") : nil
        if flags & 0x08 != 0 {
            bmiAndHeight = BMIAndHeight(bmiSteps: try reader.readUInt16("Weight Measurement BMI"),
                                        heightSteps: try reader.readUInt16("Weight Measurement height"))
        } else {
            bmiAndHeight = nil
        }
    }

    /// Appends the measurement.
    public func encode(into writer: inout ByteWriter) {
        writer.write(flags)
        writer.write(weightSteps)
        timestamp?.encode(into: &writer)
        if let userID { writer.write(userID) }
        if let bmiAndHeight {
            writer.write(bmiAndHeight.bmiSteps)
            writer.write(bmiAndHeight.heightSteps)
        }
    }
}

/// Weight Scale Service 1.0, 3.1 (Weight Scale Feature, 0x2A9E): time stamps, several users, BMI, and the weight and
/// height resolutions the scale reports with. Reserved bits are kept as sent.
public struct WeightScaleFeature: OptionSet, Sendable, Hashable, WireCodable {
    /// The 32 bits.
    public var rawValue: UInt32
    /// Features from their bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Time stamps supported (bit 0).
    public static let timeStamp = WeightScaleFeature(rawValue: 0x01)
    /// Several users supported (bit 1).
    public static let multipleUsers = WeightScaleFeature(rawValue: 0x02)
    /// BMI supported (bit 2).
    public static let bmi = WeightScaleFeature(rawValue: 0x04)

    /// The weight resolution index (bits 3–6): 0 not specified, 1 = 0.5 kg/1 lb ... 7 = 0.005 kg/0.01 lb.
    public var weightResolution: UInt8 {
        get { UInt8(truncatingIfNeeded: (rawValue >> 3) & 0xF) }
        set { rawValue = (rawValue & ~(0xF << 3)) | (UInt32(newValue & 0xF) << 3) }
    }
    /// The height resolution index (bits 7–9): 0 not specified, 1 = 0.01 m/1 in, 2 = 0.005 m/0.5 in, 3 = 0.001 m/0.1 in.
    public var heightResolution: UInt8 {
        get { UInt8(truncatingIfNeeded: (rawValue >> 7) & 0x7) }
        set { rawValue = (rawValue & ~(0x7 << 7)) | (UInt32(newValue & 0x7) << 7) }
    }

    /// Decodes the four bytes.
    public init(from reader: inout ByteReader) throws(WireError) { rawValue = try reader.readUInt32("Weight Scale Feature") }
    /// Appends the four bytes.
    public func encode(into writer: inout ByteWriter) { writer.write(rawValue) }
}

/// A Weight Scale Service client on a connected peripheral.
public struct WeightScaleClient: Sendable {
    let service: StandardDiscoveredService

    /// Discovers the Weight Scale Service of `peripheral`; throws ``StandardServiceError/serviceNotFound(_:)`` when it
    /// has none.
    public init(peripheral: RemotePeripheral) async throws {
        service = try await .discover(WeightScaleService.uuid, on: peripheral)
    }

    /// Reads the scale's features.
    public func readFeature() async throws -> WeightScaleFeature {
        try await service.read(WeightScaleService.feature, WeightScaleFeature.standardDecode)
    }

    /// Subscribes to the (indicated) measurements; the stream ends with the error of a malformed one.
    public func measurements() async throws -> AsyncThrowingStream<WeightMeasurement, any Error> {
        try await service.updates(WeightScaleService.measurement, WeightMeasurement.standardDecode)
    }
}
