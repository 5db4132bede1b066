import BLEWire

// Advertising data parsing, and every typed accessor on what parsed. Invariants: decode → encode → decode is the
// same data; the accessors either return a value or throw a WireError; the in-place AdvertisingDataView accepts
// exactly what the model accepts and answers as it does (name, flags, TX power, appearance, service UUIDs,
// manufacturer data, service data); the lenient parse (the valid prefix) is the strict one on well-formed data and
// re-parses strictly otherwise.
enum AdvertisingDataFuzz {
    static func run(_ bytes: [UInt8]) {
        let view = try? AdvertisingDataView(bytes)
        let prefix = AdvertisingData(validPrefixOf: bytes)
        guard let data = try? AdvertisingData(bytes: bytes) else {
            invariant(view == nil, "the view accepts what the model refuses")
            invariant((try? AdvertisingData(bytes: prefix.encoded)) == prefix, "the valid prefix does not re-parse")
            return
        }
        invariant(prefix == data, "the valid prefix of well-formed data differs from it")
        if let view {
            invariant(view.model == data, "the view's model differs")
            invariant(view.localName == data.localName, "the view's name differs")
            invariant((try? view.flags()) == (try? data.flags()), "the view's flags differ")
            invariant((try? view.txPowerLevel()) == (try? data.txPowerLevel()), "the view's TX power differs")
            invariant((try? view.appearance()) == (try? data.appearance()), "the view's appearance differs")
            invariant((try? Array(view.serviceUUIDs())) == (try? data.serviceUUIDs()), "the view's service UUIDs differ")
            invariant((try? view.manufacturerData().map { ManufacturerData(companyID: $0.companyID, data: Array($0.data)) })
                      == (try? data.manufacturerData()), "the view's manufacturer data differs")
            let serviceData = try? Dictionary(view.serviceData().map { ($0.uuid, Array($0.data)) }, uniquingKeysWith: { _, last in last })
            invariant(serviceData == (try? data.serviceData()), "the view's service data differs")
        } else {
            invariant(false, "the view refuses what the model accepts")
        }
        let encoded = data.encoded
        invariant((try? AdvertisingData(bytes: encoded)) == data, "advertising data does not survive re-encoding")
        _ = try? data.flags()
        _ = data.localName
        _ = data.isLocalNameComplete
        _ = try? data.txPowerLevel()
        _ = try? data.appearance()
        _ = try? data.advertisingInterval()
        _ = try? data.leRole()
        _ = try? data.serviceUUIDs()
        _ = try? data.solicitedServiceUUIDs()
        _ = try? data.manufacturerData()
        _ = try? data.serviceData()
        _ = try? data.uri()
        _ = try? data.encodedLegacy()
        let merged = data.merged(withScanResponse: data)
        invariant(merged.structures.count >= data.structures.count, "merging lost structures")
    }

    static func seeds() -> [[UInt8]] {
        [
            "02 01 06 06 09 6C 61 62 2D 31",                                  // flags, complete name
            "02 01 06 03 03 0F 18 05 08 6C 61 62 2D",                         // 16-bit service, shortened name
            "11 07 F0 DE BC 9A 78 56 34 12 78 56 34 12 78 56 34 12",          // 128-bit service
            "05 03 0D 18 0F 18 02 0A F4 03 19 41 03",                          // services, TX power, appearance
            "1A FF 4C 00 02 15 E2 C5 6D B5 DF FB 48 D2 B0 60 D0 F5 A7 10 96 E0 00 01 00 02 C5", // iBeacon
            "0B 16 AA FE 10 00 03 65 78 61 6D 70 6C 65",                      // Eddystone-URL service data
            "05 12 06 00 0C 00 03 1A 20 03 02 1C 00",                          // peripheral interval, interval, LE role
            "0B 24 17 2F 2F 65 78 61 6D 70 6C 65",                            // URI
            "05 15 0F 18 0D 18 03 14 0A 18",                                  // solicitations
            "00 00", "03 09 1B 5B",                                           // zero-length, control characters
        ].map(hex)
    }
}
