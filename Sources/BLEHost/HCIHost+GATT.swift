import BLEProtocols
import BLEWire

/// The host's GATT: routing to its ``GATTDriver``, which it owns and runs in its own isolation.
extension HCIHost {
    /// The GATT driver of this host's links, created on first use and attached then to every link up (later links
    /// are attached as they come up): one per host, shared by every user of the host (a central and a peripheral
    /// manager on one controller), since a link has one ATT bearer.
    func gattDriver() -> GATTDriver {
        if let driver = gatt.driver { return driver }
        let driver = GATTDriver()
        driver.cache = gatt.cache
        gatt.driver = driver
        for connection in connections { driver.attach(connection, host: self) }
        acceptEnhancedATT()
        return driver
    }

    /// The parameters of this host's side of an Enhanced ATT bearer: its MTU is the driver's preferred ATT_MTU (at
    /// least the 64 octets of an enhanced channel), its MPS what the host reassembles.
    func enhancedATTParameters(mtu: Int) -> L2CAPChannelParameters {
        let mtu = UInt16(clamping: max(Int(L2CAPChannelParameters.minimumEnhanced), min(mtu, ATT.maximumMTU)))
        let mps = UInt16(clamping: max(Int(L2CAPChannelParameters.minimumEnhanced), min(Int(mtu), configuration.maximumL2CAPPDULength)))
        return L2CAPChannelParameters(mtu: mtu, mps: mps, initialCredits: 8)
    }

    /// While EATT is on (``Configuration/enhancedATTBearers``), the host listens on SPSM 0x0027 itself, on encrypted
    /// links only (an unencrypted link's request is refused with Insufficient Authentication or Encryption by the
    /// link's L2CAP manager), and hands each channel to its GATT driver as an ATT bearer of its link. An application
    /// that listens on SPSM 0x0027 itself (``listen(spsm:parameters:security:)``) keeps it: the host does not take it
    /// over, and an application listening later takes it from the host.
    private func acceptEnhancedATT() {
        guard configuration.enhancedATTBearers > 0, let driver = gatt.driver, l2cap.listeners[.eatt] == nil else { return }
        let parameters = enhancedATTParameters(mtu: driver.preferredMTU)
        guard let channels = try? listen(spsm: .eatt, parameters: parameters, security: L2CAPSecurityRequirement(encryption: true)) else {
            logger.warning("EATT: could not listen on SPSM 0x0027; peers cannot open Enhanced ATT bearers")
            return
        }
        Task { [weak self] in
            for await channel in channels {
                await self?.withGATT { host, gatt in gatt.adoptEnhancedBearer(channel, host: host) }
            }
        }
    }

    /// Runs `body` on this host with its GATT driver: the one way into the driver from outside (``GATTEngine``).
    func withGATT<T: Sendable>(_ body: @Sendable (isolated HCIHost, GATTDriver) async throws -> T) async rethrows -> T {
        try await body(self, gattDriver())
    }

    /// A timer of a link's ATT bearer went off.
    func gattTimerFired(_ firing: TimerSet<ATTBearer.Timer>.Firing, on link: LinkID, bearer: GATTDriver.BearerID) async {
        await gatt.driver?.timerFired(firing, on: link, bearer: bearer, host: self)
    }

    /// Sets the GATT cache of this host's GATT (``gattEngine()``), now and should the driver be created later.
    public func setSharedGATTCache(_ cache: GATTCache?) {
        gatt.cache = cache
        gatt.driver?.cache = cache
    }

    /// A view of this host's GATT (``GATTEngine``), which serves and runs from now on: every link up and to come gets
    /// an ATT bearer.
    public func gattEngine() -> GATTEngine {
        _ = gattDriver()
        return GATTEngine(host: self)
    }
}
