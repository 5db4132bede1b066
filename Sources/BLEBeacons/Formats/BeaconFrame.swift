import BLEWire

/// One beacon frame of any supported format, decoded from (or encoded into) advertising data.
public enum BeaconFrame: Hashable, Sendable {
    /// An iBeacon (Apple manufacturer data, type 0x02).
    case iBeacon(IBeacon)
    /// An AltBeacon (manufacturer data with beacon code 0xBEAC).
    case altBeacon(AltBeacon)
    /// An Eddystone frame (service data of UUID 0xFEAA).
    case eddystone(EddystoneFrame)

    /// The Eddystone TX power at 0 m is about 41 dB above the RSSI at 1 m (the Eddystone specification's
    /// calibration advice: the loss over the first metre at 2.4 GHz).
    public static let eddystoneLossAt1m: Int = 41

    /// Finds the first beacon frame in advertising data.
    ///
    /// Returns `nil` when the data holds no beacon frame (Apple manufacturer data of another type, service data of
    /// another UUID...). Throws `WireError` when a structure claims to be a beacon but is malformed: an iBeacon
    /// length byte other than 0x15, a truncated or overlong frame, a reserved Eddystone-URL byte.
    public init?(advertisingData: AdvertisingData) throws(WireError) {
        for structure in advertisingData.structures {
            if let frame = try BeaconFrame(structure: structure) {
                self = frame
                return
            }
        }
        return nil
    }

    /// Decodes one AD structure as a beacon frame (`nil`: it is not one). Throws `WireError` as
    /// ``init(advertisingData:)`` does.
    public init?(structure: ADStructure) throws(WireError) {
        let data = structure.data
        switch structure.type {
        case .manufacturerSpecificData:
            guard data.count >= 3 else { return nil }
            if UInt16(data[0]) | UInt16(data[1]) << 8 == IBeacon.companyID.rawValue, data[2] == IBeacon.typeByte {
                self = .iBeacon(try IBeacon(bytes: data))
                return
            }
            if data.count >= 4, UInt16(data[2]) << 8 | UInt16(data[3]) == AltBeacon.beaconCode {
                self = .altBeacon(try AltBeacon(bytes: data))
                return
            }
            return nil
        case .serviceData16BitUUID:
            guard data.count >= 2, UInt16(data[0]) | UInt16(data[1]) << 8 == 0xFEAA else { return nil }
            self = .eddystone(try EddystoneFrame(bytes: data.dropFirst(2)))
        default:
            return nil
        }
    }

    /// The advertising data that carries the frame: Flags (LE General Discoverable, BR/EDR not supported), then
    /// the manufacturer data, or for Eddystone the 16-bit service UUID list with 0xFEAA and the service data.
    public var advertisingData: AdvertisingData {
        switch self {
        case .iBeacon(let f):
            AdvertisingData(flags: .leOnlyGeneralDiscoverable, manufacturerData: f.manufacturerData)
        case .altBeacon(let f):
            AdvertisingData(flags: .leOnlyGeneralDiscoverable, manufacturerData: f.manufacturerData)
        case .eddystone(let f):
            AdvertisingData(flags: .leOnlyGeneralDiscoverable, serviceUUIDs: [eddystoneServiceUUID],
                            serviceData: [(eddystoneServiceUUID, f.encoded)])
        }
    }

    /// The identity a ranging or monitoring session tracks (`nil` for telemetry and unknown frames).
    public var identifier: BeaconIdentifier? {
        switch self {
        case .iBeacon(let f): .iBeacon(uuid: f.proximityUUID, major: f.major, minor: f.minor)
        case .altBeacon(let f): .altBeacon(id1: f.id1, id2: f.id2, id3: f.id3)
        case .eddystone(.uid(let f)): .eddystoneUID(namespace: f.namespace, instance: f.instance)
        case .eddystone(.url(let f)): .eddystoneURL(f.url)
        case .eddystone(.eid(let f)): .eddystoneEID(f.ephemeralID)
        case .eddystone(.tlm), .eddystone(.encryptedTLM), .eddystone(.unknown): nil
        }
    }

    /// The expected RSSI at 1 m, in dBm: the iBeacon measured power, the AltBeacon reference RSSI, or the Eddystone
    /// TX power at 0 m less ``eddystoneLossAt1m``.
    public var measuredPowerAt1m: Int? {
        switch self {
        case .iBeacon(let f): Int(f.measuredPower)
        case .altBeacon(let f): Int(f.referenceRSSI)
        case .eddystone(let f): f.txPowerAt0m.map { Int($0) - Self.eddystoneLossAt1m }
        }
    }
}

/// What identifies one beacon across advertisements.
public enum BeaconIdentifier: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// An iBeacon: proximity UUID, major, minor.
    case iBeacon(uuid: BluetoothUUID, major: UInt16, minor: UInt16)
    /// An AltBeacon: the three parts of its beacon identifier.
    case altBeacon(id1: BluetoothUUID, id2: UInt16, id3: UInt16)
    /// An Eddystone-UID beacon: namespace (10 bytes) and instance (6 bytes).
    case eddystoneUID(namespace: [UInt8], instance: [UInt8])
    /// An Eddystone-URL beacon, by its URL.
    case eddystoneURL(String)
    /// An Eddystone-EID beacon, by its current ephemeral identifier.
    case eddystoneEID([UInt8])

    /// The UUID, major and minor of an iBeacon or AltBeacon (AltBeacon's id1, id2, id3), which regions match.
    public var uuidMajorMinor: (uuid: BluetoothUUID, major: UInt16, minor: UInt16)? {
        switch self {
        case .iBeacon(let uuid, let major, let minor), .altBeacon(let uuid, let major, let minor): (uuid, major, minor)
        default: nil
        }
    }

    /// `ibeacon:UUID:MAJOR:MINOR`, `altbeacon:ID1:ID2:ID3`, `eddystone-uid:NAMESPACE:INSTANCE` (hex),
    /// `eddystone-url:URL`, `eddystone-eid:HEX`.
    public var description: String {
        switch self {
        case .iBeacon(let uuid, let major, let minor): "ibeacon:\(uuid.fullString):\(major):\(minor)"
        case .altBeacon(let id1, let id2, let id3): "altbeacon:\(id1.fullString):\(id2):\(id3)"
        case .eddystoneUID(let namespace, let instance): "eddystone-uid:\(namespace.hexString()):\(instance.hexString())"
        case .eddystoneURL(let url): "eddystone-url:\(url)"
        case .eddystoneEID(let eid): "eddystone-eid:\(eid.hexString())"
        }
    }

    /// Orders identifiers by their description (a stable order for ties).
    public static func < (lhs: BeaconIdentifier, rhs: BeaconIdentifier) -> Bool { lhs.description < rhs.description }
}
