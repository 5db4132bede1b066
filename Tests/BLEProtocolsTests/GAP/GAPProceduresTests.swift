import BLEProtocols
import BLEWire
import Testing

/// Drives a ``GAPProcedures`` machine as a host would, with a manual clock: commands go out one at a time and are
/// answered by the test; private addresses come from a list.
private struct GAPHarness {
    typealias Command = GAPProcedures.Command
    var gap: GAPProcedures
    var now: Duration = .zero
    /// Every command sent, in order.
    var sent: [Command] = []
    /// Commands sent and not answered yet, oldest first.
    var outstanding: [Command] = []
    var timers: [GAPProcedures.Timer: Duration] = [:]
    var finished: [GAPProcedures.ProcedureID: GAPProcedures.Failure?] = [:]
    var connected: [GAPProcedures.ProcedureID: ConnectionHandle] = [:]
    var scansEnded: [Int] = []
    var addresses: [LEAddress]
    /// The random static addresses ``GAPProcedures/Action/makeStaticAddress`` gets (as the host makes them from LE
    /// Rand), in order; `nil` once used up.
    var statics: [LEAddress] = []
    /// How many random static addresses the machine asked for.
    var staticRequests = 0

    static let identity = LEAddress(BluetoothAddress(0xC0FF_EE00_0001), type: .public)
    static let peer = LEAddress(BluetoothAddress(0x0A0B_0C0D_0E0F), type: .random)

    init(privacy: Bool = false, interval: Duration = .seconds(60), addresses: [LEAddress] = []) {
        gap = GAPProcedures(configuration: .init(privacy: privacy, privateAddressInterval: interval))
        gap.identityAddress = Self.identity
        self.addresses = addresses
    }

    mutating func run(_ actions: [GAPProcedures.Action]) {
        for action in actions {
            switch action {
            case .send(let command):
                sent.append(command)
                outstanding.append(command)
            case .makePrivateAddress:
                let address = addresses.isEmpty ? nil : addresses.removeFirst()
                run(gap.privateAddressMade(address, now: now))
            case .makeStaticAddress:
                staticRequests += 1
                let address = statics.isEmpty ? nil : statics.removeFirst()
                run(gap.staticAddressMade(address, now: now))
            case .startTimer(let timer, let duration):
                timers[timer] = now + duration
            case .cancelTimer(let timer):
                timers[timer] = nil
            case .finished(let id, let failure):
                finished[id] = failure
            case .connected(let id, let handle):
                connected[id] = handle
            case .scanEnded(let generation):
                scansEnded.append(generation)
            }
        }
    }

    /// Answers the oldest outstanding command.
    mutating func answer(_ outcome: HCICommandFlow.Outcome = .complete(returnParameters: [0])) {
        let command = outstanding.removeFirst()
        run(gap.commandFinished(outcome, for: command, now: now))
    }

    /// Answers every command, those sent meanwhile too, with success (Command Status for LE Create Connection).
    mutating func answerAll() {
        while let command = outstanding.first {
            if case .createConnection = command { answer(.pending) } else { answer() }
        }
    }

    /// Lets time pass and fires the timers that are due.
    mutating func advance(to time: Duration) {
        now = time
        for (timer, deadline) in timers.sorted(by: { $0.value < $1.value }) where deadline <= time {
            timers[timer] = nil
            run(gap.timerFired(timer, now: now))
        }
    }

    /// Drops what was sent so far from ``sent`` (to look at what comes next).
    mutating func clearSent() { sent = [] }
}

private typealias Command = GAPProcedures.Command

@Suite struct GAPProceduresTests {
    let connectParameters = GAPProcedures.ConnectionParameters(peer: GAPHarness.peer, timeout: .seconds(5))

    // MARK: Connecting

