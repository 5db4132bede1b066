// LE connection establishment, update and security commands.

/// LE Create Connection. Core 5.4, Vol 4, Part E, 7.8.12.
public struct HCILECreateConnection: HCICommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leCreateConnection
    /// Acknowledged with Command Status; the outcome arrives in a later event.
    public static let completion = HCICommandCompletion.commandStatus
    /// Scan interval in 0.625 ms units.
    public var scanInterval: UInt16
    /// Scan window in 0.625 ms units.
    public var scanWindow: UInt16
    /// 0: connect to `peerAddress`; 1: use the Filter Accept List.
    public var initiatorFilterPolicy: UInt8
    /// `Peer_Address_Type`.
    public var peerAddressType: LEAddressType
    /// Peer address.
    public var peerAddress: BluetoothAddress
    /// `Own_Address_Type`.
    public var ownAddressType: LEAddressType
    /// Connection interval bounds in 1.25 ms units (0x0006–0x0C80).
    public var connectionIntervalMin: UInt16
    /// `Connection_Interval_Max`.
    public var connectionIntervalMax: UInt16
    /// Peripheral latency in connection events (0x0000–0x01F3).
    public var maxLatency: UInt16
    /// Supervision timeout in 10 ms units (0x000A–0x0C80).
    public var supervisionTimeout: UInt16
    /// `Min_CE_Length`.
    public var minCELength: UInt16
    /// `Max_CE_Length`.
    public var maxCELength: UInt16

    /// Creates an LE Create Connection command to the peer at `peerAddress`; the defaults scan continuously at a 60 ms
    /// interval and ask for a 30–50 ms connection interval with a 5 s supervision timeout.
    public init(scanInterval: UInt16 = 0x0060, scanWindow: UInt16 = 0x0060, initiatorFilterPolicy: UInt8 = 0,
                peerAddressType: LEAddressType, peerAddress: BluetoothAddress, ownAddressType: LEAddressType = .public,
                connectionIntervalMin: UInt16 = 0x0018, connectionIntervalMax: UInt16 = 0x0028, maxLatency: UInt16 = 0,
                supervisionTimeout: UInt16 = 0x01F4, minCELength: UInt16 = 0, maxCELength: UInt16 = 0) {
        self.scanInterval = scanInterval
        self.scanWindow = scanWindow
        self.initiatorFilterPolicy = initiatorFilterPolicy
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.ownAddressType = ownAddressType
        self.connectionIntervalMin = connectionIntervalMin
        self.connectionIntervalMax = connectionIntervalMax
        self.maxLatency = maxLatency
        self.supervisionTimeout = supervisionTimeout
        self.minCELength = minCELength
        self.maxCELength = maxCELength
    }
    public init(from reader: inout ByteReader) throws(WireError) {
        scanInterval = try reader.readUInt16("LE_Scan_Interval")
        scanWindow = try reader.readUInt16("LE_Scan_Window")
        initiatorFilterPolicy = try reader.readUInt8("Initiator_Filter_Policy")
        peerAddressType = LEAddressType(rawValue: try reader.readUInt8("Peer_Address_Type"))
        peerAddress = try BluetoothAddress(from: &reader)
        ownAddressType = LEAddressType(rawValue: try reader.readUInt8("Own_Address_Type"))
        connectionIntervalMin = try reader.readUInt16("Connection_Interval_Min")
        connectionIntervalMax = try reader.readUInt16("Connection_Interval_Max")
        maxLatency = try reader.readUInt16("Max_Latency")
        supervisionTimeout = try reader.readUInt16("Supervision_Timeout")
        minCELength = try reader.readUInt16("Min_CE_Length")
        maxCELength = try reader.readUInt16("Max_CE_Length")
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(scanInterval)
        writer.write(scanWindow)
        writer.write(initiatorFilterPolicy)
        writer.write(peerAddressType.rawValue)
        peerAddress.encode(into: &writer)
        writer.write(ownAddressType.rawValue)
        writer.write(connectionIntervalMin)
        writer.write(connectionIntervalMax)
        writer.write(maxLatency)
        writer.write(supervisionTimeout)
        writer.write(minCELength)
        writer.write(maxCELength)
    }

    /// Whether the parameters are within the ranges the specification allows.
    public var isValid: Bool {
        (0x0004...0x4000).contains(scanInterval) && (0x0004...0x4000).contains(scanWindow) && scanWindow <= scanInterval
            && initiatorFilterPolicy <= 1 && peerAddressType.rawValue <= 3 && ownAddressType.rawValue <= 3
            && HCILEConnectionParameters.areValid(intervalMin: connectionIntervalMin, intervalMax: connectionIntervalMax,
                                                  latency: maxLatency, supervisionTimeout: supervisionTimeout)
    }
}

