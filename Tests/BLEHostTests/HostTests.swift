import BLEFixtures
import BLEHost
import BLETestSupport
import BLETransport
import BLEVirtualController
import BLEWire
import Testing

@Suite(.timeLimit(.minutes(1))) struct HostTests {
    @Test func bringUpReachesPoweredOn() async throws {
        let world = World()
        let (host, controller) = try await world.host(aclSize: 27, aclCount: 8)
        #expect(await host.state == AdapterState.poweredOn)
        #expect(await host.address == controller.address)
        let buffers = await host.aclBuffers
        #expect(buffers.size == 27 && buffers.count == 8)
        #expect(await host.supportedCommands.contains(.leCreateConnection))
        let events = await host.events()
        #expect(try await next(events) { if case .stateChanged(let s) = $0 { s } else { nil } } == AdapterState.poweredOn)
    }

    @Test func scanSeesNameServicesAndScanResponse() async throws {
        let world = World()
        let (peripheral, pc) = try await world.host()
        let (central, _) = try await world.host(at: 2)
        try await peripheral.startAdvertising(.init(
            data: AdvertisingData(flags: .leOnlyGeneralDiscoverable, localName: "Thermo", serviceUUIDs: [0x181A]),
            scanResponse: AdvertisingData(manufacturerData: ManufacturerData(companyID: .testing, data: [1, 2]))))
        let reports = try await central.scan(.init(active: true))
        let (advertisement, response) = try await withTimeout { () async throws -> (AdvertisementReport, AdvertisementReport) in
            var adv: AdvertisementReport?
            for try await report in reports where report.address.address == pc.address {
                if report.isScanResponse, let adv { return (adv, report) }
                if !report.isScanResponse { adv = report }
            }
            throw TimedOut()
        }
        #expect(advertisement.data.localName == "Thermo")
        #expect(try advertisement.data.serviceUUIDs() == [BluetoothUUID(0x181A)])
        #expect(advertisement.isConnectable)
        #expect(try response.data.manufacturerData() == [ManufacturerData(companyID: .testing, data: [1, 2])])
        // −(40 + 20·log10 2) ≈ −46 dBm
        #expect(advertisement.rssi == -46)
        await central.stopScan()
    }

    @Test func oversizedAdvertisingDataIsRejected() async throws {
        let world = World()
        let (host, _) = try await world.host()
        let tooLong = AdvertisingData(localName: String(repeating: "x", count: 40))
        await #expect(throws: WireError.self) { try await host.startAdvertising(.init(data: tooLong)) }
    }

    @Test func connectExchangeL2CAPAndDisconnect() async throws {
        let world = World()
        let (peripheral, pc) = try await world.host()
        let (central, _) = try await world.host(at: 1)
        let (c, p) = try await connect(central, peripheral, peripheralAddress: pc.address)
        #expect(c.role == .central && p.role == .peripheral)
        #expect(c.peer.address == pc.address)
        let atPeripheral = try await peripheral.openFixedChannel(.att, on: p)
        let atCentral = try await central.openFixedChannel(.att, on: c)
        // 600 bytes each way: 23 fragments of 27 bytes under flow control (8 buffers).
        let big = (0..<600).map { UInt8(truncatingIfNeeded: $0 * 7) }
        try await central.sendL2CAP(big, channel: .att, on: c)
        try await peripheral.sendL2CAP(Array(big.reversed()), channel: .att, on: p)
        let got = try await withTimeout { () async throws -> [UInt8] in
            for await payload in atPeripheral { return payload }
            throw TimedOut()
        }
        #expect(got == big)
        let back = try await withTimeout { () async throws -> [UInt8] in
            for await payload in atCentral { return payload }
            throw TimedOut()
        }
        #expect(back == big.reversed())
        let centralEvents = await central.events()
        let peripheralEvents = await peripheral.events()
        try await central.disconnect(c)
        #expect(try await next(centralEvents) { if case .disconnected(_, let r) = $0 { r } else { nil } } == HCIStatus.connectionTerminatedByLocalHost)
        #expect(try await next(peripheralEvents) { if case .disconnected(_, let r) = $0 { r } else { nil } } == HCIStatus.remoteUserTerminatedConnection)
        #expect(await central.connections.isEmpty)
        await #expect(throws: HostError.self) { try await central.sendL2CAP([1], channel: .att, on: c) }
    }

    /// Powering off ends the links first: the peer hears Remote Device Terminated Connection due to Power Off at once,
    /// not a supervision timeout later, and data queued before power-off was completed before the link ended.
    @Test func powerOffDisconnectsEachLinkBeforeTheTransportCloses() async throws {
        let world = World()
        let (peripheral, pc) = try await world.host()
        let (central, _) = try await world.host(at: 1)
        let (c, _) = try await connect(central, peripheral, peripheralAddress: pc.address)
        let atPeripheral = try await peripheral.openFixedChannel(.att, on: try #require(await peripheral.connections.first))
        let peripheralEvents = await peripheral.events()
        let centralEvents = await central.events()
        let big = (0..<600).map { UInt8(truncatingIfNeeded: $0 * 3) }
        try await central.sendL2CAP(big, channel: .att, on: c)
        await central.powerOff()
        #expect(await central.state == .poweredOff)
        #expect(try await next(centralEvents) { if case .disconnected(_, let r) = $0 { r } else { nil } } == HCIStatus.connectionTerminatedByLocalHost)
        #expect(try await next(peripheralEvents) { if case .disconnected(_, let r) = $0 { r } else { nil } } == HCIStatus.remoteDeviceTerminatedPowerOff)
        let got = try await withTimeout { () async throws -> [UInt8] in
            for await payload in atPeripheral { return payload }
            throw TimedOut()
        }
        #expect(got == big)
    }

    /// `disconnectAll` with nothing connected returns at once, whatever time it was given.
    @Test func disconnectAllWithoutLinksReturnsAtOnce() async throws {
        let world = World()
        let (central, _) = try await world.host()
        #expect(await central.disconnectAll(within: .seconds(30)).isEmpty)
    }

    @Test func connectTimesOutAndCancels() async throws {
        let world = World()
        let (central, _) = try await world.host()
        let nobody = LEAddress(BluetoothAddress(0xC0FF_EE00_0001), type: .random)
        do {
            _ = try await central.connect(to: nobody, timeout: .milliseconds(300))
            Issue.record("nobody advertises: the connection must time out")
        } catch let error as HostError {
            #expect(error.code == .connectionTimedOut)
        }
        // The controller is free again: a real connection works afterwards.
        let (peripheral, pc) = try await world.host(at: 1)
        _ = try await connect(central, peripheral, peripheralAddress: pc.address)
    }

    /// An attempt abandoned by the application is cancelled at the controller at once (not at its timeout); an
    /// attempt to another device is not touched; the controller is free again afterwards.
    @Test func anAbandonedConnectionAttemptIsCancelledAtOnce() async throws {
        let world = World()
        let (central, _) = try await world.host()
        let nobody = LEAddress(BluetoothAddress(0xC0FF_EE00_0002), type: .random)
        let someoneElse = LEAddress(BluetoothAddress(0xC0FF_EE00_0003), type: .random)
        let started = ContinuousClock.now
        let attempt = Task { try await central.connect(to: nobody, timeout: .seconds(30)) }
        try await Task.sleep(for: .milliseconds(100))
        #expect(await central.cancelConnectionAttempt(to: someoneElse) == false)
        #expect(await central.cancelConnectionAttempt(to: nobody))
        await #expect(throws: CancellationError.self) { _ = try await attempt.value }
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(await central.cancelConnectionAttempt(to: nobody) == false)
        let (peripheral, pc) = try await world.host(at: 1)
        _ = try await connect(central, peripheral, peripheralAddress: pc.address)
    }

    @Test func signalingAnswersUnknownAndMalformedCommands() async throws {
        let world = World()
        let (peripheral, pc) = try await world.host()
        let (central, _) = try await world.host(at: 1)
        let (c, p) = try await connect(central, peripheral, peripheralAddress: pc.address)
        // The central takes its signaling channel over to speak raw signaling to the peripheral's host.
        let raw = try await central.openFixedChannel(.leSignaling, on: c)
        var iterator = raw.makeAsyncIterator()
        // Unknown code 0x7E, identifier 9 → Command Reject 0x0000, identifier 9.
        try await central.sendL2CAP([0x7E, 0x09, 0x01, 0x00, 0xFF], channel: .leSignaling, on: c)
        #expect(try L2CAPSignalingPDU(bytes: await iterator.next() ?? []) == .commandReject(identifier: 9, reason: .commandNotUnderstood))
        // A truncated Connection Parameter Update Request, identifier 10 → Command Reject, identifier 10.
        try await central.sendL2CAP([0x12, 0x0A, 0x02, 0x00, 0x06, 0x00], channel: .leSignaling, on: c)
        #expect(try L2CAPSignalingPDU(bytes: await iterator.next() ?? []) == .commandReject(identifier: 10, reason: .commandNotUnderstood))
        // A Connection Parameter Update Request sent to a peripheral → Command Reject (only centrals take it).
        try await central.sendL2CAP(L2CAPSignalingPDU.connectionParameterUpdateRequest(identifier: 11, .init(intervalMin: 6, intervalMax: 12, latency: 0, timeout: 200)).encoded,
                                    channel: .leSignaling, on: c)
        #expect(try L2CAPSignalingPDU(bytes: await iterator.next() ?? []) == .commandReject(identifier: 11, reason: .commandNotUnderstood))
        // Disconnection Request for a CID that is not open → Command Reject invalid CID.
        try await central.sendL2CAP(L2CAPSignalingPDU.disconnectionRequest(identifier: 12, destinationCID: 0x40, sourceCID: 0x41).encoded,
                                    channel: .leSignaling, on: c)
        #expect(try L2CAPSignalingPDU(bytes: await iterator.next() ?? []) == .commandReject(identifier: 12, reason: .invalidCID(local: 0x40, remote: 0x41)))
        // Identifier 0 is illegal: dropped without an answer; the next command is answered normally.
        try await central.sendL2CAP([0x7E, 0x00, 0x00, 0x00], channel: .leSignaling, on: c)
        try await central.sendL2CAP([0x7E, 0x0D, 0x00, 0x00], channel: .leSignaling, on: c)
        #expect(try L2CAPSignalingPDU(bytes: await iterator.next() ?? []) == .commandReject(identifier: 13, reason: .commandNotUnderstood))
        // The peripheral still serves: its link is up.
        #expect(await peripheral.connections.map(\.handle) == [p.handle])
    }

    @Test func peripheralRequestsParameterUpdateAndTheCentralApplies() async throws {
        let world = World()
        let (peripheral, pc) = try await world.host()
        let (central, _) = try await world.host(at: 1)
        let (_, p) = try await connect(central, peripheral, peripheralAddress: pc.address)
        let events = await peripheral.events()
        try await peripheral.requestConnectionParameterUpdate(.init(intervalMin: 6, intervalMax: 8, latency: 0, timeout: 300), on: p)
        let updated = try await next(events) { if case .connectionUpdated(let c) = $0 { c } else { nil } }
        #expect(updated.interval == 8 && updated.supervisionTimeout == 300)
    }

    @Test func smpAnswersAPairingRequestAndRefusesMalformedPDUs() async throws {
        let world = World()
        let (peripheral, pc) = try await world.host()
        let (central, _) = try await world.host(at: 1)
        let (c, _) = try await connect(central, peripheral, peripheralAddress: pc.address)
        let smp = try await central.openFixedChannel(.smp, on: c)
        var iterator = smp.makeAsyncIterator()
        let request = SMPPDU.pairingRequest(.init(ioCapability: .noInputNoOutput, authRequirements: [.bonding, .secureConnections],
                                                  initiatorKeyDistribution: [.encryptionKey], responderKeyDistribution: [.encryptionKey]))
        try await central.sendL2CAP(request.encoded, channel: .smp, on: c)
        // The peripheral's Security Manager answers with its features (Just Works, Secure Connections, bonding).
        guard case .pairingResponse(let response) = try SMPPDU(bytes: await iterator.next() ?? []) else {
            Issue.record("no Pairing Response")
            return
        }
        #expect(response.authRequirements.contains(.secureConnections) && response.maximumEncryptionKeySize == 16)
        // Malformed SMP → Invalid Parameters.
        try await central.sendL2CAP([0x01, 0x03], channel: .smp, on: c)
        #expect(try SMPPDU(bytes: await iterator.next() ?? []) == .pairingFailed(.invalidParameters))
    }

    @Test func hardwareErrorResetsThenPowersOnAgain() async throws {
        let world = World()
        let (host, controller) = try await world.host()
        let events = await host.events()
        controller.injectHardwareError(code: 3)
        let states = try await withTimeout { () async throws -> [AdapterState] in
            var seen: [AdapterState] = []
            for await event in events {
                if case .stateChanged(let s) = event { seen.append(s) }
                if seen.last == .poweredOn, seen.contains(.resetting) { return seen }
            }
            throw TimedOut()
        }
        #expect(states == [.poweredOn, .resetting, .poweredOn])
    }

    @Test func closedTransportMeansPoweredOff() async throws {
        let world = World()
        let (host, _) = try await world.host()
        await host.powerOff()
        #expect(await host.state == .poweredOff)
        await #expect(throws: HostError.self) { _ = try await host.scan() }
    }

    @Test func silentControllerTimesOutCommandsAndIsUnsupported() async throws {
        // A transport whose far end never answers.
        let (hostSide, _) = HCIPipe.makePair()
        var configuration = HCIHost.Configuration()
        configuration.commandTimeout = .milliseconds(200)
        let host = HCIHost(transport: hostSide, configuration: configuration)
        do {
            try await host.powerOn()
            Issue.record("a silent controller must not power on")
        } catch let error as HostError {
            #expect(error.code == .commandTimedOut(.reset))
        }
        #expect(await host.state == .unsupported)
    }
}

@Suite(.timeLimit(.minutes(1))) struct NoPublicAddressTests {
    /// A controller without a public address (BD_ADDR 0, as Bumble's stock controllers report): the host picks a
    /// random static address and uses it to advertise, scan and connect.
    @Test func hostUsesARandomStaticAddress() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let peripheral = HCIHost(transport: air.addController(.init(address: .zero)).makeHostTransport())
        let central = HCIHost(transport: air.addController(.init(address: .zero, position: Position(x: 1))).makeHostTransport())
        try await peripheral.powerOn()
        try await central.powerOn()
        let p = try #require(await peripheral.ownAddress)
        let c = try #require(await central.ownAddress)
        #expect(await peripheral.publicAddress == nil)
        #expect(p.kind == .randomStatic && c.kind == .randomStatic && p != c)
        try await peripheral.startAdvertising(.init(data: AdvertisingData(localName: "NoPublic")))
        let reports = try await central.scan()
        let seen = try await withTimeout { () async throws -> AdvertisementReport in
            for try await r in reports where r.data.localName == "NoPublic" { return r }
            throw TimedOut()
        }
        #expect(seen.address == p)
        await central.stopScan()
        let peripheralEvents = await peripheral.events()
        let connection = try await central.connect(to: seen.address, timeout: .seconds(5))
        #expect(connection.peer == p)
        let link = try await next(peripheralEvents) { if case .connected(let l) = $0 { l } else { nil } }
        #expect(link.peer == c)
    }
}

