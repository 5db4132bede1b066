import BLEHost
import BLEProtocols
import BLEVirtualController
import BLEWire
import Foundation

/// Two hosts on an air with the air-time model (LE 2M both ways, 251-octet packets, MTU 247): notifications and
/// writes without response against the ceiling the model gives for the same link, and writes with response in
/// connection events per write.
enum AirTimeBenchmarks {
    static let notify = BluetoothUUID("0000FFF1-0000-1000-8000-00805F9B34FB") ?? 0
    static let write = BluetoothUUID("0000FFF2-0000-1000-8000-00805F9B34FB") ?? 0

    struct Setup {
        let air: VirtualAir
        let peripheral: HCIHost
        let central: HCIHost
        let server: GATTEngine
        let client: GATTEngine
        let link: HostConnection
        let notifyHandle: AttributeHandle
        let writeHandle: AttributeHandle
        let values: NotificationStream
    }

    /// The link the air-time benchmarks measure on: `central` connects to `peripheral` (whose GATT server runs)
    /// advertising as "bench", at `interval` (1.25 ms units); both switch to LE 2M with 251-octet packets and the MTUs
    /// are exchanged. Returns the link on both sides and the central's GATT client; `nil` when the peripheral has no
    /// address or its side of the link is not up.
    static func benchLink(central: HCIHost, peripheral: HCIHost, interval: UInt16) async throws
        -> (link: HostConnection, peripheralLink: HostConnection, client: GATTEngine)? {
        try await peripheral.startAdvertising(.init(data: AdvertisingData(localName: "bench")))
        guard let address = await peripheral.ownAddress else { return nil }
        let link = try await central.connect(to: address, connectionInterval: interval...interval)
        let client = GATTEngine(host: central)
        await client.start()
        _ = try await central.setPHY(link, transmit: .le2M, receive: .le2M)
        try await central.setDataLength(link, octets: 251)
        guard let peripheralLink = await peripheral.connections.first else { return nil }
        try await peripheral.setDataLength(peripheralLink, octets: 251)
        _ = try await client.exchangeMTU(link)
        return (link, peripheralLink, client)
    }

    /// Two hosts linked at `interval` (1.25 ms units) on LE 2M with 251-octet packets both ways and MTU 247, the
    /// central subscribed to the peripheral's notifications.
    static func connect(interval: UInt16, model: AirTimeModel) async throws -> Setup? {
        let air = VirtualAir(clock: .realTime, airTime: model)
        let peripheral = HCIHost(transport: air.addController(.init(aclBufferSize: 251, aclBufferCount: 8)).makeHostTransport())
        let central = HCIHost(transport: air.addController(.init(position: Position(x: 1), aclBufferSize: 251, aclBufferCount: 8)).makeHostTransport())
        try await peripheral.powerOn()
        try await central.powerOn()
        let server = GATTEngine(host: peripheral, database: GATTDatabase(services: [
            GATTServiceDefinition(uuid: 0xFFF0, characteristics: [
                GATTCharacteristicDefinition(uuid: notify, properties: [.notify]),
                GATTCharacteristicDefinition(uuid: write, properties: [.write, .writeWithoutResponse], permissions: [.writeable]),
            ]),
        ]))
        await server.start()
        guard let bench = try await AirTimeBenchmarks.benchLink(central: central, peripheral: peripheral, interval: interval)
        else { return nil }
        let (link, peripheralLink, client) = (bench.link, bench.peripheralLink, bench.client)
        let characteristics = try await client.discoverCharacteristics(
            link, of: GATTService(uuid: 0xFFF0, isPrimary: true, startHandle: 1, endHandle: 0xFFFF))
        guard let notifying = characteristics.first(where: { $0.uuid == notify }),
              let writable = characteristics.first(where: { $0.uuid == write }) else { return nil }
        let values = try await client.subscribe(link, valueHandle: notifying.valueHandle, cccdHandle: AttributeHandle(rawValue: notifying.valueHandle.rawValue + 1))
        while await !server.isSubscribed(peripheralLink, valueHandle: notifying.valueHandle) {
            try await Task.sleep(for: .milliseconds(5))
        }
        return Setup(air: air, peripheral: peripheral, central: central, server: server, client: client, link: link,
                     notifyHandle: notifying.valueHandle, writeHandle: writable.valueHandle, values: values)
    }

