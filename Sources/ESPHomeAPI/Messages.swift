/// A message of the ESPHome native API: its type number on the wire and its protobuf body. Decoding skips fields of
/// numbers it does not know (a newer client's additions), as protobuf does.
public protocol ESPHomeAPIMessage: Sendable, Hashable {
    /// The message's type number (the `id` option of api.proto).
    static var typeID: UInt32 { get }
    /// Decodes the message's protobuf body.
    init(decoding payload: [UInt8]) throws(ESPHomeAPIError)
    /// Writes the message's protobuf body.
    func encode(into writer: inout ProtoWriter)
}

extension ESPHomeAPIMessage {
    /// The message's protobuf body.
    public func encoded() -> [UInt8] {
        var writer = ProtoWriter()
        encode(into: &writer)
        return writer.bytes
    }
}

/// Reads every field of `payload`, handing each to `body` (which ignores the numbers it does not know).
func forEachField(_ payload: [UInt8], _ body: (ProtoField) throws(ESPHomeAPIError) -> Void) throws(ESPHomeAPIError) {
    var reader = ProtoReader(payload)
    while let field = try reader.next() { try body(field) }
}

/// A message without fields.
public protocol ESPHomeAPIEmptyMessage: ESPHomeAPIMessage {
    /// Creates the message.
    init()
}

extension ESPHomeAPIEmptyMessage {
    /// Decodes the message, skipping whatever fields a newer peer put in it.
    public init(decoding payload: [UInt8]) throws(ESPHomeAPIError) {
        try forEachField(payload) { _ throws(ESPHomeAPIError) in }
        self.init()
    }
    /// Writes nothing: the message has no fields.
    public func encode(into writer: inout ProtoWriter) {}
}

// MARK: - Connection

/// The client's first message: who it is and the API version it speaks.
public struct HelloRequest: ESPHomeAPIMessage {
    public static let typeID: UInt32 = 1
    /// The client's description (`aioesphomeapi`, `Home Assistant 2025.1`...).
    public var clientInfo = ""
    /// The API version the client speaks.
    public var apiVersionMajor: UInt32 = 0
    /// The API version the client speaks (minor).
    public var apiVersionMinor: UInt32 = 0
    /// Creates a hello.
    public init(clientInfo: String = "", apiVersionMajor: UInt32 = 1, apiVersionMinor: UInt32 = 10) {
        self.clientInfo = clientInfo
        self.apiVersionMajor = apiVersionMajor
        self.apiVersionMinor = apiVersionMinor
    }
    public init(decoding payload: [UInt8]) throws(ESPHomeAPIError) {
        try forEachField(payload) { f throws(ESPHomeAPIError) in
            switch f.number {
            case 1: clientInfo = try f.string()
            case 2: apiVersionMajor = try f.uint32()
            case 3: apiVersionMinor = try f.uint32()
            default: break
            }
        }
    }
    public func encode(into w: inout ProtoWriter) {
        w.string(1, clientInfo)
        w.uint(2, UInt64(apiVersionMajor))
        w.uint(3, UInt64(apiVersionMinor))
    }
}

/// The server's answer to ``HelloRequest``.
public struct HelloResponse: ESPHomeAPIMessage {
    public static let typeID: UInt32 = 2
    /// The API version the server speaks.
    public var apiVersionMajor: UInt32 = 0
    /// The API version the server speaks (minor).
    public var apiVersionMinor: UInt32 = 0
    /// The server's description.
    public var serverInfo = ""
    /// The node name.
    public var name = ""
    /// Creates a hello response.
    public init(apiVersionMajor: UInt32, apiVersionMinor: UInt32, serverInfo: String, name: String) {
        self.apiVersionMajor = apiVersionMajor
        self.apiVersionMinor = apiVersionMinor
        self.serverInfo = serverInfo
        self.name = name
    }
    public init(decoding payload: [UInt8]) throws(ESPHomeAPIError) {
        try forEachField(payload) { f throws(ESPHomeAPIError) in
            switch f.number {
            case 1: apiVersionMajor = try f.uint32()
            case 2: apiVersionMinor = try f.uint32()
            case 3: serverInfo = try f.string()
            case 4: name = try f.string()
            default: break
            }
        }
    }
    public func encode(into w: inout ProtoWriter) {
        w.uint(1, UInt64(apiVersionMajor))
        w.uint(2, UInt64(apiVersionMinor))
        w.string(3, serverInfo)
        w.string(4, name)
    }
}

