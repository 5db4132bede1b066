import BLEWire

/// Heart Rate Service 1.0 (0x180D): heart rate measurements notified, the sensor's body location, and a control
/// point that resets the energy expended.
public enum HeartRateService {
    /// The service UUID (0x180D).
    public static let uuid = BluetoothUUID(0x180D)
    /// Heart Rate Measurement (0x2A37), notify.
    public static let measurement = BluetoothUUID(0x2A37)
    /// Body Sensor Location (0x2A38), read.
    public static let bodySensorLocation = BluetoothUUID(0x2A38)
    /// Heart Rate Control Point (0x2A39), write.
    public static let controlPoint = BluetoothUUID(0x2A39)
    /// The control point's only op code: reset energy expended (0x01).
    public static let resetEnergyExpended: UInt8 = 0x01
    /// Heart Rate Service 1.0, 1.6: the ATT error answering a control point value other than 0x01 (Control Point
    /// Value Not Supported, 0x80).
    public static let controlPointNotSupported = ATTErrorCode(rawValue: 0x80)

    /// The service: the measurement (notify), the body sensor location and, when `controlPoint` is set, the control
    /// point, answered by the application (see ``SimulatedHeartRateMonitor``).
    public static func definition(location: BodySensorLocation, controlPoint: Bool = true) -> GATTServiceDefinition {
        var characteristics = [
            GATTCharacteristicDefinition(uuid: measurement, properties: .notify, permissions: []),
            GATTCharacteristicDefinition(uuid: bodySensorLocation, properties: .read, value: [location.rawValue]),
        ]
        if controlPoint {
            characteristics.append(GATTCharacteristicDefinition(uuid: Self.controlPoint, properties: .write, permissions: .writeable,
                                                                source: .application))
        }
        return GATTServiceDefinition(uuid: uuid, characteristics: characteristics)
    }
}

/// Heart Rate Service 1.0, 3.1 (Heart Rate Measurement, 0x2A37): flags, the heart rate (UInt8 or UInt16 beats per
/// minute), the sensor contact status, optionally the energy expended (kJ) and RR intervals (1/1024 s). Reserved
/// flag bits 5–7 are ignored.
public struct HeartRateMeasurement: Sendable, Hashable, WireCodable {
    /// How the heart rate is sent (flag bit 0).
    public enum ValueFormat: Sendable, Hashable {
        /// One byte (0...255 bpm).
        case uint8
        /// Two bytes.
        case uint16
    }

    /// Skin contact (flag bits 1–2).
    public enum SensorContact: Sendable, Hashable {
        /// The sensor does not report contact (bit 2 clear).
        case notSupported
        /// Supported, and there is no (or poor) contact (bits 2 set, bit 1 clear).
        case notDetected
        /// Supported and detected (bits 1 and 2 set).
        case detected
    }

    /// The heart rate in beats per minute.
    public var beatsPerMinute: UInt16
    /// How the heart rate is sent; a rate above 255 is always sent as UInt16.
    public var valueFormat: ValueFormat
    /// Skin contact.
    public var sensorContact: SensorContact
    /// Energy expended since the last reset, in kilojoules (0xFFFF once it reaches that); `nil` when absent.
    public var energyExpended: UInt16?
    /// RR intervals, oldest first, in units of 1/1024 s; `nil` when the field is absent (flag bit 4 clear).
    public var rrIntervals: [UInt16]?

    /// Creates a measurement; the value format defaults to the smallest that holds the rate.
    public init(beatsPerMinute: UInt16, valueFormat: ValueFormat? = nil, sensorContact: SensorContact = .notSupported,
                energyExpended: UInt16? = nil, rrIntervals: [UInt16]? = nil) {
        self.beatsPerMinute = beatsPerMinute
        self.valueFormat = valueFormat ?? (beatsPerMinute > 0xFF ? .uint16 : .uint8)
        self.sensorContact = sensorContact
        self.energyExpended = energyExpended
        self.rrIntervals = rrIntervals
    }

    /// The RR intervals in seconds.
    public var rrIntervalSeconds: [Double]? { rrIntervals?.map { Double($0) / 1024 } }

    /// Decodes the measurement. Throws ``WireError``: truncated when a field the flags announce is missing, length
    /// mismatch when the RR intervals leave an odd byte.
    public init(from reader: inout ByteReader) throws(WireError) {
        let flags = try reader.readUInt8("Heart Rate Measurement flags")
        if flags & 0x01 != 0 {
            valueFormat = .uint16
            beatsPerMinute = try reader.readUInt16("Heart Rate Measurement value")
        } else {
            valueFormat = .uint8
            beatsPerMinute = UInt16(try reader.readUInt8("Heart Rate Measurement value"))
        }
        switch flags & 0x06 {
        case 0x06: sensorContact = .detected
        case 0x04: sensorContact = .notDetected
        default: sensorContact = .notSupported
        }
        energyExpended = flags & 0x08 != 0 ? try reader.readUInt16("Heart Rate Measurement energy expended") : nil
        if flags & 0x10 != 0 {
            guard reader.remainingCount % 2 == 0 else {
                throw WireError(.lengthMismatch, "Heart Rate Measurement RR intervals: \(reader.remainingCount) byte(s), not whole UInt16s")
            }
            var intervals: [UInt16] = []
            while !reader.isAtEnd { intervals.append(try reader.readUInt16("Heart Rate Measurement RR interval")) }
            rrIntervals = intervals
        } else {
            rrIntervals = nil
        }
    }

