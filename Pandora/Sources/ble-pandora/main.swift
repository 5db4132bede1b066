import ArgumentParser
import BLE
import BLETransport
import Foundation
import PandoraServer

/// `ble-pandora`: a Pandora gRPC server (the test interfaces of Google's Avatar suites) on one controller.
@main
struct BLEPandora: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ble-pandora",
        abstract: "Serve the Pandora test interfaces (pandora.Host, Security, SecurityStorage) over swift-ble, for Google's Avatar suites.",
        discussion: """
            Prints {"event":"listening","port":N} on its own line once it serves (with --grpc HOST:0, N is the \
            port taken). FactoryReset closes the controller's transport and opens it again.
            """)

    @Option(help: "The gRPC address to serve on: HOST:PORT (PORT 0 takes a free port).")
    var grpc = "127.0.0.1:8999"

    @Option(help: "Controller: tcp:HOST:PORT (or tcp-client:HOST:PORT, as Bumble spells it), serial:PATH[@BAUD], hciN.")
    var hci: String

    @Option(help: "The GAP device name (and what include_*_local_name advertises).")
    var name = "swift-ble"

    @Option(help: ArgumentHelp("The IO capability pairing announces (the OnPairing client plays the user): keyboard-display, display-yes-no, display-only, keyboard-only, no-input-no-output.",
                               valueName: "capability"))
    var ioCapability = "keyboard-display"

    @Option(help: "Write a btsnoop (H4) capture of the HCI traffic to this file (each FactoryReset starts it again).")
    var btsnoop: String?

    func validate() throws {
        _ = try endpoint()
        _ = try spec()
        _ = try capability()
    }

    func capability() throws -> SMPIOCapability {
        switch ioCapability {
        case "keyboard-display": .keyboardDisplay
        case "display-yes-no": .displayYesNo
        case "display-only": .displayOnly
        case "keyboard-only": .keyboardOnly
        case "no-input-no-output": .noInputNoOutput
        default: throw ValidationError("--io-capability \(ioCapability): expected keyboard-display, display-yes-no, display-only, keyboard-only or no-input-no-output")
        }
    }

    func endpoint() throws -> (host: String, port: Int) {
        guard let colon = grpc.lastIndex(of: ":"), let port = Int(grpc[grpc.index(after: colon)...]), (0...65535).contains(port) else {
            throw ValidationError("--grpc \(grpc): expected HOST:PORT")
        }
        var host = String(grpc[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host.isEmpty ? "127.0.0.1" : host, port)
    }

    func spec() throws -> HCITransportSpec {
        let text = hci.hasPrefix("tcp-client:") ? "tcp:" + hci.dropFirst("tcp-client:".count) : hci
        do {
            let spec = try HCITransportSpec(parsing: text)
            if case .virtual = spec { throw ValidationError("--hci virtual: ble-pandora needs a controller of its own (tcp:, serial:, hciN)") }
            return spec
        } catch let error as ValidationError {
            throw error
        } catch {
            throw ValidationError("--hci \(hci): \(error)")
        }
    }

    func run() async throws {
        let spec = try spec()
        let (host, port) = try endpoint()
        let capability = try capability()
        // Each opening (the first, and one per FactoryReset) with a configuration of its own, and so an empty bond
        // store: a factory reset keeps no bond. With one store shared by the openings, a bond FactoryReset had not
        // forgotten (saved while the adapter powered off and its links finished) outlived it, and a later peer at the
        // same address (RootCanal hands addresses out again) met its stale key: Avatar's LeSecurityTest, case 3 of
        // scripts/avatar's sample, the central encrypting instead of pairing (2026-12-06).
        let server = PandoraServer(deviceName: name) { [btsnoop] in
            try await Adapter.open(spec, btsnoop: btsnoop, security: PandoraServer.security(ioCapability: capability))
        }
        try await server.openAdapter()
        try await server.run(host: host, port: port) { port in
            // Unbuffered: a script waits for this line.
            FileHandle.standardOutput.write(Data("{\"event\":\"listening\",\"port\":\(port)}\n".utf8))
        }
    }
}
