@testable import CoreBluetoothCompat
import Foundation
import Testing

/// A central of iOS 17: it connects to the lab device with `CBConnectPeripheralOptionEnableAutoReconnect`, registers
/// for connection events of that peripheral, implements the disconnection callback with a timestamp, has the device
/// drop the link (its control point) and lets the manager reconnect by itself, then cancels.
final class AutoReconnectingCentral: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate {
    let customServiceUUID = CBUUID(string: "12345678-1234-5678-1234-56789ABCDEF0")
    let controlUUID = CBUUID(string: "12345678-1234-5678-1234-56789ABCDEF7")

    var centralManager: CBCentralManager!
    var device: CBPeripheral?
    var connections = 0
    var events: [String] = []
    var finalDisconnection = false
    let log: AsyncStream<String>.Continuation

    init(queue: DispatchQueue, log: AsyncStream<String>.Continuation) {
        self.log = log
        super.init()
        centralManager = CBCentralManager(delegate: self, queue: queue)
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        guard central.state == .poweredOn else { return }
        log.yield("supports \(CBCentralManager.supports(.extendedScanAndConnect))")
        central.scanForPeripherals(withServices: nil)
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                        advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard device == nil, peripheral.name == "SwiftBLELab" else { return }
        central.stopScan()
        device = peripheral
        central.registerForConnectionEvents(options: [.peripheralUUIDs: [peripheral.identifier]])
        central.connect(peripheral, options: [CBConnectPeripheralOptionEnableAutoReconnect: true])
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        connections += 1
        log.yield("connected \(connections) state \(peripheral.state.rawValue)")
        if connections == 1 {
            peripheral.delegate = self
            peripheral.discoverServices([customServiceUUID])
        } else {
            central.cancelPeripheralConnection(peripheral)
        }
    }

    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral,
                        timestamp: CFAbsoluteTime, isReconnecting: Bool, error: Error?) {
        let code = (error as? CBError)?.code.rawValue
        let recent = abs(Date().timeIntervalSinceReferenceDate - timestamp) < 5
        log.yield("disconnected \(code.map(String.init) ?? "nil") reconnecting \(isReconnecting) state \(peripheral.state.rawValue) recent \(recent)")
        if !isReconnecting {
            finalDisconnection = true
            finishWhenDone()
        }
    }

    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: Error?) {
        log.yield("the callback without a timestamp was called")
    }

    func centralManager(_ central: CBCentralManager, connectionEventDidOccur event: CBConnectionEvent, for peripheral: CBPeripheral) {
        events.append("\(event == .peerConnected ? "up" : "down") same \(peripheral === device)")
        finishWhenDone()
    }

    func finishWhenDone() {
        if finalDisconnection, events.count == 4 {
            log.yield("events \(events)")
            log.finish()
        }
    }

    func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: Error?) {
        log.yield("failed \(String(describing: error))")
        log.finish()
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: Error?) {
        guard let service = peripheral.services?.first(where: { $0.uuid == customServiceUUID }) else { return }
        peripheral.discoverCharacteristics([controlUUID], for: service)
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: Error?) {
        guard let control = service.characteristics?.first(where: { $0.uuid == controlUUID }) else { return }
        peripheral.writeValue(Data("disconnect".utf8), for: control, type: .withResponse)
    }
}

