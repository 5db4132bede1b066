import BLEHost
import BLEProtocols
import BLEWire

/// LE credit based L2CAP channels on the public API: streams of SDUs beside GATT, for bulk data (firmware images,
/// files, audio). Like CoreBluetooth's `CBL2CAPChannel`: a peripheral publishes a channel on a PSM, a central opens
/// it. Core 5.4, Vol 3, Part A, 10.1.
///
/// ```swift
/// // Peripheral
/// let (psm, channels) = try await manager.publishL2CAPChannel()
/// for await channel in channels { for await sdu in channel.incoming { try await channel.send(sdu) } }
/// // Central
/// let channel = try await peripheral.openL2CAPChannel(psm)
/// try await channel.send(Array("hello".utf8))
/// ```
///
/// A peripheral may open a channel to a central too (``PeripheralManager/openL2CAPChannel(_:to:parameters:)``), when
/// the central's adapter publishes the PSM.
///
/// ``L2CAPChannel/send(_:)`` waits while the peer has no credits for the SDU, and the peer waits while this side
/// has not taken the SDUs it sent from ``L2CAPChannel/incoming``: neither side queues without bound.
extension RemotePeripheral {
    /// Opens an LE credit based channel to the peripheral's `psm`. Throws ``HostError`` when the peripheral refuses
    /// (`l2capConnectionFailed` with its result, for example SPSM not supported), does not answer within the
    /// signaling timeout, or the link drops.
    public func openL2CAPChannel(_ psm: L2CAPSPSM, parameters: L2CAPChannelParameters = L2CAPChannelParameters()) async throws -> L2CAPChannel {
        try await central.host.openL2CAPChannel(spsm: psm, on: await connection, parameters: parameters)
    }
}

extension PeripheralManager {
    /// Publishes an LE credit based channel on the lowest free dynamic PSM (0x0080–0x00FF), like CoreBluetooth's
    /// `publishL2CAPChannel(withEncryption:)`; returns the PSM (advertise it, or serve it in a characteristic) and the
    /// channels centrals open to it. `withEncryption`: a central on an unencrypted link is refused (Insufficient
    /// Authentication without a bond, Insufficient Encryption with one), and ours pairs and asks again.
    public func publishL2CAPChannel(withEncryption: Bool = false, parameters: L2CAPChannelParameters = L2CAPChannelParameters())
        async throws -> (psm: L2CAPSPSM, channels: AsyncStream<L2CAPChannel>) {
        let (spsm, channels) = try await host.listen(parameters: parameters, security: withEncryption ? .encrypted : .none)
        return (spsm, channels)
    }

    /// Publishes an LE credit based channel on a chosen PSM (a SIG-assigned one, or a dynamic one both sides know);
    /// returns the channels centrals open to it. `security` is what the link must have (``L2CAPSecurityRequirement``).
    public func publishL2CAPChannel(_ psm: L2CAPSPSM, security: L2CAPSecurityRequirement = .none,
                                    parameters: L2CAPChannelParameters = L2CAPChannelParameters()) async throws -> AsyncStream<L2CAPChannel> {
        try await host.listen(spsm: psm, parameters: parameters, security: security)
    }

    /// Opens an LE credit based channel to `psm` of a connected central (the `HostConnection` of its
    /// ``CentralEvent/connected(_:)``): either side of an LE link may send the LE Credit Based Connection Request
    /// (Core 5.4, Vol 3, Part A, 4.22). The central must accept channels on `psm` (a ``PeripheralManager`` on its
    /// adapter publishing it). Throws ``HostError`` when the central refuses (`l2capConnectionFailed` with its
    /// result), does not answer within the signaling timeout, or the link drops.
    public func openL2CAPChannel(_ psm: L2CAPSPSM, to central: HostConnection,
                                 parameters: L2CAPChannelParameters = L2CAPChannelParameters()) async throws -> L2CAPChannel {
        try await host.openL2CAPChannel(spsm: psm, on: central, parameters: parameters)
    }

    /// Stops accepting channels on `psm` (the stream of channels finishes; open channels stay open).
    public func unpublishL2CAPChannel(_ psm: L2CAPSPSM) async {
        await host.stopListening(spsm: psm)
    }
}
