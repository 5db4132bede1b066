import BLEVirtualController
import BLEWire
import Testing

/// Raw-HCI test bench: controllers on a manual-clock air, commands in, decoded events out.
struct Bench {
    let air: VirtualAir

    init(seed: UInt64 = 7, radio: RadioModel = RadioModel(), airTime: AirTimeModel? = nil) {
        air = VirtualAir(clock: .manual, seed: seed, radio: radio, airTime: airTime)
    }

    /// Adds a buffered controller and enables every event (page 1 incl. LE Meta; all LE subevents but LE Enhanced
    /// Connection Complete, which would take the place of LE Connection Complete: `ConnectionTests` covers it).
    func controller(at x: Double = 0, txPower: Int8 = 0, aclSize: Int = 27, aclCount: Int = 8,
                    profile: ControllerProfile = .full) throws -> VirtualController {
        let c = air.addController(.init(position: Position(x: x), txPower: txPower, aclBufferSize: aclSize,
                                        aclBufferCount: aclCount, profile: profile), buffered: true)
        try expectSuccess(c, HCIReset())
        try expectSuccess(c, HCISetEventMask(mask: 0x3FFF_FFFF_FFFF_FFFF))
        try expectSuccess(c, HCILESetEventMask(mask: 0xFFFF_FFFF & ~(1 << 9)))
        return c
    }

    /// Decoded events (and ACL packets) sent to the host since the last call.
    func drain(_ c: VirtualController) throws -> [HCIEvent] {
        try c.drainToHost().compactMap { packet in
            if case .event(let e) = packet { return try HCIEvent(packet: e) }
            return nil
        }
    }

    func drainACL(_ c: VirtualController) -> [HCIACLPacket] {
        c.drainToHost().compactMap { if case .acl(let a) = $0 { a } else { nil } }
    }

    /// Sends a command and returns every event it produced right away.
    func send<C: HCICommand>(_ c: VirtualController, _ command: C) throws -> [HCIEvent] {
        c.receive(fromHost: .command(command.packet))
        return try drain(c)
    }

    /// Sends a raw command packet and returns every event it produced right away.
    func send(_ c: VirtualController, _ packet: HCICommandPacket) throws -> [HCIEvent] {
        c.receive(fromHost: .command(packet))
        return try drain(c)
    }

    /// Sends a Command Complete-style command and returns its decoded return parameters.
    func call<C: HCICommand>(_ c: VirtualController, _ command: C) throws -> C.ReturnParameters {
        let events = try send(c, command)
        for case .commandComplete(let e) in events where e.opcode == C.opcode { return try e.decode(C.self) }
        throw WireError(.invalidValue, "no Command Complete for \(C.opcode) in \(events)")
    }

    /// Sends a command and checks its status is success (in whichever completion event it uses).
    @discardableResult
    func expectSuccess<C: HCICommand>(_ c: VirtualController, _ command: C,
                                      sourceLocation: SourceLocation = #_sourceLocation) throws -> [HCIEvent] {
        let events = try send(c, command)
        #expect(status(of: C.opcode, in: events) == .success, "\(C.self)", sourceLocation: sourceLocation)
        return events
    }

    func status(of opcode: HCIOpcode, in events: [HCIEvent]) -> HCIStatus? {
        for event in events {
            switch event {
            case .commandComplete(let e) where e.opcode == opcode: return e.status
            case .commandStatus(let e) where e.opcode == opcode: return e.status
            default: continue
            }
        }
        return nil
    }

    func advance(_ d: Duration) { air.advance(by: d) }

    /// Starts connectable advertising with `data` on `c`.
    func advertise(_ c: VirtualController, type: HCILEAdvertisingType = .connectableUndirected, data: [UInt8] = [2, 1, 6],
                   scanResponse: [UInt8] = [], intervalUnits: UInt16 = 0x00A0, ownAddressType: LEAddressType = .public,
                   peerType: LEAddressType = .public, peer: BluetoothAddress = .zero) throws {
        try expectSuccess(c, HCILESetAdvertisingParameters(intervalMin: intervalUnits, intervalMax: intervalUnits,
                                                           advertisingType: type, ownAddressType: ownAddressType,
                                                           peerAddressType: peerType, peerAddress: peer))
        try expectSuccess(c, HCILESetAdvertisingData(data: data))
        try expectSuccess(c, HCILESetScanResponseData(data: scanResponse))
        try expectSuccess(c, HCILESetAdvertisingEnable(isEnabled: true))
    }

    func scan(_ c: VirtualController, active: Bool, filterDuplicates: Bool = false) throws {
        try expectSuccess(c, HCILESetScanParameters(scanType: active ? .active : .passive, interval: 0x10, window: 0x10))
        try expectSuccess(c, HCILESetScanEnable(isEnabled: true, filterDuplicates: filterDuplicates))
    }

    func reports(_ events: [HCIEvent]) -> [HCILEAdvertisingReportEvent.Report] {
        events.flatMap { event -> [HCILEAdvertisingReportEvent.Report] in
            if case .le(.advertisingReport(let r)) = event { r.reports } else { [] }
        }
    }

    /// Connects `central` to advertising `peripheral`; returns (central handle, peripheral handle).
    func connect(_ central: VirtualController, _ peripheral: VirtualController,
                 timeoutUnits: UInt16 = 0x0064) throws -> (ConnectionHandle, ConnectionHandle) {
        try advertise(peripheral)
        try expectSuccess(central, HCILECreateConnection(peerAddressType: .public, peerAddress: peripheral.address,
                                                         supervisionTimeout: timeoutUnits))
        advance(.milliseconds(200))
        let ce = try drain(central).compactMap { if case .le(.connectionComplete(let e)) = $0 { e } else { nil } }
        let pe = try drain(peripheral).compactMap { if case .le(.connectionComplete(let e)) = $0 { e } else { nil } }
        guard let c = ce.first, let p = pe.first, c.status == .success, p.status == .success else {
            throw WireError(.invalidValue, "connection did not complete: \(ce) \(pe)")
        }
        return (c.handle, p.handle)
    }

    func connectionCompletes(_ events: [HCIEvent]) -> [HCILEConnectionCompleteEvent] {
        events.compactMap { if case .le(.connectionComplete(let e)) = $0 { e } else { nil } }
    }

    func disconnections(_ events: [HCIEvent]) -> [HCIDisconnectionCompleteEvent] {
        events.compactMap { if case .disconnectionComplete(let e) = $0 { e } else { nil } }
    }

    func completedPackets(_ events: [HCIEvent]) -> Int {
        events.reduce(0) { sum, event in
            if case .numberOfCompletedPackets(let e) = event { sum + e.entries.reduce(0) { $0 + Int($1.completedPackets) } } else { sum }
        }
    }
}
