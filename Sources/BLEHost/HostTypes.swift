import BLEProtocols
import BLEWire

/// The adapter's state, as CoreBluetooth's `CBManagerState` names it.
public enum AdapterState: Sendable, Hashable, CustomStringConvertible {
    /// Not yet known (before bring-up finishes).
    case unknown
    /// The controller is being reset (bring-up, or recovery after a hardware error).
    case resetting
    /// No usable controller: the transport could not be opened or the controller does not do LE.
    case unsupported
    /// The operating system denied access to the controller.
    case unauthorized
    /// The transport closed.
    case poweredOff
    /// Ready.
    case poweredOn

    public var description: String {
        switch self {
        case .unknown: "unknown"
        case .resetting: "resetting"
        case .unsupported: "unsupported"
        case .unauthorized: "unauthorized"
        case .poweredOff: "poweredOff"
        case .poweredOn: "poweredOn"
        }
    }
}

/// Why a host operation failed.
public typealias HostError = BLEFailure<HostErrorCode>

/// The kind of a ``HostError``: an open struct, so a release may add kinds (a `switch` over codes needs a `default:`).
///
/// Kinds with a payload are built by static functions (`.commandFailed(opcode, status)`) and read back by the
/// accessors (``hciStatus``, ``opcode``, ``capability``...).
public struct HostErrorCode: BLEErrorCode {
    private enum Backing: Hashable, Sendable {
        case commandFailed(HCIOpcode, HCIStatus)
        case commandTimedOut(HCIOpcode)
        case malformedResponse(HCIOpcode)
        case transportClosed
        case notPoweredOn
        case connectionFailed(HCIStatus)
        case connectionTimedOut
        case connectionInProgress
        case notConnected
        case l2capConnectionFailed(L2CAPConnectionFailure)
        case l2capChannelClosed
        case l2cap(L2CAPErrorCode)
        case unsupportedByController(ControllerCapability)
        case undeliveredData(L2CAPDelivery)
        case connectionParameterUpdateRefused(L2CAPConnectionParameterUpdateOutcome)
    }

    private let backing: Backing
    private init(_ backing: Backing) { self.backing = backing }

    /// The controller answered a command with an error status. ``BLEErrorCategory/protocolError``.
    public static func commandFailed(_ opcode: HCIOpcode, _ status: HCIStatus) -> HostErrorCode { HostErrorCode(.commandFailed(opcode, status)) }
    /// The controller did not answer a command in time. ``BLEErrorCategory/timedOut``.
    public static func commandTimedOut(_ opcode: HCIOpcode) -> HostErrorCode { HostErrorCode(.commandTimedOut(opcode)) }
    /// The controller answered with something that does not decode. ``BLEErrorCategory/protocolError``.
    public static func malformedResponse(_ opcode: HCIOpcode) -> HostErrorCode { HostErrorCode(.malformedResponse(opcode)) }
    /// The transport is closed or failed. ``BLEErrorCategory/disconnected``.
    public static let transportClosed = HostErrorCode(.transportClosed)
    /// The host is not powered on. ``BLEErrorCategory/disconnected``.
    public static let notPoweredOn = HostErrorCode(.notPoweredOn)
    /// A connection attempt failed with this status. ``BLEErrorCategory/protocolError``.
    public static func connectionFailed(_ status: HCIStatus) -> HostErrorCode { HostErrorCode(.connectionFailed(status)) }
    /// A connection attempt did not complete in time (it was cancelled). ``BLEErrorCategory/timedOut``.
    public static let connectionTimedOut = HostErrorCode(.connectionTimedOut)
    /// Another connection attempt is in progress (the controller initiates one at a time).
    /// ``BLEErrorCategory/failure``.
    public static let connectionInProgress = HostErrorCode(.connectionInProgress)
    /// The connection is not (or no longer) up. ``BLEErrorCategory/disconnected``.
    public static let notConnected = HostErrorCode(.notConnected)
    /// An LE credit based channel did not open. ``BLEErrorCategory/protocolError``.
    public static func l2capConnectionFailed(_ failure: L2CAPConnectionFailure) -> HostErrorCode { HostErrorCode(.l2capConnectionFailed(failure)) }
    /// The LE credit based channel is closed (by either side, or a protocol violation, or link loss).
    /// ``BLEErrorCategory/disconnected``.
    public static let l2capChannelClosed = HostErrorCode(.l2capChannelClosed)
    /// An L2CAP request the manager refused locally (invalid SPSM or parameters, SDU above the peer's MTU, ...).
    /// ``BLEErrorCategory/protocolError``: the L2CAP layer said no.
    public static func l2cap(_ code: L2CAPErrorCode) -> HostErrorCode { HostErrorCode(.l2cap(code)) }
    /// The controller lacks what the call needs (it does not list the command, or its LE features lack the
    /// feature; see ``ControllerCapabilities``). Nothing was sent to it. ``BLEErrorCategory/unsupported``.
    public static func unsupportedByController(_ capability: ControllerCapability) -> HostErrorCode { HostErrorCode(.unsupportedByController(capability)) }
    /// A channel closed with data sent on it that the controller did not confirm delivered (the close's wait ran
    /// out, or the link or the peer ended it first): how much was sent and how much confirmed. ``BLEErrorCategory/failure``.
    public static func undeliveredData(_ delivery: L2CAPDelivery) -> HostErrorCode { HostErrorCode(.undeliveredData(delivery)) }
    /// The central did not take a peripheral's Connection Parameter Update Request: it rejected it, or did not
    /// answer in time. Core 5.4, Vol 3, Part A, 4.20 and 4.21. ``BLEErrorCategory/protocolError``.
    public static func connectionParameterUpdateRefused(_ outcome: L2CAPConnectionParameterUpdateOutcome) -> HostErrorCode { HostErrorCode(.connectionParameterUpdateRefused(outcome)) }

