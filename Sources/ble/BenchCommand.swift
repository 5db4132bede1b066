import ArgumentParser
import BLE
import BLEFiles
import Foundation
import Logging

private let logger = Logger(label: "ble.bench")

/// `ble bench`: throughput and latency between two devices, like Bumble's bench app. One side serves the bench
/// service (`ble bench serve`), the other runs against it (`ble bench run TARGET`); `ble bench loopback` runs both in
/// one process on a virtual air, with the air-time model if asked.
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure throughput and latency between two devices (notifications, writes, writes with response, an L2CAP channel).",
        subcommands: [BenchServe.self, BenchRun.self, BenchLoopback.self])
}

/// The bench service and both of its ends.
enum Bench {
    static let service = BluetoothUUID("5B1E0000-BE7C-4C3A-9E2F-0B5E7C4A1B00") ?? 0
    /// Write `01 count(LE32) size(LE16)`: the server sends `count` notifications of `size` octets on ``data``;
    /// write `02`: it forgets what it was written so far.
    static let control = BluetoothUUID("5B1E0001-BE7C-4C3A-9E2F-0B5E7C4A1B00") ?? 0
    /// Notifies on demand; takes writes with and without response, which the server counts.
    static let data = BluetoothUUID("5B1E0002-BE7C-4C3A-9E2F-0B5E7C4A1B00") ?? 0
    /// Read: writes received (LE32), octets received (LE32), microseconds from the first to the last (LE64).
    static let stats = BluetoothUUID("5B1E0003-BE7C-4C3A-9E2F-0B5E7C4A1B00") ?? 0
    /// Read: the PSM of the bench's LE credit based channel (LE16). On the channel, SDUs starting with 0x00 are data
    /// (counted); `01 count(LE32)` announces how many follow, answered after the last by `02` and the counts as in
    /// ``stats``; `03 …` is echoed.
    static let psm = BluetoothUUID("5B1E0004-BE7C-4C3A-9E2F-0B5E7C4A1B00") ?? 0

    enum Mode: String, CaseIterable, ExpressibleByArgument, Sendable {
        case notify, write, request, l2cap
        /// Reads of the stats characteristic (16 octets, answered by the server's application), one at a time: the
        /// round trip of a read (not run unless asked).
        case read

        /// The modes run when none is named.
        static let standard: [Mode] = [.notify, .write, .request, .l2cap]
    }