    @Test func aConnectionAttemptSucceedsWithItsCompletion() {
        var h = GAPHarness()
        let (id, actions) = h.gap.connect(connectParameters, now: h.now)
        h.run(actions)
        #expect(h.sent == [.createConnection(HCILECreateConnection(peerAddressType: .random, peerAddress: GAPHarness.peer.address,
                                                                    ownAddressType: .public))])
        #expect(h.gap.initiatingPeer == GAPHarness.peer)
        h.answer(.pending)
        #expect(h.timers[.connectionAttempt] == .seconds(5))
        #expect(h.finished[id] == nil, "the caller waits for LE Connection Complete")
        let (local, done) = h.gap.connectionComplete(status: .success, handle: 0x0040, role: .central, now: h.now)
        h.run(done)
        #expect(h.connected[id] == 0x0040)
        #expect(local == GAPHarness.identity)
        #expect(h.timers[.connectionAttempt] == nil)
        #expect(h.gap.initiatingPeer == nil)
    }

    @Test func aSecondAttemptIsRefusedWhileOneIsUnderWay() {
        var h = GAPHarness()
        h.run(h.gap.connect(connectParameters, now: h.now).1)
        let (second, actions) = h.gap.connect(.init(peer: GAPHarness.identity), now: h.now)
        h.run(actions)
        #expect(h.finished[second] == .connectionInProgress)
        #expect(h.sent.count == 1)
    }

    @Test func aRefusedCreateConnectionEndsTheAttempt() {
        var h = GAPHarness()
        let (id, actions) = h.gap.connect(connectParameters, now: h.now)
        h.run(actions)
        h.answer(.failed(.commandDisallowed))
        guard case .command(.createConnection, .failed(.commandDisallowed))?? = h.finished[id] else {
            Issue.record("expected the command's refusal, got \(String(describing: h.finished[id]))")
            return
        }
        #expect(h.gap.initiatingPeer == nil)
        #expect(h.timers[.connectionAttempt] == nil)
    }

    @Test func anAttemptThatFailsReportsTheStatus() {
        var h = GAPHarness()
        let (id, actions) = h.gap.connect(connectParameters, now: h.now)
        h.run(actions)
        h.answer(.pending)
        h.run(h.gap.connectionComplete(status: .connectionFailedToBeEstablished, handle: 0, role: .central, now: h.now).actions)
        #expect(h.finished[id] == .connectionFailed(.connectionFailedToBeEstablished))
    }

    @Test func cancellingSendsCreateConnectionCancelAndEndsTheAttempt() {
        var h = GAPHarness()
        let (id, actions) = h.gap.connect(connectParameters, now: h.now)
        h.run(actions)
        h.answer(.pending)
        let (other, none) = h.gap.cancelConnection(to: GAPHarness.identity)
        #expect(!other && none.isEmpty, "an attempt to another device is left alone")
        let (found, cancel) = h.gap.cancelConnection(to: GAPHarness.peer)
        h.run(cancel)
        #expect(found)
        #expect(h.sent.last == .createConnectionCancel)
        h.answer()
        // The controller ends the attempt with LE Connection Complete, Unknown Connection Identifier.
        h.run(h.gap.connectionComplete(status: .unknownConnectionIdentifier, handle: 0, role: .central, now: h.now).actions)
        #expect(h.finished[id] == .cancelled)
        #expect(h.timers[.connectionAttempt] == nil)
    }

    @Test func cancellingBeforeTheControllerInitiatesCancelsOnceItDoes() {
        var h = GAPHarness()
        let (id, actions) = h.gap.connect(connectParameters, now: h.now)
        h.run(actions)
        h.run(h.gap.cancelConnection(to: GAPHarness.peer).1)
        #expect(h.sent.count == 1, "nothing to cancel before LE Create Connection is accepted")
        h.answer(.pending)
        #expect(h.sent.last == .createConnectionCancel)
        h.answer()
        h.run(h.gap.connectionComplete(status: .unknownConnectionIdentifier, handle: 0, role: .central, now: h.now).actions)
        #expect(h.finished[id] == .cancelled)
    }

    @Test func aLinkThatComesUpBeforeTheCancelIsKept() {
        var h = GAPHarness()
        let (id, actions) = h.gap.connect(connectParameters, now: h.now)
        h.run(actions)
        h.answer(.pending)
        h.run(h.gap.cancelConnection(to: GAPHarness.peer).1)
        // The link completes before the controller handles the cancel.
        h.run(h.gap.connectionComplete(status: .success, handle: 0x0041, role: .central, now: h.now).actions)
        h.answer(.failed(.commandDisallowed))
        #expect(h.connected[id] == 0x0041)
        #expect(h.finished[id] == nil)
    }

    @Test func anAttemptPastItsTimeoutIsCancelledAndTimesOut() {
        var h = GAPHarness()
        let (id, actions) = h.gap.connect(connectParameters, now: h.now)
        h.run(actions)
        h.answer(.pending)
        h.advance(to: .seconds(4))
        #expect(h.sent.count == 1)
        h.advance(to: .seconds(5))
        #expect(h.sent.last == .createConnectionCancel)
        h.answer()
        h.run(h.gap.connectionComplete(status: .unknownConnectionIdentifier, handle: 0, role: .central, now: h.now).actions)
        #expect(h.finished[id] == .connectionTimedOut)
        // The next attempt is free to start.
        let (next, more) = h.gap.connect(connectParameters, now: h.now)
        h.run(more)
        #expect(h.finished[next] == nil)
        #expect(h.gap.initiatingPeer == GAPHarness.peer)
    }

    @Test func anUnansweredCancelEndsTheAttempt() {
        var h = GAPHarness()
        let (id, actions) = h.gap.connect(connectParameters, now: h.now)
        h.run(actions)
        h.answer(.pending)
        h.advance(to: .seconds(5))
        h.answer(.timedOut)
        #expect(h.finished[id] == .command(.createConnectionCancel, .timedOut))
        #expect(h.gap.initiatingPeer == nil)
    }

    // MARK: Advertising

    @Test func advertisingSendsItsCommandsInOrder() {
        var h = GAPHarness()
        let parameters = GAPProcedures.AdvertisingParameters(data: [2, 1, 6], scanResponse: [3, 9, 0x41, 0x42])
        let (id, actions) = h.gap.startAdvertising(parameters, now: h.now)
        h.run(actions)
        h.answerAll()
        #expect(h.sent == [
            .setAdvertisingEnable(HCILESetAdvertisingEnable(isEnabled: false)),
            .setAdvertisingParameters(HCILESetAdvertisingParameters(intervalMin: 0x00A0, intervalMax: 0x00A0,
                                                                    advertisingType: .connectableUndirected, ownAddressType: .public)),
            .setAdvertisingData(HCILESetAdvertisingData(data: [2, 1, 6])),
            .setScanResponseData(HCILESetScanResponseData(data: [3, 9, 0x41, 0x42])),
            .setAdvertisingEnable(HCILESetAdvertisingEnable(isEnabled: true)),
        ])
        #expect(h.finished[id] == .some(nil))
        #expect(h.gap.isAdvertising)
        #expect(h.gap.advertisingAddress == GAPHarness.identity)
    }

    @Test func advertisingRestartsAfterAConnectionAndADisconnection() {
        var h = GAPHarness()
        h.run(h.gap.startAdvertising(.init(data: [2, 1, 6], restartAfterConnection: true), now: h.now).1)
        h.answerAll()
        h.clearSent()
        // A central connects: legacy advertising ended, and starts again.
        let (local, actions) = h.gap.connectionComplete(status: .success, handle: 0x0001, role: .peripheral, now: h.now)
        #expect(local == GAPHarness.identity)
        #expect(!h.gap.isAdvertising)
        h.run(actions)
        h.answerAll()
        #expect(h.sent.last == .setAdvertisingEnable(HCILESetAdvertisingEnable(isEnabled: true)))
        #expect(h.sent.count == 5)
        #expect(h.gap.isAdvertising)
        // The central leaves: advertising starts again (a second central may connect meanwhile).
        h.clearSent()
        h.run(h.gap.disconnected(role: .peripheral, now: h.now))
        h.answerAll()
        #expect(h.sent.count == 5)
        // A link as central changes nothing; stopping ends the restarts.
        h.clearSent()
        h.run(h.gap.disconnected(role: .central, now: h.now))
        h.run(h.gap.stopAdvertising(now: h.now).1)
        h.answerAll()
        #expect(h.sent == [.setAdvertisingEnable(HCILESetAdvertisingEnable(isEnabled: false))])
        h.clearSent()
        h.run(h.gap.connectionComplete(status: .success, handle: 0x0002, role: .peripheral, now: h.now).actions)
        h.run(h.gap.disconnected(role: .peripheral, now: h.now))
        #expect(h.sent.isEmpty)
    }

    @Test func advertisingWithoutRestartStaysOffAfterAConnection() {
        var h = GAPHarness()
        h.run(h.gap.startAdvertising(.init(data: []), now: h.now).1)
        h.answerAll()
        h.clearSent()
        h.run(h.gap.connectionComplete(status: .success, handle: 0x0001, role: .peripheral, now: h.now).actions)
        h.run(h.gap.disconnected(role: .peripheral, now: h.now))
        #expect(h.sent.isEmpty)
        #expect(!h.gap.isAdvertising)
    }

    @Test func aRefusedAdvertisingEnableLeavesAdvertisingOff() {
        var h = GAPHarness()
        let (id, actions) = h.gap.startAdvertising(.init(data: []), now: h.now)
        h.run(actions)
        for _ in 0..<4 { h.answer() }
        h.answer(.failed(.commandDisallowed))
        #expect(h.finished[id] == .command(.setAdvertisingEnable(HCILESetAdvertisingEnable(isEnabled: true)), .failed(.commandDisallowed)))
        #expect(!h.gap.isAdvertising)
    }

    // MARK: Scanning and one procedure at a time

    @Test func proceduresRunOneAtATimeInTheOrderAsked() {
        var h = GAPHarness()
        let (scan, _, a1) = h.gap.startScan(.init(filterDuplicates: true), now: h.now)
        let (advertise, a2) = h.gap.startAdvertising(.init(data: []), now: h.now)
        h.run(a1 + a2)
        #expect(h.outstanding.count == 1, "one command in flight")
        h.answer()
        h.answer()
        #expect(h.finished[scan] == .some(nil))
        #expect(h.finished[advertise] == nil)
        #expect(h.gap.scan?.filterDuplicates == true)
        h.answerAll()
        #expect(h.finished[advertise] == .some(nil))
        #expect(h.sent.prefix(2) == [
            .setScanParameters(HCILESetScanParameters(scanType: .active, interval: 0x0060, window: 0x0030, ownAddressType: .public)),
            .setScanEnable(HCILESetScanEnable(isEnabled: true, filterDuplicates: true)),
        ])
    }

    @Test func aNewScanEndsTheOldOneAndAStaleStopLeavesTheNewOneAlone() {
        var h = GAPHarness()
        h.run(h.gap.startScan(.init(), now: h.now).2)
        h.answerAll()
        let first = h.gap.scan?.generation ?? -1
        h.clearSent()
        h.run(h.gap.startScan(.init(active: false), now: h.now).2)
        h.answerAll()
        #expect(h.scansEnded == [first])
        #expect(h.sent.first == .setScanEnable(HCILESetScanEnable(isEnabled: false)))
        let second = h.gap.scan?.generation ?? -1
        #expect(second != first)
        h.clearSent()
        h.run(h.gap.stopScan(generation: first, now: h.now).1)
        h.answerAll()
        #expect(h.sent.isEmpty)
        #expect(h.gap.scan?.generation == second)
        h.run(h.gap.stopScan(generation: second, now: h.now).1)
        h.answerAll()
        #expect(h.sent == [.setScanEnable(HCILESetScanEnable(isEnabled: false))])
        #expect(h.scansEnded == [first, second])
        #expect(h.gap.scan == nil)
    }

    // MARK: Privacy

    static let rpa1 = LEAddress(BluetoothAddress(0x4A00_0000_0001), type: .random)
    static let rpa2 = LEAddress(BluetoothAddress(0x4A00_0000_0002), type: .random)

    @Test func theOwnAddressRotatesWhileScanning() {
        var h = GAPHarness(privacy: true, interval: .seconds(60), addresses: [Self.rpa1, Self.rpa2])
        h.run(h.gap.startScan(.init(filterDuplicates: true), now: h.now).2)
        h.answerAll()
        #expect(h.sent == [
            .setRandomAddress(HCILESetRandomAddress(address: Self.rpa1.address)),
            .setScanParameters(HCILESetScanParameters(scanType: .active, interval: 0x0060, window: 0x0030, ownAddressType: .random)),
            .setScanEnable(HCILESetScanEnable(isEnabled: true, filterDuplicates: true)),
        ])
        #expect(h.gap.privateAddress == Self.rpa1)
        #expect(h.timers[.addressRotation] == .seconds(60))
        h.clearSent()
        h.advance(to: .seconds(60))
        h.answerAll()
        // The scan pauses around LE Set Random Address (the controller refuses it while scanning), then goes on.
        #expect(h.sent == [
            .setScanEnable(HCILESetScanEnable(isEnabled: false)),
            .setRandomAddress(HCILESetRandomAddress(address: Self.rpa2.address)),
            .setScanEnable(HCILESetScanEnable(isEnabled: true, filterDuplicates: true)),
        ])
        #expect(h.gap.privateAddress == Self.rpa2)
        #expect(h.timers[.addressRotation] == .seconds(120))
        #expect(h.scansEnded.isEmpty, "the scan goes on across the change")
    }

    @Test func theRotationWaitsForAConnectionAttemptAndIsNotDoneWhenNothingShowsTheAddress() {
        var h = GAPHarness(privacy: true, interval: .seconds(60), addresses: [Self.rpa1, Self.rpa2])
        h.run(h.gap.startScan(.init(), now: h.now).2)
        h.answerAll()
        h.run(h.gap.connect(.init(peer: GAPHarness.peer, timeout: .seconds(300)), now: h.now).1)
        h.answerAll()
        h.clearSent()
        // Initiating: LE Set Random Address would be refused: again in a second.
        h.advance(to: .seconds(60))
        #expect(h.sent.isEmpty)
        #expect(h.timers[.addressRotation] == .seconds(61))
        h.run(h.gap.connectionComplete(status: .success, handle: 0x0040, role: .central, now: h.now).actions)
        h.advance(to: .seconds(61))
        h.answerAll()
        #expect(h.sent.contains(.setRandomAddress(HCILESetRandomAddress(address: Self.rpa2.address))))
        // Nothing on: the address is replaced by the next start instead.
        var idle = GAPHarness(privacy: true, interval: .seconds(60), addresses: [Self.rpa1, Self.rpa2])
        idle.run(idle.gap.startAdvertising(.init(data: []), now: idle.now).1)
        idle.answerAll()
        idle.run(idle.gap.stopAdvertising(now: idle.now).1)
        idle.answerAll()
        idle.clearSent()
        idle.advance(to: .seconds(60))
        #expect(idle.sent.isEmpty)
        idle.run(idle.gap.startScan(.init(), now: idle.now).2)
        idle.answerAll()
        #expect(idle.sent.first == .setRandomAddress(HCILESetRandomAddress(address: Self.rpa2.address)))
    }

    @Test func withoutAPrivateAddressAStartFails() {
        var h = GAPHarness(privacy: true, addresses: [])
        let (id, actions) = h.gap.startAdvertising(.init(data: []), now: h.now)
        h.run(actions)
        h.answerAll()
        #expect(h.finished[id] == .noPrivateAddress)
        #expect(!h.gap.isAdvertising)
    }

    // MARK: The controller lost

    @Test func losingTheControllerEndsEverything() {
        var h = GAPHarness()
        h.run(h.gap.startScan(.init(), now: h.now).2)
        h.answerAll()
        let generation = h.gap.scan?.generation ?? -1
        let (attempt, a1) = h.gap.connect(connectParameters, now: h.now)
        h.run(a1)
        h.answer(.pending)
        let (advertise, a2) = h.gap.startAdvertising(.init(data: [], restartAfterConnection: true), now: h.now)
        h.run(a2)
        h.run(h.gap.controllerLost())
        #expect(h.finished[attempt] == .controllerLost)
        #expect(h.finished[advertise] == .controllerLost)
        #expect(h.scansEnded == [generation])
        #expect(h.gap.scan == nil && !h.gap.isAdvertising && h.gap.initiatingPeer == nil)
        #expect(h.timers.isEmpty)
        h.clearSent()
        h.run(h.gap.disconnected(role: .peripheral, now: h.now))
        #expect(h.sent.isEmpty, "no restart after the controller is gone")
    }
}

