import BLE
import Foundation

/// A Bluetooth UUID, as CoreBluetooth's `CBUUID`: 16-bit, 32-bit or 128-bit.
///
/// A 16-bit or 32-bit UUID stands for its full 128-bit form on the Bluetooth base UUID
/// (`0000xxxx-0000-1000-8000-00805F9B34FB`), so `CBUUID(string: "180F")` equals
/// `CBUUID(string: "0000180F-0000-1000-8000-00805F9B34FB")`, hashes the same, and both print `"180F"`.
/// Immutable, so it may be shared between threads.
public final class CBUUID: NSObject, NSCopying, @unchecked Sendable {
    /// The UUID in the BLE module's representation (always the full 128-bit value).
    public let bluetoothUUID: BluetoothUUID

    /// Wraps a BLE module UUID.
    public init(_ uuid: BluetoothUUID) {
        bluetoothUUID = uuid
        super.init()
    }

    /// Creates a UUID from its text: 4 hex digits (16-bit, `"180F"`), 8 hex digits (32-bit) or the 36-character
    /// 128-bit form (`"12345678-1234-5678-1234-56789ABCDEF0"`), in either case.
    ///
    /// Like CoreBluetooth, which raises an exception for a malformed string, a string in none of these forms is a
    /// programming error and stops the program; use ``init(validating:)`` for text that comes from outside.
    public convenience init(string theString: String) {
        guard let uuid = BluetoothUUID(theString) else {
            preconditionFailure("CBUUID(string:): \"\(theString)\" is not a 16-, 32- or 128-bit UUID string")
        }
        self.init(uuid)
    }

    /// Creates a UUID from its text as ``init(string:)`` does, or `nil` when the text is not a UUID (an addition for
    /// text that comes from outside the program; CoreBluetooth has no such initializer).
    public convenience init?(validating string: String) {
        guard let uuid = BluetoothUUID(string) else { return nil }
        self.init(uuid)
    }

    /// Creates a UUID from 2, 4 or 16 bytes, most significant byte first (as ``data`` gives them).
    ///
    /// Like CoreBluetooth, other lengths are a programming error and stop the program.
    public convenience init(data theData: Data) {
        let bytes = [UInt8](theData)
        let uuid: BluetoothUUID? = switch bytes.count {
        case 2: BluetoothUUID(UInt16(bytes[0]) << 8 | UInt16(bytes[1]))
        case 4: BluetoothUUID(uint32: bytes.reduce(0) { $0 << 8 | UInt32($1) })
        case 16: BluetoothUUID(bigEndian: bytes)
        default: nil
        }
        guard let uuid else { preconditionFailure("CBUUID(data:): \(bytes.count) byte(s); expected 2, 4 or 16") }
        self.init(uuid)
    }

    /// Creates a 128-bit UUID from a Foundation `UUID`.
    public convenience init(nsuuid theUUID: UUID) {
        let u = theUUID.uuid
        let bytes = [u.0, u.1, u.2, u.3, u.4, u.5, u.6, u.7, u.8, u.9, u.10, u.11, u.12, u.13, u.14, u.15]
        // Sixteen bytes always make a UUID.
        self.init(BluetoothUUID(bigEndian: bytes) ?? BluetoothUUID(0))
    }

    /// The UUID as CoreBluetooth prints it: 4 uppercase hex digits for a 16-bit UUID (`"180F"`), 8 for a 32-bit
    /// one, the uppercase 36-character form otherwise.
    public var uuidString: String { bluetoothUUID.uuidString }

    /// The UUID's bytes, most significant first: 2 for a 16-bit UUID, 4 for a 32-bit one, 16 otherwise.
    public var data: Data {
        let full = bluetoothUUID.bigEndianBytes
        if bluetoothUUID.uint16 != nil { return Data(full[2..<4]) }
        if bluetoothUUID.uint32 != nil { return Data(full[0..<4]) }
        return Data(full)
    }

