// LE Meta subevents about connections and security.

/// A typed LE Meta subevent's parameters (everything after the subevent code).
public protocol HCILEMetaEventParameters: WireCodable {
    /// The subevent code.
    static var subevent: HCILESubeventCode { get }
}

extension HCILEMetaEventParameters {
    /// The LE Meta event packet carrying these parameters.
    public var packet: HCIEventPacket { HCIEventPacket(code: .leMeta, parameters: [Self.subevent.rawValue] + encoded) }
}

/// The role of the local device on a connection. Core 5.4, Vol 4, Part E, 7.7.65.1.
public struct HCIRole: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Central (0x00).
    public static let central = HCIRole(rawValue: 0x00)
    /// Peripheral (0x01).
    public static let peripheral = HCIRole(rawValue: 0x01)
}

/// LE Connection Complete. Core 5.4, Vol 4, Part E, 7.7.65.1.
public struct HCILEConnectionCompleteEvent: HCILEMetaEventParameters, Hashable {
    /// The LE Meta subevent code.
    public static let subevent = HCILESubeventCode.connectionComplete
    /// `Status`.
    public var status: HCIStatus
    /// `Connection_Handle`.
    public var handle: ConnectionHandle
    /// `Role`.
    public var role: HCIRole
    /// `Peer_Address_Type`.
    public var peerAddressType: LEAddressType
    /// Peer address.
    public var peerAddress: BluetoothAddress
    /// Connection interval in 1.25 ms units.
    public var connectionInterval: UInt16
    /// `Peripheral_Latency`.
    public var peripheralLatency: UInt16
    /// Supervision timeout in 10 ms units.
    public var supervisionTimeout: UInt16
    /// `Central_Clock_Accuracy`.
    public var centralClockAccuracy: UInt8

    /// Creates an LE Connection Complete event for the connection `handle` to the peer, with this side's role and the
    /// connection's parameters.
    public init(status: HCIStatus = .success, handle: ConnectionHandle, role: HCIRole, peerAddressType: LEAddressType,
                peerAddress: BluetoothAddress, connectionInterval: UInt16, peripheralLatency: UInt16,
                supervisionTimeout: UInt16, centralClockAccuracy: UInt8 = 0) {
        self.status = status
        self.handle = handle
        self.role = role
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.connectionInterval = connectionInterval
        self.peripheralLatency = peripheralLatency
        self.supervisionTimeout = supervisionTimeout
        self.centralClockAccuracy = centralClockAccuracy
    }
    public init(from reader: inout ByteReader) throws(WireError) {
        status = HCIStatus(rawValue: try reader.readUInt8("Status"))
        handle = try reader.readConnectionHandle("Connection_Handle")
        role = HCIRole(rawValue: try reader.readUInt8("Role"))
        peerAddressType = LEAddressType(rawValue: try reader.readUInt8("Peer_Address_Type"))
        peerAddress = try BluetoothAddress(from: &reader)
        connectionInterval = try reader.readUInt16("Connection_Interval")
        peripheralLatency = try reader.readUInt16("Peripheral_Latency")
        supervisionTimeout = try reader.readUInt16("Supervision_Timeout")
        centralClockAccuracy = try reader.readUInt8("Central_Clock_Accuracy")
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(status.rawValue)
        writer.write(handle)
        writer.write(role.rawValue)
        writer.write(peerAddressType.rawValue)
        peerAddress.encode(into: &writer)
        writer.write(connectionInterval)
        writer.write(peripheralLatency)
        writer.write(supervisionTimeout)
        writer.write(centralClockAccuracy)
    }
}

/// LE Enhanced Connection Complete [v1]. Core 5.4, Vol 4, Part E, 7.7.65.10.
public struct HCILEEnhancedConnectionCompleteEvent: HCILEMetaEventParameters, Hashable {
    /// The LE Meta subevent code.
    public static let subevent = HCILESubeventCode.enhancedConnectionComplete
    /// `Status`.
    public var status: HCIStatus
    /// `Connection_Handle`.
    public var handle: ConnectionHandle
    /// `Role`.
    public var role: HCIRole
    /// `Peer_Address_Type`.
    public var peerAddressType: LEAddressType
    /// Peer address.
    public var peerAddress: BluetoothAddress
    /// Local resolvable private address.
    public var localResolvablePrivateAddress: BluetoothAddress
    /// Peer resolvable private address.
    public var peerResolvablePrivateAddress: BluetoothAddress
    /// `Connection_Interval`.
    public var connectionInterval: UInt16
    /// `Peripheral_Latency`.
    public var peripheralLatency: UInt16
    /// `Supervision_Timeout`.
    public var supervisionTimeout: UInt16
    /// `Central_Clock_Accuracy`.
    public var centralClockAccuracy: UInt8

