import BLEWire

/// Current Time Service 1.1 (0x1805): the device's date and time (read, notified when adjusted, writable) and its
/// local time information.
public enum CurrentTimeService {
    /// The service UUID (0x1805).
    public static let uuid = BluetoothUUID(0x1805)
    /// Current Time (0x2A2B): read, notify, write.
    public static let currentTime = BluetoothUUID(0x2A2B)
    /// Local Time Information (0x2A0F): read.
    public static let localTimeInformation = BluetoothUUID(0x2A0F)
    /// Reference Time Information (0x2A14): read.
    public static let referenceTimeInformation = BluetoothUUID(0x2A14)

    /// The service: Current Time answered by the application (reads computed from its clock, writes checked), Local
    /// Time Information stored, and Reference Time Information answered by the application.
    public static func definition(localTime: LocalTimeInformation) -> GATTServiceDefinition {
        GATTServiceDefinition(uuid: uuid, characteristics: [
            GATTCharacteristicDefinition(uuid: currentTime, properties: [.read, .notify, .write], permissions: [.readable, .writeable],
                                         source: .application),
            GATTCharacteristicDefinition(uuid: localTimeInformation, properties: .read, value: localTime.encoded),
            GATTCharacteristicDefinition(uuid: referenceTimeInformation, properties: .read, source: .application),
        ])
    }
}

/// GATT Specification Supplement (Day of Week, 0x2A09): 1 Monday ... 7 Sunday, 0 unknown; values 8...255 are reserved
/// and kept as sent.
public struct DayOfWeek: RawRepresentable, Sendable, Hashable {
    /// The byte.
    public var rawValue: UInt8
    /// A day from its byte.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Not known (0).
    public static let unknown = DayOfWeek(rawValue: 0)
    /// Monday (1).
    public static let monday = DayOfWeek(rawValue: 1)
    /// Tuesday (2).
    public static let tuesday = DayOfWeek(rawValue: 2)
    /// Wednesday (3).
    public static let wednesday = DayOfWeek(rawValue: 3)
    /// Thursday (4).
    public static let thursday = DayOfWeek(rawValue: 4)
    /// Friday (5).
    public static let friday = DayOfWeek(rawValue: 5)
    /// Saturday (6).
    public static let saturday = DayOfWeek(rawValue: 6)
    /// Sunday (7).
    public static let sunday = DayOfWeek(rawValue: 7)
}

extension DateTime {
    /// The day of the week of this (Gregorian) date, or ``DayOfWeek/unknown`` when the year, month or day is not
    /// known.
    public var dayOfWeek: DayOfWeek {
        guard year != 0, (1...12).contains(month), day != 0 else { return .unknown }
        let offsets = [0, 3, 2, 5, 0, 3, 5, 1, 4, 6, 2, 4]
        let y = Int(year) - (month < 3 ? 1 : 0)
        let sundayBased = (y + y / 4 - y / 100 + y / 400 + offsets[Int(month) - 1] + Int(day)) % 7
        return DayOfWeek(rawValue: sundayBased == 0 ? 7 : UInt8(sundayBased))
    }
}

/// Current Time Service 1.1, 3.1 (Current Time, 0x2A2B): Exact Time 256 (Date Time, Day of Week, Fractions256) and
/// the adjust reason, 10 bytes.
public struct CurrentTime: Sendable, Hashable, WireCodable {
    /// Why the time was last adjusted. Reserved bits 4–7 are kept as sent.
    public struct AdjustReason: OptionSet, Sendable, Hashable {
        /// The byte.
        public var rawValue: UInt8
        /// Reasons from their bits.
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// Set by hand (bit 0).
        public static let manualTimeUpdate = AdjustReason(rawValue: 0x01)
        /// Set from an external reference (bit 1).
        public static let externalReferenceTimeUpdate = AdjustReason(rawValue: 0x02)
        /// The time zone changed (bit 2).
        public static let timeZoneChange = AdjustReason(rawValue: 0x04)
        /// Daylight saving time changed (bit 3).
        public static let dstChange = AdjustReason(rawValue: 0x08)
    }

    /// The date and time.
    public var dateTime: DateTime
    /// The day of the week.
    public var dayOfWeek: DayOfWeek
    /// Fractions of a second, in 1/256 s.
    public var fractions256: UInt8
    /// Why the time was last adjusted.
    public var adjustReason: AdjustReason

