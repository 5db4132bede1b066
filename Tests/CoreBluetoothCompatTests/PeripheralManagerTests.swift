import BLE
@testable import CoreBluetoothCompat
import Foundation
import Synchronization
import Testing

/// A peripheral-manager delegate that logs every callback as a line and answers requests as `answer` says.
final class RecordingPeripheral: NSObject, CBPeripheralManagerDelegate {
    let log: AsyncStream<String>.Continuation
    var manager: CBPeripheralManager!
    var readValue = Data((0..<300).map { UInt8(truncatingIfNeeded: $0) })
    private let lock = NSLock()
    private var refusal: CBATTError.Code?
    var lastCentral: CBCentral?

    /// The error the next writes are refused with (`nil`: accepted); set from any thread.
    var refuseWritesWith: CBATTError.Code? {
        get { lock.withLock { refusal } }
        set { lock.withLock { refusal = newValue } }
    }

    init(queue: DispatchQueue, log: AsyncStream<String>.Continuation) {
        self.log = log
        super.init()
        manager = CBPeripheralManager(delegate: self, queue: queue)
    }

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) { log.yield("state \(peripheral.state.rawValue)") }

    func peripheralManager(_ peripheral: CBPeripheralManager, didAdd service: CBService, error: Error?) {
        log.yield("added \(service.uuid) \(error.map { "error \($0)" } ?? "ok")")
    }

    func peripheralManagerDidStartAdvertising(_ peripheral: CBPeripheralManager, error: Error?) {
        log.yield("advertising \(error.map { "error \(($0 as? CBError)?.code.rawValue ?? -1)" } ?? "ok")")
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didSubscribeTo characteristic: CBCharacteristic) {
        lastCentral = central
        let subscribers = (characteristic as? CBMutableCharacteristic)?.subscribedCentrals?.count ?? 0
        log.yield("subscribed \(characteristic.uuid) subscribers \(subscribers) max \(central.maximumUpdateValueLength)")
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didUnsubscribeFrom characteristic: CBCharacteristic) {
        log.yield("unsubscribed \(characteristic.uuid) same central \(central === lastCentral)")
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveRead request: CBATTRequest) {
        log.yield("read offset \(request.offset)")
        guard request.offset <= readValue.count else {
            peripheral.respond(to: request, withResult: .invalidOffset)
            return
        }
        request.value = readValue.subdata(in: request.offset..<readValue.count)
        peripheral.respond(to: request, withResult: .success)
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveWrite requests: [CBATTRequest]) {
        let parts = requests.map { "\($0.offset):\($0.value?.count ?? 0)" }.joined(separator: ",")
        let bytes = requests.reduce(into: Data()) { $0.append($1.value ?? Data()) }
        log.yield("write \(parts) sum \(bytes.reduce(0) { $0 &+ Int($1) })")
        if let first = requests.first {
            peripheral.respond(to: first, withResult: refuseWritesWith ?? .success)
            // A second answer to the same batch is ignored.
            peripheral.respond(to: requests[requests.count - 1], withResult: .unlikelyError)
        }
    }
}

@Suite struct PeripheralManagerTests {
    static func service(_ uuid: CBUUID) -> (CBMutableService, CBMutableCharacteristic, CBMutableCharacteristic) {
        let dynamic = CBMutableCharacteristic(type: CBUUID(string: "A0B1C2D3-0000-1000-8000-000000000001"),
                                              properties: [.read, .write, .writeWithoutResponse, .notify], value: nil, permissions: [.readable, .writeable])
        let fixed = CBMutableCharacteristic(type: CBUUID(string: "2A29"), properties: [.read], value: Data("swift-ble".utf8),
                                            permissions: [.readable])
        let service = CBMutableService(type: uuid, primary: true)
        service.characteristics = [dynamic, fixed]
        return (service, dynamic, fixed)
    }

