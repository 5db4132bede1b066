import BLEHost
import BLEProtocols
import BLEWire

/// Built-in sample devices (virtual devices serving realistic values): what `ble serve` runs, what the embedded
/// world (``EmbeddedWorld``) is populated with, and what the benchmarks discover. ``SamplePeripheral`` runs one on
/// the public peripheral API; `BLEProfiles` adds the standard and vendor devices beside them.
public enum SampleDevice: String, CaseIterable, Sendable {
    /// Battery, Heart Rate, Device Information and a custom service for testing centrals: a writable value, a
    /// 300-byte value, an encrypted value, a 512-byte writable value, a notification burst, indications and a
    /// control point that makes the peripheral disconnect. The layout of the interop lab peripheral.
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
    /// Its 512-byte (the longest an attribute can be) readable and writable characteristic, for long reads and
    /// long (prepared) writes.
    public static let customLongWritable = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF4") ?? 0
    /// Its burst characteristic: a central that subscribes to notifications is sent ``burstCount`` numbered
    /// notifications at once (see ``burstValue(_:)``).
    public static let customBurst = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF5") ?? 0
    /// Its indicating characteristic: a central that subscribes is sent ``indicationCount`` numbered indications,
    /// each after the previous one was confirmed.
    public static let customIndicate = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF6") ?? 0
    /// Its control point: writing `disconnect` (UTF-8) makes the peripheral disconnect the writer's link.
    public static let customControl = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF7") ?? 0

    /// Its counter, answered by the application: each read returns the number of reads so far (UInt32,
    /// little-endian), counted over all centrals.
    public static let customCounter = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF8") ?? 0
    /// Its guarded value, answered by the application: a write of `refuse` (UTF-8) is refused with application
    /// error 0x80 and changes nothing; any other write is kept and read back. A reliable (prepared) write set with a
    /// part writing `refuse` to it is refused whole (0x80): none of the set's values is written.
    public static let customGuarded = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF9") ?? 0
    /// Its slow value, answered by the application ``slowAnswerDelay`` after each write.
    public static let customSlow = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEFA") ?? 0
    /// …DEFB: "authenticated", readable only over a link encrypted with an authenticated (MITM-protected) key.
    public static let customAuthenticated = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEFB") ?? 0
    /// The application error the guarded value refuses with.
    public static let refusalError = ATTErrorCode(rawValue: 0x80)
    /// How long the slow value takes to answer a write.
    public static let slowAnswerDelay: Duration = .milliseconds(500)

    /// The 300-byte value of ``customLong``: byte i is i mod 256.
    public static let longValue: [UInt8] = (0..<300).map { UInt8(truncatingIfNeeded: $0) }
    /// The initial 512-byte value of ``customLongWritable``: byte i is (7·i + 3) mod 256.
    public static let longWritableValue: [UInt8] = (0..<512).map { UInt8(truncatingIfNeeded: 7 &* $0 &+ 3) }
    /// Notifications in a burst.
    public static let burstCount = 200
    /// Indications sent to a subscriber.
    public static let indicationCount = 5
    /// Notification `index` of a burst: the index (UInt16, little-endian) then bytes (index + k) mod 256, 200 bytes in
    /// all (a link's MTU may cut it shorter).
    public static func burstValue(_ index: Int) -> [UInt8] {
        [UInt8(truncatingIfNeeded: index), UInt8(truncatingIfNeeded: index >> 8)] + (2..<200).map { UInt8(truncatingIfNeeded: index &+ $0) }
    }

    /// The name it advertises by default.
    public var defaultName: String {
        switch self {
        case .lab: "SwiftBLELab"
        case .heartRate: "SwiftBLE HR"
        }
    }

    /// Its GATT database.
    public func database(name: String) -> GATTDatabase {
        GATTDatabase(deviceName: name, appearance: 0x0340, services: services)
    }

    /// Its services, after the GAP and GATT services.
    public var services: [GATTServiceDefinition] {
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
                GATTCharacteristicDefinition(uuid: Self.customLong, properties: .read, value: Self.longValue),
                GATTCharacteristicDefinition(uuid: Self.customSecret, properties: .read, permissions: [.readable, .readEncryptionRequired],
                                             value: Array("top-secret".utf8)),
                GATTCharacteristicDefinition(uuid: Self.customLongWritable, properties: [.read, .write],
                                             permissions: [.readable, .writeable], value: Self.longWritableValue),
                GATTCharacteristicDefinition(uuid: Self.customBurst, properties: .notify, permissions: [], value: [0, 0]),
                GATTCharacteristicDefinition(uuid: Self.customIndicate, properties: .indicate, permissions: [], value: [0, 0]),
                GATTCharacteristicDefinition(uuid: Self.customControl, properties: [.write, .writeWithoutResponse],
                                             permissions: .writeable, value: []),
                GATTCharacteristicDefinition(uuid: Self.customCounter, properties: .read, source: .application),
                GATTCharacteristicDefinition(uuid: Self.customGuarded, properties: [.read, .write], permissions: [.readable, .writeable],
                                             source: .application),
                GATTCharacteristicDefinition(uuid: Self.customSlow, properties: [.read, .write], permissions: [.readable, .writeable],
                                             source: .application),
                GATTCharacteristicDefinition(uuid: Self.customAuthenticated, properties: .read,
                                             permissions: [.readable, .readAuthenticationRequired], value: Array("authenticated".utf8)),
            ]))
        }
        return services
    }

    /// Its advertising data and scan response, laid out by the stack's one rule (``AdvertisingData/layout(name:serviceUUIDs:txPowerLevel:manufacturerData:scanResponse:)``):
    /// Heart Rate and Battery UUIDs, manufacturer data `lab` for the lab device and the name in the packet (the name
    /// moves to the scan response when it does not fit), and manufacturer data `scanrsp` in the scan response: a
    /// scanner shows both manufacturer data structures only when it merges the scan response.
    public func advertising(name: String) -> HCIHost.AdvertisingOptions {
        let scanResponse = AdvertisingData(manufacturerData: ManufacturerData(companyID: .testing, data: Array("scanrsp".utf8)))
        let layout = AdvertisingData.layout(
            name: name, serviceUUIDs: [0x180D, 0x180F],
            manufacturerData: self == .lab ? ManufacturerData(companyID: .testing, data: Array("lab".utf8)) : nil,
            scanResponse: scanResponse.structures)
        return HCIHost.AdvertisingOptions(data: layout.data, scanResponse: layout.scanResponse)
    }
}