    /// What the server counts of the writes it receives.
    actor Tally {
        var count = 0
        var bytes = 0
        var first: ContinuousClock.Instant?
        var last: ContinuousClock.Instant?

        func add(_ octets: Int) {
            let now = ContinuousClock.now
            count += 1
            bytes += octets
            if first == nil { first = now }
            last = now
        }

        func reset() { (count, bytes, first, last) = (0, 0, nil, nil) }

        var encoded: [UInt8] {
            let micros: UInt64
            if let first, let last {
                let (s, a) = (last - first).components
                micros = UInt64(max(0, s)) * 1_000_000 + UInt64(max(0, a)) / 1_000_000_000_000
            } else {
                micros = 0
            }
            var bytes: [UInt8] = []
            for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: count >> shift)) }
            for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: self.bytes >> shift)) }
            for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: micros >> UInt64(shift))) }
            return bytes
        }
    }

    /// Serves one bench channel: counts data SDUs, reports when the announced number has arrived, echoes pings.
    static func serve(_ channel: L2CAPChannel) async {
        let tally = Tally()
        var expected = -1
        for await sdu in channel.incoming {
            switch sdu.first {
            case 0x00:
                await tally.add(sdu.count)
                if await tally.count == expected { try? await channel.send([0x02] + (await tally.encoded)) }
            case 0x01 where sdu.count >= 5:
                await tally.reset()
                expected = Int(sdu[1]) | Int(sdu[2]) << 8 | Int(sdu[3]) << 16 | Int(sdu[4]) << 24
            case 0x03:
                try? await channel.send(sdu)
            default:
                break
            }
        }
    }

    /// Publishes the bench service on `manager`, advertises `name` and serves until the task is cancelled.
    static func serve(_ manager: PeripheralManager, name: String, json: Bool) async throws {
        let (psmValue, channels) = try await manager.publishL2CAPChannel()
        let channelServer = Task {
            await withDiscardingTaskGroup { group in
                for await channel in channels { group.addTask { await serve(channel) } }
            }
        }
        defer { channelServer.cancel() }
        _ = try await manager.add(GATTServiceDefinition(uuid: service, characteristics: [
            GATTCharacteristicDefinition(uuid: psm, properties: [.read], permissions: [.readable],
                                         value: [UInt8(truncatingIfNeeded: psmValue.rawValue), UInt8(truncatingIfNeeded: psmValue.rawValue >> 8)]),
            GATTCharacteristicDefinition(uuid: control, properties: [.write], permissions: [.writeable]),
            GATTCharacteristicDefinition(uuid: data, properties: [.notify, .write, .writeWithoutResponse], permissions: [.writeable]),
            GATTCharacteristicDefinition(uuid: stats, properties: [.read], permissions: [.readable], source: .application),
        ]))
        let tally = Tally()
        let reads = await manager.requests()
        let answering = Task {
            for await request in reads {
                if case .application(let asked) = request.kind { await asked.respond(with: await tally.encoded) }
            }
        }
        defer { answering.cancel() }
        let requests = await manager.requests()
        // Each central's link gets the longest link-layer packets this side may send (Data Length Extension), when
        // the controller has it; without it (a Core 4.1 controller) links keep 27-octet packets and nothing is asked.
        let centrals = await manager.centralEvents()
        let lengthens = await manager.adapter.capabilities.supports(.dataLengthExtension)
        if !lengthens { logger.debug("the controller lacks LE Data Length Extension: centrals' links keep 27-octet packets") }
        let lengthening = Task {
            for await event in centrals where lengthens {
                if case .connected(let central) = event { try? await manager.setDataLength(251, for: central) }
            }
        }
        defer { lengthening.cancel() }
        try await manager.startAdvertising(name: name, serviceUUIDs: [service], restartAfterConnection: true)
        emit(json, "bench service up as '\(name)'", ["event": "serving", "name": .string(name)])
        var senders: [Task<Void, Never>] = []
        defer { for sender in senders { sender.cancel() } }
        for await request in requests {
            guard case .write(let characteristic, _, let value, _) = request.kind else { continue }
            if characteristic == data {
                await tally.add(value.count)
            } else if characteristic == control, value.first == 0x02 {
                await tally.reset()
            } else if characteristic == control, value.count >= 7, value[0] == 0x01 {
                let count = Int(value[1]) | Int(value[2]) << 8 | Int(value[3]) << 16 | Int(value[4]) << 24
                let size = min(Int(value[5]) | Int(value[6]) << 8, await manager.maximumUpdateValueLength(for: request.central))
                let central = request.central
                senders.append(Task {
                    for index in 0..<count {
                        var payload = [UInt8](repeating: 0x5A, count: max(4, size))
                        for shift in 0..<4 { payload[shift] = UInt8(truncatingIfNeeded: index >> (8 * shift)) }
                        do {
                            try await manager.updateValue(payload, for: data, onSubscribedCentrals: [central])
                        } catch {
                            return
                        }
                    }
                })
            }
        }
    }

    /// The median (the upper one of an even count) and the 90th percentile of `latencies`; 0 when there are none.
    static func percentiles(_ latencies: [Double]) -> (median: Double, p90: Double) {
        let sorted = latencies.sorted()
        guard !sorted.isEmpty else { return (0, 0) }
        return (sorted[sorted.count / 2], sorted[min(sorted.count - 1, sorted.count * 9 / 10)])
    }

    static func seconds(_ d: Duration) -> Double {
        let (s, a) = d.components
        return Double(s) + Double(a) / 1e18
    }

    /// Runs `mode` against a peripheral serving the bench service and prints the figures.
    static func run(_ peripheral: RemotePeripheral, mode: Mode, count: Int, size: Int, json: Bool) async throws {
        guard let benchService = try await peripheral.discoverServices([service]).first else {
            throw CommandFailure.notFound("the device does not serve the bench service (run `ble bench serve` on it)")
        }
        let characteristics = try await peripheral.discoverCharacteristics(nil, for: benchService)
        if mode == .l2cap {
            guard let psmCharacteristic = characteristics.first(where: { $0.uuid == psm }) else {
                throw CommandFailure.notFound("the bench service has no L2CAP channel")
            }
            return try await runL2CAP(peripheral, psm: psmCharacteristic, count: count, size: size, json: json)
        }
        guard let controlCharacteristic = characteristics.first(where: { $0.uuid == control }),
              let dataCharacteristic = characteristics.first(where: { $0.uuid == data }),
              let statsCharacteristic = characteristics.first(where: { $0.uuid == stats }) else {
            throw CommandFailure.notFound("the bench service lacks a characteristic")
        }
        let connection = await peripheral.connection
        let link = "MTU \(await peripheral.mtu), \(connection.txPHY)/\(connection.rxPHY), \(connection.maxTxOctets)/\(connection.maxRxOctets)-octet packets"
        switch mode {
        case .notify:
            let size = min(size, await peripheral.mtu - 3)
            let values = try await peripheral.notifications(for: dataCharacteristic, bufferingLimit: count + 16)
            var request: [UInt8] = [0x01]
            for shift in 0..<4 { request.append(UInt8(truncatingIfNeeded: count >> (8 * shift))) }
            request += [UInt8(truncatingIfNeeded: size), UInt8(truncatingIfNeeded: size >> 8)]
            try await peripheral.writeValue(request, for: controlCharacteristic, type: .withResponse)
            var received = 0
            var first: ContinuousClock.Instant?
            var last = ContinuousClock.now
            var inOrder = true
            for await value in values {
                let index = value.prefix(4).enumerated().reduce(0) { $0 | Int($1.element) << (8 * $1.offset) }
                if index != received { inOrder = false }
                received += 1
                last = ContinuousClock.now
                if first == nil { first = last }
                if received == count { break }
            }
            try await peripheral.stopNotifications(for: dataCharacteristic)
            let span = seconds(last - (first ?? last))
            let kbps = span > 0 ? Double((received - 1) * size * 8) / span / 1000 : 0
            emit(json, String(format: "notify: %d of %d notifications of %d octets, %.0f kb/s (first to last: %.1f ms)%@; %@",
                              received, count, size, kbps, span * 1000, inOrder ? "" : ", OUT OF ORDER", link),
                 ["mode": "notify", "count": .int(received), "size": .int(size), "kbps": .number(kbps, decimals: 2),
                  "milliseconds": .number(span * 1000, decimals: 2), "inOrder": .bool(inOrder)])
        case .write:
            let size = min(size, await peripheral.maximumWriteValueLength(for: .withoutResponse))
            try await peripheral.writeValue([0x02], for: controlCharacteristic, type: .withResponse)
            let payload = [UInt8](repeating: 0xA5, count: size)
            for _ in 0..<count { try await peripheral.writeValue(payload, for: dataCharacteristic, type: .withoutResponse) }
            // The server's count, once every write has arrived (or it stops growing).
            var stats: [UInt8] = []
            var previous = -1
            for _ in 0..<200 {
                stats = try await peripheral.readValue(for: statsCharacteristic)
                let got = stats.count >= 4 ? Int(stats[0]) | Int(stats[1]) << 8 | Int(stats[2]) << 16 | Int(stats[3]) << 24 : 0
                if got >= count || got == previous { break }
                previous = got
                try await Task.sleep(for: .milliseconds(50))
            }
            guard stats.count >= 16 else { throw CommandFailure.failed("the bench service's stats are \(stats.count) octets") }
            let received = stats[0..<4].enumerated().reduce(0) { $0 | Int($1.element) << (8 * $1.offset) }
            let micros = stats[8..<16].enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
            let kbps = micros > 0 ? Double((received - 1) * size * 8) / Double(micros) * 1000 : 0
            emit(json, String(format: "write: %d of %d writes without response of %d octets arrived, %.0f kb/s (first to last: %.1f ms); %@",
                              received, count, size, kbps, Double(micros) / 1000, link),
                 ["mode": "write", "count": .int(received), "size": .int(size), "kbps": .number(kbps, decimals: 2),
                  "milliseconds": .number(Double(micros) / 1000, decimals: 2)])
        case .l2cap:
            break
        case .read:
            var latencies: [Double] = []
            var size = 0
            let start = ContinuousClock.now
            for _ in 0..<count {
                let t = ContinuousClock.now
                size = try await peripheral.readValue(for: statsCharacteristic).count
                latencies.append(seconds(ContinuousClock.now - t) * 1000)
            }
            let total = seconds(ContinuousClock.now - start)
            let (median, p90) = percentiles(latencies)
            emit(json, String(format: "read: %d reads of %d octets, %.0f/s, round trip median %.2f ms, p90 %.2f ms; %@",
                              count, size, Double(count) / max(total, 1e-9), median, p90, link),
                 ["mode": "read", "count": .int(count), "size": .int(size), "perSecond": .number(Double(count) / max(total, 1e-9), decimals: 2),
                  "medianMilliseconds": .number(median, decimals: 2), "p90Milliseconds": .number(p90, decimals: 2)])
        case .request:
            let size = min(size, await peripheral.maximumWriteValueLength(for: .withResponse))
            let payload = [UInt8](repeating: 0x3C, count: size)
            var latencies: [Double] = []
            let start = ContinuousClock.now
            for _ in 0..<count {
                let t = ContinuousClock.now
                try await peripheral.writeValue(payload, for: dataCharacteristic, type: .withResponse)
                latencies.append(seconds(ContinuousClock.now - t) * 1000)
            }
            let total = seconds(ContinuousClock.now - start)
            let (median, p90) = percentiles(latencies)
            emit(json, String(format: "request: %d writes with response of %d octets, %.0f/s, round trip median %.2f ms, p90 %.2f ms; %@",
                              count, size, Double(count) / max(total, 1e-9), median, p90, link),
                 ["mode": "request", "count": .int(count), "size": .int(size), "perSecond": .number(Double(count) / max(total, 1e-9), decimals: 2),
                  "medianMilliseconds": .number(median, decimals: 2), "p90Milliseconds": .number(p90, decimals: 2)])
        }
    }

    /// The L2CAP mode: `count` SDUs of `size` octets on the bench channel, timed by the server from the first to the
    /// last; then 20 echoed SDUs of the same size, timed here.
    static func runL2CAP(_ peripheral: RemotePeripheral, psm psmCharacteristic: GATTCharacteristic, count: Int, size: Int, json: Bool) async throws {
        let value = try await peripheral.readValue(for: psmCharacteristic)
        guard value.count == 2 else { throw CommandFailure.failed("the bench channel's PSM is \(value.count) octets") }
        let channel = try await peripheral.openL2CAPChannel(L2CAPSPSM(rawValue: UInt16(value[0]) | UInt16(value[1]) << 8))
        defer { Task { try? await channel.close() } }
        let size = max(2, min(size, channel.peerMTU))
        var replies = channel.incoming.makeAsyncIterator()
        try await channel.send([0x01, UInt8(truncatingIfNeeded: count), UInt8(truncatingIfNeeded: count >> 8),
                                UInt8(truncatingIfNeeded: count >> 16), UInt8(truncatingIfNeeded: count >> 24)])
        let payload = [0x00] + [UInt8](repeating: 0xC3, count: size - 1)
        let start = ContinuousClock.now
        for _ in 0..<count { try await channel.send(payload) }
        guard let stats = await replies.next(), stats.first == 0x02, stats.count >= 17 else {
            throw CommandFailure.failed("the bench channel did not report its count")
        }
        let elapsed = seconds(ContinuousClock.now - start)
        let received = stats[1..<5].enumerated().reduce(0) { $0 | Int($1.element) << (8 * $1.offset) }
        let micros = stats[9..<17].enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
        let kbps = micros > 0 ? Double((received - 1) * size * 8) / Double(micros) * 1000 : 0
        var latencies: [Double] = []
        let ping = [0x03] + [UInt8](repeating: 0x3C, count: size - 1)
        for _ in 0..<20 {
            let t = ContinuousClock.now
            try await channel.send(ping)
            guard let echo = await replies.next(), echo.first == 0x03 else { throw CommandFailure.failed("the bench channel did not echo") }
            latencies.append(seconds(ContinuousClock.now - t) * 1000)
        }
        latencies.sort()
        let median = latencies[latencies.count / 2]
        let connection = await peripheral.connection
        emit(json, String(format: "l2cap: %d of %d SDUs of %d octets arrived, %.0f kb/s (first to last: %.1f ms; %.0f SDUs/s as sent); echo round trip median %.2f ms; PSM 0x%04X, channel MTU %d, %@/%@, %d/%d-octet packets",
                          received, count, size, kbps, Double(micros) / 1000, Double(count) / max(elapsed, 1e-9), median,
                          Int(channel.info.spsm.rawValue), channel.peerMTU, "\(connection.txPHY)", "\(connection.rxPHY)",
                          Int(connection.maxTxOctets), Int(connection.maxRxOctets)),
             ["mode": "l2cap", "count": .int(received), "size": .int(size), "kbps": .number(kbps, decimals: 2),
              "milliseconds": .number(Double(micros) / 1000, decimals: 2), "echoMedianMilliseconds": .number(median, decimals: 2)])
    }

    /// The PHY a `--phy` value names.
    static func phys(_ text: String) throws -> LEPHYs {
        switch text.lowercased() {
        case "1m": .le1M
        case "2m": .le2M
        case "coded": .leCoded
        default: throw ValidationError("--phy takes 1m, 2m or coded, not \(text)")
        }
    }
}

