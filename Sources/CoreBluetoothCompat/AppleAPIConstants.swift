import BLE
import Foundation

// The rest of CoreBluetooth's option keys, restored-state keys and small types (those the managers' files do not
// declare), with Apple's string values. What each does on Linux is said on each: those that ask iOS for something
// Linux has no counterpart of (a system alert, state restoration after a relaunch, Apple's notification service) are
// accepted and have no effect.

/// A point in time in seconds since 1 January 2001 00:00 UTC, as Core Foundation's `CFAbsoluteTime` (which Linux's
/// Foundation does not export): the timestamp of
/// ``CBCentralManagerDelegate/centralManager(_:didDisconnectPeripheral:timestamp:isReconnecting:error:)``,
/// `Date().timeIntervalSinceReferenceDate` when the link was lost.
public typealias CFAbsoluteTime = Double

/// The Boolean initialization option asking iOS to alert the user when Bluetooth is off as a central manager is
/// created. Accepted and without effect on Linux, which has no system alerts: the state the delegate receives
/// (`poweredOff`, `unsupported`, `unauthorized`) says it.
public let CBCentralManagerOptionShowPowerAlertKey = "kCBInitOptionShowPowerAlert"
/// The initialization option naming a central manager for iOS's state restoration. Accepted and without effect on
/// Linux: no system relaunches a program to restore its managers, so
/// ``CBCentralManagerDelegate/centralManager(_:willRestoreState:)`` is never called.
public let CBCentralManagerOptionRestoreIdentifierKey = "kCBRestoreIdentifierKey"
/// The key, in the dictionary of ``CBCentralManagerDelegate/centralManager(_:willRestoreState:)``, of the
/// peripherals connected or pending (`[CBPeripheral]`). Never present on Linux (there is no state restoration).
public let CBCentralManagerRestoredStatePeripheralsKey = "kCBRestoredPeripherals"
/// The key of the services a restored scan looked for (`[CBUUID]`). Never present on Linux.
public let CBCentralManagerRestoredStateScanServicesKey = "kCBRestoredScanServices"
/// The key of a restored scan's options (`[String: Any]`). Never present on Linux.
public let CBCentralManagerRestoredStateScanOptionsKey = "kCBRestoredScanOptions"
/// The key, in the dictionary of ``CBPeripheralManagerDelegate/peripheralManager(_:willRestoreState:)``, of the
/// services published (`[CBMutableService]`). Never present on Linux (there is no state restoration).
public let CBPeripheralManagerRestoredStateServicesKey = "kCBRestoredServices"
/// The key of the advertisement data being advertised (`[String: Any]`). Never present on Linux.
public let CBPeripheralManagerRestoredStateAdvertisementDataKey = "kCBRestoredAdvertisement"

/// The connection option (an `NSNumber` of seconds) asking iOS to delay the connection's start. Accepted and without
/// effect on Linux: the attempt starts at once.
public let CBConnectPeripheralOptionStartDelayKey = "kCBConnectOptionStartDelay"
/// The connection option asking iOS to bridge the peripheral's classic (BR/EDR) transport with its LE one. Accepted
/// and without effect on Linux: swift-ble is LE only.
public let CBConnectPeripheralOptionEnableTransportBridgingKey = "kCBConnectOptionEnableTransportBridging"
/// The connection option asking iOS to require the Apple Notification Center Service on the link. Accepted and
/// without effect on Linux, which has no ANCS: ``CBPeripheral/ancsAuthorized`` stays `false`.
public let CBConnectPeripheralOptionRequiresANCS = "kCBConnectOptionRequireANCS"
/// The connection option (a `Bool` or `NSNumber`) that makes the manager reconnect by itself when the link is lost,
/// as iOS 17 does: the loss is reported by
/// ``CBCentralManagerDelegate/centralManager(_:didDisconnectPeripheral:timestamp:isReconnecting:error:)`` with
/// `isReconnecting` `true`, the peripheral goes back to `connecting`, and
/// ``CBCentralManagerDelegate/centralManager(_:didConnect:)`` follows when the device is back (an attempt that times
/// out is made again, every ``CBCentralManager/connectionAttemptTimeout``, until
/// ``CBCentralManager/cancelPeripheralConnection(_:)``). A disconnection the application asked for is not followed
/// by a reconnection.
public let CBConnectPeripheralOptionEnableAutoReconnect = "kCBConnectOptionEnableAutoReconnect"

/// A key of ``CBCentralManager/registerForConnectionEvents(options:)``'s options, as CoreBluetooth's
/// `CBConnectionEventMatchingOption`.
public struct CBConnectionEventMatchingOption: RawRepresentable, Hashable, Sendable {
    /// The key's string.
    public let rawValue: String
    /// A key from its string.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Connection events of peripherals that have one of these services (`[CBUUID]`) among those discovered.
    public static let serviceUUIDs = CBConnectionEventMatchingOption(rawValue: "kCBConnectionEventMatchingOptionServiceUUIDs")
    /// Connection events of the peripherals with these identifiers (`[UUID]`).
    public static let peripheralUUIDs = CBConnectionEventMatchingOption(rawValue: "kCBConnectionEventMatchingOptionPeripheralUUIDs")
}

/// What happened to a peripheral's link, for
/// ``CBCentralManagerDelegate/centralManager(_:connectionEventDidOccur:for:)``, with CoreBluetooth's raw values.
public enum CBConnectionEvent: Int, Sendable {
    /// The link with the peripheral went down.
    case peerDisconnected = 0
    /// A link with the peripheral came up.
    case peerConnected = 1
}

extension CBCentralManager {
    /// What a controller can do, for ``CBCentralManager/supports(_:)``, as CoreBluetooth's
    /// `CBCentralManager.Feature`.
    public struct Feature: OptionSet, Sendable, Hashable {
        /// The raw bits.
        public let rawValue: UInt
        /// Features from raw bits.
        public init(rawValue: UInt) { self.rawValue = rawValue }

        /// Extended scanning and connecting (the LE Extended Advertising feature of Bluetooth 5: extended
        /// advertisements are reported, and connections are made with the extended commands).
        public static let extendedScanAndConnect = Feature(rawValue: 1 << 0)
    }
}

/// A central manager's state before iOS 10 (``CBManagerState`` since).
@available(*, deprecated, renamed: "CBManagerState")
public typealias CBCentralManagerState = CBManagerState
/// A peripheral manager's state before iOS 10 (``CBManagerState`` since).
@available(*, deprecated, renamed: "CBManagerState")
public typealias CBPeripheralManagerState = CBManagerState

/// Whether the application may share data over Bluetooth in the background, before iOS 13
/// (``CBManagerAuthorization`` since), with CoreBluetooth's raw values.
@available(*, deprecated, renamed: "CBManagerAuthorization")
public enum CBPeripheralManagerAuthorizationStatus: Int, Sendable {
    /// The user has not decided yet.
    case notDetermined = 0
    /// Bluetooth use is restricted on this device.
    case restricted = 1
    /// The user denied it.
    case denied = 2
    /// The application may.
    case authorized = 3
}

extension CBPeripheralManager {
    /// Always `authorized` on Linux, where there is no per-application permission (as ``CBManager/authorization``).
    @available(*, deprecated, message: "use CBManager.authorization")
    public class func authorizationStatus() -> CBPeripheralManagerAuthorizationStatus { .authorized }
}
