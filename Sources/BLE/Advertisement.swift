import BLEHost
import BLEProtocols
import BLEWire

/// What a peripheral advertises and how: arbitrary advertising data, an interval and the kind of advertising
/// (connectable, scannable, or neither, as beacons advertise).
public struct Advertisement: Sendable, Hashable {
    /// Whether centrals may connect and scanners may ask for the scan response.
    public enum Kind: Sendable, Hashable {
        /// Connectable and scannable (ADV_IND), the default of ``PeripheralManager/startAdvertising(name:serviceUUIDs:manufacturerData:txPowerLevel:restartAfterConnection:)``.
        case connectable
        /// Scannable but not connectable (ADV_SCAN_IND): scanners may get the scan response.
        case scannable
        /// Neither connectable nor scannable (ADV_NONCONN_IND): a broadcaster such as a beacon. The scan response
        /// is never sent.
        case nonConnectable
    }

    /// The advertising data (at most 31 bytes encoded with legacy PDUs; with ``isExtended``, up to the controller's
    /// maximum, 1650 bytes at most, when not connectable, and 245 bytes when connectable: connectable extended
    /// advertising sends its data in a single auxiliary packet).
    public var data: AdvertisingData
    /// The scan response data (at most 31 bytes encoded with legacy PDUs; unused for ``Kind/nonConnectable``).
    public var scanResponse: AdvertisingData
    /// The advertising interval, 20 ms to 10.24 s (in steps of 0.625 ms; other values are rounded to the nearest step).
    public var interval: Duration
    /// The kind of advertising.
    public var kind: Kind
    /// Whether to advertise with extended PDUs (Bluetooth 5: ADV_EXT_IND pointing to auxiliary packets) rather than
    /// legacy ones: larger data, LE Coded, several advertisements at once. Only scanners using extended scanning see
    /// them. Extended connectable advertising cannot be scanned, and extended scannable advertising has no
    /// advertising data (Core 5.4, Vol 6, Part B, 2.3.4): ``scanResponse``'s structures follow ``data``'s in the
    /// advertising data of a connectable or non-connectable advertisement, and ``data``'s precede ``scanResponse``'s
    /// in the scan response of a scannable one. Needs a controller with the extended advertising commands
    /// (``HostErrorCode/unsupportedByController(_:)`` otherwise).
    public var isExtended: Bool
    /// The primary advertising PHY of extended PDUs: LE 1M, or LE Coded for long range (scanners see it only when
    /// they scan LE Coded). Legacy PDUs always use LE 1M.
    public var primaryPHY: LEPHY
    /// The secondary PHY of extended PDUs; `nil`: LE Coded with an LE Coded primary PHY, LE 1M otherwise.
    public var secondaryPHY: LEPHY?
    /// The Advertising SID (0–15) of extended PDUs; `nil`: the advertisement's position among those started together.
    public var advertisingSID: UInt8?
    /// Whether extended PDUs carry the advertiser's TX power (scanners report it).
    public var includesTxPower: Bool
    /// The device this advertisement is directed at (`nil`: undirected, the default); only that device hears it.
    /// With legacy PDUs it must be ``Kind/connectable``: it is then ADV_DIRECT_IND (low duty cycle), which carries
    /// neither advertising data nor a scan response, for a known central to connect. With ``isExtended``, any kind
    /// may be directed (the Directed property: the target's address in each PDU's header) and keeps its data.
    /// Core 5.4, Vol 6, Part B, 2.3.1.2 and 2.3.4.
    public var target: LEAddress?
    /// The address advertised (AdvA), and the one a central connecting to it sees: by default
    /// (``OwnAddress/resolvableOrIdentity``) the resolvable private address with privacy on, the identity address
    /// otherwise; ``OwnAddress/identity`` the identity address; ``OwnAddress/random`` a random one (the private address
    /// with privacy on, otherwise a random static address: the identity when it is random static, else one the adapter
    /// makes once per power-on). Advertisements started together with legacy PDUs share one own address.
    public var ownAddress: OwnAddress = .resolvableOrIdentity

    /// Creates an advertisement.
    public init(data: AdvertisingData, scanResponse: AdvertisingData = AdvertisingData(), interval: Duration = .milliseconds(100),
                kind: Kind = .nonConnectable, isExtended: Bool = false, primaryPHY: LEPHY = .le1M, secondaryPHY: LEPHY? = nil,
                advertisingSID: UInt8? = nil, includesTxPower: Bool = false) {
        self.data = data
        self.scanResponse = scanResponse
        self.interval = interval
        self.kind = kind
        self.isExtended = isExtended
        self.primaryPHY = primaryPHY
        self.secondaryPHY = secondaryPHY
        self.advertisingSID = advertisingSID
        self.includesTxPower = includesTxPower
    }

    /// The interval in the controller's 0.625 ms units, or `nil` when it is outside 20 ms...10.24 s
    /// (Core 5.4, Vol 4, Part E, 7.8.5: 0x0020...0x4000).
    public var intervalUnits: UInt16? {
        let (seconds, attoseconds) = interval.components
        let microseconds = Double(seconds) * 1e6 + Double(attoseconds) / 1e12
        let units = (microseconds / 625).rounded()
        guard units >= 0x0020, units <= 0x4000 else { return nil }
        return UInt16(units)
    }

    /// The host's advertising options for this advertisement.
    func options() throws -> HCIHost.AdvertisingOptions {
        guard let units = intervalUnits else {
            throw HostError(.commandFailed(HCILESetAdvertisingParameters.opcode, .invalidCommandParameters),
                            "advertising interval \(interval) is outside 20 ms...10.24 s")
        }
        var options = HCIHost.AdvertisingOptions(data: data, scanResponse: kind == .nonConnectable ? AdvertisingData() : scanResponse)
        options.interval = units
        options.type = switch kind {
        case .connectable: .connectableUndirected
        case .scannable: .scannableUndirected
        case .nonConnectable: .nonConnectableUndirected
        }
        options.extended = isExtended || primaryPHY != .le1M
        options.primaryPHY = primaryPHY
        options.secondaryPHY = secondaryPHY
        options.sid = advertisingSID
        options.includeTxPower = includesTxPower
        options.ownAddress = ownAddress
        if let target {
            options.peer = target
            if !options.extended {
                guard kind == .connectable else {
                    throw HostError(.commandFailed(HCILESetAdvertisingParameters.opcode, .invalidCommandParameters),
                                    "legacy directed advertising is connectable (ADV_DIRECT_IND): use kind .connectable or extended PDUs")
                }
                // ADV_DIRECT_IND carries no data.
                options.type = .connectableDirectedLowDuty
                options.data = AdvertisingData()
                options.scanResponse = AdvertisingData()
            }
        }
        return options
    }
}
