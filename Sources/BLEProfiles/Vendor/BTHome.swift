import BLE
import BLEFiles
import BLEWire

/// BTHome v2 (bthome.io): sensor readings broadcast as service data of the 16-bit UUID 0xFCD2, read by Home
/// Assistant's BTHome integration without a connection.
///
/// The service data is a device information byte (bit 0: encrypted; bit 2: sent on a trigger rather than at a
/// regular interval; bits 5–7: the version, 2) and then objects, each an object id followed by its value,
/// little-endian, in ascending order of object id. ``BTHomeReading`` encodes the objects the simulated sensor sends.
public enum BTHome {
    /// The service data UUID (0xFCD2).
    public static let serviceUUID = BluetoothUUID(0xFCD2)
    /// The device information byte of an unencrypted BTHome v2 packet sent at a regular interval: version 2 in bits
    /// 5–7 (0x40).
    public static let deviceInformation: UInt8 = 0x40
    /// The device information bit of a packet sent on a trigger (a button, a motion) rather than at a regular interval.
    public static let triggerBased: UInt8 = 0x04

    /// Object id 0x00: packet id (uint8), a counter a receiver uses to drop repeated packets.
    public static let packetIDObject: UInt8 = 0x00
    /// Object id 0x01: battery (uint8, 1 %).
    public static let batteryObject: UInt8 = 0x01
    /// Object id 0x02: temperature (sint16, 0.01 °C).
    public static let temperatureObject: UInt8 = 0x02
    /// Object id 0x03: humidity (uint16, 0.01 %).
    public static let humidityObject: UInt8 = 0x03
}

/// One BTHome v2 packet of a temperature and humidity sensor: packet id, battery, temperature and humidity, in the
/// resolutions BTHome gives them (whole percent, hundredths of a degree Celsius, hundredths of a percent).
///
/// ```swift
/// let reading = BTHomeReading(packetID: 7, batteryPercent: 93, temperatureHundredths: 2345, humidityHundredths: 5150)
/// reading.serviceData // 40 00 07 01 5D 02 29 09 03 1E 14
/// ```
public struct BTHomeReading: Sendable, Hashable, CustomStringConvertible {
    /// The packet id (object 0x00).
    public var packetID: UInt8
    /// The battery charge, 0…100 % (object 0x01; larger values are sent as 100).
    public var batteryPercent: UInt8
    /// The temperature in hundredths of a degree Celsius (object 0x02): 2345 is 23.45 °C.
    public var temperatureHundredths: Int16
    /// The relative humidity in hundredths of a percent (object 0x03): 5150 is 51.50 %.
    public var humidityHundredths: UInt16

    /// A reading.
    public init(packetID: UInt8, batteryPercent: UInt8, temperatureHundredths: Int16, humidityHundredths: UInt16) {
        self.packetID = packetID
        self.batteryPercent = batteryPercent
        self.temperatureHundredths = temperatureHundredths
        self.humidityHundredths = humidityHundredths
    }

    /// The temperature in degrees Celsius.
    public var temperature: Double { Double(temperatureHundredths) / 100 }
    /// The relative humidity in percent.
    public var humidity: Double { Double(humidityHundredths) / 100 }

    /// The service data after the UUID: the device information byte (``BTHome/deviceInformation``), then the packet
    /// id, battery, temperature and humidity objects, values little-endian (11 bytes).
    public var serviceData: [UInt8] {
        let temperature = UInt16(bitPattern: temperatureHundredths)
        return [BTHome.deviceInformation,
                BTHome.packetIDObject, packetID,
                BTHome.batteryObject, min(batteryPercent, 100),
                BTHome.temperatureObject, UInt8(truncatingIfNeeded: temperature), UInt8(truncatingIfNeeded: temperature >> 8),
                BTHome.humidityObject, UInt8(truncatingIfNeeded: humidityHundredths), UInt8(truncatingIfNeeded: humidityHundredths >> 8)]
    }

    /// The advertising data a BTHome sensor sends: Flags (LE General Discoverable, BR/EDR not supported), the service
    /// data of 0xFCD2 (18 bytes so far) and, when given, the local name in the 13 bytes left of a legacy
    /// advertisement: complete up to 11 bytes of UTF-8, shortened beyond (`SwiftBLE BTHome` is sent as `SwiftBLE BT`).
    public func advertisingData(name: String?) -> AdvertisingData {
        var data = AdvertisingData(flags: .leOnlyGeneralDiscoverable, serviceData: [(BTHome.serviceUUID, serviceData)])
        if let name { data.appendLocalName(name) }
        return data
    }

