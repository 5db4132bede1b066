// Extended advertising. Core 5.4, Vol 4, Part E, 7.8.52–7.8.61 (extended scanning and connection creation, 7.8.64–7.8.66,
// are in LEExtendedScanCommands.swift).
// Array parameters are laid out element by element (all the fields of element 0, then of element 1...), as Vol 4,
// Part E, 5.2 describes.

/// The Advertising_Event_Properties bit field of LE Set Extended Advertising Parameters. Core 5.4, Vol 4, Part E,
/// 7.8.53.
public struct HCILEAdvertisingEventProperties: OptionSet, Hashable, Sendable {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// Connectable advertising (bit 0).
    public static let connectable = HCILEAdvertisingEventProperties(rawValue: 1 << 0)
    /// Scannable advertising (bit 1).
    public static let scannable = HCILEAdvertisingEventProperties(rawValue: 1 << 1)
    /// Directed advertising (bit 2).
    public static let directed = HCILEAdvertisingEventProperties(rawValue: 1 << 2)
    /// High duty cycle directed connectable advertising (bit 3).
    public static let highDutyCycle = HCILEAdvertisingEventProperties(rawValue: 1 << 3)
    /// Use legacy advertising PDUs (bit 4).
    public static let legacy = HCILEAdvertisingEventProperties(rawValue: 1 << 4)
    /// Omit the advertiser's address from all PDUs, "anonymous advertising" (bit 5).
    public static let anonymous = HCILEAdvertisingEventProperties(rawValue: 1 << 5)
    /// Include TxPower in the extended header of at least one PDU (bit 6).
    public static let includeTxPower = HCILEAdvertisingEventProperties(rawValue: 1 << 6)

    /// ADV_IND as legacy properties (0b0010011).
    public static let legacyConnectableScannable: HCILEAdvertisingEventProperties = [.legacy, .connectable, .scannable]
    /// ADV_SCAN_IND as legacy properties (0b0010010).
    public static let legacyScannable: HCILEAdvertisingEventProperties = [.legacy, .scannable]
    /// ADV_NONCONN_IND as legacy properties (0b0010000).
    public static let legacyNonConnectable: HCILEAdvertisingEventProperties = [.legacy]
    /// ADV_DIRECT_IND (low duty cycle) as legacy properties (0b0010101).
    public static let legacyDirectedLowDuty: HCILEAdvertisingEventProperties = [.legacy, .connectable, .directed]
    /// ADV_DIRECT_IND (high duty cycle) as legacy properties (0b0011101).
    public static let legacyDirectedHighDuty: HCILEAdvertisingEventProperties = [.legacy, .connectable, .directed, .highDutyCycle]

    /// Whether the combination is one the specification allows: with legacy PDUs only the five legacy types; with
    /// extended PDUs not both connectable and scannable, no high duty cycle, and anonymous never connectable.
    public var isValid: Bool {
        guard rawValue & ~0x7F == 0 else { return false }
        if contains(.legacy) {
            return [Self.legacyConnectableScannable, .legacyScannable, .legacyNonConnectable, .legacyDirectedLowDuty,
                    .legacyDirectedHighDuty].contains(subtracting(.includeTxPower))
        }
        if contains(.connectable) && contains(.scannable) { return false }
        if contains(.highDutyCycle) { return false }
        if contains(.anonymous) && contains(.connectable) { return false }
        return true
    }
}

/// LE Set Advertising Set Random Address. Core 5.4, Vol 4, Part E, 7.8.52.
public struct HCILESetAdvertisingSetRandomAddress: HCICommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leSetAdvertisingSetRandomAddress
    /// `Advertising_Handle` (0x00–0xEF).
    public var handle: UInt8
    /// `Random_Address`.
    public var address: BluetoothAddress
    /// Creates the command: `handle`'s set advertises from `address` when its own address type is random.
    public init(handle: UInt8, address: BluetoothAddress) {
        self.handle = handle
        self.address = address
    }
    public init(from reader: inout ByteReader) throws(WireError) {
        handle = try reader.readUInt8("Advertising_Handle")
        address = try BluetoothAddress(from: &reader)
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(handle)
        address.encode(into: &writer)
    }
}

