import ArgumentParser
import BLETransport
import BLEVirtualController
import BLEWire
import Foundation

/// `ble controller --tcp 127.0.0.1:9100 127.0.0.1:9101`: linked virtual controllers, each an H4/TCP server.
struct ControllerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "controller",
        abstract: "Run linked virtual LE controllers, each exposed as an H4-over-TCP server port.",
        discussion: """
            Every port gets a fresh controller per client connection (a new client replaces the previous one, whose \
            links then drop by supervision timeout). Controllers sit on one simulated air, --spacing metres apart, \
            with stable public addresses 00:5B:00:00:00:NN (NN = 1 for the first port). Prints 'READY <ports>' once \
            every port listens.

            On Linux, --vhci N also gives the kernel N adapters through its virtual HCI driver (/dev/vhci, module \
            hci_vhci), on the same air after the TCP ports: the kernel names them hciN, and READY lists those names \
            after the ports. A host then reaches them through the kernel, e.g. `ble serve --hci hci0` on the HCI \
            user channel.
            """)

    @Option(name: .customLong("tcp"), parsing: .upToNextOption, help: "HOST:PORT to listen on, one per controller.")
    var endpoints: [String] = []

    @Option(help: "Linux: give the kernel this many adapters through /dev/vhci, each one of these controllers.")
    var vhci: Int = 0

    @Option(help: "ACL buffer size reported by LE Read Buffer Size.")
    var aclSize: Int = 27

    @Option(help: "Number of ACL buffers.")
    var aclCount: Int = 8

    @Option(help: "Distance between neighbouring controllers, in metres.")
    var spacing: Double = 1

    @Option(help: "Seed of the simulated air's random generator.")
    var seed: UInt64 = 1

    @Option(help: "RSSI noise standard deviation in dB.")
    var noise: Double = 0

    @Option(help: "Directory for one btsnoop capture per client connection (controller's view).")
    var snoopDir: String?

    @Option(help: "What the controllers say they are: full (Core 5.4, every command the virtual controller has) or 4.1 (no Data Length Extension, no LE Set PHY, no LE Read Buffer Size [v2], no extended advertising).")
    var profile: String = "full"

    @Option(help: "Move a controller along x while it runs: INDEX:X1,X2,...:SECONDS (controller INDEX, counted from 0 in --tcp order, goes from X1 to X2... metres, SECONDS per leg, from when its host attaches). Repeatable.")
    var walk: [String] = []

    @Option(help: "Add this many non-connectable advertisers to the air (no host: each controller is set up by raw HCI commands), for load tests of scanners and gateways. Each sends the iBeacon E2C56DB5-DFFB-48D2-B060-D0F5A71096E0 with minor = its number, from 00:5C:00:00:NN:NN, 1 to 6 m from the first controller.")
    var advertisers: Int = 0

    @Option(help: "The advertisers' interval in milliseconds (20 to 10240).")
    var advertiserInterval: Double = 1000

    @Flag(help: "Model air time on connections: connection events, PHYs, data length (see AirTimeModel); without it packets cross links at once.")
    var airTime = false

    func run() async throws {
        let parsed = try endpoints.map { text -> (String, UInt16) in
            guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else {
                throw ValidationError("'\(text)' is not HOST:PORT")
            }
            return (String(text[..<colon]), port)
        }
        guard !parsed.isEmpty || vhci > 0 else { throw ValidationError("give at least one --tcp HOST:PORT or --vhci N") }
        guard vhci >= 0, vhci <= 16 else { throw ValidationError("--vhci takes 0 to 16 adapters") }
        let chosen: ControllerProfile
        switch profile {
        case "full": chosen = .full
        case "4.1": chosen = .bluetooth41
        default: throw ValidationError("--profile takes full or 4.1, not \(profile)")
        }
        if let snoopDir {
            do {
                try FileManager.default.createDirectory(atPath: snoopDir, withIntermediateDirectories: true)
            } catch {
                throw ValidationError("--snoop-dir \(snoopDir): \(error)")
            }
        }
        var walks: [Int: Walk] = [:]
        for text in walk {
            guard let parsed = Walk(parsing: text) else { throw ValidationError("--walk '\(text)': expected INDEX:X1,X2,...:SECONDS") }
            guard parsed.index < endpoints.count else {
                throw ValidationError("--walk '\(text)': there is no controller \(parsed.index) (\(endpoints.count) --tcp ports)")
            }
            walks[parsed.index] = parsed
        }
        let walkPlans = walks
        let air = VirtualAir(clock: .realTime, seed: seed, radio: RadioModel(noiseSigma: noise), airTime: airTime ? AirTimeModel() : nil)
        // Accepted hosts are read only once attached: the controller then handles their packets on the reader thread.
        let servers = try parsed.map { try H4TCPServer(host: $0.0, port: $0.1, startReading: false) }
        let snoopDir = snoopDir
        let (aclSize, aclCount, spacing) = (aclSize, aclCount, spacing)
        let configuration: @Sendable (Int) -> VirtualController.Configuration = { index in
            VirtualController.Configuration(address: BluetoothAddress(0x005B_0000_0000 | UInt64(index + 1)),
                                            position: Position(x: Double(index) * spacing),
                                            aclBufferSize: aclSize, aclBufferCount: aclCount, profile: chosen)
        }
        let adapters = try kernelAdapters(count: vhci)
        guard (0...65_535).contains(advertisers) else { throw ValidationError("--advertisers takes 0 to 65535") }
        guard advertiserInterval >= 20, advertiserInterval <= 10_240 else { throw ValidationError("--advertiser-interval takes 20 to 10240 ms") }
        try await Self.addAdvertisers(advertisers, intervalMilliseconds: advertiserInterval, to: air)
        writeLine("READY " + (servers.map { String($0.port) } + adapters.map { "hci\($0.index)" }).joined(separator: " "))
        await withTaskGroup(of: Void.self) { group in
            for (offset, adapter) in adapters.enumerated() {
                let controller = air.addController(configuration(servers.count + offset))
                var transport: any HCITransport = adapter.transport
                if let snoopDir {
                    let path = "\(snoopDir)/controller-hci\(adapter.index).btsnoop"
                    do {
                        transport = SnoopingTransport(adapter.transport, writer: try BTSnoopWriter(path: path), role: .controller)
                    } catch {
                        writeErrorLine("hci\(adapter.index): cannot capture to \(path): \(error)")
                    }
                }
                let attached = transport
                group.addTask {
                    await controller.attach(attached)
                    writeErrorLine("hci\(adapter.index): the kernel closed the adapter")
                }
            }
            for (index, server) in servers.enumerated() {
                group.addTask {
                    let current = ControllerSlot()
                    var session = 0
                    for await client in server.connections {
                        session += 1
                        await current.replace(with: nil)
                        let controller = air.addController(configuration(index))
                        await current.replace(with: controller)
                        var transport: any HCITransport = client
                        if let snoopDir {
                            let path = "\(snoopDir)/controller-\(server.port)-\(session).btsnoop"
                            do {
                                transport = SnoopingTransport(client, writer: try BTSnoopWriter(path: path), role: .controller)
                            } catch {
                                writeErrorLine("port \(server.port): cannot capture to \(path): \(error)")
                            }
                        }
                        writeErrorLine("port \(server.port): host attached (session \(session))")
                        if let walking = walkPlans[index] { Self.start(walking, controller) }
                        let attached = transport
                        let number = session
                        Task {
                            await controller.attach(attached)
                            writeErrorLine("port \(server.port): host detached (session \(number))")
                        }
                    }
                }
            }
        }
    }
}

