import BLE
import BLEHost
import BLEProtocols
import BLEWire

extension PeripheralManager {
    /// Replaces the published database with the one `description` lays out (``GATTDeviceDescription/database()``):
    /// its handles, its Generic Access and Generic Attribute services when it has them, its values and the ATT
    /// errors some reads answer. Connected centrals subscribed to Service Changed are told the whole range changed.
    /// Advertises nothing and runs no timer: ``serve(_:)`` does both.
    public func publish(_ description: GATTDeviceDescription) async throws(GATTDeviceDescriptionError) {
        let database = try description.database()
        await replaceDatabase(with: database)
    }

    /// Serves a described device: publishes its database (``publish(_:)``), advertises it (connectable, again after
    /// each connection and disconnection) and sends each notify timer's values to the subscribed centrals (from the
    /// first value when the first central subscribes: a timer's values advance only while one listens). Returns
    /// the running device; ``VirtualDevice/stop()`` ends it.
    public func serve(_ description: GATTDeviceDescription) async throws -> VirtualDevice {
        let advertisement = try description.advertisement()
        try await publish(description)
        // The value handles of the description's characteristics, in order (the database lays them out in order).
        let database = await self.database
        let valueHandles = database.attributes.compactMap { a -> AttributeHandle? in
            if case .characteristicValue = a.role { return a.handle } else { return nil }
        }
        let generic = description.suppliesGenericServices ? 0
            : GATTDatabase.genericServices().reduce(0) { $0 + $1.characteristics.count }
        var timers: [Task<Void, Never>] = []
        var index = generic
        for service in description.services {
            for characteristic in service.characteristics {
                defer { index += 1 }
                guard let timer = characteristic.notify, index < valueHandles.count else { continue }
                let handle = valueHandles[index]
                timers.append(Task { [self] in
                    var next = 0
                    while !Task.isCancelled {
                        do { try await Task.sleep(for: .milliseconds(timer.intervalMilliseconds)) } catch { return }
                        guard !timer.values.isEmpty else { return }
                        let value = timer.values[next % timer.values.count]
                        // The sequence advances only while someone listens, so a central that subscribes hears it
                        // from its first value (a replayed capture's notifications in the order the device sent them).
                        let reached = (try? await updateValue(value, forValueHandle: handle)) ?? []
                        next = reached.isEmpty ? 0 : next + 1
                    }
                })
            }
        }
        do {
            try await startAdvertising(advertisement, restartAfterConnection: true)
        } catch {
            for t in timers { t.cancel() }
            throw error
        }
        return VirtualDevice(manager: self, description: description, timers: timers)
    }
}

/// A described device being served (``PeripheralManager/serve(_:)``): its database published, advertising, its notify
/// timers running until ``stop()``.
public final class VirtualDevice: Sendable {
    /// The peripheral manager serving it.
    public let manager: PeripheralManager
    /// What it serves.
    public let description: GATTDeviceDescription
    let timers: [Task<Void, Never>]

    init(manager: PeripheralManager, description: GATTDeviceDescription, timers: [Task<Void, Never>]) {
        self.manager = manager
        self.description = description
        self.timers = timers
    }

    /// Stops the notify timers and advertising (connected centrals stay connected; power the manager off to drop them).
    public func stop() async {
        for t in timers { t.cancel() }
        try? await manager.stopAdvertising()
    }
}
