import BLEProtocols
import BLEWire

extension Link {
    /// Hands the link's security to its L2CAP manager, which checks listeners' requirements against it.
    mutating func syncL2CAPSecurity() {
        let current = security.current
        l2cap.setLinkSecurity(L2CAPLinkSecurity(encrypted: current.isEncrypted, authenticated: current.isAuthenticated,
                                                keySize: current.level?.keySize ?? 0, hasKey: current.isBonded))
    }
}

extension SMPPairingFailure {
    /// The reason as users read it: "Confirm Value Failed (0x04)", "timed out".
    var reasonText: String {
        switch self {
        case .sent(let reason), .received(let reason): "\(reason)"
        case .timeout: "the Security Manager timed out"
        case .encryptionFailed: "the link could not be encrypted"
        }
    }
}

/// Pairing and encryption state of one link: where its Security Manager is, the encryption under way, its security
/// now and the callers waiting.
struct LinkSecurityState {
    /// Where the link's Security Manager is; nothing but its phase says so.
    var phase = SecurityPhase.idle
    /// The encryption under way (LE Enable Encryption as central, or an answered LTK request as peripheral), if any.
    /// It may run beside any phase (a bond's key needs no pairing), so it is not one.
    var encryption: EncryptionUnderWay?
    /// The link's security now.
    var current = LinkSecurity()
    /// Callers of ``HCIHost/pair(_:mitm:force:)`` waiting for the outcome.
    var waiters: [SecurityWaiter] = []

    /// Whether a pairing or an encryption is under way (or the agent is deciding whether one starts).
    var isBusy: Bool { encryption != nil || phase.isBusy }
}

/// Where a link's Security Manager is (swift-nio-ssh's connection states are the model: one case per phase, each with
/// only what that phase has).
enum SecurityPhase {
    /// Nothing under way. A finished pairing leaves nothing behind: its machine answers nothing more.
    case idle
    /// Peripheral: the pairing agent decides whether to accept the central's Pairing Request.
    case awaitingConsent(AwaitingConsent)
    /// A pairing under way (its machine not finished, or finishing in the step that carries out its last actions).
    case pairing(PairingUnderWay)
    /// The Security Manager timed out on this link: nothing more is sent or accepted on SMP until a new link.
    /// Core 5.4, Vol 3, Part H, 3.4.
    case timedOut

    /// Whether the phase keeps the link busy (a caller of pair waits for it rather than starting anything).
    var isBusy: Bool {
        switch self {
        case .awaitingConsent, .pairing: true
        case .idle, .timedOut: false
        }
    }

    /// The pairing under way, if any.
    var pairing: PairingUnderWay? {
        if case .pairing(let pairing) = self { pairing } else { nil }
    }

    /// Runs `body` on the pairing under way and returns its result; `nil` without one. The pairing leaves the enum
    /// while `body` runs, so changing its machine does not copy it.
    @discardableResult
    mutating func withPairing<R>(_ body: (inout PairingUnderWay) -> R) -> R? {
        guard case .pairing(var pairing) = self else { return nil }
        self = .idle
        defer { self = .pairing(pairing) }
        return body(&pairing)
    }
}

/// The agent decides whether to accept the central's Pairing Request.
struct AwaitingConsent {
    /// The SMP PDUs held meanwhile, the Pairing Request first (at most 8).
    var backlog: [[UInt8]]
}

/// A pairing under way on a link.
struct PairingUnderWay {
    /// The pairing machine.
    var machine: SMPPairing
    /// Responder: where the key for the controller's LE Long Term Key Request is.
    var key = ResponderKey.notYet
}

/// Responder: the key a pairing produces for the controller's LE Long Term Key Request.
enum ResponderKey: Equatable {
    /// Not produced, and not asked for yet.
    case notYet
    /// The controller asked before the pairing produced it: the reply goes when it does.
    case requested
    /// Produced: a request is answered with it at once.
    case produced([UInt8])
}

/// An encryption under way on a link.
struct EncryptionUnderWay {
    /// What the link's security becomes when it succeeds (`nil`: counted as unauthenticated).
    var level: SMPSecurityLevel?
    /// Whether it uses a bond's key (no pairing).
    var fromBond: Bool
}
