import ArgumentParser
import BLE
import BLEFiles
import BLEProfiles
import Foundation

/// `ble serve`: run a simulated device until interrupted (or for --run-for seconds).
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a simulated device (GATT server) until interrupted.",
        discussion: "Devices (--device NAME; each GATT device advertises its name and services and serves changing values; bthome broadcasts its readings, not connectable):\n"
            + SimulatedDevice.allCases.map { "  \($0.rawValue.padding(toLength: 17, withPad: " ", startingAt: 0))\($0.defaultName): \($0.summary)" }
                .joined(separator: "\n"))
    @OptionGroup var options: HostOptions
    @Option(help: "The simulated device: \(SimulatedDevice.allCases.map(\.rawValue).joined(separator: ", ")) (see below).")
    var device: SimulatedDevice = .lab
    @Option(help: "The advertised and GAP device name (default: the device's own).")
    var name: String?
    @Option(help: "Stop after this many seconds (0: run until interrupted).")
    var runFor: Double = 0
    @Option(help: "Milliseconds between the device's value changes (the lab device's heart-rate notifications; default: the device's own pace).")
    var notifyInterval: Int?
    @Option(help: "Serve the device this JSON file describes (the format: README, docs/gatt-device.schema.json; `ble explore --save` writes it) instead of a simulated one.")
    var gatt: String?
    @Option(help: "Serve the device a btsnoop capture shows (a session of `ble explore --btsnoop` or any host's capture): its database at its handles, the values and errors it gave, its notifications; what the capture does not show is refused.")
    var replay: String?
    @Option(help: "With --replay: the device in the capture to serve, by address (default: the first the capture connected to).")
    var peer: String?
    @Option(help: "With --replay: also write what the capture shows to this file, in the format --gatt reads.")
    var save: String?
    @Flag(help: "Advertise with extended PDUs (Bluetooth 5 extended advertising: name and services in one advertisement, found by extended scans only). Needs a controller with extended advertising.")
    var extended = false
    @Flag(help: "With --extended: advertise on LE Coded (long range) rather than LE 1M.")
    var coded = false
    @Option(name: .customLong("adv-data"), help: "With --extended: AD structures in hex for a second, non-connectable extended advertisement named NAME Data (up to the controller's maximum, 1650 bytes on the virtual controller: connectable extended advertising carries at most 245).")
    var advertisingData: String?
    @OptionGroup var security: SecurityOptions
    @Flag(help: "Serve Server Supported Features (0x2B3A) with its EATT bit in the Generic Attribute service, so that clients that look for it (BlueZ) open Enhanced ATT bearers; the device's handles then start 2 later. EATT bearers are accepted on encrypted links with or without it.")
    var eatt = false

    func validate() throws {
        if gatt != nil && replay != nil { throw ValidationError("--gatt and --replay are two different devices: give one") }
        if eatt, gatt != nil || replay != nil {
            throw ValidationError("--eatt goes with --device: a described or replayed device serves the database its file or capture says")
        }
        if replay == nil && (peer != nil || save != nil) { throw ValidationError("--peer and --save go with --replay") }
        if coded || advertisingData != nil, !extended { throw ValidationError("--coded and --adv-data need --extended") }
        if extended, device == .bthome {
            throw ValidationError("--extended goes with a GATT device: the BTHome sensor advertises as BTHome sensors do (legacy, non-connectable)")
        }
        if extended, gatt != nil || replay != nil {
            throw ValidationError("--extended goes with --device: a described or replayed device advertises as its file or capture says")
        }
        if let advertisingData {
            guard let bytes = [UInt8](hex: advertisingData), (try? AdvertisingData(bytes: bytes)) != nil else {
                throw ValidationError("--adv-data must be AD structures in hex (length, type, data...)")
            }
        }
    }

    func run() async throws {
        if let gatt {
            try await serveDescription(try loadDescription(gatt), from: gatt, name: name, options: options, security: security, runFor: runFor)
            return
        }
        if let replay {
            let description = try replayedDescription(replay, peer: peer, json: options.json)
            if let save { try writeDescription(description, to: save) }
            try await serveDescription(description, from: replay, name: name, options: options, security: security, runFor: runFor)
            return
        }
        let name = name ?? device.defaultName
        let json = options.json
        let device = device
        let tick = notifyInterval.map { Duration.milliseconds(max(1, $0)) }
        try await options.withPeripheralManager(deviceName: name, security: security.configuration(for: try options.spec())) { manager in
            // The device's log prints passkeys itself (a centralEvents line); the agent answers for the user.
            await manager.setPairingAgent(CommandLineAgent(passkey: security.passkey, json: json, printsPasskeys: false))
            // Before the device publishes its services: Server Supported Features goes in the Generic Attribute service.
            if eatt { await manager.replaceDatabase(with: GATTDatabase(deviceName: name, services: [], enhancedATT: true)) }
            let running = try await during("starting the \(device.rawValue) device") {
                try await device.start(on: manager, name: name, tick: tick) { text, fields in emit(json, text, fields) }
            }
            var advertised = "advertising"
            if extended {
                // The device's advertisement and scan response in one connectable extended advertisement; --adv-data in a
                // second, non-connectable one (connectable extended advertising carries at most 245 bytes).
                let layout = AdvertisingData.layout(name: name, serviceUUIDs: device.services)
                let data = layout.data.merged(withScanResponse: layout.scanResponse)
                let phy: LEPHY = coded ? .leCoded : .le1M
                var advertisements = [Advertisement(data: data, kind: .connectable, isExtended: true, primaryPHY: phy)]
                if let advertisingData {
                    let extra = try AdvertisingData(bytes: [UInt8](hex: advertisingData) ?? [])
                    let named = AdvertisingData(flags: .leOnlyGeneralDiscoverable, localName: "\(name) Data")
                    advertisements.append(Advertisement(data: AdvertisingData(structures: named.structures + extra.structures),
                                                        kind: .nonConnectable, isExtended: true, primaryPHY: phy))
                }
                try await during("starting extended advertising") {
                    try await manager.startAdvertising(advertisements, restartAfterConnection: true)
                }
                advertised = "advertising (extended, \(coded ? "LE Coded" : "LE 1M"), "
                    + advertisements.map { "\($0.data.encoded.count) bytes" }.joined(separator: " + ") + ")"
            }
            let address = await manager.address?.address.description ?? "?"
            emitTable(await manager.database, json: json)
            let services = device.services.map(\.description)
            emit(json, "serving '\(name)' (\(device.rawValue)) from \(address) on \(options.hci), \(advertised) \(services.isEmpty ? "no services (a broadcaster, not connectable)" : "services " + services.joined(separator: ", "))",
                 ["event": "serving", "name": .string(name), "address": .string(address), "device": .string(device.rawValue),
                  "services": .array(services.map(JSONValue.string)), "extended": .bool(extended),
                  "phy": .string(coded ? "Coded" : "1M")])
            do {
                if runFor > 0 {
                    try await Task.sleep(for: .seconds(runFor))
                } else {
                    while true { try await Task.sleep(for: .seconds(3600)) }
                }
            } catch {
                await running.stop()
                throw error
            }
            await running.stop()
        }
    }
}

