import BLE
import BLEFixtures
import Testing

/// Connection parameter updates on the public API, on a virtual air: the central changes them
/// (``RemotePeripheral/updateConnectionParameters(interval:latency:supervisionTimeout:)``, LE Connection Update), the
/// peripheral asks for them (``PeripheralManager/requestConnectionParameters(interval:latency:supervisionTimeout:for:)``,
/// L2CAP Connection Parameter Update Request), and both sides see the values the controllers report.
@Suite(.timeLimit(.minutes(1))) struct ConnectionParameterTests {
    struct Pair {
        let devices: TwoDevices
        let remote: RemotePeripheral
        let atPeripheral: HostConnection
        var manager: PeripheralManager { devices.peripheral }
        var peripheralAdapter: Adapter { devices.peripheral.adapter }
        var central: Central { devices.central }
        func shutdown() { devices.shutdown() }
    }

    static func connected() async throws -> Pair {
        let devices = try await TwoDevices(peripheralName: "P")
        let events = await devices.peripheral.centralEvents()
        try await devices.peripheral.startAdvertising(name: "P")
        let remote = try await devices.connect(exchangeMTU: false)
        for await event in events {
            if case .connected(let connection) = event {
                return Pair(devices: devices, remote: remote, atPeripheral: connection)
            }
        }
        throw HostError(.notConnected, "the peripheral saw no connection")
    }

    static func parameters(_ connection: HostConnection) -> [UInt16] {
        [connection.interval, connection.latency, connection.supervisionTimeout]
    }

    @Test func theCentralUpdatesAndBothSidesSeeTheNewParameters() async throws {
        let pair = try await Self.connected()
        defer { pair.shutdown() }
        let before = await pair.remote.connection
        #expect(!(80...80).contains(before.interval))
        let events = await pair.peripheralAdapter.events()
        let updated = try await pair.remote.updateConnectionParameters(interval: 80...80, latency: 3, supervisionTimeout: 600)
        #expect(Self.parameters(updated) == [80, 3, 600])
        #expect(Self.parameters(await pair.remote.connection) == [80, 3, 600])
        for await event in events {
            if case .connectionUpdated(let connection) = event, connection.link == pair.atPeripheral.link {
                #expect(Self.parameters(connection) == [80, 3, 600])
                break
            }
        }
        // Values the controller refuses (a supervision timeout too short for the interval and latency) throw.
        await #expect(throws: HostError.self) {
            try await pair.remote.updateConnectionParameters(interval: 400...400, latency: 10, supervisionTimeout: 10)
        }
    }

    @Test func thePeripheralAsksAndTheCentralApplies() async throws {
        let pair = try await Self.connected()
        defer { pair.shutdown() }
        let updated = try await pair.manager.requestConnectionParameters(interval: 60...60, latency: 1, supervisionTimeout: 400,
                                                                         for: pair.atPeripheral)
        #expect(Self.parameters(updated) == [60, 1, 400])
        var seen: [UInt16] = []
        for _ in 0..<100 where seen != [60, 1, 400] {
            seen = Self.parameters(await pair.remote.connection)
            if seen != [60, 1, 400] { try await Task.sleep(for: .milliseconds(10)) }
        }
        #expect(seen == [60, 1, 400])
        // Out of range: refused before anything is sent.
        await #expect(throws: HostError.self) {
            try await pair.manager.requestConnectionParameters(interval: 2...2, supervisionTimeout: 400, for: pair.atPeripheral)
        }
        // The request is a peripheral's: on the central's side of the link it is refused (wrong role).
        let onCentral = await PeripheralManager(adapter: pair.central.adapter, deviceName: "C")
        let centralLink = await pair.remote.connection
        await #expect(throws: HostError.self) {
            try await onCentral.requestConnectionParameters(interval: 60...60, supervisionTimeout: 400, for: centralLink)
        }
    }
}
