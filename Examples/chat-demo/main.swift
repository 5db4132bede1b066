// chat-demo: two peers chatting over BLE, each both a peripheral (it publishes an inbox characteristic the other
// writes lines to) and a central (it connects to the other's inbox). By default both peers run in this process and
// hold a short conversation; with --name and --peer, one peer runs and sends the lines typed on standard input
// (run the other peer in a second terminal on a linked controller: see docs/corebluetooth.md).
//
//     swift run chat-demo
//     swift run chat-demo --name Alice --peer Bob      (SWIFT_BLE_HCI=tcp:… for a shared air)
import CoreBluetooth
import Foundation

/// Prints a line at once, even when standard output is a pipe (as when a test runs the demo). A plain write: stdio's
/// `fflush(nil)` would wait for the lock of standard input, which a thread blocked in `readLine()` holds.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let chatServiceUUID = CBUUID(string: "C4A70000-0000-4000-8000-00000000C4A7")
let inboxUUID = CBUUID(string: "C4A70001-0000-4000-8000-00000000C4A7")

final class ChatPeer: NSObject, CBPeripheralManagerDelegate, CBCentralManagerDelegate, CBPeripheralDelegate {
    let name: String
    let peerName: String
    var peripheralManager: CBPeripheralManager!
    var centralManager: CBCentralManager!
    var peer: CBPeripheral?
    var peerInbox: CBCharacteristic?
    var outgoing: [String] = []
    var sending = false
    /// Called with each line received.
    var received: (String) -> Void = { _ in }
    /// Called once the peer's inbox can be written.
    var ready: () -> Void = {}

    init(name: String, peer: String) {
        self.name = name
        peerName = peer
        super.init()
        peripheralManager = CBPeripheralManager(delegate: self, queue: nil)
        centralManager = CBCentralManager(delegate: self, queue: nil)
    }

    /// Queues a line for the peer; lines go one at a time, each written with response.
    func send(_ line: String) {
        outgoing.append(line)
        sendNext()
    }

    private func sendNext() {
        guard !sending, let peer, let peerInbox, !outgoing.isEmpty else { return }
        sending = true
        peer.writeValue(Data(outgoing.removeFirst().utf8), for: peerInbox, type: .withResponse)
    }

    // MARK: Peripheral side: the inbox

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        guard peripheral.state == .poweredOn else { return }
        let inbox = CBMutableCharacteristic(type: inboxUUID, properties: [.write], value: nil, permissions: [.writeable])
        let service = CBMutableService(type: chatServiceUUID, primary: true)
        service.characteristics = [inbox]
        peripheral.add(service)
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didAdd service: CBService, error: Error?) {
        peripheral.startAdvertising([CBAdvertisementDataLocalNameKey: name, CBAdvertisementDataServiceUUIDsKey: [chatServiceUUID]])
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveWrite requests: [CBATTRequest]) {
        let text = requests.reduce(into: Data()) { $0.append($1.value ?? Data()) }
        peripheral.respond(to: requests[0], withResult: .success)
        received(String(decoding: text, as: UTF8.self))
    }

    // MARK: Central side: the peer's inbox

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        guard central.state == .poweredOn else { return }
        central.scanForPeripherals(withServices: [chatServiceUUID], options: nil)
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                        advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard peer == nil, advertisementData[CBAdvertisementDataLocalNameKey] as? String == peerName else { return }
        peer = peripheral
        central.stopScan()
        central.connect(peripheral, options: nil)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        peripheral.delegate = self
        peripheral.discoverServices([chatServiceUUID])
    }

    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: Error?) {
        peerInbox = nil
        say("[\(name)] \(peerName) left; reconnecting")
        central.connect(peripheral, options: nil)
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: Error?) {
        guard let service = peripheral.services?.first else { return }
        peripheral.discoverCharacteristics([inboxUUID], for: service)
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: Error?) {
        guard let inbox = service.characteristics?.first else { return }
        peerInbox = inbox
        ready()
        sendNext()
    }

    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: Error?) {
        sending = false
        if let error { say("[\(name)] not delivered: \(error)") }
        sendNext()
    }
}

func option(_ name: String) -> String? {
    let arguments = CommandLine.arguments
    return arguments.firstIndex(of: name).flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil }
}

/// The peers of this run, kept alive for the process's lifetime.
var peers: [ChatPeer] = []
if let name = option("--name"), let peerName = option("--peer") {
    // One peer: lines typed are sent, lines received printed.
    let peer = ChatPeer(name: name, peer: peerName)
    peer.received = { say("\(peerName)> \($0)") }
    peer.ready = { say("[\(name)] connected to \(peerName); type a line and press return") }
    peers = [peer]
    Thread.detachNewThread {
        while let line = readLine() {
            // The delegates run on the main queue: the line is handed to the peer there.
            DispatchQueue.main.async { MainActor.assumeIsolated { peers.first?.send(line) } }
        }
        DispatchQueue.main.async { exit(0) }
    }
} else {
    // Two peers in this process hold a scripted conversation: each line received is answered with the next one.
    let suffix = ProcessInfo.processInfo.processIdentifier
    let alice = ChatPeer(name: "Alice \(suffix)", peer: "Bob \(suffix)")
    let bob = ChatPeer(name: "Bob \(suffix)", peer: "Alice \(suffix)")
    let script = ["hi Bob", "hi Alice! all over BLE?", "yes: I write to your inbox, you write to mine", "then goodbye", "goodbye"]
    var next = 1
    func reply(from peer: ChatPeer) {
        guard next < script.count else {
            say("conversation over")
            exit(0)
        }
        peer.send(script[next])
        next += 1
    }
    alice.received = { line in
        say("Bob> \(line)")
        reply(from: alice)
    }
    bob.received = { line in
        say("Alice> \(line)")
        reply(from: bob)
    }
    // Alice opens once both directions are connected.
    var connected = 0
    let opened = {
        connected += 1
        if connected == 2 { alice.send(script[0]) }
    }
    alice.ready = opened
    bob.ready = opened
    peers = [alice, bob]
}
DispatchQueue.main.asyncAfter(deadline: .now() + 60) {
    say("timed out")
    exit(1)
}
dispatchMain()
