import BLE
import BLEHost
import BLEProtocols
import BLETestSupport
import BLETransport
import BLEVirtualController
import Testing

/// What a newcomer expects of the public API: a connection state with reasons (no reconnection policy needed), the
/// MTU exchanged on connect, scans that end by themselves, several consumers of one characteristic, the embedded world
/// behind `.virtual`, and errors that name what failed.
@Suite(.timeLimit(.minutes(1))) struct PublicAPICompletenessTests {
    static let service = BluetoothUUID("0000DD00-0000-1000-8000-00805F9B34FB") ?? 0
    static let value = BluetoothUUID("0000DD01-0000-1000-8000-00805F9B34FB") ?? 0

    func peripheral(_ air: VirtualAir) async throws -> (PeripheralManager, VirtualController) {
        let controller = air.addController(.init())
        let manager = try await PeripheralManager(transport: controller.makeHostTransport(), deviceName: "Complete")
        try await manager.add(GATTServiceDefinition(uuid: Self.service, characteristics: [
            GATTCharacteristicDefinition(uuid: Self.value, properties: [.read, .notify], value: [1]),
        ]))
        try await manager.startAdvertising(name: "Complete", serviceUUIDs: [Self.service])
        return (manager, controller)
    }

    @Test func stateFollowsTheLinkWithoutAPolicyAndTheMTUIsExchangedOnConnect() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let (manager, pc) = try await peripheral(air)
        let centralEvents = await manager.centralEvents()
        let central = try await Central(transport: air.addController(.init(position: Position(x: 1))).makeHostTransport())
        let remote = try await central.connect(LEAddress(pc.address, type: .public), timeout: .seconds(5))
        #expect(await remote.state == .connected)
        // Like iOS: the MTU was exchanged on connect.
        #expect(await remote.mtu == 247)
        var peripheralSide = centralEvents.makeAsyncIterator()
        guard case .connected(let link) = await peripheralSide.next() else { Issue.record("no connection event"); return }
        #expect(await manager.maximumUpdateValueLength(for: link) == 244)
        // The peripheral drops the link: the central's state says so, with the reason, and no policy is needed.
        let states = await remote.stateUpdates()
        try await manager.disconnect(link)
        let seen = try await withTimeout { () -> [PeripheralConnectionState] in
            var out: [PeripheralConnectionState] = []
            for await state in states {
                out.append(state)
                if case .disconnected = state { break }
            }
            return out
        }
        #expect(seen == [.connected, .disconnected(.remoteUserTerminatedConnection)])
        #expect(await peripheralSide.next() == .disconnected(link, reason: .connectionTerminatedByLocalHost))
    }

    @Test func ourOwnDisconnectGoesThroughDisconnecting() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let (manager, pc) = try await peripheral(air)
        let central = try await Central(transport: air.addController(.init(position: Position(x: 1))).makeHostTransport())
        let remote = try await central.connect(LEAddress(pc.address, type: .public), timeout: .seconds(5), exchangeMTU: false)
        #expect(await remote.mtu == 23)
        let states = await remote.stateUpdates()
        try await central.disconnect(remote)
        let seen = try await withTimeout { () -> [PeripheralConnectionState] in
            var out: [PeripheralConnectionState] = []
            for await state in states { out.append(state) }
            return out
        }
        #expect(seen.first == .connected && seen.contains(.disconnecting))
        #expect(seen.last == .disconnected(.connectionTerminatedByLocalHost))
        withExtendedLifetime(manager) {}
    }

    @Test func scansEndByThemselvesAndSayWhetherTheyRun() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let (manager, _) = try await peripheral(air)
        let central = try await Central(transport: air.addController(.init(position: Position(x: 1))).makeHostTransport())
        #expect(await central.isScanning == false)
        // Long enough for an advertisement to be heard even on a loaded machine (the clock is real); the point is the end.
        let results = try await central.scan(services: [Self.service], timeout: .seconds(2))
        #expect(await central.isScanning)
        let found = try await withTimeout(5) { () -> Int in
            var n = 0
            for try await _ in results { n += 1 }
            return n
        }
        #expect(found >= 1)
        // The stream ended by itself; the controller's scan stops with it.
        let stopped = try await withTimeout(5) { () -> Bool in
            while await central.isScanning { try await Task.sleep(for: .milliseconds(10)) }
            return true
        }
        #expect(stopped)
        withExtendedLifetime(manager) {}
    }

    @Test func severalConsumersOfOneCharacteristicEachGetEveryValue() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let (manager, pc) = try await peripheral(air)
        let central = try await Central(transport: air.addController(.init(position: Position(x: 1))).makeHostTransport())
        let remote = try await central.connect(LEAddress(pc.address, type: .public), timeout: .seconds(5))
        let service = try #require(try await remote.discoverServices([Self.service]).first)
        let characteristic = try #require(try await remote.discoverCharacteristics(for: service).first)
        let first = try await remote.notifications(for: characteristic)
        let second = try await remote.notifications(for: characteristic)
        for i in UInt8(1)...3 { try await manager.updateValue([i], for: Self.value) }
        // A value longer than ATT_MTU − 3 is refused, not cut.
        await #expect(throws: GATTError(.invalidValueLength, "")) { try await manager.updateValue(Array(repeating: 0, count: 245), for: Self.value) }
        for stream in [first, second] {
            var iterator = stream.makeAsyncIterator()
            var got: [[UInt8]] = []
            for _ in 0..<3 { if let v = await iterator.next() { got.append(v) } }
            #expect(got == [[1], [2], [3]])
        }
        // Stopping notifications ends every stream.
        try await remote.stopNotifications(for: characteristic)
        var ended = first.makeAsyncIterator()
        #expect(await ended.next() == nil)
    }

    /// The GAP Device Name can change after the manager is created: a central reads the new one.
    @Test func theDeviceNameCanChange() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let (manager, pc) = try await peripheral(air)
        let central = try await Central(transport: air.addController(.init(position: Position(x: 1))).makeHostTransport())
        let remote = try await central.connect(LEAddress(pc.address, type: .public), timeout: .seconds(5))
        let gap = try #require(try await remote.discoverServices([0x1800]).first)
        let name = try #require(try await remote.discoverCharacteristics([0x2A00], for: gap).first)
        #expect(try await remote.readValue(for: name) == Array("Complete".utf8))
        await manager.setDeviceName("Renamed")
        #expect(try await remote.readValue(for: name) == Array("Renamed".utf8))
    }

    /// A subscribed central that drops its link is reported unsubscribed, once.
    @Test func aDroppedCentralIsReportedUnsubscribedOnce() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let (manager, pc) = try await peripheral(air)
        let requests = await manager.requests()
        let central = try await Central(transport: air.addController(.init(position: Position(x: 1))).makeHostTransport())
        let remote = try await central.connect(LEAddress(pc.address, type: .public), timeout: .seconds(5))
        let service = try #require(try await remote.discoverServices([Self.service]).first)
        let characteristic = try #require(try await remote.discoverCharacteristics(for: service).first)
        _ = try await remote.notifications(for: characteristic)
        try await central.disconnect(remote)
        // Subscribed, then unsubscribed by the disconnection; nothing more within half a second.
        let seen = try await withTimeout { () -> [PeripheralRequest.Kind] in
            let collector = Task { () -> [PeripheralRequest.Kind] in
                var kinds: [PeripheralRequest.Kind] = []
                for await request in requests {
                    if case .subscription = request.kind { kinds.append(request.kind) }
                    if kinds.count == 3 { break }
                }
                return kinds
            }
            try await Task.sleep(for: .milliseconds(500))
            collector.cancel()
            return await collector.value
        }
        #expect(seen == [.subscription(characteristic: Self.value, handle: characteristic.valueHandle, notify: true, indicate: false),
                         .subscription(characteristic: Self.value, handle: characteristic.valueHandle, notify: false, indicate: false)])
    }

    @Test func virtualJoinsTheEmbeddedWorldWithItsSampleDevices() async throws {
        let central = await Central(.virtual)
        #expect(await central.state == .poweredOn)
        let manager = try await PeripheralManager(.virtual, deviceName: "Newcomer")
        try await manager.add(GATTServiceDefinition(uuid: Self.service, characteristics: [
            GATTCharacteristicDefinition(uuid: Self.value, properties: .read, value: Array("hello".utf8)),
        ]))
        try await manager.startAdvertising(name: "Newcomer")
        let names = try await withTimeout { () -> Set<String> in
            var names: Set<String> = []
            for try await device in try await central.scan(timeout: .seconds(5)) {
                if let name = device.name { names.insert(name) }
                if names.isSuperset(of: ["SwiftBLELab", "Newcomer"]) { break }
            }
            return names
        }
        // BLE alone furnishes the world with the lab device; BLEProfiles' EmbeddedDevices adds the other simulated devices.
        #expect(names.isSuperset(of: ["SwiftBLELab", "Newcomer"]))
    }

    @Test func errorsNameTheControllerAndWhatFailed() async throws {
        // A port nobody listens on (the OS gave it to a socket that closed).
        let spec = try HCITransportSpec(parsing: "tcp:127.0.0.1:1")
        do {
            _ = try await Central.open(spec)
            Issue.record("opened a controller that is not there")
        } catch {
            #expect("\(error)".contains("no controller at tcp:127.0.0.1:1"))
            #expect("\(error)".lowercased().contains("refused"))
        }
        let central = await Central(spec)
        #expect(await central.state == .unsupported)
        #expect(await central.unavailableReason?.contains("no controller at tcp:127.0.0.1:1") == true)
    }
}
