import BLE
import Foundation

/// The state of a manager's Bluetooth adapter, with CoreBluetooth's raw values.
public enum CBManagerState: Int, Sendable {
    /// Not known yet (until the controller has been opened and brought up).
    case unknown = 0
    /// The controller is being reset.
    case resetting = 1
    /// No usable controller: it could not be opened, or it does not do Bluetooth Low Energy.
    case unsupported = 2
    /// The operating system denied access to the controller (for example no `CAP_NET_ADMIN` for `hciN`).
    case unauthorized = 3
    /// The controller is off (its transport closed).
    case poweredOff = 4
    /// Ready to scan and connect.
    case poweredOn = 5

    /// The state of the BLE module's adapter state.
    init(_ state: AdapterState) {
        self = switch state {
        case .unknown: .unknown
        case .resetting: .resetting
        case .unsupported: .unsupported
        case .unauthorized: .unauthorized
        case .poweredOff: .poweredOff
        case .poweredOn: .poweredOn
        }
    }
}

/// A peripheral's connection state, with CoreBluetooth's raw values.
public enum CBPeripheralState: Int, Sendable {
    /// Not connected.
    case disconnected = 0
    /// A connection is being established.
    case connecting = 1
    /// Connected.
    case connected = 2
    /// This central asked to disconnect and the controller has not confirmed yet.
    case disconnecting = 3
}

/// A characteristic's properties, with CoreBluetooth's bit values (the declaration's properties byte, plus the
/// two encryption bits CoreBluetooth adds for published characteristics).
public struct CBCharacteristicProperties: OptionSet, Sendable, Hashable {
    /// The raw bits.
    public let rawValue: UInt
    /// Creates properties from raw bits.
    public init(rawValue: UInt) { self.rawValue = rawValue }

    /// The value may be broadcast (0x01).
    public static let broadcast = CBCharacteristicProperties(rawValue: 0x01)
    /// The value may be read (0x02).
    public static let read = CBCharacteristicProperties(rawValue: 0x02)
    /// The value may be written without a response (0x04).
    public static let writeWithoutResponse = CBCharacteristicProperties(rawValue: 0x04)
    /// The value may be written with a response (0x08).
    public static let write = CBCharacteristicProperties(rawValue: 0x08)
    /// The value may be notified (0x10).
    public static let notify = CBCharacteristicProperties(rawValue: 0x10)
    /// The value may be indicated (0x20).
    public static let indicate = CBCharacteristicProperties(rawValue: 0x20)
    /// The value may be written with signed writes (0x40).
    public static let authenticatedSignedWrites = CBCharacteristicProperties(rawValue: 0x40)
    /// The characteristic has an Extended Properties descriptor (0x80).
    public static let extendedProperties = CBCharacteristicProperties(rawValue: 0x80)
    /// Only trusted devices may enable notifications (0x100; published characteristics only).
    public static let notifyEncryptionRequired = CBCharacteristicProperties(rawValue: 0x100)
    /// Only trusted devices may enable indications (0x200; published characteristics only).
    public static let indicateEncryptionRequired = CBCharacteristicProperties(rawValue: 0x200)

    /// The properties of a discovered characteristic's declaration (the same bits).
    init(_ properties: GATTCharacteristicProperties) {
        self.init(rawValue: UInt(properties.rawValue))
    }
}

extension GATTCharacteristicProperties {
    /// The declaration's properties byte of CoreBluetooth properties (the encryption bits 0x100 and 0x200 are not
    /// declared: they only ask for encryption).
    init(_ properties: CBCharacteristicProperties) {
        self.init(rawValue: UInt8(truncatingIfNeeded: properties.rawValue & 0xFF))
    }
}

/// How a characteristic value is written, with CoreBluetooth's raw values.
public enum CBCharacteristicWriteType: Int, Sendable {
    /// A Write Request (prepared writes for values longer than ATT_MTU − 3), answered by the
    /// delegate's `peripheral(_:didWriteValueFor:error:)`.
    case withResponse = 0
    /// A Write Command: no answer, at most ``CBPeripheral/maximumWriteValueLength(for:)`` bytes.
    case withoutResponse = 1

    /// The BLE module's write type.
    var writeType: WriteType { self == .withResponse ? .withResponse : .withoutResponse }
}

