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

/// A Glucose Service client on a connected peripheral: runs Record Access Control Point procedures and collects the
/// records notified before the control point's response.
///
/// Each characteristic's values reach the central on a stream of their own, so the response indication can be
/// consumed a moment before the last notified records: after the response, the client keeps collecting until the
/// record streams have been quiet for `settle` (50 ms by default).
public struct GlucoseClient: Sendable {
    let service: StandardDiscoveredService
    /// How long the record streams must be quiet after the response before a report is considered complete.
    public var settle: Duration = .milliseconds(50)
    /// How long to wait for the control point's response.
    public var timeout: Duration = .seconds(30)

    /// Discovers the Glucose Service of `peripheral`; throws ``StandardServiceError/serviceNotFound(_:)`` when it has
    /// none.
    public init(peripheral: RemotePeripheral) async throws {
        service = try await .discover(GlucoseService.uuid, on: peripheral)
    }

    /// Reads the meter's features.
    public func readFeature() async throws -> GlucoseFeature {
        try await service.read(GlucoseService.feature, GlucoseFeature.standardDecode)
    }

    /// Reports the stored records `filter` selects, oldest first; none found is an empty array. Throws
    /// ``StandardServiceError/recordAccessFailed(_:)`` when the meter answers another response code.
    public func records(_ filter: RACPRecordFilter = .all) async throws -> [GlucoseRecord] {
        let collector = StandardGlucoseCollector()
        let measurements = try await service.rawUpdates(GlucoseService.measurement)
        let contexts = service.has(GlucoseService.measurementContext) ? try await service.rawUpdates(GlucoseService.measurementContext) : nil
        let listeners = [
            Task { for await value in measurements { await collector.measurement(value) } },
            Task {
                guard let contexts else { return }
                for await value in contexts { await collector.context(value) }
            },
        ]
        defer { for listener in listeners { listener.cancel() } }
        let response = try await perform(.report(filter))
        if response == .response(request: .abortOperation, code: .success) { throw StandardServiceError.aborted }
        guard case .response(.reportStoredRecords, let code) = response else { throw StandardServiceError.unexpectedResponse(response.encoded) }
        guard code == .success else {
            if code == .noRecordsFound { return [] }
            throw StandardServiceError.recordAccessFailed(code)
        }
        try await waitUntilQuiet(collector)
        return try await collector.records()
    }

    /// Deletes the stored records `filter` selects; throws ``StandardServiceError/recordAccessFailed(_:)`` (for
    /// example with No Records Found) unless the meter answers Success.
    public func deleteRecords(_ filter: RACPRecordFilter) async throws {
        let response = try await perform(.delete(filter))
        guard case .response(.deleteStoredRecords, let code) = response else { throw StandardServiceError.unexpectedResponse(response.encoded) }
        guard code == .success else { throw StandardServiceError.recordAccessFailed(code) }
    }

    /// The number of stored records `filter` selects.
    public func numberOfRecords(_ filter: RACPRecordFilter = .all) async throws -> Int {
        let response = try await perform(.count(filter))
        switch response {
        case .numberOfRecords(let count): return Int(count)
        case .response(.reportNumberOfStoredRecords, let code): throw StandardServiceError.recordAccessFailed(code)
        default: throw StandardServiceError.unexpectedResponse(response.encoded)
        }
    }

    /// Aborts the report in progress; returns once the records the meter sent before stopping have arrived (so the
    /// next report does not see them).
    public func abort() async throws {
        let collector = StandardGlucoseCollector()
        let measurements = try await service.rawUpdates(GlucoseService.measurement)
        let listener = Task { for await value in measurements { await collector.measurement(value) } }
        defer { listener.cancel() }
        let response = try await perform(.abort)
        guard case .response(.abortOperation, let code) = response else { throw StandardServiceError.unexpectedResponse(response.encoded) }
        guard code == .success else { throw StandardServiceError.recordAccessFailed(code) }
        try await waitUntilQuiet(collector)
    }

    /// Waits until `collector` has received nothing for ``settle``: the notifications sent before an indication
    /// reach their streams a moment after it.
    func waitUntilQuiet(_ collector: StandardGlucoseCollector) async throws {
        var seen = await collector.received
        while true {
            try await Task.sleep(for: settle)
            let now = await collector.received
            if now == seen { return }
            seen = now
        }
    }