    /// The reading as `packet 7: 23.45 °C, 51.50 %, battery 93 %`.
    public var description: String {
        "packet \(packetID): \(Self.hundredths(Int(temperatureHundredths))) °C, \(Self.hundredths(Int(humidityHundredths))) %, battery \(batteryPercent) %"
    }

    /// `value` hundredths written with two decimals (`-1.05`, `23.40`).
    static func hundredths(_ value: Int) -> String {
        let magnitude = value.magnitude
        let cents = magnitude % 100
        return "\(value < 0 ? "-" : "")\(magnitude / 100).\(cents < 10 ? "0" : "")\(cents)"
    }
}

/// A simulated BTHome v2 temperature and humidity sensor: a broadcaster (non-connectable legacy advertising, no
/// GATT service of its own) whose advertisement carries a ``BTHomeReading`` and is replaced every tick by the next:
/// the packet id counts up, temperature and humidity wander (a seeded random walk: the same seed gives the same
/// readings), the battery drains by one percent every 20 packets.
public actor SimulatedBTHomeSensor {
    /// The name it advertises unless told otherwise.
    public static let defaultName = "SwiftBLE BTHome"
    /// The peripheral manager it advertises on.
    public let manager: PeripheralManager
    /// The advertised name.
    public let name: String
    /// The reading advertised now.
    public private(set) var reading: BTHomeReading
    /// The readings advertised so far, oldest first: the last ``sentLimit`` of them.
    public private(set) var sent: [BTHomeReading] = []
    /// How many of the readings advertised ``sent`` keeps.
    public static let sentLimit = 256
    var generator: SeededGenerator
    var ticker: Task<Void, Never>?
    var log: DeviceLog?

    /// A sensor on `manager` starting at 21.00 °C, 45.00 % and 100 % battery; `seed` fixes how its values wander. Call
    /// ``start(tick:log:)``.
    public init(manager: PeripheralManager, name: String = SimulatedBTHomeSensor.defaultName, seed: UInt64 = 1) async {
        self.manager = manager
        self.name = name
        generator = SeededGenerator(seed: seed)
        reading = BTHomeReading(packetID: 0, batteryPercent: 100, temperatureHundredths: 2100, humidityHundredths: 4500)
    }

    /// The reading after `reading`: the next packet id, temperature moved by −0.25…+0.25 °C within 15…30 °C,
    /// humidity by −0.50…+0.50 % within 30…70 %, the battery one percent lower every 20 packets (down to 1 %).
    static func next(after reading: BTHomeReading, using generator: inout SeededGenerator) -> BTHomeReading {
        let packet = reading.packetID &+ 1
        let temperature = min(3000, max(1500, Int(reading.temperatureHundredths) + Int.random(in: -25...25, using: &generator)))
        let humidity = min(7000, max(3000, Int(reading.humidityHundredths) + Int.random(in: -50...50, using: &generator)))
        let battery = packet % 20 == 0 ? max(1, reading.batteryPercent - 1) : reading.batteryPercent
        return BTHomeReading(packetID: packet, batteryPercent: battery, temperatureHundredths: Int16(temperature),
                             humidityHundredths: UInt16(humidity))
    }

    /// Advertises the first reading, then the next one every `tick`; with `log`, each reading advertised is logged
    /// (`"event":"bthome"` with `packet_id`, `temperature`, `humidity`, `battery` and the `service_data` in hex).
    public func start(tick: Duration = .seconds(1), log: DeviceLog? = nil) async throws {
        guard ticker == nil else { return }
        self.log = log
        try await advertise()
        ticker = standardTicker(every: tick) { [weak self] in await self?.step() ?? false }
    }

    /// Stops advertising.
    public func stop() async {
        ticker?.cancel()
        ticker = nil
        try? await manager.stopAdvertising()
    }

    /// Moves to the next reading and advertises it; returns whether to go on.
    func step() async -> Bool {
        reading = Self.next(after: reading, using: &generator)
        return (try? await advertise()) != nil
    }

    /// Advertises the current reading (replacing the previous advertisement at once) and logs it.
    func advertise() async throws {
        let data = reading.advertisingData(name: name)
        try await manager.startAdvertising(Advertisement(data: data, interval: .milliseconds(100), kind: .nonConnectable))
        sent.append(reading)
        if sent.count > Self.sentLimit { sent.removeFirst(sent.count - Self.sentLimit) }
        guard let log else { return }
        let hex = reading.serviceData.hexString()
        log("advertising BTHome \(reading) (service data \(hex))",
            ["event": "bthome", "packet_id": .integer(reading.packetID), "battery": .integer(reading.batteryPercent),
             "temperature": .number(reading.temperature, decimals: 2), "humidity": .number(reading.humidity, decimals: 2),
             "service_data": .string(hex)])
    }
}
