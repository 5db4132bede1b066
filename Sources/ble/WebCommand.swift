import ArgumentParser
import BLE
import BLEFiles
import BLEProfiles
import BLEWeb
import Foundation

/// `ble web`: the scanner, a GATT explorer, virtual devices, the HCI trace and the controller in a browser page, served
/// over HTTP and a WebSocket (``WebServer``), driven through the public API only (``WebHub``).
struct WebCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "web",
        abstract: "Serve a page that shows the radio: a live scanner with RSSI plots, a GATT explorer with live charts, virtual devices, the HCI trace.",
        discussion: """
            Listens on 127.0.0.1:8080 by default and prints the address to open. Any other address needs --token FILE \
            (a secret of at least 16 characters from A-Z a-z 0-9 . _ ~ -; make one with `openssl rand -hex 24 > FILE`): \
            every request must then carry it, first as ?token=... in the printed address, then in a cookie the page \
            keeps. The page's WebSocket must come from the page itself (Origin). --read-only refuses writes, pairing \
            and virtual devices. Pairing prompts (a passkey to type, a number to compare) appear in the page: give \
            --io keyboard-display (or keyboard, yesno) for methods other than Just Works. See docs/web.md.
            """)

    @OptionGroup var options: HostOptions

    @OptionGroup var security: SecurityOptions

    @Option(help: "HOST:PORT to listen on ([::1]:PORT for IPv6; port 0: any free port).")
    var listen: String = "127.0.0.1:8080"

    @Option(help: "A file holding the secret every request must carry (required off loopback).")
    var token: String?

    @Flag(help: "Refuse writes, pairing and virtual devices from the page (scanning, connecting, reading and subscribing stay).")
    var readOnly = false

    @Flag(help: "Record no HCI trace (the Trace view stays empty): the capture otherwise grows by about 60 bytes per advertising report heard.")
    var noTrace = false

    @Flag(help: "Open the page in the default browser (xdg-open).")
    var open = false

    func validate() throws {
        guard let address = WebListenAddress(parsing: listen) else {
            throw ValidationError("--listen must be HOST:PORT (127.0.0.1:8080, [::1]:8080, 0.0.0.0:8080), not '\(listen)'")
        }
        guard !(noTrace && options.btsnoop != nil) else { throw ValidationError("--no-trace and --btsnoop exclude each other") }
        guard address.isLoopback || token != nil else {
            throw ValidationError("--listen \(listen) is reachable from other machines: give --token FILE (a secret every request must carry), or listen on 127.0.0.1 and use an SSH tunnel")
        }
    }

    /// Reads the token file: one line of 16 to 256 characters from `A-Z a-z 0-9 . _ ~ -` (safe in an address and a
    /// cookie as they are). The secret is never printed in an error.
    static func readToken(_ path: String) throws -> String {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw CommandFailure.failed("--token \(path): cannot be read (\(error.localizedDescription))")
        }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~-")
        guard (16...256).contains(text.count), text.allSatisfy(allowed.contains) else {
            throw CommandFailure.failed("--token \(path): the secret must be 16 to 256 characters from A-Z a-z 0-9 . _ ~ - (make one with `openssl rand -hex 24 > \(path)`)")
        }
        return text
    }

    func run() async throws {
        guard let address = WebListenAddress(parsing: listen) else { throw ValidationError("--listen must be HOST:PORT") }
        let secret = try token.map(Self.readToken)
        let files = try WebPage.files()
        let spec = try options.spec()
        try await options.prepareWorld()
        // The host's HCI traffic goes to a btsnoop file (the one --btsnoop names, else a temporary one): the Trace view
        // reads it as it grows and offers it for download.
        // A capture holds what the host sent the controller, keys to encrypt links included: the temporary one goes in
        // a directory only this user can enter.
        var privateDirectory: URL?
        if !noTrace, options.btsnoop == nil {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ble-web-\(UUID().uuidString)")
            do {
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                throw CommandFailure.failed("cannot create a directory for the trace in \(directory.deletingLastPathComponent().path): \(error.localizedDescription) (--no-trace records none)")
            }
            privateDirectory = directory
        }
        let tracePath = noTrace ? nil : options.btsnoop ?? privateDirectory?.appendingPathComponent("trace.btsnoop").path
        let adapter: Adapter
        do {
            adapter = try await during("opening \(options.hci)") {
                try await Adapter.open(spec, btsnoop: tracePath, security: security.configuration(for: spec))
            }
        } catch {
            if let privateDirectory { try? FileManager.default.removeItem(at: privateDirectory) }
            throw error
        }
        let hub = WebHub(adapter: adapter, spec: spec, hciName: options.hci, readOnly: readOnly, tracePath: tracePath)
        let server: WebServer
        do {
            server = try await WebServer.start(address: address, access: WebAccess(token: secret), files: files) { path in
                guard path == "/trace.btsnoop", let tracePath, let data = FileManager.default.contents(atPath: tracePath) else { return nil }
                return WebFile(contentType: "application/octet-stream", bytes: [UInt8](data),
                               disposition: "attachment; filename=\"ble-web.btsnoop\"")
            }
        } catch {
            await cleanUp { await adapter.powerOff() }
            if let privateDirectory { try? FileManager.default.removeItem(at: privateDirectory) }
            throw CommandFailure.failed("cannot listen on \(address): \(error)")
        }
        var url = "http://\(server.address)/"
        if let secret { url += "?token=\(secret)" }
        emit(options.json, "ble web: open \(url)\(readOnly ? " (read-only)" : "") — controller \(options.hci)",
             ["event": "listening", "url": .string(url), "port": .int(server.address.port), "readOnly": .bool(readOnly)])
        if open { Self.openBrowser(url) }
        do {
            try await hub.run(server)
        } catch {
            await hub.stop()
            await server.close()
            if let privateDirectory { try? FileManager.default.removeItem(at: privateDirectory) }
            throw error
        }
    }

    /// Opens `url` with xdg-open, when there is one; the address was printed anyway.
    static func openBrowser(_ url: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["xdg-open", url]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            writeErrorLine("ble web: could not run xdg-open (\(error.localizedDescription)); open the address above by hand")
        }
    }
}