/// A password login (older clients; called ConnectRequest before). This server has no password: encryption is
/// what admits a client.
public struct AuthenticationRequest: ESPHomeAPIMessage {
    public static let typeID: UInt32 = 3
    /// The password given.
    public var password = ""
    /// Creates a login.
    public init(password: String = "") { self.password = password }
    public init(decoding payload: [UInt8]) throws(ESPHomeAPIError) {
        try forEachField(payload) { f throws(ESPHomeAPIError) in if f.number == 1 { password = try f.string() } }
    }
    public func encode(into w: inout ProtoWriter) { w.string(1, password) }
}

/// The answer to ``AuthenticationRequest``.
public struct AuthenticationResponse: ESPHomeAPIMessage {
    public static let typeID: UInt32 = 4
    /// Whether the password was refused.
    public var invalidPassword = false
    /// Creates the answer.
    public init(invalidPassword: Bool = false) { self.invalidPassword = invalidPassword }
    public init(decoding payload: [UInt8]) throws(ESPHomeAPIError) {
        try forEachField(payload) { f throws(ESPHomeAPIError) in if f.number == 1 { invalidPassword = try f.bool() } }
    }
    public func encode(into w: inout ProtoWriter) { w.bool(1, invalidPassword) }
}

/// Either side is closing the connection.
public struct DisconnectRequest: ESPHomeAPIMessage {
    public static let typeID: UInt32 = 5
    /// Why (an enum of api.proto; 0 when not given).
    public var reason: UInt32 = 0
    /// Creates the request.
    public init(reason: UInt32 = 0) { self.reason = reason }
    public init(decoding payload: [UInt8]) throws(ESPHomeAPIError) {
        try forEachField(payload) { f throws(ESPHomeAPIError) in if f.number == 1 { reason = try f.uint32() } }
    }
    public func encode(into w: inout ProtoWriter) { w.uint(1, UInt64(reason)) }
}

/// The answer to ``DisconnectRequest``.
public struct DisconnectResponse: ESPHomeAPIEmptyMessage {
    public static let typeID: UInt32 = 6
    /// Creates the answer.
    public init() {}
}

/// A keep-alive probe (either side).
public struct PingRequest: ESPHomeAPIEmptyMessage {
    public static let typeID: UInt32 = 7
    /// Creates a ping.
    public init() {}
}

/// The answer to ``PingRequest``.
public struct PingResponse: ESPHomeAPIEmptyMessage {
    public static let typeID: UInt32 = 8
    /// Creates a pong.
    public init() {}
}

/// Asks for ``DeviceInfoResponse``.
public struct DeviceInfoRequest: ESPHomeAPIEmptyMessage {
    public static let typeID: UInt32 = 9
    /// Creates the request.
    public init() {}
}

/// What the node is, and which Bluetooth proxy features it offers.
public struct DeviceInfoResponse: ESPHomeAPIMessage {
    public static let typeID: UInt32 = 10
    /// The node name.
    public var name = ""
    /// The node's MAC address (`AA:BB:CC:DD:EE:FF`).
    public var macAddress = ""
    /// The firmware version (for ESPHome, its version; here the proxy's).
    public var esphomeVersion = ""
    /// The board model.
    public var model = ""
    /// The maker.
    public var manufacturer = ""
    /// The name shown to people.
    public var friendlyName = ""
    /// ``ESPHomeBluetoothProxyFeatures`` offered (0: no Bluetooth proxy).
    public var bluetoothProxyFeatureFlags: UInt32 = 0
    /// The Bluetooth controller's address (`AA:BB:CC:DD:EE:FF`).
    public var bluetoothMACAddress = ""
    /// Whether the node takes encrypted connections.
    public var apiEncryptionSupported = false
    /// Creates device information.
    public init(name: String = "", macAddress: String = "", esphomeVersion: String = "", model: String = "", manufacturer: String = "",
                friendlyName: String = "", bluetoothProxyFeatureFlags: UInt32 = 0, bluetoothMACAddress: String = "",
                apiEncryptionSupported: Bool = false) {
        self.name = name
        self.macAddress = macAddress
        self.esphomeVersion = esphomeVersion
        self.model = model
        self.manufacturer = manufacturer
        self.friendlyName = friendlyName
        self.bluetoothProxyFeatureFlags = bluetoothProxyFeatureFlags
        self.bluetoothMACAddress = bluetoothMACAddress
        self.apiEncryptionSupported = apiEncryptionSupported
    }
    public init(decoding payload: [UInt8]) throws(ESPHomeAPIError) {
        try forEachField(payload) { f throws(ESPHomeAPIError) in
            switch f.number {
            case 2: name = try f.string()
            case 3: macAddress = try f.string()
            case 4: esphomeVersion = try f.string()
            case 6: model = try f.string()
            case 12: manufacturer = try f.string()
            case 13: friendlyName = try f.string()
            case 15: bluetoothProxyFeatureFlags = try f.uint32()
            case 18: bluetoothMACAddress = try f.string()
            case 19: apiEncryptionSupported = try f.bool()
            default: break
            }
        }
    }
    public func encode(into w: inout ProtoWriter) {
        w.string(2, name)
        w.string(3, macAddress)
        w.string(4, esphomeVersion)
        w.string(6, model)
        w.string(12, manufacturer)
        w.string(13, friendlyName)
        w.uint(15, UInt64(bluetoothProxyFeatureFlags))
        w.string(18, bluetoothMACAddress)
        w.bool(19, apiEncryptionSupported)
    }
}

