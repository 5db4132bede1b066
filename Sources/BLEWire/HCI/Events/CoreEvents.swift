// Events outside the LE Meta event.

/// A typed event's parameters.
public protocol HCIEventParameters: WireCodable {
    /// The event code carrying these parameters.
    static var code: HCIEventCode { get }
}

extension HCIEventParameters {
    /// The event as a packet.
    public var packet: HCIEventPacket { HCIEventPacket(code: Self.code, parameters: encoded) }
}

/// Command Complete. Core 5.4, Vol 4, Part E, 7.7.14.
public struct HCICommandCompleteEvent: HCIEventParameters, Hashable {
    /// The event code.
    public static let code = HCIEventCode.commandComplete
    /// How many more commands the host may send now.
    public var numHCICommandPackets: UInt8
    /// The completed command (0x0000 for a pure credit update).
    public var opcode: HCIOpcode
    /// The command's return parameters (status first for every command).
    public var returnParameters: [UInt8]

    /// Creates a Command Complete event answering the command `opcode` with its raw return parameters.
    public init(numHCICommandPackets: UInt8 = 1, opcode: HCIOpcode, returnParameters: [UInt8]) {
        self.numHCICommandPackets = numHCICommandPackets
        self.opcode = opcode
        self.returnParameters = returnParameters
    }
    /// Creates the Command Complete for a typed command's return parameters.
    public init<C: HCICommand>(numHCICommandPackets: UInt8 = 1, for command: C.Type, _ returnParameters: C.ReturnParameters) {
        self.init(numHCICommandPackets: numHCICommandPackets, opcode: C.opcode, returnParameters: returnParameters.encoded)
    }
    public init(from reader: inout ByteReader) throws(WireError) {
        numHCICommandPackets = try reader.readUInt8("Num_HCI_Command_Packets")
        opcode = HCIOpcode(rawValue: try reader.readUInt16("Command_Opcode"))
        returnParameters = reader.readRemaining()
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(numHCICommandPackets)
        writer.write(opcode.rawValue)
        writer.write(returnParameters)
    }

    /// The status (first return parameter), when present.
    public var status: HCIStatus? { returnParameters.first.map(HCIStatus.init(rawValue:)) }

    /// Decodes the return parameters as those of `command`.
    public func decode<C: HCICommand>(_ command: C.Type) throws(WireError) -> C.ReturnParameters {
        try C.ReturnParameters(bytes: returnParameters)
    }
}

/// Command Status. Core 5.4, Vol 4, Part E, 7.7.15.
public struct HCICommandStatusEvent: HCIEventParameters, Hashable {
    /// The event code.
    public static let code = HCIEventCode.commandStatus
    /// `Status`.
    public var status: HCIStatus
    /// `Num_HCI_Command_Packets`.
    public var numHCICommandPackets: UInt8
    /// `Command_Opcode`.
    public var opcode: HCIOpcode
    /// Creates a Command Status event reporting `status` for the command `opcode`.
    public init(status: HCIStatus, numHCICommandPackets: UInt8 = 1, opcode: HCIOpcode) {
        self.status = status
        self.numHCICommandPackets = numHCICommandPackets
        self.opcode = opcode
    }
    public init(from reader: inout ByteReader) throws(WireError) {
        status = HCIStatus(rawValue: try reader.readUInt8("Status"))
        numHCICommandPackets = try reader.readUInt8("Num_HCI_Command_Packets")
        opcode = HCIOpcode(rawValue: try reader.readUInt16("Command_Opcode"))
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(status.rawValue)
        writer.write(numHCICommandPackets)
        writer.write(opcode.rawValue)
    }
}

/// Disconnection Complete. Core 5.4, Vol 4, Part E, 7.7.5.
public struct HCIDisconnectionCompleteEvent: HCIEventParameters, Hashable {
    /// The event code.
    public static let code = HCIEventCode.disconnectionComplete
    /// `Status`.
    public var status: HCIStatus
    /// `Connection_Handle`.
    public var handle: ConnectionHandle
    /// `Reason`.
    public var reason: HCIStatus
    /// Creates a Disconnection Complete event for the connection `handle`, ended for `reason`.
    public init(status: HCIStatus = .success, handle: ConnectionHandle, reason: HCIStatus) {
        self.status = status
        self.handle = handle
        self.reason = reason
    }
    public init(from reader: inout ByteReader) throws(WireError) {
        status = HCIStatus(rawValue: try reader.readUInt8("Status"))
        handle = try reader.readConnectionHandle("Connection_Handle")
        reason = HCIStatus(rawValue: try reader.readUInt8("Reason"))
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(status.rawValue)
        writer.write(handle)
        writer.write(reason.rawValue)
    }
}

