import BLEWire

/// One controller's link-layer and HCI state, grouped by concern: what the controller is, what the host set through
/// HCI, and the three link-layer activities (advertising, scanning, initiating), each a state of its own.
struct ControllerState {
    let id: Int
    let configuration: VirtualController.Configuration
    let sink: HostSink
    /// The public address.
    let address: BluetoothAddress
    var position: Position
    /// Transmit power in dBm (starts at the configuration's; settable while running).
    var txPower: Int8
    var removed = false

    /// What the host set through HCI, and the host interface's own counters.
    var hci: HCISettings
    /// Legacy advertising and the extended advertising sets.
    var advertising = AdvertisingState()
    /// The scan, legacy or extended, and what it reported.
    var scanning = ScanningState()
    /// The connection attempt under way.
    var initiating = InitiatingState()

    /// What the host set through HCI (event masks, the random address, data length and PHY preferences), the ACL
    /// packets it has in this controller's buffers, and the next connection handle.
    struct HCISettings {
        var eventMask = HCISetEventMask.defaultMask
        var eventMaskPage2: UInt64 = 0
        var leEventMask = HCILESetEventMask.defaultMask
        var randomAddress: BluetoothAddress?
        /// ACL packets from the host not yet reported by Number Of Completed Packets.
        var aclInFlight = 0
        var suggestedTxOctets: UInt16 = 27
        var suggestedTxTime: UInt16 = 328
        /// PHY preferences (LE Set Default PHY): every PHY until the host narrows them.
        var defaultTxPHYs: LEPHYs
        var defaultRxPHYs: LEPHYs
        var nextHandle: UInt16 = 0x0001
    }

    /// Advertising: the legacy commands' state and the extended advertising sets (Core 5.4, Vol 4, Part E,
    /// 7.8.52–7.8.66).
    struct AdvertisingState {
        var parameters = HCILESetAdvertisingParameters()
        var data: [UInt8] = []
        var scanResponseData: [UInt8] = []
        /// Legacy advertising is on.
        var isEnabled = false
        var generation: UInt64 = 0
        var started: UInt64 = 0
        /// Which kind of advertising commands the host used since the last reset: the controller refuses the other
        /// kind (Command Disallowed). Core 5.4, Vol 4, Part E, 3.1.1.
        var commandKind: AdvertisingCommandKind = .undecided
        /// The advertising sets the host created, by handle.
        var sets: [UInt8: AdvertisingSet] = [:]

        /// Whether any advertising is on: legacy, or an enabled advertising set.
        var isAny: Bool { isEnabled || sets.values.contains { $0.isEnabled } }
    }

    /// Scanning, legacy or extended, and the reports it made.
    struct ScanningState {
        var parameters = HCILESetScanParameters(scanType: .passive)
        var isEnabled = false
        var filterDuplicates = false
        var reported: Set<DuplicateKey> = []
        /// Advertising reports sent to the host since the controller was added.
        var reportCount = 0
        /// The extended scan's parameters, when the host scans with LE Set Extended Scan Enable (reports are then LE
        /// Extended Advertising Reports); `nil` for a legacy scan.
        var extended: HCILESetExtendedScanParameters?
        /// Whether the scan that is on was enabled with LE Set Extended Scan Enable.
        var isExtended = false
        /// Ties a scan's Duration timer to the scan that set it.
        var generation: UInt64 = 0

        /// The PHYs the scan listens on: LE 1M for a legacy scan, the extended scan's PHYs otherwise.
        var phys: LEPHYs { isExtended ? (extended?.phys ?? []) : .le1M }

        /// The scan type and duty cycle of the scan on `phy` (`nil`: not scanned).
        func dutyCycle(on phy: LEPHY) -> (active: Bool, interval: UInt16, window: UInt16)? {
            guard isExtended else {
                return phy == .le1M ? (parameters.scanType == .active, parameters.interval, parameters.window) : nil
            }
            let p = phy == .leCoded ? extended?.leCoded : phy == .le1M ? extended?.le1M : nil
            return p.map { ($0.scanType == .active, $0.interval, $0.window) }
        }
    }

    /// The connection attempt under way (LE Create Connection, or LE Extended Create Connection).
    struct InitiatingState {
        var connection: HCILECreateConnection?
        /// LE Extended Create Connection's request, when the attempt was made with it (``connection`` then holds
        /// its LE 1M parameters, or its LE Coded ones without LE 1M).
        var extendedConnection: HCILEExtendedCreateConnection?

        /// The PHYs the attempt scans for its peer (LE 1M for LE Create Connection).
        var phys: LEPHYs {
            guard connection != nil else { return [] }
            return extendedConnection.map { $0.phys.intersection([.le1M, .leCoded]) } ?? .le1M
        }
    }

    struct DuplicateKey: Hashable {
        var address: BluetoothAddress
        var addressType: UInt8
        var eventType: UInt16
        var sid: UInt8 = 0xFF
    }

    init(id: Int, configuration: VirtualController.Configuration, sink: HostSink) {
        self.id = id
        self.configuration = configuration
        self.sink = sink
        self.address = configuration.address ?? .zero
        self.position = configuration.position
        self.txPower = configuration.txPower
        self.hci = HCISettings(defaultTxPHYs: configuration.profile.phys, defaultRxPHYs: configuration.profile.phys)
    }

    /// The address an advertising set uses for `ownAddressType`: public, or the set's random address.
    func ownAddress(of set: AdvertisingSet) -> (BluetoothAddress, LEAddressType)? {
        if set.parameters.ownAddressType.isRandom {
            guard let randomAddress = set.randomAddress else { return nil }
            return (randomAddress, .random)
        }
        return (address, .public)
    }

    /// The address this controller uses for `ownAddressType` (public, or its random address).
    func ownAddress(_ type: LEAddressType) -> (BluetoothAddress, LEAddressType)? {
        if type.isRandom {
            guard let randomAddress = hci.randomAddress else { return nil }
            return (randomAddress, .random)
        }
        return (address, .public)
    }

    mutating func allocateHandle(in use: Set<ConnectionHandle>) -> ConnectionHandle {
        if configuration.reusesHandles {
            var handle: UInt16 = 0x0001
            while use.contains(ConnectionHandle(rawValue: handle)) && handle < 0x0EFF { handle += 1 }
            return ConnectionHandle(rawValue: handle)
        }
        while use.contains(ConnectionHandle(rawValue: hci.nextHandle)) || hci.nextHandle > 0x0EFF || hci.nextHandle == 0 {
            hci.nextHandle = hci.nextHandle >= 0x0EFF ? 1 : hci.nextHandle + 1
        }
        defer { hci.nextHandle = hci.nextHandle >= 0x0EFF ? 1 : hci.nextHandle + 1 }
        return ConnectionHandle(rawValue: hci.nextHandle)
    }
}
