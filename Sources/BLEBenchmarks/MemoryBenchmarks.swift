import BLEHost
import BLEProtocols
import BLEVirtualController
import BLEWire
import Foundation

/// The memory one peripheral and 16 connected, subscribed centrals take: the process's resident set before the
/// hosts exist and once every central has received a notification (all in one process on the virtual controller);
/// then 48 more centrals, the same way: what the resident set grows by per added central (and its controller) is
/// the marginal cost of a host, without the one-time costs the first hosts pay (code pages, runtime metadata, the
/// thread pool).
enum MemoryBenchmarks {
    static let notify = BluetoothUUID("0000FFF1-0000-1000-8000-00805F9B34FB") ?? 0

    /// VmRSS of this process, in kB.
    static func residentKB() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    static func run(centrals count: Int = 16, more: Int = 48) async throws {
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
        var streams: [NotificationStream] = []
        /// Connects `n` more subscribed centrals and waits until each has had one notification.
        func add(_ n: Int) async throws {
            let first = hosts.count
            var added: [NotificationStream] = []
            for i in first..<(first + n) {
                try await peripheral.startAdvertising(.init(data: AdvertisingData(localName: "memory")))
                let central = HCIHost(transport: air.addController(.init(position: Position(x: 1 + Double(i) * 0.1), aclBufferSize: 251,
                                                                          aclBufferCount: 8)).makeHostTransport())
                try await central.powerOn()
                let link = try await central.connect(to: address)
                let client = await central.gattEngine()
                _ = try await client.exchangeMTU(link)
                added.append(try await client.subscribe(link, valueHandle: valueHandle,
                                                        cccdHandle: AttributeHandle(rawValue: valueHandle.rawValue + 1)))
                hosts.append(central)
                clients.append(client)
            }
            while await peripheral.connections.count < hosts.count { try await Task.sleep(for: .milliseconds(5)) }
            for link in await peripheral.connections {
                while await !server.isSubscribed(link, valueHandle: valueHandle) { try await Task.sleep(for: .milliseconds(5)) }
            }
            _ = try await server.updateValue([UInt8](repeating: 1, count: 244), for: valueHandle)
            for stream in streams + added {
                for await _ in stream { break }
            }
            streams += added
        }
        try await add(count)
        let after = residentKB()
        print(String(format: "  1 peripheral + %d centrals, connected, MTU 247, subscribed, one notification each: resident %.1f MB, %.1f MB more than before the hosts",
                     count, Double(after) / 1024, Double(after - before) / 1024))
        print("OURS_MEMORY_16_KB=\(after - before)")
        try await add(more)
        let grown = residentKB()
        print(String(format: "  %d centrals more, the same way: resident %.1f MB, %.1f kB more per added central (host and controller)",
                     more, Double(grown) / 1024, Double(grown - after) / Double(more)))
        print("OURS_MEMORY_PER_ADDED_KB=\((grown - after) / more)")
        withExtendedLifetime(clients) {}
        for host in hosts { await host.powerOff() }
        await peripheral.powerOff()
        air.shutdown()
    }
}
