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

/// Asks for a connected device's services.
public struct BluetoothGATTGetServicesRequest: BluetoothAddressMessage {
    public static let typeID: UInt32 = 70
    public var address: UInt64
    /// Creates the request.
    public init(address: UInt64) { self.address = address }
}

/// A 128-bit UUID as api.proto carries it: two `uint64`, the most significant half first.
public struct ESPHomeUUID: Sendable, Hashable {
    /// The most significant 64 bits.
    public var high: UInt64
    /// The least significant 64 bits.
    public var low: UInt64
    /// Creates a UUID from its halves.
    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }
    /// Creates a UUID from its 16 bytes, most significant first.
    public init?(bigEndian bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        high = bytes[0..<8].reduce(0) { $0 << 8 | UInt64($1) }
        low = bytes[8..<16].reduce(0) { $0 << 8 | UInt64($1) }
    }
    fileprivate init(_ words: [UInt64]) {
        high = words.first ?? 0
        low = words.count > 1 ? words[1] : 0
    }
}

/// A descriptor of ``BluetoothGATTCharacteristic``.
public struct BluetoothGATTDescriptor: Sendable, Hashable {
    /// Its type.
    public var uuid: ESPHomeUUID
    /// Its handle.
    public var handle: UInt32
    /// Creates a descriptor.
    public init(uuid: ESPHomeUUID, handle: UInt32) {
        self.uuid = uuid
        self.handle = handle
    }
    init(decoding payload: [UInt8]) throws(ESPHomeAPIError) {
        var uuid = ESPHomeUUID(high: 0, low: 0), handle: UInt32 = 0, short: UInt32 = 0
        try forEachField(payload) { f throws(ESPHomeAPIError) in
            switch f.number {
            case 1: uuid = ESPHomeUUID(try f.uints())
            case 2: handle = try f.uint32()
            case 3: short = try f.uint32()
            default: break
            }
        }
        self.init(uuid: short != 0 ? .shortened(short) : uuid, handle: handle)
    }
    func encode(into w: inout ProtoWriter) {
        w.packedUInts(1, [uuid.high, uuid.low])
        w.uint(2, UInt64(handle))
    }
}

extension ESPHomeUUID {
    /// A 16- or 32-bit SIG UUID on the Bluetooth base UUID.
    static func shortened(_ value: UInt32) -> ESPHomeUUID {
        ESPHomeUUID(high: UInt64(value) << 32 | 0x0000_1000, low: 0x8000_0080_5F9B_34FB)
    }
}

/// A characteristic of ``BluetoothGATTService``.
public struct BluetoothGATTCharacteristic: Sendable, Hashable {
    /// Its type.
    public var uuid: ESPHomeUUID
    /// Its value handle.
    public var handle: UInt32
    /// Its properties byte (broadcast 0x01, read 0x02, write without response 0x04, write 0x08, notify 0x10...).
    public var properties: UInt32
    /// Its descriptors.
    public var descriptors: [BluetoothGATTDescriptor]
    /// Creates a characteristic.
    public init(uuid: ESPHomeUUID, handle: UInt32, properties: UInt32, descriptors: [BluetoothGATTDescriptor]) {
        self.uuid = uuid
        self.handle = handle
        self.properties = properties
        self.descriptors = descriptors
    }
    init(decoding payload: [UInt8]) throws(ESPHomeAPIError) {
        var uuid = ESPHomeUUID(high: 0, low: 0), handle: UInt32 = 0, properties: UInt32 = 0, short: UInt32 = 0
        var descriptors: [BluetoothGATTDescriptor] = []
        try forEachField(payload) { f throws(ESPHomeAPIError) in
            switch f.number {
            case 1: uuid = ESPHomeUUID(try f.uints())
            case 2: handle = try f.uint32()
            case 3: properties = try f.uint32()
            case 4: descriptors.append(try BluetoothGATTDescriptor(decoding: try f.bytes()))
            case 5: short = try f.uint32()
            default: break
            }
        }
        self.init(uuid: short != 0 ? .shortened(short) : uuid, handle: handle, properties: properties, descriptors: descriptors)
    }
    func encode(into w: inout ProtoWriter) {
        w.packedUInts(1, [uuid.high, uuid.low])
        w.uint(2, UInt64(handle))
        w.uint(3, UInt64(properties))
        for d in descriptors { w.message(4) { d.encode(into: &$0) } }
    }
}

