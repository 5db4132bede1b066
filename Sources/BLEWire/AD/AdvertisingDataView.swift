/// Advertising or scan response data read in place: the chain of AD structures is checked once, then every field is
/// read straight from the bytes when asked for, without copying them or allocating (a name becomes a `String` only
/// through ``localName``; the owning ``AdvertisingData`` only through ``model``). Core 5.4, Vol 3, Part C, 11 and the
/// Core Specification Supplement v11, Part A.
///
/// A scanner hears thousands of advertisements a second and looks at a few fields of each: this is what it reads
/// them with. The accessors answer exactly as ``AdvertisingData``'s do, typed errors included.
public struct AdvertisingDataView: Sendable {
    /// One AD structure: its type and where its payload lies in ``AdvertisingDataView/bytes``.
    public struct Structure: Sendable, Hashable {
        /// The AD type.
        public let type: ADType
        /// The payload's indices in the view's bytes.
        public let payload: Range<Int>
    }

    /// The bytes, as received (padding after a zero length octet included).
    public let bytes: [UInt8]
    /// Where the significant part ends: at the first zero length octet, or the end.
    public let end: Int

    /// Checks the chain of structures: each length octet is followed by at least that many bytes; a zero length
    /// octet ends the significant part (the rest is padding). Throws ``WireError`` `.truncated` for a structure that
    /// runs past the end, as ``AdvertisingData`` does.
    public init(_ bytes: [UInt8]) throws(WireError) {
        var i = 0
        var end = bytes.count
        while i < bytes.count {
            let length = Int(bytes[i])
            if length == 0 {
                end = i
                break
            }
            guard bytes.count - i - 1 >= length else {
                throw WireError(.truncated, "AD structure of length \(length) runs past the end (\(bytes.count - i - 1) byte(s) left)")
            }
            i += 1 + length
        }
        self.bytes = bytes
        self.end = end
    }

    /// The structures, in order, as a sequence that reads them from the bytes.
    public var structures: Structures { Structures(bytes: bytes, end: end) }

    /// The structures of an ``AdvertisingDataView``, read in place.
    public struct Structures: Sequence, Sendable {
        let bytes: [UInt8]
        let end: Int

        /// Reads the structures one after the other.
        public struct Iterator: IteratorProtocol {
            let bytes: [UInt8]
            let end: Int
            var i = 0

            public mutating func next() -> Structure? {
                guard i < end else { return nil }
                let length = Int(bytes[i])
                let structure = Structure(type: ADType(rawValue: bytes[i + 1]), payload: (i + 2)..<(i + 1 + length))
                i += 1 + length
                return structure
            }
        }

        public func makeIterator() -> Iterator { Iterator(bytes: bytes, end: end) }
    }

    /// The payload of the first structure of `type`.
    public func first(_ type: ADType) -> ArraySlice<UInt8>? {
        for s in structures where s.type == type { return bytes[s.payload] }
        return nil
    }

    private func single(_ type: ADType, length: Int, _ name: String) throws(WireError) -> ArraySlice<UInt8>? {
        guard let data = first(type) else { return nil }
        guard data.count == length else { throw WireError(.lengthMismatch, "\(name) of \(data.count) byte(s); expected \(length)") }
        return data
    }

    // MARK: Fields

    /// The Flags structure.
    public func flags() throws(WireError) -> ADFlags? {
        try single(.flags, length: 1, "Flags").map { ADFlags(rawValue: $0[$0.startIndex]) }
    }

    /// The local name's bytes: the complete name if present, else the shortened one.
    public var localNameBytes: ArraySlice<UInt8>? { first(.completeLocalName) ?? first(.shortenedLocalName) }

    /// The local name (invalid UTF-8 repaired), as ``AdvertisingData/localName``.
    public var localName: String? { localNameBytes.map { String(decoding: $0, as: UTF8.self) } }

    /// The TX power level in dBm.
    public func txPowerLevel() throws(WireError) -> Int8? {
        try single(.txPowerLevel, length: 1, "TX Power Level").map { Int8(bitPattern: $0[$0.startIndex]) }
    }

    /// The appearance value.
    public func appearance() throws(WireError) -> UInt16? {
        try single(.appearance, length: 2, "Appearance").map { UInt16($0[$0.startIndex]) | UInt16($0[$0.startIndex + 1]) << 8 }
    }