/// Prints a served database the way `ble explore` prints a discovered one (same JSON fields, without values), so
/// the two can be compared.
func emitTable(_ database: GATTDatabase, json: Bool) {
    for attribute in database.attributes {
        switch attribute.role {
        case .serviceDeclaration(let end):
            guard let uuid = try? BluetoothUUID(littleEndian: attribute.value) else { continue }
            let primary = attribute.type == BluetoothUUID(0x2800)
            emit(json, "\(primary ? "service" : "secondary service") \(named(uuid))handles 0x\(hex4(attribute.handle))–0x\(hex4(end))",
                 ["kind": .string(primary ? "service" : "secondaryService"), "uuid": .string(uuid.description),
                  "start": .integer(attribute.handle), "end": .integer(end)])
        case .characteristicValue(let properties):
            emit(json, "  characteristic \(named(attribute.type))value 0x\(hex4(attribute.handle)) [\(describe(properties))]",
                 ["kind": "characteristic", "uuid": .string(attribute.type.description), "handle": .integer(attribute.handle),
                  "properties": .array(propertyNames(properties).map(JSONValue.string))])
        case .clientConfiguration, .descriptor:
            emit(json, "    descriptor \(named(attribute.type))0x\(hex4(attribute.handle))",
                 ["kind": "descriptor", "uuid": .string(attribute.type.description), "handle": .integer(attribute.handle)])
        case .include, .characteristicDeclaration:
            break
        }
    }
}

