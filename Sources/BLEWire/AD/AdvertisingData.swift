/// Advertising or scan response data: an ordered list of AD structures. Core 5.4, Vol 3, Part C, 11 and the
/// Core Specification Supplement v11, Part A.
///
/// Decoding keeps every structure as it was received (unknown types included); typed accessors interpret them and
/// throw ``WireError`` when a structure's payload is malformed (a 16-bit UUID list of odd length, a TX power of two
/// bytes...). A zero length octet ends the significant part (the rest is padding), as the specification says.
public struct AdvertisingData: Hashable, Sendable, WireCodable {
    /// The legacy advertising payload limit.
    public static let legacyMaximumLength = 31

    /// The structures, in order.
    public var structures: [ADStructure]

    /// Creates data from structures.
    public init(structures: [ADStructure] = []) { self.structures = structures }

    /// Builds advertising data the way a peripheral usually advertises: flags, then service UUIDs (each in the list
    /// of its width), TX power, appearance, manufacturer data, service data and the name last.
    public init(flags: ADFlags? = nil, localName: String? = nil, serviceUUIDs: [BluetoothUUID] = [],
                txPowerLevel: Int8? = nil, appearance: UInt16? = nil, manufacturerData: ManufacturerData? = nil,
                serviceData: [(BluetoothUUID, [UInt8])] = []) {
        var s: [ADStructure] = []
        if let flags { s.append(ADStructure(type: .flags, data: [flags.rawValue])) }
        let short = serviceUUIDs.compactMap(\.uint16)
        if !short.isEmpty { s.append(ADStructure(type: .complete16BitServiceUUIDs, data: short.flatMap { [UInt8(truncatingIfNeeded: $0), UInt8($0 >> 8)] })) }
        let medium = serviceUUIDs.filter { $0.uint16 == nil && $0.uint32 != nil }.compactMap(\.uint32)
        if !medium.isEmpty {
            s.append(ADStructure(type: .complete32BitServiceUUIDs, data: medium.flatMap { v in (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * UInt32($0))) } }))
        }
        let long = serviceUUIDs.filter { $0.uint32 == nil }
        if !long.isEmpty { s.append(ADStructure(type: .complete128BitServiceUUIDs, data: long.flatMap(\.wireBytes128))) }
        if let txPowerLevel { s.append(ADStructure(type: .txPowerLevel, data: [UInt8(bitPattern: txPowerLevel)])) }
        if let appearance { s.append(ADStructure(type: .appearance, data: [UInt8(truncatingIfNeeded: appearance), UInt8(appearance >> 8)])) }
        if let m = manufacturerData {
            s.append(ADStructure(type: .manufacturerSpecificData,
                                 data: [UInt8(truncatingIfNeeded: m.companyID.rawValue), UInt8(m.companyID.rawValue >> 8)] + m.data))
        }
        for (uuid, data) in serviceData {
            if let v = uuid.uint16 {
                s.append(ADStructure(type: .serviceData16BitUUID, data: [UInt8(truncatingIfNeeded: v), UInt8(v >> 8)] + data))
            } else if let v = uuid.uint32 {
                s.append(ADStructure(type: .serviceData32BitUUID, data: (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * UInt32($0))) } + data))
            } else {
                s.append(ADStructure(type: .serviceData128BitUUID, data: uuid.wireBytes128 + data))
            }
        }
        if let localName { s.append(ADStructure(type: .completeLocalName, data: Array(localName.utf8))) }
        structures = s
    }

    public init(from reader: inout ByteReader) throws(WireError) {
        var list: [ADStructure] = []
        while let length = reader.peekUInt8() {
            if length == 0 {
                // A zero length octet ends the significant part; what follows is padding.
                _ = reader.readRemaining()
                break
            }
            list.append(try ADStructure(from: &reader))
        }
        structures = list
    }

    /// The structures of `bytes` before the first malformed one (one running past the end, or too short for its
    /// type octet), and none after it: what a scanner can still show of a device whose advertising data is partly
    /// broken. A zero length octet ends the data, as in ``init(from:)``. Never fails.
    public init(validPrefixOf bytes: [UInt8]) {
        var reader = ByteReader(bytes)
        var list: [ADStructure] = []
        while let length = reader.peekUInt8(), length != 0, let structure = try? ADStructure(from: &reader) {
            list.append(structure)
        }
        structures = list
    }

    public func encode(into writer: inout ByteWriter) {
        for s in structures { s.encode(into: &writer) }
    }

    /// The encoding, checked against the 31-byte legacy limit.
    public func encodedLegacy() throws(WireError) -> [UInt8] {
        let bytes = encoded
        guard bytes.count <= Self.legacyMaximumLength else {
            throw WireError(.oversized, "advertising data is \(bytes.count) bytes; legacy advertising carries at most 31")
        }
        return bytes
    }

    /// The payloads of every structure of `type`.
    public func values(of type: ADType) -> [[UInt8]] { structures.filter { $0.type == type }.map(\.data) }

    private func single(_ type: ADType, length: Int, _ name: String) throws(WireError) -> [UInt8]? {
        guard let data = values(of: type).first else { return nil }
        guard data.count == length else { throw WireError(.lengthMismatch, "\(name) of \(data.count) byte(s); expected \(length)") }
        return data
    }

    // MARK: Typed accessors

    /// The Flags structure.
    public func flags() throws(WireError) -> ADFlags? {
        try single(.flags, length: 1, "Flags").map { ADFlags(rawValue: $0[0]) }
    }

    /// The local name: the complete one if present, else the shortened one. Invalid UTF-8 is repaired.
    public var localName: String? {
        (values(of: .completeLocalName).first ?? values(of: .shortenedLocalName).first).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Whether ``localName`` is the complete name.
    public var isLocalNameComplete: Bool { !values(of: .completeLocalName).isEmpty }

    /// The TX power level in dBm.
    public func txPowerLevel() throws(WireError) -> Int8? {
        try single(.txPowerLevel, length: 1, "TX Power Level").map { Int8(bitPattern: $0[0]) }
    }

    /// The appearance value.
    public func appearance() throws(WireError) -> UInt16? {
        try single(.appearance, length: 2, "Appearance").map { UInt16($0[0]) | UInt16($0[1]) << 8 }
    }

    /// The advertising interval in 0.625 ms units.
    public func advertisingInterval() throws(WireError) -> UInt16? {
        try single(.advertisingInterval, length: 2, "Advertising Interval").map { UInt16($0[0]) | UInt16($0[1]) << 8 }
    }

    /// The LE Role.
    public func leRole() throws(WireError) -> UInt8? { try single(.leRole, length: 1, "LE Role").map { $0[0] } }

    private func uuids(in types: [ADType]) throws(WireError) -> [BluetoothUUID] {
        var out: [BluetoothUUID] = []
        for s in structures where types.contains(s.type) {
            guard let width = s.type.uuidWidth else { continue }
            guard s.data.count % width == 0 else {
                throw WireError(.lengthMismatch, "\(s.type) list of \(s.data.count) byte(s) is not a multiple of \(width)")
            }
            var i = 0
            while i < s.data.count {
                out.append(try BluetoothUUID(littleEndian: Array(s.data[i..<(i + width)])))
                i += width
            }
        }
        return out
    }

    /// Every advertised service UUID (16-, 32- and 128-bit lists, complete or not), in order.
    public func serviceUUIDs() throws(WireError) -> [BluetoothUUID] {
        try uniqued(uuids(in: [.incomplete16BitServiceUUIDs, .complete16BitServiceUUIDs, .incomplete32BitServiceUUIDs,
                       .complete32BitServiceUUIDs, .incomplete128BitServiceUUIDs, .complete128BitServiceUUIDs]))
    }

    /// `list` without repeats, in first-seen order (a UUID listed in both the advertising data and the scan response
    /// is one service).
    private func uniqued(_ list: [BluetoothUUID]) -> [BluetoothUUID] {
        var seen = Set<BluetoothUUID>()
        return list.filter { seen.insert($0).inserted }
    }

    /// Every solicited service UUID.
    public func solicitedServiceUUIDs() throws(WireError) -> [BluetoothUUID] {
        try uuids(in: [.solicitation16BitUUIDs, .solicitation32BitUUIDs, .solicitation128BitUUIDs])
    }

    /// Every manufacturer specific data structure.
    public func manufacturerData() throws(WireError) -> [ManufacturerData] {
        var out: [ManufacturerData] = []
        for data in values(of: .manufacturerSpecificData) {
            guard data.count >= 2 else { throw WireError(.truncated, "Manufacturer Specific Data of \(data.count) byte(s) has no company identifier") }
            out.append(ManufacturerData(companyID: CompanyIdentifier(rawValue: UInt16(data[0]) | UInt16(data[1]) << 8),
                                        data: Array(data[2...])))
        }
        return out
    }

    /// Service data by service UUID (16-, 32- and 128-bit forms).
    public func serviceData() throws(WireError) -> [BluetoothUUID: [UInt8]] {
        var out: [BluetoothUUID: [UInt8]] = [:]
        for s in structures {
            guard [.serviceData16BitUUID, .serviceData32BitUUID, .serviceData128BitUUID].contains(s.type),
                  let width = s.type.uuidWidth else { continue }
            guard s.data.count >= width else { throw WireError(.truncated, "\(s.type) of \(s.data.count) byte(s) has no \(width)-byte UUID") }
            out[try BluetoothUUID(littleEndian: Array(s.data[0..<width]))] = Array(s.data[width...])
        }
        return out
    }

    /// The URI, with its scheme decoded from the assigned scheme code (0x01 = empty scheme, 0x16 = "http:",
    /// 0x17 = "https:"). CSS v11, Part A, 1.18.
    public func uri() throws(WireError) -> String? {
        guard let data = values(of: .uri).first else { return nil }
        guard let code = data.first else { throw WireError(.truncated, "URI with no scheme code") }
        let rest = String(decoding: data.dropFirst(), as: UTF8.self)
        switch code {
        case 0x01: return rest
        case 0x16: return "http:" + rest
        case 0x17: return "https:" + rest
        default: return rest
        }
    }

    /// What a scanner shows for a device: the advertising data followed by the scan response's structures, except
    /// those already in the advertising data (some controllers, Bumble's among them, answer a scan request with a
    /// copy of the advertising data; a structure repeated byte for byte adds nothing).
    public func merged(withScanResponse response: AdvertisingData) -> AdvertisingData {
        AdvertisingData(structures: structures + response.structures.filter { !structures.contains($0) })
    }

    /// Adds the local name in the space left: complete if it fits, else shortened (AD type 0x08) to fit; nothing
    /// when not even one character fits.
    public mutating func appendLocalName(_ name: String, maximumLength: Int = AdvertisingData.legacyMaximumLength) {
        let room = maximumLength - encoded.count - 2
        guard room > 0 else { return }
        let utf8 = Array(name.utf8)
        if utf8.count <= room {
            structures.append(ADStructure(type: .completeLocalName, data: utf8))
            return
        }
        // Cut on a character boundary.
        var cut = ""
        for character in name {
            if (cut + String(character)).utf8.count > room { break }
            cut.append(character)
        }
        if !cut.isEmpty { structures.append(ADStructure(type: .shortenedLocalName, data: Array(cut.utf8))) }
    }
}
