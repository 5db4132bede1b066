import BLETransport
import BLEWire
import Synchronization

/// Where a controller's packets for its host go.
/// How many reader threads of an air are handling packets (``VirtualController/attach(_:)``).
final class ReaderActivity: Sendable {
    let count = Atomic<Int>(0)
}

final class HostSink: Sendable {
    enum Mode: Sendable { case stream, buffer }
    let mode: Mode
    let buffer = Locked<[HCIPacket]>([])
    let stream: AsyncStream<HCIPacket>
    let continuation: AsyncStream<HCIPacket>.Continuation
    /// The in-process host transport's own stream, when one took the packets over: they go straight to it rather
    /// than through ``stream`` and a relay task (one task hop less per packet).
    let direct = Locked<DirectTarget>(.none)
    /// Where packets go straight to, in process: the host transport's stream, or the inbox its host drains in batches.
    enum DirectTarget {
        case none
        case stream(AsyncThrowingStream<HCIPacket, any Error>.Continuation)
        case inbox(HCIPacketInbox)
    }
    /// A transport attached with ``VirtualController/attach(_:)``: packets gather here and its writer, woken once per
    /// batch, takes them all at once (one write for many packets on a byte stream).
    /// `byReaders`: the host is attached on its reader thread, so a reader thread handling packets writes what
    /// gathers here when done (``VirtualAir/handleOnReaderThread(_:)``).
    let batched = Locked<(pending: [HCIPacket], wake: AsyncStream<Void>.Continuation, byReaders: Bool)?>(nil)
    /// For a transport whose reader thread hands packets to the controller (``VirtualController/attach(_:)`` on a
    /// ``FileDescriptorTransport``): a synchronous write, used under this lock so that batches taken by different
    /// threads go out in the order they were taken.
    let writer = Locked<(@Sendable ([HCIPacket]) throws -> Void)?>(nil)

    /// The air's count of reader threads handling packets now: each writes every attached host's packets when done
    /// (``VirtualAir/flushAttachedHosts()``), so no writer task need be woken meanwhile.
    let readers: ReaderActivity

    /// Whether the host took every packet sent to it and waits for more: known for a host that drains an inbox (the
    /// in-process host); assumed for the others.
    var hostIsIdle: Bool {
        guard case .inbox(let inbox) = direct.withLock({ $0 }) else { return true }
        return inbox.isDrained
    }

    init(mode: Mode, readers: ReaderActivity = ReaderActivity()) {
        self.mode = mode
        self.readers = readers
        (stream, continuation) = AsyncStream.makeStream(of: HCIPacket.self)
    }

    func deliver(_ packet: HCIPacket) {
        switch mode {
        case .stream:
            switch direct.withLock({ $0 }) {
            case .inbox(let inbox):
                inbox.yield(packet)
                return
            case .stream(let direct):
                direct.yield(packet)
                return
            case .none:
                break
            }
            let wake = batched.withLock { state -> AsyncStream<Void>.Continuation?? in
                guard state != nil else { return .none }
                state?.pending.append(packet)
                // A reader thread handling packets writes this when done (it counts itself out before it flushes,
                // and flushing takes this lock: a packet added after its flush sees the count without it).
                if state?.byReaders == true, readers.count.load(ordering: .sequentiallyConsistent) > 0 { return .some(nil) }
                return .some(state?.pending.count == 1 ? state?.wake : nil)
            }
            switch wake {
            case .none: continuation.yield(packet)
            case .some(let wake): wake?.yield()
            }
        case .buffer: buffer.withLock { $0.append(packet) }
        }
    }

