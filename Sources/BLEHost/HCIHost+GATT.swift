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
        return driver
    }

    /// Runs `body` on this host with its GATT driver: the one way into the driver from outside (``GATTEngine``).
    func withGATT<T: Sendable>(_ body: @Sendable (isolated HCIHost, GATTDriver) async throws -> T) async rethrows -> T {
        try await body(self, gattDriver())
    }

    /// A timer of a link's ATT bearer went off.
    func gattTimerFired(_ firing: TimerSet<ATTBearer.Timer>.Firing, on link: LinkID) async {
        await gatt.driver?.timerFired(firing, on: link, host: self)
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
