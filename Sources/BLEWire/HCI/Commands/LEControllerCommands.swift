// LE controller configuration commands: masks, buffers, features, addresses, data length, PHY.

/// LE Set Event Mask. Core 5.4, Vol 4, Part E, 7.8.1.
public struct HCILESetEventMask: HCICommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leSetEventMask
    /// Bit n enables LE subevent n+1.
    public var mask: UInt64
    /// The mask a controller uses after reset: 0x000000000000001F.
    public static let defaultMask: UInt64 = 0x1F
    /// Creates an LE Set Event Mask command enabling the LE meta events whose bits are set in `mask`.
    public init(mask: UInt64) { self.mask = mask }
    public init(from reader: inout ByteReader) throws(WireError) { mask = try reader.readUInt64("LE event mask") }
    public func encode(into writer: inout ByteWriter) { writer.write(mask) }

    /// The mask bit enabling `subevent`.
    public static func bit(for subevent: HCILESubeventCode) -> UInt64? {
        subevent.rawValue >= 1 && subevent.rawValue <= 64 ? 1 << UInt64(subevent.rawValue - 1) : nil
    }
}

/// LE Read Buffer Size [v1]. Core 5.4, Vol 4, Part E, 7.8.2.
public struct HCILEReadBufferSize: HCIParameterlessCommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leReadBufferSize
    /// Creates the command (it has no parameters).
    public init() {}

    /// The return parameters (status first).
    public struct ReturnParameters: WireCodable, Hashable {
        /// The status.
        public var status: HCIStatus
        /// Maximum ACL data length per packet the controller accepts (0: use Read Buffer Size).
        public var leACLDataPacketLength: UInt16
        /// Number of ACL packets the controller can buffer.
        public var totalNumLEACLDataPackets: UInt8
        /// Creates LE Read Buffer Size return parameters: the largest LE ACL data packet and how many the controller
        /// buffers.
        public init(status: HCIStatus = .success, leACLDataPacketLength: UInt16, totalNumLEACLDataPackets: UInt8) {
            self.status = status
            self.leACLDataPacketLength = leACLDataPacketLength
            self.totalNumLEACLDataPackets = totalNumLEACLDataPackets
        }
        public init(from reader: inout ByteReader) throws(WireError) {
            status = HCIStatus(rawValue: try reader.readUInt8("status"))
            leACLDataPacketLength = try reader.readUInt16("LE_ACL_Data_Packet_Length")
            totalNumLEACLDataPackets = try reader.readUInt8("Total_Num_LE_ACL_Data_Packets")
        }
        public func encode(into writer: inout ByteWriter) {
            writer.write(status.rawValue)
            writer.write(leACLDataPacketLength)
            writer.write(totalNumLEACLDataPackets)
        }
    }
}

/// LE Read Buffer Size [v2] (adds ISO buffers). Core 5.4, Vol 4, Part E, 7.8.2.
public struct HCILEReadBufferSizeV2: HCIParameterlessCommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leReadBufferSizeV2
    /// Creates the command (it has no parameters).
    public init() {}

    /// The return parameters (status first).
    public struct ReturnParameters: WireCodable, Hashable {
        /// The status.
        public var status: HCIStatus
        /// `LE_ACL_Data_Packet_Length`.
        public var leACLDataPacketLength: UInt16
        /// `Total_Num_LE_ACL_Data_Packets`.
        public var totalNumLEACLDataPackets: UInt8
        /// `ISO_Data_Packet_Length`.
        public var isoDataPacketLength: UInt16
        /// `Total_Num_ISO_Data_Packets`.
        public var totalNumISODataPackets: UInt8
        /// Creates LE Read Buffer Size [v2] return parameters: the LE ACL and ISO data packet sizes and how many of
        /// each the controller buffers (no ISO buffers by default).
        public init(status: HCIStatus = .success, leACLDataPacketLength: UInt16, totalNumLEACLDataPackets: UInt8,
                    isoDataPacketLength: UInt16 = 0, totalNumISODataPackets: UInt8 = 0) {
            self.status = status
            self.leACLDataPacketLength = leACLDataPacketLength
            self.totalNumLEACLDataPackets = totalNumLEACLDataPackets
            self.isoDataPacketLength = isoDataPacketLength
            self.totalNumISODataPackets = totalNumISODataPackets
        }
        public init(from reader: inout ByteReader) throws(WireError) {
            status = HCIStatus(rawValue: try reader.readUInt8("status"))
            leACLDataPacketLength = try reader.readUInt16("LE_ACL_Data_Packet_Length")
            totalNumLEACLDataPackets = try reader.readUInt8("Total_Num_LE_ACL_Data_Packets")
            isoDataPacketLength = try reader.readUInt16("ISO_Data_Packet_Length")
            totalNumISODataPackets = try reader.readUInt8("Total_Num_ISO_Data_Packets")
        }
        public func encode(into writer: inout ByteWriter) {
            writer.write(status.rawValue)
            writer.write(leACLDataPacketLength)
            writer.write(totalNumLEACLDataPackets)
            writer.write(isoDataPacketLength)
            writer.write(totalNumISODataPackets)
        }
    }
}

