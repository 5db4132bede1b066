import ArgumentParser
import BLEProtocols
import BLEVirtualController
import BLEWire

/// `ble hci-demo`: the layer under the host stack, narrated: two virtual controllers driven through raw HCI.
struct HCIDemo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hci-demo",
        abstract: "Show the HCI underneath: two virtual controllers driven by raw HCI commands, events and ACL data.",
        discussion: """
            Two virtual controllers on a simulated air, driven through raw HCI: a peripheral advertises, a central \
            scans (RSSI from the distance between them), connects, exchanges L2CAP data both ways with flow \
            control, updates the connection, and disconnects.
            """)

    @Option(help: "Distance between the central and the peripheral, in metres.")
    var distance: Double = 3

    func run() async throws {
        let air = VirtualAir(clock: .manual, seed: 2026)
        let peripheralController = air.addController(.init(txPower: 4), buffered: true)
        let centralController = air.addController(.init(position: Position(x: distance)), buffered: true)
        let peripheral = RawHost(name: "peripheral", controller: peripheralController)
        let central = RawHost(name: "central   ", controller: centralController)

        print("swift-ble demo: two virtual controllers \(distance) m apart on a simulated air (path-loss RSSI)\n")
        for host in [peripheral, central] {
            try host.command(HCIReset())
            try host.command(HCISetEventMask(mask: 0x3FFF_FFFF_FFFF_FFFF))
            try host.command(HCILESetEventMask(mask: 0xFF))
            let address = try host.call(HCIReadBDADDR()).address
            let buffers = try host.call(HCILEReadBufferSize())
            host.say("controller up: BD_ADDR \(address), LE ACL buffers \(buffers.totalNumLEACLDataPackets) x \(buffers.leACLDataPacketLength) bytes")
        }

        var ad = AdvertisingData(flags: .leOnlyGeneralDiscoverable, serviceUUIDs: [0x180D, 0x180F])
        ad.appendLocalName("swift-ble Heart Rate")
        let response = AdvertisingData(manufacturerData: ManufacturerData(companyID: .testing, data: Array("demo".utf8)))
        try peripheral.command(HCILESetAdvertisingParameters(intervalMin: 0x00A0, intervalMax: 0x00A0))
        try peripheral.command(HCILESetAdvertisingData(data: try ad.encodedLegacy()))
        try peripheral.command(HCILESetScanResponseData(data: try response.encodedLegacy()))
        try peripheral.command(HCILESetAdvertisingEnable(isEnabled: true))
        peripheral.say("advertising every 100 ms: \(ad.encoded.count) bytes of AD + \(response.encoded.count) bytes of scan response")

        try central.command(HCILESetScanParameters(scanType: .active, interval: 0x0010, window: 0x0010))
        try central.command(HCILESetScanEnable(isEnabled: true, filterDuplicates: true))
        air.advance(by: .milliseconds(300))
        var advertisement = AdvertisingData()
        var seen: BluetoothAddress?
        for case .le(.advertisingReport(let event)) in try central.events() {
            for report in event.reports {
                let data = try AdvertisingData(bytes: report.data)
                advertisement = advertisement.merged(withScanResponse: data)
                seen = report.address
                central.say("report \(report.eventType == .scanResponse ? "SCAN_RSP" : "ADV_IND ") from \(report.address), RSSI \(report.rssi) dBm, \(report.data.count) bytes")
            }
        }
        guard let target = seen else { throw ValidationError("the central saw nothing") }
        central.say("device: name \"\(advertisement.localName?.escapingControlCharacters ?? "?")\", services \(try advertisement.serviceUUIDs().map(\.description)), manufacturer data \(try advertisement.manufacturerData().map { "\($0.companyID): \($0.data.hexString())" })")
        try central.command(HCILESetScanEnable(isEnabled: false))

        try central.command(HCILECreateConnection(peerAddressType: .public, peerAddress: target))
        air.advance(by: .milliseconds(200))
        let centralLink = try central.connection()
        let peripheralLink = try peripheral.connection()
        central.say("connected to \(centralLink.peerAddress) as central, handle 0x\(String(centralLink.handle.rawValue, radix: 16)), interval \(Double(centralLink.connectionInterval) * 1.25) ms")
        peripheral.say("connected to \(peripheralLink.peerAddress) as peripheral, handle 0x\(String(peripheralLink.handle.rawValue, radix: 16))")

        // An ATT Exchange MTU Request in an L2CAP frame, fragmented to 27-byte ACL packets under flow control.
        let request = L2CAPBasicFrame(channelID: .att, payload: ATTPDU.exchangeMTURequest(.init(mtu: 247)).encoded)
        try central.sendL2CAP(request, handle: centralLink.handle)
        let received = try peripheral.receiveL2CAP()
        peripheral.say("received on \(received.channelID): \(try ATTPDU(bytes: received.payload))")
        let long = L2CAPBasicFrame(channelID: .att, payload: ATTPDU.handleValueNotification(.init(handle: 0x0014, value: Array(repeating: 0x42, count: 244))).encoded)
        try peripheral.sendL2CAP(long, handle: peripheralLink.handle)
        let back = try central.receiveL2CAP()
        central.say("received a \(back.payload.count)-byte ATT notification reassembled from \(central.lastFragmentCount) ACL fragments")

        try central.command(HCILEConnectionUpdate(handle: centralLink.handle, intervalMin: 6, intervalMax: 6, maxLatency: 0, supervisionTimeout: 100))
        air.advance(by: .milliseconds(500))
        for host in [central, peripheral] {
            for case .le(.connectionUpdateComplete(let e)) in try host.events() {
                host.say("connection updated: interval \(Double(e.connectionInterval) * 1.25) ms, supervision timeout \(Int(e.supervisionTimeout) * 10) ms")
            }
        }
        let rssi = try central.call(HCIReadRSSI(handle: centralLink.handle)).rssi
        central.say("link RSSI \(rssi) dBm")

        try central.command(HCIDisconnect(handle: centralLink.handle))
        for (host, events) in [(central, try central.events()), (peripheral, try peripheral.events())] as [(RawHost, [HCIEvent])] {
            for case .disconnectionComplete(let e) in events { host.say("disconnected: \(e.reason)") }
        }
        print("\ndone: every step above crossed the virtual controllers as HCI packets.")
    }
}

