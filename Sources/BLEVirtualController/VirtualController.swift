import BLETransport
import BLEWire
import Synchronization

/// A simulated LE controller on a ``VirtualAir``, speaking HCI to its host.
///
/// Feed it host packets with ``receive(fromHost:)``; read what it sends to the host from ``toHost`` (or
/// ``drainToHost()`` when created buffered). ``makeHostTransport()`` and ``attach(_:)`` connect it to a host
/// through an ``HCITransport``.
public final class VirtualController: Sendable {
    /// How a controller is built and placed.
    public struct Configuration: Sendable {
        /// The public device address (`nil`: a distinct one per controller, `00:5B:00:00:00:NN`, NN its number on
        /// the air).
        public var address: BluetoothAddress?
        /// Where the controller is (settable later through ``VirtualController/position``).
        public var position: Position
        /// Transmit power in dBm (settable later through ``VirtualController/txPower``).
        public var txPower: Int8
        /// Size of each ACL buffer (LE Read Buffer Size); also the size of fragments sent to the host.
        /// Clamped to 27...65535.
        public var aclBufferSize: Int
        /// Number of ACL buffers. Clamped to 1...255.
        public var aclBufferCount: Int
        /// A label for logs and tools (`nil`: "controller NN").
        public var name: String?
        /// Give each new connection the lowest handle not in use, as many controllers do (Bumble's among them), so a
        /// quick reconnection gets the handle of the link just closed. Otherwise handles go round 0x0001...0x0EFF.
        public var reusesHandles: Bool
        /// What the controller says it is and can do (``ControllerProfile/full`` by default).
        public var profile: ControllerProfile

        /// Creates a configuration.
        public init(address: BluetoothAddress? = nil, position: Position = Position(), txPower: Int8 = 0,
                    aclBufferSize: Int = 27, aclBufferCount: Int = 8, name: String? = nil, reusesHandles: Bool = false,
                    profile: ControllerProfile = .full) {
            self.reusesHandles = reusesHandles
            self.profile = profile
            self.address = address
            self.position = position
            self.txPower = txPower
            self.aclBufferSize = max(27, min(aclBufferSize, 0xFFFF))
            self.aclBufferCount = max(1, min(aclBufferCount, 255))
            self.name = name
        }
    }

    let id: Int
    /// The controller's public address.
    public let address: BluetoothAddress
    /// The controller's label: the configuration's name, or "controller NN".
    public let name: String
    /// The air it is on.
    public let air: VirtualAir
    let sink: HostSink

    init(id: Int, address: BluetoothAddress, name: String, air: VirtualAir, sink: HostSink) {
        self.id = id
        self.address = address
        self.name = name
        self.air = air
        self.sink = sink
    }

    /// Packets from the controller to its host (for controllers that are not buffered). Single consumer.
    public var toHost: AsyncStream<HCIPacket> { sink.stream }

    /// Takes the packets sent to the host since the last call (buffered controllers).
    public func drainToHost() -> [HCIPacket] {
        sink.buffer.withLock { buffer in
            defer { buffer.removeAll() }
            return buffer
        }
    }

    /// Handles one packet from the host. Commands are answered, ACL data goes over the air; anything else a host
    /// cannot send (events) is ignored.
    public func receive(fromHost packet: HCIPacket) {
        receive(fromHost: CollectionOfOne(packet))
    }

    /// Takes packets from the host, in order, in one turn of the air.
    public func receive(fromHost packets: some Collection<HCIPacket>) {
        air.mutate { w in
            for packet in packets {
                guard w.controllers.withValue(forKey: id, { $0.removed }) == false else { return }
                switch packet {
                case .command(let command): w.command(id, command)
                case .acl(let acl): w.hostACL(from: id, acl)
                case .event, .other: break
                }
            }
        }
    }

    /// Where the controller is; moving it re-evaluates its links (out of range: supervision timeout).
    public var position: Position {
        get { air.world.withLock { $0.controllers[id]?.position ?? Position() } }
        set { air.mutate { w in w.controllers[id]?.position = newValue; w.reevaluateLinks() } }
    }

    /// Transmit power in dBm; changing it re-evaluates its links like a move does.
    public var txPower: Int8 {
        get { air.world.withLock { $0.controllers[id]?.txPower ?? 0 } }
        set { air.mutate { w in w.controllers[id]?.txPower = newValue; w.reevaluateLinks() } }
    }

    /// Whether the controller is advertising (its host enabled it and no connection or timeout has ended it).
    public var isAdvertising: Bool { air.world.withLock { $0.controllers[id]?.advertising.isAny ?? false } }

    /// The handles of the advertising sets that are enabled (extended advertising), in order.
    public var enabledAdvertisingSets: [UInt8] {
        air.world.withLock { w in (w.controllers[id]?.advertising.sets.filter { $0.value.isEnabled }.keys).map { $0.sorted() } ?? [] }
    }

    /// How many advertising reports (one per LE Advertising Report event) the controller has sent its host so far.
    /// On a manual-clock air, a test that advanced time reads exactly this many reports from its host before the
    /// next step, which keeps a scanning host in lockstep with simulated time.
    public var advertisingReportCount: Int { air.world.withLock { $0.controllers[id]?.scanning.reportCount ?? 0 } }
    /// Whether the controller is scanning.
    public var isScanning: Bool { air.world.withLock { $0.controllers[id]?.scanning.isEnabled ?? false } }

