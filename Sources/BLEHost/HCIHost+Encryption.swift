import BLEProtocols
import BLEWire

/// LE encryption on the links: the controller's Long Term Key requests (peripheral), Encryption Change and Key
/// Refresh, and a refused encryption command. Core 5.4, Vol 3, Part H, 2.4.4; Vol 4, Part E, 7.7.8, 7.7.39, 7.7.65.5.
extension HCIHost {
    /// Peripheral: the controller asks for the key the central encrypts with. The pairing's key, or the bond's when
    /// EDIV and Rand match; otherwise (no pairing finished, no bond, an all-zero key) a negative reply.
    /// Core 5.4, Vol 3, Part H, 2.4.4.
    func longTermKeyRequested(handle: ConnectionHandle, ediv: UInt16, rand: UInt64) {
        guard let link = links[handle], link.connection.role == .peripheral else {
            submitDetached(HCILELongTermKeyRequestNegativeReply(handle: handle))
            return
        }
        // A pairing past phase 1 gives its key (now, or when it has produced it). Before that (only a Security
        // Request sent) the central may answer with a bond's key.
        if let pairing = link.security.pairing, !pairing.isFinished, pairing.method != nil {
            if let key = link.security.responderKey {
                replyLongTermKey(key, handle: handle, level: pairing.securityLevel, fromBond: false)
            } else {
                links[handle]?.security.keyRequested = true
            }
            return
        }
        if let bond = bond(with: link.connection.peer), let key = bond.localKey, key.ediv == ediv, key.rand == rand {
            replyLongTermKey(key.longTermKey, handle: handle, level: bond.security, fromBond: true)
        } else {
            submitDetached(HCILELongTermKeyRequestNegativeReply(handle: handle))
        }
    }

    func replyLongTermKey(_ key: [UInt8], handle: ConnectionHandle, level: SMPSecurityLevel?, fromBond: Bool) {
        guard key.count == 16, key.contains(where: { $0 != 0 }) else {
            submitDetached(HCILELongTermKeyRequestNegativeReply(handle: handle))
            return
        }
        links[handle]?.security.encrypting = true
        links[handle]?.security.pending = level
        links[handle]?.security.pendingFromBond = fromBond
        submitDetached(HCILELongTermKeyRequestReply(handle: handle, longTermKey: SMPCrypto.wire(key)), encrypting: handle)
    }

    /// The controller refused a command that starts the link's encryption: no Encryption Change will come, so the
    /// encryption under way ends here as failed (its pairing fails, its callers are told), or the link would stay
    /// busy for good.
    func encryptionRefused(handle: ConnectionHandle, link: LinkID, status: HCIStatus) {
        guard let state = links[handle], state.connection.link == link, state.security.encrypting else { return }
        encryptionChanged(handle: handle, status: status == .success ? .unspecifiedError : status, enabled: false)
    }

    /// Encryption Change or Encryption Key Refresh Complete.
    func encryptionChanged(handle: ConnectionHandle, status: HCIStatus, enabled: Bool) {
        publish(.encryptionChanged(handle: handle, status: status, enabled: enabled))
        guard var link = links[handle] else { return }
        let connection = link.connection
        let success = status == .success && enabled
        let fromBond = link.security.pendingFromBond
        let before = link.security.current
        if success {
            // Encryption nobody here started (a test driving HCI itself) is counted as unauthenticated.
            link.security.current.level = link.security.pending ?? link.security.current.level
                ?? SMPSecurityLevel(secureConnections: false, authenticated: false, keySize: 16)
        } else if status == .success {
            link.security.current.level = nil
        }
        link.security.encrypting = false
        link.security.pending = nil
        link.security.pendingFromBond = false
        var actions: [SMPPairing.Action] = []
        if fromBond, success, let pairing = link.security.pairing, !pairing.isFinished, pairing.method == nil {
            // A Security Request (or Pairing Request) this side sent was answered with the bond's key: no pairing.
            link.security.pairing = nil
            securityManager.timers.cancel(connection.link)
        }
        if var pairing = link.security.pairing, !pairing.isFinished {
            actions = pairing.encryptionChanged(success: success, keySize: pairing.keySize ?? 16)
            link.security.pairing = pairing
        }
        // Encryption with a bond (or nobody's pairing) ends the callers' waits here; a pairing's ends at its last key.
        let resolves = fromBond || link.security.pairing?.isFinished != false
        links[handle] = link
        syncL2CAPSecurity(handle)
        if success { publish(.encrypted(connection, link.security.current, usingBond: fromBond)) }
        // Every change is published, encryption switched off included: the GATT server's view of the link follows
        // it, or it would serve protected attributes on an unencrypted link.
        if success || link.security.current != before { publish(.securityChanged(connection, link.security.current)) }
        if resolves {
            resolveWaiters(success ? .success(link.security.current)
                                   : .failure(SecurityError(.encryptionFailed(status), "encrypting the link with \(connection.peer) failed: \(status)")),
                           handle: handle)
        }
        performSMP(actions, on: connection)
    }
}
