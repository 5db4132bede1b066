// Benchmarks: `swift run -c release BLEBenchmarks`. Figures are printed, never asserted.
import enum BLE.SampleDevice
import BLEHost
import BLEProtocols
import BLETransport
import BLEVirtualController
import BLEWire
import Foundation

/// Runs `body` `iterations` times after a warm-up and returns nanoseconds per iteration (best of `rounds`).
func measure(iterations: Int, rounds: Int = 5, _ body: () -> Void) -> Double {
    for _ in 0..<max(1, iterations / 10) { body() }
    var best = Double.infinity
    let clock = ContinuousClock()
    for _ in 0..<rounds {
        let elapsed = clock.measure { for _ in 0..<iterations { body() } }
        let (s, a) = elapsed.components
        best = min(best, (Double(s) * 1e9 + Double(a) / 1e9) / Double(iterations))
    }
    return best
}

@inline(never) func blackHole<T>(_ value: T) { withExtendedLifetime(value) {} }

// `BLEBenchmarks --only tcp HOST:PORT HOST:PORT`: notifications between two hosts over H4/TCP.
if let tcp = CommandLine.arguments.firstIndex(of: "tcp") {
    print("== GATT notifications between two hosts over H4/TCP (MTU 247, 244-byte payloads)")
    try await GATTBenchmarks.runOverTCP(Array(CommandLine.arguments[(tcp + 1)...]))
    exit(0)
}

// `BLEBenchmarks --only discovery HOST:PORT NAME`: full discovery of a device over H4/TCP.
if let discovery = CommandLine.arguments.firstIndex(of: "discovery") {
    print("== Full discovery (MTU 247) of the device advertising \(CommandLine.arguments.dropFirst(discovery + 2).first ?? "?") over H4/TCP")
    try await GATTBenchmarks.discoveryOverTCP(Array(CommandLine.arguments[(discovery + 1)...]))
    exit(0)
}

/// The integer after `flag` on the command line (`--acl-size 27`), or `otherwise`.
func option(_ flag: String, otherwise: Int) -> Int {
    guard let at = CommandLine.arguments.firstIndex(of: flag), at + 1 < CommandLine.arguments.count,
          let value = Int(CommandLine.arguments[at + 1]) else { return otherwise }
    return value
}

// `BLEBenchmarks --only notify-count N [--acl-size N] [--acl-count N]`: N notifications, untimed (for callgrind).
if let counted = CommandLine.arguments.firstIndex(of: "notify-count") {
    let total = counted + 1 < CommandLine.arguments.count ? Int(CommandLine.arguments[counted + 1]) ?? 1_000 : 1_000
    try await GATTBenchmarks.runCounted(total, aclSize: option("--acl-size", otherwise: 251), aclCount: option("--acl-count", otherwise: 8))
    exit(0)
}

// `BLEBenchmarks --only adv-count N --layer scan|gateway|proxy [--devices D] [--changing P] [--chunk C] [--broker PORT]
// [--view-interval S]`:
// N advertising reports through one consumer of the advertisement path, untimed (for callgrind).
// `adv-time` is the same with the process's CPU time per advertisement printed (scripts/bench's like-for-like row).
if let counted = CommandLine.arguments.firstIndex(where: { $0 == "adv-count" || $0 == "adv-time" }) {
    let total = counted + 1 < CommandLine.arguments.count ? Int(CommandLine.arguments[counted + 1]) ?? 1_000 : 1_000
    let layer = CommandLine.arguments.firstIndex(of: "--layer").flatMap { $0 + 1 < CommandLine.arguments.count ? CommandLine.arguments[$0 + 1] : nil } ?? "scan"
    let workload = AdvertisementBenchmarks.Workload(devices: max(1, option("--devices", otherwise: 1_000)),
                                                    changingPercent: max(0, min(100, option("--changing", otherwise: 10))),
                                                    chunk: max(1, option("--chunk", otherwise: 16)),
                                                    viewInterval: max(1, option("--view-interval",
                                                                                otherwise: CommandLine.arguments[counted] == "adv-time" ? 1 : 3600)))
    try await AdvertisementBenchmarks.runCounted(total, layer: layer, workload: workload, brokerPort: option("--broker", otherwise: 1883),
                                                 timed: CommandLine.arguments[counted] == "adv-time")
    exit(0)
}