/// Who may read or write a published attribute, with CoreBluetooth's bit values.
public struct CBAttributePermissions: OptionSet, Sendable, Hashable {
    /// The raw bits.
    public let rawValue: UInt
    /// Creates permissions from raw bits.
    public init(rawValue: UInt) { self.rawValue = rawValue }

    /// Readable (0x01).
    public static let readable = CBAttributePermissions(rawValue: 0x01)
    /// Writeable (0x02).
    public static let writeable = CBAttributePermissions(rawValue: 0x02)
    /// Readable over an encrypted link only (0x04).
    public static let readEncryptionRequired = CBAttributePermissions(rawValue: 0x04)
    /// Writeable over an encrypted link only (0x08).
    public static let writeEncryptionRequired = CBAttributePermissions(rawValue: 0x08)
}

/// The key of the advertised local name (a `String`) in an advertisement-data dictionary.
public let CBAdvertisementDataLocalNameKey = "kCBAdvDataLocalName"
/// The key of the advertised service UUIDs (`[CBUUID]`) in an advertisement-data dictionary.
public let CBAdvertisementDataServiceUUIDsKey = "kCBAdvDataServiceUUIDs"
/// The key of the manufacturer data (`Data`: the company identifier, little-endian, then the data) in an
/// advertisement-data dictionary.
public let CBAdvertisementDataManufacturerDataKey = "kCBAdvDataManufacturerData"
/// The key of the service data (`[CBUUID: Data]`) in an advertisement-data dictionary.
public let CBAdvertisementDataServiceDataKey = "kCBAdvDataServiceData"
/// The key of the advertised transmit power level in dBm (an `NSNumber`) in an advertisement-data dictionary.
public let CBAdvertisementDataTxPowerLevelKey = "kCBAdvDataTxPowerLevel"
/// The key of whether the advertiser accepts connections (an `NSNumber` holding a `Bool`) in an
/// advertisement-data dictionary.
public let CBAdvertisementDataIsConnectable = "kCBAdvDataIsConnectable"
/// The key of the service UUIDs found in an overflow area (`[CBUUID]`) in an advertisement-data dictionary (iOS
/// background advertising only: never present on Linux).
public let CBAdvertisementDataOverflowServiceUUIDsKey = "kCBAdvDataOverflowServiceUUIDs"
/// The key of the solicited service UUIDs (`[CBUUID]`) in an advertisement-data dictionary.
public let CBAdvertisementDataSolicitedServiceUUIDsKey = "kCBAdvDataSolicitedServiceUUIDs"

/// The scan option (an `NSNumber` holding a `Bool`, or a `Bool`) that reports every advertisement of a peripheral,
/// not only the first and those whose data changed.
public let CBCentralManagerScanOptionAllowDuplicatesKey = "kCBScanOptionAllowDuplicates"
/// The scan option (`[CBUUID]`) that also reports peripherals soliciting one of these services.
public let CBCentralManagerScanOptionSolicitedServiceUUIDsKey = "kCBScanOptionSolicitedServiceUUIDs"

/// The error domain of ``CBError``.
public let CBErrorDomain = "CBErrorDomain"
/// The error domain of ``CBATTError``.
public let CBATTErrorDomain = "CBATTErrorDomain"

/// A CoreBluetooth error, with CoreBluetooth's codes (domain ``CBErrorDomain``), in the shape Apple's Swift overlay
/// gives it: a wrapper of an `NSError` (``_nsError``, ``init(_nsError:)``) with a ``Code`` enumeration, a static
/// shortcut per code (`CBError.peripheralDisconnected`, so that `catch CBError.peripheralDisconnected` and
/// `if case CBError.notConnected = error` work), ``code``, ``errorCode`` and ``userInfo``.
public struct CBError: Error, Hashable, CustomNSError, CustomStringConvertible, @unchecked Sendable {
    /// CoreBluetooth's error codes.
    public enum Code: Int, Sendable {
        /// An unknown error.
        case unknown = 0
        /// The parameters are invalid.
        case invalidParameters = 1
        /// The attribute handle is invalid.
        case invalidHandle = 2
        /// The device is not connected.
        case notConnected = 3
        /// The device has run out of space.
        case outOfSpace = 4
        /// The operation was cancelled.
        case operationCancelled = 5
        /// The connection timed out.
        case connectionTimeout = 6
        /// The peripheral disconnected.
        case peripheralDisconnected = 7
        /// The UUID is not allowed.
        case uuidNotAllowed = 8
        /// The peripheral is already advertising.
        case alreadyAdvertising = 9
        /// The connection failed.
        case connectionFailed = 10
        /// The device already has the maximum number of connections.
        case connectionLimitReached = 11
        /// The device is unknown.
        case unknownDevice = 12
        /// The operation is not supported.
        case operationNotSupported = 13
        /// The peer removed its pairing information.
        case peerRemovedPairingInformation = 14
        /// Encryption timed out.
        case encryptionTimedOut = 15
        /// Too many LE devices are paired.
        case tooManyLEPairedDevices = 16
        /// iOS: a background application exceeded its notification limit (never reported on Linux, which has no such limit).
        case leGattExceededBackgroundNotificationLimit = 17
        /// iOS: a background application nears its notification limit (never reported on Linux, which has no such limit).
        case leGattNearBackgroundNotificationLimit = 18

