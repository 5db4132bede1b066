// The Bluetooth proxy's device and scanner messages: pairing, unpairing and cache clearing outcomes, the scanner's
// state and mode, connection parameters.

/// The outcome of a device request that has a success flag and an error code (pairing, unpairing, cache clearing).
public protocol BluetoothDeviceOutcomeMessage: ESPHomeAPIMessage {
    /// The device's address.
    var address: UInt64 { get set }
    /// Whether it worked.
    var success: Bool { get set }
    /// Why not (0 when it worked).
    var error: Int32 { get set }
    /// Creates the message.
    init(address: UInt64, success: Bool, error: Int32)
}

extension BluetoothDeviceOutcomeMessage {
    public init(decoding payload: [UInt8]) throws(ESPHomeAPIError) {
        var address: UInt64 = 0, success = false, error: Int32 = 0
        try forEachField(payload) { f throws(ESPHomeAPIError) in
            switch f.number {
            case 1: address = try f.uint()
            case 2: success = try f.bool()
            case 3: error = try f.int32()
            default: break
            }
        }
        self.init(address: address, success: success, error: error)
    }
    public func encode(into w: inout ProtoWriter) {
        w.uint(1, address)
        w.bool(2, success)
        w.int32(3, error)
    }
}

/// The outcome of a pairing request (`success` is api.proto's `paired`).
public struct BluetoothDevicePairingResponse: BluetoothDeviceOutcomeMessage {
    public static let typeID: UInt32 = 85
    public var address: UInt64
    public var success: Bool
    public var error: Int32
    /// Creates the message.
    public init(address: UInt64, success: Bool, error: Int32) {
        self.address = address
        self.success = success
        self.error = error
    }
}

/// The outcome of an unpairing request.
public struct BluetoothDeviceUnpairingResponse: BluetoothDeviceOutcomeMessage {
    public static let typeID: UInt32 = 86
    public var address: UInt64
    public var success: Bool
    public var error: Int32
    /// Creates the message.
    public init(address: UInt64, success: Bool, error: Int32) {
        self.address = address
        self.success = success
        self.error = error
    }
}

/// The outcome of a cache clearing request.
public struct BluetoothDeviceClearCacheResponse: BluetoothDeviceOutcomeMessage {
    public static let typeID: UInt32 = 88
    public var address: UInt64
    public var success: Bool
    public var error: Int32
    /// Creates the message.
    public init(address: UInt64, success: Bool, error: Int32) {
        self.address = address
        self.success = success
        self.error = error
    }
}

/// The scanner's state (0 idle, 1 starting, 2 running, 3 failed, 4 stopping, 5 stopped) and mode (0 passive, 1 active).
public struct BluetoothScannerStateResponse: ESPHomeAPIMessage {
    public static let typeID: UInt32 = 126
    /// The state.
    public var state: UInt32 = 0
    /// The mode scanning now.
    public var mode: UInt32 = 0
    /// The mode configured.
    public var configuredMode: UInt32 = 0
    /// Creates the message.
    public init(state: UInt32, mode: UInt32, configuredMode: UInt32) {
        self.state = state
        self.mode = mode
        self.configuredMode = configuredMode
    }
    public init(decoding payload: [UInt8]) throws(ESPHomeAPIError) {
        try forEachField(payload) { f throws(ESPHomeAPIError) in
            switch f.number {
            case 1: state = try f.uint32()
            case 2: mode = try f.uint32()
            case 3: configuredMode = try f.uint32()
            default: break
            }
        }
    }
    public func encode(into w: inout ProtoWriter) {
        w.uint(1, UInt64(state))
        w.uint(2, UInt64(mode))
        w.uint(3, UInt64(configuredMode))
    }
}

/// Sets the scanner's mode (0 passive, 1 active).
public struct BluetoothScannerSetModeRequest: ESPHomeAPIMessage {
    public static let typeID: UInt32 = 127
    /// The mode.
    public var mode: UInt32 = 0
    /// Creates the request.
    public init(mode: UInt32) { self.mode = mode }
    public init(decoding payload: [UInt8]) throws(ESPHomeAPIError) {
        try forEachField(payload) { f throws(ESPHomeAPIError) in if f.number == 1 { mode = try f.uint32() } }
    }
    public func encode(into w: inout ProtoWriter) { w.uint(1, UInt64(mode)) }
}

/// Sets a connected device's connection parameters (intervals in 1.25 ms units, the supervision timeout in 10 ms
/// units, as HCI has them).
public struct BluetoothSetConnectionParamsRequest: ESPHomeAPIMessage {
    public static let typeID: UInt32 = 145
    /// The device's address.
    public var address: UInt64 = 0
    /// The shortest connection interval acceptable.
    public var minInterval: UInt32 = 0
    /// The longest connection interval acceptable.
    public var maxInterval: UInt32 = 0
    /// Connection events the peripheral may skip.
    public var latency: UInt32 = 0
    /// The supervision timeout.
    public var timeout: UInt32 = 0
    /// Creates the request.
    public init(address: UInt64, minInterval: UInt32, maxInterval: UInt32, latency: UInt32, timeout: UInt32) {
        self.address = address
        self.minInterval = minInterval
        self.maxInterval = maxInterval
        self.latency = latency
        self.timeout = timeout
    }
    public init(decoding payload: [UInt8]) throws(ESPHomeAPIError) {
        try forEachField(payload) { f throws(ESPHomeAPIError) in
            switch f.number {
            case 1: address = try f.uint()
            case 2: minInterval = try f.uint32()
            case 3: maxInterval = try f.uint32()
            case 4: latency = try f.uint32()
            case 5: timeout = try f.uint32()
            default: break
            }
        }
    }
    public func encode(into w: inout ProtoWriter) {
        w.uint(1, address)
        w.uint(2, UInt64(minInterval))
        w.uint(3, UInt64(maxInterval))
        w.uint(4, UInt64(latency))
        w.uint(5, UInt64(timeout))
    }
}

/// The outcome of ``BluetoothSetConnectionParamsRequest`` (`error` 0: applied; otherwise an HCI status).
public struct BluetoothSetConnectionParamsResponse: ESPHomeAPIMessage {
    public static let typeID: UInt32 = 146
    /// The device's address.
    public var address: UInt64 = 0
    /// 0, or why the parameters were not applied.
    public var error: Int32 = 0
    /// Creates the message.
    public init(address: UInt64, error: Int32) {
        self.address = address
        self.error = error
    }
    public init(decoding payload: [UInt8]) throws(ESPHomeAPIError) {
        try forEachField(payload) { f throws(ESPHomeAPIError) in
            switch f.number {
            case 1: address = try f.uint()
            case 2: error = try f.int32()
            default: break
            }
        }
    }
    public func encode(into w: inout ProtoWriter) {
        w.uint(1, address)
        w.int32(2, error)
    }
}
