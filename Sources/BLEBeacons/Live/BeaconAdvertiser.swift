import BLE
import Synchronization

/// Advertises beacon frames through a `PeripheralManager`: non-connectable, at a chosen interval, one frame or
/// several in rotation (as Eddystone beacons interleave UID, URL and TLM frames).
public final class BeaconAdvertiser: Sendable {
    /// The peripheral that advertises.
    public let peripheral: PeripheralManager
    private let rotation = Mutex<Task<Void, Never>?>(nil)

    /// Creates an advertiser over a peripheral manager (it takes over the peripheral's advertising).
    public init(peripheral: PeripheralManager) { self.peripheral = peripheral }

    deinit { rotation.withLock { $0?.cancel() } }

    /// Starts advertising `frames`: the first at once, then each in turn for `dwell` when there are several.
    /// Replaces whatever was advertised before (an empty list only stops the rotation).
    ///
    /// Throws `WireError` (`oversized`) when a frame's advertising data does not fit in 31 bytes, and
    /// `HostError` when the controller refuses (an interval outside 20 ms...10.24 s among others); nothing is
    /// advertised then.
    public func start(_ frames: [BeaconFrame], interval: Duration = .milliseconds(100), dwell: Duration = .seconds(1)) async throws {
        stopRotation()
        let advertisements = frames.map { Advertisement(data: $0.advertisingData, interval: interval, kind: .nonConnectable) }
        for (frame, advertisement) in zip(frames, advertisements) {
            do {
                _ = try advertisement.data.encodedLegacy()
            } catch {
                throw WireError(.oversized, "\(frame): \(error.reason)")
            }
        }
        guard let first = advertisements.first else { return }
        try await peripheral.startAdvertising(first)
        guard advertisements.count > 1 else { return }
        let peripheral = peripheral
        let task = Task {
            var index = 0
            while !Task.isCancelled {
                do { try await Task.sleep(for: dwell) } catch { return }
                index = (index + 1) % advertisements.count
                try? await peripheral.startAdvertising(advertisements[index])
            }
        }
        rotation.withLock { $0 = task }
    }

    /// Starts advertising one frame.
    public func start(_ frame: BeaconFrame, interval: Duration = .milliseconds(100)) async throws {
        try await start([frame], interval: interval)
    }

    /// Stops the rotation and the advertising.
    public func stop() async throws {
        stopRotation()
        try await peripheral.stopAdvertising()
    }

    private func stopRotation() {
        rotation.withLock { task in
            task?.cancel()
            task = nil
        }
    }
}