    /// The advertised service UUIDs (16-, 32- and 128-bit lists, complete or not) in order, each once, read as they
    /// are iterated. Throws when a list's length is not a multiple of its UUID width.
    public func serviceUUIDs() throws(WireError) -> ServiceUUIDs {
        for s in structures {
            guard let width = s.type.serviceListWidth else { continue }
            guard s.payload.count % width == 0 else {
                throw WireError(.lengthMismatch, "\(s.type) list of \(s.payload.count) byte(s) is not a multiple of \(width)")
            }
        }
        return ServiceUUIDs(view: self)
    }

    /// The service UUIDs of an ``AdvertisingDataView``, each once, in the order first listed.
    public struct ServiceUUIDs: Sequence, Sendable {
        let view: AdvertisingDataView

        /// Walks the UUID lists; a UUID listed before is skipped (found again by reading the earlier lists: a
        /// handful of UUIDs at most, and no set to allocate).
        public struct Iterator: IteratorProtocol {
            let view: AdvertisingDataView
            var structures: Structures.Iterator
            var current: Structure?
            var offset = 0

            public mutating func next() -> BluetoothUUID? {
                while true {
                    guard let s = current, let width = s.type.serviceListWidth, offset + width <= s.payload.count else {
                        guard let n = structures.next() else { return nil }
                        current = n
                        offset = 0
                        continue
                    }
                    let at = s.payload.lowerBound + offset
                    offset += width
                    let uuid = view.uuid(at: at, width: width)
                    if !view.lists(uuid, before: at) { return uuid }
                }
            }
        }

        public func makeIterator() -> Iterator { Iterator(view: view, structures: view.structures.makeIterator()) }
    }

    /// Whether `uuid` is advertised (in any service UUID list).
    public func advertises(_ uuid: BluetoothUUID) -> Bool {
        for s in structures {
            guard let width = s.type.serviceListWidth, s.payload.count % width == 0 else { continue }
            var at = s.payload.lowerBound
            while at < s.payload.upperBound {
                if self.uuid(at: at, width: width) == uuid { return true }
                at += width
            }
        }
        return false
    }

    /// The UUID of `width` bytes (2, 4 or 16, little-endian) at `at`.
    func uuid(at offset: Int, width: Int) -> BluetoothUUID {
        switch width {
        case 2: BluetoothUUID(UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8)
        case 4: BluetoothUUID(uint32: UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16
                                  | UInt32(bytes[offset + 3]) << 24)
        default: BluetoothUUID(littleEndian128: bytes, at: offset)
        }
    }

    /// Whether a service UUID list lists `uuid` before index `limit`.
    func lists(_ uuid: BluetoothUUID, before limit: Int) -> Bool {
        for s in structures {
            guard s.payload.lowerBound < limit else { return false }
            guard let width = s.type.serviceListWidth else { continue }
            var at = s.payload.lowerBound
            while at + width <= s.payload.upperBound, at < limit {
                if self.uuid(at: at, width: width) == uuid { return true }
                at += width
            }
        }
        return false
    }

    /// Manufacturer specific data, in place: the company and the payload after it.
    public struct Manufacturer: Sendable, Hashable {
        /// The company identifier.
        public let companyID: CompanyIdentifier
        /// The payload after the company identifier.
        public let data: ArraySlice<UInt8>
    }

    /// Every manufacturer specific data structure, in order, read as iterated. Throws when one has no company
    /// identifier.
    public func manufacturerData() throws(WireError) -> ManufacturerDataSequence {
        for s in structures where s.type == .manufacturerSpecificData && s.payload.count < 2 {
            throw WireError(.truncated, "Manufacturer Specific Data of \(s.payload.count) byte(s) has no company identifier")
        }
        return ManufacturerDataSequence(view: self)
    }

    /// The manufacturer specific data of an ``AdvertisingDataView``, read in place.
    public struct ManufacturerDataSequence: Sequence, Sendable {
        let view: AdvertisingDataView

        /// Walks the manufacturer specific data structures.
        public struct Iterator: IteratorProtocol {
            let view: AdvertisingDataView
            var structures: Structures.Iterator