/// LE Set Extended Advertising Parameters [v1]. Core 5.4, Vol 4, Part E, 7.8.53.
public struct HCILESetExtendedAdvertisingParameters: HCICommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leSetExtendedAdvertisingParameters

    /// The return parameters: status and the TX power the controller chose.
    public struct ReturnParameters: WireCodable, Hashable {
        /// The status.
        public var status: HCIStatus
        /// `Selected_TX_Power` in dBm.
        public var selectedTxPower: Int8
        /// Creates the return parameters.
        public init(status: HCIStatus = .success, selectedTxPower: Int8 = 0) {
            self.status = status
            self.selectedTxPower = selectedTxPower
        }
        public init(from reader: inout ByteReader) throws(WireError) {
            status = HCIStatus(rawValue: try reader.readUInt8("Status"))
            selectedTxPower = status == .success ? try reader.readInt8("Selected_TX_Power") : 0
        }
        public func encode(into writer: inout ByteWriter) {
            writer.write(status.rawValue)
            writer.write(selectedTxPower)
        }
    }

    /// `Advertising_Handle` (0x00–0xEF).
    public var handle: UInt8
    /// `Advertising_Event_Properties`.
    public var properties: HCILEAdvertisingEventProperties
    /// `Primary_Advertising_Interval_Min` in 0.625 ms units (0x000020–0xFFFFFF, 24 bits).
    public var intervalMin: UInt32
    /// `Primary_Advertising_Interval_Max` in 0.625 ms units.
    public var intervalMax: UInt32
    /// `Primary_Advertising_Channel_Map`: bit 0 channel 37, bit 1 38, bit 2 39.
    public var channelMap: UInt8
    /// `Own_Address_Type`.
    public var ownAddressType: LEAddressType
    /// `Peer_Address_Type` (directed advertising).
    public var peerAddressType: LEAddressType
    /// `Peer_Address` (directed advertising).
    public var peerAddress: BluetoothAddress
    /// `Advertising_Filter_Policy`.
    public var filterPolicy: UInt8
    /// `Advertising_TX_Power` in dBm (127: no preference).
    public var txPower: Int8
    /// `Primary_Advertising_PHY`: LE 1M (0x01) or LE Coded (0x03).
    public var primaryPHY: LEPHY
    /// `Secondary_Advertising_Max_Skip`.
    public var secondaryMaxSkip: UInt8
    /// `Secondary_Advertising_PHY`: LE 1M, LE 2M or LE Coded.
    public var secondaryPHY: LEPHY
    /// `Advertising_SID` (0x00–0x0F).
    public var sid: UInt8
    /// `Scan_Request_Notification_Enable`.
    public var scanRequestNotification: Bool

    /// Creates the command; the defaults describe legacy ADV_IND from the public address every 100 ms on LE 1M.
    public init(handle: UInt8 = 0, properties: HCILEAdvertisingEventProperties = .legacyConnectableScannable,
                intervalMin: UInt32 = 0xA0, intervalMax: UInt32 = 0xA0, channelMap: UInt8 = 0x07,
                ownAddressType: LEAddressType = .public, peerAddressType: LEAddressType = .public,
                peerAddress: BluetoothAddress = .zero, filterPolicy: UInt8 = 0, txPower: Int8 = 127,
                primaryPHY: LEPHY = .le1M, secondaryMaxSkip: UInt8 = 0, secondaryPHY: LEPHY = .le1M, sid: UInt8 = 0,
                scanRequestNotification: Bool = false) {
        self.handle = handle
        self.properties = properties
        self.intervalMin = intervalMin
        self.intervalMax = intervalMax
        self.channelMap = channelMap
        self.ownAddressType = ownAddressType
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.filterPolicy = filterPolicy
        self.txPower = txPower
        self.primaryPHY = primaryPHY
        self.secondaryMaxSkip = secondaryMaxSkip
        self.secondaryPHY = secondaryPHY
        self.sid = sid
        self.scanRequestNotification = scanRequestNotification
    }
    public init(from reader: inout ByteReader) throws(WireError) {
        handle = try reader.readUInt8("Advertising_Handle")
        properties = HCILEAdvertisingEventProperties(rawValue: try reader.readUInt16("Advertising_Event_Properties"))
        intervalMin = try reader.readUInt24("Primary_Advertising_Interval_Min")
        intervalMax = try reader.readUInt24("Primary_Advertising_Interval_Max")
        channelMap = try reader.readUInt8("Primary_Advertising_Channel_Map")
        ownAddressType = LEAddressType(rawValue: try reader.readUInt8("Own_Address_Type"))
        peerAddressType = LEAddressType(rawValue: try reader.readUInt8("Peer_Address_Type"))
        peerAddress = try BluetoothAddress(from: &reader)
        filterPolicy = try reader.readUInt8("Advertising_Filter_Policy")
        txPower = try reader.readInt8("Advertising_TX_Power")
        primaryPHY = LEPHY(rawValue: try reader.readUInt8("Primary_Advertising_PHY"))
        secondaryMaxSkip = try reader.readUInt8("Secondary_Advertising_Max_Skip")
        secondaryPHY = LEPHY(rawValue: try reader.readUInt8("Secondary_Advertising_PHY"))
        sid = try reader.readUInt8("Advertising_SID")
        let notify = try reader.readUInt8("Scan_Request_Notification_Enable")
        guard notify <= 1 else { throw WireError(.invalidValue, "Scan_Request_Notification_Enable 0x\([notify].hexString())") }
        scanRequestNotification = notify == 1
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(handle)
        writer.write(properties.rawValue)
        writer.writeUInt24(intervalMin & 0xFF_FFFF)
        writer.writeUInt24(intervalMax & 0xFF_FFFF)
        writer.write(channelMap)
        writer.write(ownAddressType.rawValue)
        writer.write(peerAddressType.rawValue)
        peerAddress.encode(into: &writer)
        writer.write(filterPolicy)
        writer.write(txPower)
        writer.write(primaryPHY.rawValue)
        writer.write(secondaryMaxSkip)
        writer.write(secondaryPHY.rawValue)
        writer.write(sid)
        writer.write(UInt8(scanRequestNotification ? 1 : 0))
    }

    /// Whether the parameters are within the ranges the specification allows (the intervals are not checked for high
    /// duty cycle directed advertising; legacy PDUs need LE 1M as primary PHY).
    public var isValid: Bool {
        guard handle <= 0xEF, properties.isValid, channelMap & 0x07 != 0, channelMap & 0xF8 == 0, ownAddressType.rawValue <= 3,
              peerAddressType.rawValue <= 1, filterPolicy <= 3, sid <= 0x0F,
              [LEPHY.le1M, .leCoded].contains(primaryPHY), [LEPHY.le1M, .le2M, .leCoded].contains(secondaryPHY) else { return false }
        if properties.contains(.legacy), primaryPHY != .le1M { return false }
        if properties.contains(.highDutyCycle) { return true }
        return (0x20...0xFF_FFFF).contains(intervalMin) && (0x20...0xFF_FFFF).contains(intervalMax) && intervalMin <= intervalMax
    }
}