        /// Whether `error` is a ``CBError`` with this code (what `catch CBError.notConnected` asks).
        public static func ~= (match: Code, error: any Error) -> Bool {
            guard let error = error as? CBError else { return false }
            return error.errorCode == match.rawValue
        }
    }

    /// The `NSError` this error wraps (domain ``CBErrorDomain``).
    public let _nsError: NSError

    /// Wraps an `NSError` of domain ``CBErrorDomain``.
    public init(_nsError error: NSError) {
        _nsError = error
    }

    /// Creates an error with a code and the `NSError`'s user info.
    public init(_ code: Code, userInfo: [String: Any] = [:]) {
        _nsError = NSError(domain: CBErrorDomain, code: code.rawValue, userInfo: userInfo)
    }

    /// Creates an error whose user info explains it in words, under `NSLocalizedDescriptionKey`.
    public init(_ code: Code, reason: String) {
        self.init(code, userInfo: reason.isEmpty ? [:] : [NSLocalizedDescriptionKey: reason])
    }

    /// The error code (``Code/unknown`` for a code this version does not name).
    public var code: Code { Code(rawValue: _nsError.code) ?? .unknown }
    /// What happened, in words (the stack's own explanation when there is one, else empty).
    public var reason: String { _nsError.userInfo[NSLocalizedDescriptionKey] as? String ?? "" }

    /// ``CBErrorDomain``.
    public static var errorDomain: String { CBErrorDomain }
    /// The code's raw value.
    public var errorCode: Int { _nsError.code }
    /// The `NSError`'s user info (the reason under `NSLocalizedDescriptionKey`).
    public var userInfo: [String: Any] { _nsError.userInfo }
    /// The same as ``userInfo``.
    public var errorUserInfo: [String: Any] { [NSLocalizedDescriptionKey: description].merging(userInfo) { $1 } }
    /// The reason, or the code when there is none.
    public var description: String { reason.isEmpty ? "CBError \(code)" : reason }
    /// Errors are equal when their codes are (the reason is for people).
    public static func == (lhs: CBError, rhs: CBError) -> Bool { lhs.errorCode == rhs.errorCode }
    /// Hashes the code.
    public func hash(into hasher: inout Hasher) { hasher.combine(errorCode) }

