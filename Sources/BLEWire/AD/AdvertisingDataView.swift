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
        /// How many UUIDs the service UUID lists hold (255 for 255 or more): with one or none, nothing is listed twice.
        @usableFromInline var uuidCount: UInt8 = 0
        /// Which kinds of structure are malformed (``badUUIDList``, ``badServiceData``, ``badManufacturerData``).
        @usableFromInline var problems: UInt8 = 0
        @usableFromInline static var badUUIDList: UInt8 { 1 }
        @usableFromInline static var badServiceData: UInt8 { 2 }
        @usableFromInline static var badManufacturerData: UInt8 { 4 }
        @usableFromInline init() {}
        /// Every kind "at 0": accessors then walk from the start (for data too long for 16-bit offsets).
        @usableFromInline mutating func walkEverything() {
            (flags, completeName, shortName, txPower, appearance) = (0, 0, 0, 0, 0)
            if uuidList >= 0 { uuidList = 0 }
            if serviceData >= 0 { serviceData = 0 }
            if manufacturer >= 0 { manufacturer = 0 }
        }
    }

    /// Checks the chain of structures: each length octet is followed by at least that many bytes; a zero length
    /// octet ends the significant part (the rest is padding). Throws ``WireError`` `.truncated` for a structure that
    /// runs past the end, as ``AdvertisingData`` does.
    ///
    /// This one pass also notes where each field a scanner asks about starts and whether the service UUID lists,
    /// service data and manufacturer data are well formed, so that the accessors neither walk to validate nor
    /// allocate.
    @inlinable public init(_ bytes: [UInt8]) throws(WireError) {
        var firsts = Firsts()
        var i = 0
        let count = bytes.count
        var uuids = 0
        var end = count
        var overrun = -1
        while i < count {
            let length = Int(bytes[i])
            if length == 0 {
                end = i
                break
            }
            guard count - i - 1 >= length else {
                (end, overrun) = (i, length)
                break
            }
            let at = Int16(truncatingIfNeeded: i)
            let type = bytes[i + 1]
            switch type {
            case 0x01: if firsts.flags < 0 { firsts.flags = at }
            case 0x09: if firsts.completeName < 0 { firsts.completeName = at }
            case 0x08: if firsts.shortName < 0 { firsts.shortName = at }
            case 0x0A: if firsts.txPower < 0 { firsts.txPower = at }
            case 0x19: if firsts.appearance < 0 { firsts.appearance = at }
            case 0x02...0x07:
                if firsts.uuidList < 0 { firsts.uuidList = at }
                // 0x02/0x03: 2 octets, 0x04/0x05: 4, 0x06/0x07: 16.
                let width = type < 0x04 ? 2 : type < 0x06 ? 4 : 16
                let (n, rest) = (length - 1).quotientAndRemainder(dividingBy: width)
                if rest != 0 { firsts.problems |= Firsts.badUUIDList }
                uuids += n
            case 0x16, 0x20, 0x21:
                if firsts.serviceData < 0 { firsts.serviceData = at }
                if length - 1 < (type == 0x16 ? 2 : type == 0x20 ? 4 : 16) { firsts.problems |= Firsts.badServiceData }
            case 0xFF:
                if firsts.manufacturer < 0 { firsts.manufacturer = at }
                if length < 3 { firsts.problems |= Firsts.badManufacturerData }
            default: break
            }
            i += 1 + length
        }
        firsts.uuidCount = UInt8(min(uuids, 255))
        if overrun >= 0 { throw Self.overrunError(length: overrun, left: bytes.count - end - 1) }
        // Offsets are kept in 16 bits: data longer than that (far beyond the 1,650 bytes of extended advertising)
        // is read by walking instead.
        if bytes.count > Int(Int16.max) { firsts.walkEverything() }
        self.bytes = bytes
        self.end = end
        self.firsts = firsts
    }

    @usableFromInline static func overrunError(length: Int, left: Int) -> WireError {
        WireError(.truncated, "AD structure of length \(length) runs past the end (\(left) byte(s) left)")
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
    @inlinable public var localName: String? {
        let range = payload(from: firsts.completeName, type: 0x09) ?? payload(from: firsts.shortName, type: 0x08)
        guard let range else { return nil }
        return bytes.withUnsafeBufferPointer { String(decoding: UnsafeBufferPointer(rebasing: $0[range]), as: UTF8.self) }
    }

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
    @inlinable @inline(__always) public func serviceUUIDs() throws(WireError) -> ServiceUUIDs {
        if firsts.problems & Firsts.badUUIDList != 0 { throw uuidListError() }
        return ServiceUUIDs(view: self, start: firsts.uuidList >= 0 ? Int(firsts.uuidList) : end)
    }

    /// The error for the first malformed service UUID list.
    @usableFromInline func uuidListError() -> WireError {
        for s in structures {
            if let width = s.type.serviceListWidth, s.payload.count % width != 0 {
                return WireError(.lengthMismatch, "\(s.type) list of \(s.payload.count) byte(s) is not a multiple of \(width)")
            }
        }
        return WireError(.lengthMismatch, "malformed service UUID list")
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
                        if view.firsts.uuidCount < 2 || !view.lists(uuid, before: here) { return uuid }
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
        default:
            bytes.withUnsafeBytes { raw in
                BluetoothUUID(high: UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self)),
                              low: UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)))
            }
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
    @inlinable @inline(__always) public func manufacturerData() throws(WireError) -> ManufacturerDataSequence {
        if firsts.problems & Firsts.badManufacturerData != 0 { throw manufacturerDataError() }
        return ManufacturerDataSequence(view: self, start: firsts.manufacturer >= 0 ? Int(firsts.manufacturer) : end)
    }

    /// The error for the first manufacturer specific data structure without a company identifier.
    @usableFromInline func manufacturerDataError() -> WireError {
        let short = structures.first { $0.type == .manufacturerSpecificData && $0.payload.count < 2 }
        return WireError(.truncated, "Manufacturer Specific Data of \(short?.payload.count ?? 0) byte(s) has no company identifier")
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
    @inlinable @inline(__always) public func serviceData() throws(WireError) -> ServiceDataSequence {
        if firsts.problems & Firsts.badServiceData != 0 { throw serviceDataError() }
        return ServiceDataSequence(view: self, start: firsts.serviceData >= 0 ? Int(firsts.serviceData) : end)
    }

    /// The error for the first service data structure shorter than its UUID.
    @usableFromInline func serviceDataError() -> WireError {
        for s in structures {
            if let width = s.type.serviceDataWidth, s.payload.count < width {
                return WireError(.truncated, "\(s.type) of \(s.payload.count) byte(s) has no \(width)-byte UUID")
            }
        }
        return WireError(.truncated, "malformed service data")
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

    // MARK: Visitors: every entry of a kind, in place, without allocating or reference counting

    /// Calls `body` with each advertised service UUID (16-, 32- and 128-bit lists, complete or not), each once, in
    /// the order first listed — as ``serviceUUIDs()`` yields them, but without making a sequence that holds the bytes
    /// (the fastest way to read them). Throws, before calling `body`, when a list's length is not a multiple of its
    /// UUID width.
    @inlinable public func forEachServiceUUID(_ body: (BluetoothUUID) -> Void) throws(WireError) {
        if firsts.problems & Firsts.badUUIDList != 0 { throw uuidListError() }
        guard firsts.uuidList >= 0 else { return }
        let dedupe = firsts.uuidCount > 1
        var i = Int(firsts.uuidList)
        while i < end {
            let length = Int(bytes[i])
            if let width = ADType(rawValue: bytes[i + 1]).serviceListWidth {
                var at = i + 2
                while at + width <= i + 1 + length {
                    let uuid = self.uuid(at: at, width: width)
                    if !dedupe || !lists(uuid, before: at) { body(uuid) }
                    at += width
                }
            }
            i += 1 + length
        }
    }

    /// Calls `body` with each service data structure's UUID and payload (16-, 32- and 128-bit forms), in order —
    /// as ``serviceData()`` yields them, the payload lent as a `Span` valid during the call. Throws, before calling
    /// `body`, when a structure is shorter than its UUID.
    @inlinable public func forEachServiceData(_ body: (BluetoothUUID, Span<UInt8>) -> Void) throws(WireError) {
        if firsts.problems & Firsts.badServiceData != 0 { throw serviceDataError() }
        guard firsts.serviceData >= 0 else { return }
        let span = bytes.span
        var i = Int(firsts.serviceData)
        while i < end {
            let length = Int(span[i])
            if let width = ADType(rawValue: span[i + 1]).serviceDataWidth {
                body(uuid(at: i + 2, width: width), span.extracting((i + 2 + width)..<(i + 1 + length)))
            }
            i += 1 + length
        }
    }

    /// Calls `body` with each manufacturer specific data structure's company and the payload after it, in order —
    /// as ``manufacturerData()`` yields them, the payload lent as a `Span` valid during the call. Throws, before
    /// calling `body`, when a structure has no company identifier.
    @inlinable public func forEachManufacturerData(_ body: (CompanyIdentifier, Span<UInt8>) -> Void) throws(WireError) {
        if firsts.problems & Firsts.badManufacturerData != 0 { throw manufacturerDataError() }
        guard firsts.manufacturer >= 0 else { return }
        let span = bytes.span
        var i = Int(firsts.manufacturer)
        while i < end {
            let length = Int(span[i])
            if span[i + 1] == 0xFF {
                body(CompanyIdentifier(rawValue: UInt16(span[i + 2]) | UInt16(span[i + 3]) << 8), span.extracting((i + 4)..<(i + 1 + length)))
            }
            i += 1 + length
        }
    }

    /// The owning model of the same data, built now.
    public var model: AdvertisingData {
        AdvertisingData(structures: structures.map { ADStructure(type: $0.type, data: Array(bytes[$0.payload])) })
    }
}

extension ADType {
    /// For the service UUID list types, the width of their UUIDs.
    @inlinable var serviceListWidth: Int? {
        // By raw value: matching the static constants would reach each through its lazy global's accessor.
        switch rawValue {
        case 0x02, 0x03: 2
        case 0x04, 0x05: 4
        case 0x06, 0x07: 16
        default: nil
        }
    }

    /// For the service data types, the width of their UUID.
    @inlinable var serviceDataWidth: Int? {
        switch rawValue {
        case 0x16: 2
        case 0x20: 4
        case 0x21: 16
        default: nil
        }
    }
}
