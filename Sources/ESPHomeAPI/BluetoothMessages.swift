/// The Bluetooth proxy features a node offers (`bluetooth_proxy_feature_flags` of ``DeviceInfoResponse``).
public struct ESPHomeBluetoothProxyFeatures: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    /// Creates the set from its bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Forwards advertisements heard by a passive scan.
    public static let passiveScan = Self(rawValue: 1 << 0)
    /// Makes GATT connections on the client's behalf.
    public static let activeConnections = Self(rawValue: 1 << 1)
    /// Lets the client keep the services (connect with or without cache, the client writing CCCDs itself).
    public static let remoteCaching = Self(rawValue: 1 << 2)
    /// Pairs and unpairs devices.
    public static let pairing = Self(rawValue: 1 << 3)
    /// Clears a device's GATT cache.
    public static let cacheClearing = Self(rawValue: 1 << 4)
    /// Sends advertisements as raw AD bytes, in batches.
    public static let rawAdvertisements = Self(rawValue: 1 << 5)
    /// Reports the scanner's state and lets the client set passive or active scanning.
    public static let stateAndMode = Self(rawValue: 1 << 6)
    /// Sets a connection's parameters.
    public static let connectionParameters = Self(rawValue: 1 << 7)
}

/// Asks for advertisements (`flags` bit 0: raw, ``BluetoothLERawAdvertisementsResponse``).
public struct SubscribeBluetoothLEAdvertisementsRequest: ESPHomeAPIMessage {
    public static let typeID: UInt32 = 66
    /// The subscription's flags (1: raw advertisements).
    public var flags: UInt32 = 0
    /// Creates the request.
    public init(flags: UInt32 = 1) { self.flags = flags }
    public init(decoding payload: [UInt8]) throws(ESPHomeAPIError) {
        try forEachField(payload) { f throws(ESPHomeAPIError) in if f.number == 1 { flags = try f.uint32() } }
    }
    public func encode(into w: inout ProtoWriter) { w.uint(1, UInt64(flags)) }
}

/// Ends the advertisement subscription.
public struct UnsubscribeBluetoothLEAdvertisementsRequest: ESPHomeAPIEmptyMessage {
    public static let typeID: UInt32 = 87
    /// Creates the request.
    public init() {}
}

/// One advertisement or scan response as heard: the advertiser's address (48 bits, most significant byte first as
/// written `AA:BB:...`), its type (0 public, 1 random), the RSSI and the AD bytes.
public struct BluetoothLERawAdvertisement: Sendable, Hashable {
    /// The advertiser's address as a 48-bit integer.
    public var address: UInt64
    /// The RSSI in dBm.
    public var rssi: Int32
    /// 0: public, 1: random.
    public var addressType: UInt32
    /// The advertising (or scan response) data.
    public var data: [UInt8]
    /// Creates an advertisement.
    public init(address: UInt64, rssi: Int32, addressType: UInt32, data: [UInt8]) {
        self.address = address
        self.rssi = rssi
        self.addressType = addressType
        self.data = data
    }
    init(decoding payload: [UInt8]) throws(ESPHomeAPIError) {
        var address: UInt64 = 0, rssi: Int32 = 0, type: UInt32 = 0, data: [UInt8] = []
        try forEachField(payload) { f throws(ESPHomeAPIError) in
            switch f.number {
            case 1: address = try f.uint()
            case 2: rssi = try f.sint32()
            case 3: type = try f.uint32()
            case 4: data = try f.bytes()
            default: break
            }
        }
        self.init(address: address, rssi: rssi, addressType: type, data: data)
    }
    func encode(into w: inout ProtoWriter) {
        w.uint(1, address)
        w.sint32(2, rssi)
        w.uint(3, UInt64(addressType))
        w.bytes(4, data)
    }
}

/// A batch of raw advertisements.
public struct BluetoothLERawAdvertisementsResponse: ESPHomeAPIMessage {
    public static let typeID: UInt32 = 93
    /// The advertisements, oldest first.
    public var advertisements: [BluetoothLERawAdvertisement] = []
    /// Creates a batch.
    public init(advertisements: [BluetoothLERawAdvertisement]) { self.advertisements = advertisements }
    public init(decoding payload: [UInt8]) throws(ESPHomeAPIError) {
        try forEachField(payload) { f throws(ESPHomeAPIError) in
            if f.number == 1 { advertisements.append(try BluetoothLERawAdvertisement(decoding: try f.bytes())) }
        }
    }
    public func encode(into w: inout ProtoWriter) {
        for a in advertisements { w.message(1) { a.encode(into: &$0) } }
    }
}

