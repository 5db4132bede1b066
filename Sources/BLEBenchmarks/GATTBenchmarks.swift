import BLEHost
import BLEProtocols
import BLETransport
import BLEVirtualController
import BLEWire
import Foundation

/// Two hosts on the in-process virtual controller (real-time clock): notification throughput at MTU 247 and the
/// number of ATT round trips a full discovery of the sample device takes.
enum GATTBenchmarks {
    static let notify = BluetoothUUID("0000FFF1-0000-1000-8000-00805F9B34FB") ?? 0

    /// The parameters a notification run had, as the hosts saw them: each host's LE ACL buffers (as it read them
    /// from its controller) and the ATT MTU the two agreed. No PHY is modelled without the air-time model.
    struct Parameters: CustomStringConvertible {
        var peripheral: ControllerCapabilities.Buffers?
        var central: ControllerCapabilities.Buffers?
        var mtu: Int

        /// The form scripts/bench compares with the peer's: `acl 251x8/251x8 mtu 247` (peripheral's, central's).
        var key: String {
            func buffers(_ b: ControllerCapabilities.Buffers?) -> String { b.map { "\($0.aclPacketLength)x\($0.aclPacketCount)" } ?? "?" }
            return "acl \(buffers(peripheral))/\(buffers(central)) mtu \(mtu)"
        }

        var description: String { "LE ACL buffers " + key.dropFirst(4).replacingOccurrences(of: " mtu ", with: ", ATT MTU ") }
    }

    static func run() async throws {
        for (size, count) in [(27, 8), (251, 8)] {
            let air = VirtualAir(clock: .realTime)
            let peripheral = air.addController(.init(aclBufferSize: size, aclBufferCount: count)).makeHostTransport()
            let central = air.addController(.init(position: Position(x: 1), aclBufferSize: size, aclBufferCount: count)).makeHostTransport()
            guard let run = try await notificationRate(peripheral: peripheral, central: central, total: 5_000) else { return }
            print(String(format: "  %@: %d notifications of 244 bytes in %.2f s: %8.0f notifications/s, %6.2f MB/s payload",
                         run.parameters.description, run.received, run.seconds, Double(run.received) / run.seconds,
                         Double(run.received * 244) / run.seconds / 1e6))
            air.shutdown()
        }
    }

    /// `BLEBenchmarks --only notify [--acl-size N] [--acl-count N]`: notifications in process with the given
    /// controller buffers (251 x 8 unless told), median of three runs of 10,000 — the figure scripts/bench sets
    /// against Bumble's LocalLink with its controllers given the same buffers, round by round. The parameters
    /// printed are the ones both hosts read from their controllers and the MTU they agreed.
    static func runInProcess(aclSize size: Int = 251, aclCount count: Int = 8) async throws {
        var rates: [Double] = []
        var parameters: [Parameters] = []
        for _ in 0..<3 {
            let air = VirtualAir(clock: .realTime)
            let peripheral = air.addController(.init(aclBufferSize: size, aclBufferCount: count)).makeHostTransport()
            let central = air.addController(.init(position: Position(x: 1), aclBufferSize: size, aclBufferCount: count)).makeHostTransport()
            guard let run = try await notificationRate(peripheral: peripheral, central: central, total: 10_000) else { return }
            rates.append(Double(run.received) / run.seconds)
            parameters.append(run.parameters)
            air.shutdown()
        }
        rates.sort()
        print(String(format: "  %@: %8.0f notifications/s (median of 3 runs of 10,000; spread %.0f–%.0f)",
                     parameters[0].description, rates[1], rates[0], rates[2]))
        print(String(format: "OURS_NOTIFY=%.0f", rates[1]))
        print("OURS_NOTIFY_PARAMS=\(Set(parameters.map(\.key)).sorted().joined(separator: " / "))")
    }