/// `ble explore TARGET`: connect, discover everything, read every readable value, print the tree.
struct Explore: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Connect to a device, discover its GATT database and read every readable value.",
        discussion: "A value the device refuses to give is shown with the error, and the exploration goes on.")
    @OptionGroup var options: HostOptions
    @OptionGroup var target: TargetOptions
    @OptionGroup var security: SecurityOptions
    @Flag(help: "Do not pair when the device refuses a value for security (show the refusal instead).") var noPair = false
    @Option(help: "Write what was found (advertising data, the whole database with its handles, every value read, the errors reads answered) to this file, in the format `ble serve --gatt` serves: a clone.")
    var save: String?

    func run() async throws {
        let json = options.json
        let save = save
        let noPair = noPair
        // Saving pairs by hand, so that the security each value needs is seen and kept.
        try await ClientSession.run(options, target, security: security, pairsOnDemand: save == nil && !noPair,
                                    collectsAdvertising: save != nil) { session in
            let peripheral = session.peripheral
            let mtu = await peripheral.mtu
            let peer = peripheral.id.address.description
            emit(json, "connected to \(peer), ATT MTU \(mtu)", ["event": "connected", "peer": .string(peer), "mtu": .int(mtu)])
            if let report = session.discovery {
                emit(json, "discovered in \(report.requests) round trip\(report.requests == 1 ? "" : "s")\(report.fromCache ? " (from the GATT cache: the Database Hash is unchanged)" : "")",
                     ["event": "discovered", "round_trips": .int(report.requests), "from_cache": .bool(report.fromCache)])
            }
            var saved: [(start: AttributeHandle, service: GATTDeviceDescription.Service)] = []
            var savedIncludes: [(service: Int, included: GATTService)] = []
            for (service, characteristics) in session.tree {
                emit(json, "service \(named(service.uuid))handles 0x\(hex4(service.startHandle))–0x\(hex4(service.endHandle))",
                     ["kind": "service", "uuid": .string(service.uuid.description), "start": .integer(service.startHandle), "end": .integer(service.endHandle)])
                var savedCharacteristics: [GATTDeviceDescription.Characteristic] = []
                for (c, descriptors) in characteristics {
                    var fields: [String: JSONValue] = ["kind": "characteristic", "uuid": .string(c.uuid.description), "handle": .integer(c.valueHandle),
                                                       "properties": .array(propertyNames(c.properties).map(JSONValue.string))]
                    var valueText = ""
                    var clone = GATTDeviceDescription.Characteristic(uuid: c.uuid, properties: c.properties, handle: c.declarationHandle, valueHandle: c.valueHandle)
                    if c.properties.contains(.read) {
                        let result: Result<[UInt8], GATTError>
                        if save != nil {
                            let read = try await readForClone(session, pairs: !noPair) { try await peripheral.readValue(for: c) }
                            clone.value = read.value
                            clone.readError = read.readError
                            clone.permissions = read.permissions.union(clone.permissions.subtracting(.readable))
                            if !read.permissions.contains(.readable) { clone.permissions.remove(.readable) }
                            result = read.shown ?? .success(read.value)
                        } else {
                            do {
                                result = .success(try await peripheral.readValue(for: c))
                            } catch let error as GATTError {
                                guard error.code.attError != nil else { throw InContext(context: "reading \(c.uuid) on \(target.target)", underlying: error) }
                                result = .failure(error)
                            }
                        }
                        switch result {
                        case .success(let value):
                            var decoding = ValueDecoding()
                            let decoded = decoding.decode(c.uuid, value)
                            valueText = " = " + show(value) + decoded.text
                            fields["value"] = .string(value.hexString())
                            fields = fields.adding(decoded.fields)
                        case .failure(let error):
                            // The device refused this one (encryption needed, an application error...): say so, go on.
                            valueText = " ! \(error.reason)"
                            fields["error"] = .string(error.reason)
                            if let code = error.code.attError { fields["att_error"] = .integer(code.rawValue) }
                        }
                    }
                    emit(json, "  characteristic \(named(c.uuid))value 0x\(hex4(c.valueHandle)) [\(describe(c.properties))]\(valueText)", fields)
                    for d in descriptors {
                        emit(json, "    descriptor \(named(d.uuid))0x\(hex4(d.handle))",
                             ["kind": "descriptor", "uuid": .string(d.uuid.description), "handle": .integer(d.handle)])
                        guard save != nil else { continue }
                        var descriptor = GATTDeviceDescription.Descriptor(uuid: d.uuid, handle: d.handle)
                        // A CCCD's value is each client's own: not cloned.
                        if d.uuid != BluetoothUUID(0x2902) {
                            let read = try await readForClone(session, pairs: !noPair) { try await peripheral.readValue(for: d) }
                            descriptor.value = read.value
                            descriptor.readError = read.readError
                            descriptor.permissions = read.permissions
                        }
                        clone.descriptors.append(descriptor)
                    }
                    savedCharacteristics.append(clone)
                }
                guard save != nil else { continue }
                saved.append((service.startHandle, GATTDeviceDescription.Service(uuid: service.uuid, handle: service.startHandle, endHandle: service.endHandle,
                                                                                 characteristics: savedCharacteristics)))
                let includes = try await during("discovering the services \(service.uuid) includes") { try await peripheral.discoverIncludedServices(for: service) }
                for included in includes { savedIncludes.append((saved.count - 1, included)) }
            }
            guard let save else { return }
            // Included services that are not primary (secondary ones) are not in the tree: discovered here.
            for (_, included) in savedIncludes where !saved.contains(where: { $0.start == included.startHandle }) {
                let found = try await during("discovering the secondary service \(included.uuid)") {
                    try await peripheral.discoverCharacteristics(for: GATTService(uuid: included.uuid, isPrimary: false, startHandle: included.startHandle, endHandle: included.endHandle))
                }
                var characteristics: [GATTDeviceDescription.Characteristic] = []
                for c in found {
                    var clone = GATTDeviceDescription.Characteristic(uuid: c.uuid, properties: c.properties, handle: c.declarationHandle, valueHandle: c.valueHandle)
                    if c.properties.contains(.read) {
                        let read = try await readForClone(session, pairs: !noPair) { try await peripheral.readValue(for: c) }
                        clone.value = read.value
                        clone.readError = read.readError
                        clone.permissions = read.permissions.union(clone.permissions.subtracting(.readable))
                        if !read.permissions.contains(.readable) { clone.permissions.remove(.readable) }
                    }
                    for d in try await peripheral.discoverDescriptors(for: c) {
                        var descriptor = GATTDeviceDescription.Descriptor(uuid: d.uuid, handle: d.handle)
                        if d.uuid != BluetoothUUID(0x2902) {
                            let read = try await readForClone(session, pairs: !noPair) { try await peripheral.readValue(for: d) }
                            descriptor.value = read.value
                            descriptor.readError = read.readError
                            descriptor.permissions = read.permissions
                        }
                        clone.descriptors.append(descriptor)
                    }
                    characteristics.append(clone)
                }
                saved.append((included.startHandle, GATTDeviceDescription.Service(uuid: included.uuid, isPrimary: false, handle: included.startHandle,
                                                                                  endHandle: included.endHandle, characteristics: characteristics)))
            }
            let order = saved.indices.sorted { saved[$0].start < saved[$1].start }
            var services = order.map { saved[$0].service }
            for (owner, included) in savedIncludes {
                guard let from = order.firstIndex(of: owner), let to = order.firstIndex(where: { saved[$0].start == included.startHandle }) else { continue }
                services[from].includes.append(to)
            }
            let advertising = GATTDeviceDescription.advertising(from: session.advertisement)
            let description = GATTDeviceDescription(name: advertising.name, advertising: advertising, services: services)
            do {
                try Data(description.jsonText().utf8).write(to: URL(fileURLWithPath: save))
            } catch {
                throw CommandFailure.failed("cannot write \(save): \(error.localizedDescription)")
            }
            let count = services.reduce(0) { $0 + $1.characteristics.count }
            emit(json, "saved \(services.count) services and \(count) characteristics to \(save)",
                 ["event": "saved", "file": .string(save), "services": .int(services.count), "characteristics": .int(count)])
        }
    }
}

