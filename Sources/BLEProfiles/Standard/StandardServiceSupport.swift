import BLEWire

/// Why a standard-service client could not do what it was asked.
public typealias StandardServiceError = BLEFailure<StandardServiceErrorCode>

/// The kind of a ``StandardServiceError``: an open struct, so a release may add kinds.
public struct StandardServiceErrorCode: BLEErrorCode {
    private enum Backing: Hashable, Sendable {
        case serviceNotFound(BluetoothUUID)
        case characteristicNotFound(BluetoothUUID)
        case unexpectedResponse([UInt8])
        case recordAccessFailed(RACPResponseCode)
        case timedOut
        case aborted
    }

    private let backing: Backing
    private init(_ backing: Backing) { self.backing = backing }

    /// The peripheral does not publish the service. ``BLEErrorCategory/notFound``.
    public static func serviceNotFound(_ uuid: BluetoothUUID) -> StandardServiceErrorCode { StandardServiceErrorCode(.serviceNotFound(uuid)) }
    /// The service lacks a characteristic the operation needs. ``BLEErrorCategory/notFound``.
    public static func characteristicNotFound(_ uuid: BluetoothUUID) -> StandardServiceErrorCode { StandardServiceErrorCode(.characteristicNotFound(uuid)) }
    /// A control point answered with something other than what the procedure expects (bytes as received).
    /// ``BLEErrorCategory/protocolError``.
    public static func unexpectedResponse(_ bytes: [UInt8]) -> StandardServiceErrorCode { StandardServiceErrorCode(.unexpectedResponse(bytes)) }
    /// A Record Access Control Point procedure ended with this response code. ``BLEErrorCategory/protocolError``.
    public static func recordAccessFailed(_ code: RACPResponseCode) -> StandardServiceErrorCode { StandardServiceErrorCode(.recordAccessFailed(code)) }
    /// No response came in time. ``BLEErrorCategory/timedOut``.
    public static let timedOut = StandardServiceErrorCode(.timedOut)
    /// The procedure was aborted (a Record Access Control Point report stopped by Abort Operation).
    /// ``BLEErrorCategory/cancelled``.
    public static let aborted = StandardServiceErrorCode(.aborted)

    public var category: BLEErrorCategory {
        switch backing {
        case .serviceNotFound, .characteristicNotFound: .notFound
        case .unexpectedResponse, .recordAccessFailed: .protocolError
        case .timedOut: .timedOut
        case .aborted: .cancelled
        }
    }

    /// What went wrong, in words (the reason an error of this code gets by default).
    public var description: String {
        switch backing {
        case .serviceNotFound(let uuid): "the peripheral has no service \(uuid)"
        case .characteristicNotFound(let uuid): "the service has no characteristic \(uuid)"
        case .unexpectedResponse(let bytes): "unexpected control point response \(bytes.hexString())"
        case .recordAccessFailed(let code): "record access failed: \(code)"
        case .timedOut: "no response in time"
        case .aborted: "aborted"
        }
    }

    /// The service or characteristic of ``serviceNotFound(_:)`` and ``characteristicNotFound(_:)``.
    public var uuid: BluetoothUUID? {
        switch backing {
        case .serviceNotFound(let x): x
        case .characteristicNotFound(let x): x
        default: nil
        }
    }

    /// The bytes of ``unexpectedResponse(_:)``.
    public var response: [UInt8]? {
        switch backing {
        case .unexpectedResponse(let x): x
        default: nil
        }
    }

    /// The response code of ``recordAccessFailed(_:)``.
    public var racpResponse: RACPResponseCode? {
        switch backing {
        case .recordAccessFailed(let x): x
        default: nil
        }
    }
}

/// A service discovered on a peripheral with its characteristics: what every standard client starts from.
struct StandardDiscoveredService: Sendable {
    let peripheral: RemotePeripheral
    let characteristics: [GATTCharacteristic]

    static func discover(_ uuid: BluetoothUUID, on peripheral: RemotePeripheral) async throws -> StandardDiscoveredService {
        guard let service = try await peripheral.discoverServices([uuid]).first else { throw StandardServiceError(.serviceNotFound(uuid)) }
        return StandardDiscoveredService(peripheral: peripheral, characteristics: try await peripheral.discoverCharacteristics(for: service))
    }

    func has(_ uuid: BluetoothUUID) -> Bool { characteristics.contains { $0.uuid == uuid } }

    func characteristic(_ uuid: BluetoothUUID) throws(StandardServiceError) -> GATTCharacteristic {
        guard let found = characteristics.first(where: { $0.uuid == uuid }) else { throw StandardServiceError(.characteristicNotFound(uuid)) }
        return found
    }

    func read<T>(_ uuid: BluetoothUUID, _ decode: ([UInt8]) throws -> T) async throws -> T {
        try decode(try await peripheral.readValue(for: try characteristic(uuid)))
    }

    func write(_ value: [UInt8], to uuid: BluetoothUUID) async throws {
        try await peripheral.writeValue(value, for: try characteristic(uuid), type: .withResponse)
    }

    func rawUpdates(_ uuid: BluetoothUUID) async throws -> NotificationStream {
        try await peripheral.notifications(for: try characteristic(uuid))
    }

    /// The characteristic's notifications or indications decoded; the stream ends with the decoding error of the
    /// first malformed value.
    func updates<T: Sendable>(_ uuid: BluetoothUUID, _ decode: @escaping @Sendable ([UInt8]) throws -> T) async throws -> AsyncThrowingStream<T, any Error> {
        standardDecodedStream(try await rawUpdates(uuid), decode)
    }
}

/// `values` decoded; ends with the first decoding error.
func standardDecodedStream<T: Sendable>(_ values: NotificationStream, _ decode: @escaping @Sendable ([UInt8]) throws -> T) -> AsyncThrowingStream<T, any Error> {
    AsyncThrowingStream { continuation in
        let task = Task {
            for await value in values {
                do { continuation.yield(try decode(value)) } catch {
                    continuation.finish(throwing: error)
                    return
                }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
    }
}

/// SplitMix64: the simulators' deterministic source of variation.
struct StandardSeededGenerator: RandomNumberGenerator, Sendable {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Runs `step` every `tick` until cancelled.
func standardTicker(every tick: Duration, _ step: @escaping @Sendable () async -> Bool) -> Task<Void, Never> {
    Task {
        while !Task.isCancelled {
            try? await Task.sleep(for: tick)
            if Task.isCancelled { return }
            guard await step() else { return }
        }
    }
}

/// Publishes `services`, advertises `name` and their UUIDs (connectable, restarted after each connection).
func standardPublish(_ services: [GATTServiceDefinition], on manager: PeripheralManager, name: String) async throws {
    for service in services { try await manager.add(service) }
    try await manager.startAdvertising(name: name, serviceUUIDs: services.map(\.uuid), restartAfterConnection: true)
}

/// Stops advertising and removes `services` (for a simulator's `stop()`).
func standardUnpublish(_ services: [BluetoothUUID], on manager: PeripheralManager) async {
    try? await manager.stopAdvertising()
    for uuid in services { try? await manager.remove(uuid) }
}

/// The ATT application error every standard service's control point answers an unsupported op code with (0x80).
let standardControlPointNotSupported = ATTErrorCode(rawValue: 0x80)

extension WireCodable {
    /// Decodes `bytes` whole (the closure form the clients pass around).
    static func standardDecode(_ bytes: [UInt8]) throws -> Self { try Self(bytes: bytes) }
}
