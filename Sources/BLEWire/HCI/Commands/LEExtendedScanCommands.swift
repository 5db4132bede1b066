// Extended scanning and extended connection creation. Core 5.4, Vol 4, Part E, 7.8.64–7.8.66. Array parameters are laid
// out element by element (all the fields of element 0, then of element 1...), as Vol 4, Part E, 5.2 describes.

/// LE Set Extended Scan Parameters. Core 5.4, Vol 4, Part E, 7.8.64.
public struct HCILESetExtendedScanParameters: HCICommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leSetExtendedScanParameters

    /// How one PHY is scanned.
    public struct PHYParameters: Hashable, Sendable {
        /// `Scan_Type[i]`.
        public var scanType: HCILEScanType
        /// `Scan_Interval[i]` in 0.625 ms units (0x0004–0xFFFF).
        public var interval: UInt16
        /// `Scan_Window[i]` in 0.625 ms units (0x0004–0xFFFF, ≤ interval).
        public var window: UInt16
        /// Creates the parameters of one PHY.
        public init(scanType: HCILEScanType = .active, interval: UInt16 = 0x0060, window: UInt16 = 0x0030) {
            self.scanType = scanType
            self.interval = interval
            self.window = window
        }

        /// Whether the values are in the allowed ranges.
        public var isValid: Bool {
            let typeOK = scanType.rawValue <= 1
            let rangeOK = interval >= 4 && window >= 4
            return typeOK && rangeOK && window <= interval
        }
    }

    /// `Own_Address_Type`.
    public var ownAddressType: LEAddressType
    /// `Scanning_Filter_Policy`.
    public var filterPolicy: UInt8
    /// LE 1M's parameters, when it is scanned (`Scanning_PHYs` bit 0).
    public var le1M: PHYParameters?
    /// LE Coded's parameters, when it is scanned (`Scanning_PHYs` bit 2).
    public var leCoded: PHYParameters?

    /// Creates the command.
    public init(ownAddressType: LEAddressType = .public, filterPolicy: UInt8 = 0, le1M: PHYParameters? = PHYParameters(),
                leCoded: PHYParameters? = nil) {
        self.ownAddressType = ownAddressType
        self.filterPolicy = filterPolicy
        self.le1M = le1M
        self.leCoded = leCoded
    }

    /// `Scanning_PHYs`.
    public var phys: LEPHYs {
        var result: LEPHYs = []
        if le1M != nil { result.insert(.le1M) }
        if leCoded != nil { result.insert(.leCoded) }
        return result
    }

    public init(from reader: inout ByteReader) throws(WireError) {
        ownAddressType = LEAddressType(rawValue: try reader.readUInt8("Own_Address_Type"))
        filterPolicy = try reader.readUInt8("Scanning_Filter_Policy")
        let phys = try reader.readUInt8("Scanning_PHYs")
        // Bit 1 (LE 2M) and bits 3-7 are reserved: nothing is scanned on them. Core 5.4, Vol 4, Part E, 7.8.64.
        guard phys & ~0x05 == 0 else { throw WireError(.invalidValue, "Scanning_PHYs 0x\([phys].hexString())") }
        func read(_ reader: inout ByteReader) throws(WireError) -> PHYParameters {
            let type = HCILEScanType(rawValue: try reader.readUInt8("Scan_Type"))
            let interval = try reader.readUInt16("Scan_Interval")
            let window = try reader.readUInt16("Scan_Window")
            return PHYParameters(scanType: type, interval: interval, window: window)
        }
        le1M = phys & 0x01 != 0 ? try read(&reader) : nil
        leCoded = phys & 0x04 != 0 ? try read(&reader) : nil
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(ownAddressType.rawValue)
        writer.write(filterPolicy)
        writer.write(phys.rawValue)
        for p in [le1M, leCoded].compactMap({ $0 }) {
            writer.write(p.scanType.rawValue)
            writer.write(p.interval)
            writer.write(p.window)
        }
    }

    /// Whether the parameters are within the ranges the specification allows (at least one PHY).
    public var isValid: Bool {
        guard ownAddressType.rawValue <= 3, filterPolicy <= 3, le1M != nil || leCoded != nil else { return false }
        let scanned: [PHYParameters] = [le1M, leCoded].compactMap { $0 }
        return scanned.allSatisfy(\.isValid)
    }
}