    /// Creates a current time; the day of week defaults to the date's.
    public init(dateTime: DateTime, dayOfWeek: DayOfWeek? = nil, fractions256: UInt8 = 0, adjustReason: AdjustReason = []) {
        self.dateTime = dateTime
        self.dayOfWeek = dayOfWeek ?? dateTime.dayOfWeek
        self.fractions256 = fractions256
        self.adjustReason = adjustReason
    }

    /// Decodes the 10 bytes; throws ``WireError`` (truncated) when short, (invalid value) for an impossible date or
    /// time.
    public init(from reader: inout ByteReader) throws(WireError) {
        dateTime = try DateTime(from: &reader)
        dayOfWeek = DayOfWeek(rawValue: try reader.readUInt8("Current Time day of week"))
        fractions256 = try reader.readUInt8("Current Time fractions256")
        adjustReason = AdjustReason(rawValue: try reader.readUInt8("Current Time adjust reason"))
    }

    /// Appends the 10 bytes.
    public func encode(into writer: inout ByteWriter) {
        dateTime.encode(into: &writer)
        writer.write(dayOfWeek.rawValue)
        writer.write(fractions256)
        writer.write(adjustReason.rawValue)
    }
}

/// Current Time Service 1.1, 3.2 (Local Time Information, 0x2A0F): the time zone (offset from UTC in 15-minute
/// steps, −48...56, −128 unknown) and the daylight saving offset (0 standard, 2 half an hour, 4 one hour, 8 two hours,
/// 255 unknown), 2 bytes. Reserved values are kept as sent.
public struct LocalTimeInformation: Sendable, Hashable, WireCodable {
    /// The time zone in 15-minute steps from UTC; −128 when not known.
    public var timeZone: Int8
    /// The daylight saving offset in 15-minute steps; 255 when not known.
    public var dstOffset: UInt8

    /// Creates local time information from raw fields.
    public init(timeZone: Int8, dstOffset: UInt8) {
        self.timeZone = timeZone
        self.dstOffset = dstOffset
    }

    /// Local time information for a UTC offset in minutes (rounded to 15-minute steps, −720...840) and a daylight
    /// saving offset in minutes (0, 30, 60 or 120).
    public init(utcOffsetMinutes: Int, dstMinutes: Int = 0) {
        timeZone = Int8(max(-48, min(56, (Double(utcOffsetMinutes) / 15).rounded())))
        dstOffset = UInt8(max(0, min(8, dstMinutes / 15)))
    }

    /// The time zone's offset from UTC in minutes, or `nil` when unknown or reserved.
    public var utcOffsetMinutes: Int? { (-48...56).contains(timeZone) ? Int(timeZone) * 15 : nil }
    /// The daylight saving offset in minutes, or `nil` when unknown or reserved.
    public var dstMinutes: Int? { [0, 2, 4, 8].contains(dstOffset) ? Int(dstOffset) * 15 : nil }

    /// Decodes the 2 bytes.
    public init(from reader: inout ByteReader) throws(WireError) {
        timeZone = try reader.readInt8("Local Time Information time zone")
        dstOffset = try reader.readUInt8("Local Time Information DST offset")
    }

    /// Appends the 2 bytes.
    public func encode(into writer: inout ByteWriter) {
        writer.write(timeZone)
        writer.write(dstOffset)
    }
}

/// Current Time Service 1.1, 3.3 (Reference Time Information, 0x2A14): where the time came from, how accurate it is
/// and how long ago it was last set from the reference, 4 bytes. Reserved values are kept as sent.
public struct ReferenceTimeInformation: Sendable, Hashable, WireCodable {
    /// The kind of reference.
    public struct Source: RawRepresentable, Sendable, Hashable {
        /// The byte.
        public var rawValue: UInt8
        /// A source from its byte.
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// Unknown (0).
        public static let unknown = Source(rawValue: 0)
        /// Network Time Protocol (1).
        public static let networkTimeProtocol = Source(rawValue: 1)
        /// GPS (2).
        public static let gps = Source(rawValue: 2)
        /// A radio time signal (3).
        public static let radioTimeSignal = Source(rawValue: 3)
        /// Set by hand (4).
        public static let manual = Source(rawValue: 4)
        /// An atomic clock (5).
        public static let atomicClock = Source(rawValue: 5)
        /// A cellular network (6).
        public static let cellularNetwork = Source(rawValue: 6)
    }
    /// The kind of reference.
    public var source: Source
    /// The drift since the last update in steps of 1/8 s (254: more than 31.625 s, 255: unknown).
    public var accuracy: UInt8
    /// Whole days since the last update (255: 255 days or more).
    public var daysSinceUpdate: UInt8
    /// Hours since the last update beyond the days, 0...23 (255 when the days are 255).
    public var hoursSinceUpdate: UInt8

