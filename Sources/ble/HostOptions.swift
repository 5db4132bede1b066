import ArgumentParser
import BLE
import BLEProfiles
import Foundation

/// Options every host command takes.
struct HostOptions: ParsableArguments {
    @Option(name: .customLong("hci"), help: "Controller: virtual (default; an in-process world with the simulated devices), tcp:HOST:PORT, serial:PATH[@BAUD], hciN.")
    var hci: String = "virtual"

    @Option(help: "Write a btsnoop (H4) capture of the session to this file.")
    var btsnoop: String?

    @Flag(help: "Print machine-readable JSON lines (numbers, booleans and lists in JSON's own types).")
    var json = false

    func validate() throws {
        _ = try spec()
    }

    /// The controller `--hci` names.
    func spec() throws -> HCITransportSpec {
        do {
            return try HCITransportSpec(parsing: hci)
        } catch {
            throw ValidationError("--hci \(hci): \(describeError(error))")
        }
    }

    /// On `virtual`, furnishes the process's embedded world with every simulated device (``EmbeddedDevices``), the
    /// same world CoreBluetoothCompat programs see; other controllers are left alone.
    func prepareWorld() async throws {
        guard case .virtual = try spec() else { return }
        _ = try await during("starting the embedded world's devices") { try await EmbeddedDevices.start() }
    }

    /// Opens the controller as a central (`virtual` joins the process's embedded world, where the simulated devices
    /// advertise), runs `body`, and powers the controller off on the way out, whatever `body` does.
    func withCentral<T>(security: SecurityConfiguration = SecurityConfiguration(), _ body: (Central) async throws -> T) async throws -> T {
        try await prepareWorld()
        // Its errors say which controller failed and how ("no controller at tcp:127.0.0.1:9100: ...").
        let central = try await Central.open(try spec(), btsnoop: btsnoop, security: security)
        do {
            let result = try await body(central)
            await cleanUp { await central.powerOff() }
            return result
        } catch {
            await cleanUp { await central.powerOff() }
            throw error
        }
    }

    /// Opens the controller as a peripheral manager, runs `body`, and powers the controller off on the way out.
    func withPeripheralManager<T>(deviceName: String, security: SecurityConfiguration = SecurityConfiguration(),
                                  _ body: (PeripheralManager) async throws -> T) async throws -> T {
        try await prepareWorld()
        let manager = try await PeripheralManager(try spec(), deviceName: deviceName, btsnoop: btsnoop, security: security)
        do {
            let result = try await body(manager)
            await cleanUp { await manager.powerOff() }
            return result
        } catch {
            await cleanUp { await manager.powerOff() }
            throw error
        }
    }
}

/// Runs a clean-up step to its end even when the command was cancelled (interrupted): in a task of its own, which
/// does not inherit the cancellation.
func cleanUp(_ step: @escaping @Sendable () async -> Void) async {
    await Task { await step() }.value
}

/// The device a client command talks to, and how long to look for it.
struct TargetOptions: ParsableArguments {
    @Argument(help: "The device's address (AA:BB:CC:DD:EE:FF) or advertised name.")
    var target: String

    @Option(help: "Seconds to look for the device, and to connect to it.")
    var timeout: Double = 10

    @Option(name: .customLong("gatt-cache"),
            help: "A file to keep discovered databases in: a device whose Database Hash is unchanged is then ready after one round trip.")
    var gattCache: String?

    func validate() throws {
        guard timeout > 0, timeout.isFinite else { throw ValidationError("--timeout must be a positive number of seconds") }
    }

    var duration: Duration { .milliseconds(Int((timeout * 1000).rounded())) }
}

extension SimulatedDevice: ExpressibleByArgument {}

extension BluetoothUUID: ExpressibleByArgument {
    /// Parses a UUID given on the command line (`180F`, a 36-character UUID...).
    public init?(argument: String) { self.init(argument) }
}

/// Finds a device by address (`AA:BB:CC:DD:EE:FF`) or advertised name by scanning for at most `timeout`. A bonded
/// device with privacy is found by its identity address behind whatever resolvable private address it uses now.
func findTarget(_ target: String, central: Central, timeout: Duration) async throws -> DiscoveredPeripheral {
    let wanted = BluetoothAddress(target)
    let results = try await during("scanning") { try await central.scan(timeout: timeout) }
    for try await device in results
    where device.address.address == wanted || (wanted != nil && device.identity?.address == wanted) || device.name == target {
        return device   // leaving the loop ends the stream, which stops the scan
    }
    throw CommandFailure.notFound("no device '\(target)' found within \(describe(timeout))")
}