/// LE Set Extended Scan Enable. Core 5.4, Vol 4, Part E, 7.8.65.
public struct HCILESetExtendedScanEnable: HCICommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leSetExtendedScanEnable
    /// `Enable`.
    public var isEnabled: Bool
    /// `Filter_Duplicates`: 0 off, 1 on, 2 on and reset for each scan period.
    public var filterDuplicates: UInt8
    /// `Duration` in 10 ms units (0: until disabled).
    public var duration: UInt16
    /// `Period` in 1.28 s units (0: scan once).
    public var period: UInt16
    /// Creates the command.
    public init(isEnabled: Bool, filterDuplicates: UInt8 = 0, duration: UInt16 = 0, period: UInt16 = 0) {
        self.isEnabled = isEnabled
        self.filterDuplicates = filterDuplicates
        self.duration = duration
        self.period = period
    }
    public init(from reader: inout ByteReader) throws(WireError) {
        let enable = try reader.readUInt8("Enable")
        guard enable <= 1 else { throw WireError(.invalidValue, "Enable 0x\([enable].hexString())") }
        isEnabled = enable == 1
        filterDuplicates = try reader.readUInt8("Filter_Duplicates")
        duration = try reader.readUInt16("Duration")
        period = try reader.readUInt16("Period")
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(UInt8(isEnabled ? 1 : 0))
        writer.write(filterDuplicates)
        writer.write(duration)
        writer.write(period)
    }
}