    /// Starts gathering packets for a batching writer; returns its wake-ups. Packets gathered for a writer before
    /// (one that never started: an attach that found its transport already reading) are kept for this one, which is
    /// woken for them at once.
    func startBatching(byReaders: Bool = false) -> AsyncStream<Void> {
        let (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let carried = batched.withLock { state -> Bool in
            let pending = state?.pending ?? []
            state = (pending, wake, byReaders)
            return !pending.isEmpty
        }
        if carried { wake.yield() }
        return wakes
    }

    /// Writes what gathered with ``writer``, if one is set; `false` when the write failed.
    @discardableResult func flush() -> Bool {
        writer.withLock { write in
            guard let write else { return true }
            let batch = takeBatch()
            guard !batch.isEmpty else { return true }
            do { try write(batch) } catch { return false }
            return true
        }
    }

    /// The packets gathered since the last call, each run of Number Of Completed Packets events merged into one.
    func takeBatch() -> [HCIPacket] {
        Self.mergingCompletedPackets(batched.withLock { state in
            defer { state?.pending.removeAll(keepingCapacity: true) }
            return state?.pending ?? []
        })
    }

    /// Merges each run of consecutive Number Of Completed Packets events into one (counts summed per handle, in the
    /// order first reported), as controllers report completions together: one event for the host to handle instead
    /// of one per packet. Runs are not merged across other packets, so no completion moves ahead of an event that
    /// came before it (a disconnection above all). Core 5.4, Vol 4, Part E, 7.7.19.
    static func mergingCompletedPackets(_ batch: [HCIPacket]) -> [HCIPacket] {
        guard batch.count > 1 else { return batch }
        var out: [HCIPacket] = []
        out.reserveCapacity(batch.count)
        var run: [(handle: ConnectionHandle, count: Int)] = []
        var runLength = 0
        func close() {
            defer { run.removeAll(keepingCapacity: true); runLength = 0 }
            guard runLength > 0 else { return }
            if runLength == 1 || run.contains(where: { $0.count > 0xFFFF }) || run.count > 255 {
                for entry in run {
                    var left = entry.count
                    while left > 0 {
                        let n = min(left, 0xFFFF)
                        out.append(.event(HCINumberOfCompletedPacketsEvent(entries: [.init(handle: entry.handle, completedPackets: UInt16(n))]).packet))
                        left -= n
                    }
                }
                return
            }
            out.append(.event(HCINumberOfCompletedPacketsEvent(entries: run.map { .init(handle: $0.handle, completedPackets: UInt16($0.count)) }).packet))
        }
        for packet in batch {
            guard case .event(let event) = packet, event.code == .numberOfCompletedPackets,
                  let completed = try? HCINumberOfCompletedPacketsEvent(bytes: event.parameters) else {
                close()
                out.append(packet)
                continue
            }
            runLength += 1
            for entry in completed.entries {
                if let i = run.firstIndex(where: { $0.handle == entry.handle }) {
                    run[i].count += Int(entry.completedPackets)
                } else {
                    run.append((entry.handle, Int(entry.completedPackets)))
                }
            }
        }
        close()
        return out
    }

    /// The controller is gone: every stream finishes.
    func finish() {
        continuation.finish()
        switch direct.withLock({ $0 }) {
        case .inbox(let inbox): inbox.finish()
        case .stream(let direct): direct.finish()
        case .none: break
        }
        batched.withLock { $0 }?.wake.finish()
    }
}

/// An LE connection between two controllers.
struct Link {
    struct Side {
        var controller: Int
        var handle: ConnectionHandle
        /// Whether this side still considers the link up.
        var active = true
    }

    let id: Int
    var central: Side
    var peripheral: Side
    var interval: UInt16
    var latency: UInt16
    var timeout: UInt16
    var encrypted = false
    var ltk: [UInt8]?
    var pendingEncryption: (ltk: [UInt8], rand: UInt64, ediv: UInt16)?
    var supervisionArmed = false
    var supervisionGeneration: UInt64 = 0
    /// A Connection Update procedure waits for its instant.
    var updatePending = false
    var centralTxOctets: UInt16 = 27
    var peripheralTxOctets: UInt16 = 27
    /// ACL packets accepted from a host while the peer was out of reach: (sending controller, packet).
    var stalled: [(Int, HCIACLPacket)] = []
    /// ACL packets being retransmitted by the link layer (``LinkFaults``), in order: (sending controller, packet).
    var inTransit: [(Int, HCIACLPacket)] = []
    /// When each sender's last packet in transit gets through (packets leave in order).
    var busyUntil: [Int: UInt64] = [:]
    /// The link failed for faults (every attempt lost until the supervision timeout): it is not revived.
    var lostToFaults = false
    /// The PHY of each direction: the central's transmissions, the peripheral's.
    var centralPHY = LEPHY.le1M
    var peripheralPHY = LEPHY.le1M
    /// A PHY Update procedure waits for its instant.
    var phyUpdatePending = false
    /// Under the air-time model: the packets each side's controller holds (central's first), the generation of the
    /// link's connection events, and when a packet last got through.
    var air = [AirQueue(), AirQueue()]
    var airGeneration: UInt64 = 0
    var lastHeard: UInt64 = 0