/// LE Read Local Supported Features. Core 5.4, Vol 4, Part E, 7.8.3.
public struct HCILEReadLocalSupportedFeatures: HCIParameterlessCommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leReadLocalSupportedFeatures
    /// Creates the command (it has no parameters).
    public init() {}

    /// The return parameters (status first).
    public struct ReturnParameters: WireCodable, Hashable {
        /// The status.
        public var status: HCIStatus
        /// `LE_Features`.
        public var features: LEFeatures
        /// Creates LE Read Local Supported Features return parameters carrying the controller's LE features.
        public init(status: HCIStatus = .success, features: LEFeatures) {
            self.status = status
            self.features = features
        }
        public init(from reader: inout ByteReader) throws(WireError) {
            status = HCIStatus(rawValue: try reader.readUInt8("status"))
            features = LEFeatures(rawValue: try reader.readUInt64("LE_Features"))
        }
        public func encode(into writer: inout ByteWriter) {
            writer.write(status.rawValue)
            writer.write(features.rawValue)
        }
    }
}

/// LE Set Random Address. Core 5.4, Vol 4, Part E, 7.8.4.
public struct HCILESetRandomAddress: HCICommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leSetRandomAddress
    /// Address.
    public var address: BluetoothAddress
    /// Creates an LE Set Random Address command that gives the controller `address` as its random address.
    public init(address: BluetoothAddress) { self.address = address }
    public init(from reader: inout ByteReader) throws(WireError) { address = try BluetoothAddress(from: &reader) }
    public func encode(into writer: inout ByteWriter) { address.encode(into: &writer) }
}

/// LE Rand. Core 5.4, Vol 4, Part E, 7.8.23.
public struct HCILERand: HCIParameterlessCommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leRand
    /// Creates the command (it has no parameters).
    public init() {}

    /// The return parameters (status first).
    public struct ReturnParameters: WireCodable, Hashable {
        /// The status.
        public var status: HCIStatus
        /// `Random_Number`.
        public var randomNumber: UInt64
        /// Creates LE Rand return parameters carrying eight random octets from the controller.
        public init(status: HCIStatus = .success, randomNumber: UInt64) {
            self.status = status
            self.randomNumber = randomNumber
        }
        public init(from reader: inout ByteReader) throws(WireError) {
            status = HCIStatus(rawValue: try reader.readUInt8("status"))
            randomNumber = try reader.readUInt64("Random_Number")
        }
        public func encode(into writer: inout ByteWriter) {
            writer.write(status.rawValue)
            writer.write(randomNumber)
        }
    }
}

/// LE Read Supported States: which combinations of advertising, scanning, initiating and connection roles the link
/// layer can be in at once. Core 5.4, Vol 4, Part E, 7.8.27.
public struct HCILEReadSupportedStates: HCIParameterlessCommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leReadSupportedStates
    /// Creates the command (it has no parameters).
    public init() {}

    /// The return parameters (status first).
    public struct ReturnParameters: WireCodable, Hashable {
        /// The status.
        public var status: HCIStatus
        /// `LE_States`: bit N set when state combination N of the specification's table is supported.
        public var states: UInt64
        /// Creates LE Read Supported States return parameters.
        public init(status: HCIStatus = .success, states: UInt64) {
            self.status = status
            self.states = states
        }
        public init(from reader: inout ByteReader) throws(WireError) {
            status = HCIStatus(rawValue: try reader.readUInt8("status"))
            states = try reader.readUInt64("LE_States")
        }
        public func encode(into writer: inout ByteWriter) {
            writer.write(status.rawValue)
            writer.write(states)
        }
    }
}