    /// The flags byte this measurement is sent with.
    public var flags: UInt8 {
        var flags: UInt8 = format == .uint16 ? 0x01 : 0
        switch sensorContact {
        case .notSupported: break
        case .notDetected: flags |= 0x04
        case .detected: flags |= 0x06
        }
        if energyExpended != nil { flags |= 0x08 }
        if rrIntervals != nil { flags |= 0x10 }
        return flags
    }

    var format: ValueFormat { beatsPerMinute > 0xFF ? .uint16 : valueFormat }

    /// Appends the measurement with every RR interval.
    public func encode(into writer: inout ByteWriter) {
        writer.write(flags)
        if format == .uint16 { writer.write(beatsPerMinute) } else { writer.write(UInt8(truncatingIfNeeded: beatsPerMinute)) }
        if let energyExpended { writer.write(energyExpended) }
        for interval in rrIntervals ?? [] { writer.write(interval) }
    }

    /// Splits the measurement for a notification of at most `maximumLength` bytes (ATT_MTU − 3): the measurement
    /// with the oldest RR intervals that fit, and the intervals left over, which the Heart Rate Service sends in the
    /// next measurement. A measurement without intervals, or whose intervals all fit, is returned whole.
    public func split(maximumLength: Int) -> (measurement: HeartRateMeasurement, leftOver: [UInt16]) {
        guard let rrIntervals else { return (self, []) }
        let fixed = 1 + (format == .uint16 ? 2 : 1) + (energyExpended != nil ? 2 : 0)
        let room = max(0, (maximumLength - fixed) / 2)
        guard rrIntervals.count > room else { return (self, []) }
        var first = self
        first.rrIntervals = Array(rrIntervals.prefix(room))
        return (first, Array(rrIntervals.dropFirst(room)))
    }
}

/// Heart Rate Service 1.0, 3.2 (Body Sensor Location, 0x2A38): where the sensor is worn. Values 7...255 are reserved
/// and kept as sent.
public struct BodySensorLocation: RawRepresentable, Sendable, Hashable, WireCodable {
    /// The byte.
    public var rawValue: UInt8
    /// A location from its byte.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Other (0).
    public static let other = BodySensorLocation(rawValue: 0)
    /// Chest (1).
    public static let chest = BodySensorLocation(rawValue: 1)
    /// Wrist (2).
    public static let wrist = BodySensorLocation(rawValue: 2)
    /// Finger (3).
    public static let finger = BodySensorLocation(rawValue: 3)
    /// Hand (4).
    public static let hand = BodySensorLocation(rawValue: 4)
    /// Ear lobe (5).
    public static let earLobe = BodySensorLocation(rawValue: 5)
    /// Foot (6).
    public static let foot = BodySensorLocation(rawValue: 6)

    /// Decodes the byte.
    public init(from reader: inout ByteReader) throws(WireError) { rawValue = try reader.readUInt8("Body Sensor Location") }
    /// Appends the byte.
    public func encode(into writer: inout ByteWriter) { writer.write(rawValue) }
}

/// A Heart Rate Service client on a connected peripheral.
public struct HeartRateClient: Sendable {
    let service: StandardDiscoveredService

    /// Discovers the Heart Rate Service of `peripheral`; throws ``StandardServiceError/serviceNotFound(_:)`` when it
    /// has none.
    public init(peripheral: RemotePeripheral) async throws {
        service = try await .discover(HeartRateService.uuid, on: peripheral)
    }

    /// Subscribes to the measurements (the stream ends with the error of a malformed one).
    public func measurements() async throws -> AsyncThrowingStream<HeartRateMeasurement, any Error> {
        try await service.updates(HeartRateService.measurement, HeartRateMeasurement.standardDecode)
    }

    /// Reads where the sensor is worn.
    public func readBodySensorLocation() async throws -> BodySensorLocation {
        try await service.read(HeartRateService.bodySensorLocation, BodySensorLocation.standardDecode)
    }

    /// Resets the energy expended to 0 through the control point.
    public func resetEnergyExpended() async throws {
        try await writeControlPoint(HeartRateService.resetEnergyExpended)
    }

    /// Writes a raw control point value (the sensor refuses values it does not support with ATT error 0x80, thrown
    /// as a `GATTError`).
    public func writeControlPoint(_ value: UInt8) async throws {
        try await service.write([value], to: HeartRateService.controlPoint)
    }
}

