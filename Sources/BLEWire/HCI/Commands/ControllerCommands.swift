// Controller & baseband, informational and status commands used by an LE host.

/// Reset. Core 5.4, Vol 4, Part E, 7.3.2.
public struct HCIReset: HCIParameterlessCommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.reset
    /// Creates the command (it has no parameters).
    public init() {}
}

/// Set Event Mask (page 1). Core 5.4, Vol 4, Part E, 7.3.1.
public struct HCISetEventMask: HCICommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.setEventMask
    /// Bit n enables event code n+1 (Disconnection Complete = bit 4, Encryption Change = bit 7, LE Meta = bit 61...).
    public var mask: UInt64
    /// The mask a controller uses after reset: 0x00001FFFFFFFFFFF.
    public static let defaultMask: UInt64 = 0x0000_1FFF_FFFF_FFFF
    /// Creates a Set Event Mask command enabling the events whose bits are set in `mask`.
    public init(mask: UInt64) { self.mask = mask }
    public init(from reader: inout ByteReader) throws(WireError) { mask = try reader.readUInt64("event mask") }
    public func encode(into writer: inout ByteWriter) { writer.write(mask) }

    /// The mask bit that enables `code` (Core 5.4, Vol 4, Part E, 7.3.1), or `nil` for events that cannot be masked.
    public static func bit(for code: HCIEventCode) -> UInt64? {
        switch code {
        case .commandComplete, .commandStatus, .numberOfCompletedPackets: nil
        case .encryptionKeyRefreshComplete: 1 << 47
        case .leMeta: 1 << 61
        default: code.rawValue >= 1 && code.rawValue <= 64 ? 1 << UInt64(code.rawValue - 1) : nil
        }
    }
}

/// Set Event Mask Page 2. Core 5.4, Vol 4, Part E, 7.3.69.
public struct HCISetEventMaskPage2: HCICommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.setEventMaskPage2
    /// `event mask`.
    public var mask: UInt64
    /// Creates a Set Event Mask Page 2 command enabling the events whose bits are set in `mask`.
    public init(mask: UInt64) { self.mask = mask }
    public init(from reader: inout ByteReader) throws(WireError) { mask = try reader.readUInt64("event mask page 2") }
    public func encode(into writer: inout ByteWriter) { writer.write(mask) }
}

/// Write LE Host Support. Core 5.4, Vol 4, Part E, 7.3.79.
public struct HCIWriteLEHostSupport: HCICommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.writeLEHostSupport
    /// `LE_Supported_Host`.
    public var leSupportedHost: UInt8
    /// `Unused`.
    public var unused: UInt8
    /// Creates a Write LE Host Support command; the default turns LE host support on.
    public init(leSupportedHost: UInt8 = 1, unused: UInt8 = 0) {
        self.leSupportedHost = leSupportedHost
        self.unused = unused
    }
    public init(from reader: inout ByteReader) throws(WireError) {
        leSupportedHost = try reader.readUInt8("LE_Supported_Host")
        unused = try reader.readUInt8("Unused")
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(leSupportedHost)
        writer.write(unused)
    }
}

/// Read Local Version Information. Core 5.4, Vol 4, Part E, 7.4.1.
public struct HCIReadLocalVersionInformation: HCIParameterlessCommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.readLocalVersionInformation
    /// Creates the command (it has no parameters).
    public init() {}

    /// The controller's version numbers.
    public struct ReturnParameters: WireCodable, Hashable {
        /// The status.
        public var status: HCIStatus
        /// HCI version (assigned number; 0x0D = Core 5.4).
        public var hciVersion: UInt8
        /// `HCI_Subversion`.
        public var hciSubversion: UInt16
        /// `LMP_Version`.
        public var lmpVersion: UInt8
        /// Company identifier of the manufacturer.
        public var companyIdentifier: UInt16
        /// `LMP_Subversion`.
        public var lmpSubversion: UInt16
        /// Creates Read Local Version Information return parameters: the HCI and LMP versions and subversions and the
        /// manufacturer's company identifier.
        public init(status: HCIStatus = .success, hciVersion: UInt8, hciSubversion: UInt16, lmpVersion: UInt8,
                    companyIdentifier: UInt16, lmpSubversion: UInt16) {
            self.status = status
            self.hciVersion = hciVersion
            self.hciSubversion = hciSubversion
            self.lmpVersion = lmpVersion
            self.companyIdentifier = companyIdentifier
            self.lmpSubversion = lmpSubversion
        }
        public init(from reader: inout ByteReader) throws(WireError) {
            status = HCIStatus(rawValue: try reader.readUInt8("status"))
            hciVersion = try reader.readUInt8("HCI_Version")
            hciSubversion = try reader.readUInt16("HCI_Subversion")
            lmpVersion = try reader.readUInt8("LMP_Version")
            companyIdentifier = try reader.readUInt16("Company_Identifier")
            lmpSubversion = try reader.readUInt16("LMP_Subversion")
        }
        public func encode(into writer: inout ByteWriter) {
            writer.write(status.rawValue)
            writer.write(hciVersion)
            writer.write(hciSubversion)
            writer.write(lmpVersion)
            writer.write(companyIdentifier)
            writer.write(lmpSubversion)
        }
    }
}

