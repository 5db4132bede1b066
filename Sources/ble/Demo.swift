import ArgumentParser
import BLE
import BLEFiles

/// `ble demo`: narrated sessions on the embedded virtual controller; `ble demo` alone runs the GATT session.
struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a narrated demo on the embedded virtual controller (default: the GATT session).",
        subcommands: [GATTDemo.self, BeaconDemo.self],
        defaultSubcommand: GATTDemo.self)
}

/// `ble demo [gatt]`: a whole BLE session on the embedded virtual controller, narrated.
struct GATTDemo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gatt",
        abstract: "Run a narrated central/peripheral session on the embedded virtual controller.",
        discussion: """
            A peripheral with Battery, Heart Rate, Device Information and a custom service, and a central that \
            scans, connects, exchanges the MTU, discovers everything, reads (a 300-byte value included), writes \
            both ways, subscribes to heart-rate notifications and disconnects. The central is a `Central` and the \
            device it talks to a `RemotePeripheral`; the peripheral is the lab `SamplePeripheral` on a \
            `PeripheralManager`. Every step crosses the virtual controllers as HCI packets. `ble hci-demo` shows \
            the HCI layer itself.
            """)

    @Option(help: "Distance between the central and the peripheral, in metres.")
    var distance: Double = 3

    func say(_ who: String, _ text: String) { writeLine("[\(who)] \(text)") }

    func run() async throws {
        let air = VirtualAir(clock: .realTime, seed: 2026)
        defer { air.shutdown() }
        writeLine("swift-ble demo: two hosts on virtual controllers \(distance) m apart on a simulated air\n")

        let manager = try await PeripheralManager(transport: air.addController(.init(txPower: 4)).makeHostTransport(), deviceName: "SwiftBLELab")
        let lab = await SamplePeripheral(manager: manager, device: .lab, name: "SwiftBLELab")
        try await lab.start(notifyEvery: .milliseconds(200), entries: { text, _ in self.say("peripheral", text) })
        say("peripheral", "powered on as \(await manager.address?.address.description ?? "?"), advertising 'SwiftBLELab' with Battery, Heart Rate, Device Information and a custom service")

        let central = try await Central(transport: air.addController(.init(position: Position(x: distance))).makeHostTransport())
        say("central   ", "powered on as \(await central.address?.address.description ?? "?"); it pairs when a value needs it")
        let securityEvents = await central.connectionEvents()
        let pairingNarrator = Task {
            for await event in securityEvents {
                switch event {
                case .pairingCompleted(_, let outcome):
                    say("central   ", "paired (the read was refused for security): \(outcome.method), \(outcome.security)\(outcome.bonded ? ", bonded" : "")")
                case .pairingFailed(_, let failure) where failure.reason == .authenticationRequirements:
                    // Not a bug: Core 5.4, Vol 3, Part H, 2.3.5.1 gives an authenticated key only to a method with a
                    // display or a keyboard on a side, and this central has neither.
                    say("central   ", "pairing refused, as expected: the characteristic needs an authenticated (MITM-protected) key, "
                        + "and only a method with a display or a keyboard on one side gives one; this central has neither "
                        + "(IO capability NoInputNoOutput), so Just Works was all it could offer, and the pairing ends with "
                        + "\(failure.reason.map { "\($0)" } ?? "\(failure)") (Core 5.4, Vol 3, Part H, 2.3.5.1). "
                        + "A passkey pairing meets it: `ble pair --io keyboard --mitm`, docs/pairing.md")
                case .pairingFailed(_, let failure):
                    say("central   ", "pairing failed: \(failure)")
                default:
                    break
                }
            }
        }
        defer { pairingNarrator.cancel() }
        do {
            try await session(central)
        } catch {
            await lab.stop()
            await central.powerOff()
            await manager.powerOff()
            throw error
        }
        try await Task.sleep(for: .milliseconds(100))
        await lab.stop()
        await central.powerOff()
        await manager.powerOff()
        writeLine("\ndone: every step above crossed the virtual controllers as HCI packets (see `ble hci-demo` for that layer).")
    }

    /// The central's side: scan, connect, discover, read, write, subscribe, disconnect.
    func session(_ central: Central) async throws {
        let found = try await findTarget("SwiftBLELab", central: central, timeout: .seconds(10))
        say("central   ", "found \(found.name?.escapingControlCharacters ?? "?") at \(found.address.address), RSSI \(found.rssi) dBm, services \(found.serviceUUIDs.map(\.description))")
        let peripheral = try await central.connect(found, timeout: .seconds(5))
        let connection = await peripheral.connection
        say("central   ", "connected: handle \(connection.handle), interval \(Double(connection.interval) * 1.25) ms")
        say("central   ", "ATT MTU \(await peripheral.mtu) (exchanged on connect); the largest write is \(await peripheral.maximumWriteValueLength(for: .withoutResponse)) bytes without response, \(await peripheral.maximumWriteValueLength(for: .withResponse)) with")

        var tree: [(GATTService, [GATTCharacteristic])] = []
        for service in try await peripheral.discoverServices() {
            tree.append((service, try await peripheral.discoverCharacteristics(for: service)))
        }
        say("central   ", "discovered \(tree.count) services, \(tree.reduce(0) { $0 + $1.1.count }) characteristics")
        for (service, characteristics) in tree {
            say("central   ", "  \(service.uuid) \(service.uuid.name ?? "")")
            for c in characteristics where c.properties.contains(.read) {
                do {
                    let value = try await peripheral.readValue(for: c)
                    say("central   ", "    read \(c.uuid.name ?? c.uuid.description): \(abbreviated(value))")
                } catch {
                    say("central   ", "    read \(c.uuid.name ?? c.uuid.description): \(describeError(error))")
                }
            }
        }

        let characteristics = tree.flatMap(\.1)
        if let writable = characteristics.first(where: { $0.uuid == SampleDevice.customWritable }) {
            try await peripheral.writeValue(Array("hello with response".utf8), for: writable, type: .withResponse)
            try await peripheral.writeValue(Array("hello without response".utf8), for: writable, type: .withoutResponse)
            try await Task.sleep(for: .milliseconds(50))
            say("central   ", "wrote both ways; read back: \(show(try await peripheral.readValue(for: writable)))")
        }

        if let heartRate = characteristics.first(where: { $0.uuid == BluetoothUUID(0x2A37) }) {
            let values = try await peripheral.notifications(for: heartRate)
            var count = 0
            for await value in values {
                count += 1
                say("central   ", "heart rate notification #\(count): \(value.count > 1 ? "\(value[1]) bpm" : value.hexString())")
                if count == 3 { break }
            }
            try await peripheral.stopNotifications(for: heartRate)
        }

        let states = await peripheral.stateUpdates()
        try await central.disconnect(peripheral)
        for await state in states {
            if case .disconnected(let reason) = state {
                say("central   ", "disconnected: \(reason)")
                break
            }
        }
    }

    /// A value for the narration: whole when short, its first 32 bytes and its length when long.
    func abbreviated(_ value: [UInt8]) -> String {
        value.count > 32 ? value.prefix(32).hexString() + "… (\(value.count) bytes)" : show(value)
    }
}
