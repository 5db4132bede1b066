import BLEWire

// The values the GAP procedures machine takes and gives: what a scan, advertising and a connection attempt ask for,
// the commands it sends, its timers, its failures and its actions.
extension GAPProcedures {
    /// What a scan asks of the controller.
    public struct ScanParameters: Hashable, Sendable {
        /// Active scanning sends scan requests (and gets scan responses).
        public var active: Bool
        /// Scan interval in 0.625 ms units.
        public var interval: UInt16
        /// Scan window in 0.625 ms units.
        public var window: UInt16
        /// Whether the controller filters duplicate reports.
        public var filterDuplicates: Bool
        /// The primary advertising PHYs scanned: LE 1M and/or LE Coded (LE Coded needs the extended commands).
        public var phys: LEPHYs
        /// The address the scan uses (scan requests carry it).
        public var ownAddress: OwnAddress

        /// Creates scan parameters.
        public init(active: Bool = true, interval: UInt16 = 0x0060, window: UInt16 = 0x0030, filterDuplicates: Bool = false,
                    phys: LEPHYs = .le1M, ownAddress: OwnAddress = .resolvableOrIdentity) {
            self.active = active
            self.interval = interval
            self.window = window
            self.filterDuplicates = filterDuplicates
            self.phys = phys
            self.ownAddress = ownAddress
        }
    }

    /// What legacy advertising sends.
    public struct AdvertisingParameters: Hashable, Sendable {
        /// Interval in 0.625 ms units.
        public var interval: UInt16
        /// The advertising PDU type.
        public var type: HCILEAdvertisingType
        /// The encoded advertising data (at most 31 octets).
        public var data: [UInt8]
        /// The encoded scan response data (at most 31 octets).
        public var scanResponse: [UInt8]
        /// Whether advertising starts again after each connection as peripheral (which ends legacy advertising) and
        /// each disconnection, so that several centrals can connect.
        public var restartAfterConnection: Bool
        /// Whether legacy PDUs are sent (`true`), or extended ones (ADV_EXT_IND and its auxiliary PDUs: up to the
        /// controller's maximum data, on LE 1M or LE Coded). Extended PDUs need the extended advertising commands.
        public var legacy: Bool
        /// The primary advertising PHY (extended PDUs only: LE 1M or LE Coded).
        public var primaryPHY: LEPHY
        /// The secondary advertising PHY, of the auxiliary PDUs (extended PDUs only).
        public var secondaryPHY: LEPHY
        /// The Advertising SID (0–15) of extended PDUs; `nil`: the set's handle.
        public var sid: UInt8?
        /// Whether extended PDUs carry the TX power.
        public var includeTxPower: Bool
        /// The device the advertising is directed at (`nil`: undirected): the Peer_Address of a legacy directed
        /// type, or of extended PDUs with the Directed property (which only that device hears).
        public var peer: LEAddress?
        /// The address advertised (AdvA). With the legacy commands there is one advertising, so one own address.
        public var ownAddress: OwnAddress

        /// Creates advertising parameters from encoded data.
        public init(interval: UInt16 = 0x00A0, type: HCILEAdvertisingType = .connectableUndirected, data: [UInt8],
                    scanResponse: [UInt8] = [], restartAfterConnection: Bool = false, legacy: Bool = true,
                    primaryPHY: LEPHY = .le1M, secondaryPHY: LEPHY = .le1M, sid: UInt8? = nil, includeTxPower: Bool = false,
                    peer: LEAddress? = nil, ownAddress: OwnAddress = .resolvableOrIdentity) {
            self.peer = peer
            self.ownAddress = ownAddress
            self.interval = interval
            self.type = type
            self.data = data
            self.scanResponse = scanResponse
            self.restartAfterConnection = restartAfterConnection
            self.legacy = legacy
            self.primaryPHY = primaryPHY
            self.secondaryPHY = secondaryPHY
            self.sid = sid
            self.includeTxPower = includeTxPower
        }

        /// Advertising_Event_Properties for LE Set Extended Advertising Parameters: the legacy PDU of ``type``, or, for
        /// extended PDUs, connectable (not scannable: Core 5.4, Vol 6, Part B, 2.3.4.1), scannable or neither.
        public var eventProperties: HCILEAdvertisingEventProperties {
            var properties: HCILEAdvertisingEventProperties
            if legacy {
                properties = switch type {
                case .connectableUndirected: .legacyConnectableScannable
                case .scannableUndirected: .legacyScannable
                case .connectableDirectedHighDuty: .legacyDirectedHighDuty
                case .connectableDirectedLowDuty: .legacyDirectedLowDuty
                default: .legacyNonConnectable
                }
            } else {
                properties = switch type {
                case .connectableUndirected: .connectable
                case .scannableUndirected: .scannable
                case .connectableDirectedHighDuty, .connectableDirectedLowDuty: [.connectable, .directed]
                default: []
                }
                if peer != nil { properties.insert(.directed) }
                if includeTxPower { properties.insert(.includeTxPower) }
            }
            return properties
        }
    }