    /// Creates reference time information from its fields.
    public init(source: Source, accuracy: UInt8, daysSinceUpdate: UInt8 = 0, hoursSinceUpdate: UInt8 = 0) {
        self.source = source
        self.accuracy = accuracy
        self.daysSinceUpdate = daysSinceUpdate
        self.hoursSinceUpdate = hoursSinceUpdate
    }

    /// The drift in seconds, or `nil` when out of range or unknown.
    public var accuracySeconds: Double? { accuracy < 254 ? Double(accuracy) / 8 : nil }

    /// Decodes the 4 bytes.
    public init(from reader: inout ByteReader) throws(WireError) {
        source = Source(rawValue: try reader.readUInt8("Reference Time Information source"))
        accuracy = try reader.readUInt8("Reference Time Information accuracy")
        daysSinceUpdate = try reader.readUInt8("Reference Time Information days since update")
        hoursSinceUpdate = try reader.readUInt8("Reference Time Information hours since update")
    }

    /// Appends the 4 bytes.
    public func encode(into writer: inout ByteWriter) {
        writer.write(source.rawValue)
        writer.write(accuracy)
        writer.write(daysSinceUpdate)
        writer.write(hoursSinceUpdate)
    }
}

/// A Current Time Service client on a connected peripheral.
public struct CurrentTimeClient: Sendable {
    let service: StandardDiscoveredService

    /// Discovers the Current Time Service of `peripheral`; throws ``StandardServiceError/serviceNotFound(_:)`` when
    /// it has none.
    public init(peripheral: RemotePeripheral) async throws {
        service = try await .discover(CurrentTimeService.uuid, on: peripheral)
    }

    /// Reads the current time.
    public func readCurrentTime() async throws -> CurrentTime {
        try await service.read(CurrentTimeService.currentTime, CurrentTime.standardDecode)
    }

    /// Subscribes to the current time (notified when the device's time is adjusted).
    public func currentTimeUpdates() async throws -> AsyncThrowingStream<CurrentTime, any Error> {
        try await service.updates(CurrentTimeService.currentTime, CurrentTime.standardDecode)
    }

    /// Sets the device's time (a device may refuse, for example with ATT 0x80 "Data field ignored").
    public func setCurrentTime(_ time: CurrentTime) async throws {
        try await service.write(time.encoded, to: CurrentTimeService.currentTime)
    }

    /// Reads the reference time information (``StandardServiceError/characteristicNotFound(_:)`` when the device
    /// does not publish it).
    public func readReferenceTimeInformation() async throws -> ReferenceTimeInformation {
        try await service.read(CurrentTimeService.referenceTimeInformation, ReferenceTimeInformation.standardDecode)
    }

    /// Reads the local time information.
    public func readLocalTimeInformation() async throws -> LocalTimeInformation {
        try await service.read(CurrentTimeService.localTimeInformation, LocalTimeInformation.standardDecode)
    }
}

