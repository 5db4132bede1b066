import BLEWire

/// Glucose Service 1.0 (0x1808): stored glucose measurements (with optional contexts) reported through a Record
/// Access Control Point, and the meter's features.
public enum GlucoseService {
    /// The service UUID (0x1808).
    public static let uuid = BluetoothUUID(0x1808)
    /// Glucose Measurement (0x2A18), notify.
    public static let measurement = BluetoothUUID(0x2A18)
    /// Glucose Measurement Context (0x2A34), notify.
    public static let measurementContext = BluetoothUUID(0x2A34)
    /// Glucose Feature (0x2A51), read.
    public static let feature = BluetoothUUID(0x2A51)
    /// Record Access Control Point (0x2A52), write and indicate.
    public static let recordAccessControlPoint = BluetoothUUID(0x2A52)

    /// The service: measurement and context (notify), feature (read), and the control point (write, indicate)
    /// answered by the application.
    public static func definition(features: GlucoseFeature) -> GATTServiceDefinition {
        GATTServiceDefinition(uuid: uuid, characteristics: [
            GATTCharacteristicDefinition(uuid: measurement, properties: .notify, permissions: []),
            GATTCharacteristicDefinition(uuid: measurementContext, properties: .notify, permissions: []),
            GATTCharacteristicDefinition(uuid: feature, properties: .read, value: features.encoded),
            GATTCharacteristicDefinition(uuid: recordAccessControlPoint, properties: [.write, .indicate], permissions: .writeable,
                                         source: .application),
        ])
    }
}

/// Glucose Service 1.0, 3.1 (Glucose Measurement, 0x2A18): flags, sequence number, base time, optionally a time
/// offset (minutes), the concentration (SFLOAT, kg/L or mol/L) with type and sample location, and the sensor status
/// annunciation; flag bit 4 says a context follows. Reserved flag bits 5–7 are ignored; the unit bit is kept only
/// with a concentration.
public struct GlucoseMeasurement: Sendable, Hashable, WireCodable, RACPRecord {
    /// The concentration, its unit, and what was sampled where.
    public struct Concentration: Sendable, Hashable {
        /// The unit of the concentration (flag bit 2).
        public enum Unit: Sendable, Hashable {
            /// Kilograms per litre (mg/dL × 10⁻⁵).
            case kilogramsPerLitre
            /// Moles per litre (mmol/L × 10⁻³).
            case molesPerLitre
        }
        /// The concentration.
        public var value: SFloat
        /// Its unit.
        public var unit: Unit
        /// The sample type (low nibble): 1 capillary whole blood, 2 capillary plasma, 3 venous whole blood, 4 venous
        /// plasma, 5 arterial whole blood, 6 arterial plasma, 7/8 undetermined whole blood/plasma, 9 interstitial
        /// fluid, 10 control solution.
        public var type: UInt8
        /// The sample location (high nibble): 1 finger, 2 alternate site test, 3 earlobe, 4 control solution, 15 not
        /// available.
        public var location: UInt8

        /// Creates a concentration (type and location keep their low 4 bits).
        public init(value: SFloat, unit: Unit = .kilogramsPerLitre, type: UInt8 = 1, location: UInt8 = 1) {
            self.value = value
            self.unit = unit
            self.type = type & 0x0F
            self.location = location & 0x0F
        }

        /// A concentration in mg/dL, sent in kg/L with three significant digits (100 mg/dL = 100 × 10⁻⁵ kg/L).
        public static func milligramsPerDecilitre(_ value: Double, type: UInt8 = 1, location: UInt8 = 1) -> Concentration {
            Concentration(value: SFloat(value / 100_000, fractionDigits: 5), type: type, location: location)
        }

        /// The concentration in mg/dL (converted from mmol/L with glucose's 18.016 g/mol when sent so).
        public var milligramsPerDecilitre: Double {
            unit == .kilogramsPerLitre ? value.doubleValue * 100_000 : value.doubleValue * 1000 * 18.016
        }
    }

    /// The sequence number.
    public var sequenceNumber: UInt16
    /// When it was taken.
    public var baseTime: DateTime
    /// Minutes to add to the base time (flag bit 0).
    public var timeOffset: Int16?
    /// The concentration with type and sample location (flag bit 1).
    public var concentration: Concentration?
    /// The sensor status annunciation (flag bit 3).
    public var sensorStatus: GlucoseSensorStatus?
    /// Whether a Glucose Measurement Context with the same sequence number follows (flag bit 4).
    public var hasContext: Bool

