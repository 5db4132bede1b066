import BLEProtocols
import BLEWire

// The file format of ``FileBondStore``, version 2 (shown in its documentation). Version 1 files are read as they
// are: version 2 only added fields a version 1 file does not have (`paired_through`, `gatt_client`); the next write
// makes the file version 2.
//
// Records are synthesized `Codable` whose coding keys only rename; each value of the file with a rule of its own is a
// small single-value type (``BondFileField``) that checks the rule when it is read, so that an error names the place
// in the file. The rules themselves are in ``BondFileRules``, which the store also checks before saving a bond.

/// The rules of the bond file beyond JSON types, in one place: reading a file checks them (through the fields below),
/// and ``FileBondStore`` checks a bond against them before saving it, so that whatever is written can be read back.
///
/// No rule describes a key by its value: keys are secrets, and errors end up in logs.
enum BondFileRules {
    /// The version of the format this code writes.
    static let version = 2
    /// The versions of the format this code reads: version 1 lacks `paired_through` and `gatt_client`.
    static let readableVersions = 1...2
    /// The octets of a key: an LTK, an IRK or a CSRK.
    static let keyOctets = 16
    /// The key sizes a pairing can reach.
    static let keySizes = 7...16

    static func checkVersion(_ version: Int) throws(BondFileProblem) {
        guard readableVersions.contains(version) else {
            throw BondFileProblem("version \(version) is not known (versions \(readableVersions.lowerBound)...\(readableVersions.upperBound) are)")
        }
    }

    static func checkKeySize(_ keySize: Int) throws(BondFileProblem) {
        guard keySizes.contains(keySize) else {
            throw BondFileProblem("the key size \(keySize) is not \(keySizes.lowerBound)...\(keySizes.upperBound)")
        }
    }

    static func checkCreated(_ created: Double) throws(BondFileProblem) {
        guard created.isFinite else { throw BondFileProblem("the creation time is not a finite number") }
    }

    /// Checks the length of a key, `name` (such as "the peer's IRK").
    static func checkKey(_ key: [UInt8], name: String) throws(BondFileProblem) {
        guard key.count == keyOctets else {
            throw BondFileProblem("\(name) has \(key.count) octets, not \(keyOctets)")
        }
    }

    /// What in `bond` breaks the rules; empty when nothing does.
    static func problems(_ bond: Bond) -> [BondFileProblem] {
        var problems: [BondFileProblem] = []
        let keys = [("the peer key's LTK", bond.peerKey?.longTermKey), ("the local key's LTK", bond.localKey?.longTermKey),
                    ("the peer's IRK", bond.peerIdentityResolvingKey), ("the peer's CSRK", bond.peerSignatureKey)]
        for case let (name, key?) in keys {
            do throws(BondFileProblem) { try checkKey(key, name: name) } catch { problems.append(error) }
        }
        if let hash = bond.gattClient?.databaseHash {
            do throws(BondFileProblem) { try checkKey(hash, name: "the client's Database Hash") } catch { problems.append(error) }
        }
        do throws(BondFileProblem) { try checkKeySize(bond.security.keySize) } catch { problems.append(error) }
        do throws(BondFileProblem) { try checkCreated(bond.created) } catch { problems.append(error) }
        return problems
    }
}

/// What is wrong with a value of the bond file, said without repeating a key.
struct BondFileProblem: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

// MARK: - Records

/// The whole file: `{"version": 2, "identities": [...], "bonds": [...]}`; a missing list is an empty one.
struct StoredFile: Codable {
    var version = StoredVersion(value: BondFileRules.version)
    var identities: [StoredIdentity]?
    var bonds: [StoredBond]?

    init(_ contents: FileBondStore.Contents) {
        identities = contents.identities.map(StoredIdentity.init)
        bonds = contents.bonds.map(StoredBond.init)
    }

    var contents: FileBondStore.Contents {
        FileBondStore.Contents(identities: (identities ?? []).map(\.identity), bonds: (bonds ?? []).map(\.bond))
    }
}

/// This side's IRK for one local identity: `{"address": "C0:11:22:33:44:55", "type": "random", "irk": "..."}`.
struct StoredIdentity: Codable {
    var address: StoredAddressText
    var type: StoredAddressType
    var irk: StoredKeyOctets

    init(_ identity: FileBondStore.Identity) {
        address = StoredAddressText(value: identity.local.address)
        type = StoredAddressType(value: identity.local.type)
        irk = StoredKeyOctets(value: identity.key)
    }

    var identity: FileBondStore.Identity {
        FileBondStore.Identity(local: LEAddress(address.value, type: type.value), key: irk.value)
    }
}

/// An address with its type: `{"address": "00:1A:7D:DA:71:13", "type": "public"}`.
struct StoredAddress: Codable {
    var address: StoredAddressText
    var type: StoredAddressType

    init(_ value: LEAddress) {
        address = StoredAddressText(value: value.address)
        type = StoredAddressType(value: value.type)
    }

    var value: LEAddress { LEAddress(address.value, type: type.value) }
}