    /// Two UUIDs are equal when their 128-bit forms are.
    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? CBUUID else { return false }
        return other.bluetoothUUID == bluetoothUUID
    }

    /// A hash of the 128-bit form (equal UUIDs hash equally, whatever form they were written in).
    public override var hash: Int {
        var hasher = Hasher()
        hasher.combine(bluetoothUUID)
        return hasher.finalize()
    }

    /// The UUID string (``uuidString``).
    public override var description: String { uuidString }

    /// Returns `self`: a `CBUUID` is immutable.
    public func copy(with zone: NSZone? = nil) -> Any { self }
}

/// The 16-bit UUID string of the Characteristic Extended Properties descriptor (0x2900).
public let CBUUIDCharacteristicExtendedPropertiesString = "2900"
/// The 16-bit UUID string of the Characteristic User Description descriptor (0x2901).
public let CBUUIDCharacteristicUserDescriptionString = "2901"
/// The 16-bit UUID string of the Client Characteristic Configuration descriptor (0x2902).
public let CBUUIDClientCharacteristicConfigurationString = "2902"
/// The 16-bit UUID string of the Server Characteristic Configuration descriptor (0x2903).
public let CBUUIDServerCharacteristicConfigurationString = "2903"
/// The 16-bit UUID string of the Characteristic Presentation Format descriptor (0x2904).
public let CBUUIDCharacteristicFormatString = "2904"
/// The 16-bit UUID string of the Characteristic Aggregate Format descriptor (0x2905).
public let CBUUIDCharacteristicAggregateFormatString = "2905"
/// The 16-bit UUID string of the Valid Range descriptor (0x2906).
public let CBUUIDCharacteristicValidRangeString = "2906"
/// The 16-bit UUID string of the Observation Schedule descriptor (0x2910).
public let CBUUIDCharacteristicObservationScheduleString = "2910"
/// The UUID string of Apple's characteristic that holds the PSM of a peripheral's published L2CAP channel (a
/// `UInt16`, little-endian), which a central reads before ``CBPeripheral/openL2CAPChannel(_:)``.
public let CBUUIDL2CAPPSMCharacteristicString = "ABDD3056-28FA-441D-A470-55A75A52553A"

/// The Generic Access service (0x1800); a macOS constant Apple deprecated.
@available(*, deprecated, message: "use CBUUID(string: \"1800\")")
public let CBUUIDGenericAccessProfileString = "1800"
/// The Generic Attribute service (0x1801); a macOS constant Apple deprecated.
@available(*, deprecated, message: "use CBUUID(string: \"1801\")")
public let CBUUIDGenericAttributeProfileString = "1801"
/// The Device Name characteristic (0x2A00); a macOS constant Apple deprecated.
@available(*, deprecated, message: "use CBUUID(string: \"2A00\")")
public let CBUUIDDeviceNameString = "2A00"
/// The Appearance characteristic (0x2A01); a macOS constant Apple deprecated.
@available(*, deprecated, message: "use CBUUID(string: \"2A01\")")
public let CBUUIDAppearanceString = "2A01"
/// The Peripheral Privacy Flag characteristic (0x2A02); a macOS constant Apple deprecated.
@available(*, deprecated, message: "use CBUUID(string: \"2A02\")")
public let CBUUIDPeripheralPrivacyFlagString = "2A02"
/// The Reconnection Address characteristic (0x2A03); a macOS constant Apple deprecated.
@available(*, deprecated, message: "use CBUUID(string: \"2A03\")")
public let CBUUIDReconnectionAddressString = "2A03"
/// The Peripheral Preferred Connection Parameters characteristic (0x2A04); a macOS constant Apple deprecated.
@available(*, deprecated, message: "use CBUUID(string: \"2A04\")")
public let CBUUIDPeripheralPreferredConnectionParametersString = "2A04"
/// The Service Changed characteristic (0x2A05); a macOS constant Apple deprecated.
@available(*, deprecated, message: "use CBUUID(string: \"2A05\")")
public let CBUUIDServiceChangedString = "2A05"