// `BLEBenchmarks --only notify [--acl-size N] [--acl-count N]`: notifications in process (251 x 8 buffers unless told).
if CommandLine.arguments.contains("notify") {
    print("== GATT notifications between two hosts on the in-process virtual controller (MTU 247, 244-byte payloads)")
    try await GATTBenchmarks.runInProcess(aclSize: option("--acl-size", otherwise: 251), aclCount: option("--acl-count", otherwise: 8))
    exit(0)
}

// `BLEBenchmarks --only memory`: one peripheral and 16 centrals in one process (run alone: a fresh process).
if CommandLine.arguments.contains("memory") {
    print("== Memory: one peripheral host and 16 central hosts on the in-process virtual controller")
    try await MemoryBenchmarks.run()
    exit(0)
}

// `BLEBenchmarks --only airtime`: only the air-time model's benchmark.
if CommandLine.arguments.contains("airtime") {
    print("== Two hosts on the virtual air with the air-time model (AirTimeModel)")
    try await AirTimeBenchmarks.run()
    exit(0)
}

// `BLEBenchmarks --only eatt`: concurrent reads over one ATT bearer and over three (EATT), on the air-time model.
if CommandLine.arguments.contains("eatt") {
    print("== Enhanced ATT: concurrent reads over one bearer and over three, on the air-time model")
    try await EATTBenchmarks.run()
    exit(0)
}

// MARK: Advertising data: the corpus, in place and owned

/// `Benchmarks/advertisements.txt` (run from the package root, as scripts/bench does).
let corpus: [[UInt8]] = ((try? String(contentsOfFile: "Benchmarks/advertisements.txt", encoding: .utf8)) ?? "")
    .split(separator: "\n").compactMap { line in
        guard !line.hasPrefix("#"), let bar = line.firstIndex(of: "|") else { return nil }
        return [UInt8](hex: line[line.index(after: bar)...].trimmingCharacters(in: .whitespaces)) ?? []
    }

/// Nanoseconds per advertisement over the corpus: `rounds` timings of `passes` passes, as (median, min, max).
func corpusTimings(rounds: Int = 9, passes: Int = 2_000, _ body: ([UInt8]) -> Void) -> (Double, Double, Double) {
    for bytes in corpus { body(bytes) }
    let clock = ContinuousClock()
    var samples: [Double] = []
    for _ in 0..<rounds {
        let elapsed = clock.measure { for _ in 0..<passes { for bytes in corpus { body(bytes) } } }
        let (s, a) = elapsed.components
        samples.append((Double(s) * 1e9 + Double(a) / 1e9) / Double(passes * corpus.count))
    }
    samples.sort()
    return (samples[samples.count / 2], samples[0], samples[samples.count - 1])
}

/// The same fields read by a hand-written pass over the raw bytes with no API at all — no view, no validation beyond
/// the chain, no deduplication: how fast this work can go on this machine, to put the API's figure beside.
@inline(__always) func handWrittenPass(_ bytes: [UInt8]) {
    bytes.withUnsafeBufferPointer { p in
        var i = 0
        var name: Range<Int>?
        var complete = false
        var tx: Int8?
        while i < p.count {
            let length = Int(p[i])
            if length == 0 { break }
            guard p.count - i - 1 >= length else { return }
            let type = p[i + 1]
            let payload = (i + 2)..<(i + 1 + length)
            switch type {
            case 0x09: name = payload; complete = true
            case 0x08: if !complete { name = payload }
            case 0x0A: if length == 2 { tx = Int8(bitPattern: p[i + 2]) }
            case 0x02, 0x03:
                var a = payload.lowerBound
                while a + 2 <= payload.upperBound { blackHole(BluetoothUUID(UInt16(p[a]) | UInt16(p[a + 1]) << 8)); a += 2 }
            case 0x06, 0x07:
                var a = payload.lowerBound
                while a + 16 <= payload.upperBound {
                    let raw = UnsafeRawBufferPointer(p)
                    blackHole((raw.loadUnaligned(fromByteOffset: a, as: UInt64.self), raw.loadUnaligned(fromByteOffset: a + 8, as: UInt64.self)))
                    a += 16
                }
            case 0x16:
                if length >= 3 { blackHole(BluetoothUUID(UInt16(p[i + 2]) | UInt16(p[i + 3]) << 8)); blackHole(payload.count - 2) }
            case 0xFF:
                if length >= 3 { blackHole(UInt16(p[i + 2]) | UInt16(p[i + 3]) << 8); blackHole(payload.count - 2) }
            default: break
            }
            i += 1 + length
        }
        if let name { blackHole(String(decoding: UnsafeBufferPointer(rebasing: p[name]), as: UTF8.self)) }
        blackHole(tx)
    }
}

