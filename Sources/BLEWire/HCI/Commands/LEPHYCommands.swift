/// The PHY of one direction of an LE connection (the `TX_PHY` / `RX_PHY` values). Core 5.4, Vol 4, Part E, 7.8.47
/// and 7.7.65.12.
public struct LEPHY: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// LE 1M (1 Mb/s).
    public static let le1M = LEPHY(rawValue: 0x01)
    /// LE 2M (2 Mb/s).
    public static let le2M = LEPHY(rawValue: 0x02)
    /// LE Coded (125 kb/s with S=8 coding, 500 kb/s with S=2).
    public static let leCoded = LEPHY(rawValue: 0x03)

    public var description: String {
        switch self {
        case .le1M: "LE 1M"
        case .le2M: "LE 2M"
        case .leCoded: "LE Coded"
        default: "PHY 0x\([rawValue].hexString())"
        }
    }
}

/// A set of PHYs a host prefers (the `TX_PHYs` / `RX_PHYs` bit fields). Core 5.4, Vol 4, Part E, 7.8.48–7.8.49.
public struct LEPHYs: OptionSet, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// LE 1M.
    public static let le1M = LEPHYs(rawValue: 0x01)
    /// LE 2M.
    public static let le2M = LEPHYs(rawValue: 0x02)
    /// LE Coded.
    public static let leCoded = LEPHYs(rawValue: 0x04)

    /// The set holding one PHY.
    public init(_ phy: LEPHY) {
        switch phy {
        case .le2M: self = .le2M
        case .leCoded: self = .leCoded
        default: self = .le1M
        }
    }
}

/// LE Read PHY. Core 5.4, Vol 4, Part E, 7.8.47.
public struct HCILEReadPHY: HCICommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leReadPHY
    /// `Connection_Handle`.
    public var handle: ConnectionHandle
    /// Creates an LE Read PHY command for the connection `handle`.
    public init(handle: ConnectionHandle) { self.handle = handle }
    public init(from reader: inout ByteReader) throws(WireError) {
        handle = try reader.readConnectionHandle("Connection_Handle")
    }
    public func encode(into writer: inout ByteWriter) { writer.write(handle) }

    /// The return parameters: status, handle, TX and RX PHYs.
    public struct ReturnParameters: WireCodable, Hashable, Sendable {
        /// The status.
        public var status: HCIStatus
        /// `Connection_Handle`.
        public var handle: ConnectionHandle
        /// `TX_PHY`.
        public var txPHY: LEPHY
        /// `RX_PHY`.
        public var rxPHY: LEPHY
        /// Creates LE Read PHY return parameters: the PHYs the connection `handle` transmits and receives on.
        public init(status: HCIStatus = .success, handle: ConnectionHandle, txPHY: LEPHY, rxPHY: LEPHY) {
            self.status = status
            self.handle = handle
            self.txPHY = txPHY
            self.rxPHY = rxPHY
        }
        public init(from reader: inout ByteReader) throws(WireError) {
            status = HCIStatus(rawValue: try reader.readUInt8("Status"))
            handle = try reader.readConnectionHandle("Connection_Handle")
            txPHY = LEPHY(rawValue: try reader.readUInt8("TX_PHY"))
            rxPHY = LEPHY(rawValue: try reader.readUInt8("RX_PHY"))
        }
        public func encode(into writer: inout ByteWriter) {
            writer.write(status.rawValue)
            writer.write(handle)
            writer.write(txPHY.rawValue)
            writer.write(rxPHY.rawValue)
        }
    }
}

/// LE Set PHY: asks the link layer to move a connection to the preferred PHYs; acknowledged with Command Status, ended
/// by LE PHY Update Complete. Core 5.4, Vol 4, Part E, 7.8.49.
public struct HCILESetPHY: HCICommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leSetPHY
    /// Acknowledged with Command Status.
    public static var completion: HCICommandCompletion { .commandStatus }
    /// `Connection_Handle`.
    public var handle: ConnectionHandle
    /// `All_PHYs`: bit 0, no preference for transmitting; bit 1, none for receiving.
    public var allPHYs: UInt8
    /// `TX_PHYs`.
    public var txPHYs: LEPHYs
    /// `RX_PHYs`.
    public var rxPHYs: LEPHYs
    /// `PHY_Options` (the coding preferred on LE Coded: 0 none, 1 S=2, 2 S=8).
    public var phyOptions: UInt16
    /// Creates an LE Set PHY command that asks to move the connection `handle` to the preferred transmit and receive
    /// PHYs.
    public init(handle: ConnectionHandle, allPHYs: UInt8 = 0, txPHYs: LEPHYs, rxPHYs: LEPHYs, phyOptions: UInt16 = 0) {
        self.handle = handle
        self.allPHYs = allPHYs
        self.txPHYs = txPHYs
        self.rxPHYs = rxPHYs
        self.phyOptions = phyOptions
    }
    public init(from reader: inout ByteReader) throws(WireError) {
        handle = try reader.readConnectionHandle("Connection_Handle")
        allPHYs = try reader.readUInt8("All_PHYs")
        txPHYs = LEPHYs(rawValue: try reader.readUInt8("TX_PHYs"))
        rxPHYs = LEPHYs(rawValue: try reader.readUInt8("RX_PHYs"))
        phyOptions = try reader.readUInt16("PHY_Options")
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(handle)
        writer.write(allPHYs)
        writer.write(txPHYs.rawValue)
        writer.write(rxPHYs.rawValue)
        writer.write(phyOptions)
    }
}

/// LE PHY Update Complete. Core 5.4, Vol 4, Part E, 7.7.65.12.
public struct HCILEPHYUpdateCompleteEvent: HCILEMetaEventParameters, Hashable {
    /// The LE Meta subevent code.
    public static let subevent = HCILESubeventCode.phyUpdateComplete
    /// `Status`.
    public var status: HCIStatus
    /// `Connection_Handle`.
    public var handle: ConnectionHandle
    /// `TX_PHY`.
    public var txPHY: LEPHY
    /// `RX_PHY`.
    public var rxPHY: LEPHY
    /// Creates an LE PHY Update Complete event with the PHYs the connection `handle` now transmits and receives on.
    public init(status: HCIStatus = .success, handle: ConnectionHandle, txPHY: LEPHY, rxPHY: LEPHY) {
        self.status = status
        self.handle = handle
        self.txPHY = txPHY
        self.rxPHY = rxPHY
    }
    public init(from reader: inout ByteReader) throws(WireError) {
        status = HCIStatus(rawValue: try reader.readUInt8("Status"))
        handle = try reader.readConnectionHandle("Connection_Handle")
        txPHY = LEPHY(rawValue: try reader.readUInt8("TX_PHY"))
        rxPHY = LEPHY(rawValue: try reader.readUInt8("RX_PHY"))
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(status.rawValue)
        writer.write(handle)
        writer.write(txPHY.rawValue)
        writer.write(rxPHY.rawValue)
    }
}