    public var category: BLEErrorCategory {
        switch backing {
        case .commandFailed, .malformedResponse, .connectionFailed, .l2capConnectionFailed, .l2cap, .connectionParameterUpdateRefused: .protocolError
        case .commandTimedOut, .connectionTimedOut: .timedOut
        case .transportClosed, .notPoweredOn, .notConnected, .l2capChannelClosed: .disconnected
        case .connectionInProgress, .undeliveredData: .failure
        case .unsupportedByController: .unsupported
        }
    }

    /// The kind, with its payload: `notConnected`, `commandFailed(...)`.
    public var description: String {
        switch backing {
        case .commandFailed(let opcode, let status): "commandFailed(\(opcode), \(status))"
        case .commandTimedOut(let opcode): "commandTimedOut(\(opcode))"
        case .malformedResponse(let opcode): "malformedResponse(\(opcode))"
        case .transportClosed: "transportClosed"
        case .notPoweredOn: "notPoweredOn"
        case .connectionFailed(let status): "connectionFailed(\(status))"
        case .connectionTimedOut: "connectionTimedOut"
        case .connectionInProgress: "connectionInProgress"
        case .notConnected: "notConnected"
        case .l2capConnectionFailed(let failure): "l2capConnectionFailed(\(failure))"
        case .l2capChannelClosed: "l2capChannelClosed"
        case .l2cap(let code): "l2cap(\(code))"
        case .unsupportedByController(let capability): "unsupportedByController(\(capability))"
        case .undeliveredData(let delivery): "undeliveredData(\(delivery))"
        case .connectionParameterUpdateRefused(let outcome): "connectionParameterUpdateRefused(\(outcome))"
        }
    }

    /// The command of ``commandFailed(_:_:)``, ``commandTimedOut(_:)`` and ``malformedResponse(_:)``.
    public var opcode: HCIOpcode? {
        switch backing {
        case .commandFailed(let x, _): x
        case .commandTimedOut(let x): x
        case .malformedResponse(let x): x
        default: nil
        }
    }

    /// The controller's status of ``commandFailed(_:_:)`` and ``connectionFailed(_:)``.
    public var hciStatus: HCIStatus? {
        switch backing {
        case .commandFailed(_, let x): x
        case .connectionFailed(let x): x
        default: nil
        }
    }

    /// Why the channel of ``l2capConnectionFailed(_:)`` did not open.
    public var l2capConnectionFailure: L2CAPConnectionFailure? {
        switch backing {
        case .l2capConnectionFailed(let x): x
        default: nil
        }
    }

    /// The L2CAP manager's code of ``l2cap(_:)``.
    public var l2capError: L2CAPErrorCode? {
        switch backing {
        case .l2cap(let x): x
        default: nil
        }
    }

    /// What the controller lacks, of ``unsupportedByController(_:)``.
    public var capability: ControllerCapability? {
        switch backing {
        case .unsupportedByController(let x): x
        default: nil
        }
    }

    /// What was sent and confirmed, of ``undeliveredData(_:)``.
    public var delivery: L2CAPDelivery? {
        switch backing {
        case .undeliveredData(let x): x
        default: nil
        }
    }

