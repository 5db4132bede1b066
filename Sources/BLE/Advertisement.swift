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

    /// The advertising data (at most 31 bytes encoded).
    public var data: AdvertisingData
    /// The scan response data (at most 31 bytes encoded; unused for ``Kind/nonConnectable``).
    public var scanResponse: AdvertisingData
    /// The advertising interval, 20 ms to 10.24 s (in steps of 0.625 ms; other values are rounded to the nearest step).
    public var interval: Duration
    /// The kind of advertising.
    public var kind: Kind

    /// Creates an advertisement.
    public init(data: AdvertisingData, scanResponse: AdvertisingData = AdvertisingData(), interval: Duration = .milliseconds(100),
                kind: Kind = .nonConnectable) {
        self.data = data
        self.scanResponse = scanResponse
        self.interval = interval
        self.kind = kind
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
        return options
    }
}