/// What a ``BluetoothDeviceRequest`` asks for.
public struct BluetoothDeviceRequestType: RawRepresentable, Sendable, Hashable {
    public var rawValue: UInt32
    /// Creates a request type from its number.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Connect (the first protocol version; the proxy discovers and keeps the services, and writes CCCDs).
    public static let connect = Self(rawValue: 0)
    /// Disconnect.
    public static let disconnect = Self(rawValue: 1)
    /// Pair (bond).
    public static let pair = Self(rawValue: 2)
    /// Remove the bond.
    public static let unpair = Self(rawValue: 3)
    /// Connect; the client has the services cached and will not ask for them.
    public static let connectV3WithCache = Self(rawValue: 4)
    /// Connect; the client will ask for the services.
    public static let connectV3WithoutCache = Self(rawValue: 5)
    /// Forget the device's GATT cache.
    public static let clearCache = Self(rawValue: 6)
}

/// Connect to, disconnect from, pair with, unpair or clear the cache of a device.
public struct BluetoothDeviceRequest: ESPHomeAPIMessage {
    public static let typeID: UInt32 = 68
    /// The device's address as a 48-bit integer.
    public var address: UInt64 = 0
    /// What is asked.
    public var requestType = BluetoothDeviceRequestType.connect
    /// Whether ``addressType`` is given.
    public var hasAddressType = false
    /// 0: public, 1: random.
    public var addressType: UInt32 = 0
    /// Creates a request.
    public init(address: UInt64, requestType: BluetoothDeviceRequestType, addressType: UInt32? = nil) {
        self.address = address
        self.requestType = requestType
        self.hasAddressType = addressType != nil
        self.addressType = addressType ?? 0
    }
    public init(decoding payload: [UInt8]) throws(ESPHomeAPIError) {
        try forEachField(payload) { f throws(ESPHomeAPIError) in
            switch f.number {
            case 1: address = try f.uint()
            case 2: requestType = .init(rawValue: try f.uint32())
            case 3: hasAddressType = try f.bool()
            case 4: addressType = try f.uint32()
            default: break
            }
        }
    }
    public func encode(into w: inout ProtoWriter) {
        w.uint(1, address)
        w.uint(2, UInt64(requestType.rawValue))
        w.bool(3, hasAddressType)
        w.uint(4, UInt64(addressType))
    }
}

/// A device connected or disconnected (or a connection attempt failed: `error` set).
public struct BluetoothDeviceConnectionResponse: ESPHomeAPIMessage {
    public static let typeID: UInt32 = 69
    /// The device's address.
    public var address: UInt64 = 0
    /// Whether it is connected now.
    public var connected = false
    /// The ATT MTU of the connection.
    public var mtu: UInt32 = 0
    /// Why the connection failed or ended (an HCI status), 0 when it did not.
    public var error: Int32 = 0
    /// Creates the message.
    public init(address: UInt64, connected: Bool, mtu: UInt32 = 0, error: Int32 = 0) {
        self.address = address
        self.connected = connected
        self.mtu = mtu
        self.error = error
    }
    public init(decoding payload: [UInt8]) throws(ESPHomeAPIError) {
        try forEachField(payload) { f throws(ESPHomeAPIError) in
            switch f.number {
            case 1: address = try f.uint()
            case 2: connected = try f.bool()
            case 3: mtu = try f.uint32()
            case 4: error = try f.int32()
            default: break
            }
        }
    }
    public func encode(into w: inout ProtoWriter) {
        w.uint(1, address)
        w.bool(2, connected)
        w.uint(3, UInt64(mtu))
        w.int32(4, error)
    }
}

/// A message naming a device and one of its attribute handles (reads, notify requests, their answers, errors).
public protocol BluetoothHandleMessage: ESPHomeAPIMessage {
    /// The device's address.
    var address: UInt64 { get set }
    /// The attribute handle.
    var handle: UInt32 { get set }
    /// Creates the message.
    init(address: UInt64, handle: UInt32)
}