/// Options of the measuring side.
struct BenchRunOptions: ParsableArguments {
    @Option(help: "What to measure: notify, write (without response), request (writes with response), l2cap (an LE credit based channel), read (reads of a 16-octet value); all but read by default.")
    var mode: [Bench.Mode] = Bench.Mode.standard
    @Option(help: "Values per measurement.") var count: Int = 1000
    @Option(help: "Octets per value (at most what the MTU allows).") var size: Int = 244
    @Option(help: "Ask for this PHY both ways first: 1m, 2m or coded.") var phy: String?
    @Option(help: "Ask for link-layer packets of up to this many octets first (27-251).") var dataLength: UInt16?
    @Option(help: "Connection interval to ask for, in milliseconds (7.5-4000).") var intervalMs: Double = 50

    func validate() throws {
        guard count > 1 else { throw ValidationError("--count must be at least 2") }
        guard (4...512).contains(size) else { throw ValidationError("--size must be 4 to 512") }
        guard (7.5...4000).contains(intervalMs) else { throw ValidationError("--interval-ms must be 7.5 to 4000") }
        if let phy { _ = try Bench.phys(phy) }
        if let dataLength, !(27...251).contains(dataLength) { throw ValidationError("--data-length must be 27 to 251") }
    }

    var intervalUnits: UInt16 { UInt16((intervalMs / 1.25).rounded()) }

