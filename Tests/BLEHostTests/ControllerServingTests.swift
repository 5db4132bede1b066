import BLEHost
import BLEProtocols
import BLETransport
import BLEVirtualController
import BLEWire
import Testing

/// One air, two ways of serving hosts at once: a host over TCP served on its reader thread (as `ble controller` does)
/// and a host over a pipe served by the controller's tasks. Whatever either side's handling makes for the other is
/// written: a reader thread writes what it caused for hosts served like itself, and wakes the others' writers.
@Suite(.timeLimit(.minutes(1))) struct ControllerServingTests {
    static let value = BluetoothUUID("5B1E5E4F-0000-4000-8000-00805F9B34FB") ?? 0

    /// Serves `controller` to the first host that connects to the returned server, on the transport's reader thread
    /// (as `ble controller` does).
    static func serveOverTCP(_ controller: VirtualController) throws -> H4TCPServer {
        let server = try H4TCPServer(host: "127.0.0.1", port: 0, startReading: false)
        Task {
            for await transport in server.connections {
                await controller.attach(transport)
                return
            }
        }
        return server
    }

    @Test func hostsServedOnReaderThreadsAndByTasksTalkBothWays() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        // The central's controller: TCP, served on the transport's reader thread.
        let central = air.addController(.init(aclBufferSize: 251, aclBufferCount: 4))
        let server = try Self.serveOverTCP(central)
        defer { server.close() }
        // The peripheral's controller: a pipe, served by tasks.
        let peripheralController = air.addController(.init(position: Position(x: 1), aclBufferSize: 251, aclBufferCount: 4))
        let (hostEnd, controllerEnd) = HCIPipe.makePair()
        Task { await peripheralController.attach(controllerEnd) }

        let peripheral = HCIHost(transport: hostEnd)
        let centralHost = HCIHost(transport: try TCPTransport.connect(host: "127.0.0.1", port: server.port))
        try await peripheral.powerOn()
        try await centralHost.powerOn()
        let engine = GATTEngine(host: peripheral, database: GATTDatabase(services: [
            GATTServiceDefinition(uuid: 0xFFF0, characteristics: [
                GATTCharacteristicDefinition(uuid: Self.value, properties: [.read, .write], permissions: [.readable, .writeable],
                                             value: [UInt8](repeating: 0x42, count: 200)),
            ]),
        ]))
        await engine.start()
        try await peripheral.startAdvertising(.init(data: AdvertisingData(flags: .leOnlyGeneralDiscoverable, localName: "P")))
        let link = try await centralHost.connect(to: LEAddress(peripheralController.address, type: .public), timeout: .seconds(5))
        let client = GATTEngine(host: centralHost)
        await client.start()
        #expect(try await client.exchangeMTU(link) == 247)
        let handle = try #require(await engine.database.valueHandle(of: Self.value))
        // Requests cross from the reader-thread side, responses from the task side, many times over.
        for n in 0..<100 {
            try await client.write(link, attribute: handle, value: [UInt8](repeating: UInt8(n), count: 200))
            #expect(try await client.read(link, attribute: handle) == [UInt8](repeating: UInt8(n), count: 200))
        }
        withExtendedLifetime(engine) {}
        await centralHost.powerOff()
        await peripheral.powerOff()
    }

    /// A peripheral host over TCP notifies 2,000 values through 4 controller buffers: its packets leave in its own
    /// steps (a socket's write, no drain task), its Number Of Completed Packets arrive in batches from the
    /// socket's inbox, and the central gets every value, in order.
    @Test func aPeripheralOverTCPNotifiesThroughFlowControlInOrder() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let peripheralController = air.addController(.init(aclBufferSize: 251, aclBufferCount: 4))
        let server = try Self.serveOverTCP(peripheralController)
        defer { server.close() }
        let centralController = air.addController(.init(position: Position(x: 1), aclBufferSize: 251, aclBufferCount: 4))
        let peripheral = HCIHost(transport: try TCPTransport.connect(host: "127.0.0.1", port: server.port))
        let centralHost = HCIHost(transport: centralController.makeHostTransport())
        try await peripheral.powerOn()
        try await centralHost.powerOn()
        let engine = GATTEngine(host: peripheral, database: GATTDatabase(services: [
            GATTServiceDefinition(uuid: 0xFFF0, characteristics: [
                GATTCharacteristicDefinition(uuid: Self.value, properties: [.notify], permissions: [], value: []),
            ]),
        ]))
        await engine.start()
        try await peripheral.startAdvertising(.init(data: AdvertisingData(flags: .leOnlyGeneralDiscoverable, localName: "P")))
        let link = try await centralHost.connect(to: LEAddress(peripheralController.address, type: .public), timeout: .seconds(5))
        let client = GATTEngine(host: centralHost)
        await client.start()
        #expect(try await client.exchangeMTU(link) == 247)
        let handle = try #require(await engine.database.valueHandle(of: Self.value))
        let service = try #require(try await client.discoverPrimaryServices(link, uuid: 0xFFF0).first)
        let characteristic = try #require(try await client.discoverCharacteristics(link, of: service, uuid: Self.value).first)
        let cccd = try #require(try await client.discoverDescriptors(link, of: characteristic).first { $0.uuid == 0x2902 })
        let values = try await client.subscribe(link, valueHandle: handle, cccdHandle: cccd.handle)
        let total = 2_000
        let consumer = Task {
            var next = 0, wrong = 0
            for await value in values {
                if value != [UInt8(next & 0xFF), UInt8(next >> 8)] + [UInt8](repeating: 0x5A, count: 242) { wrong += 1 }
                next += 1
                if next == total { break }
            }
            return (next, wrong)
        }
        for n in 0..<total {
            let sent = try await engine.updateValue([UInt8(n & 0xFF), UInt8(n >> 8)] + [UInt8](repeating: 0x5A, count: 242), for: handle)
            #expect(sent.count == 1)
        }
        let (received, wrong) = await consumer.value
        #expect(received == total)
        #expect(wrong == 0)
        #expect(await client.droppedNotificationCount == 0)
        await centralHost.powerOff()
        await peripheral.powerOff()
    }
}