    /// `BLEBenchmarks --only tcp HOST:PORT HOST:PORT`: the same between two hosts each reaching its controller over
    /// H4/TCP (`ble controller --tcp …`, which scripts/bench starts; Bumble's hosts then use the same ports).
    static func runOverTCP(_ endpoints: [String]) async throws {
        let parsed = endpoints.compactMap { text -> (String, UInt16)? in
            guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else { return nil }
            return (String(text[..<colon]), port)
        }
        guard parsed.count == 2 else {
            print("usage: BLEBenchmarks --only tcp HOST:PORT HOST:PORT")
            return
        }
        var rates: [Double] = []
        var parameters: [Parameters] = []
        for _ in 0..<3 {
            let peripheral = try TCPTransport.connect(host: parsed[0].0, port: parsed[0].1)
            let central = try TCPTransport.connect(host: parsed[1].0, port: parsed[1].1)
            guard let run = try await notificationRate(peripheral: peripheral, central: central, total: 5_000) else { return }
            rates.append(Double(run.received) / run.seconds)
            parameters.append(run.parameters)
            // The controller server replaces a controller when its next client connects; give it the moment.
            try await Task.sleep(for: .milliseconds(300))
        }
        rates.sort()
        print(String(format: "  H4/TCP to `ble controller`, %@: %8.0f notifications/s (median of 3 runs of 5,000; spread %.0f–%.0f)",
                     parameters[0].description, rates[1], rates[0], rates[2]))
        print(String(format: "OURS_TCP_NOTIFICATIONS=%.0f", rates[1]))
        print("OURS_TCP_NOTIFICATIONS_PARAMS=\(Set(parameters.map(\.key)).sorted().joined(separator: " / "))")
    }

    /// `BLEBenchmarks --only discovery HOST:PORT NAME`: a central host over H4/TCP finds the device advertising
    /// `NAME`, then five times connects, exchanges MTU 247 and discovers the whole database (services,
    /// characteristics, descriptors): round trips and the median time, as Bumble's central is timed in scripts/bench.
    static func discoveryOverTCP(_ arguments: [String]) async throws {
        guard arguments.count >= 2, let colon = arguments[0].lastIndex(of: ":"),
              let port = UInt16(arguments[0][arguments[0].index(after: colon)...]) else {
            print("usage: BLEBenchmarks --only discovery HOST:PORT NAME")
            return
        }
        let name = arguments[1]
        let central = HCIHost(transport: try TCPTransport.connect(host: String(arguments[0][..<colon]), port: port))
        try await central.powerOn()
        var target: LEAddress?
        for try await report in try await central.scan() where report.view?.localName == name {
            target = report.address
            break
        }
        guard let target else { return }
        let client = GATTEngine(host: central)
        await client.start()
        var times: [Double] = []
        var requests = 0
        var counts = (services: 0, characteristics: 0, descriptors: 0)
        let clock = ContinuousClock()
        for _ in 0..<5 {
            let link = try await central.connect(to: target)
            _ = try await client.exchangeMTU(link)
            let start = clock.now
            let (services, report) = try await client.discoverDatabaseReporting(link)
            let (seconds, attoseconds) = (clock.now - start).components
            times.append(Double(seconds) * 1e3 + Double(attoseconds) / 1e15)
            requests = report.requests
            counts = (services.count, services.reduce(0) { $0 + $1.characteristics.count },
                      services.reduce(0) { $0 + $1.characteristics.reduce(0) { $0 + $1.descriptors.count } })
            let events = await central.events()
            try await central.disconnect(link)
            for await event in events { if case .disconnected = event { break } }
        }
        times.sort()
        print(String(format: "  %d services, %d characteristics, %d descriptors in %d ATT round trips; median %.2f ms (spread %.2f–%.2f, 5 connections)",
                     counts.services, counts.characteristics, counts.descriptors, requests, times[2], times[0], times[4]))
        print("OURS_DISCOVERY_ADDRESS=\(target.address) \(target.type == .public ? "public" : "random")")
        print(String(format: "OURS_DISCOVERY_MS=%.3f", times[2]))
        print("OURS_DISCOVERY_REQUESTS=\(requests)")
        await central.powerOff()
    }