    /// Creates a measurement.
    public init(sequenceNumber: UInt16, baseTime: DateTime, timeOffset: Int16? = nil, concentration: Concentration? = nil,
                sensorStatus: GlucoseSensorStatus? = nil, hasContext: Bool = false) {
        self.sequenceNumber = sequenceNumber
        self.baseTime = baseTime
        self.timeOffset = timeOffset
        self.concentration = concentration
        self.sensorStatus = sensorStatus
        self.hasContext = hasContext
    }

    /// The flags byte this measurement is sent with.
    public var flags: UInt8 {
        var flags: UInt8 = (timeOffset != nil ? 0x01 : 0) | (concentration != nil ? 0x02 : 0)
        if concentration?.unit == .molesPerLitre { flags |= 0x04 }
        return flags | (sensorStatus != nil ? 0x08 : 0) | (hasContext ? 0x10 : 0)
    }

    /// Decodes the measurement; throws ``WireError`` (truncated) when a field the flags announce is missing and
    /// (invalid value) for an impossible base time.
    public init(from reader: inout ByteReader) throws(WireError) {
        let flags = try reader.readUInt8("Glucose Measurement flags")
        sequenceNumber = try reader.readUInt16("Glucose Measurement sequence number")
        baseTime = try DateTime(from: &reader)
        timeOffset = flags & 0x01 != 0 ? Int16(bitPattern: try reader.readUInt16("Glucose Measurement time offset")) : nil
        if flags & 0x02 != 0 {
            let value = try SFloat(from: &reader)
            let typeAndLocation = try reader.readUInt8("Glucose Measurement type-sample location")
            concentration = Concentration(value: value, unit: flags & 0x04 != 0 ? .molesPerLitre : .kilogramsPerLitre,
                                          type: typeAndLocation & 0x0F, location: typeAndLocation >> 4)
        } else {
            concentration = nil
        }
        sensorStatus = flags & 0x08 != 0 ? GlucoseSensorStatus(rawValue: try reader.readUInt16("Glucose Measurement sensor status")) : nil
        hasContext = flags & 0x10 != 0
    }

    /// Appends the measurement.
    public func encode(into writer: inout ByteWriter) {
        writer.write(flags)
        writer.write(sequenceNumber)
        baseTime.encode(into: &writer)
        if let timeOffset { writer.write(UInt16(bitPattern: timeOffset)) }
        if let concentration {
            concentration.value.encode(into: &writer)
            writer.write(concentration.type & 0x0F | concentration.location << 4)
        }
        if let sensorStatus { writer.write(sensorStatus.rawValue) }
    }
}

/// Glucose Service 1.0, 3.1 (the Sensor Status Annunciation field): what went wrong during a measurement. Reserved
/// bits 12–15 are kept as sent.
public struct GlucoseSensorStatus: OptionSet, Sendable, Hashable {
    /// The 16 bits.
    public var rawValue: UInt16
    /// A status from its bits.
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// The battery was low (bit 0).
    public static let batteryLow = GlucoseSensorStatus(rawValue: 1 << 0)
    /// The sensor malfunctioned (bit 1).
    public static let sensorMalfunction = GlucoseSensorStatus(rawValue: 1 << 1)
    /// The sample was too small (bit 2).
    public static let sampleSizeInsufficient = GlucoseSensorStatus(rawValue: 1 << 2)
    /// The strip was inserted wrongly (bit 3).
    public static let stripInsertionError = GlucoseSensorStatus(rawValue: 1 << 3)
    /// The wrong strip type (bit 4).
    public static let stripTypeIncorrect = GlucoseSensorStatus(rawValue: 1 << 4)
    /// The result was higher than the device can process (bit 5).
    public static let resultTooHigh = GlucoseSensorStatus(rawValue: 1 << 5)
    /// The result was lower than the device can process (bit 6).
    public static let resultTooLow = GlucoseSensorStatus(rawValue: 1 << 6)
    /// The sensor was too hot (bit 7).
    public static let temperatureTooHigh = GlucoseSensorStatus(rawValue: 1 << 7)
    /// The sensor was too cold (bit 8).
    public static let temperatureTooLow = GlucoseSensorStatus(rawValue: 1 << 8)
    /// The read was interrupted: the strip was pulled too soon (bit 9).
    public static let readInterrupted = GlucoseSensorStatus(rawValue: 1 << 9)
    /// A general device fault (bit 10).
    public static let generalDeviceFault = GlucoseSensorStatus(rawValue: 1 << 10)
    /// A time fault: the time may be inaccurate (bit 11).
    public static let timeFault = GlucoseSensorStatus(rawValue: 1 << 11)
}

