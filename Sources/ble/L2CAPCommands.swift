import ArgumentParser
import BLE
import BLEFiles
import Foundation

/// `ble l2cap`: LE credit based channels from the terminal.
struct L2CAPCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "l2cap",
        abstract: "LE credit based L2CAP channels: serve one (a peripheral), or connect to one and send data (a central).",
        subcommands: [L2CAPServe.self, L2CAPConnect.self])
}

/// A PSM given as decimal or `0x` hex.
struct PSMArgument: ExpressibleByArgument {
    let psm: L2CAPSPSM
    init?(argument: String) {
        let value = argument.lowercased().hasPrefix("0x") ? UInt16(argument.dropFirst(2), radix: 16) : UInt16(argument)
        guard let value, value != 0 else { return nil }
        psm = L2CAPSPSM(rawValue: value)
    }
}

/// Channel parameters from the command line.
struct ChannelOptions: ParsableArguments {
    @Option(help: "The largest SDU this side accepts.")
    var mtu: UInt16 = 2048
    @Option(help: "The largest K-frame payload this side accepts.")
    var mps: UInt16 = 247
    @Option(help: "Credits (K-frames) granted to the peer at once.")
    var credits: UInt16 = 32

    var parameters: L2CAPChannelParameters { L2CAPChannelParameters(mtu: mtu, mps: mps, initialCredits: credits) }
}

/// Bytes, seconds and a rate, for a report.
func throughput(_ bytes: Int, since start: ContinuousClock.Instant) -> (seconds: Double, megabytesPerSecond: Double) {
    let elapsed = ContinuousClock.now - start
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return (seconds, seconds > 0 ? Double(bytes) / seconds / 1_000_000 : 0)
}

/// `ble l2cap serve`: advertise and accept channels on a PSM, counting (and optionally echoing) what arrives.
struct L2CAPServe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Advertise and accept LE credit based channels on a PSM; print what arrives and the throughput.")
    @OptionGroup var options: HostOptions
    @Option(help: "The PSM to serve (0x0080–0x00FF for a dynamic one).")
    var psm: PSMArgument
    @Option(help: "The advertised and GAP device name.")
    var name = "SwiftBLEL2CAP"
    @Flag(help: "Send every SDU back on its channel.")
    var echo = false
    @Flag(help: "Leave the channels unread, so no credit goes back to the peer (to test a peer's flow control).")
    var hold = false
    @OptionGroup var channel: ChannelOptions
    @Option(help: "Stop after this many seconds (0: run until interrupted).")
    var runFor: Double = 0

    func run() async throws {
        let json = options.json
        let echo = echo, hold = hold
        try await options.withPeripheralManager(deviceName: name) { manager in
            let channels = try await during("publishing PSM \(psm.psm)") {
                try await manager.publishL2CAPChannel(psm.psm, parameters: channel.parameters)
            }
            try await during("advertising") { try await manager.startAdvertising(name: name, restartAfterConnection: true) }
            emit(json, "serving PSM \(psm.psm) as '\(name)' on \(options.hci)\(echo ? ", echoing" : "")",
                 ["event": "serving", "psm": .integer(psm.psm.rawValue), "name": .string(name), "echo": .bool(echo)])
            let serving = Task {
                await withTaskGroup(of: Void.self) { group in
                    for await channel in channels {
                        group.addTask { await Self.serve(channel, echo: echo, hold: hold, json: json) }
                    }
                }
            }
            defer { serving.cancel() }
            if runFor > 0 {
                try await Task.sleep(for: .milliseconds(Int(runFor * 1000)))
            } else {
                while true { try await Task.sleep(for: .seconds(3600)) }
            }
        }
    }

    static func serve(_ channel: L2CAPChannel, echo: Bool, hold: Bool, json: Bool) async {
        let cid = Int(channel.localCID.rawValue)
        emit(json, "channel 0x\(String(cid, radix: 16)) opened (peer MTU \(channel.peerMTU))",
             ["event": "opened", "cid": .int(cid), "peer_mtu": .int(channel.peerMTU)])
        guard !hold else { return }
        let start = ContinuousClock.now
        var bytes = 0, sdus = 0, failure: String?
        for await sdu in channel.incoming {
            bytes += sdu.count
            sdus += 1
            if echo {
                do {
                    try await channel.send(sdu)
                } catch {
                    failure = "\(error)"
                    break
                }
            }
        }
        let rate = throughput(bytes, since: start)
        emit(json, "channel 0x\(String(cid, radix: 16)) closed: \(bytes) bytes in \(sdus) SDUs, \(String(format: "%.3f", rate.seconds)) s, \(String(format: "%.2f", rate.megabytesPerSecond)) MB/s\(failure.map { " (\($0))" } ?? "")",
             ["event": "closed", "cid": .int(cid), "bytes": .int(bytes), "sdus": .int(sdus), "seconds": .number(rate.seconds, decimals: 3),
              "mb_per_s": .number(rate.megabytesPerSecond, decimals: 3), "error": failure.map(JSONValue.string) ?? .null])
    }
}