            public mutating func next() -> Manufacturer? {
                while let s = structures.next() {
                    guard s.type == .manufacturerSpecificData, s.payload.count >= 2 else { continue }
                    let i = s.payload.lowerBound
                    return Manufacturer(companyID: CompanyIdentifier(rawValue: UInt16(view.bytes[i]) | UInt16(view.bytes[i + 1]) << 8),
                                        data: view.bytes[(i + 2)..<s.payload.upperBound])
                }
                return nil
            }
        }

        public func makeIterator() -> Iterator { Iterator(view: view, structures: view.structures.makeIterator()) }
    }

    /// The first manufacturer specific data structure, without collecting the others.
    public func firstManufacturerData() throws(WireError) -> Manufacturer? {
        guard let data = first(.manufacturerSpecificData) else { return nil }
        guard data.count >= 2 else { throw WireError(.truncated, "Manufacturer Specific Data of \(data.count) byte(s) has no company identifier") }
        let i = data.startIndex
        return Manufacturer(companyID: CompanyIdentifier(rawValue: UInt16(bytes[i]) | UInt16(bytes[i + 1]) << 8), data: bytes[(i + 2)..<data.endIndex])
    }

    /// Service data, in place: the service and the payload after its UUID.
    public struct ServiceData: Sendable, Hashable {
        /// The service.
        public let uuid: BluetoothUUID
        /// The payload after the UUID.
        public let data: ArraySlice<UInt8>
    }

    /// Every service data structure (16-, 32- and 128-bit forms), in order, read as iterated. Throws when one is
    /// shorter than its UUID.
    public func serviceData() throws(WireError) -> ServiceDataSequence {
        for s in structures {
            guard let width = s.type.serviceDataWidth, s.payload.count < width else { continue }
            throw WireError(.truncated, "\(s.type) of \(s.payload.count) byte(s) has no \(width)-byte UUID")
        }
        return ServiceDataSequence(view: self)
    }

    /// The service data of an ``AdvertisingDataView``, read in place.
    public struct ServiceDataSequence: Sequence, Sendable {
        let view: AdvertisingDataView

        /// Walks the service data structures.
        public struct Iterator: IteratorProtocol {
            let view: AdvertisingDataView
            var structures: Structures.Iterator

            public mutating func next() -> ServiceData? {
                while let s = structures.next() {
                    guard let width = s.type.serviceDataWidth, s.payload.count >= width else { continue }
                    return ServiceData(uuid: view.uuid(at: s.payload.lowerBound, width: width),
                                       data: view.bytes[(s.payload.lowerBound + width)..<s.payload.upperBound])
                }
                return nil
            }
        }

        public func makeIterator() -> Iterator { Iterator(view: view, structures: view.structures.makeIterator()) }
    }

    /// The data of service `uuid` (the last structure for it, as ``AdvertisingData/serviceData()`` keeps), if any.
    public func serviceData(for uuid: BluetoothUUID) -> ArraySlice<UInt8>? {
        var found: ArraySlice<UInt8>?
        for s in structures {
            guard let width = s.type.serviceDataWidth, s.payload.count >= width, self.uuid(at: s.payload.lowerBound, width: width) == uuid else { continue }
            found = bytes[(s.payload.lowerBound + width)..<s.payload.upperBound]
        }
        return found
    }

    /// The owning model of the same data, built now.
    public var model: AdvertisingData {
        AdvertisingData(structures: structures.map { ADStructure(type: $0.type, data: Array(bytes[$0.payload])) })
    }
}

extension ADType {
    /// For the service UUID list types, the width of their UUIDs.
    var serviceListWidth: Int? {
        switch self {
        case .incomplete16BitServiceUUIDs, .complete16BitServiceUUIDs: 2
        case .incomplete32BitServiceUUIDs, .complete32BitServiceUUIDs: 4
        case .incomplete128BitServiceUUIDs, .complete128BitServiceUUIDs: 16
        default: nil
        }
    }

    /// For the service data types, the width of their UUID.
    var serviceDataWidth: Int? {
        switch self {
        case .serviceData16BitUUID: 2
        case .serviceData32BitUUID: 4
        case .serviceData128BitUUID: 16
        default: nil
        }
    }
}
