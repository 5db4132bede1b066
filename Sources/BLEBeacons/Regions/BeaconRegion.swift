import BLEWire

/// A beacon region, as CoreLocation defines one: a proximity UUID, optionally a major, optionally a minor (a minor
/// only with a major). iBeacons match on their UUID, major and minor; AltBeacons on id1, id2 and id3.
public struct BeaconRegion: Sendable, Hashable, CustomStringConvertible {
    /// The application's name for the region.
    public var name: String
    /// The proximity UUID every matching beacon has.
    public var uuid: BluetoothUUID
    /// The major a matching beacon has (`nil`: any).
    public var major: UInt16?
    /// The minor a matching beacon has (`nil`: any; ignored without a major).
    public var minor: UInt16?

    /// Creates a region.
    public init(name: String, uuid: BluetoothUUID, major: UInt16? = nil, minor: UInt16? = nil) {
        self.name = name
        self.uuid = uuid
        self.major = major
        self.minor = major == nil ? nil : minor
    }

    /// Whether a beacon belongs to the region.
    public func matches(_ beacon: BeaconIdentifier) -> Bool {
        guard let (uuid, major, minor) = beacon.uuidMajorMinor, uuid == self.uuid else { return false }
        if let wanted = self.major, wanted != major { return false }
        if let wanted = self.minor, wanted != minor { return false }
        return true
    }

    /// `name (UUID[:major[:minor]])`.
    public var description: String {
        "\(name) (\(uuid.fullString)\(major.map { ":\($0)" } ?? "")\(minor.map { ":\($0)" } ?? ""))"
    }
}

/// An entry into or an exit from a region.
public struct RegionEvent: Sendable, Hashable, CustomStringConvertible {
    /// Entered or left.
    public enum Kind: String, Sendable, Hashable {
        /// A matching beacon was heard while outside.
        case enter
        /// No matching beacon was heard for the exit timeout.
        case exit
    }
    /// Entered or left.
    public var kind: Kind
    /// The region.
    public var region: BeaconRegion
    /// When it happened (for an exit: the moment the timeout ran out).
    public var time: Duration
    /// For an entry, the beacon that was heard.
    public var beacon: BeaconIdentifier?

    /// `enter Hall (UUID) at 12.3 s`.
    public var description: String { "\(kind) \(region) at \(time)" }
}
