import BLE
import BLEGateway
import BLEHost
import BLETransport
import BLEVirtualController
import BLEWire
import ESPHomeAPI
import Foundation
import MQTT
import Synchronization

/// The advertisement path (issue 38), from LE Advertising Report bytes to what each consumer makes of them:
/// (a) ``Central/scan`` elements, (b) a running ``Gateway``'s device table and MQTT PUBLISH bytes (to a real broker),
/// (c) the proxy's raw-advertisement batches (``ESPHomeAPIServerSession`` frames).
///
/// The reports are injected into the host's inbox as a controller would send them (one LE Advertising Report per
/// event, `chunk` events per wake-up), behind a virtual controller that does the host's bring-up and answers its
/// scan commands. The devices are those of `ble controller --advertisers`: iBeacons from `00:5C:00:00:NN:NN`, minor =
/// the device's number. A `changing` fraction of the reports carry data that differs from the device's previous
/// report (the iBeacon's major counts up); the rest repeat it. The RSSI varies from report to report.
enum AdvertisementBenchmarks {
    /// What one run sends.
    struct Workload: CustomStringConvertible {
        var devices: Int
        /// Of every 100 reports, how many carry changed data.
        var changingPercent: Int
        var chunk: Int
        /// The gateway's presence views: at most one per device per this many seconds (a clock drives them, not the
        /// advertisements: adv-count sets an hour, so that a run's length, which valgrind stretches, does not count).
        var viewInterval: Int

        var description: String {
            "devices \(devices) changing \(changingPercent)% chunk \(chunk) legacy-reports 1/event gateway-views 1/\(viewInterval)s"
        }

        static let uuid = (BluetoothUUID("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0") ?? 0).bigEndianBytes

        /// The advertising data of device `index` at `major`.
        static func beacon(index: Int, major: UInt16) -> [UInt8] {
            var data: [UInt8] = [0x02, 0x01, 0x06, 0x1A, 0xFF, 0x4C, 0x00, 0x02, 0x15]
            data += uuid
            data += [UInt8(major >> 8), UInt8(major & 0xFF), UInt8(index >> 8 & 0xFF), UInt8(index & 0xFF), 0xD8]
            return data
        }

        /// Report `n` of the run as an LE Advertising Report event (ADV_NONCONN_IND, public address).
        func event(_ n: Int, majors: inout [UInt16]) -> HCIPacket {
            let index = n % devices
            // Spread the changes evenly: report n changes when floor(n * p / 100) moves.
            if (n * changingPercent) / 100 != ((n + 1) * changingPercent) / 100 { majors[index] &+= 1 }
            let data = Self.beacon(index: index, major: majors[index])
            let address = BluetoothAddress(0x005C_0000_0000 | UInt64(index + 1))
            var parameters: [UInt8] = [0x02, 1, 0x03, 0x00]   // subevent, reports, ADV_NONCONN_IND, public
            parameters += address.bytes.reversed()
            parameters.append(UInt8(data.count))
            parameters += data
            parameters.append(UInt8(bitPattern: Int8(-40 - Int8(n % 23))))
            return .event(HCIEventPacket(code: .leMeta, parameters: parameters))
        }

        /// The events of the whole run, made before it starts (their making is not the path's cost).
        func events(_ total: Int) -> [HCIPacket] {
            var majors = [UInt16](repeating: 1, count: devices)
            return (0..<total).map { event($0, majors: &majors) }
        }
    }

    /// A host transport that is the virtual controller's, except that its packets reach the host through an inbox of
    /// its own, into which the benchmark also puts LE Advertising Reports.
    final class InjectingTransport: HCIPacketInboxProviding {
        let inner: any HCITransport
        let inbox = HCIPacketInbox()
        private let pump: Task<Void, Never>

        init(_ inner: any HCITransport & HCIPacketInboxProviding) {
            self.inner = inner
            let source = inner.takeInbox()
            let inbox = inbox
            pump = Task {
                guard let source else { return }
                while let batch = try? await source.next() { inbox.yield(contentsOf: batch) }
                inbox.finish()
            }
        }

        var incoming: AsyncThrowingStream<HCIPacket, any Error> { AsyncThrowingStream { $0.finish() } }
        func takeInbox() -> HCIPacketInbox? { inbox }
        func send(_ packet: HCIPacket) async throws { try await inner.send(packet) }
        func send(_ packets: [HCIPacket]) async throws { try await inner.send(packets) }
        func close() async {
            await inner.close()
            inbox.finish()
        }
    }

    /// Counts what a consumer took, and lets the injector wait for it: a lock, not an actor, so that counting costs
    /// the consumer no hop (the path's figures would carry it).
    final class Counter: Sendable {
        private struct State {
            var count = 0
            var waiter: (target: Int, continuation: CheckedContinuation<Void, Never>)?
        }
        private let state = Mutex(State())

        var count: Int { state.withLock { $0.count } }