    /// Publishes a service on a recording peripheral and connects an async-API central to it.
    static func setUp(_ log: AsyncStream<String>.Continuation, lines: LineQueue) async throws
        -> (RecordingPeripheral, CBMutableCharacteristic, Central, RemotePeripheral, GATTCharacteristic, GATTCharacteristic) {
        let queue = DispatchQueue(label: "recording peripheral")
        let peripheral = RecordingPeripheral(queue: queue, log: log)
        #expect(await lines.next() == "state 5")
        let uuid = CBUUID(nsuuid: UUID())
        let (service, dynamic, _) = Self.service(uuid)
        peripheral.manager.add(service)
        #expect(await lines.next() == "added \(uuid) ok")
        let name = "Recorder \(UInt16.random(in: 1000...9999))"
        peripheral.manager.startAdvertising([CBAdvertisementDataLocalNameKey: name, CBAdvertisementDataServiceUUIDsKey: [uuid]])
        #expect(await lines.next() == "advertising ok")
        peripheral.manager.startAdvertising([CBAdvertisementDataLocalNameKey: name])
        #expect(await lines.next() == "advertising error 9")
        let central = await Central(.virtual)
        var found: DiscoveredPeripheral?
        for try await candidate in try await central.scan(services: [uuid.bluetoothUUID]) where candidate.name == name {
            found = candidate
            break
        }
        let target = try #require(found)
        let remote = try await central.connect(target, timeout: .seconds(5))
        _ = try await remote.exchangeMTU()
        let gattService = try #require(try await remote.discoverServices([uuid.bluetoothUUID]).first)
        let characteristics = try await remote.discoverCharacteristics(for: gattService)
        let first = try #require(characteristics.first)
        let second = try #require(characteristics.last)
        return (peripheral, dynamic, central, remote, first, second)
    }