/// Read Local Supported Commands. Core 5.4, Vol 4, Part E, 7.4.2.
public struct HCIReadLocalSupportedCommands: HCIParameterlessCommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.readLocalSupportedCommands
    /// Creates the command (it has no parameters).
    public init() {}

    /// The 64-octet Supported_Commands bit mask (Core 5.4, Vol 4, Part E, 6.27).
    public struct ReturnParameters: WireCodable, Hashable {
        /// The status.
        public var status: HCIStatus
        /// Supported commands.
        public var supportedCommands: HCISupportedCommands
        /// Creates Read Local Supported Commands return parameters carrying the controller's command bit mask.
        public init(status: HCIStatus = .success, supportedCommands: HCISupportedCommands) {
            self.status = status
            self.supportedCommands = supportedCommands
        }
        public init(from reader: inout ByteReader) throws(WireError) {
            status = HCIStatus(rawValue: try reader.readUInt8("status"))
            supportedCommands = HCISupportedCommands(octets: try reader.readBytes(64, "Supported_Commands"))
        }
        public func encode(into writer: inout ByteWriter) {
            writer.write(status.rawValue)
            writer.write(supportedCommands.octets)
        }
    }
}

/// Read Local Supported Features (LMP features page 0). Core 5.4, Vol 4, Part E, 7.4.3.
public struct HCIReadLocalSupportedFeatures: HCIParameterlessCommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.readLocalSupportedFeatures
    /// Creates the command (it has no parameters).
    public init() {}

    /// The LMP feature mask (bit 38 = LE Supported (Controller), bit 37 = BR/EDR Not Supported).
    public struct ReturnParameters: WireCodable, Hashable {
        /// The status.
        public var status: HCIStatus
        /// `LMP_Features`.
        public var features: UInt64
        /// Creates Read Local Supported Features return parameters carrying the LMP feature mask.
        public init(status: HCIStatus = .success, features: UInt64) {
            self.status = status
            self.features = features
        }
        public init(from reader: inout ByteReader) throws(WireError) {
            status = HCIStatus(rawValue: try reader.readUInt8("status"))
            features = try reader.readUInt64("LMP_Features")
        }
        public func encode(into writer: inout ByteWriter) {
            writer.write(status.rawValue)
            writer.write(features)
        }
    }
}

/// Read Buffer Size (BR/EDR ACL; LE hosts fall back to it when LE Read Buffer Size returns 0).
/// Core 5.4, Vol 4, Part E, 7.4.5.
public struct HCIReadBufferSize: HCIParameterlessCommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.readBufferSize
    /// Creates the command (it has no parameters).
    public init() {}

    /// The return parameters (status first).
    public struct ReturnParameters: WireCodable, Hashable {
        /// The status.
        public var status: HCIStatus
        /// `ACL_Data_Packet_Length`.
        public var aclDataPacketLength: UInt16
        /// `Synchronous_Data_Packet_Length`.
        public var synchronousDataPacketLength: UInt8
        /// `Total_Num_ACL_Data_Packets`.
        public var totalNumACLDataPackets: UInt16
        /// `Total_Num_Synchronous_Data_Packets`.
        public var totalNumSynchronousDataPackets: UInt16
        /// Creates Read Buffer Size return parameters: the controller's ACL and synchronous buffer sizes and counts.
        public init(status: HCIStatus = .success, aclDataPacketLength: UInt16, synchronousDataPacketLength: UInt8,
                    totalNumACLDataPackets: UInt16, totalNumSynchronousDataPackets: UInt16) {
            self.status = status
            self.aclDataPacketLength = aclDataPacketLength
            self.synchronousDataPacketLength = synchronousDataPacketLength
            self.totalNumACLDataPackets = totalNumACLDataPackets
            self.totalNumSynchronousDataPackets = totalNumSynchronousDataPackets
        }
        public init(from reader: inout ByteReader) throws(WireError) {
            status = HCIStatus(rawValue: try reader.readUInt8("status"))
            aclDataPacketLength = try reader.readUInt16("ACL_Data_Packet_Length")
            synchronousDataPacketLength = try reader.readUInt8("Synchronous_Data_Packet_Length")
            totalNumACLDataPackets = try reader.readUInt16("Total_Num_ACL_Data_Packets")
            totalNumSynchronousDataPackets = try reader.readUInt16("Total_Num_Synchronous_Data_Packets")
        }
        public func encode(into writer: inout ByteWriter) {
            writer.write(status.rawValue)
            writer.write(aclDataPacketLength)
            writer.write(synchronousDataPacketLength)
            writer.write(totalNumACLDataPackets)
            writer.write(totalNumSynchronousDataPackets)
        }
    }
}