    func side(of controller: Int) -> Side? {
        if central.controller == controller { return central }
        if peripheral.controller == controller { return peripheral }
        return nil
    }
    func peer(of controller: Int) -> Side? {
        if central.controller == controller { return peripheral }
        if peripheral.controller == controller { return central }
        return nil
    }
    var supervisionTimeoutNanos: UInt64 { UInt64(timeout) * 10_000_000 }
    var intervalNanos: UInt64 { UInt64(interval) * 1_250_000 }
}

/// Simulated events.
enum WorldEvent: Sendable {
    /// Advertise.
    case advertise(controller: Int, generation: UInt64)
    /// Supervision.
    case supervision(link: Int, generation: UInt64)
    /// Connection update.
    case connectionUpdate(link: Int, interval: UInt16, latency: UInt16, timeout: UInt16)
    /// The link layer got a retransmitted packet through.
    case deliverACL(link: Int, sender: Int)
    /// One advertising event of an advertising set.
    case advertiseSet(controller: Int, handle: UInt8, generation: UInt64)
    /// An extended scan's Duration ran out.
    case scanDuration(controller: Int, generation: UInt64)
    /// Air-time model: a connection event's anchor.
    case connectionEvent(link: Int, generation: UInt64)
    /// Air-time model: the next exchange of a connection event.
    case airExchange(link: Int, generation: UInt64, nextAnchor: UInt64)
    /// Air-time model: a PDU reached its receiver.
    case airDeliver(link: Int, receiver: Int, data: [UInt8], starts: Bool)
    /// Air-time model: the peer acknowledged the last part of one of the sender's host packets.
    case airAcknowledge(link: Int, sender: Int)
    /// A PHY Update procedure reaches its instant.
    case phyUpdate(link: Int, requester: Int, transmit: LEPHYs, receive: LEPHYs)
}

/// Faults on the links between two controllers, per transmission attempt, each deterministic from its seed: a packet
/// lost or received with a CRC error is not acknowledged, and the link layer sends it again at the next connection
/// event, so the host sees latency, never loss, and packets keep their order. When every attempt fails until the
/// supervision timeout runs out, the link is lost (Connection Timeout, 0x08). Core 5.4, Vol 6, Part B, 4.5.9.
public struct LinkFaults: Sendable, Hashable {
    /// Probability that a transmission is not received at all (0…1).
    public var packetLoss: Double
    /// Probability that a received transmission fails its CRC (0…1).
    public var crcErrors: Double
    /// The seed of the faults' own generator.
    public var seed: UInt64

    /// Creates a fault model.
    public init(packetLoss: Double = 0, crcErrors: Double = 0, seed: UInt64 = 1) {
        self.packetLoss = packetLoss
        self.crcErrors = crcErrors
        self.seed = seed
    }

    /// Probability that one attempt gets through.
    var successProbability: Double { (1 - min(1, max(0, packetLoss))) * (1 - min(1, max(0, crcErrors))) }
}

/// The faults of a controller pair, with their generator.
struct FaultState {
    var faults: LinkFaults
    var rng: SplitMix64
}

/// Everything on the simulated air, mutated only under `VirtualAir`'s lock.
struct World {
    var now: UInt64 = 0
    var rng: SplitMix64
    var radio: RadioModel
    /// The controllers and the links, by id: looked up several times a packet, so `SmallMap`s (a linear search while
    /// there are few, no hashing).
    var controllers = SmallMap<Int, ControllerState>()
    var links = SmallMap<Int, Link>()
    var queue = EventQueue<WorldEvent>()
    /// The air-time model, when on (``VirtualAir/airTime``).
    var airTime: AirTimeModel?
    var nextControllerID = 1
    var nextLinkID = 1
    /// Source of unique tokens that tie scheduled events to the state that scheduled them.
    var lastToken: UInt64 = 0
    /// ACL packets a host sent for a handle its controller does not know.
    var droppedACLPackets = 0
    /// Faults by controller pair (the lower id first).
    var faults: [[Int]: FaultState] = [:]
    /// Transmission attempts that failed and were repeated (``LinkFaults``).
    var retransmissions = 0
    /// Links lost because every attempt failed.
    var linksLostToFaults = 0
    /// The controllers that listen (scan or initiate), in id order; `nil` when one may have started or stopped
    /// listening (each advertising event would otherwise sort every controller on the air).
    var listenerCache: [Int]?

