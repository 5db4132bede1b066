import BLE
import BLEFiles
import BLEProfiles
import BLETestSupport
import BLEVirtualController
import Synchronization
import Testing

/// The BTHome v2 encoder against the format (bthome.io: device information byte, then object id and little-endian
/// value, objects in ascending id order), and the simulated sensor that advertises it.
@Suite(.timeLimit(.minutes(1))) struct BTHomeTests {
    @Test func encodesTheObjectsInOrderLittleEndian() {
        // 23.45 °C = 2345 = 0x0929, 51.50 % = 5150 = 0x141E, battery 93 % = 0x5D, packet 7.
        let reading = BTHomeReading(packetID: 7, batteryPercent: 93, temperatureHundredths: 2345, humidityHundredths: 5150)
        #expect(reading.serviceData == [0x40, 0x00, 0x07, 0x01, 0x5D, 0x02, 0x29, 0x09, 0x03, 0x1E, 0x14])
        #expect(reading.temperature == 23.45 && reading.humidity == 51.5)
        #expect(reading.description == "packet 7: 23.45 °C, 51.50 %, battery 93 %")
    }

    @Test func temperatureIsSignedAndBatteryAtMost100() {
        // -1.05 °C = -105 = 0xFF97 in two's complement; 0 %, packet 255; a battery above 100 % is sent as 100.
        let cold = BTHomeReading(packetID: 255, batteryPercent: 140, temperatureHundredths: -105, humidityHundredths: 0)
        #expect(cold.serviceData == [0x40, 0x00, 0xFF, 0x01, 0x64, 0x02, 0x97, 0xFF, 0x03, 0x00, 0x00])
        #expect(cold.description == "packet 255: -1.05 °C, 0.00 %, battery 140 %")
        let hot = BTHomeReading(packetID: 0, batteryPercent: 1, temperatureHundredths: 10000, humidityHundredths: 10000)
        #expect(hot.serviceData == [0x40, 0x00, 0x00, 0x01, 0x01, 0x02, 0x10, 0x27, 0x03, 0x10, 0x27])
    }

    @Test func advertisementIsFlagsServiceDataAndName() throws {
        let reading = BTHomeReading(packetID: 7, batteryPercent: 93, temperatureHundredths: 2345, humidityHundredths: 5150)
        let named = reading.advertisingData(name: "BTHome-Sim").encoded
        #expect(named == [0x02, 0x01, 0x06,
                          0x0E, 0x16, 0xD2, 0xFC, 0x40, 0x00, 0x07, 0x01, 0x5D, 0x02, 0x29, 0x09, 0x03, 0x1E, 0x14,
                          0x0B, 0x09] + Array("BTHome-Sim".utf8))
        // The default name does not fit whole in 31 bytes: shortened (AD type 0x08) to the 11 bytes left.
        let shortened = reading.advertisingData(name: SimulatedBTHomeSensor.defaultName)
        #expect(shortened.encoded.count == 31)
        #expect(shortened.encoded.suffix(13) == [0x0C, 0x08] + Array("SwiftBLE BT".utf8))
        #expect(try shortened.serviceData()[BTHome.serviceUUID] == reading.serviceData)
        #expect(reading.advertisingData(name: nil).encoded.count == 18)
    }

    /// Two sensors with one seed advertise the same readings, another seed others; a scanner hears the readings in
    /// the advertisements' service data, non-connectable.
    @Test func readingsFollowTheSeedAndAreHeard() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        var started: [(SimulatedBTHomeSensor, LEAddress)] = []
        for (index, seed) in [UInt64(3), 3, 4].enumerated() {
            let controller = air.addController(.init(position: Position(x: Double(index))))
            let manager = try await PeripheralManager(transport: controller.makeHostTransport(), deviceName: "BTHome \(index)")
            started.append((await SimulatedBTHomeSensor(manager: manager, name: "BTHome \(index)", seed: seed), LEAddress(controller.address, type: .public)))
        }
        let sensors = started.map(\.0)
        let first = started[0].1
        let central = try await Central(transport: air.addController(.init(position: Position(x: 5))).makeHostTransport())
        for sensor in sensors { try await sensor.start(tick: .milliseconds(20)) }
        let heard = try await withTimeout(10) {
            var heard: Set<BTHomeReading> = []
            for try await found in try await central.scan(allowDuplicates: true, timeout: .seconds(5)) where found.address == first {
                #expect(!found.isConnectable)
                let data = try #require(try found.advertisementData.serviceData()[BTHome.serviceUUID])
                #expect(data.count == 11 && data.first == BTHome.deviceInformation)
                guard data.count == 11 else { continue }
                heard.insert(BTHomeReading(packetID: data[2], batteryPercent: data[4],
                                           temperatureHundredths: Int16(bitPattern: UInt16(data[6]) | UInt16(data[7]) << 8),
                                           humidityHundredths: UInt16(data[9]) | UInt16(data[10]) << 8))
                if heard.count >= 5 { break }
            }
            for sensor in sensors {
                while await sensor.sent.count < 30 { try await Task.sleep(for: .milliseconds(10)) }
                await sensor.stop()
            }
            return heard
        }
        let runs = await sensors.asyncMap { Array(await $0.sent.prefix(30)) }
        // What was heard was advertised (the sensor keeps its last 256 readings, 5 s at this pace).
        let advertised = await sensors[0].sent
        #expect(heard.count >= 5)
        #expect(advertised.count < SimulatedBTHomeSensor.sentLimit && heard.allSatisfy(advertised.contains))
        #expect(runs[0] == runs[1])
        #expect(runs[0] != runs[2])
        #expect(runs[0].map(\.packetID) == Array(0..<30))
        #expect(runs[0].first == BTHomeReading(packetID: 0, batteryPercent: 100, temperatureHundredths: 2100, humidityHundredths: 4500))
        #expect(Set(runs[0].map(\.temperatureHundredths)).count > 5 && Set(runs[0].map(\.humidityHundredths)).count > 5)
        #expect(runs[0].allSatisfy { (1500...3000).contains($0.temperatureHundredths) && (3000...7000).contains($0.humidityHundredths) })
        // One percent less every 20 packets.
        #expect(runs[0][19].batteryPercent == 100 && runs[0][20].batteryPercent == 99)
        withExtendedLifetime(central) {}
    }
}

