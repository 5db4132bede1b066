import BLEHost
import BLEProtocols
import BLEWire

/// Pairing, encryption and bonds, from the central's side. Core 5.4, Vol 3, Part H and Part C, 10.
extension Central {
    /// Sets the agent that answers for the user during pairing: passkeys to show or type, numeric comparison,
    /// consent. The default accepts everything and enters no passkey (a device with no input and no output).
    public func setPairingAgent(_ agent: any PairingAgent) async { await adapter.setPairingAgent(agent) }

    /// Whether a read, write or discovery the peripheral refuses for security (Insufficient Authentication,
    /// Insufficient Encryption, Encryption Key Size Too Short) makes the central pair, or encrypt with the bond, and
    /// retry once, as CoreBluetooth does. On by default.
    public func setPairsOnDemand(_ on: Bool) async { await adapter.setPairsOnDemand(on) }

    /// The bonds of this central's identity.
    public func bonds() async throws -> [Bond] { try await adapter.bonds() }

    /// Forgets the bond with `peer` (its identity address): the next link pairs again. Returns whether there was one.
    @discardableResult
    public func removeBond(_ peer: LEAddress) async throws -> Bool { try await adapter.removeBond(peer) }
}

extension RemotePeripheral {
    /// The link's security now: encryption and its level, whether a bond exists, the peer's identity.
    public var security: LinkSecurity {
        get async { await central.host.security(of: await link.connection) ?? LinkSecurity() }
    }

    /// The peripheral's identity address, when a bond or this link's pairing told it; `nil` otherwise. It may differ
    /// from ``id``, the address the peripheral connected from: a device without privacy may distribute its public
    /// address as identity and advertise from a static random one; a private device connects from resolvable
    /// private addresses.
    public var identity: LEAddress? {
        get async { await security.peerIdentity }
    }

    /// The bond with this peripheral, as the central finds it for the link: by the identity address, by the address
    /// the peripheral paired through (see ``Bond/pairedThrough``), or by resolving its private address with the
    /// bond's IRK. `nil` without one.
    public var bond: Bond? {
        get async { await central.host.bond(of: await link.connection) }
    }

    /// Secures the link: with a bond, encrypts with the stored key (no pairing); otherwise pairs (the methods come
    /// from both sides' IO capabilities; the pairing agent answers for the user) and, when both sides bond, stores
    /// the keys. `mitm` asks for an authenticated key; `force` pairs again even when encrypted or bonded.
    ///
    /// Throws ``SecurityError``: the pairing failed (with the reason, e.g. Confirm Value Failed for a wrong passkey),
    /// or the peripheral refused the bond's key (it lost the bond: the link stays unencrypted), or the link went down.
    @discardableResult
    public func pair(mitm: Bool = false, force: Bool = false) async throws -> LinkSecurity {
        try await central.host.pair(await link.connection, mitm: mitm, force: force)
    }
}

/// Pairing, encryption and bonds, from the peripheral's side.
extension PeripheralManager {
    /// Sets the agent that answers for the user during pairing: consent to a central's request, passkeys, numeric
    /// comparison.
    public func setPairingAgent(_ agent: any PairingAgent) async { await adapter.setPairingAgent(agent) }

    /// The security of a central's link.
    public func security(of central: HostConnection) async -> LinkSecurity? { await adapter.security(of: central) }

    /// Asks a central to secure the link (Security Request): it encrypts with its bond or pairs. Returns the link's
    /// security once it is encrypted; throws ``SecurityError`` when the pairing fails.
    @discardableResult
    public func requestSecurity(of central: HostConnection, mitm: Bool = false) async throws -> LinkSecurity {
        try await host.pair(central, mitm: mitm)
    }

    /// The bonds of this peripheral's identity.
    public func bonds() async throws -> [Bond] { try await adapter.bonds() }

    /// Forgets the bond with `central` (its identity address). Returns whether there was one.
    @discardableResult
    public func removeBond(_ central: LEAddress) async throws -> Bool { try await adapter.removeBond(central) }
}

extension SMPPairingMethod {
    /// The method's name in JSON output: `justWorks`, `numericComparison`, `passkeyEntry`, `outOfBand`.
    public var jsonName: String {
        switch self {
        case .justWorks: "justWorks"
        case .numericComparison: "numericComparison"
        case .passkeyEntry: "passkeyEntry"
        case .outOfBand: "outOfBand"
        }
    }
}

/// How passkeys and numeric-comparison values are shown to users.
public enum Passkey {
    /// The value as the six digits users read and type, leading zeros kept: 4321 → "004321".
    public static func text(_ value: UInt32) -> String {
        let digits = String(value % 1_000_000)
        return String(repeating: "0", count: 6 - digits.count) + digits
    }
}
