// Advertising reports: legacy and extended.

/// The PDU type a legacy Advertising Report describes. Core 5.4, Vol 4, Part E, 7.7.65.2.
public struct HCILEAdvertisingReportEventType: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Connectable and scannable undirected (ADV_IND).
    public static let advInd = HCILEAdvertisingReportEventType(rawValue: 0x00)
    /// Connectable directed (ADV_DIRECT_IND).
    public static let advDirectInd = HCILEAdvertisingReportEventType(rawValue: 0x01)
    /// Scannable undirected (ADV_SCAN_IND).
    public static let advScanInd = HCILEAdvertisingReportEventType(rawValue: 0x02)
    /// Non connectable undirected (ADV_NONCONN_IND).
    public static let advNonconnInd = HCILEAdvertisingReportEventType(rawValue: 0x03)
    /// Scan response (SCAN_RSP).
    public static let scanResponse = HCILEAdvertisingReportEventType(rawValue: 0x04)

    /// Whether a central may connect to the advertiser.
    public var isConnectable: Bool { self == .advInd || self == .advDirectInd }
}

/// LE Advertising Report. Core 5.4, Vol 4, Part E, 7.7.65.2.
///
/// Reports are laid out one after another (event type, address type, address, data length, data, RSSI), as
/// controllers send them.
public struct HCILEAdvertisingReportEvent: HCILEMetaEventParameters, Hashable {
    /// The LE Meta subevent code.
    public static let subevent = HCILESubeventCode.advertisingReport

    /// One received advertising or scan response PDU.
    public struct Report: Hashable, Sendable {
        /// `Event_Type`.
        public var eventType: HCILEAdvertisingReportEventType
        /// `Address_Type`.
        public var addressType: LEAddressType
        /// Address.
        public var address: BluetoothAddress
        /// Advertising or scan response data (at most 31 octets).
        public var data: [UInt8]
        /// RSSI in dBm; 127 means not available.
        public var rssi: Int8
        /// Creates one report of an advertising or scan response PDU from `address`, with its data and RSSI.
        public init(eventType: HCILEAdvertisingReportEventType, addressType: LEAddressType, address: BluetoothAddress,
                    data: [UInt8], rssi: Int8) {
            self.eventType = eventType
            self.addressType = addressType
            self.address = address
            self.data = data
            self.rssi = rssi
        }
    }

    /// Reports.
    public var reports: [Report]
    /// Creates an LE Advertising Report event carrying `reports` (1 to 25 of them on the wire).
    public init(reports: [Report]) { self.reports = reports }
    public init(from reader: inout ByteReader) throws(WireError) {
        let count = Int(try reader.readUInt8("Num_Reports"))
        guard (1...0x19).contains(count) else { throw WireError(.invalidValue, "Num_Reports \(count) outside 1...25") }
        var result: [Report] = []
        for _ in 0..<count {
            let type = HCILEAdvertisingReportEventType(rawValue: try reader.readUInt8("Event_Type"))
            let addressType = LEAddressType(rawValue: try reader.readUInt8("Address_Type"))
            let address = try BluetoothAddress(from: &reader)
            let length = Int(try reader.readUInt8("Data_Length"))
            guard length <= 31 else { throw WireError(.invalidValue, "advertising report Data_Length \(length) exceeds 31") }
            let data = try reader.readBytes(length, "Data")
            let rssi = try reader.readInt8("RSSI")
            result.append(Report(eventType: type, addressType: addressType, address: address, data: data, rssi: rssi))
        }
        reports = result
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(UInt8(truncatingIfNeeded: reports.count))
        for r in reports {
            writer.write(r.eventType.rawValue)
            writer.write(r.addressType.rawValue)
            r.address.encode(into: &writer)
            writer.write(UInt8(truncatingIfNeeded: r.data.count))
            writer.write(r.data)
            writer.write(r.rssi)
        }
    }
}

/// The Event_Type bit field of an Extended Advertising Report. Core 5.4, Vol 4, Part E, 7.7.65.13.
public struct HCILEExtendedAdvertisingEventType: OptionSet, Hashable, Sendable {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// Connectable (1).
    public static let connectable = HCILEExtendedAdvertisingEventType(rawValue: 1 << 0)
    /// Scannable (1).
    public static let scannable = HCILEExtendedAdvertisingEventType(rawValue: 1 << 1)
    /// Directed (1).
    public static let directed = HCILEExtendedAdvertisingEventType(rawValue: 1 << 2)
    /// Scan response (1).
    public static let scanResponse = HCILEExtendedAdvertisingEventType(rawValue: 1 << 3)
    /// Legacy (1).
    public static let legacy = HCILEExtendedAdvertisingEventType(rawValue: 1 << 4)
    /// Data status (bits 5–6): 0 complete, 1 incomplete with more to come, 2 incomplete and truncated (3 is reserved).
    public var dataStatus: UInt8 { UInt8(truncatingIfNeeded: (rawValue >> 5) & 0x03) }