if !corpus.isEmpty {
    print("== Advertising data over the corpus (Benchmarks/advertisements.txt, \(corpus.count) advertisements): the fields "
          + "bluetooth-data-tools returns (local name as a String, service UUIDs, service data, manufacturer data, TX power)")
    let view = corpusTimings { bytes in
        guard let ad = try? AdvertisingDataView(bytes) else { return }
        blackHole(ad.localName)
        try? ad.forEachServiceUUID { blackHole($0) }
        try? ad.forEachServiceData { uuid, data in blackHole(uuid); blackHole(data.count) }
        try? ad.forEachManufacturerData { company, data in blackHole(company); blackHole(data.count) }
        blackHole(try? ad.txPowerLevel())
    }
    let sequences = corpusTimings { bytes in
        guard let ad = try? AdvertisingDataView(bytes) else { return }
        blackHole(ad.localName)
        if let uuids = try? ad.serviceUUIDs() { for uuid in uuids { blackHole(uuid) } }
        if let data = try? ad.serviceData() { for entry in data { blackHole(entry) } }
        if let data = try? ad.manufacturerData() { for entry in data { blackHole(entry) } }
        blackHole(try? ad.txPowerLevel())
    }
    let onePass = corpusTimings { bytes in
        guard let (name, tx) = try? AdvertisingDataFields.read(bytes, serviceUUID: { blackHole($0) },
                                                              serviceData: { uuid, data in blackHole(uuid); blackHole(data.count) },
                                                              manufacturerData: { company, data in blackHole(company); blackHole(data.count) })
        else { return }
        blackHole(name)
        blackHole(tx)
    }
    let floor = corpusTimings { bytes in handWrittenPass(bytes) }
    let model = corpusTimings { bytes in
        guard let ad = try? AdvertisingData(bytes: bytes) else { return }
        blackHole(ad.localName)
        blackHole(try? ad.serviceUUIDs())
        blackHole(try? ad.serviceData())
        blackHole(try? ad.manufacturerData())
        blackHole(try? ad.txPowerLevel())
    }
    print(String(format: "  AdvertisingDataFields, one pass  median %7.1f ns/advertisement (spread %.1f–%.1f, 9 runs)", onePass.0, onePass.1, onePass.2))
    print(String(format: "  AdvertisingDataView, visitors    median %7.1f ns/advertisement (spread %.1f–%.1f, 9 runs)", view.0, view.1, view.2))
    print(String(format: "  AdvertisingDataView, sequences   median %7.1f ns/advertisement (spread %.1f–%.1f, 9 runs)", sequences.0, sequences.1, sequences.2))
    print(String(format: "  AdvertisingData (owning model)   median %7.1f ns/advertisement (spread %.1f–%.1f, 9 runs)", model.0, model.1, model.2))
    print(String(format: "  hand-written pass, no API        median %7.1f ns/advertisement (spread %.1f–%.1f, 9 runs): the floor", floor.0, floor.1, floor.2))
    print(String(format: "OURS_AD_ONE_PASS_NS=%.2f", onePass.0))
    print(String(format: "OURS_AD_VIEW_NS=%.2f", view.0))
    print(String(format: "OURS_AD_FLOOR_NS=%.2f", floor.0))
}
// `BLEBenchmarks --only advertising`: stop after the corpus (for profiling the parsers).
if CommandLine.arguments.contains("advertising") { exit(0) }

// MARK: Advertising data parsing

