import BLEWire
import Foundation
import Testing

/// The in-place view answers as the owning model does, on every advertisement of the benchmark corpus and on
/// malformed data.
@Suite struct AdvertisingDataViewTests {
    /// `Benchmarks/advertisements.txt`: label and bytes of each line.
    static func corpus() throws -> [(label: String, bytes: [UInt8])] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Benchmarks/advertisements.txt")
        let text = try String(contentsOf: url, encoding: .utf8)
        return text.split(separator: "\n").compactMap { line in
            guard !line.hasPrefix("#") else { return nil }
            let parts = line.split(separator: "|", omittingEmptySubsequences: false)
            guard parts.count == 2 else { return nil }
            let hex = parts[1].trimmingCharacters(in: .whitespaces)
            return (parts[0].trimmingCharacters(in: .whitespaces), [UInt8](hex: hex) ?? [])
        }
    }

    func same<T: Equatable>(_ a: () throws -> T, _ b: () throws -> T, _ label: String, sourceLocation: SourceLocation = #_sourceLocation) {
        switch (Result(catching: a), Result(catching: b)) {
        case (.success(let x), .success(let y)): #expect(x == y, "\(label)", sourceLocation: sourceLocation)
        case (.failure, .failure): break
        case (let x, let y): Issue.record("\(label): view \(x), model \(y)", sourceLocation: sourceLocation)
        }
    }

    /// Every field of the view equals the model's, for each corpus entry.
    func agree(_ bytes: [UInt8], _ label: String) throws {
        let model = try AdvertisingData(bytes: bytes)
        let view = try AdvertisingDataView(bytes)
        #expect(view.model == model, "\(label)")
        #expect(view.localName == model.localName, "\(label)")
        same({ try view.flags() }, { try model.flags() }, label)
        same({ try view.txPowerLevel() }, { try model.txPowerLevel() }, label)
        same({ try view.appearance() }, { try model.appearance() }, label)
        same({ Array(try view.serviceUUIDs()) }, { try model.serviceUUIDs() }, label)
        same({ try view.manufacturerData().map { ManufacturerData(companyID: $0.companyID, data: Array($0.data)) } }, { try model.manufacturerData() }, label)
        same({ Dictionary(try view.serviceData().map { ($0.uuid, Array($0.data)) }, uniquingKeysWith: { _, last in last }) },
             { try model.serviceData() }, label)
        // The visitors yield what the sequences yield, and throw where they throw, before calling the body.
        same({ var seen: [BluetoothUUID] = []; try view.forEachServiceUUID { seen.append($0) }; return seen }, { try model.serviceUUIDs() }, label)
        same({ var seen: [ManufacturerData] = []
               try view.forEachManufacturerData { company, data in
                   seen.append(ManufacturerData(companyID: company, data: (0..<data.count).map { data[$0] }))
               }
               return seen }, { try model.manufacturerData() }, label)
        same({ var seen: [BluetoothUUID: [UInt8]] = [:]
               try view.forEachServiceData { uuid, data in seen[uuid] = (0..<data.count).map { data[$0] } }
               return seen }, { try model.serviceData() }, label)
        var called = false
        let uuidsFail = (try? model.serviceUUIDs()) == nil, makersFail = (try? model.manufacturerData()) == nil
        let dataFail = (try? model.serviceData()) == nil
        if uuidsFail { #expect((try? view.forEachServiceUUID { _ in called = true }) == nil, "\(label)") }
        if makersFail { #expect((try? view.forEachManufacturerData { _, _ in called = true }) == nil, "\(label)") }
        if dataFail { #expect((try? view.forEachServiceData { _, _ in called = true }) == nil, "\(label)") }
        #expect(!called, "\(label): a visitor called its body before throwing")
        for uuid in (try? model.serviceUUIDs()) ?? [] { #expect(view.advertises(uuid), "\(label) \(uuid)") }
        for (uuid, data) in (try? model.serviceData()) ?? [:] { #expect(view.serviceData(for: uuid).map(Array.init) == data, "\(label)") }
    }

    @Test func theViewAgreesWithTheModelOnTheCorpus() throws {
        let corpus = try Self.corpus()
        #expect(corpus.count >= 75)
        for (label, bytes) in corpus { try agree(bytes, label) }
        // The corpus exercises every accessor.
        let views = try corpus.map { try AdvertisingDataView($0.bytes) }
        #expect(views.contains { $0.localName != nil } && views.contains { (try? $0.serviceUUIDs().first { _ in true }) != nil })
        #expect(views.contains { (try? $0.serviceData())?.first { _ in true } != nil }
            && views.contains { (try? $0.manufacturerData())?.first { _ in true } != nil })
    }

    @Test func malformedDataFailsOrIsReadAsTheModelReadsIt() throws {
        // A structure running past the end: both refuse, with the same kind of error.
        for bytes: [UInt8] in [[0x05, 0x09, 0x41], [0x02], [0x03, 0xFF, 0x4C]] {
            #expect(throws: WireError.self) { try AdvertisingDataView(bytes) }
            #expect(throws: WireError.self) { try AdvertisingData(bytes: bytes) }
        }
        // A zero length ends the significant part; what follows is padding.
        let padded: [UInt8] = [0x02, 0x01, 0x06, 0x00, 0x05, 0xFF, 0xFF]
        let view = try AdvertisingDataView(padded)
        #expect(view.end == 3 && Array(view.structures).count == 1)
        try agree(padded, "padded")
        // Malformed payloads: the accessors throw as the model's do.
        for bytes: [UInt8] in [[0x03, 0x0A, 0x01, 0x02], [0x04, 0x03, 0x0D, 0x18, 0x0F], [0x02, 0xFF, 0x4C], [0x02, 0x16, 0xAA], [0x01, 0x19],
                               // A good structure of a kind before a malformed one of the same kind: the whole kind throws.
                               [0x03, 0x03, 0x0D, 0x18, 0x04, 0x03, 0x0D, 0x18, 0x0F], [0x04, 0xFF, 0x4C, 0x00, 0x01, 0x02, 0xFF, 0x4C],
                               [0x04, 0x16, 0xAA, 0xFE, 0x01, 0x03, 0x20, 0x01, 0x02], [0x10, 0x21] + [UInt8](repeating: 7, count: 15)] {
            try agree(bytes, "malformed \(bytes.hexString())")
        }
        // Extended advertising data (up to 1650 bytes): many structures.
        var long: [UInt8] = []
        for i in 0..<206 { long += [0x03, 0x03, UInt8(i % 200), 0x18, 0x03, 0xFF, 0x4C, UInt8(i)] }
        #expect(long.count == 1648)
        try agree(long, "extended")
        #expect(Array(try AdvertisingDataView([]).structures).isEmpty)
    }

    @Test func duplicateUUIDsAreListedOnceInFirstSeenOrder() throws {
        let bytes: [UInt8] = [0x05, 0x03, 0x0D, 0x18, 0x0F, 0x18, 0x05, 0x02, 0x0F, 0x18, 0x0A, 0x18, 0x03, 0x03, 0x0D, 0x18]
        #expect(Array(try AdvertisingDataView(bytes).serviceUUIDs()) == [0x180D, 0x180F, 0x180A])
        var visited: [BluetoothUUID] = []
        try AdvertisingDataView(bytes).forEachServiceUUID { visited.append($0) }
        #expect(visited == [0x180D, 0x180F, 0x180A])
        // 128-bit UUIDs are read in the wire's little-endian order, and deduplicated too.
        let uuid128 = try #require(BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E"))
        let wire = Array(uuid128.bigEndianBytes.reversed())
        let twice = try AdvertisingDataView([0x11, 0x07] + wire + [0x11, 0x06] + wire + [0x03, 0x02, 0x0F, 0x18])
        visited = []
        try twice.forEachServiceUUID { visited.append($0) }
        let sequenced = Array(try twice.serviceUUIDs())
        #expect(visited == [uuid128, 0x180F] && sequenced == [uuid128, 0x180F])
        // A complete name wins over a shortened one, whichever comes first.
        let names: [UInt8] = [0x03, 0x08, 0x41, 0x42, 0x04, 0x09, 0x41, 0x42, 0x43]
        #expect(try AdvertisingDataView(names).localName == "ABC")
    }
}
