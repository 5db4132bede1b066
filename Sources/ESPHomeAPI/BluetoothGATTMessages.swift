// The Bluetooth proxy's GATT messages: services, reads, writes, descriptors, notifications, their errors, and the
// connection slots.

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