/// Asks for the node's entities (a proxy has none: ``ListEntitiesDoneResponse`` follows at once).
public struct ListEntitiesRequest: ESPHomeAPIEmptyMessage {
    public static let typeID: UInt32 = 11
    /// Creates the request.
    public init() {}
}

/// The end of the entity list.
public struct ListEntitiesDoneResponse: ESPHomeAPIEmptyMessage {
    public static let typeID: UInt32 = 19
    /// Creates the message.
    public init() {}
}

/// Asks for entity states as they change (a proxy has no entities: nothing follows).
public struct SubscribeStatesRequest: ESPHomeAPIEmptyMessage {
    public static let typeID: UInt32 = 20
    /// Creates the request.
    public init() {}
}

/// Asks for the node's log lines.
public struct SubscribeLogsRequest: ESPHomeAPIMessage {
    public static let typeID: UInt32 = 28
    /// The most verbose level wanted.
    public var level: UInt32 = 0
    /// Whether the configuration should be dumped first.
    public var dumpConfig = false
    /// Creates the request.
    public init(level: UInt32 = 0, dumpConfig: Bool = false) {
        self.level = level
        self.dumpConfig = dumpConfig
    }
    public init(decoding payload: [UInt8]) throws(ESPHomeAPIError) {
        try forEachField(payload) { f throws(ESPHomeAPIError) in
            switch f.number {
            case 1: level = try f.uint32()
            case 2: dumpConfig = try f.bool()
            default: break
            }
        }
    }
    public func encode(into w: inout ProtoWriter) {
        w.uint(1, UInt64(level))
        w.bool(2, dumpConfig)
    }
}

/// Asks for the Home Assistant actions the node calls (a proxy calls none).
public struct SubscribeHomeassistantServicesRequest: ESPHomeAPIEmptyMessage {
    public static let typeID: UInt32 = 34
    /// Creates the request.
    public init() {}
}

/// Asks the other side for the time.
public struct GetTimeRequest: ESPHomeAPIEmptyMessage {
    public static let typeID: UInt32 = 36
    /// Creates the request.
    public init() {}
}

/// The time, answering ``GetTimeRequest``.
public struct GetTimeResponse: ESPHomeAPIMessage {
    public static let typeID: UInt32 = 37
    /// Seconds since 1970.
    public var epochSeconds: UInt32 = 0
    /// Creates the answer.
    public init(epochSeconds: UInt32 = 0) { self.epochSeconds = epochSeconds }
    public init(decoding payload: [UInt8]) throws(ESPHomeAPIError) {
        try forEachField(payload) { f throws(ESPHomeAPIError) in if f.number == 1 { epochSeconds = try f.uint32() } }
    }
    public func encode(into w: inout ProtoWriter) { w.fixed32(1, epochSeconds) }
}

/// Asks for the Home Assistant states the node watches (a proxy watches none).
public struct SubscribeHomeAssistantStatesRequest: ESPHomeAPIEmptyMessage {
    public static let typeID: UInt32 = 38
    /// Creates the request.
    public init() {}
}