    /// ``Code/unknown``, as Apple's overlay names it on `CBError` itself.
    public static var unknown: Code { .unknown }
    /// ``Code/invalidParameters``, as Apple's overlay names it on `CBError` itself.
    public static var invalidParameters: Code { .invalidParameters }
    /// ``Code/invalidHandle``, as Apple's overlay names it on `CBError` itself.
    public static var invalidHandle: Code { .invalidHandle }
    /// ``Code/notConnected``, as Apple's overlay names it on `CBError` itself.
    public static var notConnected: Code { .notConnected }
    /// ``Code/outOfSpace``, as Apple's overlay names it on `CBError` itself.
    public static var outOfSpace: Code { .outOfSpace }
    /// ``Code/operationCancelled``, as Apple's overlay names it on `CBError` itself.
    public static var operationCancelled: Code { .operationCancelled }
    /// ``Code/connectionTimeout``, as Apple's overlay names it on `CBError` itself.
    public static var connectionTimeout: Code { .connectionTimeout }
    /// ``Code/peripheralDisconnected``, as Apple's overlay names it on `CBError` itself.
    public static var peripheralDisconnected: Code { .peripheralDisconnected }
    /// ``Code/uuidNotAllowed``, as Apple's overlay names it on `CBError` itself.
    public static var uuidNotAllowed: Code { .uuidNotAllowed }
    /// ``Code/alreadyAdvertising``, as Apple's overlay names it on `CBError` itself.
    public static var alreadyAdvertising: Code { .alreadyAdvertising }
    /// ``Code/connectionFailed``, as Apple's overlay names it on `CBError` itself.
    public static var connectionFailed: Code { .connectionFailed }
    /// ``Code/connectionLimitReached``, as Apple's overlay names it on `CBError` itself.
    public static var connectionLimitReached: Code { .connectionLimitReached }
    /// ``Code/unknownDevice``, as Apple's overlay names it on `CBError` itself.
    public static var unknownDevice: Code { .unknownDevice }
    /// ``Code/operationNotSupported``, as Apple's overlay names it on `CBError` itself.
    public static var operationNotSupported: Code { .operationNotSupported }
    /// ``Code/peerRemovedPairingInformation``, as Apple's overlay names it on `CBError` itself.
    public static var peerRemovedPairingInformation: Code { .peerRemovedPairingInformation }
    /// ``Code/encryptionTimedOut``, as Apple's overlay names it on `CBError` itself.
    public static var encryptionTimedOut: Code { .encryptionTimedOut }
    /// ``Code/tooManyLEPairedDevices``, as Apple's overlay names it on `CBError` itself.
    public static var tooManyLEPairedDevices: Code { .tooManyLEPairedDevices }
    /// ``Code/leGattExceededBackgroundNotificationLimit``, as Apple's overlay names it on `CBError` itself.
    public static var leGattExceededBackgroundNotificationLimit: Code { .leGattExceededBackgroundNotificationLimit }
    /// ``Code/leGattNearBackgroundNotificationLimit``, as Apple's overlay names it on `CBError` itself.
    public static var leGattNearBackgroundNotificationLimit: Code { .leGattNearBackgroundNotificationLimit }
}

/// An ATT error the peripheral answered with (domain ``CBATTErrorDomain``); its codes are the ATT error codes. The
/// shape of Apple's Swift overlay, as ``CBError``'s: ``_nsError``, ``init(_nsError:)``, a ``Code`` enumeration, a
/// static shortcut per code (`catch CBATTError.insufficientAuthentication`), ``code``, ``errorCode``, ``userInfo``.
public struct CBATTError: Error, Hashable, CustomNSError, CustomStringConvertible, @unchecked Sendable {
    /// The ATT error codes CoreBluetooth names; any other ATT code (an application error 0x80–0x9F, a common
    /// profile error 0xFC–0xFF) is kept in ``rawCode`` and ``errorCode``.
    public enum Code: Int, Sendable {
        /// Success (0x00).
        case success = 0x00
        /// Invalid handle (0x01).
        case invalidHandle = 0x01
        /// Read not permitted (0x02).
        case readNotPermitted = 0x02
        /// Write not permitted (0x03).
        case writeNotPermitted = 0x03
        /// Invalid PDU (0x04).
        case invalidPdu = 0x04
        /// Insufficient authentication (0x05).
        case insufficientAuthentication = 0x05
        /// Request not supported (0x06).
        case requestNotSupported = 0x06
        /// Invalid offset (0x07).
        case invalidOffset = 0x07
        /// Insufficient authorization (0x08).
        case insufficientAuthorization = 0x08
        /// Prepare queue full (0x09).
        case prepareQueueFull = 0x09
        /// Attribute not found (0x0A).
        case attributeNotFound = 0x0A
        /// Attribute not long (0x0B).
        case attributeNotLong = 0x0B
        /// Encryption key size too short (0x0C).
        case insufficientEncryptionKeySize = 0x0C
        /// Invalid attribute value length (0x0D).
        case invalidAttributeValueLength = 0x0D
        /// Unlikely error (0x0E).
        case unlikelyError = 0x0E
        /// Insufficient encryption (0x0F).
        case insufficientEncryption = 0x0F
        /// Unsupported group type (0x10).
        case unsupportedGroupType = 0x10
        /// Insufficient resources (0x11).
        case insufficientResources = 0x11

        /// Whether `error` is a ``CBATTError`` with this code (what `catch CBATTError.insufficientAuthentication` asks).
        public static func ~= (match: Code, error: any Error) -> Bool {
            guard let error = error as? CBATTError else { return false }
            return error.errorCode == match.rawValue
        }
    }