    @Test func readsAndWritesReachTheDelegateAndItsAnswersReachTheCentral() async throws {
        let (stream, log) = AsyncStream.makeStream(of: String.self)
        let lines = LineQueue(stream)
        let (peripheral, _, central, remote, dynamic, fixed) = try await Self.setUp(log, lines: lines)
        // A value published with the service is served by the stack, not the delegate.
        #expect(try await remote.readValue(for: fixed) == Array("swift-ble".utf8))
        // A long read: the delegate answers each part from its offset.
        #expect(try await remote.readValue(for: dynamic) == [UInt8](peripheral.readValue))
        #expect(await lines.next() == "read offset 0")
        #expect(await lines.next() == "read offset 246")
        // A write with response, then a long write: one batch of prepared parts, answered once.
        try await remote.writeValue([1, 2, 3], for: dynamic, type: .withResponse)
        #expect(await lines.next() == "write 0:3 sum 6")
        let long = (0..<400).map { UInt8(truncatingIfNeeded: $0) }
        try await remote.writeValue(long, for: dynamic, type: .withResponse)
        let expectedSum = long.reduce(0) { $0 &+ Int($1) }
        #expect(await lines.next() == "write 0:242,242:158 sum \(expectedSum)")
        // A write without response reaches the delegate too.
        try await remote.writeValue([9], for: dynamic, type: .withoutResponse)
        #expect(await lines.next() == "write 0:1 sum 9")
        // The delegate's refusal is the central's ATT error.
        peripheral.refuseWritesWith = .insufficientResources
        await #expect(throws: GATTError(.att(.insufficientResources, handle: dynamic.valueHandle), "")) {
            try await remote.writeValue([7], for: dynamic, type: .withResponse)
        }
        #expect(await lines.next() == "write 0:1 sum 7")
        try await central.disconnect(remote)
        withExtendedLifetime((peripheral, central)) {}
    }

    @Test func subscriptionsAreReportedPerCentralAndEndWithTheLink() async throws {
        let (stream, log) = AsyncStream.makeStream(of: String.self)
        let lines = LineQueue(stream)
        let (peripheral, dynamicPublished, central, remote, dynamic, _) = try await Self.setUp(log, lines: lines)
        let values = try await remote.notifications(for: dynamic)
        #expect(await lines.next() == "subscribed A0B1C2D3-0000-1000-8000-000000000001 subscribers 1 max 244")
        #expect(dynamicPublished.subscribedCentrals?.count == 1)
        // Updates reach the subscriber in order.
        let queue = DispatchQueue(label: "updates")
        let manager = Unchecked(peripheral.manager!)
        let characteristic = Unchecked(dynamicPublished)
        let accepted = await withCheckedContinuation { continuation in
            queue.async {
                let results = (UInt8(1)...3).map { manager.value.updateValue(Data([$0]), for: characteristic.value, onSubscribedCentrals: nil) }
                continuation.resume(returning: results)
            }
        }
        #expect(accepted == [true, true, true])
        var received = values.makeAsyncIterator()
        var got: [[UInt8]] = []
        for _ in 0..<3 { if let value = await received.next() { got.append(value) } }
        #expect(got == [[1], [2], [3]])
        // The link going down ends the subscription: reported once, for the same central object.
        try await central.disconnect(remote)
        #expect(await lines.next() == "unsubscribed A0B1C2D3-0000-1000-8000-000000000001 same central true")
        #expect(dynamicPublished.subscribedCentrals == nil)
        // An unpublished characteristic cannot be updated.
        let loose = CBMutableCharacteristic(type: CBUUID(string: "2A19"), properties: [.notify], value: nil, permissions: [.readable])
        #expect(peripheral.manager.updateValue(Data([1]), for: loose, onSubscribedCentrals: nil) == false)
        withExtendedLifetime((peripheral, central)) {}
    }

    @Test func invalidServicesAreRefusedInTheCallback() async throws {
        let (stream, log) = AsyncStream.makeStream(of: String.self)
        let lines = LineQueue(stream)
        let peripheral = RecordingPeripheral(queue: DispatchQueue(label: "invalid services"), log: log)
        #expect(await lines.next() == "state 5")
        // A characteristic with a value must be read-only.
        let writable = CBMutableCharacteristic(type: CBUUID(string: "2A00"), properties: [.read, .write], value: Data([1]), permissions: [.readable, .writeable])
        let first = CBMutableService(type: CBUUID(string: "1234"), primary: true)
        first.characteristics = [writable]
        peripheral.manager.add(first)
        let refused = await lines.next() ?? ""
        #expect(refused.hasPrefix("added 1234 error") && refused.contains("read-only"), "\(refused)")
        // An included service must be published first.
        let secondary = CBMutableService(type: CBUUID(string: "1235"), primary: false)
        let including = CBMutableService(type: CBUUID(string: "1236"), primary: true)
        including.includedServices = [secondary]
        peripheral.manager.add(including)
        #expect((await lines.next() ?? "").contains("must be published first"))
        peripheral.manager.add(secondary)
        #expect(await lines.next() == "added 1235 ok")
        peripheral.manager.add(including)
        #expect(await lines.next() == "added 1236 ok")
        // A service is published once.
        peripheral.manager.add(secondary)
        #expect((await lines.next() ?? "").contains("already published"))
        // Only the two descriptors CoreBluetooth allows.
        let described = CBMutableCharacteristic(type: CBUUID(string: "2A01"), properties: [.read], value: nil, permissions: [.readable])
        described.descriptors = [CBMutableDescriptor(type: CBUUID(string: "2908"), value: Data([1, 2]))]
        let third = CBMutableService(type: CBUUID(string: "1237"), primary: true)
        third.characteristics = [described]
        peripheral.manager.add(third)
        #expect((await lines.next() ?? "").contains("2908"))
        withExtendedLifetime(peripheral) {}
    }

    @Test func aRemovedServiceIsGoneFromTheDatabaseAndCanBePublishedAgain() async throws {
        let (stream, log) = AsyncStream.makeStream(of: String.self)
        let lines = LineQueue(stream)
        let (peripheral, _, central, remote, _, _) = try await Self.setUp(log, lines: lines)
        let extra = CBMutableService(type: CBUUID(string: "FFF1"), primary: true)
        extra.characteristics = [CBMutableCharacteristic(type: CBUUID(string: "FFF2"), properties: [.read], value: Data([42]), permissions: [.readable])]
        peripheral.manager.add(extra)
        #expect(await lines.next() == "added FFF1 ok")
        #expect(try await remote.discoverServices([BluetoothUUID(0xFFF1)]).count == 1)
        peripheral.manager.remove(extra)
        peripheral.manager.add(extra)
        #expect(await lines.next() == "added FFF1 ok")
        peripheral.manager.removeAllServices()
        // Everything published through the manager is gone; the GAP and GATT services stay.
        try await Task.sleep(for: .milliseconds(200))
        let left = try await remote.discoverServices().map(\.uuid)
        #expect(left == [BluetoothUUID(0x1800), BluetoothUUID(0x1801)], "\(left)")
        withExtendedLifetime((peripheral, central)) {}
    }

    @Test func advertisingDataIsLaidOutAsIOSDoes() {
        func layout(_ name: String?, _ uuids: [String]) -> (String, String) {
            let (data, response) = CBPeripheralManager.advertisingLayout(name: name, serviceUUIDs: uuids.map { CBUUID(string: $0).bluetoothUUID })
            return (data.encoded.hexString(), response.encoded.hexString())
        }
        // Both fit: all in the advertising packet.
        #expect(layout("Lab", ["180F"]) == ("020106" + "03030f18" + "04094c6162", ""))
        // A 128-bit UUID and a long name: the name moves to the scan response.
        let long = "E20A39F4-73F5-4BC4-A12F-17D1AD07A961"
        let (data, response) = layout("A rather long device name", [long])
        #expect(data.hasPrefix("020106" + "1107"))
        #expect(response == "1a09" + Array("A rather long device name".utf8).hexString())
        // Two 128-bit UUIDs do not fit: the first in the packet, the second in the scan response, both incomplete;
        // the name, shortened, after it.
        let other = "08590F7E-DB05-467E-8757-72F6FAEB13D4"
        let (both, overflow) = layout("Overflowing name", [long, other])
        #expect(both.hasPrefix("020106" + "1106"))
        #expect(both.count == 2 * (3 + 18))
        #expect(overflow.hasPrefix("1106"))
        #expect(overflow.hasSuffix("0c08" + Array("Overflowing".utf8).hexString()), "\(overflow)")
        #expect(overflow.count <= 62)
    }
}