        func add(_ n: Int = 1) {
            let ready = state.withLock { s -> CheckedContinuation<Void, Never>? in
                s.count += n
                guard let w = s.waiter, s.count >= w.target else { return nil }
                s.waiter = nil
                return w.continuation
            }
            ready?.resume()
        }

        func wait(for target: Int) async {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { s -> Bool in
                    guard s.count < target else { return true }
                    s.waiter = (target, continuation)
                    return false
                }
                if ready { continuation.resume() }
            }
        }
    }

    /// The central on an injecting transport.
    static func central() async throws -> (VirtualAir, InjectingTransport, Central) {
        let air = VirtualAir(clock: .realTime)
        guard let inner = air.addController(.init()).makeHostTransport() as? any HCITransport & HCIPacketInboxProviding else {
            throw BenchmarkFailure("the virtual controller's transport has no inbox")
        }
        let transport = InjectingTransport(inner)
        let central = try await Central(transport: transport)
        return (air, transport, central)
    }

    struct BenchmarkFailure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// Injects `events` `chunk` at a time, each chunk once the consumer took the one before it (`consumed` counts
    /// reports taken, `perReport` of them for each report).
    static func inject(_ events: [HCIPacket], into transport: InjectingTransport, chunk: Int, counter: Counter) async {
        var sent = 0
        let base = counter.count
        while sent < events.count {
            let end = min(events.count, sent + chunk)
            transport.inbox.yield(contentsOf: Array(events[sent..<end]))
            sent = end
            await counter.wait(for: base + sent)
        }
    }

    /// The process's CPU time (all threads) and the monotonic clock, in nanoseconds.
    static func clocks() -> (cpu: Double, wall: Double) {
        var cpu = timespec(), wall = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu)
        clock_gettime(CLOCK_MONOTONIC, &wall)
        return (Double(cpu.tv_sec) * 1e9 + Double(cpu.tv_nsec), Double(wall.tv_sec) * 1e9 + Double(wall.tv_nsec))
    }

    /// Injects the warm-up reports, then the measured ones (timed when asked); `drain` waits for what the consumer
    /// does after it counted (the gateway's PUBLISH acknowledgements).
    static func run(warm: [HCIPacket], events: [HCIPacket], transport: InjectingTransport, chunk: Int, counter: Counter,
                    timed: Bool, devices: Int, changing: Int, drain: () async -> Void = {}) async {
        await inject(warm, into: transport, chunk: chunk, counter: counter)
        await drain()
        let start = clocks()
        await inject(events, into: transport, chunk: chunk, counter: counter)
        await drain()
        let end = clocks()
        guard timed else { return }
        let n = Double(events.count)
        print(String(format: "  %.0f ns of CPU (all threads) and %.0f ns of wall-clock time per advertisement", (end.cpu - start.cpu) / n,
                     (end.wall - start.wall) / n))
        print(String(format: "OURS_ADV_CPU_NS=%.1f", (end.cpu - start.cpu) / n))
        print("OURS_ADV_CPU_NS_PARAMS=devices \(devices) changing \(changing)% chunk \(chunk)")
    }

    /// `BLEBenchmarks --only adv-count N --layer scan|gateway|proxy [--devices D] [--changing P] [--chunk C]
    /// [--broker PORT]`: N reports through one layer, untimed (for callgrind).
    ///
    /// Every device is heard once first (its first record made), then the N reports go; with `timed`, the process's
    /// CPU time (every thread: host, consumer, NIO, the injector) and the wall-clock time of those N are printed.
    static func runCounted(_ total: Int, layer: String, workload: Workload, brokerPort: Int, timed: Bool = false) async throws {
        let all = workload.events(workload.devices + total)
        let warm = Array(all[..<workload.devices])
        let events = Array(all[workload.devices...])
        let (air, transport, central) = try await central()
        let counter = Counter()
        switch layer {
        case "scan":
            let results = try await central.scan(allowDuplicates: true, bufferingLimit: 4096)
            let consumer = Task {
                for try await element in results {
                    blackHole(element)
                    counter.add()
                }
            }
            await run(warm: warm, events: events, transport: transport, chunk: workload.chunk, counter: counter, timed: timed,
                      devices: workload.devices, changing: workload.changingPercent)
            consumer.cancel()
        case "gateway":
            // A prefix of this process's own: the presence decisions are retained, and an earlier run's, sent to
            // this one as it subscribes, would make its work differ from the other run's it is compared with.
            let prefix = "bench-\(ProcessInfo.processInfo.processIdentifier)"
            let configuration = Gateway.Configuration(topics: GatewayTopics(prefix: prefix, gatewayID: "bench"),
                                                      broker: MQTTBrokerAddress(host: "127.0.0.1", port: brokerPort),
                                                      interval: .seconds(3600), presence: .init(viewInterval: .seconds(workload.viewInterval), viewRefresh: .seconds(workload.viewInterval)),
                                                      connect: .none, reportsPublications: false)
            let gateway = Gateway(central: central, configuration: configuration)
            let running = Task { try await gateway.run() }
            var brokerUp = false
            for await event in gateway.events {
                if case .brokerConnected = event { brokerUp = true; break }
            }
            guard brokerUp else { throw BenchmarkFailure("no broker on 127.0.0.1:\(brokerPort)") }
            while await !central.isScanning { try await Task.sleep(for: .milliseconds(5)) }
            // The gateway counts what it heard; the injector waits on that count.
            let last = Mutex<UInt64>(0)
            await gateway.observeAdvertisements { heard in
                let new = last.withLock { last -> UInt64 in
                    defer { last = heard }
                    return heard - last
                }
                counter.add(Int(new))
            }
            // Everything gathered handed to the client, every PUBLISH to the broker and acknowledged, and the broker's echoes of the presence decisions
            // (the gateway subscribes to every decision, its own included) read: otherwise how many of the warm-up's
            // thousand echoes a run reads depends on its timing, which valgrind stretches.
            await run(warm: warm, events: events, transport: transport, chunk: workload.chunk, counter: counter, timed: timed,
                      devices: workload.devices, changing: workload.changingPercent) {
                while true {
                    let gathered = await gateway.gatheredCount, backlog = await gateway.client.backlog
                    let decisions = await gateway.presenceDecisions
                    if gathered == 0, backlog.queued + backlog.inFlight == 0, decisions.received >= decisions.published { break }
                    try? await Task.sleep(for: .milliseconds(1))
                }
            }
            print("  gateway: \(await gateway.readings) records published for \(await gateway.advertisements) advertisements")
            await gateway.shutdown()
            running.cancel()
            _ = await running.result
        case "proxy":
            let proxy = try ProxyStandIn()
            let reports = try await central.advertisementReportBatches(active: false, continuous: true)
            let consumer = Task {
                for try await batch in reports {
                    await proxy.forward(batch)
                    counter.add(batch.count)
                }
            }
            await run(warm: warm, events: events, transport: transport, chunk: workload.chunk, counter: counter, timed: timed,
                      devices: workload.devices, changing: workload.changingPercent)
            consumer.cancel()
            print("  proxy: \(await proxy.client.frames) frames, \(await proxy.client.bytes) bytes")
        default:
            throw BenchmarkFailure("--layer scan, gateway or proxy")
        }
        print("OURS_ADV_COUNT=\(counter.count - workload.devices)")
        print("OURS_ADV_COUNT_PARAMS=layer \(layer) \(workload)")
        await central.powerOff()
        air.shutdown()
    }

    /// What `ble proxy` does with each report (`BluetoothProxy.forward` in Sources/ble/ProxyCommand.swift, which
    /// this module cannot import), to one API client: a session machine behind an actor, as `ESPHomeAPIConnection` is,
    /// whose frames are counted instead of written to a socket. Plaintext (no Noise encryption).
    actor ProxyStandIn {
        actor Client {
            var session: ESPHomeAPIServerSession
            private(set) var frames = 0
            private(set) var bytes = 0

            init() throws {
                let info = DeviceInfoResponse(name: "bench-proxy", macAddress: "AA:BB:CC:DD:EE:FF", bluetoothProxyFeatureFlags: 0x7F,
                                              bluetoothMACAddress: "AA:BB:CC:DD:EE:FF", apiEncryptionSupported: false)
                session = try ESPHomeAPIServerSession(.init(name: "bench-proxy", macAddress: "AA:BB:CC:DD:EE:FF", deviceInfo: info,
                                                            encryptionKey: nil), ephemeralKey: [UInt8](repeating: 7, count: 32), now: .zero)
                _ = session.received(ESPHomeAPIPlaintextFraming.encode(ESPHomeAPIFrame(HelloRequest(clientInfo: "bench")))
                                     + ESPHomeAPIPlaintextFraming.encode(ESPHomeAPIFrame(SubscribeBluetoothLEAdvertisementsRequest(flags: 1))),
                                     now: .zero)
            }

            func advertise(_ advertisements: [BluetoothLERawAdvertisement]) {
                for case .send(let out) in session.advertise(advertisements, now: .seconds(1)) {
                    frames += 1
                    bytes += out.count
                }
            }
        }

        let client: Client
        private var addressTypes: [UInt64: LEAddressType] = [:]

        init() throws { client = try Client() }

        func forward(_ reports: [AdvertisementReport]) async {
            var advertisements: [BluetoothLERawAdvertisement] = []
            advertisements.reserveCapacity(reports.count)
            for report in reports {
                let number = report.address.address.uint64
                let type: LEAddressType = report.address.type.isRandom ? .random : .public
                if addressTypes[number] != type {
                    if addressTypes.count >= 8192 { addressTypes.removeAll(keepingCapacity: true) }
                    addressTypes[number] = type
                }
                advertisements.append(BluetoothLERawAdvertisement(address: number, rssi: Int32(report.rssi),
                                                                  addressType: type == .random ? 1 : 0, data: report.rawData))
            }
            await client.advertise(advertisements)
        }
    }
}
