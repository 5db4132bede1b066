import BLE
import BLEFixtures
import BLEHost
import BLEProtocols
import BLETestSupport
import BLEVirtualController
import Testing

/// Characteristics the application answers, through the whole stack: a value computed on each read, a write refused
/// with an application error, a write answered later, a long (prepared) write reaching the application as one set.
@Suite(.timeLimit(.minutes(1))) struct ApplicationAnswersTests {
    static let service = BluetoothUUID("0000CC00-0000-1000-8000-00805F9B34FB") ?? 0
    static let counter = BluetoothUUID("0000CC01-0000-1000-8000-00805F9B34FB") ?? 0
    static let guarded = BluetoothUUID("0000CC02-0000-1000-8000-00805F9B34FB") ?? 0

    @Test func theApplicationComputesRefusesAndAnswersLater() async throws {
        let devices = try await TwoDevices(peripheralName: "Answers")
        defer { devices.shutdown() }
        let pc = devices.peripheralController
        let manager = devices.peripheral
        try await manager.add(GATTServiceDefinition(uuid: Self.service, characteristics: [
            GATTCharacteristicDefinition(uuid: Self.counter, properties: .read, source: .application),
            GATTCharacteristicDefinition(uuid: Self.guarded, properties: [.read, .write], permissions: [.readable, .writeable], source: .application),
        ]))
        let requests = await manager.requests()
        // The application: a counter per read, writes of "no" refused with 0x80, other writes accepted 300 ms later,
        // prepared-write sets refused when a part starts with "no".
        let application = Task {
            var reads: UInt8 = 0
            var log: [String] = []
            for await event in requests {
                guard case .application(let request) = event.kind else { continue }
                switch request.kind {
                case .read:
                    reads += 1
                    await request.respond(with: [reads])
                case .write(let value, _) where value == Array("no".utf8):
                    log.append("refused from \(request.central.handle)")
                    await request.refuse(ATTErrorCode(rawValue: 0x80))
                case .write:
                    Task {
                        try await Task.sleep(for: .milliseconds(300))
                        await request.accept()
                    }
                case .preparedWrites(let parts):
                    log.append("set of \(parts.reduce(0) { $0 + $1.value.count }) bytes")
                    if parts.first?.value.starts(with: Array("no".utf8)) == true { await request.refuse(ATTErrorCode(rawValue: 0x81)) } else { await request.accept() }
                    if log.count == 3 { return log }
                }
            }
            return log
        }
        try await manager.startAdvertising(name: "Answers")
        let central = devices.central
        let remote = try await central.connect(LEAddress(pc.address, type: .public), timeout: .seconds(5))
        let service = try #require(try await remote.discoverServices([Self.service]).first)
        let characteristics = try await remote.discoverCharacteristics(for: service)
        let counter = try #require(characteristics.first { $0.uuid == Self.counter })
        let guarded = try #require(characteristics.first { $0.uuid == Self.guarded })
        // Computed on each read.
        #expect(try await remote.readValue(for: counter) == [1])
        #expect(try await remote.readValue(for: counter) == [2])
        // Refused with the application's error.
        await #expect(throws: GATTError(.att(ATTErrorCode(rawValue: 0x80), handle: guarded.valueHandle), "")) {
            try await remote.writeValue(Array("no".utf8), for: guarded, type: .withResponse)
        }
        // Answered 300 ms later: the write returns then.
        let clock = ContinuousClock()
        let started = clock.now
        try await remote.writeValue(Array("yes".utf8), for: guarded, type: .withResponse)
        #expect(clock.now - started >= .milliseconds(250))
        // A long write (prepared writes at MTU 23) reaches the application as one set, refused or accepted whole.
        await #expect(throws: GATTError(.att(ATTErrorCode(rawValue: 0x81), handle: guarded.valueHandle), "")) {
            try await remote.writeValue(Array("no".utf8) + Array(repeating: 0x20, count: 298), for: guarded, type: .withResponse)
        }
        try await remote.writeValue(Array(repeating: 0x41, count: 300), for: guarded, type: .withResponse)
        #expect(try await withTimeout { await application.value } == ["refused from \(await asCentralHandle(manager))", "set of 300 bytes", "set of 300 bytes"])
        withExtendedLifetime(manager) {}
    }

    func asCentralHandle(_ manager: PeripheralManager) async -> ConnectionHandle {
        await manager.connectedCentrals.first?.handle ?? 0
    }

    /// One host is central to one peer and peripheral to another at the same time, several links in each role.
    @Test func oneHostPlaysBothRolesAtOnce() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        // The host in the middle.
        let middle = air.addController(.init(position: Position(x: 0)))
        let adapter = try await Adapter(transport: middle.makeHostTransport())
        let asPeripheral = await PeripheralManager(adapter: adapter, deviceName: "Middle")
        let asCentral = Central(adapter: adapter)
        try await asPeripheral.add(GATTServiceDefinition(uuid: Self.service, characteristics: [
            GATTCharacteristicDefinition(uuid: Self.guarded, properties: [.read, .write, .notify], permissions: [.readable, .writeable],
                                         value: Array("middle".utf8)),
        ]))
        try await asPeripheral.startAdvertising(name: "Middle", restartAfterConnection: true)
        // Two peripherals the middle host connects to as a central.
        var remotes: [RemotePeripheral] = []
        var peers: [PeripheralManager] = []
        for i in 0..<2 {
            let controller = air.addController(.init(position: Position(x: Double(i + 1))))
            let peer = try await PeripheralManager(transport: controller.makeHostTransport(), deviceName: "Peer\(i)")
            try await peer.add(GATTServiceDefinition(uuid: Self.service, characteristics: [
                GATTCharacteristicDefinition(uuid: Self.counter, properties: .read, value: [UInt8(i)]),
            ]))
            try await peer.startAdvertising(name: "Peer\(i)")
            peers.append(peer)
            remotes.append(try await asCentral.connect(LEAddress(controller.address, type: .public), timeout: .seconds(5)))
        }
        // Two centrals that connect to the middle host.
        let arrivals = await asPeripheral.centralEvents()
        var clients: [(Central, RemotePeripheral)] = []
        for i in 0..<2 {
            let central = try await Central(transport: air.addController(.init(position: Position(x: Double(-1 - i)))).makeHostTransport())
            clients.append((central, try await central.connect(LEAddress(middle.address, type: .public), timeout: .seconds(5))))
        }
        var arrived = 0
        for await event in arrivals {
            if case .connected = event { arrived += 1 }
            if arrived == 2 { break }
        }
        #expect(await adapter.connections.filter { $0.role == .central }.count == 2)
        #expect(await asPeripheral.connectedCentrals.count == 2)
        // Both roles at once: the middle reads from its peers while its centrals read, write and get notified.
        for (i, remote) in remotes.enumerated() {
            let service = try #require(try await remote.discoverServices([Self.service]).first)
            let characteristic = try #require(try await remote.discoverCharacteristics(for: service).first)
            #expect(try await remote.readValue(for: characteristic) == [UInt8(i)])
        }
        for (i, (central, remote)) in clients.enumerated() {
            let service = try #require(try await remote.discoverServices([Self.service]).first)
            let characteristic = try #require(try await remote.discoverCharacteristics(for: service).first)
            // The value the previous central wrote, then notified to it as [i - 1] (one value for all centrals).
            #expect(try await remote.readValue(for: characteristic) == (i == 0 ? Array("middle".utf8) : [UInt8(i - 1)]))
            let values = try await remote.notifications(for: characteristic)
            try await remote.writeValue(Array("client \(i)".utf8), for: characteristic, type: .withResponse)
            let address = await central.adapter.address?.address
            let link = try #require(await asPeripheral.connectedCentrals.first { $0.peer.address == address })
            let sent = try await asPeripheral.updateValue([UInt8(i)], for: Self.guarded, onSubscribedCentrals: [link])
            #expect(sent.count == 1)
            var iterator = values.makeAsyncIterator()
            #expect(await iterator.next() == [UInt8(i)])
        }
        withExtendedLifetime((peers, asPeripheral)) {}
    }
}