/// Glucose Service 1.0, 3.3 (Glucose Measurement Context, 0x2A34): what surrounded a measurement, each part present
/// when its flag is set: extended flags (bit 7), carbohydrate ID and amount in kg (bit 0), meal (bit 1), tester and
/// health (bit 2), exercise duration (s) and intensity (%) (bit 3), medication ID and amount in kg or litres (bits 4
/// and 5), HbA1c in % (bit 6).
public struct GlucoseMeasurementContext: Sendable, Hashable, WireCodable {
    /// Carbohydrate intake.
    public struct Carbohydrate: Sendable, Hashable {
        /// 1 breakfast, 2 lunch, 3 dinner, 4 snack, 5 drink, 6 supper, 7 brunch.
        public var id: UInt8
        /// The amount in kilograms.
        public var kilograms: SFloat
        /// Creates an intake.
        public init(id: UInt8, kilograms: SFloat) {
            self.id = id
            self.kilograms = kilograms
        }
    }
    /// Exercise before the measurement.
    public struct Exercise: Sendable, Hashable {
        /// Duration in seconds (0xFFFF: overrun).
        public var durationSeconds: UInt16
        /// Intensity in percent.
        public var intensityPercent: UInt8
        /// Creates an exercise record.
        public init(durationSeconds: UInt16, intensityPercent: UInt8) {
            self.durationSeconds = durationSeconds
            self.intensityPercent = intensityPercent
        }
    }
    /// Medication taken.
    public struct Medication: Sendable, Hashable {
        /// 1 rapid acting insulin, 2 short acting, 3 intermediate acting, 4 long acting, 5 pre-mixed insulin.
        public var id: UInt8
        /// The amount, in kilograms or litres.
        public var amount: SFloat
        /// Whether the amount is in litres (flag bit 5) rather than kilograms.
        public var inLitres: Bool
        /// Creates a medication record.
        public init(id: UInt8, amount: SFloat, inLitres: Bool = false) {
            self.id = id
            self.amount = amount
            self.inLitres = inLitres
        }
    }

    /// The sequence number of the measurement it belongs to.
    public var sequenceNumber: UInt16
    /// The extended flags byte (all reserved in Glucose Service 1.0).
    public var extendedFlags: UInt8?
    /// Carbohydrate intake.
    public var carbohydrate: Carbohydrate?
    /// 1 preprandial, 2 postprandial, 3 fasting, 4 casual, 5 bedtime.
    public var meal: UInt8?
    /// Who tested (low nibble: 1 self, 2 health care professional, 3 lab test, 15 not available) and their health
    /// (high nibble: 1 minor issues, 2 major issues, 3 during menses, 4 under stress, 5 no issues, 15 not available).
    public var testerAndHealth: UInt8?
    /// Exercise before the measurement.
    public var exercise: Exercise?
    /// Medication taken.
    public var medication: Medication?
    /// HbA1c in percent.
    public var hbA1c: SFloat?

    /// Creates a context.
    public init(sequenceNumber: UInt16, extendedFlags: UInt8? = nil, carbohydrate: Carbohydrate? = nil, meal: UInt8? = nil,
                testerAndHealth: UInt8? = nil, exercise: Exercise? = nil, medication: Medication? = nil, hbA1c: SFloat? = nil) {
        self.sequenceNumber = sequenceNumber
        self.extendedFlags = extendedFlags
        self.carbohydrate = carbohydrate
        self.meal = meal
        self.testerAndHealth = testerAndHealth
        self.exercise = exercise
        self.medication = medication
        self.hbA1c = hbA1c
    }

    /// The flags byte this context is sent with.
    public var flags: UInt8 {
        var flags: UInt8 = (carbohydrate != nil ? 0x01 : 0) | (meal != nil ? 0x02 : 0) | (testerAndHealth != nil ? 0x04 : 0)
        flags |= (exercise != nil ? 0x08 : 0) | (medication != nil ? 0x10 : 0) | (medication?.inLitres == true ? 0x20 : 0)
        return flags | (hbA1c != nil ? 0x40 : 0) | (extendedFlags != nil ? 0x80 : 0)
    }

