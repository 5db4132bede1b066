import BLEProtocols
import BLEWire
import Foundation
import Synchronization

/// What a GATT client learned of other devices' databases, so that a reconnection to an unchanged device is ready
/// after one round trip: reading its Database Hash. Each entry is kept under the peer's identity address (its address
/// when it is not bonded) with the hash the database had when it was discovered; a different hash, a Service Changed
/// indication or a Database Out Of Sync answer drops it, and the next discovery runs in full. Core 5.4, Vol 3,
/// Part G, 2.5.2.
///
/// Give one to ``GATTEngine/setCache(_:)`` (the `BLE` module's `Central.useGATTCache(_:)`). With a file, the cache
/// is read at creation and written after each change (JSON); a file that cannot be read is treated as empty, since a
/// cache can always be rebuilt from the device.
public final class GATTCache: Sendable {
    /// One device's database as discovered.
    public struct Entry: Sendable, Hashable {
        /// Its Database Hash when it was discovered (16 octets, as served).
        public var hash: [UInt8]
        /// Its services, characteristics and (when ``hasDescriptors``) descriptors.
        public var services: [GATTDiscoveredService]
        /// Whether descriptors were discovered too.
        public var hasDescriptors: Bool

        /// Creates an entry.
        public init(hash: [UInt8], services: [GATTDiscoveredService], hasDescriptors: Bool) {
            self.hash = hash
            self.services = services
            self.hasDescriptors = hasDescriptors
        }
    }

    private let entries: Mutex<[LEAddress: Entry]>
    /// The file the cache is kept in, if any.
    public let fileURL: URL?

    /// Creates a cache, in memory only or kept in `fileURL` (read now when it exists).
    public init(fileURL: URL? = nil) {
        self.fileURL = fileURL
        var loaded: [LEAddress: Entry] = [:]
        if let fileURL, let data = try? Data(contentsOf: fileURL),
           let stored = try? JSONDecoder().decode([StoredEntry].self, from: data) {
            for item in stored { if let (peer, entry) = item.decoded { loaded[peer] = entry } }
        }
        entries = Mutex(loaded)
    }

    /// The entry of `peer`, if any.
    public func entry(for peer: LEAddress) -> Entry? { entries.withLock { $0[peer] } }

    /// The devices with an entry.
    public var peers: [LEAddress] { entries.withLock { Array($0.keys) } }

    /// Records `peer`'s database.
    public func store(_ entry: Entry, for peer: LEAddress) {
        entries.withLock { $0[peer] = entry }
        save()
    }

    /// Forgets `peer`'s database (it changed).
    public func remove(_ peer: LEAddress) {
        let removed = entries.withLock { $0.removeValue(forKey: peer) != nil }
        if removed { save() }
    }

    private func save() {
        guard let fileURL else { return }
        let snapshot = entries.withLock { $0.map { StoredEntry($0.key, $0.value) } }
            .sorted { $0.address < $1.address }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(snapshot) else { return }
        try? data.write(to: fileURL, options: .atomic)
    }
}

/// The file form of a cache entry: plain numbers and hex, checked again when read.
private struct StoredEntry: Codable {
    struct Characteristic: Codable {
        var uuid: String
        var properties: UInt8
        var declaration: UInt16
        var value: UInt16
        var end: UInt16
        var descriptors: [[String]]
    }
    struct Service: Codable {
        var uuid: String
        var start: UInt16
        var end: UInt16
        var characteristics: [Characteristic]
    }
    var address: String
    var addressType: UInt8
    var hash: String
    var descriptors: Bool
    var services: [Service]

    init(_ peer: LEAddress, _ entry: GATTCache.Entry) {
        address = peer.address.description
        addressType = peer.type.rawValue
        hash = entry.hash.hexString()
        descriptors = entry.hasDescriptors
        services = entry.services.map { s in
            Service(uuid: s.service.uuid.fullString, start: s.service.startHandle.rawValue, end: s.service.endHandle.rawValue,
                    characteristics: s.characteristics.map { c in
                        Characteristic(uuid: c.characteristic.uuid.fullString, properties: c.characteristic.properties.rawValue,
                                       declaration: c.characteristic.declarationHandle.rawValue,
                                       value: c.characteristic.valueHandle.rawValue, end: c.characteristic.endHandle.rawValue,
                                       descriptors: c.descriptors.map { [$0.uuid.fullString, String($0.handle.rawValue)] })
                    })
        }
    }

    var decoded: (LEAddress, GATTCache.Entry)? {
        guard let address = BluetoothAddress(address), let hash = [UInt8](hex: hash), hash.count == 16 else { return nil }
        var list: [GATTDiscoveredService] = []
        for s in services {
            guard let uuid = BluetoothUUID(s.uuid) else { return nil }
            var characteristics: [GATTDiscoveredCharacteristic] = []
            for c in s.characteristics {
                guard let cu = BluetoothUUID(c.uuid) else { return nil }
                var descriptors: [GATTDescriptor] = []
                for d in c.descriptors {
                    guard d.count == 2, let du = BluetoothUUID(d[0]), let h = UInt16(d[1]) else { return nil }
                    descriptors.append(GATTDescriptor(uuid: du, handle: AttributeHandle(rawValue: h)))
                }
                characteristics.append(GATTDiscoveredCharacteristic(
                    characteristic: GATTCharacteristic(uuid: cu, properties: GATTCharacteristicProperties(rawValue: c.properties),
                                                       declarationHandle: AttributeHandle(rawValue: c.declaration),
                                                       valueHandle: AttributeHandle(rawValue: c.value), endHandle: AttributeHandle(rawValue: c.end)),
                    descriptors: descriptors))
            }
            list.append(GATTDiscoveredService(service: GATTService(uuid: uuid, isPrimary: true, startHandle: AttributeHandle(rawValue: s.start),
                                                                   endHandle: AttributeHandle(rawValue: s.end)),
                                              characteristics: characteristics))
        }
        return (LEAddress(address, type: LEAddressType(rawValue: addressType)), GATTCache.Entry(hash: hash, services: list, hasDescriptors: descriptors))
    }
}