/// A service of a connected device.
public struct BluetoothGATTService: Sendable, Hashable {
    /// Its type.
    public var uuid: ESPHomeUUID
    /// Its declaration handle.
    public var handle: UInt32
    /// Its characteristics.
    public var characteristics: [BluetoothGATTCharacteristic]
    /// Creates a service.
    public init(uuid: ESPHomeUUID, handle: UInt32, characteristics: [BluetoothGATTCharacteristic]) {
        self.uuid = uuid
        self.handle = handle
        self.characteristics = characteristics
    }
    init(decoding payload: [UInt8]) throws(ESPHomeAPIError) {
        var uuid = ESPHomeUUID(high: 0, low: 0), handle: UInt32 = 0, short: UInt32 = 0
        var characteristics: [BluetoothGATTCharacteristic] = []
        try forEachField(payload) { f throws(ESPHomeAPIError) in
            switch f.number {
            case 1: uuid = ESPHomeUUID(try f.uints())
            case 2: handle = try f.uint32()
            case 3: characteristics.append(try BluetoothGATTCharacteristic(decoding: try f.bytes()))
            case 4: short = try f.uint32()
            default: break
            }
        }
        self.init(uuid: short != 0 ? .shortened(short) : uuid, handle: handle, characteristics: characteristics)
    }
    func encode(into w: inout ProtoWriter) {
        w.packedUInts(1, [uuid.high, uuid.low])
        w.uint(2, UInt64(handle))
        for c in characteristics { w.message(3) { c.encode(into: &$0) } }
    }
}

/// Some of a device's services (``BluetoothGATTGetServicesDoneResponse`` ends the list).
public struct BluetoothGATTGetServicesResponse: ESPHomeAPIMessage {
    public static let typeID: UInt32 = 71
    /// The device's address.
    public var address: UInt64 = 0
    /// The services.
    public var services: [BluetoothGATTService] = []
    /// Creates the message.
    public init(address: UInt64, services: [BluetoothGATTService]) {
        self.address = address
        self.services = services
    }
    public init(decoding payload: [UInt8]) throws(ESPHomeAPIError) {
        try forEachField(payload) { f throws(ESPHomeAPIError) in
            switch f.number {
            case 1: address = try f.uint()
            case 2: services.append(try BluetoothGATTService(decoding: try f.bytes()))
            default: break
            }
        }
    }
    public func encode(into w: inout ProtoWriter) {
        w.uint(1, address)
        for s in services { w.message(2) { s.encode(into: &$0) } }
    }
}

/// The end of a device's services.
public struct BluetoothGATTGetServicesDoneResponse: BluetoothAddressMessage {
    public static let typeID: UInt32 = 72
    public var address: UInt64
    /// Creates the message.
    public init(address: UInt64) { self.address = address }
}

/// Reads a characteristic value.
public struct BluetoothGATTReadRequest: BluetoothHandleMessage {
    public static let typeID: UInt32 = 73
    public var address: UInt64
    public var handle: UInt32
    /// Creates the request.
    public init(address: UInt64, handle: UInt32) {
        self.address = address
        self.handle = handle
    }
}

/// Reads a descriptor value.
public struct BluetoothGATTReadDescriptorRequest: BluetoothHandleMessage {
    public static let typeID: UInt32 = 76
    public var address: UInt64
    public var handle: UInt32
    /// Creates the request.
    public init(address: UInt64, handle: UInt32) {
        self.address = address
        self.handle = handle
    }
}