/// The lines a delegate logs, taken one at a time with a time limit, so that a missing callback fails the test
/// instead of hanging it.
final class LineQueue: Sendable {
    private struct State {
        var buffered: [String] = []
        var waiter: (id: Int, continuation: CheckedContinuation<String?, Never>)?
        var nextID = 0
    }
    private let state = Mutex(State())

    init(_ stream: AsyncStream<String>) {
        Task { [weak self] in
            for await line in stream { self?.push(line) }
        }
    }

    private func push(_ line: String) {
        let waiter = state.withLock { state -> CheckedContinuation<String?, Never>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter.continuation
            }
            state.buffered.append(line)
            return nil
        }
        waiter?.resume(returning: line)
    }

    private func expire(_ id: Int) {
        let waiter = state.withLock { state -> CheckedContinuation<String?, Never>? in
            guard let waiter = state.waiter, waiter.id == id else { return nil }
            state.waiter = nil
            return waiter.continuation
        }
        waiter?.resume(returning: nil)
    }

    /// The next line, or `nil` when none comes within `timeout`.
    func next(timeout: Duration = .seconds(10)) async -> String? {
        await withCheckedContinuation { continuation in
            let id = state.withLock { state -> Int? in
                if !state.buffered.isEmpty {
                    continuation.resume(returning: state.buffered.removeFirst())
                    return nil
                }
                state.nextID += 1
                state.waiter = (state.nextID, continuation)
                return state.nextID
            }
            guard let id else { return }
            Task { [weak self] in
                try? await Task.sleep(for: timeout)
                self?.expire(id)
            }
        }
    }
}

/// A central that connects to a device nobody advertises, abandons the attempt, then connects to the lab device.
final class AbandoningCentral: NSObject, CBCentralManagerDelegate {
    var manager: CBCentralManager!
    let log: AsyncStream<String>.Continuation
    var lab: CBPeripheral?
    var ghost: CBPeripheral?

    init(queue: DispatchQueue, log: AsyncStream<String>.Continuation) {
        self.log = log
        super.init()
        manager = CBCentralManager(delegate: self, queue: queue)
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        guard central.state == .poweredOn else { return }
        // An identifier of ours names an address: a device that never advertises.
        let ghost = central.retrievePeripherals(withIdentifiers: [UUID(uuidString: "53424C45-0000-8001-8000-C0FFEE000009")!])[0]
        self.ghost = ghost
        central.connect(ghost)
        log.yield("ghost \(ghost.state.rawValue)")
        central.cancelPeripheralConnection(ghost)
        log.yield("ghost \(ghost.state.rawValue)")
        central.scanForPeripherals(withServices: [CBUUID(string: "180D")])
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard lab == nil, peripheral.name == "SwiftBLELab" else { return }
        lab = peripheral
        central.stopScan()
        central.connect(peripheral)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        log.yield("connected \(peripheral.name ?? "?")")
        central.cancelPeripheralConnection(peripheral)
    }

    func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: Error?) {
        log.yield("failed \(peripheral === ghost ? "ghost" : "lab")")
    }

    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: Error?) {
        log.yield("disconnected \(peripheral === ghost ? "ghost" : "lab") \(error == nil)")
    }
}

@Suite struct PendingConnectionTests {
    /// Cancelling a pending connection is reported by no callback and frees the controller at once: the next
    /// connection does not wait for the abandoned attempt's 30-second timeout.
    @Test func cancellingAPendingConnectionFreesTheControllerAtOnce() async throws {
        let (stream, log) = AsyncStream.makeStream(of: String.self)
        let lines = LineQueue(stream)
        let started = ContinuousClock.now
        let central = AbandoningCentral(queue: DispatchQueue(label: "abandoning central"), log: log)
        #expect(await lines.next() == "ghost 1")
        #expect(await lines.next() == "ghost 0")
        // Without the cancellation the lab's connection would wait for the abandoned attempt's 30-second timeout;
        // under a loaded test run (the whole suite in parallel on 2 cores) a connection can take several seconds.
        #expect(await lines.next(timeout: .seconds(25)) == "connected SwiftBLELab")
        #expect(await lines.next() == "disconnected lab true")
        #expect(ContinuousClock.now - started < .seconds(25))
        #expect(await lines.next(timeout: .milliseconds(300)) == nil)
        withExtendedLifetime(central) {}
    }
}
