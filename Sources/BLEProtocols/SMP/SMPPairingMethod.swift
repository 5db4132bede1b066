import BLEWire

/// How a pairing authenticates the link. Core 5.4, Vol 3, Part H, 2.3.5.1.
public enum SMPPairingMethod: Hashable, Sendable, CustomStringConvertible {
    /// Just Works: no authentication (the link is encrypted but not protected against a man in the middle).
    case justWorks
    /// Numeric Comparison (LE Secure Connections only): both users confirm the same six digits.
    case numericComparison
    /// Passkey Entry: a side that inputs types the six digits the other displays (both input with two keyboards).
    case passkeyEntry(initiatorInputs: Bool, responderInputs: Bool)
    /// Out of band: data exchanged over another channel.
    case outOfBand

    /// Whether the method protects against a man in the middle.
    public var isAuthenticated: Bool { self != .justWorks }

    public var description: String {
        switch self {
        case .justWorks: "Just Works"
        case .numericComparison: "Numeric Comparison"
        case .passkeyEntry(let i, let r): "Passkey Entry (\(i ? "initiator" : "")\(i && r ? " and " : "")\(r ? "responder" : "") input)"
        case .outOfBand: "OOB"
        }
    }

    private static let jw = SMPPairingMethod.justWorks
    private static let nc = SMPPairingMethod.numericComparison
    /// The responder displays, the initiator inputs.
    private static let pi = SMPPairingMethod.passkeyEntry(initiatorInputs: true, responderInputs: false)
    /// The initiator displays, the responder inputs.
    private static let pr = SMPPairingMethod.passkeyEntry(initiatorInputs: false, responderInputs: true)
    /// Both input.
    private static let pb = SMPPairingMethod.passkeyEntry(initiatorInputs: true, responderInputs: true)

    /// Core 5.4, Vol 3, Part H, 2.3.5.1, Table 2.8, LE legacy entries: rows are the responder's IO capability,
    /// columns the initiator's (Display Only, Display YesNo, Keyboard Only, NoInputNoOutput, Keyboard Display).
    static let legacyTable: [[SMPPairingMethod]] = [
        /* DisplayOnly     */ [jw, jw, pi, jw, pi],
        /* DisplayYesNo    */ [jw, jw, pi, jw, pi],
        /* KeyboardOnly    */ [pr, pr, pb, jw, pr],
        /* NoInputNoOutput */ [jw, jw, jw, jw, jw],
        /* KeyboardDisplay */ [pr, pr, pi, jw, pr],
    ]

    /// Core 5.4, Vol 3, Part H, 2.3.5.1, Table 2.8, LE Secure Connections entries (same layout).
    static let secureConnectionsTable: [[SMPPairingMethod]] = [
        /* DisplayOnly     */ [jw, jw, pi, jw, pi],
        /* DisplayYesNo    */ [jw, nc, pi, jw, nc],
        /* KeyboardOnly    */ [pr, pr, pb, jw, pr],
        /* NoInputNoOutput */ [jw, jw, jw, jw, jw],
        /* KeyboardDisplay */ [pr, nc, pi, jw, nc],
    ]

    /// The method for a pairing. Core 5.4, Vol 3, Part H, 2.3.5.1: OOB and MITM first (Table 2.6 for LE legacy:
    /// OOB when both have OOB data; Table 2.7 for LE Secure Connections: OOB when either has), then Just Works
    /// when neither side asks for MITM protection, else the IO capability matrix (Table 2.8).
    /// `nil` when an IO capability is a reserved value.
    public static func select(initiator: SMPPairingFeatures, responder: SMPPairingFeatures,
                              secureConnections: Bool) -> SMPPairingMethod? {
        let table = secureConnections ? secureConnectionsTable : legacyTable
        let row = Int(responder.ioCapability.rawValue), column = Int(initiator.ioCapability.rawValue)
        guard table.indices.contains(row), table[row].indices.contains(column) else { return nil }
        let initiatorOOB = initiator.oobDataFlag == 1, responderOOB = responder.oobDataFlag == 1
        if secureConnections ? (initiatorOOB || responderOOB) : (initiatorOOB && responderOOB) { return .outOfBand }
        let mitm = initiator.authRequirements.contains(.mitm) || responder.authRequirements.contains(.mitm)
        guard mitm else { return .justWorks }
        return table[row][column]
    }
}
