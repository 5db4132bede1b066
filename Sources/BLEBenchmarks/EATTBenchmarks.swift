import BLEHost
import BLEProtocols
import BLEVirtualController
import BLEWire
import Foundation

/// Enhanced ATT on the air-time model: the same concurrent reads over one ATT bearer (the unenhanced one: EATT off)
/// and over three (the unenhanced one and two EATT bearers), on an encrypted link (LE 2M, 251-octet packets, MTU 247).
/// One bearer carries one request per round trip; three carry three at once. Core 5.4, Vol 3, Part G, 2.5.
enum EATTBenchmarks {
    static let characteristics = (0..<30).map { BluetoothUUID(UInt16(0xFF01 + $0)) }

    /// `reads` concurrent reads of distinct 20-octet values at `interval` (1.25 ms units) over `bearers` bearers: the
    /// air time they took, and the connection events per read.
    static func concurrentReads(bearers: Int, reads: Int, interval: UInt16) async throws -> (seconds: Double, bearers: Int)? {
        let air = VirtualAir(clock: .realTime, airTime: AirTimeModel())
        defer { air.shutdown() }
        var configuration = HCIHost.Configuration()
        configuration.enhancedATTBearers = bearers - 1
        let peripheral = HCIHost(transport: air.addController(.init(aclBufferSize: 251, aclBufferCount: 8)).makeHostTransport())
        let central = HCIHost(transport: air.addController(.init(position: Position(x: 1), aclBufferSize: 251, aclBufferCount: 8)).makeHostTransport(),
                              configuration: configuration)
        try await peripheral.powerOn()
        try await central.powerOn()
        let server = GATTEngine(host: peripheral, database: GATTDatabase(services: [
            GATTServiceDefinition(uuid: 0xFF00, characteristics: characteristics.enumerated().map { index, uuid in
                GATTCharacteristicDefinition(uuid: uuid, properties: .read, value: [UInt8](repeating: UInt8(index), count: 20))
            }),
        ], enhancedATT: true))
        await server.start()
        guard let bench = try await AirTimeBenchmarks.benchLink(central: central, peripheral: peripheral, interval: interval)
        else { return nil }
        let (link, client) = (bench.link, bench.client)
        _ = try await central.pair(link)
        if bearers > 1 { _ = try await client.openEnhancedBearers(on: link, count: bearers - 1) }
        let open = await client.enhancedBearerCount(link) + 1
        var handles: [AttributeHandle] = []
        for uuid in characteristics.prefix(reads) {
            guard let handle = await server.database.valueHandle(of: uuid) else { return nil }
            handles.append(handle)
        }
        let start = air.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for handle in handles { group.addTask { _ = try await client.read(link, attribute: handle) } }
            try await group.waitForAll()
        }
        let elapsed = AirTimeBenchmarks.seconds(air.now - start)
        await central.powerOff()
        await peripheral.powerOff()
        return (elapsed, open)
    }

    /// Three rounds per interval, one bearer then three each round: the median time of each and the median of the
    /// rounds' ratios, with their spread. One bearer takes 2 connection events per read every time; three share
    /// events in a way that depends on how fast the hosts answer within an event, so the rounds differ.
    static func run() async throws {
        let reads = 30
        for interval in [UInt16(12), UInt16(24)] {
            var ones: [Double] = [], threes: [Double] = [], ratios: [Double] = []
            var bearers = (one: 0, three: 0)
            for _ in 0..<3 {
                guard let one = try await concurrentReads(bearers: 1, reads: reads, interval: interval),
                      let three = try await concurrentReads(bearers: 3, reads: reads, interval: interval) else { return }
                ones.append(one.seconds)
                threes.append(three.seconds)
                ratios.append(one.seconds / three.seconds)
                bearers = (one.bearers, three.bearers)
            }
            ones.sort()
            threes.sort()
            ratios.sort()
            let events = { (s: Double) in s / (Double(interval) * 0.00125) }
            print(String(format: "  %d concurrent reads of 20-octet values, interval %.1f ms, LE 2M, 251-octet packets, MTU 247, encrypted "
                         + "(median of 3 rounds): %d bearer %.0f ms (%.0f connection events), %d bearers %.0f ms (%.0f events): "
                         + "%.2fx faster (%.2f-%.2f)",
                         reads, Double(interval) * 1.25, bearers.one, ones[1] * 1000, events(ones[1]),
                         bearers.three, threes[1] * 1000, events(threes[1]), ratios[1], ratios[0], ratios[2]))
            if interval == 12 { print(String(format: "OURS_EATT_SPEEDUP=%.2f", ratios[1])) }
        }
    }
}
