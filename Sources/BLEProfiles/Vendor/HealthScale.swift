import BLEWire

/// The streaming health scale's vendor UUIDs (128-bit, this module's choice).
public enum HealthScale {
    /// The scale's vendor service, `7D2E0001-5C3A-4B8E-9F41-5357424C4553`.
    public static let service = BluetoothUUID("7D2E0001-5C3A-4B8E-9F41-5357424C4553") ?? 0
    /// The measurement stream (notify): ``HealthFrame``s cut into chunks of any size,
    /// `7D2E0002-5C3A-4B8E-9F41-5357424C4553`.
    public static let stream = BluetoothUUID("7D2E0002-5C3A-4B8E-9F41-5357424C4553") ?? 0
}

/// This module's health scale reading layout (the tutorials leave it open): the payload of a ``HealthFrame`` of
/// device type ``deviceType`` and command ``command``, 8 bytes little-endian:
///
/// | Bytes | Field                                           |
/// |-------|-------------------------------------------------|
/// | 0–1   | ``sequence``: counts the readings, wrapping     |
/// | 2–5   | ``weightGrams``                                 |
/// | 6–7   | ``impedanceOhms``: body impedance (0: none)     |
public struct HealthScaleReading: WireCodable, Hashable {
    /// The device type of a scale's frames (byte 1).
    public static let deviceType: UInt8 = 0x01
    /// The command of a reading's frames (byte 2).
    public static let command: UInt8 = 0x10

    /// The reading's number.
    public var sequence: UInt16
    /// The weight in grams.
    public var weightGrams: UInt32
    /// The body impedance in ohms (0 when not measured).
    public var impedanceOhms: UInt16

    /// A reading.
    public init(sequence: UInt16, weightGrams: UInt32, impedanceOhms: UInt16) {
        self.sequence = sequence
        self.weightGrams = weightGrams
        self.impedanceOhms = impedanceOhms
    }

    /// Decodes the 8 bytes.
    public init(from reader: inout ByteReader) throws(WireError) {
        sequence = try reader.readUInt16("reading sequence")
        weightGrams = try reader.readUInt32("weight")
        impedanceOhms = try reader.readUInt16("impedance")
    }

    /// Encodes the 8 bytes.
    public func encode(into writer: inout ByteWriter) {
        writer.write(sequence)
        writer.write(weightGrams)
        writer.write(impedanceOhms)
    }

    /// The reading in its frame.
    public var frame: HealthFrame { HealthFrame(deviceType: Self.deviceType, command: Self.command, payload: encoded) }

    /// The reading a frame carries; throws ``WireError`` when the frame is not a scale reading or its payload does
    /// not decode.
    public init(frame: HealthFrame) throws(WireError) {
        guard frame.deviceType == Self.deviceType, frame.command == Self.command else {
            throw WireError(.unknownType, "health frame: device type \(frame.deviceType) command \(frame.command) is not a scale reading")
        }
        try self.init(bytes: frame.payload)
    }
}

/// A central's view of the streaming health scale: its readings, reassembled from notifications cut anywhere.
///
/// ```swift
/// for try await event in try await HealthScaleClient(peripheral: remote).readings() {
///     if case .reading(let reading) = event { print(reading.weightGrams) }
/// }
/// ```
public final class HealthScaleClient: Sendable {
    /// What the stream carries: readings, and what went wrong in between without ending it.
    public enum Event: Sendable, Hashable {
        /// A reading.
        case reading(HealthScaleReading)
        /// Bytes skipped or a frame dropped (garbage, an oversize length, a bad checksum), then resynchronised.
        case framingError(FramingError)
        /// A well-formed frame that is not a reading this client understands.
        case unexpectedFrame(HealthFrame)
    }

    /// The scale.
    public let peripheral: RemotePeripheral
    private let finder: CharacteristicFinder

    /// A client of the scale `peripheral` (connected); characteristics are discovered on first use.
    public init(peripheral: RemotePeripheral) {
        self.peripheral = peripheral
        finder = CharacteristicFinder(peripheral: peripheral)
    }