    /// The host vanished: the controller leaves the air. Its advertising, scanning and connection attempt stop;
    /// its links are lost without a word, so each peer gets Disconnection Complete with Connection Timeout (0x08)
    /// once the link's supervision timeout has run out. Its host output ends (``toHost`` finishes).
    public func remove() {
        air.mutate { w in
            w.controllers[id]?.removed = true
            w.controllers[id]?.advertising.isEnabled = false
            w.controllers[id]?.scanning.isEnabled = false
            w.controllers[id]?.initiating.connection = nil
            w.controllers[id]?.initiating.extendedConnection = nil
            w.controllers[id]?.advertising.sets = [:]
            w.listenerCache = nil
            w.forgetLinks(of: id)
        }
        sink.finish()
    }

    /// Sends a Hardware Error event to the host (fault injection).
    public func injectHardwareError(code: UInt8) {
        air.mutate { w in _ = w.emit(id, HCIHardwareErrorEvent(hardwareCode: code).packet) }
    }

    /// The number of links this controller has up.
    public var connectionCount: Int { air.world.withLock { $0.handlesInUse(by: id).count } }

    /// A host-side transport connected to this controller (in-process).
    public func makeHostTransport() -> any HCITransport { VirtualHostTransport(controller: self) }

    /// Connects this controller to a host through `transport` (for example one accepted by ``H4TCPServer``):
    /// returns when either side ends, then removes the controller from the air.
    ///
    /// A ``FileDescriptorTransport`` that has not started reading (one accepted by an ``H4TCPServer`` made with
    /// `startReading: false`, as `ble controller` does) is served on its reader thread: each read's packets are
    /// handled there and what they cause — the peer's data, this host's Number Of Completed Packets — is written at
    /// once, from that thread, in one write per host; no task is woken on the way.
    public func attach(_ transport: any HCITransport) async {
        if let descriptor = transport as? FileDescriptorTransport, await attachOnReaderThread(descriptor) { return }
        // Packets for the host are written in batches: whatever gathered while the last write went out goes in one
        // call (one system call on a socket). Batching starts before the host's first packet is read, so that the
        // answer to it (HCI Reset's Command Complete) goes to this writer.
        let wakes = sink.startBatching()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [self] in
                do {
                    for try await packet in transport.incoming { receive(fromHost: packet) }
                } catch {}
            }
            group.addTask { [self] in
                for await _ in wakes {
                    let batch = sink.takeBatch()
                    guard !batch.isEmpty else { continue }
                    do { try await transport.send(batch) } catch { break }
                }
            }
            await group.next()
            remove()
            await transport.close()
            group.cancelAll()
        }
    }
}

extension VirtualController {
    /// ``attach(_:)`` for a descriptor transport not yet reading: `false` (nothing done) when it already reads.
    private func attachOnReaderThread(_ transport: FileDescriptorTransport) async -> Bool {
        let wakes = sink.startBatching(byReaders: true)
        sink.writer.withLock { $0 = { packets in try transport.sendNow(packets) } }
        let (ended, end) = AsyncStream.makeStream(of: Void.self)
        let air = air
        let started = transport.startReading { [self] inbound in
            switch inbound {
            case .packets(let packets):
                air.handleOnReaderThread { for packet in packets { receive(fromHost: packet) } }
            case .finished:
                end.finish()
            }
        }
        guard started else {
            sink.writer.withLock { $0 = nil }
            return false
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await _ in ended {}
            }
            // What the air sends by itself (advertising reports, timeouts, the peer's data handled on the peer's
            // thread when it could not flush) is written by this task when it wakes.
            group.addTask { [self] in
                for await _ in wakes {
                    guard sink.flush() else { break }
                }
            }
            await group.next()
            remove()
            await transport.close()
            group.cancelAll()
        }
        return true
    }
}

/// The in-process host side of a virtual controller.
final class VirtualHostTransport: HCIPacketInboxProviding {
    let controller: VirtualController
    let closed = Atomic<Bool>(false)
    let incoming: AsyncThrowingStream<HCIPacket, any Error>
    private let incomingContinuation: AsyncThrowingStream<HCIPacket, any Error>.Continuation
    private let pump: Task<Void, Never>?

    /// The air's clock for a manual-clock air (the host's timers then run on simulated time), the wall clock otherwise.
    var clock: any TransportClock { controller.air.transportClock }

    init(controller: VirtualController) {
        self.controller = controller
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: HCIPacket.self, throwing: (any Error).self)
        incoming = stream
        incomingContinuation = continuation
        if controller.sink.mode == .stream {
            // Packets for the host go straight into this transport's stream (no relay task). A controller sends
            // nothing before its host's first command, so nothing waits in its own stream yet.
            controller.sink.direct.withLock { direct in
                direct = .stream(continuation)
            }
            pump = nil
        } else {
            // The pump holds the stream, not the controller, so an abandoned transport does not keep the air alive.
            let output = controller.toHost
            pump = Task {
                for await packet in output { continuation.yield(packet) }
                continuation.finish()
            }
        }
    }

    /// Packets for the host go straight into an inbox the host drains in batches (no stream); `incoming` finishes.
    /// Only for a controller that streams to its host and has sent nothing yet.
    func takeInbox() -> HCIPacketInbox? {
        guard pump == nil else { return nil }
        let inbox = HCIPacketInbox()
        let taken = controller.sink.direct.withLock { direct -> Bool in
            guard case .stream = direct else { return false }
            direct = .inbox(inbox)
            return true
        }
        guard taken else { return nil }
        incomingContinuation.finish()
        if closed.load(ordering: .acquiring) { inbox.finish() }
        return inbox
    }

    func send(_ packet: HCIPacket) async throws {
        guard !closed.load(ordering: .acquiring) else { throw TransportError(.closed, "virtual controller transport closed") }
        controller.receive(fromHost: packet)
    }

    func send(_ packets: [HCIPacket]) async throws {
        guard !closed.load(ordering: .acquiring) else { throw TransportError(.closed, "virtual controller transport closed") }
        controller.receive(fromHost: packets)
    }

    func close() async {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        controller.remove()
    }
}
