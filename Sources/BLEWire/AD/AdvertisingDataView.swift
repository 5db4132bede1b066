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

        @usableFromInline init(type: ADType, payload: Range<Int>) {
            self.type = type
            self.payload = payload
        }
    }

    /// The bytes, as received (padding after a zero length octet included).
    public let bytes: [UInt8]
    /// Where the significant part ends: at the first zero length octet, or the end.
    public let end: Int
    /// Where the first structure of each kind starts (its length octet), or -1: flags, complete name, shortened name,
    /// TX power, appearance, service UUID list, service data, manufacturer data. Recorded while the chain is checked,
    /// so that a field is one jump away.
    @usableFromInline let firsts: Firsts

    /// The first structure of each kind a scanner asks about.
    @usableFromInline struct Firsts: Sendable {
        @usableFromInline var flags: Int16 = -1
        @usableFromInline var completeName: Int16 = -1
        @usableFromInline var shortName: Int16 = -1
        @usableFromInline var txPower: Int16 = -1
        @usableFromInline var appearance: Int16 = -1
        @usableFromInline var uuidList: Int16 = -1
        @usableFromInline var serviceData: Int16 = -1
        @usableFromInline var manufacturer: Int16 = -1
        @usableFromInline init() {}
        /// Every kind "at 0": accessors then walk from the start (for data too long for 16-bit offsets).
        static var walkEverything: Firsts {
            var f = Firsts()
            (f.flags, f.completeName, f.shortName, f.txPower, f.appearance, f.uuidList, f.serviceData, f.manufacturer) = (0, 0, 0, 0, 0, 0, 0, 0)
            return f
        }
    }

    /// Checks the chain of structures: each length octet is followed by at least that many bytes; a zero length
    /// octet ends the significant part (the rest is padding). Throws ``WireError`` `.truncated` for a structure that
    /// runs past the end, as ``AdvertisingData`` does.
    public init(_ bytes: [UInt8]) throws(WireError) {
        var i = 0
        var end = bytes.count
        var firsts = Firsts()
        while i < bytes.count {
            let length = Int(bytes[i])
            if length == 0 {
                end = i
                break
            }
            guard bytes.count - i - 1 >= length else {
                throw WireError(.truncated, "AD structure of length \(length) runs past the end (\(bytes.count - i - 1) byte(s) left)")
            }
            let at = Int16(truncatingIfNeeded: i)
            switch bytes[i + 1] {
            case 0x01: if firsts.flags < 0 { firsts.flags = at }
            case 0x09: if firsts.completeName < 0 { firsts.completeName = at }
            case 0x08: if firsts.shortName < 0 { firsts.shortName = at }
            case 0x0A: if firsts.txPower < 0 { firsts.txPower = at }
            case 0x19: if firsts.appearance < 0 { firsts.appearance = at }
            case 0x02...0x07: if firsts.uuidList < 0 { firsts.uuidList = at }
            case 0x16, 0x20, 0x21: if firsts.serviceData < 0 { firsts.serviceData = at }
            case 0xFF: if firsts.manufacturer < 0 { firsts.manufacturer = at }
            default: break
            }
            i += 1 + length
        }
        // Offsets are kept in 16 bits: data longer than that (far beyond the 1,650 bytes of extended advertising)
        // is read by walking instead.
        if bytes.count > Int(Int16.max) { firsts = Firsts.walkEverything }
        self.bytes = bytes
        self.end = end
        self.firsts = firsts
    }

    /// The structures, in order, as a sequence that reads them from the bytes.
    @inlinable public var structures: Structures { Structures(bytes: bytes, end: end, start: 0) }

    /// The structures of an ``AdvertisingDataView``, read in place.
    public struct Structures: Sequence, Sendable {
        @usableFromInline let bytes: [UInt8]
        @usableFromInline let end: Int
        @usableFromInline let start: Int

        @usableFromInline init(bytes: [UInt8], end: Int, start: Int) {
            self.bytes = bytes
            self.end = end
            self.start = start
        }

        /// Reads the structures one after the other.
        public struct Iterator: IteratorProtocol {
            @usableFromInline let bytes: [UInt8]
            @usableFromInline let end: Int
            @usableFromInline var i: Int

            @usableFromInline init(bytes: [UInt8], end: Int, i: Int) {
                self.bytes = bytes
                self.end = end
                self.i = i
            }

            @inlinable public mutating func next() -> Structure? {
                guard i < end else { return nil }
                let length = Int(bytes[i])
                let structure = Structure(type: ADType(rawValue: bytes[i + 1]), payload: (i + 2)..<(i + 1 + length))
                i += 1 + length
                return structure
            }
        }

        @inlinable public func makeIterator() -> Iterator { Iterator(bytes: bytes, end: end, i: start) }
    }

    /// The payload of the first structure of type `type` at or after `start` (-1: none).
    @inlinable func payload(from start: Int16, type: UInt8) -> Range<Int>? {
        guard start >= 0 else { return nil }
        var i = Int(start)
        while i < end {
            let length = Int(bytes[i])
            if bytes[i + 1] == type { return (i + 2)..<(i + 1 + length) }
            i += 1 + length
        }
        return nil
    }

    /// The payload of the first structure of `type`.
    @inlinable public func first(_ type: ADType) -> ArraySlice<UInt8>? {
        payload(from: 0, type: type.rawValue).map { bytes[$0] }
    }

    @inlinable func single(_ start: Int16, _ type: UInt8, length: Int, _ name: String) throws(WireError) -> Int? {
        guard let range = payload(from: start, type: type) else { return nil }
        guard range.count == length else { throw WireError(.lengthMismatch, "\(name) of \(range.count) byte(s); expected \(length)") }
        return range.lowerBound
    }

    // MARK: Fields

    /// The Flags structure.
    @inlinable public func flags() throws(WireError) -> ADFlags? {
        try single(firsts.flags, 0x01, length: 1, "Flags").map { ADFlags(rawValue: bytes[$0]) }
    }

    /// The local name's bytes: the complete name if present, else the shortened one.
    @inlinable public var localNameBytes: ArraySlice<UInt8>? {
        if let range = payload(from: firsts.completeName, type: 0x09) { return bytes[range] }
        return payload(from: firsts.shortName, type: 0x08).map { bytes[$0] }
    }

    /// The local name (invalid UTF-8 repaired), as ``AdvertisingData/localName``.
    @inlinable public var localName: String? { localNameBytes.map { String(decoding: $0, as: UTF8.self) } }

    /// The TX power level in dBm.
    @inlinable public func txPowerLevel() throws(WireError) -> Int8? {
        try single(firsts.txPower, 0x0A, length: 1, "TX Power Level").map { Int8(bitPattern: bytes[$0]) }
    }

    /// The appearance value.
    @inlinable public func appearance() throws(WireError) -> UInt16? {
        try single(firsts.appearance, 0x19, length: 2, "Appearance").map { UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8 }
    }

    /// The advertised service UUIDs (16-, 32- and 128-bit lists, complete or not) in order, each once, read as they
    /// are iterated. Throws when a list's length is not a multiple of its UUID width.
    @inlinable public func serviceUUIDs() throws(WireError) -> ServiceUUIDs {
        guard firsts.uuidList >= 0 else { return ServiceUUIDs(view: self, start: end) }
        var i = Int(firsts.uuidList)
        while i < end {
            let length = Int(bytes[i])
            if let width = ADType(rawValue: bytes[i + 1]).serviceListWidth, (length - 1) % width != 0 {
                throw WireError(.lengthMismatch, "\(ADType(rawValue: bytes[i + 1])) list of \(length - 1) byte(s) is not a multiple of \(width)")
            }
            i += 1 + length
        }
        return ServiceUUIDs(view: self, start: Int(firsts.uuidList))
    }

    /// The service UUIDs of an ``AdvertisingDataView``, each once, in the order first listed.
    public struct ServiceUUIDs: Sequence, Sendable {
        @usableFromInline let view: AdvertisingDataView
        @usableFromInline let start: Int

        @usableFromInline init(view: AdvertisingDataView, start: Int) {
            self.view = view
            self.start = start
        }

        /// Walks the UUID lists; a UUID listed before is skipped (found again by reading the earlier lists: a
        /// handful of UUIDs at most, and no set to allocate).
        public struct Iterator: IteratorProtocol {
            @usableFromInline let view: AdvertisingDataView
            /// The next structure to look at, and within the current list the next UUID and the list's end.
            @usableFromInline var following: Int
            @usableFromInline var at = 0
            @usableFromInline var listEnd = 0
            @usableFromInline var width = 0

            @usableFromInline init(view: AdvertisingDataView, following: Int) {
                self.view = view
                self.following = following
            }

            @inlinable public mutating func next() -> BluetoothUUID? {
                while true {
                    if at + width <= listEnd, width > 0 {
                        let uuid = view.uuid(at: at, width: width)
                        let here = at
                        at += width
                        if !view.lists(uuid, before: here) { return uuid }
                        continue
                    }
                    guard following < view.end else { return nil }
                    let length = Int(view.bytes[following])
                    width = ADType(rawValue: view.bytes[following + 1]).serviceListWidth ?? 0
                    at = following + 2
                    listEnd = following + 1 + length
                    following += 1 + length
                }
            }
        }

        @inlinable public func makeIterator() -> Iterator { Iterator(view: view, following: start) }
    }

    /// Whether `uuid` is advertised (in any service UUID list).
    @inlinable public func advertises(_ uuid: BluetoothUUID) -> Bool {
        guard firsts.uuidList >= 0 else { return false }
        return lists(uuid, before: end)
    }

    /// The UUID of `width` bytes (2, 4 or 16, little-endian) at `offset`.
    @inlinable func uuid(at offset: Int, width: Int) -> BluetoothUUID {
        switch width {
        case 2: BluetoothUUID(UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8)
        case 4: BluetoothUUID(uint32: UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16
                                  | UInt32(bytes[offset + 3]) << 24)
        default: BluetoothUUID(wire128: bytes, at: offset)
        }
    }

    /// Whether a service UUID list lists `uuid` before index `limit`.
    @inlinable func lists(_ uuid: BluetoothUUID, before limit: Int) -> Bool {
        guard firsts.uuidList >= 0 else { return false }
        var i = Int(firsts.uuidList)
        while i < end, i < limit {
            let length = Int(bytes[i])
            if let width = ADType(rawValue: bytes[i + 1]).serviceListWidth {
                var at = i + 2
                while at + width <= i + 1 + length, at < limit {
                    if self.uuid(at: at, width: width) == uuid { return true }
                    at += width
                }
            }
            i += 1 + length
        }
        return false
    }

    /// Manufacturer specific data, in place: the company and the payload after it.
    public struct Manufacturer: Sendable, Hashable {
        /// The company identifier.
        public let companyID: CompanyIdentifier
        /// The payload after the company identifier.
        public let data: ArraySlice<UInt8>

        @usableFromInline init(companyID: CompanyIdentifier, data: ArraySlice<UInt8>) {
            self.companyID = companyID
            self.data = data
        }
    }

    /// Every manufacturer specific data structure, in order, read as iterated. Throws when one has no company
    /// identifier.
    @inlinable public func manufacturerData() throws(WireError) -> ManufacturerDataSequence {
        guard firsts.manufacturer >= 0 else { return ManufacturerDataSequence(view: self, start: end) }
        var i = Int(firsts.manufacturer)
        while i < end {
            let length = Int(bytes[i])
            if bytes[i + 1] == 0xFF, length - 1 < 2 {
                throw WireError(.truncated, "Manufacturer Specific Data of \(length - 1) byte(s) has no company identifier")
            }
            i += 1 + length
        }
        return ManufacturerDataSequence(view: self, start: Int(firsts.manufacturer))
    }

    /// The manufacturer specific data of an ``AdvertisingDataView``, read in place.
    public struct ManufacturerDataSequence: Sequence, Sendable {
        @usableFromInline let view: AdvertisingDataView
        @usableFromInline let start: Int

        @usableFromInline init(view: AdvertisingDataView, start: Int) {
            self.view = view
            self.start = start
        }

        /// Walks the manufacturer specific data structures.
        public struct Iterator: IteratorProtocol {
            @usableFromInline let view: AdvertisingDataView
            @usableFromInline var i: Int

            @usableFromInline init(view: AdvertisingDataView, i: Int) {
                self.view = view
                self.i = i
            }

            @inlinable public mutating func next() -> Manufacturer? {
                while i < view.end {
                    let start = i
                    let length = Int(view.bytes[i])
                    i += 1 + length
                    guard view.bytes[start + 1] == 0xFF, length >= 3 else { continue }
                    return Manufacturer(companyID: CompanyIdentifier(rawValue: UInt16(view.bytes[start + 2]) | UInt16(view.bytes[start + 3]) << 8),
                                        data: view.bytes[(start + 4)..<i])
                }
                return nil
            }
        }

        @inlinable public func makeIterator() -> Iterator { Iterator(view: view, i: start) }
    }

    /// The first manufacturer specific data structure, without reading the others.
    @inlinable public func firstManufacturerData() throws(WireError) -> Manufacturer? {
        guard let range = payload(from: firsts.manufacturer, type: 0xFF) else { return nil }
        guard range.count >= 2 else { throw WireError(.truncated, "Manufacturer Specific Data of \(range.count) byte(s) has no company identifier") }
        let i = range.lowerBound
        return Manufacturer(companyID: CompanyIdentifier(rawValue: UInt16(bytes[i]) | UInt16(bytes[i + 1]) << 8), data: bytes[(i + 2)..<range.upperBound])
    }

    /// Service data, in place: the service and the payload after its UUID.
    public struct ServiceData: Sendable, Hashable {
        /// The service.
        public let uuid: BluetoothUUID
        /// The payload after the UUID.
        public let data: ArraySlice<UInt8>

        @usableFromInline init(uuid: BluetoothUUID, data: ArraySlice<UInt8>) {
            self.uuid = uuid
            self.data = data
        }
    }

    /// Every service data structure (16-, 32- and 128-bit forms), in order, read as iterated. Throws when one is
    /// shorter than its UUID.
    @inlinable public func serviceData() throws(WireError) -> ServiceDataSequence {
        guard firsts.serviceData >= 0 else { return ServiceDataSequence(view: self, start: end) }
        var i = Int(firsts.serviceData)
        while i < end {
            let length = Int(bytes[i])
            let type = ADType(rawValue: bytes[i + 1])
            if let width = type.serviceDataWidth, length - 1 < width {
                throw WireError(.truncated, "\(type) of \(length - 1) byte(s) has no \(width)-byte UUID")
            }
            i += 1 + length
        }
        return ServiceDataSequence(view: self, start: Int(firsts.serviceData))
    }

    /// The service data of an ``AdvertisingDataView``, read in place.
    public struct ServiceDataSequence: Sequence, Sendable {
        @usableFromInline let view: AdvertisingDataView
        @usableFromInline let start: Int

        @usableFromInline init(view: AdvertisingDataView, start: Int) {
            self.view = view
            self.start = start
        }

        /// Walks the service data structures.
        public struct Iterator: IteratorProtocol {
            @usableFromInline let view: AdvertisingDataView
            @usableFromInline var i: Int

            @usableFromInline init(view: AdvertisingDataView, i: Int) {
                self.view = view
                self.i = i
            }

            @inlinable public mutating func next() -> ServiceData? {
                while i < view.end {
                    let start = i
                    let length = Int(view.bytes[i])
                    i += 1 + length
                    guard let width = ADType(rawValue: view.bytes[start + 1]).serviceDataWidth, length - 1 >= width else { continue }
                    return ServiceData(uuid: view.uuid(at: start + 2, width: width), data: view.bytes[(start + 2 + width)..<i])
                }
                return nil
            }
        }

        @inlinable public func makeIterator() -> Iterator { Iterator(view: view, i: start) }
    }

    /// The data of service `uuid` (the last structure for it, as ``AdvertisingData/serviceData()`` keeps), if any.
    public func serviceData(for uuid: BluetoothUUID) -> ArraySlice<UInt8>? {
        var found: ArraySlice<UInt8>?
        guard let all = try? serviceData() else {
            // Malformed service data elsewhere: still answer for a well-formed structure of this service.
            for s in structures {
                guard let width = s.type.serviceDataWidth, s.payload.count >= width, self.uuid(at: s.payload.lowerBound, width: width) == uuid else { continue }
                found = bytes[(s.payload.lowerBound + width)..<s.payload.upperBound]
            }
            return found
        }
        for entry in all where entry.uuid == uuid { found = entry.data }
        return found
    }

    /// The owning model of the same data, built now.
    public var model: AdvertisingData {
        AdvertisingData(structures: structures.map { ADStructure(type: $0.type, data: Array(bytes[$0.payload])) })
    }
}

extension ADType {
    /// For the service UUID list types, the width of their UUIDs.
    @inlinable var serviceListWidth: Int? {
        switch self {
        case .incomplete16BitServiceUUIDs, .complete16BitServiceUUIDs: 2
        case .incomplete32BitServiceUUIDs, .complete32BitServiceUUIDs: 4
        case .incomplete128BitServiceUUIDs, .complete128BitServiceUUIDs: 16
        default: nil
        }
    }

    /// For the service data types, the width of their UUID.
    @inlinable var serviceDataWidth: Int? {
        switch self {
        case .serviceData16BitUUID: 2
        case .serviceData32BitUUID: 4
        case .serviceData128BitUUID: 16
        default: nil
        }
    }
}