    /// The central's answer (or its silence), of ``connectionParameterUpdateRefused(_:)``.
    public var parameterUpdateOutcome: L2CAPConnectionParameterUpdateOutcome? {
        switch backing {
        case .connectionParameterUpdateRefused(let x): x
        default: nil
        }
    }
}

/// One advertising report as a scanner sees it.
///
/// A host makes one per advertisement heard — thousands a second in a busy place — and most are repeats a scanner
/// discards after comparing ``rawData``. So a report carries the bytes and decodes them only when asked: ``view`` reads
/// fields in place, ``data`` builds the owning model.
public struct AdvertisementReport: Sendable, Hashable {
    /// The advertiser.
    public var address: LEAddress
    /// Signal strength in dBm.
    public var rssi: Int8
    /// The PDU type.
    public var eventType: HCILEAdvertisingReportEventType
    /// The raw data bytes, as received.
    public var rawData: [UInt8]
    /// The identity address of a bonded device behind ``address``: set when ``address`` is a resolvable private
    /// address that the IRK of one of this host's bonds resolves (Core 5.4, Vol 3, Part C, 10.7 and Vol 6, Part B,
    /// 1.3.2.2); `nil` otherwise (an identity address, an address no bond resolves, a device that is not bonded).
    public var identity: LEAddress?
    /// The model given at creation or set, if any; otherwise ``data`` decodes ``rawData``.
    private var assigned: AdvertisingData?
    /// The primary advertising PHY the advertisement was received on (LE 1M for legacy PDUs and legacy scans).
    public var primaryPHY: LEPHY = .le1M
    /// The secondary advertising PHY of an extended advertisement's auxiliary PDUs; `nil` for legacy PDUs.
    public var secondaryPHY: LEPHY?
    /// The Advertising SID of an extended advertisement; `nil` when there is none (legacy PDUs).
    public var advertisingSID: UInt8?
    /// The TX power the advertiser put in its extended header, in dBm; `nil` when not given.
    public var txPower: Int8?
    /// Whether the advertisement came in legacy PDUs (`false`: extended PDUs, from an LE Extended Advertising Report
    /// without the legacy bit).
    public var isLegacy = true
    /// Whether the data is incomplete: the controller could not receive the whole chain of an extended advertisement
    /// (data status "truncated"), or it exceeded the most the host assembles. ``rawData`` holds what arrived.
    public var isTruncated = false
    /// Whether the advertiser answers scan requests (an active scan may get its scan response): ADV_IND, ADV_SCAN_IND
    /// and scan responses in legacy PDUs; the Scannable bit of an extended report's event type (Core 5.4, Vol 4,
    /// Part E, 7.7.65.13), which extended connectable advertising never sets.
    public var isScannable: Bool

    /// The advertising (or scan response) data as an owning model, decoded from ``rawData`` each time it is read
    /// (unless one was given or set); when the bytes are malformed, the structures before the fault
    /// (``AdvertisingData/init(validPrefixOf:)``).
    public var data: AdvertisingData {
        get { assigned ?? (try? AdvertisingData(bytes: rawData)) ?? AdvertisingData(validPrefixOf: rawData) }
        set { assigned = newValue }
    }

    /// The data read in place, without copying or allocating; `nil` when a structure runs past the end (``data``
    /// then holds what came before the fault).
    public var view: AdvertisingDataView? { try? AdvertisingDataView(rawData) }

    /// Creates a report of `rawData`, decoded when ``data`` or ``view`` is read (as a host makes them).
    public init(address: LEAddress, rssi: Int8, eventType: HCILEAdvertisingReportEventType, rawData: [UInt8],
                identity: LEAddress? = nil) {
        self.address = address
        self.rssi = rssi
        self.eventType = eventType
        self.rawData = rawData
        self.identity = identity
        isScannable = eventType == .advInd || eventType == .advScanInd || eventType == .scanResponse
    }

    /// Creates a report with a model given beside the bytes (for tests and replays).
    public init(address: LEAddress, rssi: Int8, eventType: HCILEAdvertisingReportEventType, data: AdvertisingData, rawData: [UInt8],
                identity: LEAddress? = nil) {
        self.init(address: address, rssi: rssi, eventType: eventType, rawData: rawData, identity: identity)
        assigned = data
    }

    /// Whether this report is a scan response.
    public var isScanResponse: Bool { eventType == .scanResponse }
    /// Whether a central may connect to the advertiser.
    public var isConnectable: Bool { eventType.isConnectable }

