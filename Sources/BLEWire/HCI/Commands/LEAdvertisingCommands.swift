// Legacy advertising and scanning commands.

/// The legacy advertising PDU type a host asks for. Core 5.4, Vol 4, Part E, 7.8.5.
public struct HCILEAdvertisingType: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Connectable and scannable undirected (ADV_IND).
    public static let connectableUndirected = HCILEAdvertisingType(rawValue: 0x00)
    /// Connectable high duty cycle directed (ADV_DIRECT_IND).
    public static let connectableDirectedHighDuty = HCILEAdvertisingType(rawValue: 0x01)
    /// Scannable undirected (ADV_SCAN_IND).
    public static let scannableUndirected = HCILEAdvertisingType(rawValue: 0x02)
    /// Non connectable undirected (ADV_NONCONN_IND).
    public static let nonConnectableUndirected = HCILEAdvertisingType(rawValue: 0x03)
    /// Connectable low duty cycle directed (ADV_DIRECT_IND).
    public static let connectableDirectedLowDuty = HCILEAdvertisingType(rawValue: 0x04)

    /// Whether the value is defined by the specification.
    public var isValid: Bool { rawValue <= 0x04 }
    /// Whether a central may connect in response.
    public var isConnectable: Bool { self == .connectableUndirected || isDirected }
    /// Whether a scanner may send a scan request.
    public var isScannable: Bool { self == .connectableUndirected || self == .scannableUndirected }
    /// Whether the advertising is directed at one peer.
    public var isDirected: Bool { self == .connectableDirectedHighDuty || self == .connectableDirectedLowDuty }
}

/// LE Set Advertising Parameters. Core 5.4, Vol 4, Part E, 7.8.5.
public struct HCILESetAdvertisingParameters: HCICommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leSetAdvertisingParameters
    /// Minimum interval in 0.625 ms units (0x0020–0x4000).
    public var intervalMin: UInt16
    /// Maximum interval in 0.625 ms units (0x0020–0x4000, ≥ min).
    public var intervalMax: UInt16
    /// `Advertising_Type`.
    public var advertisingType: HCILEAdvertisingType
    /// `Own_Address_Type`.
    public var ownAddressType: LEAddressType
    /// `Peer_Address_Type`.
    public var peerAddressType: LEAddressType
    /// Peer address.
    public var peerAddress: BluetoothAddress
    /// Bit 0: channel 37, bit 1: 38, bit 2: 39 (0x07 all).
    public var channelMap: UInt8
    /// `Advertising_Filter_Policy`.
    public var filterPolicy: UInt8

    /// Creates an LE Set Advertising Parameters command; the defaults advertise connectable and undirected from the
    /// public address, every 1.28 s, on all three channels, with no filter.
    public init(intervalMin: UInt16 = 0x0800, intervalMax: UInt16 = 0x0800,
                advertisingType: HCILEAdvertisingType = .connectableUndirected,
                ownAddressType: LEAddressType = .public, peerAddressType: LEAddressType = .public,
                peerAddress: BluetoothAddress = .zero, channelMap: UInt8 = 0x07, filterPolicy: UInt8 = 0) {
        self.intervalMin = intervalMin
        self.intervalMax = intervalMax
        self.advertisingType = advertisingType
        self.ownAddressType = ownAddressType
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.channelMap = channelMap
        self.filterPolicy = filterPolicy
    }
    public init(from reader: inout ByteReader) throws(WireError) {
        intervalMin = try reader.readUInt16("Advertising_Interval_Min")
        intervalMax = try reader.readUInt16("Advertising_Interval_Max")
        advertisingType = HCILEAdvertisingType(rawValue: try reader.readUInt8("Advertising_Type"))
        ownAddressType = LEAddressType(rawValue: try reader.readUInt8("Own_Address_Type"))
        peerAddressType = LEAddressType(rawValue: try reader.readUInt8("Peer_Address_Type"))
        peerAddress = try BluetoothAddress(from: &reader)
        channelMap = try reader.readUInt8("Advertising_Channel_Map")
        filterPolicy = try reader.readUInt8("Advertising_Filter_Policy")
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(intervalMin)
        writer.write(intervalMax)
        writer.write(advertisingType.rawValue)
        writer.write(ownAddressType.rawValue)
        writer.write(peerAddressType.rawValue)
        peerAddress.encode(into: &writer)
        writer.write(channelMap)
        writer.write(filterPolicy)
    }

    /// Whether the parameters are within the ranges the specification allows (intervals are ignored for
    /// high duty cycle directed advertising).
    public var isValid: Bool {
        guard advertisingType.isValid, channelMap & 0x07 != 0, channelMap & 0xF8 == 0, filterPolicy <= 3,
              ownAddressType.rawValue <= 3, peerAddressType.rawValue <= 1 else { return false }
        if advertisingType == .connectableDirectedHighDuty { return true }
        return (0x0020...0x4000).contains(intervalMin) && (0x0020...0x4000).contains(intervalMax)
            && intervalMin <= intervalMax
    }
}