/// The machine driving a controller with the extended advertising commands (Core 5.4, Vol 4, Part E, 7.8.53–7.8.66):
/// advertising sets, extended scanning and extended connection creation, never a legacy command.
@Suite struct GAPProceduresExtendedTests {
    fileprivate static func extendedHarness(privacy: Bool = false, addresses: [LEAddress] = []) -> GAPHarness {
        var h = GAPHarness(privacy: privacy, addresses: addresses)
        h.gap.usesExtendedCommands = true
        return h
    }

    fileprivate static func isLegacy(_ command: Command) -> Bool {
        switch command {
        case .setScanParameters, .setScanEnable, .setAdvertisingParameters, .setAdvertisingData, .setScanResponseData,
             .setAdvertisingEnable, .createConnection: true
        default: false
        }
    }

    @Test func severalSetsAreConfiguredInFragmentsAndEnabledTogether() {
        var h = Self.extendedHarness()
        let long = [UInt8](repeating: 0x5A, count: 600)
        let extended = GAPProcedures.AdvertisingParameters(type: .connectableUndirected, data: long, legacy: false,
                                                           primaryPHY: .leCoded, secondaryPHY: .leCoded)
        let beacon = GAPProcedures.AdvertisingParameters(type: .nonConnectableUndirected, data: [2, 1, 4])
        let (id, actions) = h.gap.startAdvertising(sets: [extended, beacon], now: h.now)
        h.run(actions)
        h.answerAll()
        #expect(h.finished[id] == .some(nil))
        #expect(h.sent == [
            .setExtendedAdvertisingEnable(.init(isEnabled: false, sets: [])),
            .clearAdvertisingSets,
            .setExtendedAdvertisingParameters(.init(handle: 0, properties: .connectable, primaryPHY: .leCoded, secondaryPHY: .leCoded, sid: 0)),
            .setExtendedAdvertisingData(.init(handle: 0, operation: .first, data: Array(long[0..<251]))),
            .setExtendedAdvertisingData(.init(handle: 0, operation: .intermediate, data: Array(long[251..<502]))),
            .setExtendedAdvertisingData(.init(handle: 0, operation: .last, data: Array(long[502...]))),
            .setExtendedAdvertisingParameters(.init(handle: 1, properties: .legacyNonConnectable, sid: 1)),
            .setExtendedAdvertisingData(.init(handle: 1, operation: .complete, data: [2, 1, 4])),
            .setExtendedAdvertisingEnable(.init(isEnabled: true, sets: [.init(handle: 0), .init(handle: 1)])),
        ])
        #expect(h.gap.activeSets == [0, 1] && h.gap.isAdvertising)
        // A link on set 0 ends set 0 only (LE Advertising Set Terminated); set 1 goes on.
        let (local, afterLink) = h.gap.connectionComplete(status: .success, handle: 0x0041, role: .peripheral, now: h.now)
        #expect(local == GAPHarness.identity && afterLink.isEmpty)
        h.run(h.gap.advertisingSetTerminated(handle: 0, status: .success, now: h.now))
        #expect(h.gap.activeSets == [1] && h.gap.isAdvertising)
        h.run(h.gap.advertisingSetTerminated(handle: 1, status: .limitReached, now: h.now))
        #expect(!h.gap.isAdvertising)
    }

    @Test func restartAfterConnectionFollowsTheSetThatEnded() {
        var h = Self.extendedHarness()
        let connectable = GAPProcedures.AdvertisingParameters(data: [2, 1, 6], restartAfterConnection: true, legacy: false)
        h.run(h.gap.startAdvertising(sets: [connectable], now: h.now).1)
        h.answerAll()
        h.clearSent()
        h.run(h.gap.connectionComplete(status: .success, handle: 0x0041, role: .peripheral, now: h.now).actions)
        #expect(h.sent.isEmpty, "nothing restarts before the controller says which set ended")
        h.run(h.gap.advertisingSetTerminated(handle: 0, status: .success, now: h.now))
        h.answerAll()
        #expect(h.sent.last == .setExtendedAdvertisingEnable(.init(isEnabled: true, sets: [.init(handle: 0)])))
        #expect(h.gap.isAdvertising)
    }

    @Test func scanningAndConnectingUseTheExtendedCommandsOnThePHYsAsked() {
        var h = Self.extendedHarness()
        let (_, _, actions) = h.gap.startScan(.init(active: false, interval: 0x20, window: 0x10, phys: [.le1M, .leCoded]), now: h.now)
        h.run(actions)
        h.answerAll()
        let phy = HCILESetExtendedScanParameters.PHYParameters(scanType: .passive, interval: 0x20, window: 0x10)
        #expect(h.sent == [.setExtendedScanParameters(.init(le1M: phy, leCoded: phy)),
                           .setExtendedScanEnable(.init(isEnabled: true))])
        h.clearSent()
        let (id, connecting) = h.gap.connect(.init(peer: GAPHarness.peer, phys: [.le1M, .leCoded]), now: h.now)
        h.run(connecting)
        h.answerAll()
        let p = HCILEExtendedCreateConnection.PHYParameters()
        #expect(h.sent == [.extendedCreateConnection(.init(peerAddressType: .random, peerAddress: GAPHarness.peer.address,
                                                            le1M: p, leCoded: p))])
        h.run(h.gap.connectionComplete(status: .success, handle: 0x0042, role: .central, now: h.now).actions)
        #expect(h.connected[id] == 0x0042)
        #expect(!h.sent.contains(where: Self.isLegacy))
    }

    @Test func withPrivacyEachSetGetsThePrivateAddressAndARotationRenewsIt() {
        let first = LEAddress(BluetoothAddress(0x4A00_0000_0001), type: .random)
        let second = LEAddress(BluetoothAddress(0x4A00_0000_0002), type: .random)
        var h = Self.extendedHarness(privacy: true, addresses: [first, second])
        let sets = [GAPProcedures.AdvertisingParameters(data: [2, 1, 6], legacy: false),
                    GAPProcedures.AdvertisingParameters(type: .nonConnectableUndirected, data: [2, 1, 4])]
        h.run(h.gap.startAdvertising(sets: sets, now: h.now).1)
        h.answerAll()
        #expect(h.sent.contains(.setRandomAddress(.init(address: first.address))))
        #expect(h.sent.contains(.setAdvertisingSetRandomAddress(.init(handle: 0, address: first.address))))
        #expect(h.sent.contains(.setAdvertisingSetRandomAddress(.init(handle: 1, address: first.address))))
        #expect(h.sent.contains { if case .setExtendedAdvertisingParameters(let p) = $0 { p.ownAddressType == .random } else { false } })
        h.clearSent()
        h.advance(to: .seconds(61))
        h.answerAll()
        #expect(h.sent == [
            .setExtendedAdvertisingEnable(.init(isEnabled: false, sets: [])),
            .setRandomAddress(.init(address: second.address)),
            .setAdvertisingSetRandomAddress(.init(handle: 0, address: second.address)),
            .setAdvertisingSetRandomAddress(.init(handle: 1, address: second.address)),
            .setExtendedAdvertisingEnable(.init(isEnabled: true, sets: [.init(handle: 0), .init(handle: 1)])),
        ])
    }

    @Test func theLegacyMachineUsesOnlyTheFirstSetAndNoExtendedCommand() {
        var h = GAPHarness()
        let (id, actions) = h.gap.startAdvertising(sets: [.init(data: [2, 1, 6]), .init(data: [2, 1, 4])], now: h.now)
        h.run(actions)
        h.answerAll()
        #expect(h.finished[id] == .some(nil))
        #expect(h.sent.contains(.setAdvertisingData(.init(data: [2, 1, 6]))))
        #expect(!h.sent.contains(.setAdvertisingData(.init(data: [2, 1, 4]))))
        #expect(h.sent.allSatisfy(Self.isLegacy))
    }
}