/// `ble read TARGET CHAR-UUID`.
struct Read: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Read a characteristic (a long value whole).")
    @OptionGroup var options: HostOptions
    @OptionGroup var target: TargetOptions
    @Argument(help: "The characteristic UUID.") var characteristic: BluetoothUUID
    @OptionGroup var security: SecurityOptions
    @Flag(help: "Do not pair when the device refuses the read for security (exit 3 with the ATT error instead).") var noPair = false
    @Option(help: ArgumentHelp("After the read, make sure N Enhanced ATT bearers are open (the link must be encrypted: pair first) and read the characteristic N + 1 times at once, over every bearer.", valueName: "N"))
    var eatt: Int?

    func run() async throws {
        try await ClientSession.run(options, target, security: security, pairsOnDemand: !noPair) { session in
            let c = try session.characteristic(characteristic)
            let value = try await during("reading \(characteristic) on \(target.target)") { try await session.peripheral.readValue(for: c) }
            if let eatt {
                let peripheral = session.peripheral
                // EATT bearers need an encrypted link: encrypted with the bond if there is one, paired otherwise.
                if await !peripheral.security.isEncrypted {
                    _ = try await during("securing the link to \(target.target) for EATT") { try await peripheral.pair(mitm: security.mitm) }
                }
                let open = try await during("opening \(eatt) EATT bearers to \(target.target)") { try await peripheral.openEnhancedBearers(count: eatt) }
                let values = try await during("reading \(characteristic) over every bearer") {
                    try await withThrowingTaskGroup(of: [UInt8].self) { group in
                        for _ in 0...open { group.addTask { try await peripheral.readValue(for: c) } }
                        var values: [[UInt8]] = []
                        for try await value in group { values.append(value) }
                        return values
                    }
                }
                emit(options.json, "\(open) EATT bearers; \(values.count) reads at once: " + values.map { show($0) }.joined(separator: ", "),
                     ["event": "eatt", "bearers": .int(open), "reads": .int(values.count),
                      "identical": .bool(values.allSatisfy { $0 == value })])
            }
            var decoding = ValueDecoding()
            let decoded = decoding.decode(characteristic, value)
            emit(options.json, show(value) + decoded.text,
                 ["uuid": .string(characteristic.description), "handle": .integer(c.valueHandle), "value": .string(value.hexString()),
                  "length": .int(value.count)].adding(decoded.fields))
        }
    }
}

