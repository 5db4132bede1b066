/// A central's view of a fitness band (the Mi Band 1 layout, see ``FitnessBand``): reads of its step count,
/// battery and device information, their notifications as one typed stream, and vibration.
///
/// ```swift
/// let band = FitnessBandClient(peripheral: remote)
/// print(try await band.steps())
/// try await band.vibrate()
/// for try await event in try await band.events() { print(event) }
/// ```
public final class FitnessBandClient: Sendable {
    /// What the band reports.
    public enum Event: Sendable, Hashable {
        /// The step count (read or notified).
        case steps(UInt32)
        /// The battery (read or notified).
        case battery(FitnessBandBattery)
        /// The device information (read when the stream starts).
        case deviceInfo(FitnessBandDeviceInfo)
    }

    /// The band.
    public let peripheral: RemotePeripheral
    private let finder: CharacteristicFinder

    /// A client of the band `peripheral` (connected); characteristics are discovered on first use.
    public init(peripheral: RemotePeripheral) {
        self.peripheral = peripheral
        finder = CharacteristicFinder(peripheral: peripheral)
    }

    /// Reads the step count.
    public func steps() async throws -> UInt32 {
        try FitnessBandSteps(bytes: try await read(FitnessBand.steps)).count
    }

    /// Reads the battery.
    public func battery() async throws -> FitnessBandBattery {
        try FitnessBandBattery(bytes: try await read(FitnessBand.battery))
    }

    /// Reads the device information.
    public func deviceInfo() async throws -> FitnessBandDeviceInfo {
        try FitnessBandDeviceInfo(bytes: try await read(FitnessBand.deviceInfo))
    }

    /// Makes the band vibrate (Alert Level High Alert by default, or `SHAKE`), or stop with ``FitnessBandAlert/stop``:
    /// a write without response, as the band expects.
    public func vibrate(_ alert: FitnessBandAlert = .high) async throws {
        let characteristic = try await finder.characteristic(FitnessBand.alertLevel, in: FitnessBand.immediateAlertService)
        try await peripheral.writeValue(alert.bytes, for: characteristic, type: .withoutResponse)
    }

    /// Stops the vibration (Alert Level No Alert).
    public func stopVibrating() async throws { try await vibrate(.stop) }

    /// The band's events: its device information first, then each notified step count and battery value. The stream
    /// throws (and ends) when the band sends a value that does not decode, and ends when the link goes down.
    public func events() async throws -> AsyncThrowingStream<Event, any Error> {
        let info = try await deviceInfo()
        let steps = try await peripheral.notifications(for: try await finder.characteristic(FitnessBand.steps, in: FitnessBand.service))
        let battery = try await peripheral.notifications(for: try await finder.characteristic(FitnessBand.battery, in: FitnessBand.service))
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: Event.self)
        continuation.yield(.deviceInfo(info))
        let stepsTask = Task {
            do {
                for await value in steps { continuation.yield(.steps(try FitnessBandSteps(bytes: value).count)) }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        let batteryTask = Task {
            do {
                for await value in battery { continuation.yield(.battery(try FitnessBandBattery(bytes: value))) }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in
            stepsTask.cancel()
            batteryTask.cancel()
        }
        return stream
    }

    private func read(_ uuid: BluetoothUUID) async throws -> [UInt8] {
        try await peripheral.readValue(for: try await finder.characteristic(uuid, in: FitnessBand.service))
    }
}
