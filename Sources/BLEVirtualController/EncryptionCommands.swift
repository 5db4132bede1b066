import BLEWire

/// Starting encryption on a link. Core 5.4, Vol 4, Part E, 7.8.24–7.8.26; Vol 6, Part B, 5.1.3.
extension World {
    mutating func leEnableEncryption(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILEEnableEncryption.self, id, packet) else { return }
        guard let linkID = linkID(controller: id, handle: c.handle), var link = links[linkID] else {
            return status(id, HCILEEnableEncryption.opcode, .unknownConnectionIdentifier)
        }
        guard link.central.controller == id, link.pendingEncryption == nil, link.peripheral.active else {
            return status(id, HCILEEnableEncryption.opcode, .commandDisallowed)
        }
        link.pendingEncryption = (c.longTermKey, c.randomNumber, c.encryptedDiversifier)
        links[linkID] = link
        status(id, HCILEEnableEncryption.opcode, .success)
        let requestBit = HCILESetEventMask.bit(for: .longTermKeyRequest) ?? 0
        if let p = controllers[link.peripheral.controller], p.hci.eventMask & (1 << 61) != 0, p.hci.leEventMask & requestBit != 0 {
            emit(link.peripheral.controller, HCILELongTermKeyRequestEvent(handle: link.peripheral.handle, randomNumber: c.randomNumber,
                                                                          encryptedDiversifier: c.encryptedDiversifier).packet)
        } else {
            // A host that masks the request cannot answer it: the controller rejects as if negatively replied.
            finishEncryption(linkID, peripheralKey: nil)
        }
    }

    mutating func leLTKReply(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILELongTermKeyRequestReply.self, id, packet) else { return }
        guard let linkID = linkID(controller: id, handle: c.handle), let link = links[linkID],
              link.peripheral.controller == id, link.pendingEncryption != nil else {
            complete(id, HCILELongTermKeyRequestReply.self, .init(status: .commandDisallowed, handle: c.handle))
            return
        }
        complete(id, HCILELongTermKeyRequestReply.self, .init(handle: c.handle))
        finishEncryption(linkID, peripheralKey: c.longTermKey)
    }

    mutating func leLTKNegativeReply(_ id: Int, _ packet: HCICommandPacket) {
        guard let c = decode(HCILELongTermKeyRequestNegativeReply.self, id, packet) else { return }
        guard let linkID = linkID(controller: id, handle: c.handle), let link = links[linkID],
              link.peripheral.controller == id, link.pendingEncryption != nil else {
            complete(id, HCILELongTermKeyRequestNegativeReply.self, .init(status: .commandDisallowed, handle: c.handle))
            return
        }
        complete(id, HCILELongTermKeyRequestNegativeReply.self, .init(handle: c.handle))
        finishEncryption(linkID, peripheralKey: nil)
    }

    /// Ends the encryption start procedure. Matching keys encrypt the link (or refresh its key); different keys
    /// make the MIC check fail and the link drop with 0x3D; no key rejects the procedure with 0x06 (LL_REJECT_IND)
    /// and the link stays up unencrypted.
    mutating func finishEncryption(_ linkID: Int, peripheralKey: [UInt8]?) {
        guard var link = links[linkID], let pending = link.pendingEncryption else { return }
        link.pendingEncryption = nil
        links[linkID] = link
        guard let key = peripheralKey else {
            emit(link.central.controller, HCIEncryptionChangeEvent(status: .pinOrKeyMissing, handle: link.central.handle,
                                                                   encryptionEnabled: 0).packet)
            return
        }
        guard key == pending.ltk else {
            for side in [link.central, link.peripheral] where side.active {
                closeSide(link: linkID, controller: side.controller, reason: .connectionTerminatedMICFailure)
            }
            return
        }
        let refresh = link.encrypted
        link.encrypted = true
        link.ltk = key
        links[linkID] = link
        for side in [link.central, link.peripheral] where side.active {
            if refresh {
                emit(side.controller, HCIEncryptionKeyRefreshCompleteEvent(handle: side.handle).packet)
            } else {
                emit(side.controller, HCIEncryptionChangeEvent(handle: side.handle, encryptionEnabled: 1).packet)
            }
        }
    }
}
