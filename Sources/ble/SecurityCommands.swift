import ArgumentParser
import BLE
import BLEFiles
import Foundation

/// What a device can show and input, as the command line names it.
enum IOCapabilityArgument: String, ExpressibleByArgument, CaseIterable {
    case none, display, keyboard, yesno
    case keyboardDisplay = "keyboard-display"

    var capability: SMPIOCapability {
        switch self {
        case .none: .noInputNoOutput
        case .display: .displayOnly
        case .keyboard: .keyboardOnly
        case .yesno: .displayYesNo
        case .keyboardDisplay: .keyboardDisplay
        }
    }
}

/// How a command pairs: options every command that may pair takes.
struct SecurityOptions: ParsableArguments {
    @Option(help: "What this side can show and input: \(IOCapabilityArgument.allCases.map(\.rawValue).joined(separator: ", ")).")
    var io: IOCapabilityArgument = .none

    @Option(help: "The six-digit passkey this side displays, and enters when the peer displays one.")
    var passkey: UInt32?

    @Flag(help: "Offer LE legacy pairing only (no LE Secure Connections).")
    var legacy = false

    @Flag(help: "Require an authenticated (MITM-protected) pairing.")
    var mitm = false

    @Flag(help: "Pair without bonding: nothing is stored.")
    var noBond = false

    @Option(help: "The bond store file (default: an in-memory store on the virtual controller, else \(FileBondStore.defaultPath)).")
    var bonds: String?

    @Flag(help: "LE privacy: advertise, scan and connect with a resolvable private address (rotated every 15 minutes), never the identity address.")
    var privacy = false

    func validate() throws {
        if let passkey, passkey > 999_999 { throw ValidationError("--passkey must have six digits (0...999999)") }
    }

    /// The bond store: the file given, else the user's file for a real controller, else (the embedded virtual world,
    /// whose devices live only as long as the process) one in memory.
    func store(for spec: HCITransportSpec) -> any BondStore {
        if let bonds { return FileBondStore(path: bonds) }
        if case .virtual = spec { return InMemoryBondStore() }
        return FileBondStore(path: FileBondStore.defaultPath)
    }

    /// The host's security configuration.
    func configuration(for spec: HCITransportSpec) -> SecurityConfiguration {
        SecurityConfiguration(ioCapability: io.capability, bonding: !noBond, mitm: mitm, secureConnections: !legacy,
                              fixedPasskey: passkey, bondStore: store(for: spec), privacy: privacy)
    }

    /// The agent answering for the user.
    func agent(json: Bool) -> CommandLineAgent { CommandLineAgent(passkey: passkey, json: json) }
}

/// The user's part in pairing, on a terminal: passkeys shown as lines; a passkey to enter is `--passkey`, else asked on
/// the terminal; a numeric comparison is shown and, on a terminal, confirmed by the user (without one, accepted: the
/// peer's user compares).
struct CommandLineAgent: PairingAgent {
    let passkey: UInt32?
    let json: Bool
    /// Whether ``displayPasskey(_:for:)`` prints the passkey (a peripheral's sample device prints its own line).
    var printsPasskeys = true

    func acceptPairing(from peer: LEAddress) async -> Bool { true }

    func displayPasskey(_ passkey: UInt32, for peer: LEAddress) async {
        guard printsPasskeys else { return }
        emit(json, "passkey for \(peer.address): \(Passkey.text(passkey))",
             ["event": "passkey", "peer": .string(peer.address.description), "passkey": .integer(passkey)])
    }

    func enterPasskey(for peer: LEAddress) async -> UInt32? {
        if let passkey { return passkey }
        guard isatty(STDIN_FILENO) != 0 else { return nil }
        writeErrorLine("enter the passkey shown on \(peer.address): ")
        return readLine().flatMap { UInt32($0.trimmingCharacters(in: .whitespaces)) }
    }

