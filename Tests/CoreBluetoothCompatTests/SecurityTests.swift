import BLE
@testable import CoreBluetoothCompat
import Foundation
import Synchronization
import Testing

/// A pairing agent that answers the consent question as told and records who asked.
final class ConsentAgent: PairingAgent {
    let consent: Bool
    let asked = Mutex<[LEAddress]>([])
    init(consent: Bool) { self.consent = consent }
    func acceptPairing(from peer: LEAddress) async -> Bool {
        asked.withLock { $0.append(peer) }
        return consent
    }
    func displayPasskey(_ passkey: UInt32, for peer: LEAddress) async {}
    func enterPasskey(for peer: LEAddress) async -> UInt32? { nil }
    func confirmNumber(_ number: UInt32, for peer: LEAddress) async -> Bool { consent }
}

@Suite(.serialized) struct CBSecurityTests {
    /// A CBPeripheralManager created after `setSecurity` asks its pairing agent (the pairing handler that replaces
    /// iOS's system dialog) before a central pairs to read an encrypted characteristic.
    @Test(arguments: [true, false])
    func thePairingAgentDecidesWhetherACentralMayPair(consent: Bool) async throws {
        let agent = ConsentAgent(consent: consent)
        CBManager.setSecurity(SecurityConfiguration(), pairingAgent: agent)
        let (stream, log) = AsyncStream.makeStream(of: String.self)
        let lines = LineQueue(stream)
        let peripheral = RecordingPeripheral(queue: DispatchQueue(label: "secure peripheral"), log: log)
        CBManager.setSecurity(SecurityConfiguration(), pairingAgent: nil)
        #expect(await lines.next() == "state 5")
        let uuid = CBUUID(nsuuid: UUID())
        let secret = CBMutableCharacteristic(type: CBUUID(string: "5EC0"), properties: [.read], value: Data("secret".utf8),
                                             permissions: [.readEncryptionRequired])
        let service = CBMutableService(type: uuid, primary: true)
        service.characteristics = [secret]
        peripheral.manager.add(service)
        #expect(await lines.next() == "added \(uuid) ok")
        let name = "Secure \(UInt16.random(in: 1000...9999))"
        peripheral.manager.startAdvertising([CBAdvertisementDataLocalNameKey: name, CBAdvertisementDataServiceUUIDsKey: [uuid]])
        #expect(await lines.next() == "advertising ok")
        let central = await Central(.virtual)
        var found: DiscoveredPeripheral?
        for try await candidate in try await central.scan(services: [uuid.bluetoothUUID]) where candidate.name == name {
            found = candidate
            break
        }
        let remote = try await central.connect(try #require(found), timeout: .seconds(5))
        let gattService = try #require(try await remote.discoverServices([uuid.bluetoothUUID]).first)
        let characteristic = try #require(try await remote.discoverCharacteristics(for: gattService).first)
        if consent {
            #expect(try await remote.readValue(for: characteristic) == Array("secret".utf8))
        } else {
            await #expect(throws: GATTError.self) { try await remote.readValue(for: characteristic) }
        }
        #expect(agent.asked.withLock { $0.count } == 1)
        try await central.disconnect(remote)
        withExtendedLifetime(peripheral) {}
    }
}
