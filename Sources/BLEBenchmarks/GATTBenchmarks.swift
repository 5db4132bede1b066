import BLEHost
import BLEProtocols
import BLEVirtualController
import BLEWire
import Foundation

/// Two hosts on the in-process virtual controller (real-time clock): notification throughput at MTU 247 and the
/// number of ATT round trips a full discovery of the sample device takes.
enum GATTBenchmarks {
    static let notify = BluetoothUUID("0000FFF1-0000-1000-8000-00805F9B34FB") ?? 0

    static func run() async throws {
        for (size, count) in [(27, 8), (251, 8)] {
            let air = VirtualAir(clock: .realTime)
            let peripheral = HCIHost(transport: air.addController(.init(aclBufferSize: size, aclBufferCount: count)).makeHostTransport())
            let central = HCIHost(transport: air.addController(.init(position: Position(x: 1), aclBufferSize: size, aclBufferCount: count)).makeHostTransport())
            try await peripheral.powerOn()
            try await central.powerOn()
            let server = GATTEngine(host: peripheral, database: GATTDatabase(services: [
                GATTServiceDefinition(uuid: 0xFFF0, characteristics: [GATTCharacteristicDefinition(uuid: notify, properties: [.notify])]),
            ]))
            await server.start()
            try await peripheral.startAdvertising(.init(data: AdvertisingData(localName: "bench")))
            guard let address = await peripheral.ownAddress else { return }
            let link = try await central.connect(to: address)
            let client = GATTEngine(host: central)
            await client.start()
            _ = try await client.exchangeMTU(link.handle)
            guard let service = try await client.discoverPrimaryServices(link.handle, uuid: 0xFFF0).first,
                  let characteristic = try await client.discoverCharacteristics(link.handle, of: service).first,
                  let cccd = try await client.discoverDescriptors(link.handle, of: characteristic).first else { return }
            let values = try await client.subscribe(link.handle, valueHandle: characteristic.valueHandle, cccdHandle: cccd.handle)
            // The peripheral's link handle is its own; wait until its single link shows the subscription.
            while true {
                let handles = await peripheral.connections.map(\.handle)
                var subscribed = false
                for h in handles where await server.isSubscribed(h, valueHandle: characteristic.valueHandle) { subscribed = true }
                if subscribed { break }
                try await Task.sleep(for: .milliseconds(5))
            }
            let total = 5_000
            let payload = [UInt8](repeating: 0x5A, count: 244)
            let clock = ContinuousClock()
            let start = clock.now
            let receiver = Task { () -> Int in
                var n = 0
                for await _ in values {
                    n += 1
                    if n == total { break }
                }
                return n
            }
            for _ in 0..<total { _ = try await server.updateValue(payload, for: characteristic.valueHandle) }
            let received = await receiver.value
            let (s, a) = (clock.now - start).components
            let seconds = Double(s) + Double(a) / 1e18
            print(String(format: "  controller buffers %3d x %d: %d notifications of 244 bytes in %.2f s: %8.0f notifications/s, %6.2f MB/s payload",
                         size, count, received, seconds, Double(received) / seconds, Double(received * 244) / seconds / 1e6))
            await central.powerOff()
            await peripheral.powerOff()
            air.shutdown()
        }
    }

    /// Discovers everything on a device serving `database` and returns the ATT requests it took: service by service
    /// (services, each one's characteristics, each characteristic's descriptors, as CoreBluetooth-style callers do)
    /// when `whole` is false, with ``GATTEngine/discoverDatabase(_:descriptors:)`` when it is true. With `exchangeMTU`
    /// false the link stays at the default ATT_MTU of 23.
    static func discoveryRoundTrips(_ database: GATTDatabase, whole: Bool = false, exchangeMTU: Bool = true) async throws
        -> (requests: Int, services: Int, characteristics: Int, descriptors: Int) {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let peripheral = HCIHost(transport: air.addController(.init()).makeHostTransport())
        let central = HCIHost(transport: air.addController(.init(position: Position(x: 1))).makeHostTransport())
        try await peripheral.powerOn()
        try await central.powerOn()
        let server = GATTEngine(host: peripheral, database: database)
        await server.start()
        try await peripheral.startAdvertising(.init(data: AdvertisingData(localName: "bench")))
        guard let address = await peripheral.ownAddress else { return (0, 0, 0, 0) }
        let link = try await central.connect(to: address)
        let client = GATTEngine(host: central)
        await client.start()
        if exchangeMTU { _ = try await client.exchangeMTU(link.handle) }
        let before = await client.requestCount
        var characteristics = 0, descriptors = 0
        let services: [GATTService]
        if whole {
            let found = try await client.discoverDatabase(link.handle)
            services = found.map(\.service)
            characteristics = found.reduce(0) { $0 + $1.characteristics.count }
            descriptors = found.reduce(0) { $0 + $1.characteristics.reduce(0) { $0 + $1.descriptors.count } }
        } else {
            services = try await client.discoverPrimaryServices(link.handle)
            for service in services {
                let found = try await client.discoverCharacteristics(link.handle, of: service)
                characteristics += found.count
                for c in found { descriptors += try await client.discoverDescriptors(link.handle, of: c).count }
            }
        }
        let requests = await client.requestCount - before
        await central.powerOff()
        await peripheral.powerOff()
        withExtendedLifetime(server) {}
        return (requests, services.count, characteristics, descriptors)
    }

    /// A client with a ``GATTCache`` discovers a device serving `database`, disconnects, reconnects and discovers
    /// again: the two discoveries' round trips and times (MTU 247 exchanged first, not counted).
    static func cachedDiscovery(_ database: GATTDatabase) async throws
        -> (fresh: GATTDiscoveryReport, freshTime: Duration, cached: GATTDiscoveryReport, cachedTime: Duration) {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let peripheral = HCIHost(transport: air.addController(.init()).makeHostTransport())
        let central = HCIHost(transport: air.addController(.init(position: Position(x: 1))).makeHostTransport())
        try await peripheral.powerOn()
        try await central.powerOn()
        let server = GATTEngine(host: peripheral, database: database)
        await server.start()
        let client = GATTEngine(host: central)
        await client.start()
        await client.setCache(GATTCache())
        guard let address = await peripheral.ownAddress else { throw CancellationError() }
        var reports: [(GATTDiscoveryReport, Duration)] = []
        for _ in 0..<2 {
            try await peripheral.startAdvertising(.init(data: AdvertisingData(localName: "bench")))
            let link = try await central.connect(to: address)
            _ = try await client.exchangeMTU(link.handle)
            let clock = ContinuousClock()
            let start = clock.now
            let (_, report) = try await client.discoverDatabaseReporting(link.handle)
            reports.append((report, clock.now - start))
            let events = await central.events()
            try await central.disconnect(link)
            for await event in events { if case .disconnected = event { break } }
        }
        await central.powerOff()
        await peripheral.powerOff()
        withExtendedLifetime(server) {}
        return (reports[0].0, reports[0].1, reports[1].0, reports[1].1)
    }
}