/// Advertising or scan response data padded to 31 octets. Shared layout of Core 5.4, Vol 4, Part E, 7.8.7 and 7.8.8.
public struct HCILegacyAdvertisingPayload: Hashable, Sendable {
    /// The significant octets (at most 31).
    public var data: [UInt8]
    /// Creates a payload from its significant octets; encoding writes at most 31 of them and pads the rest with zeros.
    public init(_ data: [UInt8]) { self.data = data }

    init(from reader: inout ByteReader, field: String) throws(WireError) {
        let length = Int(try reader.readUInt8("\(field) length"))
        let padded = try reader.readBytes(31, field)
        guard length <= 31 else { throw WireError(.invalidValue, "\(field) length \(length) exceeds 31") }
        data = Array(padded.prefix(length))
    }

    func encode(into writer: inout ByteWriter) {
        let significant = data.prefix(31)
        writer.write(UInt8(significant.count))
        writer.write(significant)
        writer.write([UInt8](repeating: 0, count: 31 - significant.count))
    }
}

/// LE Set Advertising Data. Core 5.4, Vol 4, Part E, 7.8.7.
public struct HCILESetAdvertisingData: HCICommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leSetAdvertisingData
    /// The advertising data (at most 31 octets; encoded padded to 31).
    public var data: [UInt8]
    /// Creates an LE Set Advertising Data command carrying `data` (at most 31 octets are sent).
    public init(data: [UInt8]) { self.data = data }
    public init(from reader: inout ByteReader) throws(WireError) {
        data = try HCILegacyAdvertisingPayload(from: &reader, field: "Advertising_Data").data
    }
    public func encode(into writer: inout ByteWriter) { HCILegacyAdvertisingPayload(data).encode(into: &writer) }
}

/// LE Set Scan Response Data. Core 5.4, Vol 4, Part E, 7.8.8.
public struct HCILESetScanResponseData: HCICommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leSetScanResponseData
    /// The scan response data (at most 31 octets; encoded padded to 31).
    public var data: [UInt8]
    /// Creates an LE Set Scan Response Data command carrying `data` (at most 31 octets are sent).
    public init(data: [UInt8]) { self.data = data }
    public init(from reader: inout ByteReader) throws(WireError) {
        data = try HCILegacyAdvertisingPayload(from: &reader, field: "Scan_Response_Data").data
    }
    public func encode(into writer: inout ByteWriter) { HCILegacyAdvertisingPayload(data).encode(into: &writer) }
}

/// LE Set Advertising Enable. Core 5.4, Vol 4, Part E, 7.8.9.
public struct HCILESetAdvertisingEnable: HCICommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leSetAdvertisingEnable
    /// Is enabled.
    public var isEnabled: Bool
    /// Creates an LE Set Advertising Enable command that starts (`true`) or stops (`false`) advertising.
    public init(isEnabled: Bool) { self.isEnabled = isEnabled }
    public init(from reader: inout ByteReader) throws(WireError) {
        let raw = try reader.readUInt8("Advertising_Enable")
        guard raw <= 1 else { throw WireError(.invalidValue, "Advertising_Enable 0x\([raw].hexString())") }
        isEnabled = raw == 1
    }
    public func encode(into writer: inout ByteWriter) { writer.write(UInt8(isEnabled ? 1 : 0)) }
}