/// A simulated clock (Current Time and Device Information services, UTC+1 standard time): each tick is one second of
/// its time; it gains a second every fourth tick and every tenth tick corrects itself from its NTP reference,
/// notifying the new time (its Reference Time Information tells the drift since, in 1/8 s). Writes set its time by
/// hand (refused with Value Not Allowed when malformed; the reference then says "manual") and are notified to the
/// other subscribed centrals.
public actor SimulatedClock {
    /// The name it advertises unless told otherwise.
    public static let defaultName = "SwiftBLE Clock"
    /// The local time information it publishes.
    public static let localTime = LocalTimeInformation(utcOffsetMinutes: 60)
    /// The peripheral manager it publishes on.
    public let manager: PeripheralManager
    /// The advertised name.
    public let name: String
    /// The time now.
    public private(set) var now: CurrentTime
    var ticks = 0
    var drift = 0
    var ticksSinceUpdate = 0
    var source = ReferenceTimeInformation.Source.networkTimeProtocol

    /// What its Reference Time Information says now.
    public var reference: ReferenceTimeInformation {
        let hours = ticksSinceUpdate / 3600
        let days = hours / 24
        return ReferenceTimeInformation(source: source, accuracy: UInt8(min(253, drift * 8)), daysSinceUpdate: UInt8(min(255, days)),
                                        hoursSinceUpdate: days >= 255 ? 255 : UInt8(hours % 24))
    }
    var ticker: Task<Void, Never>?
    var listener: Task<Void, Never>?

    /// A clock on `manager` starting at `time`. Call ``start(tick:)``.
    public init(manager: PeripheralManager, name: String = SimulatedClock.defaultName,
                time: DateTime = DateTime(year: 2026, month: 11, day: 23, hours: 22)) async {
        self.manager = manager
        self.name = name
        now = CurrentTime(dateTime: time)
    }

    /// Publishes the services, advertises, answers reads and writes and advances one second every `tick`.
    public func start(tick: Duration = .seconds(1)) async throws {
        guard ticker == nil else { return }
        let requests = await manager.requests()
        try await standardPublish([CurrentTimeService.definition(localTime: Self.localTime), DeviceInformationService.definition(.simulated(model: "CLOCK-1"))],
                                  on: manager, name: name)
        listener = Task { [weak self] in
            for await request in requests { if case .application(let asked) = request.kind { await self?.answer(asked) } }
        }
        ticker = standardTicker(every: tick) { [weak self] in await self?.step() ?? false }
    }

    func step() async -> Bool {
        ticks += 1
        // Gains a second every fourth tick, until the reference corrects it every tenth.
        let gained = ticks % 4 == 0 ? 1 : 0
        drift += gained
        now = CurrentTime(dateTime: now.dateTime.adding(seconds: 1 + gained), adjustReason: now.adjustReason)
        ticksSinceUpdate += 1
        if ticks % 10 == 0 {
            now = CurrentTime(dateTime: now.dateTime.adding(seconds: -drift), adjustReason: .externalReferenceTimeUpdate)
            drift = 0
            ticksSinceUpdate = 0
            source = .networkTimeProtocol
            _ = try? await manager.updateValue(now.encoded, for: CurrentTimeService.currentTime)
        }
        return true
    }

    func answer(_ request: AttributeRequest) async {
        if request.characteristic == CurrentTimeService.referenceTimeInformation, case .read(let offset) = request.kind {
            let value = reference.encoded
            guard offset <= value.count else { return await request.refuse(.invalidOffset) }
            return await request.respond(with: Array(value[offset...]))
        }
        guard request.characteristic == CurrentTimeService.currentTime else { return await request.refuse(.requestNotSupported) }
        switch request.kind {
        case .read(let offset):
            let value = now.encoded
            guard offset <= value.count else { return await request.refuse(.invalidOffset) }
            await request.respond(with: Array(value[offset...]))
        case .write(let value, _):
            guard value.count == 10 else { return await request.refuse(.invalidAttributeValueLength) }
            guard let time = try? CurrentTime(bytes: value) else { return await request.refuse(.valueNotAllowed) }
            now = CurrentTime(dateTime: time.dateTime, fractions256: time.fractions256, adjustReason: .manualTimeUpdate)
            drift = 0
            ticksSinceUpdate = 0
            source = .manual
            await request.accept()
            let others = await manager.connectedCentrals.filter { $0.handle != request.central.handle }
            if !others.isEmpty { _ = try? await manager.updateValue(now.encoded, for: CurrentTimeService.currentTime, onSubscribedCentrals: others) }
        case .preparedWrites:
            await request.refuse(.requestNotSupported)
        }
    }

    /// Stops the clock, answering, advertising and serving (the services are removed).
    public func stop() async {
        ticker?.cancel()
        ticker = nil
        listener?.cancel()
        listener = nil
        await standardUnpublish([CurrentTimeService.uuid, DeviceInformationService.uuid], on: manager)
    }
}