/// A long-term key with its EDIV and Rand: `{"ltk": "...", "ediv": 0, "rand": "0000000000000000"}`.
struct StoredKey: Codable {
    var ltk: StoredKeyOctets
    var ediv: StoredEDIV
    var rand: StoredRand

    init(_ value: BondKey) {
        ltk = StoredKeyOctets(value: value.longTermKey)
        ediv = StoredEDIV(value: value.ediv)
        rand = StoredRand(value: value.rand)
    }

    var value: BondKey { BondKey(longTermKey: ltk.value, ediv: ediv.value, rand: rand.value) }
}

/// One bond.
struct StoredBond: Codable {
    var local: StoredAddress
    var peer: StoredAddress
    /// Since version 2; absent in version 1 files and for bonds made before.
    var pairedThrough: StoredAddress?
    var peerKey: StoredKey?
    var localKey: StoredKey?
    var peerIRK: StoredKeyOctets?
    var peerCSRK: StoredKeyOctets?
    var secureConnections: Bool
    var authenticated: Bool
    var keySize: StoredKeySize
    var created: StoredCreated
    /// Since version 2; absent until the GATT server keeps something for the client.
    var gattClient: StoredGATTClient?

    private enum CodingKeys: String, CodingKey {
        case local, peer
        case pairedThrough = "paired_through"
        case gattClient = "gatt_client"
        case peerKey = "peer_key"
        case localKey = "local_key"
        case peerIRK = "peer_irk"
        case peerCSRK = "peer_csrk"
        case secureConnections = "secure_connections"
        case authenticated
        case keySize = "key_size"
        case created
    }

    init(_ bond: Bond) {
        local = StoredAddress(bond.local)
        peer = StoredAddress(bond.peer)
        pairedThrough = bond.pairedThrough.map { StoredAddress($0) }
        gattClient = bond.gattClient.map { StoredGATTClient($0) }
        peerKey = bond.peerKey.map { StoredKey($0) }
        localKey = bond.localKey.map { StoredKey($0) }
        peerIRK = bond.peerIdentityResolvingKey.map { StoredKeyOctets(value: $0) }
        peerCSRK = bond.peerSignatureKey.map { StoredKeyOctets(value: $0) }
        secureConnections = bond.security.secureConnections
        authenticated = bond.security.authenticated
        keySize = StoredKeySize(value: bond.security.keySize)
        created = StoredCreated(value: bond.created)
    }

    var bond: Bond {
        // An all-zero IRK (a file written before it was recognised as no IRK) is dropped by Bond.
        Bond(local: local.value, peer: peer.value, pairedThrough: pairedThrough?.value, peerKey: peerKey?.value,
             localKey: localKey?.value, peerIdentityResolvingKey: peerIRK?.value, peerSignatureKey: peerCSRK?.value,
             security: SMPSecurityLevel(secureConnections: secureConnections, authenticated: authenticated,
                                        keySize: keySize.value),
             created: created.value, gattClient: gattClient?.value)
    }
}

/// What the GATT server keeps for a bonded client:
/// `{"service_changed_cccd": 2, "client_supported_features": 1, "database_hash": "<32 hex digits>"}`;
/// `database_hash` is absent when unknown.
struct StoredGATTClient: Codable {
    var serviceChangedCCCD: StoredCCCD
    var clientSupportedFeatures: StoredFeatures
    var databaseHash: StoredKeyOctets?

    private enum CodingKeys: String, CodingKey {
        case serviceChangedCCCD = "service_changed_cccd"
        case clientSupportedFeatures = "client_supported_features"
        case databaseHash = "database_hash"
    }

    init(_ value: BondedGATTClient) {
        serviceChangedCCCD = StoredCCCD(value: value.serviceChangedConfiguration)
        clientSupportedFeatures = StoredFeatures(value: value.clientSupportedFeatures)
        databaseHash = value.databaseHash.map { StoredKeyOctets(value: $0) }
    }

    var value: BondedGATTClient {
        BondedGATTClient(serviceChangedConfiguration: serviceChangedCCCD.value,
                         clientSupportedFeatures: clientSupportedFeatures.value, databaseHash: databaseHash?.value)
    }
}

// MARK: - Fields

/// A value of the file that is one JSON value, `Raw`, checked when read: one that breaks a rule is a decoding error
/// at its place in the file.
protocol BondFileField: Codable {
    associatedtype Raw: Codable
    /// The value as the file has it.
    var raw: Raw { get }
    /// The field from the value as the file has it, or what is wrong with it.
    init(raw: Raw) throws(BondFileProblem)
}

extension BondFileField {
    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let raw = try container.decode(Raw.self)
        do throws(BondFileProblem) {
            try self.init(raw: raw)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.description)
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(raw)
    }
}

/// The format's version: one of `BondFileRules.readableVersions` (2 is written; 1 is read and upgraded).
struct StoredVersion: BondFileField {
    var value: Int
    var raw: Int { value }
    init(value: Int) { self.value = value }
    init(raw: Int) throws(BondFileProblem) {
        try BondFileRules.checkVersion(raw)
        value = raw
    }
}