/// LE Set Data Length. Core 5.4, Vol 4, Part E, 7.8.33.
public struct HCILESetDataLength: HCICommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leSetDataLength
    /// `Connection_Handle`.
    public var handle: ConnectionHandle
    /// Preferred maximum payload octets (0x001B–0x00FB).
    public var txOctets: UInt16
    /// Preferred maximum transmit time in µs (0x0148–0x4290).
    public var txTime: UInt16
    /// Creates an LE Set Data Length command proposing `txOctets` and `txTime` as the transmit limits of the connection
    /// `handle`.
    public init(handle: ConnectionHandle, txOctets: UInt16, txTime: UInt16) {
        self.handle = handle
        self.txOctets = txOctets
        self.txTime = txTime
    }
    public init(from reader: inout ByteReader) throws(WireError) {
        handle = try reader.readConnectionHandle("Connection_Handle")
        txOctets = try reader.readUInt16("TX_Octets")
        txTime = try reader.readUInt16("TX_Time")
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(handle)
        writer.write(txOctets)
        writer.write(txTime)
    }

    /// Whether the values are within the ranges the specification allows.
    public var isValid: Bool { (0x001B...0x00FB).contains(txOctets) && (0x0148...0x4290).contains(txTime) }

    /// The return parameters.
    public typealias ReturnParameters = HCIHandleReturnParameters
}

/// Return parameters made of a status and a connection handle.
public struct HCIHandleReturnParameters: WireCodable, Hashable {
    /// The status.
    public var status: HCIStatus
    /// `Connection_Handle`.
    public var handle: ConnectionHandle
    /// Creates return parameters made of `status` and the connection `handle` the command was about.
    public init(status: HCIStatus = .success, handle: ConnectionHandle) {
        self.status = status
        self.handle = handle
    }
    public init(from reader: inout ByteReader) throws(WireError) {
        status = HCIStatus(rawValue: try reader.readUInt8("status"))
        handle = try reader.readConnectionHandle("Connection_Handle")
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(status.rawValue)
        writer.write(handle)
    }
}

/// LE Read Suggested Default Data Length. Core 5.4, Vol 4, Part E, 7.8.34.
public struct HCILEReadSuggestedDefaultDataLength: HCIParameterlessCommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leReadSuggestedDefaultDataLength
    /// Creates the command (it has no parameters).
    public init() {}

    /// The return parameters (status first).
    public struct ReturnParameters: WireCodable, Hashable {
        /// The status.
        public var status: HCIStatus
        /// `Suggested_Max_TX_Octets`.
        public var suggestedMaxTxOctets: UInt16
        /// `Suggested_Max_TX_Time`.
        public var suggestedMaxTxTime: UInt16
        /// Creates LE Read Suggested Default Data Length return parameters: the transmit octets and time the controller
        /// currently suggests for new connections.
        public init(status: HCIStatus = .success, suggestedMaxTxOctets: UInt16, suggestedMaxTxTime: UInt16) {
            self.status = status
            self.suggestedMaxTxOctets = suggestedMaxTxOctets
            self.suggestedMaxTxTime = suggestedMaxTxTime
        }
        public init(from reader: inout ByteReader) throws(WireError) {
            status = HCIStatus(rawValue: try reader.readUInt8("status"))
            suggestedMaxTxOctets = try reader.readUInt16("Suggested_Max_TX_Octets")
            suggestedMaxTxTime = try reader.readUInt16("Suggested_Max_TX_Time")
        }
        public func encode(into writer: inout ByteWriter) {
            writer.write(status.rawValue)
            writer.write(suggestedMaxTxOctets)
            writer.write(suggestedMaxTxTime)
        }
    }
}