    func confirmNumber(_ number: UInt32, for peer: LEAddress) async -> Bool {
        emit(json, "compare: does \(peer.address) show \(Passkey.text(number))?",
             ["event": "compare", "peer": .string(peer.address.description), "number": .integer(number)])
        guard isatty(STDIN_FILENO) != 0 else { return true }
        writeErrorLine("same number on both devices? [y/N] ")
        return readLine()?.lowercased().hasPrefix("y") == true
    }
}


/// The JSON fields of a link's security.
func securityFields(_ security: LinkSecurity) -> [String: JSONValue] {
    ["encrypted": .bool(security.isEncrypted), "secure_connections": .bool(security.level?.secureConnections == true),
     "authenticated": .bool(security.isAuthenticated), "key_size": security.level.map { .integer($0.keySize) } ?? .null]
}

/// Prints the pairing events of a central's links as they happen (passkeys come through the agent).
func printPairingEvents(_ central: Central, json: Bool) async -> Task<Void, Never> {
    let events = await central.connectionEvents()
    return Task {
        for await event in events {
            switch event {
            case .pairingCompleted(let c, let outcome):
                let identity = outcome.peerIdentity == c.peer ? "" : " (identity \(outcome.peerIdentity.address))"
                emit(json, "paired with \(c.peer.address)\(identity): \(outcome.method), \(outcome.security)\(outcome.bonded ? ", bonded" : "")",
                     SamplePeripheral.pairedFields(outcome, peer: c.peer))
            case .encrypted(let c, let security, let usingBond) where usingBond:
                let identity = security.peerIdentity.flatMap { $0 == c.peer ? nil : " (identity \($0.address))" } ?? ""
                var fields = securityFields(security).merging(["event": "encrypted", "peer": .string(c.peer.address.description), "bonded": true]) { $1 }
                if let peerIdentity = security.peerIdentity { fields["identity"] = .string(peerIdentity.address.description) }
                emit(json, "encrypted with the bond of \(c.peer.address)\(identity): \(security.level.map { "\($0)" } ?? "")", fields)
            default:
                break
            }
        }
    }
}

/// `ble pair TARGET`: connect and pair (or, with a bond, encrypt with the stored key).
struct Pair: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Pair with a device (or encrypt with the stored bond) and print the security reached.",
        discussion: """
            The method follows from both sides' IO capabilities (--io) and MITM requirements: Just Works, Numeric \
            Comparison, Passkey Entry (--passkey is the passkey this side displays or enters) or LE legacy \
            (--legacy). With a bond in the store, the link is encrypted with the stored key and nothing is paired; \
            --force pairs again. A failed pairing exits with status 3 and its reason.
            """)
    @OptionGroup var options: HostOptions
    @OptionGroup var target: TargetOptions
    @OptionGroup var security: SecurityOptions
    @Flag(help: "Pair again even when a bond exists.") var force = false

    func run() async throws {
        let json = options.json
        let spec = try options.spec()
        try await options.withCentral(security: security.configuration(for: spec)) { central in
            await central.setPairingAgent(security.agent(json: json))
            let device = try await findTarget(target.target, central: central, timeout: target.duration)
            let peripheral = try await during("connecting to \(target.target) (\(device.address.address))") {
                try await central.connect(device, timeout: target.duration, exchangeMTU: false)
            }
            let printer = await printPairingEvents(central, json: json)
            defer { printer.cancel() }
            do {
                let result = try await peripheral.pair(mitm: security.mitm, force: force)
                // Let the event printer catch up before the summary.
                try? await Task.sleep(for: .milliseconds(50))
                emit(json, "\(target.target): \(result)", securityFields(result).merging(
                    ["event": "secured", "peer": .string(device.address.address.description), "bonded": .bool(result.isBonded)]) { $1 })
            } catch let error as SecurityError {
                await cleanUp { _ = try? await central.disconnect(peripheral) }
                throw CommandFailure(.refused, "pairing with \(target.target) failed: \(describe(error))")
            }
            await cleanUp { _ = try? await central.disconnect(peripheral) }
        }
    }

    private func describe(_ error: SecurityError) -> String {
        if let failure = error.code.pairingFailure { return failure.reason.map { "\($0)" } ?? "\(failure)" }
        if let status = error.code.hciStatus {
            return "the device refused the stored key (\(status)); it may have lost the bond: `ble bonds remove \(target.target)` and pair again"
        }
        switch error.code {
        case .disconnected: return "the link went down"
        case .timedOut: return "the Security Manager timed out"
        default: return error.reason
        }
    }
}

