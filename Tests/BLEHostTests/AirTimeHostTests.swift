import BLEFixtures
import BLEHost
import BLEProtocols
import BLEVirtualController
import BLEWire
import Foundation
import Testing

/// Two hosts on an air with the air-time model, through the whole stack: the PHY and Data Length procedures reach
/// both hosts' connections, and notifications and writes take at least the time the model gives them (the stack never
/// runs faster than the radio it drives). Throughput against the ceiling is measured by `BLEBenchmarks --only airtime`.
@Suite(.timeLimit(.minutes(1))) struct AirTimeHostTests {
    static let notify = BluetoothUUID("0000FFF1-0000-1000-8000-00805F9B34FB") ?? 0

    @Test func phyDataLengthAndTheTimeOperationsTake() async throws {
        let model = AirTimeModel()
        let air = VirtualAir(clock: .realTime, airTime: model)
        defer { air.shutdown() }
        let peripheral = HCIHost(transport: air.addController(.init(aclBufferSize: 251, aclBufferCount: 8)).makeHostTransport())
        let central = HCIHost(transport: air.addController(.init(position: Position(x: 1), aclBufferSize: 251, aclBufferCount: 8)).makeHostTransport())
        try await peripheral.powerOn()
        try await central.powerOn()
        let server = GATTEngine(host: peripheral, database: GATTDatabase(services: [
            GATTServiceDefinition(uuid: 0xFFF0, characteristics: [
                GATTCharacteristicDefinition(uuid: Self.notify, properties: [.notify, .write], permissions: [.writeable]),
            ]),
        ]))
        await server.start()
        let peripheralEvents = await peripheral.events()
        try await peripheral.startAdvertising(.init(data: AdvertisingData(localName: "air")))
        let address = try #require(await peripheral.ownAddress)
        let link = try await central.connect(to: address, connectionInterval: 6...6)
        #expect(link.txPHY == .le1M && link.maxTxOctets == 27)

        // LE 2M both ways: the central's connection says so when the procedure ends; the peripheral hears of it.
        let updated = try await central.setPHY(link, transmit: .le2M, receive: .le2M)
        #expect(updated.txPHY == .le2M && updated.rxPHY == .le2M)
        let peripheralLink = try await next(peripheralEvents) { event -> HostConnection? in
            if case .connectionUpdated(let c) = event, c.txPHY == .le2M { c } else { nil }
        }
        #expect(peripheralLink.rxPHY == .le2M)
        // 251-octet packets from the peripheral.
        try await peripheral.setDataLength(peripheralLink, octets: 251)
        var centralSide = await central.connections.first
        for _ in 0..<100 where centralSide?.maxRxOctets != 251 {
            try await Task.sleep(for: .milliseconds(5))
            centralSide = await central.connections.first
        }
        #expect(centralSide?.maxRxOctets == 251 && centralSide?.maxTxOctets == 27)

        let client = GATTEngine(host: central)
        await client.start()
        #expect(try await client.exchangeMTU(link) == 247)
        let valueHandle = try #require(await server.database.valueHandle(of: Self.notify))
        let values = try await client.subscribe(link, valueHandle: valueHandle,
                                                cccdHandle: AttributeHandle(rawValue: valueHandle.rawValue + 1))
        while await !server.isSubscribed(peripheralLink, valueHandle: valueHandle) { try await Task.sleep(for: .milliseconds(5)) }

        // 40 notifications of 244 octets: at most 5 per 7.5 ms event, so the last arrives at least 7 events after the
        // first could leave (58.07 ms: 7 events and 4 exchanges). Measured from before the first is sent, as a lower
        // bound: a receiver slowed by a loaded machine only reads the clock later (without the model all 40 cross in
        // about 2 ms).
        let count = 40
        let receiver = Task { () -> Bool in
            var n = 0
            for await _ in values {
                n += 1
                if n == count { return true }
            }
            return false
        }
        let sent = air.now
        for _ in 0..<count { _ = try await server.updateValue([UInt8](repeating: 1, count: 244), for: valueHandle) }
        #expect(await receiver.value)
        let spread = air.now - sent
        #expect(spread >= .microseconds(7 * 7500), "\(spread)")
        // Writes with response: a request in one event, its response in the next, so each takes two events.
        let start = air.now
        for n in 0..<6 { try await client.write(link, attribute: valueHandle, value: [UInt8(n)]) }
        #expect(air.now - start >= .microseconds(11 * 7500), "\(air.now - start)")
        await central.powerOff()
        await peripheral.powerOff()
    }

    /// A PHY the controller does not have: LE Set PHY is refused and that call fails; the link's PHYs stay.
    @Test func aRefusedPHYUpdateFailsItsCall() async throws {
        let world = World()
        let (peripheral, pc) = try await world.host()
        let (central, _) = try await world.host(at: 1)
        try await peripheral.startAdvertising(.init(data: AdvertisingData(localName: "phy")))
        let link = try await central.connect(to: LEAddress(pc.address, type: .public), timeout: .seconds(5))
        await #expect(throws: HostError.self) {
            try await central.setPHY(link, transmit: LEPHYs(rawValue: 0x08), receive: .le2M)
        }
        let updated = try await central.setPHY(link, transmit: .le2M, receive: .le2M)
        #expect(updated.txPHY == .le2M && updated.rxPHY == .le2M)
        withExtendedLifetime(peripheral) {}
    }
}