    /// Says that `option` was not applied because the controller lacks it, and what happens instead.
    private func skipped(_ option: String, _ error: HostError, json: Bool, then instead: String) {
        emit(json, "--\(option): \(error.reason); \(instead)",
             ["event": "skipped", "option": .string(option), "reason": .string(error.reason)])
    }

    /// Sets the link up as asked, then runs each mode.
    ///
    /// `--phy` and `--data-length` ask; they do not require. When this side's controller lacks what one asks for (a
    /// Core 4.1 controller has neither LE Set PHY nor LE Set Data Length), the measurement goes on without it, on
    /// LE 1M or with 27-octet packets, after a line saying so (JSON: `"event": "skipped"`) — as when the peer
    /// declines. Other failures still end the run.
    func run(_ peripheral: RemotePeripheral, json: Bool) async throws {
        if let phy {
            let wanted = try Bench.phys(phy)
            do {
                let (tx, rx) = try await peripheral.setPreferredPHY(transmit: wanted, receive: wanted)
                emit(json, "PHY: \(tx) out, \(rx) in", ["event": "phy", "transmit": .string("\(tx)"), "receive": .string("\(rx)")])
            } catch let error as HostError {
                guard error.code.capability != nil else { throw error }
                skipped("phy", error, json: json, then: "measuring on LE 1M")
            }
        }
        if let dataLength {
            do {
                try await peripheral.setDataLength(dataLength)
                // The Data Length Change arrives after the command's completion.
                try await Task.sleep(for: .milliseconds(Int(intervalMs * 4)))
            } catch let error as HostError {
                guard error.code.capability != nil else { throw error }
                skipped("data-length", error, json: json, then: "measuring with the default 27-octet packets")
            }
        }
        for mode in mode { try await Bench.run(peripheral, mode: mode, count: count, size: size, json: json) }
    }
}

