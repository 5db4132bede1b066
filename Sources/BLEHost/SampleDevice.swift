import BLEProtocols
import BLEWire

/// Built-in sample devices (virtual devices serving realistic values): what `ble serve` runs, what the virtual
/// world of `--hci virtual` is populated with, and what the benchmarks discover. (They move to a profiles module
/// when it exists.)
public enum SampleDevice: String, CaseIterable, Sendable {
    /// Battery, Heart Rate, Device Information and a custom service with a writable value, a 300-byte value and an
    /// encrypted value: the layout of the interop lab peripheral.
    case lab
    /// Battery and Heart Rate only.
    case heartRate = "heart-rate"

    /// The lab device's custom service.
    public static let customService = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF0") ?? 0
    /// Its readable and writable characteristic (both write types).
    public static let customWritable = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF1") ?? 0
    /// Its 300-byte readable characteristic.
    public static let customLong = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF2") ?? 0
    /// Its characteristic that needs an encrypted link to be read.
    public static let customSecret = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF3") ?? 0

    /// The name it advertises by default.
    public var defaultName: String {
        switch self {
        case .lab: "SwiftBLELab"
        case .heartRate: "SwiftBLE HR"
        }
    }

    /// Its GATT database.
    public func database(name: String) -> GATTDatabase {
        var services = [
            GATTServiceDefinition(uuid: 0x180F, characteristics: [
                GATTCharacteristicDefinition(uuid: 0x2A19, properties: [.read, .notify], value: [87]),
            ]),
            GATTServiceDefinition(uuid: 0x180D, characteristics: [
                GATTCharacteristicDefinition(uuid: 0x2A37, properties: .notify, permissions: [], value: [0, 60]),
                GATTCharacteristicDefinition(uuid: 0x2A38, properties: .read, value: [1]),
            ]),
        ]
        if self == .lab {
            services.append(GATTServiceDefinition(uuid: 0x180A, characteristics: [
                GATTCharacteristicDefinition(uuid: 0x2A29, properties: .read, value: Array("swift-ble Lab Inc.".utf8)),
            ]))
            services.append(GATTServiceDefinition(uuid: Self.customService, characteristics: [
                GATTCharacteristicDefinition(uuid: Self.customWritable, properties: [.read, .write, .writeWithoutResponse],
                                             permissions: [.readable, .writeable], value: Array("initial".utf8), userDescription: "Writable"),
                GATTCharacteristicDefinition(uuid: Self.customLong, properties: .read, value: (0..<300).map { UInt8(truncatingIfNeeded: $0) }),
                GATTCharacteristicDefinition(uuid: Self.customSecret, properties: .read, permissions: [.readable, .readEncryptionRequired],
                                             value: Array("top-secret".utf8)),
            ]))
        }
        return GATTDatabase(deviceName: name, appearance: 0x0340, services: services)
    }

    /// Its advertising data (name, Heart Rate and Battery UUIDs) and scan response (manufacturer data).
    public func advertising(name: String) -> HCIHost.AdvertisingOptions {
        var data = AdvertisingData(flags: .leOnlyGeneralDiscoverable, serviceUUIDs: [0x180D, 0x180F])
        data.appendLocalName(name)
        return HCIHost.AdvertisingOptions(data: data, scanResponse: AdvertisingData(
            manufacturerData: ManufacturerData(companyID: .testing, data: Array("scanrsp".utf8))))
    }
}