let payloads: [(String, [UInt8])] = [
    ("iBeacon", [UInt8](hex: "020106 1aff4c000215 e2c56db5dffb48d2b060d0f5a71096e0 0001 0002 c5") ?? []),
    ("heart rate sensor", [UInt8](hex: "020106 05030d180f18 0d09 506f6c617220483130203132") ?? []),
    ("128-bit service + name", [UInt8](hex: "020106 1107f0debc9a785634127856341278563412 0509 4c45444c") ?? []),
    ("Eddystone URL", [UInt8](hex: "020106 0303aafe 1116aafe 10ee 03 676f6f676c65 07") ?? []),
    ("manufacturer + TX power", [UInt8](hex: "020106 020a08 0bff5900 0102030405060708 0309 4142") ?? []),
]

print("== Advertising data parse (decode + name + service UUIDs + manufacturer data + service data)")
var totalNanos = 0.0
for (name, bytes) in payloads {
    let ns = measure(iterations: 200_000) {
        guard let ad = try? AdvertisingData(bytes: bytes) else { return }
        blackHole(ad.localName)
        blackHole(try? ad.serviceUUIDs())
        blackHole(try? ad.manufacturerData())
        blackHole(try? ad.serviceData())
    }
    totalNanos += ns
    let label = name.padding(toLength: 26, withPad: " ", startingAt: 0)
    print("  \(label) \(bytes.count) bytes  " + String(format: "%8.1f ns/advertisement", ns))
}
print("  " + "mean over the set".padding(toLength: 26, withPad: " ", startingAt: 0) + "           "
      + String(format: "%8.1f ns/advertisement", totalNanos / Double(payloads.count)))

// MARK: H4 deframing

/// What a central host reads over H4 while notifications stream in: 255-octet ACL packets (a 244-byte notification
/// in one 251-byte fragment) with a Number Of Completed Packets event after every eight, in 4 KB reads.
func deframingNanos() -> (perPacket: Double, megabytesPerSecond: Double) {
    var stream: [UInt8] = []
    for i in 0..<2_048 {
        let acl = HCIPacket.acl(HCIACLPacket(handle: ConnectionHandle(rawValue: 0x40), boundary: .firstFlushable,
                                             data: [247, 0, 4, 0, 0x1B, 0x03, 0x00] + [UInt8](repeating: UInt8(truncatingIfNeeded: i), count: 244)))
        stream += acl.h4Bytes
        if i % 8 == 7 {
            stream += HCIPacket.event(HCINumberOfCompletedPacketsEvent(entries: [.init(handle: ConnectionHandle(rawValue: 0x40), completedPackets: 8)]).packet).h4Bytes
        }
    }
    let packets = 2_048 + 256
    let reads = stride(from: 0, to: stream.count, by: 4_096).map { stream[$0..<min($0 + 4_096, stream.count)] }
    let nanos = measure(iterations: 50) {
        var deframer = H4Deframer()
        var n = 0
        for read in reads { n += deframer.push(read).count }
        blackHole(n)
    }
    return (nanos / Double(packets), Double(stream.count) / nanos * 1e3)
}

let deframing = deframingNanos()
print("== H4 deframing (255-octet ACL packets and a Number Of Completed Packets event every eight, read 4 KB at a time)")
print(String(format: "  %.0f ns/packet, %.0f MB/s", deframing.perPacket, deframing.megabytesPerSecond))

// MARK: Raw ACL throughput through the in-process virtual controller

/// Connects two buffered controllers on a manual-clock air and returns them with their handles.
func connectedPair(aclSize: Int, aclCount: Int) -> (VirtualAir, VirtualController, VirtualController, ConnectionHandle, ConnectionHandle)? {
    let air = VirtualAir(clock: .manual)
    let a = air.addController(.init(aclBufferSize: aclSize, aclBufferCount: aclCount), buffered: true)
    let b = air.addController(.init(position: Position(x: 1), aclBufferSize: aclSize, aclBufferCount: aclCount), buffered: true)
    for c in [a, b] { c.receive(fromHost: .command(HCISetEventMask(mask: 0x3FFF_FFFF_FFFF_FFFF).packet)) }
    b.receive(fromHost: .command(HCILESetAdvertisingEnable(isEnabled: true).packet))
    a.receive(fromHost: .command(HCILECreateConnection(peerAddressType: .public, peerAddress: b.address).packet))
    air.advance(by: .milliseconds(100))
    func handle(_ c: VirtualController) -> ConnectionHandle? {
        for case .event(let e) in c.drainToHost() {
            if case .le(.connectionComplete(let cc))? = try? HCIEvent(packet: e) { return cc.handle }
        }
        return nil
    }
    guard let ha = handle(a), let hb = handle(b) else { return nil }
    return (air, a, b, ha, hb)
}

