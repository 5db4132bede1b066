import BLEProtocols
import BLEWire
import Testing

/// The pairing method matrix. Core 5.4, Vol 3, Part H, 2.3.5.1, Tables 2.6, 2.7 and 2.8.
@Suite struct SMPPairingMethodTests {
    static let capabilities: [SMPIOCapability] = [.displayOnly, .displayYesNo, .keyboardOnly, .noInputNoOutput, .keyboardDisplay]

    /// Table 2.8 as the specification prints it: rows the responder, columns the initiator. JW Just Works, NC
    /// Numeric Comparison (LE Secure Connections; LE legacy uses the entry after the slash), PI the initiator
    /// inputs (the responder displays), PR the responder inputs, PB both input.
    static let table = [
        "JW    JW    PI  JW  PI",
        "JW    NC/JW PI  JW  NC/PI",
        "PR    PR    PB  JW  PR",
        "JW    JW    JW  JW  JW",
        "PR    NC/PR PI  JW  NC/PR",
    ]

    func expected(_ row: Int, _ column: Int, secureConnections: Bool) -> SMPPairingMethod? {
        let cells = Self.table[row].split(separator: " ").map(String.init)
        guard cells.indices.contains(column) else { return nil }
        let parts = cells[column].split(separator: "/").map(String.init)
        let code = (secureConnections ? parts.first : parts.last) ?? ""
        switch code {
        case "JW": return .justWorks
        case "NC": return .numericComparison
        case "PI": return .passkeyEntry(initiatorInputs: true, responderInputs: false)
        case "PR": return .passkeyEntry(initiatorInputs: false, responderInputs: true)
        case "PB": return .passkeyEntry(initiatorInputs: true, responderInputs: true)
        default: return nil
        }
    }

    func features(_ io: SMPIOCapability, mitm: Bool = true, oob: Bool = false) -> SMPPairingFeatures {
        SMPPairingFeatures(ioCapability: io, oobDataFlag: oob ? 1 : 0, authRequirements: mitm ? [.mitm, .bonding] : [.bonding],
                           initiatorKeyDistribution: [], responderKeyDistribution: [])
    }

    @Test(arguments: [false, true])
    func everyIOCapabilityPair(secureConnections: Bool) {
        for (row, responder) in Self.capabilities.enumerated() {
            for (column, initiator) in Self.capabilities.enumerated() {
                let method = SMPPairingMethod.select(initiator: features(initiator), responder: features(responder),
                                                     secureConnections: secureConnections)
                #expect(method == expected(row, column, secureConnections: secureConnections),
                        "responder \(responder.rawValue), initiator \(initiator.rawValue)")
                // Either side asking for MITM is enough; neither asking gives Just Works.
                #expect(SMPPairingMethod.select(initiator: features(initiator, mitm: false), responder: features(responder),
                                                secureConnections: secureConnections) == method)
                #expect(SMPPairingMethod.select(initiator: features(initiator, mitm: false),
                                                responder: features(responder, mitm: false),
                                                secureConnections: secureConnections) == .justWorks)
            }
        }
    }

    @Test func outOfBandFlags() {
        let io = SMPIOCapability.noInputNoOutput
        // Table 2.6, LE legacy: OOB only when both have OOB data.
        #expect(SMPPairingMethod.select(initiator: features(io, oob: true), responder: features(io, oob: true), secureConnections: false) == .outOfBand)
        #expect(SMPPairingMethod.select(initiator: features(io, oob: true), responder: features(io), secureConnections: false) == .justWorks)
        // Table 2.7, LE Secure Connections: OOB when either has, whatever the MITM flags.
        #expect(SMPPairingMethod.select(initiator: features(io, mitm: false, oob: true), responder: features(io, mitm: false), secureConnections: true) == .outOfBand)
        #expect(SMPPairingMethod.select(initiator: features(io), responder: features(io, oob: true), secureConnections: true) == .outOfBand)
    }

    @Test func reservedIOCapabilitiesHaveNoMethod() {
        let reserved = SMPIOCapability(rawValue: 5)
        #expect(SMPPairingMethod.select(initiator: features(reserved), responder: features(.displayOnly), secureConnections: true) == nil)
        #expect(SMPPairingMethod.select(initiator: features(.displayOnly), responder: features(SMPIOCapability(rawValue: 0xFF)), secureConnections: false) == nil)
    }
}
