import BLEHost
import BLEProtocols
import BLEVirtualController
import BLEWire
import Foundation

/// The memory one peripheral and 16 connected, subscribed centrals take: the process's resident set before the
/// hosts exist and once every central has received a notification (all in one process on the virtual controller).
enum MemoryBenchmarks {
    static let notify = BluetoothUUID("0000FFF1-0000-1000-8000-00805F9B34FB") ?? 0

    /// VmRSS of this process, in kB.
    static func residentKB() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    static func run(centrals count: Int = 16) async throws {
        let before = residentKB()
        let air = VirtualAir(clock: .realTime)
        let peripheral = HCIHost(transport: air.addController(.init(aclBufferSize: 251, aclBufferCount: 8)).makeHostTransport())
        try await peripheral.powerOn()
        let server = GATTEngine(host: peripheral, database: GATTDatabase(services: [
            GATTServiceDefinition(uuid: 0xFFF0, characteristics: [GATTCharacteristicDefinition(uuid: notify, properties: [.notify])]),
        ]))
        await server.start()
        guard let address = await peripheral.ownAddress else { return }
        let valueHandle = await server.database.valueHandle(of: notify) ?? 0
        var hosts: [HCIHost] = []
        var clients: [GATTEngine] = []   // A host holds its engine weakly: these keep them.
        var streams: [AsyncStream<[UInt8]>] = []
        for n in 0..<count {
            try await peripheral.startAdvertising(.init(data: AdvertisingData(localName: "memory")))
            let central = HCIHost(transport: air.addController(.init(position: Position(x: 1 + Double(n) * 0.1), aclBufferSize: 251,
                                                                      aclBufferCount: 8)).makeHostTransport())
            try await central.powerOn()
            let link = try await central.connect(to: address)
            let client = await central.gattEngine()
            _ = try await client.exchangeMTU(link)
            streams.append(try await client.subscribe(link, valueHandle: valueHandle,
                                                      cccdHandle: AttributeHandle(rawValue: valueHandle.rawValue + 1)))
            hosts.append(central)
            clients.append(client)
        }
        while await peripheral.connections.count < count { try await Task.sleep(for: .milliseconds(5)) }
        for link in await peripheral.connections {
            while await !server.isSubscribed(link, valueHandle: valueHandle) { try await Task.sleep(for: .milliseconds(5)) }
        }
        _ = try await server.updateValue([UInt8](repeating: 1, count: 244), for: valueHandle)
        for stream in streams {
            for await _ in stream { break }
        }
        let after = residentKB()
        print(String(format: "  1 peripheral + %d centrals, connected, MTU 247, subscribed, one notification each: resident %.1f MB, %.1f MB more than before the hosts",
                     count, Double(after) / 1024, Double(after - before) / 1024))
        print("OURS_MEMORY_16_KB=\(after - before)")
        withExtendedLifetime(clients) {}
        for host in hosts { await host.powerOff() }
        await peripheral.powerOff()
        air.shutdown()
    }
}
