import Foundation

/// Diagnostics for delegate methods that are never called because of a typo.
///
/// CoreBluetooth's optional delegate methods are Objective-C optional requirements; here they are requirements with
/// default implementations that do nothing. A method whose signature nearly matches one (`RSSI:` for `rssi:`, an
/// `Error` for an `(any Error)?`) is then a separate method, which nobody calls. Two safeguards catch it:
///
/// - **At compile time**, the Swift compiler warns about near misses declared in an extension that states the
///   conformance (`extension Scanner: CBCentralManagerDelegate { … }`, the usual iOS style): "instance method …
///   nearly matches defaulted requirement …". It does not look inside the type's own body.
/// - **At run time**, when an event the application asked for (a discovery after `scanForPeripherals`, a
///   connection after `connect`, a read's value after `readValue`…) reaches the default implementation, the module
///   reports once per delegate type and method, on standard error: "CoreBluetoothCompat: Scanner does not implement
///   centralManager(_:didDiscover:advertisementData:rssi:) …". It is on in debug builds of this module and off in
///   release builds; the environment variable `SWIFT_BLE_DELEGATE_DIAGNOSTICS` (`1` or `0`) or ``isEnabled``
///   overrides that.
public enum CBDelegateDiagnostics {
    private struct State {
        var enabled: Bool
        var reported: Set<String> = []
        var handler: (@Sendable (String) -> Void)?
    }

    private static let state: Locked<State> = {
        #if DEBUG
        var enabled = true
        #else
        var enabled = false
        #endif
        switch ProcessInfo.processInfo.environment["SWIFT_BLE_DELEGATE_DIAGNOSTICS"] {
        case "1": enabled = true
        case "0": enabled = false
        default: break
        }
        return Locked(State(enabled: enabled))
    }()

    /// Whether unhandled events are reported.
    public static var isEnabled: Bool {
        get { state.withLock { $0.enabled } }
        set { state.withLock { $0.enabled = newValue } }
    }

    /// Sends the reports to `handler` instead of standard error (`nil`: standard error again), and forgets which
    /// were reported already.
    public static func setHandler(_ handler: (@Sendable (String) -> Void)?) {
        state.withLock { state in
            state.handler = handler
            state.reported = []
        }
    }

    /// Reports that `requirement` of `delegate`'s protocol has only its default implementation although the
    /// application asked for the event (`asked`), once per delegate type and requirement.
    static func unhandled(_ requirement: String, of delegate: AnyObject, protocol name: String, asked: String) {
        let type = String(describing: Swift.type(of: delegate))
        let key = type + "." + requirement
        let handler = state.withLock { state -> (@Sendable (String) -> Void)?? in
            guard state.enabled, state.reported.insert(key).inserted else { return .none }
            return .some(state.handler)
        }
        guard case .some(let custom) = handler else { return }
        let message = "CoreBluetoothCompat: \(type) does not implement \(name).\(requirement), so the event of \(asked) is dropped. "
            + "If it has a method meant to be this one, its name, labels or types differ (compare them with the protocol)."
        if let custom {
            custom(message)
        } else {
            try? FileHandle.standardError.write(contentsOf: Data((message + "\n").utf8))
        }
    }
}