print("== Raw ACL throughput through the in-process virtual controller (251-byte L2CAP frames, host flow control honoured)")
for (size, count) in [(27, 8), (251, 8)] {
    guard let (_, a, b, ha, _) = connectedPair(aclSize: size, aclCount: count) else {
        print("  could not connect")
        continue
    }
    let frame = L2CAPBasicFrame(channelID: .att, payload: Array(repeating: 0xA5, count: 247)).encoded   // 251 bytes
    let frames = 20_000
    var reassembler = L2CAPReassembler()
    var delivered = 0
    var credits = count
    let clock = ContinuousClock()
    let elapsed = clock.measure {
        for _ in 0..<frames {
            var offset = 0
            while offset < frame.count {
                if credits == 0 {
                    for case .event(let e) in a.drainToHost() {
                        if case .numberOfCompletedPackets(let n)? = try? HCIEvent(packet: e) {
                            credits += n.entries.reduce(0) { $0 + Int($1.completedPackets) }
                        }
                    }
                }
                let end = min(offset + size, frame.count)
                a.receive(fromHost: .acl(HCIACLPacket(handle: ha, boundary: offset == 0 ? .firstNonFlushable : .continuing,
                                                      data: Array(frame[offset..<end]))))
                credits -= 1
                offset = end
            }
            for case .acl(let p) in b.drainToHost() {
                if ((try? reassembler.append(isStart: p.boundary.isStart, data: p.data)) ?? nil) != nil {
                    delivered += 1
                }
            }
        }
    }
    let (s, at) = elapsed.components
    let seconds = Double(s) + Double(at) / 1e18
    let megabytes = Double(delivered * frame.count) / 1e6
    print(String(format: "  controller buffers %3d x %d: %6d frames delivered, %7.1f MB/s, %8.0f frames/s", size, count,
                 delivered, megabytes / seconds, Double(delivered) / seconds))
}

print("== GATT notifications between two hosts on the in-process virtual controller (MTU 247, 244-byte payloads)")
try await GATTBenchmarks.run()

print("== LE credit based channel (MPS 247, 16 credits returned as SDUs are consumed)")
try await L2CAPBenchmarks.run()

print("== ATT round trips for a full discovery (services, characteristics, descriptors) of the lab device (ble serve --device lab)")
let demoDevice = SampleDevice.lab.database(name: SampleDevice.lab.defaultName)
for exchange in [true, false] {
    for whole in [false, true] {
        let discovery = try await GATTBenchmarks.discoveryRoundTrips(demoDevice, whole: whole, exchangeMTU: exchange)
        let how = whole ? "whole database (discoverDatabase)" : "service by service"
        print("  MTU \(exchange ? "247" : " 23"), \(how.padding(toLength: 34, withPad: " ", startingAt: 0)): \(discovery.services) services, "
              + "\(discovery.characteristics) characteristics, \(discovery.descriptors) descriptors in \(discovery.requests) ATT round trips")
    }
}

print("== GATT caching: discovering the lab device with a GATTCache, then again after reconnecting (MTU 247)")
let caching = try await GATTBenchmarks.cachedDiscovery(demoDevice)
print("  fresh (Database Hash read + discovery + robust caching enabled): \(caching.fresh.requests) ATT round trips, "
      + "\(caching.freshTime.formatted(.units(allowed: [.milliseconds], fractionalPart: .show(length: 2)))) in process")
print("  cached reconnection (Database Hash unchanged): \(caching.cached.requests) ATT round trip\(caching.cached.requests == 1 ? "" : "s")"
      + "\(caching.cached.fromCache ? "" : " (NOT from the cache)"), "
      + "\(caching.cachedTime.formatted(.units(allowed: [.milliseconds], fractionalPart: .show(length: 2)))) in process")

print("== Pairing between two hosts on the in-process virtual controller (HCIHost.pair: Pairing Request to the last key)")
try await PairingBenchmarks.run()

print("== Two hosts on the virtual air with the air-time model (AirTimeModel)")
try await AirTimeBenchmarks.run()

print("== Enhanced ATT: concurrent reads over one bearer and over three, on the air-time model")
try await EATTBenchmarks.run()
