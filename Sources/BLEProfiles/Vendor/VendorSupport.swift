import BLEWire
/// What a vendor device client found missing or wrong on the peripheral.
public struct VendorDeviceError: BLEError {
    /// What went wrong.
    public enum Code: Sendable, Hashable {
        /// The peripheral does not publish this characteristic in this service.
        case missingCharacteristic(BluetoothUUID, service: BluetoothUUID)
    }

    /// What went wrong.
    public var code: Code
    /// A human-readable explanation.
    public var reason: String
    /// The source file that raised the error.
    public var file: String
    /// The source line that raised the error.
    public var line: Int

    /// Creates an error.
    public init(_ code: Code, _ reason: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.reason = reason
        self.file = file
        self.line = line
    }
}

/// Finds a characteristic of a service on a peripheral, remembering what it found.
actor CharacteristicFinder {
    let peripheral: RemotePeripheral
    private var found: [BluetoothUUID: GATTCharacteristic] = [:]

    init(peripheral: RemotePeripheral) { self.peripheral = peripheral }

    func characteristic(_ uuid: BluetoothUUID, in service: BluetoothUUID) async throws -> GATTCharacteristic {
        if let characteristic = found[uuid] { return characteristic }
        guard let published = try await peripheral.discoverServices([service]).first,
              let characteristic = try await peripheral.discoverCharacteristics([uuid], for: published).first else {
            throw VendorDeviceError(.missingCharacteristic(uuid, service: service),
                                    "the peripheral has no characteristic \(uuid) in service \(service)")
        }
        found[uuid] = characteristic
        return characteristic
    }
}

/// SplitMix64: the simulators' seeded, deterministic source of changing values.
struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