    /// A peripheral host on `peripheral` notifying `total` 244-byte values to a central host on `central` (MTU 247):
    /// how many arrived, in how many seconds, and with which parameters.
    static func notificationRate(peripheral peripheralTransport: any HCITransport, central centralTransport: any HCITransport,
                                 total: Int) async throws -> (received: Int, seconds: Double, parameters: Parameters)? {
        let peripheral = HCIHost(transport: peripheralTransport)
        let central = HCIHost(transport: centralTransport)
        try await peripheral.powerOn()
        try await central.powerOn()
        let server = GATTEngine(host: peripheral, database: GATTDatabase(services: [
            GATTServiceDefinition(uuid: 0xFFF0, characteristics: [GATTCharacteristicDefinition(uuid: notify, properties: [.notify])]),
        ]))
        await server.start()
        try await peripheral.startAdvertising(.init(data: AdvertisingData(localName: "bench")))
        guard let address = await peripheral.ownAddress else { return nil }
        let link = try await central.connect(to: address)
        let client = GATTEngine(host: central)
        await client.start()
        let mtu = try await client.exchangeMTU(link)
        let parameters = Parameters(peripheral: await peripheral.capabilities.buffers, central: await central.capabilities.buffers, mtu: mtu)
        guard let service = try await client.discoverPrimaryServices(link, uuid: 0xFFF0).first,
              let characteristic = try await client.discoverCharacteristics(link, of: service).first,
              let cccd = try await client.discoverDescriptors(link, of: characteristic).first else { return nil }
        let values = try await client.subscribe(link, valueHandle: characteristic.valueHandle, cccdHandle: cccd.handle)
        // The peripheral's link is its own; wait until its single link shows the subscription.
        while true {
            let links = await peripheral.connections
            var subscribed = false
            for link in links where await server.isSubscribed(link, valueHandle: characteristic.valueHandle) { subscribed = true }
            if subscribed { break }
            try await Task.sleep(for: .milliseconds(5))
        }
        let payload = [UInt8](repeating: 0x5A, count: 244)
        let clock = ContinuousClock()
        let start = clock.now
        let receiver = Task { await consume(values, total: total) }
        try await produce(server, payload, valueHandle: characteristic.valueHandle, total: total)
        let received = await receiver.value
        let (s, a) = (clock.now - start).components
        await central.powerOff()
        await peripheral.powerOff()
        return (received, Double(s) + Double(a) / 1e18, parameters)
    }

    /// The central application: reads `total` values from its notification stream. (Named, as ``produce``, so
    /// scripts/bench-instructions can tell the application's share of a profile from the stack's.)
    @inline(never) static func consume(_ values: NotificationStream, total: Int) async -> Int {
        var n = 0
        for await _ in values {
            n += 1
            if n == total { break }
        }
        return n
    }

    /// The peripheral application: updates the value `total` times, each one notified to the subscribed central.
    @inline(never) static func produce(_ server: GATTEngine, _ payload: [UInt8], valueHandle: AttributeHandle, total: Int) async throws {
        for _ in 0..<total { _ = try await server.updateValue(payload, for: valueHandle) }
    }

    /// `BLEBenchmarks --only notify-count N [--acl-size N] [--acl-count N]`: `N` notifications in process and
    /// nothing else, untimed — the run scripts/bench-instructions profiles with callgrind (twice, with two counts,
    /// so the difference is the cost of the notifications alone, without start-up and connection).
    static func runCounted(_ total: Int, aclSize size: Int, aclCount count: Int) async throws {
        let air = VirtualAir(clock: .realTime)
        let peripheral = air.addController(.init(aclBufferSize: size, aclBufferCount: count)).makeHostTransport()
        let central = air.addController(.init(position: Position(x: 1), aclBufferSize: size, aclBufferCount: count)).makeHostTransport()
        guard let run = try await notificationRate(peripheral: peripheral, central: central, total: total) else { return }
        print("  \(run.parameters): \(run.received) notifications of 244 bytes")
        print("OURS_NOTIFY_COUNT=\(run.received)")
        print("OURS_NOTIFY_COUNT_PARAMS=\(run.parameters.key)")
        air.shutdown()
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
        if exchangeMTU { _ = try await client.exchangeMTU(link) }
        let before = await client.requestCount
        var characteristics = 0, descriptors = 0
        let services: [GATTService]
        if whole {
            let found = try await client.discoverDatabase(link)
            services = found.map(\.service)
            characteristics = found.reduce(0) { $0 + $1.characteristics.count }
            descriptors = found.reduce(0) { $0 + $1.characteristics.reduce(0) { $0 + $1.descriptors.count } }
        } else {
            services = try await client.discoverPrimaryServices(link)
            for service in services {
                let found = try await client.discoverCharacteristics(link, of: service)
                characteristics += found.count
                for c in found { descriptors += try await client.discoverDescriptors(link, of: c).count }
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
            _ = try await client.exchangeMTU(link)
            let clock = ContinuousClock()
            let start = clock.now
            let (_, report) = try await client.discoverDatabaseReporting(link)
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
