/// The fields a scanner reads from advertising data, taken in one pass over the bytes without making a view: the
/// local name and TX power level returned, the service UUIDs, service data and manufacturer data handed to the
/// visitors as they are met. For a scanner that reads these fields once per advertisement (a gateway, a proxy, a
/// tracker), this is the cheapest way; ``AdvertisingDataView`` answers any question in any order.
///
/// What it reads is what the view's accessors read, with two differences stated here: the service UUIDs are visited
/// as listed (a UUID listed twice is visited twice; ``AdvertisingDataView/forEachServiceUUID(_:)`` gives each once),
/// and a fault is found where the walk meets it: the visitors have seen the structures before it.
public enum AdvertisingDataFields {
    /// Reads `bytes` (advertising data, or advertising data followed by a scan response) in one pass: calls
    /// `serviceUUID` for each UUID of the service UUID lists (16-, 32- and 128-bit, complete or not), `serviceData`
    /// for each service data structure (its UUID and the payload after it, lent for the call), `manufacturerData`
    /// for each manufacturer specific data structure (the company and the payload after it), in order; returns the
    /// local name (the complete one if present, else the shortened one; invalid UTF-8 repaired) and the TX power
    /// level of the first TX Power Level structure.
    ///
    /// A zero length octet ends the significant part (the rest is padding). Throws ``WireError`` `.truncated` for a
    /// structure that runs past the end, a service data structure shorter than its UUID or a manufacturer specific
    /// data structure without a company identifier, and `.lengthMismatch` for a service UUID list whose length is
    /// not a multiple of its UUIDs' width, or a first TX Power Level that is not one octet: when it meets it, after the
    /// visitors saw the structures before it.
    ///
    /// Always inlined into its caller, so that the visitors are inlined into the walk rather than called through
    /// closure contexts (a tenth of its time over the benchmark corpus, `scripts/bench`).
    @inlinable @inline(__always)
    public static func read(_ bytes: [UInt8], serviceUUID: (BluetoothUUID) -> Void,
                            serviceData: (BluetoothUUID, Span<UInt8>) -> Void,
                            manufacturerData: (CompanyIdentifier, Span<UInt8>) -> Void) throws(WireError)
        -> (localName: String?, txPowerLevel: Int8?) {
        let span = bytes.span
        let count = span.count
        var completeName: Range<Int>?
        var shortName: Range<Int>?
        var txPower: Int8?
        var i = 0
        while i < count {
            let length = Int(span[i])
            if length == 0 { break }
            guard count - i - 1 >= length else {
                throw WireError(.truncated, "AD structure of length \(length) runs past the end (\(count - i - 1) byte(s) left)")
            }
            let start = i + 2
            let end = i + 1 + length
            switch span[i + 1] {
            case 0x09:
                if completeName == nil { completeName = start..<end }
            case 0x08:
                if shortName == nil { shortName = start..<end }
            case 0x0A:
                // The first one counts (later ones are not read, as by the view).
                if txPower == nil {
                    guard length == 2 else { throw WireError(.lengthMismatch, "TX Power Level of \(length - 1) byte(s), not 1") }
                    txPower = Int8(bitPattern: span[start])
                }
            case 0x02, 0x03:
                guard (length - 1) & 1 == 0 else { throw listError(length, width: 2) }
                var at = start
                while at < end {
                    serviceUUID(BluetoothUUID(UInt16(span[at]) | UInt16(span[at + 1]) << 8))
                    at += 2
                }
            case 0x04, 0x05:
                guard (length - 1) & 3 == 0 else { throw listError(length, width: 4) }
                var at = start
                while at < end {
                    serviceUUID(uuid32(span, at))
                    at += 4
                }
            case 0x06, 0x07:
                guard (length - 1) & 15 == 0 else { throw listError(length, width: 16) }
                var at = start
                while at < end {
                    serviceUUID(uuid128(span, at))
                    at += 16
                }
            case 0x16:
                guard length >= 3 else { throw serviceDataError(length, width: 2) }
                serviceData(BluetoothUUID(UInt16(span[start]) | UInt16(span[start + 1]) << 8), span.extracting((start + 2)..<end))
            case 0x20:
                guard length >= 5 else { throw serviceDataError(length, width: 4) }
                serviceData(uuid32(span, start), span.extracting((start + 4)..<end))
            case 0x21:
                guard length >= 17 else { throw serviceDataError(length, width: 16) }
                serviceData(uuid128(span, start), span.extracting((start + 16)..<end))
            case 0xFF:
                guard length >= 3 else {
                    throw WireError(.truncated, "manufacturer specific data of \(length - 1) byte(s) has no company identifier")
                }
                manufacturerData(CompanyIdentifier(rawValue: UInt16(span[start]) | UInt16(span[start + 1]) << 8),
                                 span.extracting((start + 2)..<end))
            default:
                break
            }
            i = end
        }
        var localName: String?
        if let name = completeName ?? shortName {
            localName = bytes.withUnsafeBufferPointer { String(decoding: UnsafeBufferPointer(rebasing: $0[name]), as: UTF8.self) }
        }
        return (localName, txPower)
    }

    @inlinable static func uuid32(_ span: Span<UInt8>, _ at: Int) -> BluetoothUUID {
        BluetoothUUID(uint32: UInt32(span[at]) | UInt32(span[at + 1]) << 8 | UInt32(span[at + 2]) << 16 | UInt32(span[at + 3]) << 24)
    }

    @inlinable static func uuid128(_ span: Span<UInt8>, _ at: Int) -> BluetoothUUID {
        // Two checked 8-byte loads (every bit pattern is a valid UInt64).
        let bytes = span.bytes
        return BluetoothUUID(high: UInt64(littleEndian: bytes.unsafeLoadUnaligned(fromByteOffset: at + 8, as: UInt64.self)),
                             low: UInt64(littleEndian: bytes.unsafeLoadUnaligned(fromByteOffset: at, as: UInt64.self)))
    }

    @usableFromInline static func listError(_ length: Int, width: Int) -> WireError {
        WireError(.lengthMismatch, "service UUID list of \(length - 1) byte(s) is not a multiple of \(width)")
    }

    @usableFromInline static func serviceDataError(_ length: Int, width: Int) -> WireError {
        WireError(.truncated, "service data of \(length - 1) byte(s) has no \(width)-byte UUID")
    }
}
