import BLE

/// A tracker shared by the tasks of a live session.
actor BeaconSessionState {
    var tracker: BeaconTracker
    init(_ tracker: BeaconTracker) { self.tracker = tracker }
    func observe(_ data: AdvertisingData, rssi: Int, at time: Duration, from address: BluetoothAddress) -> [RegionEvent] {
        tracker.observe(data, rssi: rssi, at: time, from: address)
    }
    func advance(to time: Duration) -> (updates: [BeaconRanger.Update], events: [RegionEvent]) {
        tracker.advance(to: time)
    }
}

extension Central {
    /// Ranges beacons live: scans passively, feeds every beacon advertisement to a ``BeaconRanger`` and delivers its
    /// updates at the configured rate (1 Hz by default), nearest beacon first.
    ///
    /// - Parameters:
    ///   - regions: range only the beacons in one of these regions (empty: every beacon, Eddystone included).
    ///   - configuration: the ranger's tuning.
    /// Cancelling the consumer stops the scan.
    public func rangeBeacons(in regions: [BeaconRegion] = [], configuration: BeaconRanger.Configuration = .init())
        async throws -> AsyncThrowingStream<BeaconRanger.Update, any Error>
    {
        let state = BeaconSessionState(BeaconTracker(ranging: configuration, rangedRegions: regions))
        return try await session(state: state, tick: configuration.updateInterval) { continuation, updates, _ in
            for update in updates { continuation.yield(update) }
        } onEvents: { _, _ in }
    }

    /// Monitors beacon regions live: an ``RegionEvent/Kind/enter`` event as soon as a matching beacon is heard, an
    /// ``RegionEvent/Kind/exit`` event once none has been heard for `exitTimeout` (checked every `resolution`).
    /// Cancelling the consumer stops the scan.
    public func monitor(_ regions: [BeaconRegion], exitTimeout: Duration = .seconds(30), resolution: Duration = .milliseconds(250))
        async throws -> AsyncThrowingStream<RegionEvent, any Error>
    {
        let state = BeaconSessionState(BeaconTracker(monitoring: regions, exitTimeout: exitTimeout))
        return try await session(state: state, tick: resolution) { continuation, _, events in
            for event in events { continuation.yield(event) }
        } onEvents: { continuation, events in
            for event in events { continuation.yield(event) }
        }
    }

    /// Runs a scan feeding `state` and a fixed-rate ticker advancing it; session time starts at the call.
    private func session<Element: Sendable>(
        state: BeaconSessionState, tick: Duration,
        onTick: @escaping @Sendable (AsyncThrowingStream<Element, any Error>.Continuation, [BeaconRanger.Update], [RegionEvent]) -> Void,
        onEvents: @escaping @Sendable (AsyncThrowingStream<Element, any Error>.Continuation, [RegionEvent]) -> Void
    ) async throws -> AsyncThrowingStream<Element, any Error> {
        let reports = try await scan(allowDuplicates: true, active: false)
        let clock = ContinuousClock()
        let start = clock.now
        return AsyncThrowingStream { continuation in
            let feeder = Task {
                do {
                    for try await report in reports {
                        let events = await state.observe(report.advertisementData, rssi: Int(report.rssi), at: clock.now - start,
                                                         from: report.address.address)
                        onEvents(continuation, events)
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            let ticker = Task {
                var next = start + tick
                while !Task.isCancelled {
                    do { try await clock.sleep(until: next) } catch { return }
                    let (updates, events) = await state.advance(to: clock.now - start)
                    onTick(continuation, updates, events)
                    next += tick
                }
            }
            continuation.onTermination = { _ in
                feeder.cancel()
                ticker.cancel()
            }
        }
    }
}
