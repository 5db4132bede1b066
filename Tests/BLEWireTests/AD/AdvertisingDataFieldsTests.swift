@testable import BLEWire
import Foundation
import Testing

/// The one-pass reader gives what the view's accessors give, on every advertisement of the benchmark corpus and on
/// mutations of them (truncated, lengths changed, bytes flipped): the same fields when both read the data, a
/// failure from both when either fails.
@Suite struct AdvertisingDataFieldsTests {
    struct Fields: Equatable {
        var localName: String?
        var txPower: Int8?
        var uuids: [BluetoothUUID] = []
        var serviceData: [[UInt8]] = []
        var manufacturerData: [[UInt8]] = []
    }

    static func onePass(_ bytes: [UInt8]) -> Fields? {
        var fields = Fields()
        do {
            let (name, tx) = try AdvertisingDataFields.read(bytes, serviceUUID: { fields.uuids.append($0) }, serviceData: { uuid, data in
                fields.serviceData.append(Array(uuid.description.utf8) + [0] + (0..<data.count).map { data[$0] })
            }, manufacturerData: { company, data in
                fields.manufacturerData.append([UInt8(truncatingIfNeeded: company.rawValue), UInt8(company.rawValue >> 8)]
                                               + (0..<data.count).map { data[$0] })
            })
            fields.localName = name
            fields.txPower = tx
            return fields
        } catch {
            return nil
        }
    }

    static func viaView(_ bytes: [UInt8]) -> Fields? {
        guard let view = try? AdvertisingDataView(bytes) else { return nil }
        var fields = Fields(localName: view.localName)
        do {
            fields.txPower = try view.txPowerLevel()
            // The one-pass reader visits a UUID as often as it is listed: the lists' UUIDs in order, repeats kept.
            for s in view.structures {
                guard let width = s.type.serviceListWidth else { continue }
                guard s.payload.count % width == 0 else { return nil }
                var at = s.payload.lowerBound
                while at < s.payload.upperBound {
                    fields.uuids.append(view.uuid(at: at, width: width))
                    at += width
                }
            }
            try view.forEachServiceData { uuid, data in
                fields.serviceData.append(Array(uuid.description.utf8) + [0] + (0..<data.count).map { data[$0] })
            }
            try view.forEachManufacturerData { company, data in
                fields.manufacturerData.append([UInt8(truncatingIfNeeded: company.rawValue), UInt8(company.rawValue >> 8)]
                                               + (0..<data.count).map { data[$0] })
            }
        } catch {
            return nil
        }
        return fields
    }

    @Test("The one-pass reader agrees with the view on every corpus advertisement")
    func agreesOnTheCorpus() throws {
        let corpus = try AdvertisingDataViewTests.corpus()
        #expect(corpus.count > 100)
        var read = 0
        for (label, bytes) in corpus {
            let fields = Self.onePass(bytes)
            #expect(fields == Self.viaView(bytes), "\(label)")
            if fields != nil { read += 1 }
        }
        // The corpus is real advertising data: nearly all of it reads.
        #expect(read > corpus.count * 9 / 10, "\(read) of \(corpus.count)")
    }

    @Test("On mutated data the one-pass reader and the view read the same fields or both refuse")
    func agreesOnMutations() throws {
        var generator = FuzzTests.Generator(state: 0x5EED)
        var refused = 0
        var total = 0
        for (label, bytes) in try AdvertisingDataViewTests.corpus() where !bytes.isEmpty {
            for round in 0..<40 {
                var mutated = bytes
                switch round % 4 {
                case 0: mutated.removeLast(Int(generator.next() % UInt64(mutated.count)) + 1)
                case 1: mutated[Int(generator.next() % UInt64(mutated.count))] = UInt8(truncatingIfNeeded: generator.next())
                case 2: mutated.insert(UInt8(truncatingIfNeeded: generator.next() % 6), at: Int(generator.next() % UInt64(mutated.count)))
                default: mutated += (0..<Int(generator.next() % 8)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
                }
                let fields = Self.onePass(mutated)
                #expect(fields == Self.viaView(mutated), "\(label) round \(round): \(mutated.hexString())")
                total += 1
                if fields == nil { refused += 1 }
            }
        }
        // Both outcomes are exercised.
        #expect(refused > total / 10 && refused < total * 9 / 10, "\(refused) refused of \(total)")
    }
}