/// A value read (a characteristic's or a descriptor's) or notified: the handle and the bytes.
public protocol BluetoothHandleDataMessage: ESPHomeAPIMessage {
    /// The device's address.
    var address: UInt64 { get set }
    /// The attribute handle.
    var handle: UInt32 { get set }
    /// The value.
    var data: [UInt8] { get set }
    /// Creates the message.
    init(address: UInt64, handle: UInt32, data: [UInt8])
}

extension BluetoothHandleDataMessage {
    public init(decoding payload: [UInt8]) throws(ESPHomeAPIError) {
        var address: UInt64 = 0, handle: UInt32 = 0, data: [UInt8] = []
        try forEachField(payload) { f throws(ESPHomeAPIError) in
            switch f.number {
            case 1: address = try f.uint()
            case 2: handle = try f.uint32()
            case 3: data = try f.bytes()
            default: break
            }
        }
        self.init(address: address, handle: handle, data: data)
    }
    public func encode(into w: inout ProtoWriter) {
        w.uint(1, address)
        w.uint(2, UInt64(handle))
        w.bytes(3, data)
    }
}

/// The value a read returned (characteristic or descriptor).
public struct BluetoothGATTReadResponse: BluetoothHandleDataMessage {
    public static let typeID: UInt32 = 74
    public var address: UInt64
    public var handle: UInt32
    public var data: [UInt8]
    /// Creates the message.
    public init(address: UInt64, handle: UInt32, data: [UInt8]) {
        self.address = address
        self.handle = handle
        self.data = data
    }
}

/// Writes a descriptor (with a Write Request).
public struct BluetoothGATTWriteDescriptorRequest: BluetoothHandleDataMessage {
    public static let typeID: UInt32 = 77
    public var address: UInt64
    public var handle: UInt32
    public var data: [UInt8]
    /// Creates the request.
    public init(address: UInt64, handle: UInt32, data: [UInt8]) {
        self.address = address
        self.handle = handle
        self.data = data
    }
}

/// A notification or indication from a device.
public struct BluetoothGATTNotifyDataResponse: BluetoothHandleDataMessage {
    public static let typeID: UInt32 = 79
    public var address: UInt64
    public var handle: UInt32
    public var data: [UInt8]
    /// Creates the message.
    public init(address: UInt64, handle: UInt32, data: [UInt8]) {
        self.address = address
        self.handle = handle
        self.data = data
    }
}

/// Writes a characteristic value, with or without response.
public struct BluetoothGATTWriteRequest: ESPHomeAPIMessage {
    public static let typeID: UInt32 = 75
    /// The device's address.
    public var address: UInt64 = 0
    /// The value handle.
    public var handle: UInt32 = 0
    /// With a Write Request (true) or a Write Command (false).
    public var response = false
    /// The value.
    public var data: [UInt8] = []
    /// Creates the request.
    public init(address: UInt64, handle: UInt32, response: Bool, data: [UInt8]) {
        self.address = address
        self.handle = handle
        self.response = response
        self.data = data
    }
    public init(decoding payload: [UInt8]) throws(ESPHomeAPIError) {
        try forEachField(payload) { f throws(ESPHomeAPIError) in
            switch f.number {
            case 1: address = try f.uint()
            case 2: handle = try f.uint32()
            case 3: response = try f.bool()
            case 4: data = try f.bytes()
            default: break
            }
        }
    }
    public func encode(into w: inout ProtoWriter) {
        w.uint(1, address)
        w.uint(2, UInt64(handle))
        w.bool(3, response)
        w.bytes(4, data)
    }
}

