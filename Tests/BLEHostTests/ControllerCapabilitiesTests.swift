import BLEFixtures
import BLEHost
import BLETestSupport
import BLETransport
import BLEVirtualController
import BLEWire
import Synchronization
import Testing

/// A transport that records the opcode of every command the host writes, in front of another transport.
final class RecordingTransport: HCITransport {
    let inner: any HCITransport
    private let sent = Mutex<[HCIOpcode]>([])

    init(_ inner: any HCITransport) { self.inner = inner }

    var incoming: AsyncThrowingStream<HCIPacket, any Error> { inner.incoming }
    func send(_ packet: HCIPacket) async throws { try await send([packet]) }
    func send(_ packets: [HCIPacket]) async throws {
        sent.withLock { $0 += packets.compactMap { if case .command(let c) = $0 { c.opcode } else { nil } } }
        try await inner.send(packets)
    }
    func close() async { await inner.close() }

    /// The opcodes written so far, in order.
    var opcodes: [HCIOpcode] { sent.withLock { $0 } }
}

/// A controller answering each command from a table (Command Complete with the given return parameters), and
/// Unknown HCI Command to the rest: for bring-ups no virtual controller profile gives.
final class ScriptedController: Sendable {
    let host: RecordingTransport
    private let task: Task<Void, Never>

    init(_ answers: [HCIOpcode: [UInt8]]) {
        let (hostSide, controllerSide) = HCIPipe.makePair()
        host = RecordingTransport(hostSide)
        task = Task {
            do {
                for try await packet in controllerSide.incoming {
                    guard case .command(let command) = packet else { continue }
                    let parameters = answers[command.opcode] ?? [HCIStatus.unknownCommand.rawValue]
                    let event = HCICommandCompleteEvent(opcode: command.opcode, returnParameters: parameters)
                    try await controllerSide.send(.event(event.packet))
                }
            } catch {}
        }
    }

    deinit { task.cancel() }

    /// A Core 5.x LE controller's answers to a bring-up, with `commands` listed and the LE buffers given.
    static func answers(listing commands: [HCIOpcode], v2: (UInt16, UInt8)? = nil, v1: (UInt16, UInt8)? = nil,
                        shared: (UInt16, UInt16)? = nil, leFeatures: LEFeatures = [.encryption]) -> [HCIOpcode: [UInt8]] {
        var mask = HCISupportedCommands()
        for opcode in commands { mask.insert(opcode) }
        var answers: [HCIOpcode: [UInt8]] = [
            .reset: [0],
            .readLocalSupportedCommands: HCIReadLocalSupportedCommands.ReturnParameters(supportedCommands: mask).encoded,
            .readLocalVersionInformation: HCIReadLocalVersionInformation.ReturnParameters(
                hciVersion: 0x07, hciSubversion: 0x1234, lmpVersion: 0x07, companyIdentifier: 0x000F, lmpSubversion: 0x5678).encoded,
            .readLocalSupportedFeatures: HCIReadLocalSupportedFeatures.ReturnParameters(features: 1 << 38).encoded,
            .setEventMask: [0], .leSetEventMask: [0],
            .leReadLocalSupportedFeatures: HCILEReadLocalSupportedFeatures.ReturnParameters(features: leFeatures).encoded,
            .readBDADDR: HCIReadBDADDR.ReturnParameters(address: BluetoothAddress(0x0011_2233_4455)).encoded,
            .leReadFilterAcceptListSize: HCIListSizeReturnParameters(size: 12).encoded,
            .leReadResolvingListSize: HCIListSizeReturnParameters(size: 8).encoded,
        ]
        if let v2 {
            answers[.leReadBufferSizeV2] = HCILEReadBufferSizeV2.ReturnParameters(
                leACLDataPacketLength: v2.0, totalNumLEACLDataPackets: v2.1, isoDataPacketLength: 310, totalNumISODataPackets: 4).encoded
        }
        if let v1 {
            answers[.leReadBufferSize] = HCILEReadBufferSize.ReturnParameters(leACLDataPacketLength: v1.0, totalNumLEACLDataPackets: v1.1).encoded
        }
        if let shared {
            answers[.readBufferSize] = HCIReadBufferSize.ReturnParameters(
                aclDataPacketLength: shared.0, synchronousDataPacketLength: 0, totalNumACLDataPackets: shared.1,
                totalNumSynchronousDataPackets: 0).encoded
        }
        return answers
    }