    /// Reports are equal when their fields are, ``data`` included (compared only when either was given a model: a
    /// decoded one follows ``rawData``).
    public static func == (lhs: AdvertisementReport, rhs: AdvertisementReport) -> Bool {
        guard lhs.address == rhs.address, lhs.rssi == rhs.rssi, lhs.eventType == rhs.eventType, lhs.rawData == rhs.rawData,
              lhs.identity == rhs.identity, lhs.primaryPHY == rhs.primaryPHY, lhs.secondaryPHY == rhs.secondaryPHY,
              lhs.advertisingSID == rhs.advertisingSID, lhs.txPower == rhs.txPower, lhs.isLegacy == rhs.isLegacy,
              lhs.isTruncated == rhs.isTruncated, lhs.isScannable == rhs.isScannable else { return false }
        return (lhs.assigned == nil && rhs.assigned == nil) || lhs.data == rhs.data
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(address)
        hasher.combine(rssi)
        hasher.combine(eventType)
        hasher.combine(rawData)
        hasher.combine(identity)
        hasher.combine(primaryPHY)
        hasher.combine(advertisingSID)
        hasher.combine(isLegacy)
    }
}

/// One link's identity, never reused by a host (unlike connection handles, which controllers give to the next link
/// at once). Events, waiters and streams that belong to a link key on it.
public struct LinkID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The sequence number within its host.
    public let rawValue: UInt64
    /// Creates an identity.
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public static func < (lhs: LinkID, rhs: LinkID) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { "link #\(rawValue)" }
}

/// An LE link as the host knows it.
public struct HostConnection: Sendable, Hashable {
    /// The link's identity (never reused).
    public var link: LinkID
    /// The connection handle (a controller may give it to another link once this one is down).
    public var handle: ConnectionHandle
    /// This side's role on the link.
    public var role: HCIRole
    /// The peer's address, as the controller reported it (a resolvable private address when the peer uses privacy;
    /// ``LinkSecurity/peerIdentity`` then tells who it is).
    public var peer: LEAddress
    /// This side's own address on the link: for the peripheral role the address it advertised with, for the central
    /// role the address it initiated with (LE Create Connection). With privacy on, a resolvable private address
    /// (Core 5.4, Vol 3, Part C, 10.7); otherwise the identity address (``HCIHost/ownAddress``). It is this side's
    /// initiator or responder address in pairing (Core 5.4, Vol 3, Part H, 2.2.3 and 2.2.7–2.2.8).
    public var localAddress: LEAddress
    /// Interval in 1.25 ms units.
    public var interval: UInt16
    /// Peripheral latency in connection events.
    public var latency: UInt16
    /// Supervision timeout in 10 ms units.
    public var supervisionTimeout: UInt16
    /// The PHY this side transmits on (LE 1M until a PHY Update procedure changes it).
    public var txPHY: LEPHY = .le1M
    /// The PHY this side receives on.
    public var rxPHY: LEPHY = .le1M
    /// The most payload octets per link-layer packet this side sends (27 until a Data Length Update raises it).
    public var maxTxOctets: UInt16 = 27
    /// The most payload octets per link-layer packet the peer sends.
    public var maxRxOctets: UInt16 = 27
}

/// Something that happened on the host, for its subscribers.
public enum HostEvent: Sendable, Hashable {
    /// State changed.
    case stateChanged(AdapterState)
    /// Connected.
    case connected(HostConnection)
    /// Disconnected: the link that went down, and why.
    case disconnected(HostConnection, reason: HCIStatus)
    /// A link's parameters changed: its interval, latency or supervision timeout (Connection Update), its PHYs (PHY
    /// Update) or its maximum data lengths (Data Length Update).
    case connectionUpdated(HostConnection)
    /// Encryption changed.
    case encryptionChanged(handle: ConnectionHandle, status: HCIStatus, enabled: Bool)
    /// A link's security changed: it got encrypted (by pairing, or with a bond's key), a bond was made or removed.
    case securityChanged(HostConnection, LinkSecurity)
    /// A link got encrypted (or its key refreshed): with a bond's stored key and no pairing (`usingBond`), or with
    /// the key a pairing on it produced.
    case encrypted(HostConnection, LinkSecurity, usingBond: Bool)
    /// A pairing on the link succeeded.
    case pairingCompleted(HostConnection, PairingOutcome)
    /// A pairing on the link failed.
    case pairingFailed(HostConnection, SMPPairingFailure)
    /// This side shows a passkey for the peer's user to type (also handed to the pairing agent).
    case passkeyDisplayed(HostConnection, UInt32)
    /// The Enhanced ATT bearers open on a link changed: `count` besides the unenhanced one, after a bearer opened
    /// (by either side) or closed. Core 5.4, Vol 3, Part G, 2.5.
    case enhancedATTBearers(HostConnection, count: Int)
}
