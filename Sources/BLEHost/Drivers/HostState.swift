import BLEProtocols
import BLETransport
import BLEWire

/// What the host knows of its controller and itself after bring-up, and its counters.
struct ControllerState {
    /// The adapter state.
    var state: AdapterState = .unknown
    /// The controller's public address; `nil` when it has none.
    var publicAddress: BluetoothAddress?
    /// This host's identity address (see ``HCIHost/ownAddress``).
    var ownAddress: LEAddress?
    /// What the controller can do, as read at bring-up; also the gate on the commands the host sends.
    var capabilities = ControllerCapabilities()
    /// Why the transport could not be opened, for a host created with ``HCIHost/init(unavailable:)``.
    var unavailableReason: TransportError?
    /// Frames received on fixed channels nobody handles, or that could not be decoded.
    var droppedFrames = 0
}

/// The subscribers of a host's events, each with a stream of its own.
struct EventHub {
    private var subscribers: [Int: AsyncStream<HostEvent>.Continuation] = [:]
    private var lastID = 0

    /// Adds a subscriber; returns its identifier (for ``remove(_:)``).
    mutating func add(_ continuation: AsyncStream<HostEvent>.Continuation) -> Int {
        lastID += 1
        subscribers[lastID] = continuation
        return lastID
    }

    mutating func remove(_ id: Int) { subscribers[id] = nil }

    /// Hands `event` to every subscriber.
    func publish(_ event: HostEvent) {
        for continuation in subscribers.values { continuation.yield(event) }
    }
}

/// The host's GATT driver, once someone used GATT on it (``HCIHost/gattDriver()``), and the cache it is to use.
struct SharedGATT {
    var driver: GATTDriver?
    var cache: GATTCache?
}