/// Passive or active scanning. Core 5.4, Vol 4, Part E, 7.8.10.
public struct HCILEScanType: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// No scan requests are sent.
    public static let passive = HCILEScanType(rawValue: 0x00)
    /// Scan requests may be sent.
    public static let active = HCILEScanType(rawValue: 0x01)
}

/// LE Set Scan Parameters. Core 5.4, Vol 4, Part E, 7.8.10.
public struct HCILESetScanParameters: HCICommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leSetScanParameters
    /// `LE_Scan_Type`.
    public var scanType: HCILEScanType
    /// Scan interval in 0.625 ms units (0x0004–0x4000).
    public var interval: UInt16
    /// Scan window in 0.625 ms units (0x0004–0x4000, ≤ interval).
    public var window: UInt16
    /// `Own_Address_Type`.
    public var ownAddressType: LEAddressType
    /// `Advertising_Filter_Policy`.
    public var filterPolicy: UInt8

    /// Creates an LE Set Scan Parameters command; the defaults scan actively from the public address with a 10 ms
    /// interval and window, with no filter.
    public init(scanType: HCILEScanType = .active, interval: UInt16 = 0x0010, window: UInt16 = 0x0010,
                ownAddressType: LEAddressType = .public, filterPolicy: UInt8 = 0) {
        self.scanType = scanType
        self.interval = interval
        self.window = window
        self.ownAddressType = ownAddressType
        self.filterPolicy = filterPolicy
    }
    public init(from reader: inout ByteReader) throws(WireError) {
        scanType = HCILEScanType(rawValue: try reader.readUInt8("LE_Scan_Type"))
        interval = try reader.readUInt16("LE_Scan_Interval")
        window = try reader.readUInt16("LE_Scan_Window")
        ownAddressType = LEAddressType(rawValue: try reader.readUInt8("Own_Address_Type"))
        filterPolicy = try reader.readUInt8("Scanning_Filter_Policy")
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(scanType.rawValue)
        writer.write(interval)
        writer.write(window)
        writer.write(ownAddressType.rawValue)
        writer.write(filterPolicy)
    }

    /// Whether the parameters are within the ranges the specification allows.
    public var isValid: Bool {
        scanType.rawValue <= 1 && (0x0004...0x4000).contains(interval) && (0x0004...0x4000).contains(window)
            && window <= interval && ownAddressType.rawValue <= 3 && filterPolicy <= 3
    }
}

/// LE Set Scan Enable. Core 5.4, Vol 4, Part E, 7.8.11.
public struct HCILESetScanEnable: HCICommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leSetScanEnable
    /// Is enabled.
    public var isEnabled: Bool
    /// Whether the controller filters duplicate reports.
    public var filterDuplicates: Bool
    /// Creates an LE Set Scan Enable command that starts or stops scanning, optionally filtering duplicate reports.
    public init(isEnabled: Bool, filterDuplicates: Bool = false) {
        self.isEnabled = isEnabled
        self.filterDuplicates = filterDuplicates
    }
    public init(from reader: inout ByteReader) throws(WireError) {
        let enable = try reader.readUInt8("LE_Scan_Enable")
        let filter = try reader.readUInt8("Filter_Duplicates")
        guard enable <= 1, filter <= 1 else {
            throw WireError(.invalidValue, "LE_Scan_Enable 0x\([enable].hexString()) / Filter_Duplicates 0x\([filter].hexString())")
        }
        isEnabled = enable == 1
        filterDuplicates = filter == 1
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(UInt8(isEnabled ? 1 : 0))
        writer.write(UInt8(filterDuplicates ? 1 : 0))
    }
}