    /// Writes `request` to the control point (with its indications enabled) and returns the response the meter
    /// indicates for it: the first Response Code naming the request's op code (or the Number of Stored Records
    /// Response of a count); a report aborted meanwhile returns the abort's Success. ATT errors (0x80 procedure
    /// already in progress, 0x81 CCCD improperly configured) are thrown as `GATTError`.
    public func perform(_ request: RACPRequest) async throws -> RACPResponse {
        let responses = try await service.updates(GlucoseService.recordAccessControlPoint, RACPResponse.standardDecode)
        try await service.write(request.encoded, to: GlucoseService.recordAccessControlPoint)
        let timeout = timeout
        return try await withThrowingTaskGroup(of: RACPResponse?.self) { group in
            group.addTask {
                for try await response in responses where Self.answers(response, request) { return response }
                return nil
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let response = first else { throw StandardServiceError.timedOut }
            return response
        }
    }
}

extension GlucoseClient {
    /// Whether `response` ends the procedure `request` started.
    static func answers(_ response: RACPResponse, _ request: RACPRequest) -> Bool {
        switch response {
        case .numberOfRecords: return request.opCode == .reportNumberOfStoredRecords
        case .response(let opCode, let code):
            return opCode == request.opCode || (request.opCode == .reportStoredRecords && opCode == .abortOperation && code == .success)
        }
    }
}

/// The records a report notifies, paired by sequence number.
actor StandardGlucoseCollector {
    var measurements: [GlucoseMeasurement] = []
    var contexts: [UInt16: GlucoseMeasurementContext] = [:]
    var failure: WireError?
    var received = 0

    func measurement(_ bytes: [UInt8]) {
        received += 1
        do { measurements.append(try GlucoseMeasurement(bytes: bytes)) } catch { failure = failure ?? error }
    }

    func context(_ bytes: [UInt8]) {
        received += 1
        do {
            let context = try GlucoseMeasurementContext(bytes: bytes)
            contexts[context.sequenceNumber] = context
        } catch { failure = failure ?? error }
    }

    func records() throws -> [GlucoseRecord] {
        if let failure { throw failure }
        return measurements.map { measurement in
            var record = GlucoseRecord(measurement: measurement, context: measurement.hasContext ? contexts[measurement.sequenceNumber] : nil)
            record.measurement.hasContext = measurement.hasContext
            return record
        }
    }
}

/// A simulated glucose meter (Glucose and Device Information services) holding stored records served through the
/// Record Access Control Point (``RACPStateMachine``): it starts with `initialRecords` records, one every four
/// hours, every third with a context, concentrations around 105 mg/dL varied deterministically; each tick one more
/// measurement is taken and stored. The records of a report are notified to the client that asked (a context right
/// after its measurement), then the response is indicated; a record that cannot be delivered (the client did not
/// enable the measurement's notifications, or left) ends the report with Procedure Not Completed.
public actor SimulatedGlucoseMeter {
    /// The name it advertises unless told otherwise.
    public static let defaultName = "SwiftBLE Glucose"
    /// The features it publishes.
    public static let features: GlucoseFeature = [.lowBatteryDetection, .sensorMalfunctionDetection, .stripInsertionErrorDetection,
                                                  .resultHighLowDetection, .timeFault]
    /// The peripheral manager it publishes on.
    public let manager: PeripheralManager
    /// The advertised name.
    public let name: String
    /// The record store and control point state.
    public private(set) var machine: RACPStateMachine<GlucoseRecord>
    /// The device's clock.
    public private(set) var clock = DateTime(year: 2026, month: 1, day: 1, hours: 7)
    var nextSequenceNumber: UInt16 = 1
    var generator: StandardSeededGenerator
    var indicating: Set<ConnectionHandle> = []
    var tasks: [Task<Void, Never>] = []
    var reporter: Task<Void, Never>?
    /// Which report the running reporter sends (an aborted report's reporter must not take the next one's records).
    var reportGeneration = 0

    /// The pause after each record of a report (a slow meter; zero sends them back to back).
    public let recordSpacing: Duration

    /// A meter on `manager` with `initialRecords` stored records, pausing `recordSpacing` after each reported record;
    /// `seed` fixes its variation. Call ``start(tick:)``.
    public init(manager: PeripheralManager, name: String = SimulatedGlucoseMeter.defaultName, initialRecords: Int = 12,
                recordSpacing: Duration = .zero, seed: UInt64 = 1) async {
        self.manager = manager
        self.name = name
        self.recordSpacing = recordSpacing
        generator = StandardSeededGenerator(seed: seed)
        machine = RACPStateMachine()
        for _ in 0..<max(0, initialRecords) { takeMeasurement() }
    }

    /// The stored records now.
    public var records: [GlucoseRecord] { machine.records }

    /// Publishes the services, advertises, answers the control point and stores a new measurement every `tick`.
    public func start(tick: Duration = .seconds(1)) async throws {
        guard tasks.isEmpty else { return }
        // Two streams of the same requests: the control point's answers and the subscription tracking run apart, as
        // before, so that a long answer does not hold a subscription change back.
        let requests = await manager.requests()
        let changes = await manager.requests()
        try await standardPublish([GlucoseService.definition(features: Self.features), DeviceInformationService.definition(.simulated(model: "GLUCO-1"))],
                                  on: manager, name: name)
        tasks.append(Task { [weak self] in
            for await request in requests { if case .application(let asked) = request.kind { await self?.answer(asked) } }
        })
        tasks.append(Task { [weak self] in
            for await change in changes { await self?.track(change) }
        })
        tasks.append(standardTicker(every: tick) { [weak self] in
            await self?.takeMeasurement()
            return self != nil
        })
    }

    /// Stores the next measurement, four hours after the previous one.
    func takeMeasurement() {
        let sequence = nextSequenceNumber
        nextSequenceNumber &+= 1
        clock = clock.adding(seconds: 4 * 3600)
        let mgdL = 105 + Double(Int(generator.next() % 41) - 20)
        let status: GlucoseSensorStatus? = generator.next() % 6 == 0 ? .timeFault : nil
        let measurement = GlucoseMeasurement(sequenceNumber: sequence, baseTime: clock, timeOffset: 0,
                                             concentration: .milligramsPerDecilitre(mgdL), sensorStatus: status)
        let context = sequence % 3 == 0
            ? GlucoseMeasurementContext(sequenceNumber: sequence, carbohydrate: .init(id: 1, kilograms: SFloat(0.045, fractionDigits: 3)),
                                        meal: sequence % 2 == 0 ? 1 : 2, testerAndHealth: 0x51)
            : nil
        machine.store(GlucoseRecord(measurement: measurement, context: context))
    }

    /// Who enabled indications of the control point.
    func track(_ change: PeripheralRequest) {
        guard case .subscription(let characteristic, _, _, let indicate) = change.kind, characteristic == GlucoseService.recordAccessControlPoint else { return }
        if indicate { indicating.insert(change.central.handle) } else { indicating.remove(change.central.handle) }
    }

    func answer(_ request: AttributeRequest) async {
        guard request.characteristic == GlucoseService.recordAccessControlPoint, case .write(let value, _) = request.kind else {
            return await request.refuse(.requestNotSupported)
        }
        let central = request.central
        switch machine.write(value, indicationsEnabled: indicating.contains(central.handle)) {
        case .refused(let error):
            await request.refuse(error)
        case .respond(let response):
            await request.accept()
            // An abort's response follows the record the reporter was sending when it came.
            if case .response(.abortOperation, _) = response { await reporter?.value }
            _ = try? await manager.updateValue(response.encoded, for: GlucoseService.recordAccessControlPoint, onSubscribedCentrals: [central])
        case .reportStarted:
            await request.accept()
            reporter?.cancel()
            reportGeneration += 1
            let generation = reportGeneration
            reporter = Task { [weak self] in await self?.report(to: central, generation: generation) }
        }
    }

    /// Sends the report's records, then its response.
    func report(to central: HostConnection, generation: Int) async {
        while generation == reportGeneration, let step = machine.nextReportStep() {
            switch step {
            case .send(let record):
                let reached = try? await manager.updateValue(record.measurement.encoded, for: GlucoseService.measurement, onSubscribedCentrals: [central])
                if let context = record.context {
                    _ = try? await manager.updateValue(context.encoded, for: GlucoseService.measurementContext, onSubscribedCentrals: [central])
                }
                if reached?.isEmpty ?? true, generation == reportGeneration, let response = machine.interruptReport() {
                    _ = try? await manager.updateValue(response.encoded, for: GlucoseService.recordAccessControlPoint, onSubscribedCentrals: [central])
                    return
                }
                if recordSpacing > .zero { try? await Task.sleep(for: recordSpacing) }
            case .finish(let response):
                _ = try? await manager.updateValue(response.encoded, for: GlucoseService.recordAccessControlPoint, onSubscribedCentrals: [central])
                return
            }
        }
    }

    /// Stops measuring, answering, advertising and serving (the services are removed).
    public func stop() async {
        for task in tasks { task.cancel() }
        tasks = []
        reporter?.cancel()
        reporter = nil
        await standardUnpublish([GlucoseService.uuid, DeviceInformationService.uuid], on: manager)
    }
}