/// Read BD_ADDR. Core 5.4, Vol 4, Part E, 7.4.6.
public struct HCIReadBDADDR: HCIParameterlessCommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.readBDADDR
    /// Creates the command (it has no parameters).
    public init() {}

    /// The return parameters (status first).
    public struct ReturnParameters: WireCodable, Hashable {
        /// The status.
        public var status: HCIStatus
        /// The controller's public device address.
        public var address: BluetoothAddress
        /// Creates Read BD_ADDR return parameters carrying the controller's public address.
        public init(status: HCIStatus = .success, address: BluetoothAddress) {
            self.status = status
            self.address = address
        }
        public init(from reader: inout ByteReader) throws(WireError) {
            status = HCIStatus(rawValue: try reader.readUInt8("status"))
            address = try BluetoothAddress(from: &reader)
        }
        public func encode(into writer: inout ByteWriter) {
            writer.write(status.rawValue)
            address.encode(into: &writer)
        }
    }
}

/// Read RSSI. Core 5.4, Vol 4, Part E, 7.5.4.
public struct HCIReadRSSI: HCICommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.readRSSI
    /// `Handle`.
    public var handle: ConnectionHandle
    /// Creates a Read RSSI command for the connection `handle`.
    public init(handle: ConnectionHandle) { self.handle = handle }
    public init(from reader: inout ByteReader) throws(WireError) { handle = try reader.readConnectionHandle("Handle") }
    public func encode(into writer: inout ByteWriter) { writer.write(handle) }

    /// The return parameters (status first).
    public struct ReturnParameters: WireCodable, Hashable {
        /// The status.
        public var status: HCIStatus
        /// `Handle`.
        public var handle: ConnectionHandle
        /// Received signal strength in dBm (LE: absolute).
        public var rssi: Int8
        /// Creates Read RSSI return parameters: the signal strength, in dBm, measured on the connection `handle`.
        public init(status: HCIStatus = .success, handle: ConnectionHandle, rssi: Int8) {
            self.status = status
            self.handle = handle
            self.rssi = rssi
        }
        public init(from reader: inout ByteReader) throws(WireError) {
            status = HCIStatus(rawValue: try reader.readUInt8("status"))
            handle = try reader.readConnectionHandle("Handle")
            rssi = try reader.readInt8("RSSI")
        }
        public func encode(into writer: inout ByteWriter) {
            writer.write(status.rawValue)
            writer.write(handle)
            writer.write(rssi)
        }
    }
}

/// Disconnect. Core 5.4, Vol 4, Part E, 7.1.6.
public struct HCIDisconnect: HCICommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.disconnect
    /// Acknowledged with Command Status; the outcome arrives in a later event.
    public static let completion = HCICommandCompletion.commandStatus
    /// `Handle`.
    public var handle: ConnectionHandle
    /// The reason sent to the peer (typically 0x13 Remote User Terminated Connection).
    public var reason: HCIStatus
    /// Creates a Disconnect command that ends the connection `handle` for `reason` (by default, the user ended it).
    public init(handle: ConnectionHandle, reason: HCIStatus = .remoteUserTerminatedConnection) {
        self.handle = handle
        self.reason = reason
    }
    public init(from reader: inout ByteReader) throws(WireError) {
        handle = try reader.readConnectionHandle("Connection_Handle")
        reason = HCIStatus(rawValue: try reader.readUInt8("Reason"))
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(handle)
        writer.write(reason.rawValue)
    }
}

/// The 64-octet Supported_Commands bit mask. Core 5.4, Vol 4, Part E, 6.27.
public struct HCISupportedCommands: Hashable, Sendable {
    /// The 64 octets.
    public private(set) var octets: [UInt8]

    /// Creates a mask from its octets (padded or cut to 64).
    public init(octets: [UInt8] = []) {
        self.octets = Array((octets + [UInt8](repeating: 0, count: 64)).prefix(64))
    }