    /// The commands of a bare bring-up.
    static let basics: [HCIOpcode] = [.readLocalVersionInformation, .readLocalSupportedFeatures, .setEventMask, .leSetEventMask,
                                      .leReadLocalSupportedFeatures, .readBDADDR]
}

@Suite(.timeLimit(.minutes(1))) struct ControllerCapabilitiesTests {
    /// A host on a new controller with `profile`, its writes recorded.
    func host(_ air: VirtualAir, profile: ControllerProfile, at x: Double = 0) async throws -> (HCIHost, VirtualController, RecordingTransport) {
        let controller = air.addController(.init(position: Position(x: x), profile: profile))
        let transport = RecordingTransport(controller.makeHostTransport())
        let host = HCIHost(transport: transport)
        try await host.powerOn()
        return (host, controller, transport)
    }

    @Test func aFullControllerIsReadWhole() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let (host, controller, transport) = try await host(air, profile: .full)
        let c = await host.capabilities
        #expect(c.commandSource == .controller)
        #expect(c.version == .init(hciVersion: .v5_4, hciRevision: 1, lmpVersion: .v5_4, lmpSubversion: 1, company: .testing))
        #expect(c.buffers == .init(aclPacketLength: 27, aclPacketCount: 8, source: .leReadBufferSizeV2))
        #expect(c.maximumDataLength == .init(maxTxOctets: 251, maxTxTime: 2120, maxRxOctets: 251, maxRxTime: 2120))
        #expect(c.phys == [.le1M, .le2M, .leCoded])
        #expect(c.leFeatures == ControllerProfile.implementedFeatures)
        #expect(c.publicAddress == controller.address)
        #expect(c.supports(.dataLengthExtension) && c.supports(.twoMegabitPHY) && c.supports(.codedPHY))
        // Not listed by the virtual controller, so not asked.
        #expect(c.filterAcceptListSize == nil && c.resolvingListSize == nil)
        let sent = transport.opcodes
        #expect(!sent.contains(.leReadFilterAcceptListSize) && !sent.contains(.leReadResolvingListSize))
        #expect(sent.contains(.leReadBufferSizeV2) && !sent.contains(.leReadBufferSize) && !sent.contains(.readBufferSize))
        // Every command sent is listed, or Reset / Read Local Supported Commands.
        for opcode in sent where opcode != .reset && opcode != .readLocalSupportedCommands {
            #expect(c.supportedCommands.contains(opcode), "\(opcode) was sent but is not listed")
        }
    }

    @Test func aControllerWithoutDataLengthOrPHYCommandsGetsNeither() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let (central, _, centralWrites) = try await host(air, profile: .bluetooth41)
        let (peripheral, peripheralController, _) = try await host(air, profile: .full, at: 1)
        let (link, _) = try await connect(central, peripheral, peripheralAddress: peripheralController.address)
        let c = await central.capabilities
        #expect(c.version?.hciVersion == .v4_1)
        #expect(c.buffers?.source == .leReadBufferSizeV1)
        #expect(c.maximumDataLength == nil && c.phys == .le1M)

        await #expect(throws: HostError(.unsupportedByController(.dataLengthExtension), "")) {
            try await central.setDataLength(link, octets: 251)
        }
        do {
            try await central.setDataLength(link, octets: 251)
        } catch let error as HostError {
            #expect(error.reason == "the controller does not support LE Data Length Extension (LE Set Data Length is not in its supported commands)")
        }
        await #expect(throws: HostError(.unsupportedByController(.twoMegabitPHY), "")) {
            _ = try await central.setPHY(link, transmit: .le2M, receive: .le2M)
        }
        await #expect(throws: HostError(.unsupportedByController(.codedPHY), "")) {
            _ = try await central.setPHY(link, transmit: .leCoded, receive: [])
        }
        await #expect(throws: HostError(.unsupportedByController(.phyUpdate), "")) {
            _ = try await central.setPHY(link, transmit: .le1M, receive: .le1M)
        }
        // A raw command it does not list is refused too, by name.
        do {
            _ = try await central.send(HCILEReadMaximumDataLength())
            Issue.record("an unlisted command was sent")
        } catch let error as HostError {
            #expect(error.code == .unsupportedByController(.command(.leReadMaximumDataLength)))
            #expect(error.reason.contains("LE Read Maximum Data Length is not in its supported commands"))
        }
        let sent = centralWrites.opcodes
        for opcode in [HCIOpcode.leSetDataLength, .leSetPHY, .leReadMaximumDataLength, .leReadBufferSizeV2, .leSetDefaultPHY] {
            #expect(!sent.contains(opcode), "\(opcode) reached a controller that does not list it")
        }
        // The link still works, at 27 octets.
        #expect(await central.connections.first?.maxTxOctets == 27)
    }

    @Test func aPeerOnAReducedControllerKeepsItsLimitsWhenTheOtherSideAsks() async throws {
        let air = VirtualAir(clock: .realTime)
        defer { air.shutdown() }
        let (central, _, _) = try await host(air, profile: .full)
        let (peripheral, peripheralController, _) = try await host(air, profile: .bluetooth41, at: 1)
        let (link, _) = try await connect(central, peripheral, peripheralAddress: peripheralController.address)
        let updated = try await central.setPHY(link, transmit: .le2M, receive: .le2M)
        #expect(updated.txPHY == .le1M && updated.rxPHY == .le1M, "a 4.1 peer has no LE 2M")
    }

    @Test func bufferSizesComeFromV2ThenV1ThenTheSharedBuffers() async throws {
        let listed = ScriptedController.basics + [.leReadBufferSizeV2, .leReadBufferSize, .readBufferSize]
        // v2 listed: v2 only.
        let v2 = ScriptedController(ScriptedController.answers(listing: listed, v2: (251, 10), v1: (27, 3), shared: (1021, 6)))
        let h2 = HCIHost(transport: v2.host)
        try await h2.powerOn()
        #expect(await h2.capabilities.buffers == .init(aclPacketLength: 251, aclPacketCount: 10, isoPacketLength: 310, isoPacketCount: 4,
                                                        source: .leReadBufferSizeV2))
        let buffers = await h2.aclBuffers
        #expect(buffers.size == 251 && buffers.count == 10)
        #expect(!v2.host.opcodes.contains(.leReadBufferSize) && !v2.host.opcodes.contains(.readBufferSize))
        // v1 only.
        let v1 = ScriptedController(ScriptedController.answers(listing: ScriptedController.basics + [.leReadBufferSize, .readBufferSize],
                                                               v2: (251, 10), v1: (27, 3), shared: (1021, 6)))
        let h1 = HCIHost(transport: v1.host)
        try await h1.powerOn()
        #expect(await h1.capabilities.buffers == .init(aclPacketLength: 27, aclPacketCount: 3, source: .leReadBufferSizeV1))
        #expect(!v1.host.opcodes.contains(.leReadBufferSizeV2) && !v1.host.opcodes.contains(.readBufferSize))
        // v1 answering 0: the shared buffers.
        let zero = ScriptedController(ScriptedController.answers(listing: ScriptedController.basics + [.leReadBufferSize, .readBufferSize],
                                                                 v1: (0, 0), shared: (1021, 6)))
        let h0 = HCIHost(transport: zero.host)
        try await h0.powerOn()
        #expect(await h0.capabilities.buffers == .init(aclPacketLength: 1021, aclPacketCount: 6, source: .readBufferSize))
        // Neither LE command listed: the shared buffers.
        let shared = ScriptedController(ScriptedController.answers(listing: ScriptedController.basics + [.readBufferSize], shared: (1021, 6)))
        let hs = HCIHost(transport: shared.host)
        try await hs.powerOn()
        #expect(await hs.capabilities.buffers?.source == .readBufferSize)
        #expect(!shared.host.opcodes.contains(.leReadBufferSize) && !shared.host.opcodes.contains(.leReadBufferSizeV2))
        // No buffer command at all: the controller is unusable, and says why.
        let none = ScriptedController(ScriptedController.answers(listing: ScriptedController.basics))
        let hn = HCIHost(transport: none.host)
        await #expect(throws: HostError(.unsupportedByController(.command(.leReadBufferSize)), "")) { try await hn.powerOn() }
        #expect(await hn.state == .unsupported)
    }

    @Test func listedListSizesAndVersionAreRead() async throws {
        let scripted = ScriptedController(ScriptedController.answers(
            listing: ScriptedController.basics + [.leReadBufferSize, .leReadFilterAcceptListSize, .leReadResolvingListSize], v1: (27, 4)))
        let host = HCIHost(transport: scripted.host)
        try await host.powerOn()
        let c = await host.capabilities
        #expect(c.filterAcceptListSize == 12 && c.resolvingListSize == 8)
        #expect(c.version == .init(hciVersion: .v4_1, hciRevision: 0x1234, lmpVersion: .v4_1, lmpSubversion: 0x5678,
                                   company: CompanyIdentifier(rawValue: 0x000F)))
        #expect(c.publicAddress == BluetoothAddress(0x0011_2233_4455))
    }

    @Test func aControllerThatDoesNotAnswerReadLocalSupportedCommandsIsTakenForCore40() async throws {
        var answers = ScriptedController.answers(listing: [], v2: (251, 10), v1: (27, 4))
        answers[.readLocalSupportedCommands] = nil   // Unknown HCI Command
        answers[.leSetDataLength] = HCIHandleReturnParameters(handle: 1).encoded
        let scripted = ScriptedController(answers)
        let host = HCIHost(transport: scripted.host)
        try await host.powerOn()
        #expect(await host.state == .poweredOn)
        let c = await host.capabilities
        #expect(c.commandSource == .assumed)
        #expect(c.supportedCommands == ControllerCapabilities.bluetooth40Commands)
        #expect(c.buffers?.source == .leReadBufferSizeV1, "v2 is not assumed")
        #expect(!c.supports(.dataLengthExtension) && !c.supports(.phyUpdate))
        #expect(c.version?.hciVersion == .v4_1)
        let sent = scripted.host.opcodes
        #expect(sent.first == .reset && sent.dropFirst().first == .readLocalSupportedCommands)
        #expect(!sent.contains(.leReadBufferSizeV2) && !sent.contains(.leReadMaximumDataLength))
        await #expect(throws: HostError(.unsupportedByController(.command(.leSetDataLength)), "")) {
            _ = try await host.send(HCILESetDataLength(handle: 1, txOctets: 251, txTime: 2120))
        }
        #expect(!scripted.host.opcodes.contains(.leSetDataLength))
    }

    @Test func beforePowerOnNothingIsGated() {
        let c = ControllerCapabilities()
        #expect(c.commandSource == .unknown)
        #expect(c.allows(.leSetDataLength) && c.supports(.twoMegabitPHY))
        var listed = c
        listed.commandSource = .controller
        #expect(listed.allows(.reset) && listed.allows(.readLocalSupportedCommands))
        #expect(!listed.allows(.leSetDataLength))
        // Vendor commands have no bit to judge them by.
        #expect(listed.allows(HCIOpcode(ogf: 0x3F, ocf: 0x0001)))
    }
}