@Suite(.timeLimit(.minutes(1))) struct BackPressureTests {
    /// A burst far larger than the controller's buffers: senders wait (the link is "not ready" meanwhile), nothing
    /// is lost, and the link is ready again once drained.
    @Test func sendersWaitInsteadOfQueueingWithoutBound() async throws {
        let world = World()
        let (peripheral, pc) = try await world.host(aclSize: 27, aclCount: 2)
        let (central, _) = try await world.host(at: 1, aclSize: 27, aclCount: 2)
        let (c, p) = try await connect(central, peripheral, peripheralAddress: pc.address)
        let inbox = try await peripheral.openFixedChannel(.att, on: p)
        let limit = await central.linkQueueLimit
        #expect(limit == 16)
        let count = 300
        let receiver = Task { () -> [UInt8] in
            var firstBytes: [UInt8] = []
            for await payload in inbox {
                firstBytes.append(payload.first ?? 0)
                if firstBytes.count == count { break }
            }
            return firstBytes
        }
        var sawNotReady = false
        for i in 0..<count {
            // 200-byte payloads: 8 fragments each against 2 controller buffers.
            try await central.sendL2CAP([UInt8(truncatingIfNeeded: i)] + Array(repeating: 0, count: 199), channel: .att, on: c)
            if await !central.isReadyToSend(c) { sawNotReady = true }
            #expect(await central.queuedACLPacketCount <= limit + 8)
        }
        let got = try await withTimeout { await receiver.value }
        #expect(got == (0..<count).map { UInt8(truncatingIfNeeded: $0) })
        #expect(sawNotReady, "the link reported not ready while full")
        try await Task.sleep(for: .milliseconds(50))
        #expect(await central.isReadyToSend(c))
    }
}