/// The Operation parameter of LE Set Extended Advertising Data and LE Set Extended Scan Response Data. Core 5.4, Vol 4,
/// Part E, 7.8.54–7.8.55.
public struct HCILEAdvertisingDataOperation: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// An intermediate fragment (0x00).
    public static let intermediate = HCILEAdvertisingDataOperation(rawValue: 0x00)
    /// The first fragment (0x01).
    public static let first = HCILEAdvertisingDataOperation(rawValue: 0x01)
    /// The last fragment (0x02).
    public static let last = HCILEAdvertisingDataOperation(rawValue: 0x02)
    /// The complete data (0x03).
    public static let complete = HCILEAdvertisingDataOperation(rawValue: 0x03)
    /// Unchanged data, new Advertising DID (0x04; advertising data only).
    public static let unchanged = HCILEAdvertisingDataOperation(rawValue: 0x04)

    /// The most data one command carries.
    public static let maximumFragmentLength = 251

    /// The operations that send `data` (at most `maximumFragmentLength` octets each): one `complete`, or `first`,
    /// `intermediate`..., `last`.
    public static func fragments(of data: [UInt8]) -> [(HCILEAdvertisingDataOperation, [UInt8])] {
        guard data.count > maximumFragmentLength else { return [(.complete, data)] }
        var result: [(HCILEAdvertisingDataOperation, [UInt8])] = []
        var offset = 0
        while offset < data.count {
            let end = min(data.count, offset + maximumFragmentLength)
            let operation: HCILEAdvertisingDataOperation = offset == 0 ? .first : end == data.count ? .last : .intermediate
            result.append((operation, Array(data[offset..<end])))
            offset = end
        }
        return result
    }
}