    /// Data status 0: the data is complete.
    public static let dataComplete: UInt8 = 0
    /// Data status 1: incomplete, more data to come in later reports.
    public static let dataIncompleteMore: UInt8 = 1
    /// Data status 2: incomplete and truncated, no more to come.
    public static let dataTruncated: UInt8 = 2

    /// The same bits with data status `status` (0–3).
    public func with(dataStatus status: UInt8) -> HCILEExtendedAdvertisingEventType {
        HCILEExtendedAdvertisingEventType(rawValue: rawValue & ~0x0060 | UInt16(status & 0x03) << 5)
    }

    /// The most data octets one report carries in an event holding only that report: 229 (255 octets of
    /// parameters, minus the subevent code, Num_Reports and the report's 24 fixed octets). Core 5.4, Vol 4, Part E,
    /// 7.7.65.13.
    public static let maximumDataPerReport = 229
}

/// LE Scan Timeout: the scan's Duration ran out (its Period being zero). It has no parameters. Core 5.4, Vol 4,
/// Part E, 7.7.65.17.
public struct HCILEScanTimeoutEvent: HCILEMetaEventParameters, Hashable {
    /// The LE Meta subevent code.
    public static let subevent = HCILESubeventCode.scanTimeout
    /// Creates the event.
    public init() {}
    public init(from reader: inout ByteReader) throws(WireError) {}
    public func encode(into writer: inout ByteWriter) {}
}

/// LE Advertising Set Terminated: a set stopped advertising because a connection was made on it, its duration ran
/// out, or it reached its maximum number of events. Core 5.4, Vol 4, Part E, 7.7.65.18.
public struct HCILEAdvertisingSetTerminatedEvent: HCILEMetaEventParameters, Hashable {
    /// The LE Meta subevent code.
    public static let subevent = HCILESubeventCode.advertisingSetTerminated
    /// `Status`: success when a connection was made; Advertising Timeout (0x3C) when the duration ran out; Limit
    /// Reached (0x43) after Max_Extended_Advertising_Events.
    public var status: HCIStatus
    /// `Advertising_Handle`.
    public var handle: UInt8
    /// `Connection_Handle` (meaningful with status success).
    public var connectionHandle: ConnectionHandle
    /// `Num_Completed_Extended_Advertising_Events`.
    public var completedEvents: UInt8
    /// Creates the event.
    public init(status: HCIStatus = .success, handle: UInt8, connectionHandle: ConnectionHandle, completedEvents: UInt8 = 0) {
        self.status = status
        self.handle = handle
        self.connectionHandle = connectionHandle
        self.completedEvents = completedEvents
    }
    public init(from reader: inout ByteReader) throws(WireError) {
        status = HCIStatus(rawValue: try reader.readUInt8("Status"))
        handle = try reader.readUInt8("Advertising_Handle")
        connectionHandle = ConnectionHandle(rawValue: try reader.readUInt16("Connection_Handle") & 0x0FFF)
        completedEvents = try reader.readUInt8("Num_Completed_Extended_Advertising_Events")
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(status.rawValue)
        writer.write(handle)
        writer.write(connectionHandle.rawValue)
        writer.write(completedEvents)
    }
}

/// LE Extended Advertising Report. Core 5.4, Vol 4, Part E, 7.7.65.13.
public struct HCILEExtendedAdvertisingReportEvent: HCILEMetaEventParameters, Hashable {
    /// The LE Meta subevent code.
    public static let subevent = HCILESubeventCode.extendedAdvertisingReport