/// LE Write Suggested Default Data Length. Core 5.4, Vol 4, Part E, 7.8.35.
public struct HCILEWriteSuggestedDefaultDataLength: HCICommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leWriteSuggestedDefaultDataLength
    /// `Suggested_Max_TX_Octets`.
    public var suggestedMaxTxOctets: UInt16
    /// `Suggested_Max_TX_Time`.
    public var suggestedMaxTxTime: UInt16
    /// Creates an LE Write Suggested Default Data Length command suggesting the transmit octets and time for new
    /// connections.
    public init(suggestedMaxTxOctets: UInt16, suggestedMaxTxTime: UInt16) {
        self.suggestedMaxTxOctets = suggestedMaxTxOctets
        self.suggestedMaxTxTime = suggestedMaxTxTime
    }
    public init(from reader: inout ByteReader) throws(WireError) {
        suggestedMaxTxOctets = try reader.readUInt16("Suggested_Max_TX_Octets")
        suggestedMaxTxTime = try reader.readUInt16("Suggested_Max_TX_Time")
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(suggestedMaxTxOctets)
        writer.write(suggestedMaxTxTime)
    }
}

/// LE Read Maximum Data Length. Core 5.4, Vol 4, Part E, 7.8.46.
public struct HCILEReadMaximumDataLength: HCIParameterlessCommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leReadMaximumDataLength
    /// Creates the command (it has no parameters).
    public init() {}

    /// The return parameters (status first).
    public struct ReturnParameters: WireCodable, Hashable {
        /// The status.
        public var status: HCIStatus
        /// `Supported_Max_TX_Octets`.
        public var supportedMaxTxOctets: UInt16
        /// `Supported_Max_TX_Time`.
        public var supportedMaxTxTime: UInt16
        /// `Supported_Max_RX_Octets`.
        public var supportedMaxRxOctets: UInt16
        /// `Supported_Max_RX_Time`.
        public var supportedMaxRxTime: UInt16
        /// Creates LE Read Maximum Data Length return parameters: the largest transmit and receive octets and times the
        /// controller supports.
        public init(status: HCIStatus = .success, supportedMaxTxOctets: UInt16, supportedMaxTxTime: UInt16,
                    supportedMaxRxOctets: UInt16, supportedMaxRxTime: UInt16) {
            self.status = status
            self.supportedMaxTxOctets = supportedMaxTxOctets
            self.supportedMaxTxTime = supportedMaxTxTime
            self.supportedMaxRxOctets = supportedMaxRxOctets
            self.supportedMaxRxTime = supportedMaxRxTime
        }
        public init(from reader: inout ByteReader) throws(WireError) {
            status = HCIStatus(rawValue: try reader.readUInt8("status"))
            supportedMaxTxOctets = try reader.readUInt16("Supported_Max_TX_Octets")
            supportedMaxTxTime = try reader.readUInt16("Supported_Max_TX_Time")
            supportedMaxRxOctets = try reader.readUInt16("Supported_Max_RX_Octets")
            supportedMaxRxTime = try reader.readUInt16("Supported_Max_RX_Time")
        }
        public func encode(into writer: inout ByteWriter) {
            writer.write(status.rawValue)
            writer.write(supportedMaxTxOctets)
            writer.write(supportedMaxTxTime)
            writer.write(supportedMaxRxOctets)
            writer.write(supportedMaxRxTime)
        }
    }
}

/// LE Set Default PHY. Core 5.4, Vol 4, Part E, 7.8.48.
public struct HCILESetDefaultPHY: HCICommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leSetDefaultPHY
    /// `All_PHYs`.
    public var allPHYs: UInt8
    /// `TX_PHYs`.
    public var txPHYs: UInt8
    /// `RX_PHYs`.
    public var rxPHYs: UInt8
    /// Creates an LE Set Default PHY command with the PHYs preferred for new connections; the defaults prefer LE 1M
    /// both ways.
    public init(allPHYs: UInt8 = 0, txPHYs: UInt8 = 1, rxPHYs: UInt8 = 1) {
        self.allPHYs = allPHYs
        self.txPHYs = txPHYs
        self.rxPHYs = rxPHYs
    }
    public init(from reader: inout ByteReader) throws(WireError) {
        allPHYs = try reader.readUInt8("All_PHYs")
        txPHYs = try reader.readUInt8("TX_PHYs")
        rxPHYs = try reader.readUInt8("RX_PHYs")
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(allPHYs)
        writer.write(txPHYs)
        writer.write(rxPHYs)
    }
}