/// The shared layout of LE Set Extended Advertising Data and LE Set Extended Scan Response Data.
public struct HCILEExtendedDataFragment: Hashable, Sendable {
    /// `Advertising_Handle`.
    public var handle: UInt8
    /// `Operation`.
    public var operation: HCILEAdvertisingDataOperation
    /// `Fragment_Preference`: `true` (0x01) when the controller should not fragment the data.
    public var minimizeFragmentation: Bool
    /// The data (0–251 octets).
    public var data: [UInt8]

    /// Creates a fragment.
    public init(handle: UInt8, operation: HCILEAdvertisingDataOperation, minimizeFragmentation: Bool = false, data: [UInt8]) {
        self.handle = handle
        self.operation = operation
        self.minimizeFragmentation = minimizeFragmentation
        self.data = data
    }

    init(from reader: inout ByteReader, field: String) throws(WireError) {
        handle = try reader.readUInt8("Advertising_Handle")
        operation = HCILEAdvertisingDataOperation(rawValue: try reader.readUInt8("Operation"))
        let preference = try reader.readUInt8("Fragment_Preference")
        guard preference <= 1 else { throw WireError(.invalidValue, "Fragment_Preference 0x\([preference].hexString())") }
        minimizeFragmentation = preference == 1
        let length = Int(try reader.readUInt8("\(field)_Length"))
        guard length <= HCILEAdvertisingDataOperation.maximumFragmentLength else {
            throw WireError(.invalidValue, "\(field)_Length \(length) exceeds 251")
        }
        data = try reader.readBytes(length, field)
    }

    func encode(into writer: inout ByteWriter) {
        writer.write(handle)
        writer.write(operation.rawValue)
        writer.write(UInt8(minimizeFragmentation ? 1 : 0))
        let fragment = data.prefix(HCILEAdvertisingDataOperation.maximumFragmentLength)
        writer.write(UInt8(fragment.count))
        writer.write(fragment)
    }
}

/// LE Set Extended Advertising Data. Core 5.4, Vol 4, Part E, 7.8.54.
public struct HCILESetExtendedAdvertisingData: HCICommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leSetExtendedAdvertisingData
    /// The fragment.
    public var fragment: HCILEExtendedDataFragment
    /// Creates the command for one fragment of `handle`'s advertising data (at most 251 octets are sent).
    public init(handle: UInt8, operation: HCILEAdvertisingDataOperation = .complete, minimizeFragmentation: Bool = false,
                data: [UInt8]) {
        fragment = HCILEExtendedDataFragment(handle: handle, operation: operation, minimizeFragmentation: minimizeFragmentation,
                                             data: data)
    }
    public init(from reader: inout ByteReader) throws(WireError) {
        fragment = try HCILEExtendedDataFragment(from: &reader, field: "Advertising_Data")
    }
    public func encode(into writer: inout ByteWriter) { fragment.encode(into: &writer) }
}

/// LE Set Extended Scan Response Data. Core 5.4, Vol 4, Part E, 7.8.55.
public struct HCILESetExtendedScanResponseData: HCICommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leSetExtendedScanResponseData
    /// The fragment.
    public var fragment: HCILEExtendedDataFragment
    /// Creates the command for one fragment of `handle`'s scan response data (at most 251 octets are sent).
    public init(handle: UInt8, operation: HCILEAdvertisingDataOperation = .complete, minimizeFragmentation: Bool = false,
                data: [UInt8]) {
        fragment = HCILEExtendedDataFragment(handle: handle, operation: operation, minimizeFragmentation: minimizeFragmentation,
                                             data: data)
    }
    public init(from reader: inout ByteReader) throws(WireError) {
        fragment = try HCILEExtendedDataFragment(from: &reader, field: "Scan_Response_Data")
    }
    public func encode(into writer: inout ByteWriter) { fragment.encode(into: &writer) }
}