    /// A connection attempt to one peer.
    public struct ConnectionParameters: Hashable, Sendable {
        /// The device to connect to.
        public var peer: LEAddress
        /// The acceptable connection intervals, in 1.25 ms units.
        public var interval: ClosedRange<UInt16>
        /// The supervision timeout, in 10 ms units.
        public var supervisionTimeout: UInt16
        /// How long the attempt may take before it is cancelled.
        public var timeout: Duration
        /// The PHYs scanned for the peer's advertising with the extended commands (LE 1M and/or LE Coded); LE Create
        /// Connection scans LE 1M only.
        public var phys: LEPHYs
        /// The address this side initiates with (the central's address on the link).
        public var ownAddress: OwnAddress

        /// Creates the parameters of a connection attempt.
        public init(peer: LEAddress, interval: ClosedRange<UInt16> = 0x0018...0x0028, supervisionTimeout: UInt16 = 0x01F4,
                    timeout: Duration = .seconds(10), phys: LEPHYs = .le1M, ownAddress: OwnAddress = .resolvableOrIdentity) {
            self.ownAddress = ownAddress
            self.peer = peer
            self.interval = interval
            self.supervisionTimeout = supervisionTimeout
            self.timeout = timeout
            self.phys = phys
        }
    }

    /// The HCI commands the procedures send.
    public enum Command: Hashable, Sendable {
        case setScanParameters(HCILESetScanParameters)
        case setScanEnable(HCILESetScanEnable)
        case setAdvertisingParameters(HCILESetAdvertisingParameters)
        case setAdvertisingData(HCILESetAdvertisingData)
        case setScanResponseData(HCILESetScanResponseData)
        case setAdvertisingEnable(HCILESetAdvertisingEnable)
        case setRandomAddress(HCILESetRandomAddress)
        case createConnection(HCILECreateConnection)
        case createConnectionCancel
        case setAdvertisingSetRandomAddress(HCILESetAdvertisingSetRandomAddress)
        case setExtendedAdvertisingParameters(HCILESetExtendedAdvertisingParameters)
        case setExtendedAdvertisingData(HCILESetExtendedAdvertisingData)
        case setExtendedScanResponseData(HCILESetExtendedScanResponseData)
        case setExtendedAdvertisingEnable(HCILESetExtendedAdvertisingEnable)
        case clearAdvertisingSets
        case setExtendedScanParameters(HCILESetExtendedScanParameters)
        case setExtendedScanEnable(HCILESetExtendedScanEnable)
        case extendedCreateConnection(HCILEExtendedCreateConnection)
    }

    /// The timers the procedures ask for.
    public enum Timer: Hashable, Sendable {
        /// The connection attempt's deadline.
        case connectionAttempt
        /// The private address is due for replacement.
        case addressRotation
    }

    /// Why a procedure failed.
    public enum Failure: Hashable, Sendable {
        /// A command the procedure needs was refused (or timed out, or the transport closed).
        case command(Command, HCICommandFlow.Outcome)
        /// Another connection attempt is under way (the controller initiates one at a time).
        case connectionInProgress
        /// The connection attempt ended with this status.
        case connectionFailed(HCIStatus)
        /// The connection attempt took longer than its timeout and was cancelled.
        case connectionTimedOut
        /// The caller abandoned the connection attempt.
        case cancelled
        /// Privacy is on but no private address could be made (no identity resolving key).
        case noPrivateAddress
        /// No random static address could be made (LE Rand failed, or gave no valid address).
        case noStaticAddress
        /// The controller was reset or the transport closed.
        case controllerLost
    }

    /// What the driver does for the machine.
    public enum Action: Hashable, Sendable {
        /// Send the command; report its outcome with ``commandFinished(_:now:)`` (the next one waits for it).
        case send(Command)
        /// Make a new resolvable private address; report it with ``privateAddressMade(_:now:)``.
        case makePrivateAddress
        /// Make a random static address (from the controller's LE Rand); report it with
        /// ``staticAddressMade(_:now:)``.
        case makeStaticAddress
        /// Start (or restart) a timer; report it with ``timerFired(_:now:)``.
        case startTimer(Timer, Duration)
        /// Stop a timer.
        case cancelTimer(Timer)
        /// A procedure ended, successfully (`nil`) or with a failure: its caller resumes.
        case finished(ProcedureID, Failure?)
        /// The connection attempt `id` succeeded: the link with `handle` is up.
        case connected(ProcedureID, ConnectionHandle)
        /// The scan `generation` is over (stopped, replaced, or the controller is gone): its reports end.
        case scanEnded(generation: Int)
    }
}