/// `ble l2cap connect`: open a channel to a device's PSM, send a file or generated bytes, optionally check the echo.
struct L2CAPConnect: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "connect",
        abstract: "Open an LE credit based channel to a device's PSM and send data; print the throughput.")
    @OptionGroup var options: HostOptions
    @OptionGroup var target: TargetOptions
    @Option(help: "The PSM to connect to.")
    var psm: PSMArgument
    @Option(help: "Send this file's bytes.")
    var send: String?
    @Option(help: "Send this many generated bytes (when no --send file is given).")
    var bytes: Int = 0
    @Flag(help: "Expect every byte back (an echo server) and check it is identical.")
    var expectEcho = false
    @OptionGroup var channel: ChannelOptions

    func validate() throws {
        guard bytes >= 0 else { throw ValidationError("--bytes must not be negative") }
    }

    /// The generated payload: byte i is (i·31 + i/256) mod 256, so shifted or lost bytes show.
    static func pattern(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) } }

    func run() async throws {
        let json = options.json
        let data: [UInt8]
        if let send {
            guard let contents = FileManager.default.contents(atPath: send) else { throw CommandFailure.notFound("cannot read \(send)") }
            data = Array(contents)
        } else {
            data = Self.pattern(bytes)
        }
        let expectEcho = expectEcho
        try await ClientSession.run(options, target, discover: false) { session in
            let opened = try await during("opening PSM \(psm.psm) on \(target.target)") {
                try await session.peripheral.openL2CAPChannel(psm.psm, parameters: channel.parameters)
            }
            let cid = Int(opened.localCID.rawValue)
            emit(json, "channel 0x\(String(cid, radix: 16)) open to PSM \(psm.psm) (peer MTU \(opened.peerMTU))",
                 ["event": "opened", "cid": .int(cid), "psm": .integer(psm.psm.rawValue), "peer_mtu": .int(opened.peerMTU)])
            let start = ContinuousClock.now
            let receiver = Task { () -> [UInt8] in
                var echoed: [UInt8] = []
                guard expectEcho else { return echoed }
                for await sdu in opened.incoming {
                    echoed += sdu
                    if echoed.count >= data.count { break }
                }
                return echoed
            }
            var offset = 0
            while offset < data.count {
                let end = min(data.count, offset + opened.peerMTU)
                try await during("sending on channel 0x\(String(cid, radix: 16))") { try await opened.send(Array(data[offset..<end])) }
                offset = end
            }
            if expectEcho {
                let echoed = await receiver.value
                let both = throughput(2 * data.count, since: start)
                let identical = echoed == data
                emit(json, "echo: \(echoed.count) bytes back, \(identical ? "identical" : "DIFFERENT"); \(data.count) bytes each way in \(String(format: "%.3f", both.seconds)) s (\(String(format: "%.2f", both.megabytesPerSecond)) MB/s both ways)",
                     ["event": "echo", "bytes": .int(echoed.count), "identical": .bool(identical), "seconds": .number(both.seconds, decimals: 3),
                      "mb_per_s": .number(both.megabytesPerSecond, decimals: 3)])
                guard identical else { throw CommandFailure.failed("the echo differs from what was sent") }
            } else {
                receiver.cancel()
            }
            // Closing waits until the controller confirmed every byte sent (or says how many it did not).
            try await Self.closeAndReport(opened, sent: data.count, since: start, json: json)
        }
    }

    /// Closes the channel once what was sent is delivered, and reports the bytes sent and delivered (confirmed by the
    /// controller before the channel closed); fails when some were not.
    static func closeAndReport(_ channel: L2CAPChannel, sent bytes: Int, since start: ContinuousClock.Instant, json: Bool) async throws {
        let delivered: Int
        var failure: (any Error)?
        do {
            delivered = try await channel.close().confirmedOctets
        } catch let error as HostError {
            guard let delivery = error.code.delivery else { throw error }
            delivered = delivery.confirmedOctets
            failure = error
        }
        let rate = throughput(bytes, since: start)
        emit(json, "sent \(bytes) bytes, \(delivered) delivered in \(String(format: "%.3f", rate.seconds)) s (\(String(format: "%.2f", rate.megabytesPerSecond)) MB/s)",
             ["event": "sent", "bytes": .int(bytes), "delivered": .int(delivered), "seconds": .number(rate.seconds, decimals: 3),
              "mb_per_s": .number(rate.megabytesPerSecond, decimals: 3)])
        if failure != nil || delivered != bytes {
            throw CommandFailure.failed("\(bytes - delivered) of \(bytes) bytes were not confirmed delivered before the channel closed")
        }
    }
}