/// A simulated chest strap (Heart Rate, Battery and Device Information services): every tick, one second of the
/// wearer's time, it notifies a measurement. The rate wanders deterministically (a seeded random walk pulled back to
/// a resting rate), the energy expended grows with the rate until the control point resets it, and the RR intervals
/// are those of the beats of that second (60/rate seconds each, slightly varied).
public actor SimulatedHeartRateMonitor {
    /// The name it advertises unless told otherwise.
    public static let defaultName = "SwiftBLE HRM"
    /// The peripheral manager it publishes on.
    public let manager: PeripheralManager
    /// The advertised name.
    public let name: String
    /// The heart rate now, in beats per minute.
    public private(set) var heartRate: Double = 72
    /// The energy expended since the last reset, in kilojoules.
    public private(set) var energyExpended: UInt16 = 0
    /// The measurements taken so far (notified to the subscribed centrals), latest last; the last 256 are kept.
    public private(set) var sent: [HeartRateMeasurement] = []
    /// How many times the control point reset the energy expended.
    public private(set) var resets = 0
    var generator: StandardSeededGenerator
    var energy = 0.0
    var beatPhase = 0.0
    var leftOverIntervals: [UInt16] = []
    var tasks: [Task<Void, Never>] = []

    /// A monitor on `manager`; `seed` fixes its variation. Call ``start(tick:)``.
    ///
    /// The energy expended starts at `energyExpended` kJ (a session under way; about 0.13 kJ a second is added at
    /// rest, as a resting adult spends).
    public init(manager: PeripheralManager, name: String = SimulatedHeartRateMonitor.defaultName, energyExpended: UInt16 = 0,
                seed: UInt64 = 1) async {
        energy = Double(energyExpended)
        self.energyExpended = energyExpended
        self.manager = manager
        self.name = name
        generator = StandardSeededGenerator(seed: seed)
    }

    /// Publishes the services, advertises, answers the control point and notifies a measurement every `tick`.
    public func start(tick: Duration = .seconds(1)) async throws {
        guard tasks.isEmpty else { return }
        let requests = await manager.requests()
        try await standardPublish([HeartRateService.definition(location: .chest), BatteryService.definition(level: BatteryLevel(clamping: 87)),
                                   DeviceInformationService.definition(.simulated(model: "HRM-1"))], on: manager, name: name)
        tasks.append(Task { [weak self] in
            for await request in requests { if case .application(let asked) = request.kind { await self?.answer(asked) } }
        })
        tasks.append(standardTicker(every: tick) { [weak self] in await self?.step() ?? false })
    }

    /// The control point: 0x01 resets the energy expended, anything else is refused with 0x80.
    func answer(_ request: AttributeRequest) async {
        guard request.characteristic == HeartRateService.controlPoint, case .write(let value, _) = request.kind else {
            return await request.refuse(.requestNotSupported)
        }
        guard value == [HeartRateService.resetEnergyExpended] else { return await request.refuse(HeartRateService.controlPointNotSupported) }
        energy = 0
        energyExpended = 0
        resets += 1
        await request.accept()
    }

    /// One second of the wearer's time: the next rate, energy and beats, notified.
    func step() async -> Bool {
        var measurement = nextMeasurement()
        // Intervals that did not fit last time go first; the ones that do not fit now wait for the next measurement
        // (at the smallest ATT_MTU of the connected centrals).
        measurement.rrIntervals = leftOverIntervals + (measurement.rrIntervals ?? [])
        var length = Int.max
        let centrals = await manager.connectedCentrals
        for central in centrals { length = min(length, await manager.maximumUpdateValueLength(for: central)) }
        let (fitting, leftOver) = measurement.split(maximumLength: length)
        leftOverIntervals = Array(leftOver.suffix(64))
        sent.append(fitting)
        if sent.count > 256 { sent.removeFirst(sent.count - 256) }
        if !centrals.isEmpty { _ = try? await manager.updateValue(fitting.encoded, for: HeartRateService.measurement) }
        return true
    }

    func nextMeasurement() -> HeartRateMeasurement {
        // A random walk of ±3 bpm pulled 10 % of the way back to 72, kept within 50...180.
        let step = Double(Int(generator.next() % 7) - 3)
        heartRate = min(180, max(50, heartRate + step + (72 - heartRate) * 0.1))
        // About 0.1 kJ per beat at rest, more as the rate rises; stays at 0xFFFF once there.
        energy = min(65535, energy + heartRate / 60 * (0.05 + heartRate / 1200))
        energyExpended = UInt16(energy.rounded(.down))
        // The beats of this second: each RR interval is 60/rate s, varied by up to ±2 %.
        var intervals: [UInt16] = []
        beatPhase += heartRate / 60
        while beatPhase >= 1 {
            beatPhase -= 1
            let variation = 1 + (Double(generator.next() % 41) - 20) / 1000
            intervals.append(UInt16(min(65535, (61_440 / heartRate * variation).rounded())))
        }
        return HeartRateMeasurement(beatsPerMinute: UInt16(heartRate.rounded()), sensorContact: .detected, energyExpended: energyExpended,
                                    rrIntervals: intervals)
    }

    /// Stops notifying, answering, advertising and serving (the services are removed).
    public func stop() async {
        for task in tasks { task.cancel() }
        tasks = []
        await standardUnpublish([HeartRateService.uuid, BatteryService.uuid, DeviceInformationService.uuid], on: manager)
    }
}