/// LE Set Extended Advertising Enable. Core 5.4, Vol 4, Part E, 7.8.56.
public struct HCILESetExtendedAdvertisingEnable: HCICommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leSetExtendedAdvertisingEnable

    /// One set to enable or disable.
    public struct Set: Hashable, Sendable {
        /// `Advertising_Handle[i]`.
        public var handle: UInt8
        /// `Duration[i]` in 10 ms units (0: until disabled).
        public var duration: UInt16
        /// `Max_Extended_Advertising_Events[i]` (0: no limit).
        public var maxEvents: UInt8
        /// Creates an entry.
        public init(handle: UInt8, duration: UInt16 = 0, maxEvents: UInt8 = 0) {
            self.handle = handle
            self.duration = duration
            self.maxEvents = maxEvents
        }
    }

    /// `Enable`.
    public var isEnabled: Bool
    /// The sets (empty with `isEnabled` false: every set is disabled).
    public var sets: [Set]
    /// Creates the command.
    public init(isEnabled: Bool, sets: [Set]) {
        self.isEnabled = isEnabled
        self.sets = sets
    }
    public init(from reader: inout ByteReader) throws(WireError) {
        let enable = try reader.readUInt8("Enable")
        guard enable <= 1 else { throw WireError(.invalidValue, "Enable 0x\([enable].hexString())") }
        isEnabled = enable == 1
        let count = Int(try reader.readUInt8("Num_Sets"))
        guard count <= 0x3F else { throw WireError(.invalidValue, "Num_Sets \(count) exceeds 63") }
        var sets: [Set] = []
        for _ in 0..<count {
            let handle = try reader.readUInt8("Advertising_Handle")
            let duration = try reader.readUInt16("Duration")
            let events = try reader.readUInt8("Max_Extended_Advertising_Events")
            sets.append(Set(handle: handle, duration: duration, maxEvents: events))
        }
        self.sets = sets
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(UInt8(isEnabled ? 1 : 0))
        writer.write(UInt8(truncatingIfNeeded: sets.count))
        for set in sets {
            writer.write(set.handle)
            writer.write(set.duration)
            writer.write(set.maxEvents)
        }
    }
}

/// LE Read Maximum Advertising Data Length. Core 5.4, Vol 4, Part E, 7.8.57.
public struct HCILEReadMaximumAdvertisingDataLength: HCIParameterlessCommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leReadMaximumAdvertisingDataLength
    /// Creates the command (it has no parameters).
    public init() {}

    /// The return parameters.
    public struct ReturnParameters: WireCodable, Hashable {
        /// The status.
        public var status: HCIStatus
        /// `Max_Advertising_Data_Length` (0x001F–0x0672).
        public var maximumLength: UInt16
        /// Creates the return parameters.
        public init(status: HCIStatus = .success, maximumLength: UInt16) {
            self.status = status
            self.maximumLength = maximumLength
        }
        public init(from reader: inout ByteReader) throws(WireError) {
            status = HCIStatus(rawValue: try reader.readUInt8("Status"))
            maximumLength = try reader.readUInt16("Max_Advertising_Data_Length")
        }
        public func encode(into writer: inout ByteWriter) {
            writer.write(status.rawValue)
            writer.write(maximumLength)
        }
    }
}

/// LE Read Number of Supported Advertising Sets. Core 5.4, Vol 4, Part E, 7.8.58.
public struct HCILEReadNumberOfSupportedAdvertisingSets: HCIParameterlessCommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leReadNumberOfSupportedAdvertisingSets
    /// Creates the command (it has no parameters).
    public init() {}

    /// The return parameters.
    public struct ReturnParameters: WireCodable, Hashable {
        /// The status.
        public var status: HCIStatus
        /// `Num_Supported_Advertising_Sets` (0x01–0xF0).
        public var count: UInt8
        /// Creates the return parameters.
        public init(status: HCIStatus = .success, count: UInt8) {
            self.status = status
            self.count = count
        }
        public init(from reader: inout ByteReader) throws(WireError) {
            status = HCIStatus(rawValue: try reader.readUInt8("Status"))
            count = try reader.readUInt8("Num_Supported_Advertising_Sets")
        }
        public func encode(into writer: inout ByteWriter) {
            writer.write(status.rawValue)
            writer.write(count)
        }
    }
}

/// LE Remove Advertising Set. Core 5.4, Vol 4, Part E, 7.8.59.
public struct HCILERemoveAdvertisingSet: HCICommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leRemoveAdvertisingSet
    /// `Advertising_Handle`.
    public var handle: UInt8
    /// Creates the command.
    public init(handle: UInt8) { self.handle = handle }
    public init(from reader: inout ByteReader) throws(WireError) { handle = try reader.readUInt8("Advertising_Handle") }
    public func encode(into writer: inout ByteWriter) { writer.write(handle) }
}

/// LE Clear Advertising Sets. Core 5.4, Vol 4, Part E, 7.8.60.
public struct HCILEClearAdvertisingSets: HCIParameterlessCommand, Hashable {
    /// The command's opcode.
    public static let opcode = HCIOpcode.leClearAdvertisingSets
    /// Creates the command (it has no parameters).
    public init() {}
}