/// Range checks for LE connection parameters. Core 5.4, Vol 4, Part E, 7.8.12 and 7.8.18.
public enum HCILEConnectionParameters {
    /// Whether interval (1.25 ms units), latency and supervision timeout (10 ms units) are valid, including the rule
    /// that the timeout exceeds (1 + latency) × interval × 2.
    public static func areValid(intervalMin: UInt16, intervalMax: UInt16, latency: UInt16,
                                supervisionTimeout: UInt16) -> Bool {
        guard (0x0006...0x0C80).contains(intervalMin), (0x0006...0x0C80).contains(intervalMax),
              intervalMin <= intervalMax, latency <= 0x01F3, (0x000A...0x0C80).contains(supervisionTimeout)
        else { return false }
        // Timeout (×10 ms) must be larger than (1 + latency) × interval_max (×1.25 ms) × 2.
        let timeoutMicros = Int(supervisionTimeout) * 10_000
        let minimumMicros = (1 + Int(latency)) * Int(intervalMax) * 1_250 * 2
        return timeoutMicros > minimumMicros
    }
}

/// LE Create Connection Cancel. Core 5.4, Vol 4, Part E, 7.8.13.
public struct HCILECreateConnectionCancel: HCIParameterlessCommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leCreateConnectionCancel
    /// Creates the command (it has no parameters).
    public init() {}
}

/// LE Connection Update. Core 5.4, Vol 4, Part E, 7.8.18.
public struct HCILEConnectionUpdate: HCICommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leConnectionUpdate
    /// Acknowledged with Command Status; the outcome arrives in a later event.
    public static let completion = HCICommandCompletion.commandStatus
    /// `Connection_Handle`.
    public var handle: ConnectionHandle
    /// `Connection_Interval_Min`.
    public var intervalMin: UInt16
    /// `Connection_Interval_Max`.
    public var intervalMax: UInt16
    /// `Max_Latency`.
    public var maxLatency: UInt16
    /// `Supervision_Timeout`.
    public var supervisionTimeout: UInt16
    /// `Min_CE_Length`.
    public var minCELength: UInt16
    /// `Max_CE_Length`.
    public var maxCELength: UInt16

    /// Creates an LE Connection Update command asking for new interval bounds, latency and supervision timeout on the
    /// connection `handle`.
    public init(handle: ConnectionHandle, intervalMin: UInt16, intervalMax: UInt16, maxLatency: UInt16,
                supervisionTimeout: UInt16, minCELength: UInt16 = 0, maxCELength: UInt16 = 0) {
        self.handle = handle
        self.intervalMin = intervalMin
        self.intervalMax = intervalMax
        self.maxLatency = maxLatency
        self.supervisionTimeout = supervisionTimeout
        self.minCELength = minCELength
        self.maxCELength = maxCELength
    }
    public init(from reader: inout ByteReader) throws(WireError) {
        handle = try reader.readConnectionHandle("Connection_Handle")
        intervalMin = try reader.readUInt16("Connection_Interval_Min")
        intervalMax = try reader.readUInt16("Connection_Interval_Max")
        maxLatency = try reader.readUInt16("Max_Latency")
        supervisionTimeout = try reader.readUInt16("Supervision_Timeout")
        minCELength = try reader.readUInt16("Min_CE_Length")
        maxCELength = try reader.readUInt16("Max_CE_Length")
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(handle)
        writer.write(intervalMin)
        writer.write(intervalMax)
        writer.write(maxLatency)
        writer.write(supervisionTimeout)
        writer.write(minCELength)
        writer.write(maxCELength)
    }

    /// Whether the parameters are within the ranges the specification allows.
    public var isValid: Bool {
        HCILEConnectionParameters.areValid(intervalMin: intervalMin, intervalMax: intervalMax, latency: maxLatency,
                                           supervisionTimeout: supervisionTimeout)
    }
}