    /// The controllers that scan or initiate, in id order.
    mutating func listeners() -> [Int] {
        if let listenerCache { return listenerCache }
        let ids = controllers.compactMap { id, c in !c.removed && (c.scanning.isEnabled || c.initiating.connection != nil) ? id : nil }.sorted()
        listenerCache = ids
        return ids
    }

    init(seed: UInt64, radio: RadioModel) {
        rng = SplitMix64(seed: seed)
        self.radio = radio
    }

    /// A token never handed out before (never 0, the value fresh state starts with).
    mutating func token() -> UInt64 {
        lastToken &+= 1
        return lastToken
    }

    // MARK: Radio

    /// The mean RSSI at `receiver` of `transmitter`'s signal.
    func meanRSSI(from transmitter: Int, to receiver: Int) -> Double? {
        guard let tx = controllers[transmitter], let rx = controllers[receiver], !tx.removed, !rx.removed else { return nil }
        return radio.meanRSSI(txPower: Double(tx.txPower), distance: tx.position.distance(to: rx.position))
    }

    /// One packet's RSSI with noise, or `nil` when the receiver cannot hear it.
    mutating func sampleRSSI(from transmitter: Int, to receiver: Int) -> Int8? {
        guard let mean = meanRSSI(from: transmitter, to: receiver) else { return nil }
        let value = radio.noiseSigma > 0 ? mean + radio.noiseSigma * rng.nextGaussian() : mean
        guard value >= radio.sensitivity else { return nil }
        return Int8(clamping: Int(value.rounded()))
    }

    /// ``canHear(_:_:)`` with the controllers read in place: `controllers[id]` copies a controller's whole state,
    /// and the data path asks twice a packet.
    mutating func canHearInPlace(_ a: Int, _ b: Int) -> Bool {
        func radioState(_ id: Int) -> (txPower: Int8, position: Position)? {
            controllers.withValue(forKey: id) { $0.removed ? nil : ($0.txPower, $0.position) } ?? nil
        }
        guard let x = radioState(a), let y = radioState(b) else { return false }
        return radio.meanRSSI(txPower: Double(x.txPower), distance: x.position.distance(to: y.position)) >= radio.sensitivity
            && radio.meanRSSI(txPower: Double(y.txPower), distance: y.position.distance(to: x.position)) >= radio.sensitivity
    }

    /// Whether two controllers can hear each other (noise-free).
    func canHear(_ a: Int, _ b: Int) -> Bool {
        guard let ab = meanRSSI(from: a, to: b), let ba = meanRSSI(from: b, to: a) else { return false }
        return ab >= radio.sensitivity && ba >= radio.sensitivity
    }

    // MARK: Output

    /// Sends an event to a controller's host, honouring its event masks; returns whether it was sent.
    @discardableResult
    mutating func emit(_ controller: Int, _ event: HCIEventPacket) -> Bool {
        guard let found = controllers.withValue(forKey: controller, { c in
            c.removed ? nil : (sink: c.sink, eventMask: c.hci.eventMask, leEventMask: c.hci.leEventMask)
        }), let c = found else { return false }
        switch event.code {
        case .commandComplete, .commandStatus, .numberOfCompletedPackets:
            break
        case .leMeta:
            guard c.eventMask & (1 << 61) != 0 else { return false }
            if let sub = event.parameters.first, let bit = HCILESetEventMask.bit(for: HCILESubeventCode(rawValue: sub)),
               c.leEventMask & bit == 0 { return false }
        default:
            if let bit = HCISetEventMask.bit(for: event.code), c.eventMask & bit == 0 { return false }
        }
        c.sink.deliver(.event(event))
        return true
    }