    static func seconds(_ d: Duration) -> Double {
        let (s, a) = d.components
        return Double(s) + Double(a) / 1e18
    }

    /// `count` notifications of 244 octets sent at once; the time from the first arrival to the last.
    static func notifications(_ s: Setup, count: Int) async throws -> Double {
        let payload = [UInt8](repeating: 0x5A, count: 244)
        let air = s.air
        let receiver = Task { () -> (Duration, Duration)? in
            var first: Duration?
            var n = 0
            for await _ in s.values {
                n += 1
                if first == nil { first = air.now }
                if n == count, let first { return (first, air.now) }
            }
            return nil
        }
        for _ in 0..<count { _ = try await s.server.updateValue(payload, for: s.notifyHandle) }
        guard let (first, last) = await receiver.value else { return 0 }
        return Double((count - 1) * 244 * 8) / seconds(last - first)
    }

    /// `count` writes without response of 244 octets sent at once; the time from the first arrival to the last.
    static func writesWithoutResponse(_ s: Setup, count: Int) async throws -> Double {
        let payload = [UInt8](repeating: 0xA5, count: 244)
        let air = s.air
        let events = await s.server.serverEvents()
        let receiver = Task { () -> (Duration, Duration)? in
            var first: Duration?
            var n = 0
            for await e in events {
                guard case .wrote(_, _, withResponse: false) = e.event else { continue }
                n += 1
                if first == nil { first = air.now }
                if n == count, let first { return (first, air.now) }
            }
            return nil
        }
        for _ in 0..<count { try await s.client.writeWithoutResponse(s.link, attribute: s.writeHandle, value: payload) }
        guard let (first, last) = await receiver.value else { return 0 }
        return Double((count - 1) * 244 * 8) / seconds(last - first)
    }

    /// `count` writes with response, one after the other: the connection events each took.
    static func eventsPerWrite(_ s: Setup, count: Int, interval: UInt16) async throws -> Double {
        let start = s.air.now
        for n in 0..<count { try await s.client.write(s.link, attribute: s.writeHandle, value: [UInt8(truncatingIfNeeded: n)]) }
        return seconds(s.air.now - start) / (Double(interval) * 0.00125) / Double(count)
    }

    static func run() async throws {
        let model = AirTimeModel()
        let phyCeiling = model.ceilingBitsPerSecond(octets: 251, payloadPerPacket: 244, phy: .le2M)
        print(String(format: "  LE 2M, 251-octet packets, MTU 247: the PHY's ceiling for 244-octet values is %.0f kbps", phyCeiling / 1000))
        var worst = 100.0
        for (interval, count) in [(UInt16(6), 600), (UInt16(40), 1_200)] {
            guard let s = try await connect(interval: interval, model: model) else { continue }
            // Both sides send 251-octet packets, so the central reserves room for one after each of its writes.
            let notifyCeiling = model.ceilingBitsPerSecond(octets: 251, payloadPerPacket: 244, phy: .le2M, interval: interval)
            let writeCeiling = model.ceilingBitsPerSecond(octets: 251, payloadPerPacket: 244, phy: .le2M, interval: interval,
                                                          direction: .centralToPeripheral(peripheralMaximumOctets: 251))
            let notified = try await notifications(s, count: count)
            let written = try await writesWithoutResponse(s, count: count)
            let events = try await eventsPerWrite(s, count: 20, interval: interval)
            let label = String(format: "interval %5.1f ms", Double(interval) * 1.25)
            print(String(format: "  %@: notifications %7.0f kbps of a modeled %7.0f (%.1f%%); writes without response %7.0f kbps of %7.0f (%.1f%%)",
                         label, notified / 1000, notifyCeiling / 1000, 100 * notified / notifyCeiling,
                         written / 1000, writeCeiling / 1000, 100 * written / writeCeiling))
            print(String(format: "  %@: writes with response: %.2f connection events each (the minimum is 2)", label, events))
            worst = min(worst, 100 * notified / notifyCeiling, 100 * written / writeCeiling)
            await s.central.powerOff()
            await s.peripheral.powerOff()
            s.air.shutdown()
        }
        print(String(format: "OURS_AIRTIME_WORST_PERCENT=%.1f", worst))
    }
}
