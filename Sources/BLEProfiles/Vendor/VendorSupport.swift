import BLEWire
/// What a vendor device client found missing or wrong on the peripheral.
public typealias VendorDeviceError = BLEFailure<VendorDeviceErrorCode>

/// The kind of a ``VendorDeviceError``: an open struct, so a release may add kinds.
public struct VendorDeviceErrorCode: BLEErrorCode {
    private enum Backing: Hashable, Sendable {
        case missingCharacteristic(BluetoothUUID, BluetoothUUID)
    }

    private let backing: Backing
    private init(_ backing: Backing) { self.backing = backing }

    /// The peripheral does not publish this characteristic in this service. ``BLEErrorCategory/notFound``.
    public static func missingCharacteristic(_ characteristic: BluetoothUUID, service: BluetoothUUID) -> VendorDeviceErrorCode { VendorDeviceErrorCode(.missingCharacteristic(characteristic, service)) }

    public var category: BLEErrorCategory {
        switch backing {
        case .missingCharacteristic: .notFound
        }
    }

    /// The kind, with its UUIDs.
    public var description: String {
        switch backing {
        case .missingCharacteristic(let characteristic, let service): "missingCharacteristic(\(characteristic), service: \(service))"
        }
    }

    /// The characteristic of ``missingCharacteristic(_:service:)``.
    public var characteristic: BluetoothUUID? {
        if case .missingCharacteristic(let x, _) = backing { x } else { nil }
    }

    /// The service of ``missingCharacteristic(_:service:)``.
    public var service: BluetoothUUID? {
        if case .missingCharacteristic(_, let x) = backing { x } else { nil }
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