    /// Subscribes to the stream and returns its events, in order, reassembled by a ``HealthFrameReassembler``
    /// (memory bounded by the largest frame). Framing errors are events, not failures; the stream ends when the link
    /// goes down.
    public func readings() async throws -> AsyncThrowingStream<Event, any Error> {
        let values = try await peripheral.notifications(for: try await finder.characteristic(HealthScale.stream, in: HealthScale.service))
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: Event.self)
        let task = Task {
            var reassembler = HealthFrameReassembler()
            for await value in values {
                for result in reassembler.append(value) {
                    switch result {
                    case .success(let frame):
                        if let reading = try? HealthScaleReading(frame: frame) {
                            continuation.yield(.reading(reading))
                        } else {
                            continuation.yield(.unexpectedFrame(frame))
                        }
                    case .failure(let error):
                        continuation.yield(.framingError(error))
                    }
                }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}

/// A simulated streaming health scale on a peripheral manager (see ``HealthScale``). While a central is subscribed,
/// every tick it takes one to three new readings (weights and impedances from a seeded generator), frames each as a
/// ``HealthFrame``, now and then puts one to four garbage bytes (never the start marker) before a frame, and sends
/// the bytes as notifications cut at seeded random sizes: small ones that split a frame over many notifications,
/// and large ones (up to what the link takes) that carry several frames.
public actor SimulatedHealthScale {
    /// The default advertised name.
    public static let defaultName = "SwiftBLE Scale"
    /// The most readings ``sentReadings`` keeps.
    public static let recordedReadingLimit = 10_000

    /// The peripheral manager underneath.
    public nonisolated let manager: PeripheralManager
    /// The advertised name.
    public nonisolated let name: String
    /// The readings sent, in order (the first ``recordedReadingLimit``).
    public private(set) var sentReadings: [HealthScaleReading] = []
    /// The garbage bytes sent between frames.
    public private(set) var garbageBytesSent = 0
    /// The notifications sent.
    public private(set) var notificationsSent = 0
    /// The notifications that carried bytes of two frames or more.
    public private(set) var notificationsSpanningFrames = 0
    /// The frames that went out over more than one notification.
    public private(set) var framesSplit = 0
    private var generator: SeededGenerator
    private var sequence: UInt16 = 0
    private var weight: UInt32 = 72_400
    private var subscribers: Set<ConnectionHandle> = []
    private var tasks: [Task<Void, Never>] = []

    /// A scale on `manager` (which should publish nothing else), advertising `name`; `seed` fixes its readings and
    /// the way they are cut. Call ``start(tick:)``.
    public init(manager: PeripheralManager, name: String = SimulatedHealthScale.defaultName, seed: UInt64 = 1) async {
        self.manager = manager
        self.name = name
        generator = SeededGenerator(seed: seed)
    }

    /// Publishes the scale's service, advertises its name and service (connectable, again after each connection)
    /// and streams readings every `tick` while a central is subscribed.
    public func start(tick: Duration = .milliseconds(200)) async throws {
        try await manager.add(GATTServiceDefinition(uuid: HealthScale.service, characteristics: [
            GATTCharacteristicDefinition(uuid: HealthScale.stream, properties: .notify, permissions: []),
        ]))
        let requests = await manager.requests()
        try await manager.startAdvertising(name: name, serviceUUIDs: [HealthScale.service], restartAfterConnection: true)
        tasks.append(Task { [weak self] in
            for await request in requests {
                if case .subscription(HealthScale.stream, _, let notify, _) = request.kind { await self?.subscription(request.central.handle, notify) }
            }
        })
        tasks.append(Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: tick)
                guard let self, !Task.isCancelled else { return }
                await self.measure()
            }
        })
    }

    /// Stops streaming (links stay up; the service stays published).
    public func stop() {
        for task in tasks { task.cancel() }
        tasks = []
    }

    private func subscription(_ handle: ConnectionHandle, _ notify: Bool) {
        if notify { subscribers.insert(handle) } else { subscribers.remove(handle) }
    }

    private func random(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + Int(generator.next() % UInt64(range.count))
    }

    /// One tick: new readings, framed, garbage now and then, cut and notified.
    private func measure() async {
        guard !subscribers.isEmpty else { return }
        var bytes: [UInt8] = []
        var frames: [Range<Int>] = []
        for _ in 0..<random(1...3) {
            if random(0...3) == 0 {
                for _ in 0..<random(1...4) {
                    var byte = UInt8(truncatingIfNeeded: generator.next())
                    if byte == HealthFrame.startMarker { byte = 0x00 }
                    bytes.append(byte)
                    garbageBytesSent += 1
                }
            }
            sequence &+= 1
            weight = UInt32(max(40_000, min(150_000, Int(weight) + random(-150...150))))
            let reading = HealthScaleReading(sequence: sequence, weightGrams: weight, impedanceOhms: UInt16(random(450...550)))
            guard let frame = try? reading.frame.encoded() else { continue }
            frames.append(bytes.count..<(bytes.count + frame.count))
            bytes += frame
            if sentReadings.count < Self.recordedReadingLimit { sentReadings.append(reading) }
        }
        var lengths: [Int] = []
        for central in await manager.connectedCentrals where subscribers.contains(central.handle) {
            lengths.append(await manager.maximumUpdateValueLength(for: central))
        }
        let largest = max(1, lengths.min() ?? 20)
        var cuts: [Int] = []
        var end = 0
        while end < bytes.count {
            end = min(bytes.count, end + (random(0...1) == 0 ? random(1...min(6, largest)) : random(1...largest)))
            cuts.append(end)
        }
        framesSplit += frames.filter { frame in cuts.contains { $0 > frame.lowerBound && $0 < frame.upperBound } }.count
        var start = 0
        for end in cuts {
            if frames.filter({ $0.overlaps(start..<end) }).count >= 2 { notificationsSpanningFrames += 1 }
            _ = try? await manager.updateValue(Array(bytes[start..<end]), for: HealthScale.stream)
            notificationsSent += 1
            start = end
        }
    }
}
