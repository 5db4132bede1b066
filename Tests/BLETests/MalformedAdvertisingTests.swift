import BLE
import BLEHost
import BLEVirtualController
import BLEWire
import Foundation
import Testing

/// Advertisers on the virtual air sending malformed advertising data (bare controllers, no host: the bytes go out as
/// given), and a central scanning through the whole stack: every device is reported, with the structures before the
/// fault; names with control characters arrive intact in the data and escaped for a terminal; a well-formed
/// advertiser among them is found as usual.
@Suite(.timeLimit(.minutes(1))) struct MalformedAdvertisingTests {
    static let cases: [(label: String, bytes: [UInt8])] = [
        ("zero length first", [0x00, 0x02, 0x01, 0x06]),
        ("overrun after flags", [0x02, 0x01, 0x06, 0x09, 0x09, 0x61, 0x62]),
        ("length 255", [0xFF, 0x09, 0x61]),
        ("type only", [0x02, 0x01, 0x06, 0x01]),
        ("control characters", [0x02, 0x01, 0x06, 0x0B, 0x09, 0x45, 0x76, 0x1B, 0x5B, 0x32, 0x4A, 0x0A, 0x58, 0x0D, 0x07]),
        ("bad UTF-8 name", [0x04, 0x09, 0xC3, 0x28, 0xFF]),
        ("short service list", [0x04, 0x03, 0x0F, 0x18, 0x0D]),
        ("all zero", Array(repeating: 0, count: 31)),
    ]

    @Test func everyDeviceIsReportedWithWhatCouldBeRead() async throws {
        let air = VirtualAir(clock: .realTime, seed: 5)
        defer { air.shutdown() }
        var addresses: [BluetoothAddress: String] = [:]
        for (index, entry) in (Self.cases + [("good", AdvertisingData(flags: .leOnlyGeneralDiscoverable, localName: "Good").encoded)]).enumerated() {
            let c = air.addController(.init(position: Position(x: 1 + Double(index) * 0.3)), buffered: true)
            c.receive(fromHost: .command(HCILESetAdvertisingParameters(intervalMin: 0x20, intervalMax: 0x20,
                                                                       advertisingType: .nonConnectableUndirected).packet))
            c.receive(fromHost: .command(HCILESetAdvertisingData(data: entry.1).packet))
            c.receive(fromHost: .command(HCILESetAdvertisingEnable(isEnabled: true).packet))
            _ = c.drainToHost()
            addresses[c.address] = entry.0
        }
        let host = HCIHost(transport: air.addController(.init()).makeHostTransport())
        try await host.powerOn()
        var reports: [String: AdvertisementReport] = [:]
        let stream = try await host.scan(.init(active: false, filterDuplicates: false))
        for try await report in stream {
            if let label = addresses[report.address.address] { reports[label] = report }
            if reports.count == addresses.count { break }
        }
        await host.stopScan()
        #expect(Set(reports.keys) == Set(addresses.values))
        for (label, bytes) in Self.cases { #expect(reports[label]?.rawData == bytes, "\(label)") }
        // The structures before the fault are kept.
        #expect(reports["overrun after flags"]?.data.structures == [ADStructure(type: .flags, data: [0x06])])
        #expect(reports["type only"]?.data.structures == [ADStructure(type: .flags, data: [0x06])])
        #expect(reports["zero length first"]?.data.structures == [])
        #expect(reports["length 255"]?.data.structures == [])
        #expect(reports["all zero"]?.data.structures == [])
        #expect(reports["short service list"]?.data.structures.count == 1)
        #expect((try? reports["short service list"]?.data.serviceUUIDs()) == nil, "a 3-octet list of 16-bit UUIDs is refused")
        // A name with control characters is kept as sent, and shown escaped.
        let name = try #require(reports["control characters"]?.data.localName)
        #expect(name == "Ev\u{1B}[2J\nX\r\u{07}")
        #expect(!name.escapingControlCharacters.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F })
        // Invalid UTF-8 is repaired, not a crash.
        #expect(reports["bad UTF-8 name"]?.data.localName?.contains("\u{FFFD}") == true)
        #expect(reports["good"]?.data.localName == "Good")
    }

    @Test func theValidPrefixIsWhatTheStrictParserAccepts() throws {
        let good = AdvertisingData(flags: .leOnlyGeneralDiscoverable, localName: "x").encoded
        #expect(AdvertisingData(validPrefixOf: good) == (try AdvertisingData(bytes: good)))
        #expect(AdvertisingData(validPrefixOf: good + [0x05, 0x09]).structures == (try AdvertisingData(bytes: good)).structures)
        #expect(AdvertisingData(validPrefixOf: good + [0x00, 0x05, 0x09]) == (try AdvertisingData(bytes: good + [0x00, 0x05, 0x09])))
        #expect(AdvertisingData(validPrefixOf: []).structures.isEmpty)
    }

    /// A report carries the bytes and decodes them when read: the model (or the valid prefix), the in-place view
    /// (none for malformed bytes); a model given or set takes precedence and takes part in equality.
    @Test func reportsDecodeTheirBytesWhenRead() throws {
        let address = LEAddress(BluetoothAddress(0xC000_0000_0001), type: .random)
        let good = AdvertisingData(flags: .leOnlyGeneralDiscoverable, localName: "x", serviceUUIDs: [0x180D]).encoded
        var report = AdvertisementReport(address: address, rssi: -40, eventType: .advInd, rawData: good)
        #expect(report.data == (try AdvertisingData(bytes: good)) && report.view?.localName == "x")
        let broken = AdvertisementReport(address: address, rssi: -40, eventType: .advInd, rawData: good + [0x05, 0x09])
        #expect(broken.data.localName == "x" && broken.view == nil)
        // Equal bytes, equal reports; a model set explicitly is what `data` then answers, and is compared.
        let twin = AdvertisementReport(address: address, rssi: -40, eventType: .advInd, rawData: good)
        #expect(report == twin && report.hashValue == twin.hashValue)
        report.data = AdvertisingData(localName: "y")
        #expect(report.data.localName == "y" && report != twin)
        #expect(report == AdvertisementReport(address: address, rssi: -40, eventType: .advInd, data: AdvertisingData(localName: "y"), rawData: good))
    }
}