/// In the serialized central suite: the central uses the shared lab device.
extension TutorialCentralTests {
    @Test("With EnableAutoReconnect a lost link is reported with isReconnecting and a timestamp, and the manager reconnects by itself; registered connection events follow the link")
    func autoReconnect() async throws {
        let queue = DispatchQueue(label: "auto-reconnecting central")
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        let central = queue.sync { AutoReconnectingCentral(queue: queue, log: continuation) }
        let timeout = Task {
            try await Task.sleep(for: .seconds(30))
            continuation.yield("timed out")
            continuation.finish()
        }
        var lines: [String] = []
        for await line in stream { lines.append(line) }
        timeout.cancel()
        let extended = await central.centralManager.central.value.adapter.capabilities.supportsExtendedAdvertising
        #expect(lines == [
            "supports \(extended)",
            "connected 1 state 2",
            "disconnected 7 reconnecting true state 1 recent true",
            "connected 2 state 2",
            "disconnected nil reconnecting false state 0 recent true",
            "events [\"up same true\", \"down same true\", \"up same true\", \"down same true\"]",
        ])
        withExtendedLifetime(central) {}
    }

    @Test("Connection events are delivered only for the registered peripherals and services")
    func connectionEventsMatchTheirOptions() async throws {
        final class Delegate: NSObject, CBCentralManagerDelegate {
            let log: AsyncStream<String>.Continuation
            var round = 0
            var finished = (disconnected: false, event: false)
            init(log: AsyncStream<String>.Continuation) { self.log = log }
            func centralManagerDidUpdateState(_ central: CBCentralManager) {
                guard central.state == .poweredOn else { return }
                // Another peripheral's identifier, and a service nobody has: the lab device's link matches neither.
                central.registerForConnectionEvents(options: [.peripheralUUIDs: [UUID()], .serviceUUIDs: [CBUUID(string: "FFF9")]])
                central.scanForPeripherals(withServices: nil)
            }
            func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                                advertisementData: [String: Any], rssi RSSI: NSNumber) {
                guard peripheral.name == "SwiftBLELab", peripheral.state == .disconnected else { return }
                central.stopScan()
                central.connect(peripheral)
            }
            func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
                log.yield("connected")
                central.cancelPeripheralConnection(peripheral)
            }
            func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: Error?) {
                log.yield("disconnected")
                round += 1
                if round == 1 {
                    // Once the first link's events have had time to arrive (unmatched), a registration without
                    // options matches every link: the next one is reported.
                    DispatchQueue.global().asyncAfter(deadline: .now() + 0.5) {
                        central.registerForConnectionEvents(options: nil)
                        central.connect(peripheral)
                    }
                } else {
                    finished.disconnected = true
                    if finished.event { log.finish() }
                }
            }
            func centralManager(_ central: CBCentralManager, connectionEventDidOccur event: CBConnectionEvent, for peripheral: CBPeripheral) {
                log.yield("event \(event == .peerConnected ? "up" : "down") \(peripheral.name ?? "")")
                if event == .peerDisconnected {
                    finished.event = true
                    if finished.disconnected { log.finish() }
                }
            }
        }
        let queue = DispatchQueue(label: "connection events central")
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        let delegate = Delegate(log: continuation)
        let manager = queue.sync { CBCentralManager(delegate: delegate, queue: queue) }
        let timeout = Task {
            try await Task.sleep(for: .seconds(30))
            continuation.yield("timed out")
            continuation.finish()
        }
        var lines: [String] = []
        for await line in stream { lines.append(line) }
        timeout.cancel()
        #expect(lines.filter { !$0.hasPrefix("event") } == ["connected", "disconnected", "connected", "disconnected"])
        #expect(lines.filter { $0.hasPrefix("event") } == ["event up SwiftBLELab", "event down SwiftBLELab"])
        #expect(lines.firstIndex { $0.hasPrefix("event") }.map { $0 > 1 } == true)
        withExtendedLifetime((delegate, manager)) {}
    }

    @Test("A connection event matches by a service discovered on the peripheral")
    func connectionEventsMatchDiscoveredServices() async throws {
        final class Delegate: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate {
            let customServiceUUID = CBUUID(string: "12345678-1234-5678-1234-56789ABCDEF0")
            let log: AsyncStream<String>.Continuation
            var device: CBPeripheral?
            var finished = (disconnected: false, event: false)
            init(log: AsyncStream<String>.Continuation) { self.log = log }
            func centralManagerDidUpdateState(_ central: CBCentralManager) {
                guard central.state == .poweredOn else { return }
                central.registerForConnectionEvents(options: [.serviceUUIDs: [customServiceUUID]])
                central.scanForPeripherals(withServices: nil)
            }
            func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                                advertisementData: [String: Any], rssi RSSI: NSNumber) {
                guard device == nil, peripheral.name == "SwiftBLELab" else { return }
                device = peripheral
                central.stopScan()
                central.connect(peripheral)
            }
            func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
                peripheral.delegate = self
                peripheral.discoverServices([customServiceUUID])
            }
            func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: Error?) {
                log.yield("services \(peripheral.services?.count ?? 0)")
                // The link's end is matched by the service now known.
                manager?.cancelPeripheralConnection(peripheral)
            }
            weak var manager: CBCentralManager?
            func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: Error?) {
                log.yield("disconnected")
                finished.disconnected = true
                if finished.event { log.finish() }
            }
            func centralManager(_ central: CBCentralManager, connectionEventDidOccur event: CBConnectionEvent, for peripheral: CBPeripheral) {
                guard event == .peerDisconnected else { return }
                log.yield("event down")
                finished.event = true
                if finished.disconnected { log.finish() }
            }
        }
        let queue = DispatchQueue(label: "connection events by service")
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        let delegate = Delegate(log: continuation)
        let manager = queue.sync {
            let manager = CBCentralManager(delegate: delegate, queue: queue)
            delegate.manager = manager
            return manager
        }
        let timeout = Task {
            try await Task.sleep(for: .seconds(30))
            continuation.yield("timed out")
            continuation.finish()
        }
        var lines: [String] = []
        for await line in stream { lines.append(line) }
        timeout.cancel()
        #expect(lines.first == "services 1")
        #expect(Set(lines.dropFirst()) == ["disconnected", "event down"])
        #expect(lines.count == 3)
        withExtendedLifetime((delegate, manager)) {}
    }
}