/// `ble write TARGET CHAR-UUID HEX [--without-response]`.
struct Write: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Write a characteristic (long values with prepared writes).")
    @OptionGroup var options: HostOptions
    @OptionGroup var target: TargetOptions
    @Argument(help: "The characteristic UUID.") var characteristic: BluetoothUUID
    @Argument(help: "The value in hex.") var hex: String
    @Flag(help: "Write without response (Write Command).") var withoutResponse = false
    @OptionGroup var security: SecurityOptions
    @Flag(help: "Do not pair when the device refuses the write for security (exit 3 with the ATT error instead).") var noPair = false

    func validate() throws {
        guard let value = [UInt8](hex: hex) else { throw ValidationError("'\(hex)' is not hex") }
        // Core 5.4, Vol 3, Part F, 3.2.9: an attribute value is at most 512 octets.
        guard value.count <= 512 else { throw ValidationError("the value is \(value.count) bytes; an attribute value is at most 512") }
    }

    func run() async throws {
        guard let value = [UInt8](hex: hex) else { throw ValidationError("'\(hex)' is not hex") }
        try await ClientSession.run(options, target, security: security, pairsOnDemand: !noPair) { session in
            let c = try session.characteristic(characteristic)
            try await during("writing \(characteristic) on \(target.target)") {
                try await session.peripheral.writeValue(value, for: c, type: withoutResponse ? .withoutResponse : .withResponse)
            }
            emit(options.json, "wrote \(value.count) byte(s) \(withoutResponse ? "without" : "with") response",
                 ["uuid": .string(characteristic.description), "handle": .integer(c.valueHandle), "written": .int(value.count),
                  "with_response": .bool(!withoutResponse)])
        }
    }
}