/// The own address of each procedure (``OwnAddress``): the Own_Address_Type in LE Set (Extended) Advertising
/// Parameters, LE Set (Extended) Scan Parameters and LE (Extended) Create Connection, and the random address given to
/// the controller (LE Set Random Address) or to an advertising set (LE Set Advertising Set Random Address) before the
/// enable. Core 5.4, Vol 4, Part E, 7.8.4, 7.8.5, 7.8.10, 7.8.12, 7.8.52, 7.8.53, 7.8.64, 7.8.66; Vol 6, Part B, 1.3.
@Suite struct GAPOwnAddressTests {
    static let staticAddress = LEAddress(BluetoothAddress(0xC1_22_33_44_55_66), type: .random)
    static let secondStatic = LEAddress(BluetoothAddress(0xD2_22_33_44_55_77), type: .random)

    fileprivate static func advertisingParameters(_ command: Command) -> HCILESetAdvertisingParameters? {
        if case .setAdvertisingParameters(let p) = command { p } else { nil }
    }

    @Test func legacyAdvertisingWithARandomAddressMakesAStaticAddressOnceAndSetsItBeforeTheEnable() {
        var h = GAPHarness()
        h.statics = [Self.staticAddress, Self.secondStatic]
        let (id, actions) = h.gap.startAdvertising(.init(data: [2, 1, 6], ownAddress: .random), now: h.now)
        h.run(actions)
        h.answerAll()
        #expect(h.finished[id] == .some(nil))
        #expect(h.staticRequests == 1)
        #expect(h.sent == [
            .setAdvertisingEnable(.init(isEnabled: false)),
            .setRandomAddress(.init(address: Self.staticAddress.address)),
            .setAdvertisingParameters(.init(intervalMin: 0x00A0, intervalMax: 0x00A0, advertisingType: .connectableUndirected,
                                            ownAddressType: .random)),
            .setAdvertisingData(.init(data: [2, 1, 6])),
            .setScanResponseData(.init(data: [])),
            .setAdvertisingEnable(.init(isEnabled: true)),
        ])
        #expect(h.gap.staticAddress == Self.staticAddress)
        #expect(h.gap.advertisingAddress == Self.staticAddress)
        // A central connecting sees the static address: it is this side's address on the link.
        let local = h.gap.connectionComplete(status: .success, handle: 0x0040, role: .peripheral, now: h.now).localAddress
        #expect(local == Self.staticAddress)
    }

    @Test func eachProcedureUsesItsOwnChoiceAndTheStaticAddressIsSetOnce() {
        var h = GAPHarness()
        h.statics = [Self.staticAddress, Self.secondStatic]
        // A scan with the default: the public identity, no random address at all.
        let (_, _, scanning) = h.gap.startScan(.init(active: true, interval: 0x20, window: 0x10), now: h.now)
        h.run(scanning)
        h.answerAll()
        #expect(h.sent == [.setScanParameters(.init(scanType: .active, interval: 0x20, window: 0x10, ownAddressType: .public)),
                           .setScanEnable(.init(isEnabled: true, filterDuplicates: false))])
        #expect(h.staticRequests == 0)
        h.clearSent()
        // A connection with a random address while the scan is on: the scan pauses around LE Set Random Address.
        var parameters = GAPProcedures.ConnectionParameters(peer: GAPHarness.peer)
        parameters.ownAddress = .random
        let (id, connecting) = h.gap.connect(parameters, now: h.now)
        h.run(connecting)
        h.answerAll()
        #expect(h.sent.count == 4)
        #expect(h.sent.prefix(3) == [.setScanEnable(.init(isEnabled: false)),
                                     .setRandomAddress(.init(address: Self.staticAddress.address)),
                                     .setScanEnable(.init(isEnabled: true, filterDuplicates: false))])
        guard case .createConnection(let create)? = h.sent.last else {
            Issue.record("no LE Create Connection: \(h.sent)")
            return
        }
        #expect(create.ownAddressType == .random)
        #expect(create.peerAddress == GAPHarness.peer.address)
        let local = h.gap.connectionComplete(status: .success, handle: 0x0041, role: .central, now: h.now)
        h.run(local.actions)
        #expect(local.localAddress == Self.staticAddress)
        #expect(h.connected[id] == 0x0041)
        h.clearSent()
        // Advertising with the identity, then with a random address again: the static address is made and set once.
        h.run(h.gap.startAdvertising(.init(data: [2, 1, 6], ownAddress: .identity), now: h.now).1)
        h.answerAll()
        #expect(h.sent.compactMap(Self.advertisingParameters).map(\.ownAddressType) == [.public])
        h.clearSent()
        h.run(h.gap.startAdvertising(.init(data: [2, 1, 6], ownAddress: .random), now: h.now).1)
        h.answerAll()
        #expect(h.sent.compactMap(Self.advertisingParameters).map(\.ownAddressType) == [.random])
        #expect(!h.sent.contains { if case .setRandomAddress = $0 { true } else { false } })
        #expect(h.staticRequests == 1)
    }

    @Test func aNewPowerOnMakesANewStaticAddress() {
        var h = GAPHarness()
        h.statics = [Self.staticAddress, Self.secondStatic]
        h.run(h.gap.startAdvertising(.init(data: [], ownAddress: .random), now: h.now).1)
        h.answerAll()
        h.run(h.gap.controllerLost())
        #expect(h.gap.staticAddress == nil)
        h.clearSent()
        let (_, _, scanning) = h.gap.startScan(.init(ownAddress: .random), now: h.now)
        h.run(scanning)
        h.answerAll()
        #expect(h.sent.first == .setRandomAddress(.init(address: Self.secondStatic.address)))
        #expect(h.sent.contains(.setScanParameters(.init(scanType: .active, interval: 0x0060, window: 0x0030, ownAddressType: .random))))
        #expect(h.staticRequests == 2)
    }

    @Test func noStaticAddressFailsTheProcedure() {
        var h = GAPHarness()
        let (id, _, actions) = h.gap.startScan(.init(ownAddress: .random), now: h.now)
        h.run(actions)
        h.answerAll()
        #expect(h.finished[id] == .some(.noStaticAddress))
        #expect(!h.sent.contains { if case .setScanEnable(let e) = $0 { e.isEnabled } else { false } })
    }

    @Test func extendedSetsGetTheirOwnAddressTypeAndTheirRandomAddressBeforeTheEnable() {
        var h = GAPHarness()
        h.gap.usesExtendedCommands = true
        h.statics = [Self.staticAddress]
        let sets = [GAPProcedures.AdvertisingParameters(data: [2, 1, 6], legacy: false, ownAddress: .random),
                    GAPProcedures.AdvertisingParameters(type: .nonConnectableUndirected, data: [2, 1, 4], legacy: false)]
        h.run(h.gap.startAdvertising(sets: sets, now: h.now).1)
        h.answerAll()
        let types = h.sent.compactMap { command -> LEAddressType? in
            if case .setExtendedAdvertisingParameters(let p) = command { p.ownAddressType } else { nil }
        }
        #expect(types == [.random, .public])
        // Only the set has the address: the controller's random address is left alone.
        #expect(!h.sent.contains { if case .setRandomAddress = $0 { true } else { false } })
        let setAddress = Command.setAdvertisingSetRandomAddress(.init(handle: 0, address: Self.staticAddress.address))
        let enable = Command.setExtendedAdvertisingEnable(.init(isEnabled: true, sets: [.init(handle: 0), .init(handle: 1)]))
        let setIndex = h.sent.firstIndex(of: setAddress)
        let enableIndex = h.sent.firstIndex(of: enable)
        #expect((setIndex ?? .max) < (enableIndex ?? .min))
        #expect(!h.sent.contains { if case .setAdvertisingSetRandomAddress(let c) = $0 { c.handle == 1 } else { false } })
        h.clearSent()
        // An extended scan with a random address: now the controller's random address is set, before the parameters.
        let (_, _, scanning) = h.gap.startScan(.init(ownAddress: .random), now: h.now)
        h.run(scanning)
        h.answerAll()
        #expect(h.sent.first == .setRandomAddress(.init(address: Self.staticAddress.address)))
        guard case .setExtendedScanParameters(let scan)? = h.sent.dropFirst().first else {
            Issue.record("no LE Set Extended Scan Parameters: \(h.sent)")
            return
        }
        #expect(scan.ownAddressType == .random)
        #expect(h.staticRequests == 1)
        // An extended connection with the identity: public.
        h.clearSent()
        h.run(h.gap.connect(.init(peer: GAPHarness.peer, ownAddress: .identity), now: h.now).1)
        h.answerAll()
        guard case .extendedCreateConnection(let create)? = h.sent.last else {
            Issue.record("no LE Extended Create Connection: \(h.sent)")
            return
        }
        #expect(create.ownAddressType == .public)
    }

    @Test func withPrivacyRandomIsThePrivateAddressAndIdentityThePublicOne() {
        let rpa = LEAddress(BluetoothAddress(0x4A00_0000_0001), type: .random)
        var h = GAPHarness(privacy: true, addresses: [rpa])
        let (_, _, scanning) = h.gap.startScan(.init(ownAddress: .identity), now: h.now)
        h.run(scanning)
        h.answerAll()
        // The identity: no private address made or set.
        #expect(h.sent == [.setScanParameters(.init(scanType: .active, interval: 0x0060, window: 0x0030, ownAddressType: .public)),
                           .setScanEnable(.init(isEnabled: true, filterDuplicates: false))])
        h.clearSent()
        h.run(h.gap.startAdvertising(.init(data: [], ownAddress: .random), now: h.now).1)
        h.answerAll()
        #expect(h.sent.contains(.setRandomAddress(.init(address: rpa.address))))
        #expect(h.sent.compactMap(Self.advertisingParameters).map(\.ownAddressType) == [.random])
        #expect(h.gap.advertisingAddress == rpa)
        #expect(h.gap.staticAddress == nil)
        #expect(h.staticRequests == 0)
    }
}
