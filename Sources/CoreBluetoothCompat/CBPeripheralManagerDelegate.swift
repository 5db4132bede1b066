import BLE
import BLEWire
import Foundation

/// A PSM of an LE credit based L2CAP channel, as CoreBluetooth's `CBL2CAPPSM`.
public typealias CBL2CAPPSM = UInt16

/// The connection latency a peripheral manager asks a central for, with CoreBluetooth's raw values.
public enum CBPeripheralManagerConnectionLatency: Int, Sendable {
    /// Short connection intervals (11.25–15 ms): fast exchanges, more power.
    case low = 0
    /// Intervals of 30–50 ms.
    case medium = 1
    /// Long intervals (100–125 ms): slow exchanges, least power.
    case high = 2

    /// The connection parameters asked for (interval in 1.25 ms units, latency in events, timeout in 10 ms units).
    var parameters: L2CAPConnectionParameterUpdateRequest {
        switch self {
        case .low: L2CAPConnectionParameterUpdateRequest(intervalMin: 9, intervalMax: 12, latency: 0, timeout: 500)
        case .medium: L2CAPConnectionParameterUpdateRequest(intervalMin: 24, intervalMax: 40, latency: 0, timeout: 500)
        case .high: L2CAPConnectionParameterUpdateRequest(intervalMin: 80, intervalMax: 100, latency: 2, timeout: 600)
        }
    }
}

/// The key of the Boolean option asking iOS to alert the user when Bluetooth is off (no effect on Linux).
public let CBPeripheralManagerOptionShowPowerAlertKey = "kCBInitOptionShowPowerAlert"
/// The key of the state-restoration identifier option (no effect on Linux: there is no state restoration).
public let CBPeripheralManagerOptionRestoreIdentifierKey = "kCBRestoreIdentifierKey"

/// What a peripheral manager tells its delegate, as CoreBluetooth's `CBPeripheralManagerDelegate`.
///
/// ``peripheralManagerDidUpdateState(_:)`` is required; the other methods have default implementations that do
/// nothing, as CoreBluetooth's optional methods. A method whose signature nearly matches one of them (a typo in a
/// label or type) would never be called: see ``CBDelegateDiagnostics`` for the compile-time warning and the run-time
/// report that catch it.
///
/// It refines `NSObjectProtocol`, as CoreBluetooth's does: a delegate is an `NSObject` subclass, as on iOS.
public protocol CBPeripheralManagerDelegate: NSObjectProtocol {
    /// The manager's ``CBPeripheralManager/state`` changed. Publish services and advertise once it is `poweredOn`.
    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager)
    /// Never called on Linux (there is no state restoration); present so that iOS code compiles.
    func peripheralManager(_ peripheral: CBPeripheralManager, willRestoreState dict: [String: Any])
    /// A service given to ``CBPeripheralManager/add(_:)`` is published, or could not be (`error`).
    func peripheralManager(_ peripheral: CBPeripheralManager, didAdd service: CBService, error: (any Error)?)
    /// Advertising started, or could not (`error`).
    func peripheralManagerDidStartAdvertising(_ peripheral: CBPeripheralManager, error: (any Error)?)
    /// A central subscribed to a characteristic's notifications or indications.
    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didSubscribeTo characteristic: CBCharacteristic)
    /// A central unsubscribed (or its link went down).
    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didUnsubscribeFrom characteristic: CBCharacteristic)
    /// A central reads a characteristic published with a `nil` value: set the request's value and call
    /// ``CBPeripheralManager/respond(to:withResult:)``.
    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveRead request: CBATTRequest)
    /// A central writes characteristics published with a `nil` value: one request, or every part of a prepared
    /// (long or reliable) write. Answer once, with the first request of the array; a write without response needs no
    /// answer.
    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveWrite requests: [CBATTRequest])
    /// ``CBPeripheralManager/updateValue(_:for:onSubscribedCentrals:)`` returned `false` before, and the queue has
    /// room again.
    func peripheralManagerIsReady(toUpdateSubscribers peripheral: CBPeripheralManager)
    /// A channel is published on `PSM`, or could not be (`error`).
    func peripheralManager(_ peripheral: CBPeripheralManager, didPublishL2CAPChannel PSM: CBL2CAPPSM, error: (any Error)?)
    /// The channel on `PSM` is no longer published.
    func peripheralManager(_ peripheral: CBPeripheralManager, didUnpublishL2CAPChannel PSM: CBL2CAPPSM, error: (any Error)?)
    /// A central opened a channel to a published PSM.
    func peripheralManager(_ peripheral: CBPeripheralManager, didOpen channel: CBL2CAPChannel?, error: (any Error)?)
}

extension CBPeripheralManagerDelegate {
    /// Does nothing.
    public func peripheralManager(_ peripheral: CBPeripheralManager, willRestoreState dict: [String: Any]) {}
    /// Does nothing.
    public func peripheralManager(_ peripheral: CBPeripheralManager, didAdd service: CBService, error: (any Error)?) {}
    /// Does nothing.
    public func peripheralManagerDidStartAdvertising(_ peripheral: CBPeripheralManager, error: (any Error)?) {}
    /// Does nothing.
    public func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didSubscribeTo characteristic: CBCharacteristic) {}
    /// Does nothing.
    public func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didUnsubscribeFrom characteristic: CBCharacteristic) {}
    /// Answers the read with Request Not Supported (a delegate that publishes `nil`-valued characteristics implements
    /// this method).
    public func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveRead request: CBATTRequest) {
        CBDelegateDiagnostics.unhandled("peripheralManager(_:didReceiveRead:)", of: self, protocol: "CBPeripheralManagerDelegate",
                                        asked: "a read of a characteristic published with a nil value")
        peripheral.respond(to: request, withResult: .requestNotSupported)
    }
    /// Answers the writes with Request Not Supported (a delegate that publishes writable characteristics implements
    /// this method).
    public func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveWrite requests: [CBATTRequest]) {
        CBDelegateDiagnostics.unhandled("peripheralManager(_:didReceiveWrite:)", of: self, protocol: "CBPeripheralManagerDelegate",
                                        asked: "a write of a characteristic published with a nil value")
        if let first = requests.first { peripheral.respond(to: first, withResult: .requestNotSupported) }
    }
    /// Does nothing but report the dropped event (see ``CBDelegateDiagnostics``).
    public func peripheralManagerIsReady(toUpdateSubscribers peripheral: CBPeripheralManager) {
        CBDelegateDiagnostics.unhandled("peripheralManagerIsReady(toUpdateSubscribers:)", of: self, protocol: "CBPeripheralManagerDelegate", asked: "updateValue(_:for:onSubscribedCentrals:) returning false")
    }
    /// Does nothing but report the dropped event (see ``CBDelegateDiagnostics``).
    public func peripheralManager(_ peripheral: CBPeripheralManager, didPublishL2CAPChannel PSM: CBL2CAPPSM, error: (any Error)?) {
        CBDelegateDiagnostics.unhandled("peripheralManager(_:didPublishL2CAPChannel:error:)", of: self, protocol: "CBPeripheralManagerDelegate", asked: "publishL2CAPChannel(withEncryption:)")
    }
    /// Does nothing.
    public func peripheralManager(_ peripheral: CBPeripheralManager, didUnpublishL2CAPChannel PSM: CBL2CAPPSM, error: (any Error)?) {}
    /// Does nothing.
    public func peripheralManager(_ peripheral: CBPeripheralManager, didOpen channel: CBL2CAPChannel?, error: (any Error)?) {}
}