extension BluetoothHandleMessage {
    public init(decoding payload: [UInt8]) throws(ESPHomeAPIError) {
        self.init(address: 0, handle: 0)
        var address: UInt64 = 0, handle: UInt32 = 0
        try forEachField(payload) { f throws(ESPHomeAPIError) in
            switch f.number {
            case 1: address = try f.uint()
            case 2: handle = try f.uint32()
            default: break
            }
        }
        self.address = address
        self.handle = handle
    }
    public func encode(into w: inout ProtoWriter) {
        w.uint(1, address)
        w.uint(2, UInt64(handle))
    }
}

/// A message naming only a device.
public protocol BluetoothAddressMessage: ESPHomeAPIMessage {
    /// The device's address.
    var address: UInt64 { get set }
    /// Creates the message.
    init(address: UInt64)
}

extension BluetoothAddressMessage {
    public init(decoding payload: [UInt8]) throws(ESPHomeAPIError) {
        var address: UInt64 = 0
        try forEachField(payload) { f throws(ESPHomeAPIError) in if f.number == 1 { address = try f.uint() } }
        self.init(address: address)
    }
    public func encode(into w: inout ProtoWriter) { w.uint(1, address) }
}

/// Every message type a client may send that this module decodes, by type number.
public enum ESPHomeAPIMessages {
    /// The client-to-server messages this module decodes (others are skipped, as ESPHome does).
    public static let fromClient: [UInt32: any ESPHomeAPIMessage.Type] = {
        let types: [any ESPHomeAPIMessage.Type] = [
            HelloRequest.self, AuthenticationRequest.self, DisconnectRequest.self, DisconnectResponse.self, PingRequest.self,
            PingResponse.self, DeviceInfoRequest.self, ListEntitiesRequest.self, SubscribeStatesRequest.self, SubscribeLogsRequest.self,
            SubscribeHomeassistantServicesRequest.self, GetTimeRequest.self, GetTimeResponse.self, SubscribeHomeAssistantStatesRequest.self,
            SubscribeBluetoothLEAdvertisementsRequest.self, UnsubscribeBluetoothLEAdvertisementsRequest.self, BluetoothDeviceRequest.self,
            BluetoothGATTGetServicesRequest.self, BluetoothGATTReadRequest.self, BluetoothGATTWriteRequest.self,
            BluetoothGATTReadDescriptorRequest.self, BluetoothGATTWriteDescriptorRequest.self, BluetoothGATTNotifyRequest.self,
            SubscribeBluetoothConnectionsFreeRequest.self, BluetoothScannerSetModeRequest.self, BluetoothSetConnectionParamsRequest.self,
        ]
        return Dictionary(uniqueKeysWithValues: types.map { ($0.typeID, $0) })
    }()

    /// The server-to-client messages (for clients and tests).
    public static let fromServer: [UInt32: any ESPHomeAPIMessage.Type] = {
        let types: [any ESPHomeAPIMessage.Type] = [
            HelloResponse.self, AuthenticationResponse.self, DisconnectRequest.self, DisconnectResponse.self, PingRequest.self,
            PingResponse.self, DeviceInfoResponse.self, ListEntitiesDoneResponse.self, GetTimeRequest.self,
            BluetoothLERawAdvertisementsResponse.self, BluetoothDeviceConnectionResponse.self, BluetoothGATTGetServicesResponse.self,
            BluetoothGATTGetServicesDoneResponse.self, BluetoothGATTReadResponse.self, BluetoothGATTNotifyDataResponse.self,
            BluetoothConnectionsFreeResponse.self, BluetoothGATTErrorResponse.self, BluetoothGATTWriteResponse.self,
            BluetoothGATTNotifyResponse.self, BluetoothDevicePairingResponse.self, BluetoothDeviceUnpairingResponse.self,
            BluetoothDeviceClearCacheResponse.self, BluetoothScannerStateResponse.self, BluetoothSetConnectionParamsResponse.self,
        ]
        return Dictionary(uniqueKeysWithValues: types.map { ($0.typeID, $0) })
    }()

    /// Decodes a message of a type in `table`; `nil` for a type it does not hold.
    public static func decode(type: UInt32, payload: [UInt8], from table: [UInt32: any ESPHomeAPIMessage.Type])
        throws(ESPHomeAPIError) -> (any ESPHomeAPIMessage)? {
        guard let messageType = table[type] else { return nil }
        return try messageType.init(decoding: payload)
    }
}
