import BLE
import BLEProfiles
import Foundation
import Testing

/// `ble serve --device NAME` for each of the twelve simulated devices, as a process on a private air: a central
/// there finds it by its name and services, discovers them, reads a value and receives a notification or an
/// indication, and the device logs what the central did; `ble subscribe` against it prints the values decoded, as
/// text and as JSON. Then the embedded world: `ble scan` lists all twelve devices.
@Suite(.serialized, .timeLimit(.minutes(3))) struct ServeDevicesTests {
    /// What a device must show a central (written out here, not taken from the device table under test).
    struct Expected: Sendable, CustomTestStringConvertible {
        let device: String
        let name: String
        let services: [BluetoothUUID]
        /// A characteristic to read besides the Device Name (`nil`: the device has none readable).
        let read: BluetoothUUID?
        /// What to subscribe to, and the characteristic that notifies or indicates in it.
        let subscribe: [BluetoothUUID]
        /// Writes after subscribing (the glucose meter's report request).
        var writes: [(BluetoothUUID, [UInt8])] = []
        /// Text `ble subscribe` must print for a decoded value, and the JSON "type" of it.
        let decodedText: String
        let decodedType: String
        var testDescription: String { device }
    }

    static let scaleStream = BluetoothUUID("7D2E0002-5C3A-4B8E-9F41-5357424C4553") ?? 0
    static let labService = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF0") ?? 0

    static let devices: [Expected] = [
        Expected(device: "lab", name: "SwiftBLELab", services: [0x180F, 0x180D, 0x180A, labService], read: 0x2A29, subscribe: [0x2A37],
                 decodedText: " bpm", decodedType: "heart_rate_measurement"),
        Expected(device: "heart-rate", name: "SwiftBLE HRM", services: [0x180D, 0x180F, 0x180A], read: 0x2A38, subscribe: [0x2A37],
                 decodedText: " bpm, contact detected, energy ", decodedType: "heart_rate_measurement"),
        Expected(device: "battery", name: "SwiftBLE Battery", services: [0x180F, 0x180A], read: 0x2A19, subscribe: [0x2A19],
                 decodedText: "= battery ", decodedType: "battery_level"),
        Expected(device: "blood-pressure", name: "SwiftBLE BPM", services: [0x1810, 0x180A], read: 0x2A49, subscribe: [0x2A36],
                 decodedText: " mmHg", decodedType: "intermediate_cuff_pressure"),
        Expected(device: "thermometer", name: "SwiftBLE Thermometer", services: [0x1809, 0x180A], read: 0x2A1D, subscribe: [0x2A1E],
                 decodedText: " °C", decodedType: "intermediate_temperature"),
        Expected(device: "weight-scale", name: "SwiftBLE Weight", services: [0x181D, 0x180A], read: 0x2A9E, subscribe: [0x2A9D],
                 decodedText: " kg, BMI ", decodedType: "weight_measurement"),
        Expected(device: "body-composition", name: "SwiftBLE Body", services: [0x181D, 0x181B, 0x180A], read: 0x2A9B, subscribe: [0x2A9C],
                 decodedText: "body fat percent ", decodedType: "body_composition_measurement"),
        Expected(device: "glucose", name: "SwiftBLE Glucose", services: [0x1808, 0x180A], read: 0x2A51, subscribe: [0x2A18, 0x2A52],
                 writes: [(0x2A52, [0x01, 0x01])], decodedText: " mg/dL", decodedType: "glucose_measurement"),
        Expected(device: "current-time", name: "SwiftBLE Clock", services: [0x1805, 0x180A], read: 0x2A2B, subscribe: [0x2A2B],
                 decodedText: "/256 s", decodedType: "current_time"),
        Expected(device: "band", name: "SwiftBLE Band", services: [0xFEE0, 0x1802], read: 0xFF06, subscribe: [0xFF06],
                 decodedText: " steps", decodedType: "band_steps"),
        Expected(device: "piano", name: "SwiftBLE Piano", services: [0xFFE0, 0xFFE1], read: nil, subscribe: [0xFFE2],
                 decodedText: "note o", decodedType: "piano_keys"),
        Expected(device: "scale", name: "SwiftBLE Scale", services: [BluetoothUUID("7D2E0001-5C3A-4B8E-9F41-5357424C4553") ?? 0], read: nil,
                 subscribe: [scaleStream], decodedText: " kg, impedance ", decodedType: "scale_readings"),
    ]

    @Test(arguments: devices) func aCentralFindsReadsAndSubscribes(_ expected: Expected) async throws {
        let air = try DemoAir(ports: 2)
        defer { air.shutdown() }
        // A fast pace (100 ms ticks) so that every device changes a value within a second or two.
        let server = try DemoProcess("ble", arguments: ["serve", "--device", expected.device, "--hci", air.specification(0), "--json",
                                                        "--notify-interval", "100", "--run-for", "60"], hci: nil)
        let serving = await server.waitFor { $0.contains(#""event":"serving""#) }
        #expect(serving?.contains(#""name":"\#(expected.name)""#) == true, "\(serving ?? "no serving line")")

        let central = try await Central(transport: air.air.addController(.init(position: Position(x: 1))).makeHostTransport())
        var found: DiscoveredPeripheral?
        for try await device in try await central.scan(timeout: .seconds(10)) where device.name == expected.name {
            found = device
            break
        }
        let device = try #require(found, "\(expected.name) not found")
        #expect(Set(device.serviceUUIDs).isSuperset(of: expected.services.prefix(1)), "advertised \(device.serviceUUIDs)")
        let peripheral = try await central.connect(device, timeout: .seconds(10))
        let services = try await peripheral.discoverServices()
        #expect(Set(services.map(\.uuid)).isSuperset(of: expected.services), "\(services.map(\.uuid))")
        if expected.device == "weight-scale" { #expect(!services.map(\.uuid).contains(0x181B)) }
        var characteristics: [BluetoothUUID: GATTCharacteristic] = [:]
        for service in services {
            for c in try await peripheral.discoverCharacteristics(for: service) { characteristics[c.uuid] = characteristics[c.uuid] ?? c }
        }
        let nameValue = try await peripheral.readValue(for: try #require(characteristics[0x2A00]))
        #expect(String(decoding: nameValue, as: UTF8.self) == expected.name)
        if let read = expected.read {
            let value = try await peripheral.readValue(for: try #require(characteristics[read]))
            #expect(!value.isEmpty)
            #expect(try CharacteristicDecoder.decode(uuid: read, value: value) != nil)
        }
        // The first subscription's values; the others (the glucose meter's control point) only enabled.
        let first = try #require(characteristics[expected.subscribe[0]])
        let values = try await peripheral.notifications(for: first)
        for uuid in expected.subscribe.dropFirst() { _ = try await peripheral.notifications(for: try #require(characteristics[uuid])) }
        for (uuid, value) in expected.writes { try await peripheral.writeValue(value, for: try #require(characteristics[uuid]), type: .withResponse) }
        let received = await firstValue(of: values, within: .seconds(10))
        let value = try #require(received, "no notification or indication of \(first.uuid)")
        var decoder = CharacteristicDecoder()
        #expect(try decoder.decode(uuid: first.uuid, value: value) != nil)
        try await central.disconnect(peripheral)

        #expect(await server.waitFor { $0.contains(#""event":"subscription""#) && $0.contains(#""characteristic":"\#(first.uuid)""#) } != nil)
        if expected.device == "glucose" {
            #expect(await server.waitFor { $0.contains(#""event":"racp""#) && $0.contains(#""request":"report stored records""#) } != nil)
        }
        await central.powerOff()

        // `ble subscribe` from another controller of the air: decoded values, in text and in JSON.
        for json in [false, true] {
            var arguments = ["subscribe", expected.name] + expected.subscribe.map(\.description) + ["--count", "3", "--hci", air.specification(1)]
            arguments += expected.writes.map { ["--write", "\($0.0):\($0.1.hexString())"] }.joined()
            if json { arguments.append("--json") }
            let subscriber = try DemoProcess("ble", arguments: arguments, hci: nil)
            let (status, lines) = await subscriber.finish(timeout: .seconds(40))
            #expect(status == 0, "\(lines)")
            let valueLines = lines.filter { json ? $0.contains(#""index":"#) : $0.contains("#") }
            #expect(valueLines.count == 3, "\(lines)")
            for line in valueLines {
                if json {
                    let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
                    let decoded = try #require(object["decoded"] as? [String: Any], "no decoded value: \(line)")
                    if object["uuid"] as? String == first.uuid.description { #expect(decoded["type"] as? String == expected.decodedType, "\(line)") }
                } else {
                    #expect(line.contains(" = "), "not decoded: \(line)")
                }
            }
            // The decoded values of the first characteristic, in words (a scale notification may carry only part of a
            // frame: some value completes one).
            if !json { #expect(valueLines.contains { $0.contains(expected.decodedText) }, "\(valueLines)") }
        }
        _ = await server.finish(timeout: .milliseconds(100))
    }

    @Test func exploreDecodesWhatItReads() async throws {
        let text = try DemoProcess("ble", arguments: ["explore", "SwiftBLE HRM"], hci: nil)
        let (status, lines) = await text.finish()
        #expect(status == 0)
        #expect(lines.contains { $0.contains("2A38 (Body Sensor Location)") && $0.hasSuffix("= 01 = chest") }, "\(lines)")
        #expect(lines.contains { $0.contains("2A19 (Battery Level)") && $0.contains("= battery ") }, "\(lines)")
        #expect(lines.contains { $0.contains("2A50 (PnP ID)") && $0.contains("(Bluetooth SIG), product 0x") }, "\(lines)")
        let json = try DemoProcess("ble", arguments: ["explore", "SwiftBLE HRM", "--json"], hci: nil)
        let (jsonStatus, jsonLines) = await json.finish()
        #expect(jsonStatus == 0)
        let objects = jsonLines.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
        let location = try #require(objects.first { $0["uuid"] as? String == "2A38" })
        #expect((location["decoded"] as? [String: Any])?["name"] as? String == "chest", "\(location)")
        let pnp = try #require(objects.first { $0["uuid"] as? String == "2A50" })
        #expect((pnp["decoded"] as? [String: Any])?["vendor_id_source"] as? Int == 1, "\(pnp)")
    }

    @Test func scanOnTheEmbeddedWorldListsEveryDevice() async throws {
        let scan = try DemoProcess("ble", arguments: ["scan", "--timeout", "4", "--json"], hci: nil)
        let (status, lines) = await scan.finish()
        #expect(status == 0)
        let objects = lines.compactMap { line in (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] }
        let names = objects.compactMap { $0["name"] as? String }
        // The devices above and the phone (ANCSCommandTests), whose name is in its scan response.
        let expected = Set(Self.devices.map(\.name) + ["SwiftBLE Phone"])
        #expect(Set(names) == expected, "\(names)")
        // One line per device, its scan response merged in (the lab device's 'lab' and 'scanrsp' manufacturer data).
        #expect(names.count == objects.count && objects.count == expected.count, "\(lines)")
        let lab = try #require(objects.first { $0["name"] as? String == "SwiftBLELab" })
        #expect((lab["manufacturer"] as? [Any])?.count == 2, "\(lab)")

        // Every report with --duplicates: many per device.
        let duplicates = try DemoProcess("ble", arguments: ["scan", "--timeout", "2", "--duplicates"], hci: nil)
        let (duplicatesStatus, reports) = await duplicates.finish()
        #expect(duplicatesStatus == 0)
        #expect(reports.count > 3 * Self.devices.count, "\(reports.count) reports")
    }
}

/// The first value of `values`, or `nil` after `timeout`.
func firstValue(of values: NotificationStream, within timeout: Duration) async -> [UInt8]? {
    await withTaskGroup(of: [UInt8]?.self) { group in
        group.addTask {
            for await value in values { return value }
            return nil
        }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}