/// Encryption Change [v1]. Core 5.4, Vol 4, Part E, 7.7.8.
public struct HCIEncryptionChangeEvent: HCIEventParameters, Hashable {
    /// The event code.
    public static let code = HCIEventCode.encryptionChange
    /// `Status`.
    public var status: HCIStatus
    /// `Connection_Handle`.
    public var handle: ConnectionHandle
    /// 0x00 off, 0x01 on (AES-CCM on LE).
    public var encryptionEnabled: UInt8
    /// Creates an Encryption Change event telling whether the connection `handle` is now encrypted (0x01) or not
    /// (0x00).
    public init(status: HCIStatus = .success, handle: ConnectionHandle, encryptionEnabled: UInt8) {
        self.status = status
        self.handle = handle
        self.encryptionEnabled = encryptionEnabled
    }
    public init(from reader: inout ByteReader) throws(WireError) {
        status = HCIStatus(rawValue: try reader.readUInt8("Status"))
        handle = try reader.readConnectionHandle("Connection_Handle")
        encryptionEnabled = try reader.readUInt8("Encryption_Enabled")
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(status.rawValue)
        writer.write(handle)
        writer.write(encryptionEnabled)
    }
}

/// Encryption Key Refresh Complete. Core 5.4, Vol 4, Part E, 7.7.39.
public struct HCIEncryptionKeyRefreshCompleteEvent: HCIEventParameters, Hashable {
    /// The event code.
    public static let code = HCIEventCode.encryptionKeyRefreshComplete
    /// `Status`.
    public var status: HCIStatus
    /// `Connection_Handle`.
    public var handle: ConnectionHandle
    /// Creates an Encryption Key Refresh Complete event for the connection `handle`.
    public init(status: HCIStatus = .success, handle: ConnectionHandle) {
        self.status = status
        self.handle = handle
    }
    public init(from reader: inout ByteReader) throws(WireError) {
        status = HCIStatus(rawValue: try reader.readUInt8("Status"))
        handle = try reader.readConnectionHandle("Connection_Handle")
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(status.rawValue)
        writer.write(handle)
    }
}

/// Number Of Completed Packets. Core 5.4, Vol 4, Part E, 7.7.19.
public struct HCINumberOfCompletedPacketsEvent: HCIEventParameters, Hashable {
    /// The event code.
    public static let code = HCIEventCode.numberOfCompletedPackets

    /// Packets completed on one connection.
    public struct Entry: Hashable, Sendable {
        /// `Connection_Handle`.
        public var handle: ConnectionHandle
        /// Completed packets.
        public var completedPackets: UInt16
        /// Creates an entry saying that `completedPackets` packets of the connection `handle` have left the controller.
        public init(handle: ConnectionHandle, completedPackets: UInt16) {
            self.handle = handle
            self.completedPackets = completedPackets
        }
    }

    /// Entries.
    public var entries: [Entry]
    /// Creates a Number Of Completed Packets event with one entry per connection.
    public init(entries: [Entry]) { self.entries = entries }
    public init(from reader: inout ByteReader) throws(WireError) {
        let count = Int(try reader.readUInt8("Num_Handles"))
        guard reader.remainingCount == count * 4 else {
            throw WireError(.lengthMismatch, "Number Of Completed Packets: \(count) handle(s) need \(count * 4) bytes, \(reader.remainingCount) present")
        }
        var handles: [ConnectionHandle] = []
        for _ in 0..<count { handles.append(try reader.readConnectionHandle("Connection_Handle")) }
        var result: [Entry] = []
        for handle in handles { result.append(Entry(handle: handle, completedPackets: try reader.readUInt16("Num_Completed_Packets"))) }
        entries = result
    }
    public func encode(into writer: inout ByteWriter) {
        let list = entries.prefix(255)
        writer.write(UInt8(list.count))
        for e in list { writer.write(e.handle) }
        for e in list { writer.write(e.completedPackets) }
    }
}

/// Hardware Error. Core 5.4, Vol 4, Part E, 7.7.16.
public struct HCIHardwareErrorEvent: HCIEventParameters, Hashable {
    /// The event code.
    public static let code = HCIEventCode.hardwareError
    /// `Hardware_Code`.
    public var hardwareCode: UInt8
    /// Creates a Hardware Error event with the controller's own hardware code.
    public init(hardwareCode: UInt8) { self.hardwareCode = hardwareCode }
    public init(from reader: inout ByteReader) throws(WireError) { hardwareCode = try reader.readUInt8("Hardware_Code") }
    public func encode(into writer: inout ByteWriter) { writer.write(hardwareCode) }
}

/// Data Buffer Overflow. Core 5.4, Vol 4, Part E, 7.7.26.
public struct HCIDataBufferOverflowEvent: HCIEventParameters, Hashable {
    /// The event code.
    public static let code = HCIEventCode.dataBufferOverflow
    /// 0x00 synchronous, 0x01 ACL.
    public var linkType: UInt8
    /// Creates a Data Buffer Overflow event for `linkType` (0x01 is ACL).
    public init(linkType: UInt8 = 0x01) { self.linkType = linkType }
    public init(from reader: inout ByteReader) throws(WireError) { linkType = try reader.readUInt8("Link_Type") }
    public func encode(into writer: inout ByteWriter) { writer.write(linkType) }
}
