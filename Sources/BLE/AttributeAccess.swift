import BLEHost
import BLEProtocols
import BLEWire

// What a program forwarding another client's requests needs (a Bluetooth proxy): every advertising report as heard,
// and attributes read and written by handle, for a client that knows the handles from its own cache.

extension Central {
    /// Scans and reports every advertising report as the controller heard it: advertisements and scan responses
    /// apart, each with its raw data bytes, the advertiser's address and type, the RSSI and the PHYs. Nothing is
    /// merged, filtered or remembered (``scan(services:allowDuplicates:active:timeout:trackingLimit:bufferingLimit:phys:ownAddress:)``
    /// does that); a consumer that falls more than `bufferingLimit` reports behind loses the oldest.
    ///
    /// - Parameters:
    ///   - active: send scan requests (scan responses are heard only then).
    ///   - phys: the primary PHYs to scan (LE Coded needs a controller with extended advertising and LE Coded).
    ///   - continuous: listen all the time (the scan window as long as the scan interval), as a proxy or a gateway
    ///     wants; otherwise the default duty cycle (30 ms in every 60 ms), which hears about half of what is sent.
    ///     A controller still leaves the window for its connections' events.
    ///   - bufferingLimit: the most reports held for a slow consumer.
    public func advertisementReports(active: Bool = true, phys: LEPHYs = .le1M, continuous: Bool = false,
                                     bufferingLimit: Int = 4096) async throws -> AsyncThrowingStream<AdvertisementReport, any Error> {
        // The host's own stream: no task or second stream between it and the consumer.
        try await host.scan(Self.reportOptions(active: active, phys: phys, continuous: continuous, bufferingLimit: bufferingLimit))
    }

    /// The reports of ``advertisementReports(active:phys:continuous:bufferingLimit:)`` in batches: every report the
    /// host took in one step (a burst from the controller), in order, never empty, so that a consumer forwarding
    /// thousands a second (a proxy) pays one wake-up per burst instead of one per report. A consumer that falls
    /// behind loses the oldest batches once about `bufferingLimit` reports wait.
    public func advertisementReportBatches(active: Bool = true, phys: LEPHYs = .le1M, continuous: Bool = false,
                                           bufferingLimit: Int = 4096) async throws -> AsyncThrowingStream<[AdvertisementReport], any Error> {
        try await host.scanBatches(Self.reportOptions(active: active, phys: phys, continuous: continuous, bufferingLimit: bufferingLimit))
    }

    private static func reportOptions(active: Bool, phys: LEPHYs, continuous: Bool, bufferingLimit: Int) -> HCIHost.ScanOptions {
        var options = HCIHost.ScanOptions(active: active, filterDuplicates: false, phys: phys)
        if continuous { options.window = options.interval }
        options.bufferingLimit = max(1, bufferingLimit)
        return options
    }
}

extension RemotePeripheral {
    /// Reads the attribute at `handle` (a characteristic value or a descriptor; a long value whole), without
    /// discovering it first. An ATT error comes back as ``GATTError`` with its code.
    public func readValue(at handle: AttributeHandle) async throws -> [UInt8] {
        try await engine.read(await link.connection, attribute: handle)
    }

    /// Writes the attribute at `handle` (a characteristic value or a descriptor) with a Write Request (long values
    /// as prepared writes), or a Write Command when `type` is ``WriteType/withoutResponse``.
    public func writeValue(_ value: [UInt8], at handle: AttributeHandle, type: WriteType) async throws {
        switch type {
        case .withResponse: try await engine.write(await link.connection, attribute: handle, value: value)
        case .withoutResponse: try await engine.writeWithoutResponse(await link.connection, attribute: handle, value: value)
        }
    }
}