/// `ble bench serve`: the bench service, until interrupted.
struct BenchServe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "serve", abstract: "Serve the bench service until interrupted.")
    @OptionGroup var options: HostOptions
    @Option(help: "The advertised name.") var name = "SwiftBLEBench"

    func run() async throws {
        try await options.withPeripheralManager(deviceName: name) { manager in
            try await Bench.serve(manager, name: name, json: options.json)
        }
    }
}

/// `ble bench run TARGET`: measure against a device serving the bench service.
struct BenchRun: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "run", abstract: "Measure against a device running `ble bench serve`.")
    @OptionGroup var options: HostOptions
    @Argument(help: "The device's address or advertised name.") var target = "SwiftBLEBench"
    @OptionGroup var bench: BenchRunOptions

    func run() async throws {
        try await options.withCentral { central in
            let device = try await findTarget(target, central: central, timeout: .seconds(10))
            let peripheral = try await during("connecting to \(target)") {
                try await central.connect(device, timeout: .seconds(10), connectionInterval: bench.intervalUnits...bench.intervalUnits)
            }
            try await bench.run(peripheral, json: options.json)
            _ = try? await central.disconnect(peripheral)
        }
    }
}

/// `ble bench loopback`: both ends in this process, on a virtual air of their own.
struct BenchLoopback: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "loopback",
        abstract: "Run both ends in this process on a virtual air (with --air-time: connection events, PHYs and data length as on a radio).")
    @Flag(help: "Model air time on the link (AirTimeModel).") var airTime = false
    @Flag(help: "Print machine-readable JSON lines.") var json = false
    @OptionGroup var bench: BenchRunOptions

    func run() async throws {
        let air = VirtualAir(clock: .realTime, airTime: airTime ? AirTimeModel() : nil)
        defer { air.shutdown() }
        let serverAdapter = try await Adapter(transport: air.addController(.init(aclBufferSize: 251, aclBufferCount: 8)).makeHostTransport())
        let clientAdapter = try await Adapter(transport: air.addController(.init(position: Position(x: 1), aclBufferSize: 251, aclBufferCount: 8)).makeHostTransport())
        let manager = await PeripheralManager(adapter: serverAdapter, deviceName: "SwiftBLEBench")
        let json = json
        let server = Task { try await Bench.serve(manager, name: "SwiftBLEBench", json: json) }
        defer { server.cancel() }
        let central = Central(adapter: clientAdapter)
        let device = try await findTarget("SwiftBLEBench", central: central, timeout: .seconds(5))
        let peripheral = try await central.connect(device, timeout: .seconds(5), connectionInterval: bench.intervalUnits...bench.intervalUnits)
        try await bench.run(peripheral, json: json)
        _ = try? await central.disconnect(peripheral)
        await clientAdapter.powerOff()
        await serverAdapter.powerOff()
    }
}