/// A key size, 7...16.
struct StoredKeySize: BondFileField {
    var value: Int
    var raw: Int { value }
    init(value: Int) { self.value = value }
    init(raw: Int) throws(BondFileProblem) {
        try BondFileRules.checkKeySize(raw)
        value = raw
    }
}

/// When a bond was made, in seconds since 1970: a finite number.
struct StoredCreated: BondFileField {
    var value: Double
    var raw: Double { value }
    init(value: Double) { self.value = value }
    init(raw: Double) throws(BondFileProblem) {
        try BondFileRules.checkCreated(raw)
        value = raw
    }
}

/// A 16-octet key (LTK, IRK or CSRK), most significant first, as exactly 32 hex digits (written lowercase).
struct StoredKeyOctets: BondFileField {
    var value: [UInt8]
    var raw: String { value.hexString() }
    init(value: [UInt8]) { self.value = value }
    init(raw: String) throws(BondFileProblem) {
        value = try hexOctets(raw, count: BondFileRules.keyOctets, name: "a key")
    }
}

/// What a whole-number field of the bond file holds and how an error names it.
protocol StoredNumberKind {
    associatedtype Value: FixedWidthInteger & Codable
    /// The field's name in an error ("EDIV 70000 is not 0...65535").
    static var label: String { get }
}

/// A whole number of the bond file within its kind's range, read as any integer so that one out of range is named
/// as such rather than failing as a type mismatch.
struct StoredNumber<Kind: StoredNumberKind>: BondFileField {
    var value: Kind.Value
    var raw: Int { Int(value) }
    init(value: Kind.Value) { self.value = value }
    init(raw: Int) throws(BondFileProblem) {
        guard let value = Kind.Value(exactly: raw) else {
            throw BondFileProblem("\(Kind.label) \(raw) is not \(Kind.Value.min)...\(Kind.Value.max)")
        }
        self.value = value
    }
}

/// The EDIV of a long-term key: 0...65535.
enum EDIVNumber: StoredNumberKind {
    typealias Value = UInt16
    static var label: String { "EDIV" }
}
typealias StoredEDIV = StoredNumber<EDIVNumber>

/// A Client Characteristic Configuration value: 0...65535.
enum CCCDNumber: StoredNumberKind {
    typealias Value = UInt16
    static var label: String { "CCCD" }
}
typealias StoredCCCD = StoredNumber<CCCDNumber>

/// A Client Supported Features value: 0...255.
enum FeaturesNumber: StoredNumberKind {
    typealias Value = UInt8
    static var label: String { "Client Supported Features" }
}
typealias StoredFeatures = StoredNumber<FeaturesNumber>

/// The Rand of a long-term key as exactly 16 hex digits, most significant first (a JSON number would lose precision).
struct StoredRand: BondFileField {
    var value: UInt64
    var raw: String { (0..<8).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }.hexString() }
    init(value: UInt64) { self.value = value }
    init(raw: String) throws(BondFileProblem) {
        value = try hexOctets(raw, count: 8, name: "Rand").reduce(0) { $0 << 8 | UInt64($1) }
    }
}

/// A 48-bit address as `"C0:11:22:33:44:55"` (either case when read).
struct StoredAddressText: BondFileField {
    var value: BluetoothAddress
    var raw: String { value.description }
    init(value: BluetoothAddress) { self.value = value }
    init(raw: String) throws(BondFileProblem) {
        guard let value = BluetoothAddress(raw) else {
            throw BondFileProblem("\"\(raw.prefix(40))\" is not an address such as \"C0:11:22:33:44:55\"")
        }
        self.value = value
    }
}

/// An address type: `"public"`, `"random"`, or the HCI address type as a number (written for the other types).
struct StoredAddressType: Codable {
    var value: LEAddressType

    init(value: LEAddressType) { self.value = value }

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let name = try? container.decode(String.self) {
            switch name {
            case "public": value = .public
            case "random": value = .random
            default:
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "\"\(name.prefix(40))\" is not \"public\", \"random\" or a number")
            }
        } else {
            let number = try container.decode(Int.self)
            guard let raw = UInt8(exactly: number) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "address type \(number) is not 0...255")
            }
            value = LEAddressType(rawValue: raw)
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch value {
        case .public: try container.encode("public")
        case .random: try container.encode("random")
        default: try container.encode(value.rawValue)
        }
    }
}

/// `text` as `count` octets when it is exactly `2 × count` hex digits (BLEWire's strict form); otherwise what is
/// wrong, without repeating the text: the number of digits, or that it is not hex.
private func hexOctets(_ text: String, count: Int, name: String) throws(BondFileProblem) -> [UInt8] {
    if let octets = [UInt8](hex: text, strict: true), octets.count == count { return octets }
    // Odd lengths parse with one more digit when every character is a hex digit.
    let isHex = [UInt8](hex: text.utf8.count % 2 == 0 ? text : "0" + text, strict: true) != nil
    throw BondFileProblem("\(name) is \(2 * count) hex digits (\(isHex ? "\(text.utf8.count) digits found" : "not hex"))")
}