    /// Creates an LE Enhanced Connection Complete event for the connection `handle`, with the peer's and the local
    /// resolvable private addresses and the connection's parameters.
    public init(status: HCIStatus = .success, handle: ConnectionHandle, role: HCIRole, peerAddressType: LEAddressType,
                peerAddress: BluetoothAddress, localResolvablePrivateAddress: BluetoothAddress = .zero,
                peerResolvablePrivateAddress: BluetoothAddress = .zero, connectionInterval: UInt16,
                peripheralLatency: UInt16, supervisionTimeout: UInt16, centralClockAccuracy: UInt8 = 0) {
        self.status = status
        self.handle = handle
        self.role = role
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.localResolvablePrivateAddress = localResolvablePrivateAddress
        self.peerResolvablePrivateAddress = peerResolvablePrivateAddress
        self.connectionInterval = connectionInterval
        self.peripheralLatency = peripheralLatency
        self.supervisionTimeout = supervisionTimeout
        self.centralClockAccuracy = centralClockAccuracy
    }
    public init(from reader: inout ByteReader) throws(WireError) {
        status = HCIStatus(rawValue: try reader.readUInt8("Status"))
        handle = try reader.readConnectionHandle("Connection_Handle")
        role = HCIRole(rawValue: try reader.readUInt8("Role"))
        peerAddressType = LEAddressType(rawValue: try reader.readUInt8("Peer_Address_Type"))
        peerAddress = try BluetoothAddress(from: &reader)
        localResolvablePrivateAddress = try BluetoothAddress(from: &reader)
        peerResolvablePrivateAddress = try BluetoothAddress(from: &reader)
        connectionInterval = try reader.readUInt16("Connection_Interval")
        peripheralLatency = try reader.readUInt16("Peripheral_Latency")
        supervisionTimeout = try reader.readUInt16("Supervision_Timeout")
        centralClockAccuracy = try reader.readUInt8("Central_Clock_Accuracy")
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(status.rawValue)
        writer.write(handle)
        writer.write(role.rawValue)
        writer.write(peerAddressType.rawValue)
        peerAddress.encode(into: &writer)
        localResolvablePrivateAddress.encode(into: &writer)
        peerResolvablePrivateAddress.encode(into: &writer)
        writer.write(connectionInterval)
        writer.write(peripheralLatency)
        writer.write(supervisionTimeout)
        writer.write(centralClockAccuracy)
    }
}

/// LE Connection Update Complete. Core 5.4, Vol 4, Part E, 7.7.65.3.
public struct HCILEConnectionUpdateCompleteEvent: HCILEMetaEventParameters, Hashable {
    /// The LE Meta subevent code.
    public static let subevent = HCILESubeventCode.connectionUpdateComplete
    /// `Status`.
    public var status: HCIStatus
    /// `Connection_Handle`.
    public var handle: ConnectionHandle
    /// `Connection_Interval`.
    public var connectionInterval: UInt16
    /// `Peripheral_Latency`.
    public var peripheralLatency: UInt16
    /// `Supervision_Timeout`.
    public var supervisionTimeout: UInt16
    /// Creates an LE Connection Update Complete event reporting the new interval, latency and supervision timeout of
    /// the connection `handle`.
    public init(status: HCIStatus = .success, handle: ConnectionHandle, connectionInterval: UInt16, peripheralLatency: UInt16,
                supervisionTimeout: UInt16) {
        self.status = status
        self.handle = handle
        self.connectionInterval = connectionInterval
        self.peripheralLatency = peripheralLatency
        self.supervisionTimeout = supervisionTimeout
    }
    public init(from reader: inout ByteReader) throws(WireError) {
        status = HCIStatus(rawValue: try reader.readUInt8("Status"))
        handle = try reader.readConnectionHandle("Connection_Handle")
        connectionInterval = try reader.readUInt16("Connection_Interval")
        peripheralLatency = try reader.readUInt16("Peripheral_Latency")
        supervisionTimeout = try reader.readUInt16("Supervision_Timeout")
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(status.rawValue)
        writer.write(handle)
        writer.write(connectionInterval)
        writer.write(peripheralLatency)
        writer.write(supervisionTimeout)
    }
}