extension BTHomeTests {
    /// `ble serve --device bthome`: the device by name logs each reading it advertises, the fields the interop test
    /// compares with what bthome-ble decodes; it stays out of the embedded world.
    @Test func theDeviceByNameLogsEachReadingAdvertised() async throws {
        #expect(!EmbeddedDevices.devices.contains(.bthome) && EmbeddedDevices.devices.count == 13)
        #expect(SimulatedDevice.bthome.services.isEmpty && SimulatedDevice.bthome.defaultName == SimulatedBTHomeSensor.defaultName)
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let manager = try await PeripheralManager(transport: air.addController(.init()).makeHostTransport(), deviceName: "BTHome")
        let logged = LoggedFields()
        let running = try await SimulatedDevice.bthome.start(on: manager, name: "BTHome", tick: .milliseconds(20)) { _, fields in
            if fields["event"] == "bthome" { logged.entries.withLock { $0.append(fields) } }
        }
        let sensor = try #require(running.simulator as? SimulatedBTHomeSensor)
        try await withTimeout(5) {
            while logged.entries.withLock({ $0.count }) < 5 { try await Task.sleep(for: .milliseconds(10)) }
        }
        await running.stop()
        // The first five of each (a tick in flight when it stopped may add one to either after the other).
        let sent = Array(await sensor.sent.prefix(5))
        let entries = Array(logged.entries.withLock { $0 }.prefix(5))
        #expect(sent.count == 5 && entries.count == 5)
        for (entry, reading) in zip(entries, sent) {
            #expect(entry["packet_id"] == .integer(reading.packetID) && entry["battery"] == .integer(reading.batteryPercent))
            #expect(entry["temperature"] == .number(reading.temperature, decimals: 2) && entry["humidity"] == .number(reading.humidity, decimals: 2))
            #expect(entry["service_data"] == .string(reading.serviceData.hexString()))
        }
    }
}

/// The fields of log lines, appended from the device's tasks.
private final class LoggedFields: Sendable {
    let entries = Mutex<[[String: JSONValue]]>([])
}

extension Array {
    fileprivate func asyncMap<T>(_ transform: (Element) async -> T) async -> [T] {
        var result: [T] = []
        for element in self { result.append(await transform(element)) }
        return result
    }
}