/// LE Extended Create Connection [v1]. Core 5.4, Vol 4, Part E, 7.8.66.
public struct HCILEExtendedCreateConnection: HCICommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leExtendedCreateConnection
    /// Acknowledged with Command Status; the outcome arrives in a later event.
    public static let completion = HCICommandCompletion.commandStatus

    /// The scan and connection parameters of one initiating PHY.
    public struct PHYParameters: Hashable, Sendable {
        /// `Scan_Interval[i]` in 0.625 ms units.
        public var scanInterval: UInt16
        /// `Scan_Window[i]` in 0.625 ms units.
        public var scanWindow: UInt16
        /// `Connection_Interval_Min[i]` in 1.25 ms units.
        public var connectionIntervalMin: UInt16
        /// `Connection_Interval_Max[i]` in 1.25 ms units.
        public var connectionIntervalMax: UInt16
        /// `Max_Latency[i]`.
        public var maxLatency: UInt16
        /// `Supervision_Timeout[i]` in 10 ms units.
        public var supervisionTimeout: UInt16
        /// `Min_CE_Length[i]`.
        public var minCELength: UInt16
        /// `Max_CE_Length[i]`.
        public var maxCELength: UInt16

        /// Creates the parameters of one PHY.
        public init(scanInterval: UInt16 = 0x0060, scanWindow: UInt16 = 0x0060, connectionIntervalMin: UInt16 = 0x0018,
                    connectionIntervalMax: UInt16 = 0x0028, maxLatency: UInt16 = 0, supervisionTimeout: UInt16 = 0x01F4,
                    minCELength: UInt16 = 0, maxCELength: UInt16 = 0) {
            self.scanInterval = scanInterval
            self.scanWindow = scanWindow
            self.connectionIntervalMin = connectionIntervalMin
            self.connectionIntervalMax = connectionIntervalMax
            self.maxLatency = maxLatency
            self.supervisionTimeout = supervisionTimeout
            self.minCELength = minCELength
            self.maxCELength = maxCELength
        }

        /// Whether the values are in the ranges LE Create Connection allows (Core 5.4, Vol 4, Part E, 7.8.12).
        public var isValid: Bool {
            let scan = (0x0004...0x4000).contains(scanInterval) && (0x0004...0x4000).contains(scanWindow) && scanWindow <= scanInterval
            let interval = (0x0006...0x0C80).contains(connectionIntervalMin) && (0x0006...0x0C80).contains(connectionIntervalMax)
                && connectionIntervalMin <= connectionIntervalMax
            let rest = maxLatency <= 0x01F3 && (0x000A...0x0C80).contains(supervisionTimeout) && minCELength <= maxCELength
            return scan && interval && rest
        }
    }

    /// `Initiator_Filter_Policy`.
    public var initiatorFilterPolicy: UInt8
    /// `Own_Address_Type`.
    public var ownAddressType: LEAddressType
    /// `Peer_Address_Type`.
    public var peerAddressType: LEAddressType
    /// `Peer_Address`.
    public var peerAddress: BluetoothAddress
    /// LE 1M's parameters (`Initiating_PHYs` bit 0: scanned for the advertiser, and used if connected on it).
    public var le1M: PHYParameters?
    /// LE 2M's connection parameters (bit 1: not scanned).
    public var le2M: PHYParameters?
    /// LE Coded's parameters (bit 2: scanned).
    public var leCoded: PHYParameters?

    /// Creates the command.
    public init(initiatorFilterPolicy: UInt8 = 0, ownAddressType: LEAddressType = .public, peerAddressType: LEAddressType,
                peerAddress: BluetoothAddress, le1M: PHYParameters? = PHYParameters(), le2M: PHYParameters? = nil,
                leCoded: PHYParameters? = nil) {
        self.initiatorFilterPolicy = initiatorFilterPolicy
        self.ownAddressType = ownAddressType
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.le1M = le1M
        self.le2M = le2M
        self.leCoded = leCoded
    }

    /// `Initiating_PHYs`.
    public var phys: LEPHYs {
        var result: LEPHYs = []
        if le1M != nil { result.insert(.le1M) }
        if le2M != nil { result.insert(.le2M) }
        if leCoded != nil { result.insert(.leCoded) }
        return result
    }

    public init(from reader: inout ByteReader) throws(WireError) {
        initiatorFilterPolicy = try reader.readUInt8("Initiator_Filter_Policy")
        ownAddressType = LEAddressType(rawValue: try reader.readUInt8("Own_Address_Type"))
        peerAddressType = LEAddressType(rawValue: try reader.readUInt8("Peer_Address_Type"))
        peerAddress = try BluetoothAddress(from: &reader)
        let phys = try reader.readUInt8("Initiating_PHYs")
        guard phys & ~0x07 == 0 else { throw WireError(.invalidValue, "Initiating_PHYs 0x\([phys].hexString())") }
        func read(_ reader: inout ByteReader) throws(WireError) -> PHYParameters {
            PHYParameters(scanInterval: try reader.readUInt16("Scan_Interval"), scanWindow: try reader.readUInt16("Scan_Window"),
                          connectionIntervalMin: try reader.readUInt16("Connection_Interval_Min"),
                          connectionIntervalMax: try reader.readUInt16("Connection_Interval_Max"),
                          maxLatency: try reader.readUInt16("Max_Latency"),
                          supervisionTimeout: try reader.readUInt16("Supervision_Timeout"),
                          minCELength: try reader.readUInt16("Min_CE_Length"), maxCELength: try reader.readUInt16("Max_CE_Length"))
        }
        le1M = phys & 0x01 != 0 ? try read(&reader) : nil
        le2M = phys & 0x02 != 0 ? try read(&reader) : nil
        leCoded = phys & 0x04 != 0 ? try read(&reader) : nil
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(initiatorFilterPolicy)
        writer.write(ownAddressType.rawValue)
        writer.write(peerAddressType.rawValue)
        peerAddress.encode(into: &writer)
        writer.write(phys.rawValue)
        for p in [le1M, le2M, leCoded].compactMap({ $0 }) {
            writer.write(p.scanInterval)
            writer.write(p.scanWindow)
            writer.write(p.connectionIntervalMin)
            writer.write(p.connectionIntervalMax)
            writer.write(p.maxLatency)
            writer.write(p.supervisionTimeout)
            writer.write(p.minCELength)
            writer.write(p.maxCELength)
        }
    }

    /// Whether the parameters are within the ranges the specification allows: a scanned PHY (LE 1M or LE Coded) is
    /// needed, and every PHY's values valid.
    public var isValid: Bool {
        guard initiatorFilterPolicy <= 1, ownAddressType.rawValue <= 3, peerAddressType.rawValue <= 3,
              le1M != nil || leCoded != nil else { return false }
        let given: [PHYParameters] = [le1M, le2M, leCoded].compactMap { $0 }
        return given.allSatisfy(\.isValid)
    }
}
