import ArgumentParser
import BLE
import BLEHost
import BLEProtocols
import BLEVirtualController
import BLEWire

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
            both ways, subscribes to heart-rate notifications and disconnects. Every step crosses the virtual \
            controllers as HCI packets. `ble hci-demo` shows the HCI layer itself.
            """)

    @Option(help: "Distance between the central and the peripheral, in metres.")
    var distance: Double = 3

    func say(_ who: String, _ text: String) { writeLine("[\(who)] \(text)") }

    func run() async throws {
        let air = VirtualAir(clock: .realTime, seed: 2026)
        defer { air.shutdown() }
        writeLine("swift-ble demo: two hosts on virtual controllers \(distance) m apart on a simulated air\n")

        let peripheralHost = HCIHost(transport: air.addController(.init(txPower: 4)).makeHostTransport())
        try await peripheralHost.powerOn()
        let peripheral = await SamplePeripheral(host: peripheralHost, device: .lab, name: "SwiftBLELab")
        try await peripheral.start(notifyEvery: .milliseconds(200)) { text, _ in self.say("peripheral", text) }
        say("peripheral", "powered on as \(await peripheralHost.address?.description ?? "?"), advertising 'SwiftBLELab' with Battery, Heart Rate, Device Information and a custom service")

        let central = HCIHost(transport: air.addController(.init(position: Position(x: distance))).makeHostTransport())
        try await central.powerOn()
        let buffers = await central.aclBuffers
        say("central   ", "powered on as \(await central.address?.description ?? "?") (ACL buffers \(buffers.count) x \(buffers.size) bytes)")

        let report = try await findTarget("SwiftBLELab", host: central)
        say("central   ", "found \(report.data.localName ?? "?") at \(report.address.address), RSSI \(report.rssi) dBm, services \(try report.data.serviceUUIDs().map(\.description))")
        let connection = try await central.connect(to: report.address, timeout: .seconds(5))
        say("central   ", "connected: handle \(connection.handle), interval \(Double(connection.interval) * 1.25) ms")
        let gatt = GATTEngine(host: central)
        await gatt.start()
        let h = connection.handle
        say("central   ", "ATT MTU \(try await gatt.exchangeMTU(h)); the largest write is \(await gatt.maximumWriteValueLength(h, withResponse: false)) bytes without response, \(await gatt.maximumWriteValueLength(h, withResponse: true)) with")

        var tree: [(GATTService, [GATTCharacteristic])] = []
        for service in try await gatt.discoverPrimaryServices(h) {
            tree.append((service, try await gatt.discoverCharacteristics(h, of: service)))
        }
        say("central   ", "discovered \(tree.count) services, \(tree.reduce(0) { $0 + $1.1.count }) characteristics")
        for (service, characteristics) in tree {
            say("central   ", "  \(service.uuid) \(service.uuid.name ?? "")")
            for c in characteristics where c.properties.contains(.read) {
                do {
                    let value = try await gatt.read(h, attribute: c.valueHandle)
                    say("central   ", "    read \(c.uuid.name ?? c.uuid.description): \(show(value))")
                } catch {
                    say("central   ", "    read \(c.uuid.name ?? c.uuid.description): \(error)")
                }
            }
        }

        let writable = try await gatt.discoverCharacteristics(h, of: tree.first { $0.0.uuid == SampleDevice.customService }?.0 ?? tree[0].0,
                                                              uuid: SampleDevice.customWritable).first
        if let writable {
            try await gatt.write(h, attribute: writable.valueHandle, value: Array("hello with response".utf8))
            try await gatt.writeWithoutResponse(h, attribute: writable.valueHandle, value: Array("hello without response".utf8))
            try await Task.sleep(for: .milliseconds(50))
            say("central   ", "wrote both ways; read back: \(show(try await gatt.read(h, attribute: writable.valueHandle)))")
        }

        if let heartRate = tree.first(where: { $0.0.uuid == .heartRate })?.1.first(where: { $0.uuid == BluetoothUUID(0x2A37) }),
           let cccd = try await gatt.discoverDescriptors(h, of: heartRate).first(where: { $0.uuid == .clientCharacteristicConfiguration }) {
            let values = try await gatt.subscribe(h, valueHandle: heartRate.valueHandle, cccdHandle: cccd.handle)
            var count = 0
            for await value in values {
                count += 1
                say("central   ", "heart rate notification #\(count): \(value.count > 1 ? "\(value[1]) bpm" : value.hexString())")
                if count == 3 { break }
            }
            try await gatt.unsubscribe(h, valueHandle: heartRate.valueHandle, cccdHandle: cccd.handle)
        }

        let events = await central.events()
        try await central.disconnect(h)
        for await event in events {
            if case .disconnected(_, let reason) = event {
                say("central   ", "disconnected: \(reason)")
                break
            }
        }
        try await Task.sleep(for: .milliseconds(100))
        await peripheral.stop()
        writeLine("\ndone: every step above crossed the virtual controllers as HCI packets (see `ble hci-demo` for that layer).")
    }
}