    /// The `NSError` this error wraps (domain ``CBATTErrorDomain``).
    public let _nsError: NSError

    /// Wraps an `NSError` of domain ``CBATTErrorDomain``.
    public init(_nsError error: NSError) {
        _nsError = error
    }

    /// Creates an error with a named code and the `NSError`'s user info.
    public init(_ code: Code, userInfo: [String: Any] = [:]) {
        _nsError = NSError(domain: CBATTErrorDomain, code: code.rawValue, userInfo: userInfo)
    }

    /// Creates an error from a named code, explained in words under `NSLocalizedDescriptionKey`.
    public init(_ code: Code, reason: String) {
        self.init(code, userInfo: reason.isEmpty ? [:] : [NSLocalizedDescriptionKey: reason])
    }

    /// Creates an error from an ATT error code as it came from the peripheral.
    public init(attCode: UInt8, reason: String = "") {
        _nsError = NSError(domain: CBATTErrorDomain, code: Int(attCode),
                           userInfo: reason.isEmpty ? [:] : [NSLocalizedDescriptionKey: reason])
    }

    /// The ATT error code as sent by the peripheral (any value, including application errors).
    public var rawCode: UInt8 { UInt8(truncatingIfNeeded: _nsError.code) }
    /// What happened, in words (empty when nothing was said).
    public var reason: String { _nsError.userInfo[NSLocalizedDescriptionKey] as? String ?? "" }

    /// The named code; codes CoreBluetooth does not name (application errors...) read as `unlikelyError`, while
    /// ``errorCode`` and ``rawCode`` keep the value sent.
    public var code: Code { Code(rawValue: _nsError.code) ?? .unlikelyError }

    /// ``CBATTErrorDomain``.
    public static var errorDomain: String { CBATTErrorDomain }
    /// The ATT error code.
    public var errorCode: Int { _nsError.code }
    /// The `NSError`'s user info (the reason under `NSLocalizedDescriptionKey`).
    public var userInfo: [String: Any] { _nsError.userInfo }
    /// The user info, with a description under `NSLocalizedDescriptionKey` when it has none.
    public var errorUserInfo: [String: Any] { [NSLocalizedDescriptionKey: description].merging(userInfo) { $1 } }
    /// The reason, or the code when there is none.
    public var description: String { reason.isEmpty ? "CBATTError 0x\(String(rawCode, radix: 16, uppercase: true))" : reason }
    /// Errors are equal when their codes are (the reason is for people).
    public static func == (lhs: CBATTError, rhs: CBATTError) -> Bool { lhs.errorCode == rhs.errorCode }
    /// Hashes the code.
    public func hash(into hasher: inout Hasher) { hasher.combine(errorCode) }

    /// ``Code/success``, as Apple's overlay names it on `CBATTError` itself.
    public static var success: Code { .success }
    /// ``Code/invalidHandle``, as Apple's overlay names it on `CBATTError` itself.
    public static var invalidHandle: Code { .invalidHandle }
    /// ``Code/readNotPermitted``, as Apple's overlay names it on `CBATTError` itself.
    public static var readNotPermitted: Code { .readNotPermitted }
    /// ``Code/writeNotPermitted``, as Apple's overlay names it on `CBATTError` itself.
    public static var writeNotPermitted: Code { .writeNotPermitted }
    /// ``Code/invalidPdu``, as Apple's overlay names it on `CBATTError` itself.
    public static var invalidPdu: Code { .invalidPdu }
    /// ``Code/insufficientAuthentication``, as Apple's overlay names it on `CBATTError` itself.
    public static var insufficientAuthentication: Code { .insufficientAuthentication }
    /// ``Code/requestNotSupported``, as Apple's overlay names it on `CBATTError` itself.
    public static var requestNotSupported: Code { .requestNotSupported }
    /// ``Code/invalidOffset``, as Apple's overlay names it on `CBATTError` itself.
    public static var invalidOffset: Code { .invalidOffset }
    /// ``Code/insufficientAuthorization``, as Apple's overlay names it on `CBATTError` itself.
    public static var insufficientAuthorization: Code { .insufficientAuthorization }
    /// ``Code/prepareQueueFull``, as Apple's overlay names it on `CBATTError` itself.
    public static var prepareQueueFull: Code { .prepareQueueFull }
    /// ``Code/attributeNotFound``, as Apple's overlay names it on `CBATTError` itself.
    public static var attributeNotFound: Code { .attributeNotFound }
    /// ``Code/attributeNotLong``, as Apple's overlay names it on `CBATTError` itself.
    public static var attributeNotLong: Code { .attributeNotLong }
    /// ``Code/insufficientEncryptionKeySize``, as Apple's overlay names it on `CBATTError` itself.
    public static var insufficientEncryptionKeySize: Code { .insufficientEncryptionKeySize }
    /// ``Code/invalidAttributeValueLength``, as Apple's overlay names it on `CBATTError` itself.
    public static var invalidAttributeValueLength: Code { .invalidAttributeValueLength }
    /// ``Code/unlikelyError``, as Apple's overlay names it on `CBATTError` itself.
    public static var unlikelyError: Code { .unlikelyError }
    /// ``Code/insufficientEncryption``, as Apple's overlay names it on `CBATTError` itself.
    public static var insufficientEncryption: Code { .insufficientEncryption }
    /// ``Code/unsupportedGroupType``, as Apple's overlay names it on `CBATTError` itself.
    public static var unsupportedGroupType: Code { .unsupportedGroupType }
    /// ``Code/insufficientResources``, as Apple's overlay names it on `CBATTError` itself.
    public static var insufficientResources: Code { .insufficientResources }
}