    /// Decodes the context; throws ``WireError`` (truncated) when a field the flags announce is missing.
    public init(from reader: inout ByteReader) throws(WireError) {
        let flags = try reader.readUInt8("Glucose Measurement Context flags")
        sequenceNumber = try reader.readUInt16("Glucose Measurement Context sequence number")
        extendedFlags = flags & 0x80 != 0 ? try reader.readUInt8("Glucose Measurement Context extended flags") : nil
        if flags & 0x01 != 0 {
            let id = try reader.readUInt8("Glucose Measurement Context carbohydrate ID")
            carbohydrate = Carbohydrate(id: id, kilograms: try SFloat(from: &reader))
        } else {
            carbohydrate = nil
        }
        meal = flags & 0x02 != 0 ? try reader.readUInt8("Glucose Measurement Context meal") : nil
        testerAndHealth = flags & 0x04 != 0 ? try reader.readUInt8("Glucose Measurement Context tester-health") : nil
        if flags & 0x08 != 0 {
            let duration = try reader.readUInt16("Glucose Measurement Context exercise duration")
            exercise = Exercise(durationSeconds: duration, intensityPercent: try reader.readUInt8("Glucose Measurement Context exercise intensity"))
        } else {
            exercise = nil
        }
        if flags & 0x10 != 0 {
            let id = try reader.readUInt8("Glucose Measurement Context medication ID")
            medication = Medication(id: id, amount: try SFloat(from: &reader), inLitres: flags & 0x20 != 0)
        } else {
            medication = nil
        }
        hbA1c = flags & 0x40 != 0 ? try SFloat(from: &reader) : nil
    }

    /// Appends the context.
    public func encode(into writer: inout ByteWriter) {
        writer.write(flags)
        writer.write(sequenceNumber)
        if let extendedFlags { writer.write(extendedFlags) }
        if let carbohydrate {
            writer.write(carbohydrate.id)
            carbohydrate.kilograms.encode(into: &writer)
        }
        if let meal { writer.write(meal) }
        if let testerAndHealth { writer.write(testerAndHealth) }
        if let exercise {
            writer.write(exercise.durationSeconds)
            writer.write(exercise.intensityPercent)
        }
        if let medication {
            writer.write(medication.id)
            medication.amount.encode(into: &writer)
        }
        hbA1c?.encode(into: &writer)
    }
}

/// Glucose Service 1.0, 3.2 (Glucose Feature, 0x2A51): what the meter detects and supports. Reserved bits are kept
/// as sent.
public struct GlucoseFeature: OptionSet, Sendable, Hashable, WireCodable {
    /// The 16 bits.
    public var rawValue: UInt16
    /// Features from their bits.
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// Low battery detection during measurement (bit 0).
    public static let lowBatteryDetection = GlucoseFeature(rawValue: 1 << 0)
    /// Sensor malfunction detection (bit 1).
    public static let sensorMalfunctionDetection = GlucoseFeature(rawValue: 1 << 1)
    /// Sensor sample size (bit 2).
    public static let sensorSampleSize = GlucoseFeature(rawValue: 1 << 2)
    /// Sensor strip insertion error detection (bit 3).
    public static let stripInsertionErrorDetection = GlucoseFeature(rawValue: 1 << 3)
    /// Sensor strip type error detection (bit 4).
    public static let stripTypeErrorDetection = GlucoseFeature(rawValue: 1 << 4)
    /// Sensor result high-low detection (bit 5).
    public static let resultHighLowDetection = GlucoseFeature(rawValue: 1 << 5)
    /// Sensor temperature high-low detection (bit 6).
    public static let temperatureHighLowDetection = GlucoseFeature(rawValue: 1 << 6)
    /// Sensor read interrupt detection (bit 7).
    public static let readInterruptDetection = GlucoseFeature(rawValue: 1 << 7)
    /// General device fault (bit 8).
    public static let generalDeviceFault = GlucoseFeature(rawValue: 1 << 8)
    /// Time fault (bit 9).
    public static let timeFault = GlucoseFeature(rawValue: 1 << 9)
    /// Several bonds (bit 10).
    public static let multipleBonds = GlucoseFeature(rawValue: 1 << 10)

    /// Decodes the two bytes.
    public init(from reader: inout ByteReader) throws(WireError) { rawValue = try reader.readUInt16("Glucose Feature") }
    /// Appends the two bytes.
    public func encode(into writer: inout ByteWriter) { writer.write(rawValue) }
}

/// A stored glucose record: a measurement and, when it has one, its context.
public struct GlucoseRecord: Sendable, Hashable, RACPRecord {
    /// The measurement.
    public var measurement: GlucoseMeasurement
    /// Its context (the measurement's ``GlucoseMeasurement/hasContext`` says one follows).
    public var context: GlucoseMeasurementContext?

    /// A record; the measurement's context flag is set when a context is given.
    public init(measurement: GlucoseMeasurement, context: GlucoseMeasurementContext? = nil) {
        var measurement = measurement
        measurement.hasContext = context != nil
        self.measurement = measurement
        self.context = context
    }

    /// The measurement's sequence number.
    public var sequenceNumber: UInt16 { measurement.sequenceNumber }
}