/// A minimal raw-HCI host for the demo (no host stack: it shows the HCI underneath): sends commands, checks their status, narrates.
final class RawHost {
    let name: String
    let controller: VirtualController
    var pending: [HCIPacket] = []
    var lastFragmentCount = 0

    init(name: String, controller: VirtualController) {
        self.name = name
        self.controller = controller
    }

    func say(_ text: String) { print("[\(name)] \(text)") }

    func collect() { pending += controller.drainToHost() }

    func events() throws -> [HCIEvent] {
        collect()
        var out: [HCIEvent] = []
        var rest: [HCIPacket] = []
        for packet in pending {
            if case .event(let e) = packet { out.append(try HCIEvent(packet: e)) } else { rest.append(packet) }
        }
        pending = rest
        return out
    }

    @discardableResult
    func command<C: HCICommand>(_ command: C) throws -> HCIEvent {
        controller.receive(fromHost: .command(command.packet))
        collect()
        guard let index = pending.firstIndex(where: {
            guard case .event(let e) = $0, let event = try? HCIEvent(packet: e) else { return false }
            switch event {
            case .commandComplete(let c): return c.opcode == C.opcode
            case .commandStatus(let s): return s.opcode == C.opcode
            default: return false
            }
        }), case .event(let packet) = pending.remove(at: index) else {
            throw ValidationError("\(C.self): no answer")
        }
        let event = try HCIEvent(packet: packet)
        switch event {
        case .commandComplete(let c) where c.status != .success: throw ValidationError("\(C.self) failed: \(c.status ?? .unspecifiedError)")
        case .commandStatus(let s) where s.status != .success: throw ValidationError("\(C.self) failed: \(s.status)")
        default: return event
        }
    }

    func call<C: HCICommand>(_ command: C) throws -> C.ReturnParameters {
        guard case .commandComplete(let c) = try self.command(command) else { throw ValidationError("\(C.self): no Command Complete") }
        return try c.decode(C.self)
    }

    func connection() throws -> HCILEConnectionCompleteEvent {
        for case .le(.connectionComplete(let e)) in try events() where e.status == .success { return e }
        throw ValidationError("\(name): no connection")
    }

    /// Sends a frame through ``ACLFlow``: fragments of the controller's buffer size, never more outstanding than it
    /// has buffers; Number Of Completed Packets releases the rest.
    func sendL2CAP(_ frame: L2CAPBasicFrame, handle: ConnectionHandle) throws {
        let buffers = try call(HCILEReadBufferSize())
        var flow = ACLFlow(bufferSize: Int(buffers.leACLDataPacketLength), bufferCount: Int(buffers.totalNumLEACLDataPackets))
        let total = flow.fragmentCount(forPDULength: frame.encoded.count)
        var ready = flow.enqueue(handle: handle, pdu: frame.encoded)
        var completed = 0
        while !ready.isEmpty {
            for packet in ready { controller.receive(fromHost: .acl(packet)) }
            ready = []
            for event in try events() {
                if case .numberOfCompletedPackets(let n) = event {
                    completed += n.entries.reduce(0) { $0 + Int($1.completedPackets) }
                    ready += flow.receive(event)
                }
            }
            if ready.isEmpty, flow.queuedCount(handle: handle) > 0 { throw ValidationError("\(name): the controller returned no buffers") }
        }
        say("sent a \(frame.encoded.count)-byte L2CAP frame as \(total) ACL packet(s) under flow control; \(completed) completed")
    }

    func receiveL2CAP() throws -> L2CAPBasicFrame {
        collect()
        var reassembler = L2CAPReassembler()
        lastFragmentCount = 0
        for case .acl(let packet) in pending {
            lastFragmentCount += 1
            if let frame = try reassembler.append(isStart: packet.boundary.isStart, data: packet.data) {
                pending.removeAll { if case .acl = $0 { true } else { false } }
                return frame
            }
        }
        throw ValidationError("\(name): no complete L2CAP frame")
    }
}
