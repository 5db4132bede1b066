import BLEProtocols
import BLEWire
import Testing

/// Listeners' security requirements against the link's security: the refusal results of Core 5.4, Vol 3, Part A, 4.23
/// chosen as Part C, 10.3.1 chooses ATT's errors.
@Suite struct L2CAPSecurityTests {
    let spsm = L2CAPSPSM(rawValue: 0x0080)

    /// The peripheral's answer to one LE Credit Based Connection Request, with the link's security set first.
    func answer(_ requirement: L2CAPSecurityRequirement, _ security: L2CAPLinkSecurity) throws -> (String, Int) {
        var link = L2CAPLinkPair()
        try link.peripheral.listen(spsm: spsm, security: requirement)
        link.peripheral.setLinkSecurity(security)
        let (_, actions) = try link.central.connect(spsm: spsm)
        link.run(actions, from: .central)
        return (link.peripheralFrames.map { $0.payload.hexString(separator: " ") }.joined(), link.opened(.peripheral).count)
    }

    // LE Credit Based Connection Response, id 1: DCID 0, MTU 0, MPS 0, 0 credits, then the result.
    static func refusal(_ result: String) -> String { "15 01 0a 00 00 00 00 00 00 00 00 00 \(result)" }

    @Test func eachMissingPieceEarnsItsResult() throws {
        let unencrypted = L2CAPLinkSecurity()
        let bondedButUnencrypted = L2CAPLinkSecurity(hasKey: true)
        let justWorks = L2CAPLinkSecurity(encrypted: true, keySize: 16, hasKey: true)
        let shortKey = L2CAPLinkSecurity(encrypted: true, authenticated: true, keySize: 7, hasKey: true)
        let authenticated = L2CAPLinkSecurity(encrypted: true, authenticated: true, keySize: 16, hasKey: true)
        // No key for the peer: Insufficient Authentication (pair first).
        #expect(try answer(.encrypted, unencrypted) == (Self.refusal("05 00"), 0))
        // A key but no encryption: Insufficient Encryption.
        #expect(try answer(.encrypted, bondedButUnencrypted) == (Self.refusal("08 00"), 0))
        // Encrypted but not authenticated, where authentication is required: Insufficient Authentication.
        #expect(try answer(.authenticated, justWorks) == (Self.refusal("05 00"), 0))
        // A key shorter than the requirement: Encryption Key Size Too Short.
        #expect(try answer(.authenticated, shortKey) == (Self.refusal("07 00"), 0))
        // Met: the channel opens.
        #expect(try answer(.encrypted, justWorks).1 == 1)
        #expect(try answer(.authenticated, authenticated).1 == 1)
        #expect(try answer(.none, unencrypted).1 == 1)
    }

    @Test func enhancedRequestsAreRefusedWhole() throws {
        var link = L2CAPLinkPair()
        try link.peripheral.listen(spsm: spsm, parameters: .init(mtu: 512, mps: 247, initialCredits: 4), security: .encrypted)
        let (_, actions) = try link.central.connectEnhanced(spsm: spsm, count: 2, parameters: .init(mtu: 512, mps: 247, initialCredits: 4))
        link.run(actions, from: .central)
        // Credit Based Connection Response, id 1, 12 bytes: MTU 0, MPS 0, 0 credits, result 0x0005, two DCIDs 0.
        #expect(link.peripheralFrames.map { $0.payload.hexString(separator: " ") } == ["18 01 0c 00 00 00 00 00 00 00 05 00 00 00 00 00"])
        #expect(link.opened(.peripheral).isEmpty)
    }
}