/// Turns notifications of a characteristic on or off.
public struct BluetoothGATTNotifyRequest: ESPHomeAPIMessage {
    public static let typeID: UInt32 = 78
    /// The device's address.
    public var address: UInt64 = 0
    /// The value handle.
    public var handle: UInt32 = 0
    /// On or off.
    public var enable = false
    /// Creates the request.
    public init(address: UInt64, handle: UInt32, enable: Bool) {
        self.address = address
        self.handle = handle
        self.enable = enable
    }
    public init(decoding payload: [UInt8]) throws(ESPHomeAPIError) {
        try forEachField(payload) { f throws(ESPHomeAPIError) in
            switch f.number {
            case 1: address = try f.uint()
            case 2: handle = try f.uint32()
            case 3: enable = try f.bool()
            default: break
            }
        }
    }
    public func encode(into w: inout ProtoWriter) {
        w.uint(1, address)
        w.uint(2, UInt64(handle))
        w.bool(3, enable)
    }
}

/// Asks for ``BluetoothConnectionsFreeResponse`` now and whenever it changes.
public struct SubscribeBluetoothConnectionsFreeRequest: ESPHomeAPIEmptyMessage {
    public static let typeID: UInt32 = 80
    /// Creates the request.
    public init() {}
}

/// How many connection slots are free, of how many, and which devices hold the others.
public struct BluetoothConnectionsFreeResponse: ESPHomeAPIMessage {
    public static let typeID: UInt32 = 81
    /// Free slots.
    public var free: UInt32 = 0
    /// All slots.
    public var limit: UInt32 = 0
    /// The addresses holding slots.
    public var allocated: [UInt64] = []
    /// Creates the message.
    public init(free: UInt32, limit: UInt32, allocated: [UInt64]) {
        self.free = free
        self.limit = limit
        self.allocated = allocated
    }
    public init(decoding payload: [UInt8]) throws(ESPHomeAPIError) {
        try forEachField(payload) { f throws(ESPHomeAPIError) in
            switch f.number {
            case 1: free = try f.uint32()
            case 2: limit = try f.uint32()
            case 3: allocated += try f.uints()
            default: break
            }
        }
    }
    public func encode(into w: inout ProtoWriter) {
        w.uint(1, UInt64(free))
        w.uint(2, UInt64(limit))
        w.packedUInts(3, allocated)
    }
}

/// A GATT operation failed: the handle and the ATT error code (or another GATT status).
public struct BluetoothGATTErrorResponse: ESPHomeAPIMessage {
    public static let typeID: UInt32 = 82
    /// The device's address.
    public var address: UInt64 = 0
    /// The handle of the failed operation.
    public var handle: UInt32 = 0
    /// The ATT error code (0x01-0xFF), or a GATT status.
    public var error: Int32 = 0
    /// Creates the message.
    public init(address: UInt64, handle: UInt32, error: Int32) {
        self.address = address
        self.handle = handle
        self.error = error
    }
    public init(decoding payload: [UInt8]) throws(ESPHomeAPIError) {
        try forEachField(payload) { f throws(ESPHomeAPIError) in
            switch f.number {
            case 1: address = try f.uint()
            case 2: handle = try f.uint32()
            case 3: error = try f.int32()
            default: break
            }
        }
    }
    public func encode(into w: inout ProtoWriter) {
        w.uint(1, address)
        w.uint(2, UInt64(handle))
        w.int32(3, error)
    }
}

/// A write (characteristic or descriptor) succeeded.
public struct BluetoothGATTWriteResponse: BluetoothHandleMessage {
    public static let typeID: UInt32 = 83
    public var address: UInt64
    public var handle: UInt32
    /// Creates the message.
    public init(address: UInt64, handle: UInt32) {
        self.address = address
        self.handle = handle
    }
}

/// A notify request was carried out.
public struct BluetoothGATTNotifyResponse: BluetoothHandleMessage {
    public static let typeID: UInt32 = 84
    public var address: UInt64
    public var handle: UInt32
    /// Creates the message.
    public init(address: UInt64, handle: UInt32) {
        self.address = address
        self.handle = handle
    }
}

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