/// LE Read Remote Features Complete. Core 5.4, Vol 4, Part E, 7.7.65.4.
public struct HCILEReadRemoteFeaturesCompleteEvent: HCILEMetaEventParameters, Hashable {
    /// The LE Meta subevent code.
    public static let subevent = HCILESubeventCode.readRemoteFeaturesComplete
    /// `Status`.
    public var status: HCIStatus
    /// `Connection_Handle`.
    public var handle: ConnectionHandle
    /// `LE_Features`.
    public var features: LEFeatures
    /// Creates an LE Read Remote Features Complete event carrying the peer's LE features on the connection `handle`.
    public init(status: HCIStatus = .success, handle: ConnectionHandle, features: LEFeatures) {
        self.status = status
        self.handle = handle
        self.features = features
    }
    public init(from reader: inout ByteReader) throws(WireError) {
        status = HCIStatus(rawValue: try reader.readUInt8("Status"))
        handle = try reader.readConnectionHandle("Connection_Handle")
        features = LEFeatures(rawValue: try reader.readUInt64("LE_Features"))
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(status.rawValue)
        writer.write(handle)
        writer.write(features.rawValue)
    }
}

/// LE Long Term Key Request. Core 5.4, Vol 4, Part E, 7.7.65.5.
public struct HCILELongTermKeyRequestEvent: HCILEMetaEventParameters, Hashable {
    /// The LE Meta subevent code.
    public static let subevent = HCILESubeventCode.longTermKeyRequest
    /// `Connection_Handle`.
    public var handle: ConnectionHandle
    /// `Random_Number`.
    public var randomNumber: UInt64
    /// `Encrypted_Diversifier`.
    public var encryptedDiversifier: UInt16
    /// Creates an LE Long Term Key Request event for the connection `handle`, naming the key by its Rand and EDIV.
    public init(handle: ConnectionHandle, randomNumber: UInt64, encryptedDiversifier: UInt16) {
        self.handle = handle
        self.randomNumber = randomNumber
        self.encryptedDiversifier = encryptedDiversifier
    }
    public init(from reader: inout ByteReader) throws(WireError) {
        handle = try reader.readConnectionHandle("Connection_Handle")
        randomNumber = try reader.readUInt64("Random_Number")
        encryptedDiversifier = try reader.readUInt16("Encrypted_Diversifier")
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(handle)
        writer.write(randomNumber)
        writer.write(encryptedDiversifier)
    }
}

/// LE Data Length Change. Core 5.4, Vol 4, Part E, 7.7.65.7.
public struct HCILEDataLengthChangeEvent: HCILEMetaEventParameters, Hashable {
    /// The LE Meta subevent code.
    public static let subevent = HCILESubeventCode.dataLengthChange
    /// `Connection_Handle`.
    public var handle: ConnectionHandle
    /// `Max_TX_Octets`.
    public var maxTxOctets: UInt16
    /// `Max_TX_Time`.
    public var maxTxTime: UInt16
    /// `Max_RX_Octets`.
    public var maxRxOctets: UInt16
    /// `Max_RX_Time`.
    public var maxRxTime: UInt16
    /// Creates an LE Data Length Change event with the new transmit and receive limits (octets and microseconds) of the
    /// connection `handle`.
    public init(handle: ConnectionHandle, maxTxOctets: UInt16, maxTxTime: UInt16, maxRxOctets: UInt16, maxRxTime: UInt16) {
        self.handle = handle
        self.maxTxOctets = maxTxOctets
        self.maxTxTime = maxTxTime
        self.maxRxOctets = maxRxOctets
        self.maxRxTime = maxRxTime
    }
    public init(from reader: inout ByteReader) throws(WireError) {
        handle = try reader.readConnectionHandle("Connection_Handle")
        maxTxOctets = try reader.readUInt16("Max_TX_Octets")
        maxTxTime = try reader.readUInt16("Max_TX_Time")
        maxRxOctets = try reader.readUInt16("Max_RX_Octets")
        maxRxTime = try reader.readUInt16("Max_RX_Time")
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(handle)
        writer.write(maxTxOctets)
        writer.write(maxTxTime)
        writer.write(maxRxOctets)
        writer.write(maxRxTime)
    }
}