/// `ble bonds [list|remove ADDRESS]`.
struct Bonds: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List or remove stored bonds.", subcommands: [List.self, Remove.self], defaultSubcommand: List.self)

    struct StoreOptions: ParsableArguments {
        @Option(help: "The bond store file (default: \(FileBondStore.defaultPath)).")
        var bonds: String?
        @Flag(help: "Print machine-readable JSON lines.")
        var json = false

        var store: FileBondStore { FileBondStore(path: bonds ?? FileBondStore.defaultPath) }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the stored bonds.")
        @OptionGroup var options: StoreOptions

        func run() async throws {
            let bonds = try await during("reading \(options.store.path)") { try options.store.allBonds() }
            for bond in bonds.sorted(by: { ($0.local.address, $0.peer.address) < ($1.local.address, $1.peer.address) }) {
                // "identity 00:1A:7D:DA:71:13 (public), paired through E7:E6:E5:E4:E3:E2 (random static)"
                let through = bond.pairedThrough.flatMap { $0 == bond.peer ? nil : ", paired through \($0)" } ?? ""
                var fields: [String: JSONValue] = [
                    "peer": .string(bond.peer.address.description), "peer_type": .string("\(bond.peer.type)"),
                    "peer_kind": .string(Bonds.kindName(bond.peer)),
                    "local": .string(bond.local.address.description), "secure_connections": .bool(bond.security.secureConnections),
                    "authenticated": .bool(bond.security.authenticated), "key_size": .integer(bond.security.keySize),
                    "irk": .bool(bond.peerIdentityResolvingKey != nil), "created": .number(bond.created, decimals: 0)]
                if let paired = bond.pairedThrough {
                    fields["paired_through"] = .string(paired.address.description)
                    fields["paired_through_type"] = .string("\(paired.type)")
                    fields["paired_through_kind"] = .string(Bonds.kindName(paired))
                }
                emit(options.json, "identity \(bond.peer)\(through) bonded to \(bond.local.address): \(bond.security)\(bond.peerIdentityResolvingKey != nil ? ", IRK" : "")",
                     fields)
            }
            if bonds.isEmpty && !options.json { writeLine("no bonds in \(options.store.path)") }
        }
    }

    /// An address's kind as the JSON output names it: `public`, `random static`, `resolvable private`, ….
    static func kindName(_ address: LEAddress) -> String {
        switch address.kind {
        case .public: "public"
        case .randomStatic: "random static"
        case .randomResolvable: "resolvable private"
        case .randomNonResolvable: "non-resolvable private"
        case .invalid: "invalid random"
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove the bonds with a device (its identity address).")
        @OptionGroup var options: StoreOptions
        @Argument(help: "The device's identity address (AA:BB:CC:DD:EE:FF).") var address: String

        func validate() throws {
            guard BluetoothAddress(address) != nil else { throw ValidationError("'\(address)' is not an address (AA:BB:CC:DD:EE:FF)") }
        }

        func run() async throws {
            guard let wanted = BluetoothAddress(address) else { throw ValidationError("'\(address)' is not an address") }
            let store = options.store
            let removed = try await during("updating \(store.path)") { () throws -> Int in
                var count = 0
                for peer in Set(try store.allBonds().map(\.peer)) where peer.address == wanted {
                    count += try store.removeBonds(peer: peer, local: nil)
                }
                return count
            }
            guard removed > 0 else { throw CommandFailure.notFound("no bond with \(wanted) in \(store.path)") }
            emit(options.json, "removed \(removed) bond(s) with \(wanted)", ["removed": .int(removed), "peer": .string(wanted.description)])
        }
    }
}
