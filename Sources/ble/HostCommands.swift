import ArgumentParser
import BLE
import BLEHost
import BLEProtocols
import BLEWire
import Foundation

/// `ble serve`: run a built-in peripheral until interrupted (or for --run-for seconds).
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run a built-in sample peripheral (GATT server) until interrupted.")
    @OptionGroup var options: HostOptions
    @Option(help: "The sample device: \(SampleDevice.allCases.map(\.rawValue).joined(separator: ", ")).")
    var device: SampleDevice = .lab
    @Option(help: "The advertised and GAP device name.")
    var name: String?
    @Option(help: "Stop after this many seconds (0: run until interrupted).")
    var runFor: Double = 0
    @Option(help: "Milliseconds between heart-rate notifications.")
    var notifyInterval: Int = 1000

    func run() async throws {
        let (host, world) = try await options.openHost()
        let name = name ?? device.defaultName
        let peripheral = await SamplePeripheral(host: host, device: device, name: name)
        let json = options.json
        try await peripheral.start(notifyEvery: .milliseconds(max(1, notifyInterval))) { text, fields in emit(json, text, fields) }
        let address = await host.address?.description ?? "?"
        emitTable(await peripheral.manager.database, json: json)
        emit(json, "serving '\(name)' (\(device.rawValue)) from \(address) on \(options.hci)",
             ["event": "serving", "name": name, "address": address])
        if runFor > 0 {
            try await Task.sleep(for: .seconds(runFor))
        } else {
            while true { try await Task.sleep(for: .seconds(3600)) }
        }
        await peripheral.stop()
        await host.powerOff()
        withExtendedLifetime(world) {}
    }
}

/// Prints a served database the way `ble explore` prints a discovered one (same JSON fields, without values), so
/// the two can be compared.
func emitTable(_ database: GATTDatabase, json: Bool) {
    for attribute in database.attributes {
        switch attribute.role {
        case .serviceDeclaration(let end):
            guard let uuid = try? BluetoothUUID(littleEndian: attribute.value) else { continue }
            let kind = attribute.type == BluetoothUUID(0x2800) ? "service" : "secondaryService"
            emit(json, "\(kind == "service" ? "service" : "secondary service") \(uuid) \(uuid.name.map { "(\($0)) " } ?? "")handles 0x\(hex4(attribute.handle))–0x\(hex4(end))",
                 ["kind": kind, "uuid": uuid.description, "start": String(attribute.handle), "end": String(end)])
        case .characteristicValue(let properties):
            emit(json, "  characteristic \(attribute.type) \(attribute.type.name.map { "(\($0)) " } ?? "")value 0x\(hex4(attribute.handle)) [\(describe(properties))]",
                 ["kind": "characteristic", "uuid": attribute.type.description, "handle": String(attribute.handle), "properties": describe(properties)])
        case .clientConfiguration, .descriptor:
            emit(json, "    descriptor \(attribute.type) \(attribute.type.name.map { "(\($0)) " } ?? "")0x\(hex4(attribute.handle))",
                 ["kind": "descriptor", "uuid": attribute.type.description, "handle": String(attribute.handle)])
        case .include, .characteristicDeclaration:
            break
        }
    }
}

/// `ble scan`: list advertising devices.
struct Scan: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Scan for advertising devices.")
    @OptionGroup var options: HostOptions
    @Option(name: .customLong("service"), help: "Only devices advertising this service UUID (repeatable).")
    var services: [BluetoothUUID] = []
    @Flag(help: "Report every advertisement, not one per device.")
    var duplicates = false
    @Flag(help: "Passive scan: no scan requests, no scan responses.")
    var passive = false
    @Option(help: "Seconds to scan.")
    var timeout: Double = 3

    func run() async throws {
        let (host, world) = try await options.openHost()
        // The central's scan merges advertising data with scan responses, filters on services found in either, and
        // reports a device again only when its data changes (or every time with --duplicates).
        let central = Central(host: host)
        let results = try await central.scan(services: services, allowDuplicates: duplicates, active: !passive)
        let json = options.json
        let consumer = Task {
            for try await device in results {
                let name = device.name ?? "(no name)"
                let uuids = device.serviceUUIDs.map(\.description)
                let manufacturer = device.manufacturerData.map { "\($0.companyID):\($0.data.hexString())" }.joined(separator: ",")
                emit(json, "\(device.address.address) \(device.address.type) RSSI \(device.rssi) dBm\(device.isConnectable ? " connectable" : "") \"\(name)\" services \(uuids)\(manufacturer.isEmpty ? "" : " mfr \(manufacturer)")",
                     ["address": device.address.address.description, "addressType": "\(device.address.type)", "rssi": String(device.rssi),
                      "name": name, "services": uuids.joined(separator: ","), "manufacturer": manufacturer,
                      "connectable": "\(device.isConnectable)"])
            }
        }
        try await Task.sleep(for: .seconds(timeout))
        consumer.cancel()
        await central.stopScan()
        await host.powerOff()
        withExtendedLifetime(world) {}
    }
}