/// LE Read Remote Features. Core 5.4, Vol 4, Part E, 7.8.21.
public struct HCILEReadRemoteFeatures: HCICommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leReadRemoteFeatures
    /// Acknowledged with Command Status; the outcome arrives in a later event.
    public static let completion = HCICommandCompletion.commandStatus
    /// `Connection_Handle`.
    public var handle: ConnectionHandle
    /// Creates an LE Read Remote Features command for the connection `handle`.
    public init(handle: ConnectionHandle) { self.handle = handle }
    public init(from reader: inout ByteReader) throws(WireError) { handle = try reader.readConnectionHandle("Connection_Handle") }
    public func encode(into writer: inout ByteWriter) { writer.write(handle) }
}

/// LE Enable Encryption (the "LE Start Encryption" procedure). Core 5.4, Vol 4, Part E, 7.8.24.
public struct HCILEEnableEncryption: HCICommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leEnableEncryption
    /// Acknowledged with Command Status; the outcome arrives in a later event.
    public static let completion = HCICommandCompletion.commandStatus
    /// `Connection_Handle`.
    public var handle: ConnectionHandle
    /// Rand (0 for LE Secure Connections keys).
    public var randomNumber: UInt64
    /// EDIV (0 for LE Secure Connections keys).
    public var encryptedDiversifier: UInt16
    /// The 128-bit long term key, little-endian as on the wire.
    public var longTermKey: [UInt8]

    /// Creates an LE Enable Encryption command that starts encryption on the connection `handle` with `longTermKey`,
    /// named by its Rand and EDIV.
    public init(handle: ConnectionHandle, randomNumber: UInt64, encryptedDiversifier: UInt16, longTermKey: [UInt8]) {
        self.handle = handle
        self.randomNumber = randomNumber
        self.encryptedDiversifier = encryptedDiversifier
        self.longTermKey = longTermKey
    }
    public init(from reader: inout ByteReader) throws(WireError) {
        handle = try reader.readConnectionHandle("Connection_Handle")
        randomNumber = try reader.readUInt64("Random_Number")
        encryptedDiversifier = try reader.readUInt16("Encrypted_Diversifier")
        longTermKey = try reader.readBytes(16, "Long_Term_Key")
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(handle)
        writer.write(randomNumber)
        writer.write(encryptedDiversifier)
        writer.write(Array((longTermKey + [UInt8](repeating: 0, count: 16)).prefix(16)))
    }
}

/// LE Long Term Key Request Reply. Core 5.4, Vol 4, Part E, 7.8.25.
public struct HCILELongTermKeyRequestReply: HCICommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leLongTermKeyRequestReply
    /// The return parameters.
    public typealias ReturnParameters = HCIHandleReturnParameters
    /// `Connection_Handle`.
    public var handle: ConnectionHandle
    /// The 128-bit long term key, little-endian as on the wire.
    public var longTermKey: [UInt8]
    /// Creates an LE Long Term Key Request Reply that gives the controller `longTermKey` for the connection `handle`.
    public init(handle: ConnectionHandle, longTermKey: [UInt8]) {
        self.handle = handle
        self.longTermKey = longTermKey
    }
    public init(from reader: inout ByteReader) throws(WireError) {
        handle = try reader.readConnectionHandle("Connection_Handle")
        longTermKey = try reader.readBytes(16, "Long_Term_Key")
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(handle)
        writer.write(Array((longTermKey + [UInt8](repeating: 0, count: 16)).prefix(16)))
    }
}

/// LE Long Term Key Request Negative Reply. Core 5.4, Vol 4, Part E, 7.8.26.
public struct HCILELongTermKeyRequestNegativeReply: HCICommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leLongTermKeyRequestNegativeReply
    /// The return parameters.
    public typealias ReturnParameters = HCIHandleReturnParameters
    /// `Connection_Handle`.
    public var handle: ConnectionHandle
    /// Creates an LE Long Term Key Request Negative Reply for the connection `handle` (this side has no key).
    public init(handle: ConnectionHandle) { self.handle = handle }
    public init(from reader: inout ByteReader) throws(WireError) { handle = try reader.readConnectionHandle("Connection_Handle") }
    public func encode(into writer: inout ByteWriter) { writer.write(handle) }
}