/// `ble subscribe TARGET CHAR-UUID [--count N]`.
struct Subscribe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Subscribe to notifications (or indications) and print them, decoded when a profile knows them.",
        discussion: """
            Several characteristics may be given: all are subscribed to before any --write is sent, and --count counts \
            the values of all of them. For example, a glucose meter's stored records: \
            ble subscribe 'SwiftBLE Glucose' 2A18 2A34 2A52 --write 2A52:0101 --count 18
            """)
    @OptionGroup var options: HostOptions
    @OptionGroup var target: TargetOptions
    @Argument(help: "The characteristic UUID(s).") var characteristics: [BluetoothUUID]
    @Option(help: "Stop after this many values.") var count: Int = 5
    @Option(name: .customLong("write"), help: "After subscribing, write HEX to characteristic UUID (UUID:HEX; repeatable, in order).")
    var writes: [String] = []
    @OptionGroup var security: SecurityOptions

    func validate() throws {
        guard count > 0 else { throw ValidationError("--count must be at least 1") }
        guard !characteristics.isEmpty else { throw ValidationError("name at least one characteristic") }
        _ = try parsedWrites()
    }

    /// The --write options as (characteristic, value).
    func parsedWrites() throws -> [(BluetoothUUID, [UInt8])] {
        try writes.map { text in
            let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
            guard parts.count == 2, let uuid = BluetoothUUID(parts[0]), let value = [UInt8](hex: parts[1]) else {
                throw ValidationError("--write \(text): expected UUID:HEX")
            }
            return (uuid, value)
        }
    }

    func run() async throws {
        let writes = try parsedWrites()
        try await ClientSession.run(options, target, security: security) { session in
            let found = try characteristics.map { uuid in
                let c = try session.characteristic(uuid)
                guard c.properties.contains(.notify) || c.properties.contains(.indicate) else {
                    throw CommandFailure.notFound("\(uuid) on \(target.target) neither notifies nor indicates")
                }
                return c
            }
            // Every subscription's values in one stream, in the order they arrive.
            let (merged, continuation) = AsyncStream.makeStream(of: (GATTCharacteristic, [UInt8]).self)
            var forwarding: [Task<Void, Never>] = []
            defer { for task in forwarding { task.cancel() } }
            for c in found {
                let values = try await during("subscribing to \(c.uuid) on \(target.target)") { try await session.peripheral.notifications(for: c) }
                forwarding.append(Task {
                    for await value in values { continuation.yield((c, value)) }
                    continuation.finish()
                })
            }
            for (uuid, value) in writes {
                let c = try session.characteristic(uuid)
                try await during("writing \(uuid) on \(target.target)") { try await session.peripheral.writeValue(value, for: c, type: .withResponse) }
                emit(options.json, "wrote \(value.count) byte(s) to \(uuid)",
                     ["event": "wrote", "uuid": .string(uuid.description), "handle": .integer(c.valueHandle), "written": .int(value.count)])
            }
            var received = 0
            var decodings: [BluetoothUUID: ValueDecoding] = [:]
            for await (c, value) in merged {
                received += 1
                let decoded = decodings[c.uuid, default: ValueDecoding()].decode(c.uuid, value)
                let kind = c.properties.contains(.notify) ? "notification" : "indication"
                let from = found.count > 1 ? " from \(c.uuid)" : ""
                emit(options.json, "\(kind) #\(received)\(from): \(show(value))\(decoded.text)",
                     ["uuid": .string(c.uuid.description), "value": .string(value.hexString()), "index": .int(received)].adding(decoded.fields))
                if received >= count { break }
            }
            if received < count {
                throw CommandFailure.failed("the link to \(target.target) ended after \(received) of \(count) value(s)")
            }
            for c in found {
                try await during("unsubscribing from \(c.uuid) on \(target.target)") { try await session.peripheral.stopNotifications(for: c) }
            }
        }
    }
}