/// `3 s`, `0.5 s`.
func describe(_ d: Duration) -> String {
    let seconds = Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    return seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s"
}

/// A connected GATT client on a target, through the public API (``Central`` and ``RemotePeripheral``), with the
/// discovered tree.
struct ClientSession: Sendable {
    let central: Central
    let peripheral: RemotePeripheral
    let target: String
    var tree: [(service: GATTService, characteristics: [(GATTCharacteristic, [GATTDescriptor])])] = []
    /// What the target advertised when it was found (its scan response merged when one was heard).
    var advertisement = AdvertisingData()
    /// How the discovery went (round trips, whether the GATT cache answered).
    var discovery: GATTDiscoveryReport?

    /// Opens the controller, finds and connects to `target` (exchanging MTUs), discovers the whole tree when asked,
    /// and runs `body`; then disconnects and powers off, whether `body` succeeded or threw.
    /// With `security`, the central pairs as those options say when the device asks for it (unless `pairsOnDemand` is
    /// false), and prints the pairing as it happens.
    static func run<T>(_ options: HostOptions, _ target: TargetOptions, security: SecurityOptions? = nil, pairsOnDemand: Bool = true,
                       discover: Bool = true, collectsAdvertising: Bool = false, _ body: (ClientSession) async throws -> T) async throws -> T {
        let spec = try options.spec()
        return try await options.withCentral(security: security?.configuration(for: spec) ?? SecurityConfiguration()) { central in
            if let security { await central.setPairingAgent(security.agent(json: options.json)) }
            await central.setPairsOnDemand(pairsOnDemand)
            if let path = target.gattCache { await central.useGATTCache(GATTCache(fileURL: URL(fileURLWithPath: path))) }
            let printer = await printPairingEvents(central, json: options.json)
            defer { printer.cancel() }
            var device = try await findTarget(target.target, central: central, timeout: target.duration)
            if collectsAdvertising {
                // Half a second more of listening to the target, so that its scan response is heard too.
                var structures = device.advertisementData.structures
                let more = try await during("scanning") { try await central.scan(allowDuplicates: true, timeout: .milliseconds(600)) }
                for try await report in more where report.address == device.address {
                    for s in report.advertisementData.structures where !structures.contains(s) { structures.append(s) }
                }
                device.advertisementData = AdvertisingData(structures: structures)
            }
            let peripheral = try await during("connecting to \(target.target) (\(device.address.address))") {
                try await central.connect(device, timeout: target.duration)
            }
            var session = ClientSession(central: central, peripheral: peripheral, target: target.target)
            session.advertisement = device.advertisementData
            do {
                if discover { try await session.discover() }
                let result = try await body(session)
                await cleanUp { [session] in await session.close() }
                return result
            } catch {
                await cleanUp { [session] in await session.close() }
                throw error
            }
        }
    }

    /// Discovers every service, characteristic and descriptor.
    mutating func discover() async throws {
        let peripheral = peripheral
        let found = try await during("discovering the services of \(target)") {
            // The whole database at once: the same tree as service by service, in far fewer round trips.
            try await peripheral.discoverAllReporting()
        }
        discovery = found.report
        tree = found.services.map { entry in
            (service: entry.service, characteristics: entry.characteristics.map { ($0.characteristic, $0.descriptors) })
        }
    }

    /// The discovered characteristic `uuid` (the first, when several services have one).
    func characteristic(_ uuid: BluetoothUUID) throws -> GATTCharacteristic {
        for (_, characteristics) in tree {
            if let match = characteristics.first(where: { $0.0.uuid == uuid }) { return match.0 }
        }
        throw CommandFailure.notFound("\(target) has no characteristic \(uuid)")
    }

    /// Disconnects and waits (up to 2 s) for the controller to confirm; a link that is already down is left alone.
    func close() async {
        let updates = await peripheral.stateUpdates()
        guard case .connected = await peripheral.state else { return }
        do {
            try await central.disconnect(peripheral)
        } catch {
            return
        }
        let confirmed = Task {
            for await state in updates { if case .disconnected = state { return } }
        }
        let deadline = Task {
            try? await Task.sleep(for: .seconds(2))
            confirmed.cancel()
        }
        await confirmed.value
        deadline.cancel()
    }
}