extension ControllerCommand {
    /// `count` non-connectable iBeacon advertisers, each its own controller configured by raw HCI commands (no host).
    static func addAdvertisers(_ count: Int, intervalMilliseconds: Double, to air: VirtualAir) async throws {
        guard count > 0 else { return }
        let uuid = BluetoothUUID("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0") ?? 0
        // Advertising_Interval in units of 0.625 ms (Core 5.4, Vol 4, Part E, 7.8.5).
        let units = UInt16(max(0x20, min(0x4000, (intervalMilliseconds / 0.625).rounded())))
        for index in 0..<count {
            let controller = air.addController(.init(address: BluetoothAddress(0x005C_0000_0000 | UInt64(index + 1)),
                                                     position: Position(x: 0, y: 1 + Double(index % 21) * 0.25, z: Double(index / 21 % 4) * 0.5)))
            let transport = controller.makeHostTransport()
            var beacon = [UInt8]([0x02, 0x01, 0x06, 0x1A, 0xFF, 0x4C, 0x00, 0x02, 0x15])
            beacon += uuid.bigEndianBytes
            beacon += [0x00, 0x01, UInt8(index >> 8 & 0xFF), UInt8(index & 0xFF), 0xD8]   // major 1, minor = index, -40 dBm at 1 m
            let commands: [HCIPacket] = [
                .command(HCILESetAdvertisingParameters(intervalMin: units, intervalMax: units, advertisingType: .nonConnectableUndirected).packet),
                .command(HCILESetAdvertisingData(data: beacon).packet),
                .command(HCILESetAdvertisingEnable(isEnabled: true).packet),
            ]
            var events = transport.incoming.makeAsyncIterator()
            for command in commands {
                try await transport.send(command)
                _ = try await events.next()   // its Command Complete
            }
        }
    }

    /// Moves `controller` along `walk`, ten steps a second, until the walk ends.
    static func start(_ walk: Walk, _ controller: VirtualController) {
        Task {
            let start = ContinuousClock.now
            while true {
                let elapsed = ContinuousClock.now - start
                controller.position = Position(x: walk.x(after: elapsed))
                if elapsed >= walk.duration { return }
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    /// `count` adapters from the kernel's virtual HCI driver (none asked: none, on any system).
    func kernelAdapters(count: Int) throws -> [VirtualHCIDevice] {
        guard count > 0 else { return [] }
        #if os(Linux)
        return try (0..<count).map { _ in try VirtualHCIDevice.create() }
        #else
        throw ValidationError("--vhci needs Linux's virtual HCI driver (/dev/vhci)")
        #endif
    }
}

#if !os(Linux)
/// Elsewhere there is no kernel driver to ask; the type only names what `--vhci` would have made.
struct VirtualHCIDevice {
    let index: UInt16
    let transport: any HCITransport
}
#endif

/// The controller currently serving one port.
actor ControllerSlot {
    private var controller: VirtualController?
    func replace(with new: VirtualController?) {
        controller?.remove()
        controller = new
    }
}
