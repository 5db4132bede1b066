import BLE
import BLEFixtures
import BLEHost
import BLEProtocols
import BLETestSupport
import BLEVirtualController
import Testing

@Suite(.timeLimit(.minutes(1))) struct BLEAPITests {
    static let service = BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E") ?? 0
    static let rx = BluetoothUUID("6E400002-B5A3-F393-E0A9-E50E24DCCA9E") ?? 0
    static let tx = BluetoothUUID("6E400003-B5A3-F393-E0A9-E50E24DCCA9E") ?? 0

    /// A peripheral manager publishing a UART-like service, advertising it with its name in the scan response.
    func peripheral(_ air: VirtualAir) async throws -> (PeripheralManager, VirtualController) {
        let controller = air.addController(.init())
        let manager = try await PeripheralManager(transport: controller.makeHostTransport(), deviceName: "UART")
        try await publishUART(on: manager)
        return (manager, controller)
    }

    /// The UART-like service, advertised with its name in the scan response.
    func publishUART(on manager: PeripheralManager) async throws {
        try await manager.add(GATTServiceDefinition(uuid: Self.service, characteristics: [
            GATTCharacteristicDefinition(uuid: Self.rx, properties: [.write, .writeWithoutResponse], permissions: [.writeable]),
            GATTCharacteristicDefinition(uuid: Self.tx, properties: [.read, .notify], value: Array("ready".utf8)),
        ]))
        try await manager.startAdvertising(name: "A UART with a long name", serviceUUIDs: [Self.service])
    }

    /// Two devices, the peripheral ("UART") publishing the UART-like service, the central `distance` metres away.
    func uart(distance: Double = 1) async throws -> TwoDevices {
        let devices = try await TwoDevices(peripheralName: "UART", distance: distance)
        try await publishUART(on: devices.peripheral)
        return devices
    }

    @Test func scanFiltersOnServicesAndMergesTheScanResponse() async throws {
        let devices = try await uart()
        defer { devices.shutdown() }
        let central = devices.central
        #expect(await central.state == .poweredOn)
        let results = try await central.scan(services: [Self.service])
        let seen = try await withTimeout { () async throws -> [DiscoveredPeripheral] in
            var out: [DiscoveredPeripheral] = []
            for try await p in results {
                out.append(p)
                if p.name != nil { return out }
            }
            return out
        }
        // First the advertisement (service UUID, no name: it did not fit), then the same device with its scan response.
        #expect(seen.count == 2)
        #expect(seen.first?.name == nil && seen.last?.name == "A UART with a long name")
        #expect(seen.last?.serviceUUIDs == [Self.service])
        #expect(seen.allSatisfy { $0.isConnectable })
        // A filter on another service sees nothing.
        await central.stopScan()
        let none = try await central.scan(services: [0x180D])
        let sawAny = Task { () -> Bool in
            do { for try await _ in none { return true } } catch {}
            return false
        }
        try await Task.sleep(for: .milliseconds(500))
        sawAny.cancel()
        #expect(await sawAny.value == false)
    }

    @Test func centralAndPeripheralManagerEndToEnd() async throws {
        let devices = try await uart(distance: 2)
        defer { devices.shutdown() }
        let manager = devices.peripheral, central = devices.central
        let requests = await manager.requests()
        let remote = try await devices.connect()
        #expect(try await remote.exchangeMTU() == 247)
        #expect(await remote.maximumWriteValueLength(for: .withoutResponse) == 244)
        let services = try await remote.discoverServices([Self.service])
        let characteristics = try await remote.discoverCharacteristics(for: try #require(services.first))
        let rx = try #require(characteristics.first { $0.uuid == Self.rx })
        let tx = try #require(characteristics.first { $0.uuid == Self.tx })
        #expect(try await remote.readValue(for: tx) == Array("ready".utf8))
        try await remote.writeValue(Array("ping".utf8), for: rx, type: .withResponse)
        let write = try await withTimeout { () async throws -> PeripheralRequest in
            for await r in requests { if case .write = r.kind { return r } }
            throw TimedOut()
        }
        #expect(write.kind == .write(characteristic: Self.rx, handle: rx.valueHandle, value: Array("ping".utf8), withResponse: true))
        let centralAddress = await central.adapter.address?.address
        #expect(write.central.peer.address == centralAddress)
        let values = try await remote.notifications(for: tx)
        var iterator = values.makeAsyncIterator()
        // Wait until the subscription is in place on the peripheral, then push.
        for _ in 0..<100 {
            if try await !manager.updateValue(Array("pong".utf8), for: Self.tx).isEmpty { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(await iterator.next() == Array("pong".utf8))
        #expect(await manager.value(of: Self.tx) == Array("pong".utf8))
        // RSSI at 2 m: −(40 + 20·log10 2) ≈ −46 dBm.
        #expect(try await remote.readRSSI() == -46)
        let events = await central.connectionEvents()
        try await central.disconnect(remote)
        for await e in events { if case .disconnected = e { break } }
    }

    @Test func sixteenCentralsWriteAtOnceEachAttributed() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let (manager, pc) = try await peripheral(air)
        let requests = await manager.requests()
        var remotes: [(Central, RemotePeripheral, GATTCharacteristic)] = []
        for i in 0..<16 {
            let central = try await Central(transport: air.addController(.init(position: Position(x: 1, y: Double(i)))).makeHostTransport())
            try await manager.startAdvertising(name: "UART", serviceUUIDs: [Self.service])
            let remote = try await central.connect(LEAddress(pc.address, type: .public), timeout: .seconds(5))
            let service = try #require(try await remote.discoverServices([Self.service]).first)
            let rx = try #require(try await remote.discoverCharacteristics([Self.rx], for: service).first)
            remotes.append((central, remote, rx))
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (i, (_, remote, rx)) in remotes.enumerated() {
                group.addTask { try await remote.writeValue(Array("central-\(i)".utf8), for: rx, type: .withResponse) }
            }
            try await group.waitForAll()
        }
        let byAddress = try await withTimeout { () async throws -> [BluetoothAddress: String] in
            var out: [BluetoothAddress: String] = [:]
            for await r in requests {
                if case .write(_, _, let value, _) = r.kind { out[r.central.peer.address] = String(decoding: value, as: UTF8.self) }
                if out.count == 16 { break }
            }
            return out
        }
        for (i, (central, _, _)) in remotes.enumerated() {
            let address = try #require(await central.adapter.address?.address)
            #expect(byAddress[address] == "central-\(i)", "central \(i)")
        }
    }
}

@Suite(.timeLimit(.minutes(1))) struct ReconnectionTests {
    /// The link is lost (the peripheral moves out of range: supervision timeout); the central reconnects with its
    /// policy once it is back and the same notification stream goes on.
    @Test func reconnectsAndRestoresSubscriptions() async throws {
        let devices = try await BLEAPITests().uart()
        defer { devices.shutdown() }
        let manager = devices.peripheral, pc = devices.peripheralController, central = devices.central
        let remote = try await central.connect(LEAddress(pc.address, type: .public), timeout: .seconds(5),
                                               reconnect: ReconnectPolicy(maximumAttempts: 20, initialDelay: .milliseconds(100),
                                                                          maximumDelay: .milliseconds(200), attemptTimeout: .milliseconds(500)))
        let links = await remote.linkEvents()
        let service = try #require(try await remote.discoverServices([BLEAPITests.service]).first)
        let tx = try #require(try await remote.discoverCharacteristics([BLEAPITests.tx], for: service).first)
        let values = try await remote.notifications(for: tx)
        var iterator = values.makeAsyncIterator()
        func push(_ text: String) async throws {
            // Until a subscribed central receives it (the subscription may still be on its way).
            for _ in 0..<200 {
                if try await !manager.updateValue(Array(text.utf8), for: BLEAPITests.tx).isEmpty { return }
                try await Task.sleep(for: .milliseconds(10))
            }
        }
        try await push("before")
        #expect(await iterator.next() == Array("before".utf8))
        // Out of range: the default supervision timeout (5 s) is long; the host connected with 0x01F4 = 5 s.
        pc.position = Position(x: 5000)
        var linkIterator = links.makeAsyncIterator()
        let lost = await linkIterator.next()
        #expect(lost == .disconnected(.connectionTimeout))
        // Back in range and advertising again: the central reconnects and resubscribes.
        pc.position = Position(x: 1)
        try await manager.startAdvertising(name: "UART", serviceUUIDs: [BLEAPITests.service])
        let back = await linkIterator.next()
        guard case .reconnected = back else {
            Issue.record("expected a reconnection, got \(String(describing: back))")
            return
        }
        try await push("after")
        let afterValue = await iterator.next()
        #expect(afterValue == Array("after".utf8), "got \(String(describing: afterValue.map { String(decoding: $0, as: UTF8.self) }))")
        // The peripheral's current link is the one the central's host has up.
        let current = await remote.connection.handle
        #expect(await central.adapter.connections.map(\.handle) == [current])
    }
}