/// Translates the BLE module's errors into CoreBluetooth's: an ATT error answer becomes a ``CBATTError`` with the
/// same code (unless the request was refused for security and encrypting with the bond failed because the peer has
/// no key: ``CBError/Code/peerRemovedPairingInformation``); a lost link ``CBError/Code/peripheralDisconnected``; a connection timeout
/// ``CBError/Code/connectionTimeout``; anything else ``CBError/Code/unknown`` with the stack's explanation.
func cbError(_ error: any Error) -> any Error {
    switch error {
    case let error as CBError: return error
    case let error as CBATTError: return error
    case let error as GATTError:
        // Refused for security, and encrypting with the bond failed for want of the peer's key: the peer forgot the
        // bond (PIN or Key Missing), which iOS reports as such.
        if let failure = error.underlying as? SecurityError, failure.code == .encryptionFailed(.pinOrKeyMissing) {
            return CBError(.peerRemovedPairingInformation, reason: error.reason)
        }
        if let code = error.code.attError { return CBATTError(attCode: code.rawValue, reason: error.reason) }
        switch error.code {
        case .disconnected: return CBError(.peripheralDisconnected, reason: error.reason)
        case .timeout: return CBError(.connectionTimeout, reason: error.reason)
        case .cancelled: return CBError(.operationCancelled, reason: error.reason)
        case .invalidValueLength: return CBATTError(.invalidAttributeValueLength, reason: error.reason)
        default: return CBError(.unknown, reason: error.reason)
        }
    case let error as HostError:
        if error.code.hciStatus != nil, error.code.opcode == nil { return CBError(.connectionFailed, reason: error.reason) }
        switch error.code {
        case .connectionTimedOut: return CBError(.connectionTimeout, reason: error.reason)
        case .notConnected, .transportClosed, .notPoweredOn: return CBError(.notConnected, reason: error.reason)
        default: return CBError(.unknown, reason: error.reason)
        }
    case is CancellationError: return CBError(.operationCancelled, reason: "cancelled")
    case let error as any BLEError: return CBError(.unknown, reason: error.reason)
    default: return CBError(.unknown, reason: "\(error)")
    }
}

/// The connection option asking iOS to alert the user when the peripheral connects while the app is suspended.
/// Accepted and without effect on Linux, which has no system alerts.
public let CBConnectPeripheralOptionNotifyOnConnectionKey = "kCBConnectOptionNotifyOnConnection"
/// The connection option asking iOS to alert the user when the peripheral disconnects while the app is suspended.
/// Accepted and without effect on Linux, which has no system alerts.
public let CBConnectPeripheralOptionNotifyOnDisconnectionKey = "kCBConnectOptionNotifyOnDisconnection"
/// The connection option asking iOS to alert the user of notifications while the app is suspended.
/// Accepted and without effect on Linux, which has no system alerts.
public let CBConnectPeripheralOptionNotifyOnNotificationKey = "kCBConnectOptionNotifyOnNotification"