    /// Sends LE Connection Complete, or LE Enhanced Connection Complete [v1] in its place where the host unmasked the
    /// enhanced event: with both unmasked only the enhanced one is sent (Core 5.4, Vol 4, Part E, 7.7.65.10). Linux's
    /// host, which unmasks both, waits for the enhanced event after LE Extended Create Connection and otherwise cancels
    /// a connection that has in fact completed. No address is resolved here, so both resolvable private addresses are
    /// zero.
    mutating func emitConnectionComplete(_ controller: Int, _ e: HCILEConnectionCompleteEvent) {
        let enhanced = HCILESetEventMask.bit(for: .enhancedConnectionComplete) ?? 0
        guard let mask = controllers[controller]?.hci.leEventMask, mask & enhanced != 0 else {
            emit(controller, e.packet)
            return
        }
        emit(controller, HCILEEnhancedConnectionCompleteEvent(status: e.status, handle: e.handle, role: e.role,
                                                              peerAddressType: e.peerAddressType, peerAddress: e.peerAddress,
                                                              connectionInterval: e.connectionInterval,
                                                              peripheralLatency: e.peripheralLatency,
                                                              supervisionTimeout: e.supervisionTimeout,
                                                              centralClockAccuracy: e.centralClockAccuracy).packet)
    }

    mutating func emitACL(_ controller: Int, _ packet: HCIACLPacket) {
        guard let found = controllers.withValue(forKey: controller, { $0.removed ? nil : $0.sink }), let sink = found else { return }
        sink.deliver(.acl(packet))
    }

    mutating func complete<C: HCICommand>(_ controller: Int, _ command: C.Type, _ returnParameters: C.ReturnParameters) {
        emit(controller, HCICommandCompleteEvent(for: command, returnParameters).packet)
    }

    mutating func status(_ controller: Int, _ opcode: HCIOpcode, _ status: HCIStatus) {
        emit(controller, HCICommandStatusEvent(status: status, opcode: opcode).packet)
    }

    /// Answers a command with an error, in the completion style the command uses.
    mutating func fail(_ controller: Int, _ opcode: HCIOpcode, _ completion: HCICommandCompletion, _ error: HCIStatus) {
        switch completion {
        case .commandStatus: status(controller, opcode, error)
        case .commandComplete: emit(controller, HCICommandCompleteEvent(opcode: opcode, returnParameters: [error.rawValue]).packet)
        }
    }

    // MARK: Links

    func linkID(controller: Int, handle: ConnectionHandle) -> Int? {
        links.first { _, link in
            (link.central.controller == controller && link.central.handle == handle && link.central.active)
                || (link.peripheral.controller == controller && link.peripheral.handle == handle && link.peripheral.active)
        }?.key
    }

    func handlesInUse(by controller: Int) -> Set<ConnectionHandle> {
        var used: Set<ConnectionHandle> = []
        for link in links.values {
            if link.central.controller == controller, link.central.active { used.insert(link.central.handle) }
            if link.peripheral.controller == controller, link.peripheral.active { used.insert(link.peripheral.handle) }
        }
        return used
    }

    /// Marks one side of a link closed and tells its host; drops the link once both sides are closed.
    mutating func closeSide(link id: Int, controller: Int, reason: HCIStatus) {
        guard var link = links[id] else { return }
        if link.central.controller == controller, link.central.active {
            link.central.active = false
            emit(controller, HCIDisconnectionCompleteEvent(handle: link.central.handle, reason: reason).packet)
        } else if link.peripheral.controller == controller, link.peripheral.active {
            link.peripheral.active = false
            emit(controller, HCIDisconnectionCompleteEvent(handle: link.peripheral.handle, reason: reason).packet)
        } else {
            return
        }
        // Packets this side's host had in the controller's buffers are flushed with the link.
        let flushed = link.stalled.filter { $0.0 == controller }.count + link.inTransit.filter { $0.0 == controller }.count
            + flushAirQueue(&link, controller: controller)
        link.stalled.removeAll { $0.0 == controller }
        link.inTransit.removeAll { $0.0 == controller }
        controllers[controller]?.hci.aclInFlight -= flushed
        if !link.central.active && !link.peripheral.active {
            for (sender, _) in link.stalled + link.inTransit { controllers[sender]?.hci.aclInFlight -= 1 }
            for side in [link.central, link.peripheral] {
                let held = flushAirQueue(&link, controller: side.controller)
                controllers[side.controller]?.hci.aclInFlight -= held
            }
            links[id] = nil
        } else {
            links[id] = link
        }
    }