    /// Whether the bit for (octet, bit) is set.
    public func contains(octet: Int, bit: Int) -> Bool {
        guard (0..<64).contains(octet), (0..<8).contains(bit) else { return false }
        return octets[octet] & (1 << UInt8(bit)) != 0
    }

    /// Sets the bit for (octet, bit).
    public mutating func insert(octet: Int, bit: Int) {
        guard (0..<64).contains(octet), (0..<8).contains(bit) else { return }
        octets[octet] |= 1 << UInt8(bit)
    }

    /// Whether the mask lists `opcode` (for opcodes in ``HCISupportedCommands/positions``).
    public func contains(_ opcode: HCIOpcode) -> Bool {
        guard let p = Self.positions[opcode] else { return false }
        return contains(octet: p.octet, bit: p.bit)
    }

    /// Sets the bit for `opcode`; returns `false` when its position is not in ``positions``.
    @discardableResult
    public mutating func insert(_ opcode: HCIOpcode) -> Bool {
        guard let p = Self.positions[opcode] else { return false }
        insert(octet: p.octet, bit: p.bit)
        return true
    }

    /// Octet and bit of each command this library knows, from the table in Core 5.4, Vol 4, Part E, 6.27.
    public static let positions: [HCIOpcode: (octet: Int, bit: Int)] = [
        .disconnect: (0, 5),
        .readRemoteVersionInformation: (2, 7),
        .setEventMask: (5, 6),
        .reset: (5, 7),
        .writeLocalName: (7, 0),
        .readLocalName: (7, 1),
        .readLocalVersionInformation: (14, 3),
        .readLocalSupportedFeatures: (14, 5),
        .readBufferSize: (14, 7),
        .readBDADDR: (15, 1),
        .readRSSI: (15, 5),
        .setEventMaskPage2: (22, 2),
        .writeLEHostSupport: (24, 6),
        .leSetEventMask: (25, 0),
        .leReadBufferSize: (25, 1),
        .leReadLocalSupportedFeatures: (25, 2),
        .leSetRandomAddress: (25, 4),
        .leSetAdvertisingParameters: (25, 5),
        .leReadAdvertisingPhysicalChannelTxPower: (25, 6),
        .leSetAdvertisingData: (25, 7),
        .leSetScanResponseData: (26, 0),
        .leSetAdvertisingEnable: (26, 1),
        .leSetScanParameters: (26, 2),
        .leSetScanEnable: (26, 3),
        .leCreateConnection: (26, 4),
        .leCreateConnectionCancel: (26, 5),
        .leReadFilterAcceptListSize: (26, 6),
        .leClearFilterAcceptList: (26, 7),
        .leAddDeviceToFilterAcceptList: (27, 0),
        .leRemoveDeviceFromFilterAcceptList: (27, 1),
        .leConnectionUpdate: (27, 2),
        .leReadRemoteFeatures: (27, 5),
        .leEncrypt: (27, 6),
        .leRand: (27, 7),
        .leEnableEncryption: (28, 0),
        .leLongTermKeyRequestReply: (28, 1),
        .leLongTermKeyRequestNegativeReply: (28, 2),
        .leReadSupportedStates: (28, 3),
        .leRemoteConnectionParameterRequestReply: (33, 4),
        .leRemoteConnectionParameterRequestNegativeReply: (33, 5),
        .leSetDataLength: (33, 6),
        .leReadSuggestedDefaultDataLength: (33, 7),
        .leWriteSuggestedDefaultDataLength: (34, 0),
        .leClearResolvingList: (34, 5),
        .leReadResolvingListSize: (34, 6),
        .leSetAddressResolutionEnable: (35, 1),
        .leSetResolvablePrivateAddressTimeout: (35, 2),
        .leReadMaximumDataLength: (35, 3),
        .leReadPHY: (35, 4),
        .leSetDefaultPHY: (35, 5),
        .leSetPHY: (35, 6),
        .leSetAdvertisingSetRandomAddress: (36, 1),
        .leSetExtendedAdvertisingParameters: (36, 2),
        .leSetExtendedAdvertisingData: (36, 3),
        .leSetExtendedScanResponseData: (36, 4),
        .leSetExtendedAdvertisingEnable: (36, 5),
        .leReadMaximumAdvertisingDataLength: (36, 6),
        .leReadNumberOfSupportedAdvertisingSets: (36, 7),
        .leRemoveAdvertisingSet: (37, 0),
        .leClearAdvertisingSets: (37, 1),
        .leSetExtendedScanParameters: (37, 5),
        .leSetExtendedScanEnable: (37, 6),
        .leExtendedCreateConnection: (37, 7),
        .leReadBufferSizeV2: (41, 5),
    ]
}
