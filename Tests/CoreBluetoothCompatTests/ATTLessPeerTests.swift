import BLEHost
import BLEWire
import BLEVirtualController
@testable import CoreBluetoothCompat
import Foundation
import Testing

/// An app that connects to the device named "NoATT" and opens an L2CAP channel to it, noting when it connected (in
/// the world's time) and what the channel did.
final class ChannelOnlyApp: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    let world: SimulatedWorld
    let psm: CBL2CAPPSM
    private let lock = NSLock()
    private var _connectedAt: Duration?
    private var _channel: CBL2CAPChannel?
    private var _channelError: (any Error)?
    var manager: CBCentralManager!
    var device: CBPeripheral?

    var connectedAt: Duration? { lock.withLock { _connectedAt } }
    var channel: CBL2CAPChannel? { lock.withLock { _channel } }
    var channelError: (any Error)? { lock.withLock { _channelError } }

    init(world: SimulatedWorld, psm: CBL2CAPPSM) {
        self.world = world
        self.psm = psm
        super.init()
        manager = CBCentralManager(delegate: self, queue: DispatchQueue(label: "channel-only app"))
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        if central.state == .poweredOn { central.scanForPeripherals(withServices: nil) }
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any],
                        rssi RSSI: NSNumber) {
        guard device == nil, peripheral.name == "NoATT" else { return }
        device = peripheral
        central.stopScan()
        central.connect(peripheral)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        lock.withLock { _connectedAt = world.now }
        peripheral.delegate = self
        peripheral.openL2CAPChannel(psm)
    }

    func peripheral(_ peripheral: CBPeripheral, didOpen channel: CBL2CAPChannel?, error: (any Error)?) {
        lock.withLock {
            _channel = channel
            _channelError = error
        }
    }
}

/// A peer with no ATT server (an L2CAP-only accessory, a Linux host where nothing serves GATT) never answers the MTU
/// exchange begun on connecting: the app hears `didConnect` within a second of the link's time, not after the 30 s
/// ATT transaction timeout, and its L2CAP channel opens.
@Suite struct ATTLessPeerTests {
    @Test func aPeerWithoutATTIsConnectedAtOnceAndItsChannelOpens() async throws {
        let world = SimulatedWorld()
        let silent = HCIHost(transport: world.air.addController(.init(position: Position(x: 1))).makeHostTransport())
        try await silent.powerOn()
        let events = await silent.events()
        let channels = try await silent.listen(spsm: L2CAPSPSM(rawValue: 0x0080))
        try await silent.startAdvertising(.init(data: AdvertisingData(localName: "NoATT")))
        // The peer takes its ATT channel itself and answers nothing on it.
        let asked = Task { () -> [UInt8]? in
            for await event in events {
                guard case .connected(let link) = event else { continue }
                var att = try await silent.openFixedChannel(.att, on: link).makeAsyncIterator()
                return await att.next()
            }
            return nil
        }
        await world.run {
            let app = ChannelOnlyApp(world: world, psm: 0x0080)
            #expect(await world.advance(until: { app.device != nil }, limit: .seconds(10)), "NoATT not found")
            // Well before the 30 s ATT transaction timeout (the app's own tasks are not part of the world's settling
            // step, so on a loaded machine simulated time may run ahead of them: a generous bound, not an instant).
            #expect(await world.advance(until: { app.connectedAt != nil }, limit: .seconds(25)), "no didConnect before the ATT timeout")
            #expect(await world.advance(until: { app.channel != nil || app.channelError != nil }, limit: .seconds(10)))
            #expect(app.channelError == nil)
            #expect(app.channel?.psm == 0x0080)
            var accepted = channels.makeAsyncIterator()
            #expect(await accepted.next() != nil, "the peer did not see the channel")
            #expect(app.device?.maximumWriteValueLength(for: .withoutResponse) == 20)
        }
        // The central did ask for the MTU (Exchange MTU Request, 247), and nobody answered.
        #expect(try await asked.value == [0x02, 0xF7, 0x00])
    }
}
