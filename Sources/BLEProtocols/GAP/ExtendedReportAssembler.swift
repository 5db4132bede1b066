import BLEWire

/// Puts extended advertising reports back together. A controller splits an extended advertisement whose data does not
/// fit one LE Extended Advertising Report into several, all but the last with data status "incomplete, more to come"
/// (Core 5.4, Vol 4, Part E, 7.7.65.13); a chain it could not receive whole ends with "incomplete, truncated". This
/// joins the parts of each advertiser's advertisement — keyed by address, address type, Advertising SID and whether it
/// is a scan response — and hands out each advertisement once complete or truncated. Sans-I/O, synchronous.
///
/// Bounded: at most ``maximumPending`` advertisements are assembled at once (the oldest is dropped for a new one), and
/// one grows to at most ``maximumLength`` octets (beyond, it is handed out truncated). Legacy PDUs are always complete.
public struct ExtendedReportAssembler: Sendable {
    /// An advertisement put back together.
    public struct Assembled: Sendable, Hashable {
        /// The last part's report, with ``HCILEExtendedAdvertisingReportEvent/Report/data`` the whole data and its
        /// data status cleared.
        public var report: HCILEExtendedAdvertisingReportEvent.Report
        /// Whether the data is incomplete: the controller said truncated, or it exceeded ``maximumLength``.
        public var isTruncated: Bool
    }

    struct Key: Hashable {
        var address: BluetoothAddress
        var addressType: UInt8
        var sid: UInt8
        var scanResponse: Bool
    }

    /// The most advertisements assembled at once.
    public let maximumPending: Int
    /// The most data one advertisement keeps (the specification's largest advertising data: 1650 octets).
    public let maximumLength: Int
    private var pending: [Key: (data: [UInt8], order: UInt64)] = [:]
    private var counter: UInt64 = 0

    /// Creates an assembler.
    public init(maximumPending: Int = 64, maximumLength: Int = 1650) {
        self.maximumPending = max(1, maximumPending)
        self.maximumLength = max(31, maximumLength)
    }

    /// The advertisements being assembled now.
    public var pendingCount: Int { pending.count }

    /// Takes one report: returns the advertisement it completes (or truncates), or `nil` while more is to come.
    public mutating func receive(_ report: HCILEExtendedAdvertisingReportEvent.Report) -> Assembled? {
        let status = report.eventType.dataStatus
        var whole = report
        whole.eventType = report.eventType.with(dataStatus: HCILEExtendedAdvertisingEventType.dataComplete)
        if report.eventType.contains(.legacy) { return Assembled(report: whole, isTruncated: false) }
        let key = Key(address: report.address, addressType: report.addressType.rawValue, sid: report.advertisingSID,
                      scanResponse: report.eventType.contains(.scanResponse))
        counter &+= 1
        let data = (pending.removeValue(forKey: key)?.data ?? []) + report.data
        guard data.count <= maximumLength else {
            whole.data = Array(data.prefix(maximumLength))
            return Assembled(report: whole, isTruncated: true)
        }
        whole.data = data
        switch status {
        case HCILEExtendedAdvertisingEventType.dataIncompleteMore:
            if pending.count >= maximumPending, let oldest = pending.min(by: { $0.value.order < $1.value.order })?.key {
                pending[oldest] = nil
            }
            pending[key] = (data, counter)
            return nil
        case HCILEExtendedAdvertisingEventType.dataComplete:
            return Assembled(report: whole, isTruncated: false)
        default:
            // Truncated (2) or reserved (3): what came is all there is.
            return Assembled(report: whole, isTruncated: true)
        }
    }

    /// Forgets what is being assembled (a new scan).
    public mutating func reset() { pending = [:] }
}