/// `ble explore TARGET`: connect, discover everything, read every readable value, print the tree.
struct Explore: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Connect to a device, discover its GATT database and read every readable value.")
    @OptionGroup var options: HostOptions
    @Argument(help: "The device's address (AA:BB:CC:DD:EE:FF) or advertised name.")
    var target: String

    func run() async throws {
        let (host, world) = try await options.openHost()
        let session = try await ClientSession.open(target, host: host)
        let json = options.json
        let h = session.connection.handle
        let mtu = await session.engine.mtu(h)
        emit(json, "connected to \(session.connection.peer.address), ATT MTU \(mtu)",
             ["event": "connected", "peer": session.connection.peer.address.description, "mtu": String(mtu)])
        for (service, characteristics) in session.tree {
            emit(json, "service \(service.uuid) \(service.uuid.name.map { "(\($0)) " } ?? "")handles 0x\(hex4(service.startHandle))–0x\(hex4(service.endHandle))",
                 ["kind": "service", "uuid": service.uuid.description, "start": String(service.startHandle), "end": String(service.endHandle)])
            for (c, descriptors) in characteristics {
                var valueText = ""
                var valueHex = ""
                if c.properties.contains(.read) {
                    do {
                        let value = try await session.engine.read(h, attribute: c.valueHandle)
                        valueText = " = " + show(value)
                        valueHex = value.hexString()
                    } catch {
                        valueText = " ! \(error)"
                    }
                }
                emit(json, "  characteristic \(c.uuid) \(c.uuid.name.map { "(\($0)) " } ?? "")value 0x\(hex4(c.valueHandle)) [\(describe(c.properties))]\(valueText)",
                     ["kind": "characteristic", "uuid": c.uuid.description, "handle": String(c.valueHandle), "properties": describe(c.properties), "value": valueHex])
                for d in descriptors {
                    emit(json, "    descriptor \(d.uuid) \(d.uuid.name.map { "(\($0)) " } ?? "")0x\(hex4(d.handle))",
                         ["kind": "descriptor", "uuid": d.uuid.description, "handle": String(d.handle)])
                }
            }
        }
        await session.close()
        withExtendedLifetime(world) {}
    }
}

func hex4(_ v: UInt16) -> String { [UInt8(v >> 8), UInt8(truncatingIfNeeded: v)].hexString() }

/// `ble read TARGET CHAR-UUID`.
struct Read: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Read a characteristic (long values whole).")
    @OptionGroup var options: HostOptions
    @Argument var target: String
    @Argument(help: "The characteristic UUID.") var characteristic: BluetoothUUID

    func run() async throws {
        let (host, world) = try await options.openHost()
        let session = try await ClientSession.open(target, host: host)
        let (c, _) = try session.characteristic(characteristic)
        let value = try await session.engine.read(session.connection.handle, attribute: c.valueHandle)
        emit(options.json, show(value), ["uuid": characteristic.description, "value": value.hexString()])
        await session.close()
        withExtendedLifetime(world) {}
    }
}

/// `ble write TARGET CHAR-UUID HEX [--without-response]`.
struct Write: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Write a characteristic (long values with prepared writes).")
    @OptionGroup var options: HostOptions
    @Argument var target: String
    @Argument(help: "The characteristic UUID.") var characteristic: BluetoothUUID
    @Argument(help: "The value in hex.") var hex: String
    @Flag(help: "Write without response (Write Command).") var withoutResponse = false

    func run() async throws {
        guard let value = [UInt8](hex: hex) else { throw ValidationError("'\(hex)' is not hex") }
        let (host, world) = try await options.openHost()
        let session = try await ClientSession.open(target, host: host)
        let (c, _) = try session.characteristic(characteristic)
        if withoutResponse {
            try await session.engine.writeWithoutResponse(session.connection.handle, attribute: c.valueHandle, value: value)
        } else {
            try await session.engine.write(session.connection.handle, attribute: c.valueHandle, value: value)
        }
        emit(options.json, "wrote \(value.count) byte(s) \(withoutResponse ? "without" : "with") response",
             ["uuid": characteristic.description, "written": String(value.count)])
        await session.close()
        withExtendedLifetime(world) {}
    }
}

/// `ble subscribe TARGET CHAR-UUID [--count N]`.
struct Subscribe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Subscribe to notifications (or indications) and print them.")
    @OptionGroup var options: HostOptions
    @Argument var target: String
    @Argument(help: "The characteristic UUID.") var characteristic: BluetoothUUID
    @Option(help: "Stop after this many values.") var count: Int = 5

    func run() async throws {
        let (host, world) = try await options.openHost()
        let session = try await ClientSession.open(target, host: host)
        let (c, descriptors) = try session.characteristic(characteristic)
        guard let cccd = descriptors.first(where: { $0.uuid == BluetoothUUID(0x2902) }) else {
            throw ValidationError("\(characteristic) has no Client Characteristic Configuration descriptor")
        }
        let indications = !c.properties.contains(.notify) && c.properties.contains(.indicate)
        let values = try await session.engine.subscribe(session.connection.handle, valueHandle: c.valueHandle, cccdHandle: cccd.handle,
                                                        indications: indications)
        var received = 0
        for await value in values {
            received += 1
            emit(options.json, "\(indications ? "indication" : "notification") #\(received): \(show(value))",
                 ["uuid": characteristic.description, "value": value.hexString(), "index": String(received)])
            if received >= count { break }
        }
        try? await session.engine.unsubscribe(session.connection.handle, valueHandle: c.valueHandle, cccdHandle: cccd.handle)
        await session.close()
        withExtendedLifetime(world) {}
    }
}
