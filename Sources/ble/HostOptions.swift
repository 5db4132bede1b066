import ArgumentParser
import BLE
import BLEHost
import BLEProtocols
import BLETransport
import BLEVirtualController
import BLEWire
import Foundation

/// Options every host command takes.
struct HostOptions: ParsableArguments {
    @Option(name: .customLong("hci"), help: "Controller: virtual (default; an in-process world with sample devices), tcp:HOST:PORT, serial:PATH[@BAUD], hciN.")
    var hci: String = "virtual"

    @Option(help: "Write a btsnoop (H4) capture of the session to this file.")
    var btsnoop: String?

    @Flag(help: "Print machine-readable JSON lines.")
    var json = false

    /// Opens the transport, wraps it for capture if asked, and powers a host on. `virtual` joins the process's
    /// embedded world, where the sample devices advertise (the returned world keeps it alive).
    func openHost() async throws -> (HCIHost, EmbeddedWorld?) {
        let spec = try HCITransportSpec(parsing: hci)
        var transport: any HCITransport
        var world: EmbeddedWorld?
        switch spec {
        case .virtual:
            let shared = try await EmbeddedWorld.shared()
            transport = shared.makeTransport()
            world = shared
        default:
            transport = try spec.open()
        }
        if let btsnoop { transport = SnoopingTransport(transport, writer: try BTSnoopWriter(path: btsnoop), role: .host) }
        let host = HCIHost(transport: transport)
        try await host.powerOn()
        return (host, world)
    }
}

extension SampleDevice: ExpressibleByArgument {}

/// Prints a line, as text or as a JSON object.
func emit(_ json: Bool, _ text: @autoclosure () -> String, _ fields: [String: String]) {
    if json {
        let body = fields.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\"\(escape($0.value))\"" }.joined(separator: ",")
        writeLine("{\(body)}")
    } else {
        writeLine(text())
    }
}

/// Writes a line to standard output unbuffered, so a peer process reading it (or a kill) never loses it.
func writeLine(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func escape(_ s: String) -> String {
    var out = ""
    for c in s.unicodeScalars {
        switch c {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        default: out.unicodeScalars.append(c)
        }
    }
    return out
}


/// Finds a device by address (`AA:BB:CC:DD:EE:FF`) or advertised name by scanning.
func findTarget(_ target: String, host: HCIHost, timeout: Duration = .seconds(10)) async throws -> AdvertisementReport {
    let wanted = BluetoothAddress(target)
    let reports = try await host.scan(.init(active: true))
    let found = try await withThrowingTaskGroup(of: AdvertisementReport?.self) { group in
        group.addTask {
            for try await report in reports {
                if report.address.address == wanted || report.data.localName == target { return report }
            }
            return nil
        }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        let first = try await group.next() ?? nil
        group.cancelAll()
        return first
    }
    await host.stopScan()
    guard let found else { throw ValidationError("no device '\(target)' found within \(timeout)") }
    return found
}

/// A connected GATT client on a target, with the discovered tree.
struct ClientSession {
    let host: HCIHost
    let engine: GATTEngine
    let connection: HostConnection
    var tree: [(GATTService, [(GATTCharacteristic, [GATTDescriptor])])] = []

    static func open(_ target: String, host: HCIHost, discover: Bool = true) async throws -> ClientSession {
        let report = try await findTarget(target, host: host)
        let connection = try await host.connect(to: report.address, timeout: .seconds(10))
        let engine = GATTEngine(host: host)
        await engine.start()
        var session = ClientSession(host: host, engine: engine, connection: connection)
        _ = try await engine.exchangeMTU(connection.handle)
        if discover {
            for service in try await engine.discoverPrimaryServices(connection.handle) {
                var characteristics: [(GATTCharacteristic, [GATTDescriptor])] = []
                for c in try await engine.discoverCharacteristics(connection.handle, of: service) {
                    characteristics.append((c, try await engine.discoverDescriptors(connection.handle, of: c)))
                }
                session.tree.append((service, characteristics))
            }
        }
        return session
    }

    func characteristic(_ uuid: BluetoothUUID) throws -> (GATTCharacteristic, [GATTDescriptor]) {
        for (_, characteristics) in tree { if let match = characteristics.first(where: { $0.0.uuid == uuid }) { return match } }
        throw ValidationError("no characteristic \(uuid) on the device")
    }

    func close() async {
        try? await host.disconnect(connection.handle)
        try? await Task.sleep(for: .milliseconds(50))
        await host.powerOff()
    }
}

extension BluetoothUUID: ExpressibleByArgument {
    /// Parses a UUID given on the command line (`180F`, a 36-character UUID...).
    public init?(argument: String) { self.init(argument) }
}

/// Renders properties like `read|write|notify`.
func describe(_ p: GATTCharacteristicProperties) -> String {
    let names: [(GATTCharacteristicProperties, String)] = [(.broadcast, "broadcast"), (.read, "read"), (.writeWithoutResponse, "writeWithoutResponse"),
                                                           (.write, "write"), (.notify, "notify"), (.indicate, "indicate"),
                                                           (.authenticatedSignedWrites, "signedWrite"), (.extendedProperties, "extended")]
    return names.filter { p.contains($0.0) }.map(\.1).joined(separator: "|")
}

/// Shows a value as text when it is printable, else as hex.
func show(_ value: [UInt8]) -> String {
    let text = String(decoding: value, as: UTF8.self)
    let printable = !value.isEmpty && text.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value < 0x7F }
    let hex = value.count > 32 ? value.prefix(32).hexString() + "… (\(value.count) bytes)" : value.hexString()
    return printable ? "\"\(text)\" (\(hex))" : hex
}