    /// One received extended (or legacy-as-extended) advertising PDU.
    public struct Report: Hashable, Sendable {
        /// `Event_Type`.
        public var eventType: HCILEExtendedAdvertisingEventType
        /// `Address_Type`.
        public var addressType: LEAddressType
        /// Address.
        public var address: BluetoothAddress
        /// `Primary_PHY`.
        public var primaryPHY: UInt8
        /// `Secondary_PHY`.
        public var secondaryPHY: UInt8
        /// Advertising SID.
        public var advertisingSID: UInt8
        /// TX power in dBm; 127 means not available.
        public var txPower: Int8
        /// RSSI in dBm; 127 means not available.
        public var rssi: Int8
        /// Periodic advertising interval.
        public var periodicAdvertisingInterval: UInt16
        /// Direct address type.
        public var directAddressType: LEAddressType
        /// Direct address.
        public var directAddress: BluetoothAddress
        /// Data.
        public var data: [UInt8]

        /// Creates one extended report from `address` with its data and RSSI; the defaults say LE 1M primary PHY, no
        /// secondary PHY, no ADI, no TX power, no periodic advertising and no direct address.
        public init(eventType: HCILEExtendedAdvertisingEventType, addressType: LEAddressType, address: BluetoothAddress,
                    primaryPHY: UInt8 = 1, secondaryPHY: UInt8 = 0, advertisingSID: UInt8 = 0xFF, txPower: Int8 = 127,
                    rssi: Int8, periodicAdvertisingInterval: UInt16 = 0, directAddressType: LEAddressType = .public,
                    directAddress: BluetoothAddress = .zero, data: [UInt8]) {
            self.eventType = eventType
            self.addressType = addressType
            self.address = address
            self.primaryPHY = primaryPHY
            self.secondaryPHY = secondaryPHY
            self.advertisingSID = advertisingSID
            self.txPower = txPower
            self.rssi = rssi
            self.periodicAdvertisingInterval = periodicAdvertisingInterval
            self.directAddressType = directAddressType
            self.directAddress = directAddress
            self.data = data
        }
    }

    /// Reports.
    public var reports: [Report]
    /// Creates an LE Extended Advertising Report event carrying `reports` (1 to 10 of them on the wire).
    public init(reports: [Report]) { self.reports = reports }
    public init(from reader: inout ByteReader) throws(WireError) {
        let count = Int(try reader.readUInt8("Num_Reports"))
        guard (1...0x0A).contains(count) else { throw WireError(.invalidValue, "Num_Reports \(count) outside 1...10") }
        var result: [Report] = []
        for _ in 0..<count {
            let eventType = HCILEExtendedAdvertisingEventType(rawValue: try reader.readUInt16("Event_Type"))
            let addressType = LEAddressType(rawValue: try reader.readUInt8("Address_Type"))
            let address = try BluetoothAddress(from: &reader)
            let primaryPHY = try reader.readUInt8("Primary_PHY")
            let secondaryPHY = try reader.readUInt8("Secondary_PHY")
            let sid = try reader.readUInt8("Advertising_SID")
            let txPower = try reader.readInt8("TX_Power")
            let rssi = try reader.readInt8("RSSI")
            let interval = try reader.readUInt16("Periodic_Advertising_Interval")
            let directType = LEAddressType(rawValue: try reader.readUInt8("Direct_Address_Type"))
            let direct = try BluetoothAddress(from: &reader)
            let length = Int(try reader.readUInt8("Data_Length"))
            guard length <= HCILEExtendedAdvertisingEventType.maximumDataPerReport else {
                throw WireError(.invalidValue, "extended advertising report Data_Length \(length) exceeds 229")
            }
            let data = try reader.readBytes(length, "Data")
            result.append(Report(eventType: eventType, addressType: addressType, address: address, primaryPHY: primaryPHY,
                                 secondaryPHY: secondaryPHY, advertisingSID: sid, txPower: txPower, rssi: rssi,
                                 periodicAdvertisingInterval: interval, directAddressType: directType,
                                 directAddress: direct, data: data))
        }
        reports = result
    }
    public func encode(into writer: inout ByteWriter) {
        writer.write(UInt8(truncatingIfNeeded: reports.count))
        for r in reports {
            writer.write(r.eventType.rawValue)
            writer.write(r.addressType.rawValue)
            r.address.encode(into: &writer)
            writer.write(r.primaryPHY)
            writer.write(r.secondaryPHY)
            writer.write(r.advertisingSID)
            writer.write(r.txPower)
            writer.write(r.rssi)
            writer.write(r.periodicAdvertisingInterval)
            writer.write(r.directAddressType.rawValue)
            r.directAddress.encode(into: &writer)
            writer.write(UInt8(truncatingIfNeeded: r.data.count))
            writer.write(r.data)
        }
    }
}