    /// The controller's link layer forgets its links without telling its host (Reset, or the host vanished): its
    /// sides close silently, the packets its host had queued are discarded, a pending encryption start is
    /// abandoned. Each peer keeps its side until its supervision timeout runs out.
    mutating func forgetLinks(of controller: Int) {
        for id in links.keys.sorted() {
            guard var link = links[id], link.side(of: controller) != nil else { continue }
            if link.central.controller == controller { link.central.active = false }
            if link.peripheral.controller == controller { link.peripheral.active = false }
            link.stalled.removeAll { $0.0 == controller }
            link.inTransit.removeAll { $0.0 == controller }
            _ = flushAirQueue(&link, controller: controller)
            link.pendingEncryption = nil
            links[id] = link.central.active || link.peripheral.active ? link : nil
        }
        reevaluateLinks()
    }

    /// Re-checks every link after a move or a removal: out of reach arms the supervision timer; back in reach
    /// disarms it and releases stalled packets.
    mutating func reevaluateLinks() {
        for id in links.keys.sorted() {
            guard var link = links[id] else { continue }
            let bothActive = link.central.active && link.peripheral.active
            let reachable = bothActive && canHear(link.central.controller, link.peripheral.controller)
            if !reachable, !link.supervisionArmed {
                link.supervisionArmed = true
                link.supervisionGeneration &+= 1
                queue.schedule(.supervision(link: id, generation: link.supervisionGeneration), at: now + link.supervisionTimeoutNanos)
                links[id] = link
            } else if reachable, link.supervisionArmed, !link.lostToFaults {
                link.supervisionArmed = false
                link.supervisionGeneration &+= 1
                let stalled = link.stalled
                link.stalled = []
                links[id] = link
                for (sender, packet) in stalled { transmitACL(link: id, from: sender, packet) }
            }
        }
    }

    // MARK: Events

    mutating func run(_ event: WorldEvent) {
        switch event {
        case .advertise(let controller, let generation):
            advertisingEvent(controller: controller, generation: generation)
        case .advertiseSet(let controller, let handle, let generation):
            advertisingSetEvent(controller: controller, handle: handle, generation: generation)
        case .scanDuration(let controller, let generation):
            scanDurationEnded(controller: controller, generation: generation)
        case .supervision(let id, let generation):
            guard let link = links[id], link.supervisionArmed, link.supervisionGeneration == generation else { return }
            for side in [link.central, link.peripheral] where side.active {
                closeSide(link: id, controller: side.controller, reason: .connectionTimeout)
            }
        case .connectionUpdate(let id, let interval, let latency, let timeout):
            guard var link = links[id], link.updatePending else { return }
            let changed = (link.interval, link.latency, link.timeout) != (interval, latency, timeout)
            link.interval = interval
            link.latency = latency
            link.timeout = timeout
            link.updatePending = false
            links[id] = link
            // The central's host asked, so it always hears back; the peripheral's only when something changed.
            // Core 5.4, Vol 4, Part E, 7.7.65.3.
            for side in [link.central, link.peripheral] where side.active && (changed || side.controller == link.central.controller) {
                emit(side.controller, HCILEConnectionUpdateCompleteEvent(handle: side.handle, connectionInterval: interval,
                                                                         peripheralLatency: latency,
                                                                         supervisionTimeout: timeout).packet)
            }
        case .deliverACL(let id, let sender):
            guard var link = links[id], let i = link.inTransit.firstIndex(where: { $0.0 == sender }) else { return }
            let (_, packet) = link.inTransit.remove(at: i)
            links[id] = link
            deliverACL(link: id, from: sender, packet)
        case .connectionEvent(let id, let generation):
            connectionEvent(link: id, generation: generation)
        case .airExchange(let id, let generation, let nextAnchor):
            exchange(link: id, generation: generation, nextAnchor: nextAnchor)
        case .airDeliver(let id, let receiver, let data, let starts):
            airDeliver(link: id, receiver: receiver, data: data, starts: starts)
        case .airAcknowledge(let id, let sender):
            airAcknowledge(link: id, sender: sender)
        case .phyUpdate(let id, let requester, let transmit, let receive):
            phyUpdate(link: id, requester: requester, transmit: transmit, receive: receive)
        }
    }
}
