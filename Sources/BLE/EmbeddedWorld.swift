import BLEHost
import BLETransport
import BLEVirtualController
import BLEWire

/// The embedded simulated world that ``HCITransportSpec/virtual`` opens: one real-time virtual air per process with
/// the sample devices on it (``SampleDevice/lab`` as `SwiftBLELab` and ``SampleDevice/heartRate`` as
/// `SwiftBLE HR`, advertising). Every `.virtual` central or peripheral manager of the process gets a controller of
/// its own on this air, so they see each other and the sample devices, as on a real radio.
public final class EmbeddedWorld: Sendable {
    /// The simulated air.
    public let air: VirtualAir
    /// The sample devices running on it.
    public let devices: [SamplePeripheral]

    private init(air: VirtualAir, devices: [SamplePeripheral]) {
        self.air = air
        self.devices = devices
    }

    /// The process's world, started on first use.
    public static func shared() async throws -> EmbeddedWorld {
        try await Starter.shared.world()
    }

    /// Starts a world of its own (tests that want a fresh air use this; `.virtual` uses ``shared()``).
    public static func start(seed: UInt64 = 7) async throws -> EmbeddedWorld {
        let air = VirtualAir(clock: .realTime, seed: seed)
        var devices: [SamplePeripheral] = []
        for (i, device) in [SampleDevice.lab, .heartRate].enumerated() {
            let controller = air.addController(.init(position: Position(x: Double(i + 1) * 2), txPower: 4))
            let adapter = try await Adapter(transport: controller.makeHostTransport())
            let peripheral = await SamplePeripheral(adapter: adapter, device: device)
            try await peripheral.start()
            devices.append(peripheral)
        }
        return EmbeddedWorld(air: air, devices: devices)
    }

    /// A new controller on this air at `position`, as a host transport.
    public func makeTransport(at position: Position = Position(x: 0)) -> any HCITransport {
        air.addController(.init(position: position)).makeHostTransport()
    }

    /// Starts the shared world once, whoever asks first.
    private actor Starter {
        static let shared = Starter()
        private var started: Task<EmbeddedWorld, any Error>?
        func world() async throws -> EmbeddedWorld {
            if let started { return try await started.value }
            let task = Task { try await EmbeddedWorld.start() }
            started = task
            return try await task.value
        }
    }
}

extension HCIHost {
    /// Opens the controller a `--hci` style specification names and powers it on: `virtual` gets a controller on
    /// the process's ``EmbeddedWorld``. The errors say what failed and where (for example "no controller at
    /// tcp:127.0.0.1:9100: connection refused").
    ///
    /// - Parameters:
    ///   - spec: the controller.
    ///   - btsnoop: a file to record the host's HCI traffic in (btsnoop, H4 datalink, readable by Wireshark), from
    ///     the first command on; `nil` records nothing.
    public static func open(_ spec: HCITransportSpec, btsnoop: String? = nil, configuration: Configuration = Configuration()) async throws -> HCIHost {
        var transport: any HCITransport
        switch spec {
        case .virtual:
            transport = try await EmbeddedWorld.shared().makeTransport()
        default:
            do {
                transport = try spec.open()
            } catch let error as TransportError {
                throw TransportError(error.code, "no controller at \(spec): \(error.reason.droppingLeadingSpecification(of: spec))",
                                     errno: error.errno)
            }
        }
        if let btsnoop {
            do {
                transport = SnoopingTransport(transport, writer: try BTSnoopWriter(path: btsnoop), role: .host)
            } catch {
                await transport.close()
                throw error
            }
        }
        let host = HCIHost(transport: transport, configuration: configuration)
        do {
            try await host.powerOn()
        } catch let error as HostError {
            throw HostError(error.code, "the controller at \(spec) did not come up: \(error.reason)")
        }
        return host
    }
}

extension String {
    /// The reason without a leading `SPEC: ` that repeats the specification (transports name what they open), so
    /// "no controller at tcp:127.0.0.1:9100: " is not followed by "tcp:127.0.0.1:9100: " again.
    fileprivate func droppingLeadingSpecification(of spec: HCITransportSpec) -> String {
        guard let colon = range(of: ": ") else { return self }
        let head = self[..<colon.lowerBound]
        guard !head.isEmpty, "\(spec)".hasPrefix(head) else { return self }
        return String(self[colon.upperBound...])
    }
}
