import BLEProtocols
import BLEWire
import Logging

/// The narrow port through which the ``GAPDriver`` talks back to its host: send the machine's commands, make the
/// addresses it asks for, and call back when its timers fire.
///
/// The driver works in place (``HCIHost/gap``); the host sends what it was asked, in order, once the driver's step is
/// over (a send can end the transport, which ends the machine's procedures).
protocol GAPPort {
    /// A reading of the host's monotonic clock, for the machine.
    var now: Duration { get }
    /// Sends one of the machine's commands; its outcome goes back to the machine (``GAPProcedures/commandFinished(_:for:now:)``).
    mutating func send(_ command: GAPProcedures.Command)
    /// Sends LE Rand; a random static address made from it goes back to the machine
    /// (``GAPProcedures/staticAddressMade(_:now:)``).
    mutating func makeStaticAddress()
    /// A new resolvable private address from this side's IRK; `nil` without one.
    func makePrivateAddress() -> LEAddress?
    /// What the machine's timers call when they fire.
    func timerHandler() -> @Sendable (TimerSet<GAPProcedures.Timer>.Firing) async -> Void
}

/// The GAP driver: runs the ``GAPProcedures`` machine (scanning, advertising, connection attempts, the own address),
/// carries out its actions through a ``GAPPort``, and holds what its callers wait on — each procedure's caller, the
/// scan streams, the machine's timers.
struct GAPDriver {
    /// How a procedure ended, for its caller.
    enum Outcome {
        case done
        case connected(ConnectionHandle)
        case failed(GAPProcedures.Failure)
    }

    var machine: GAPProcedures
    /// Each waiting caller, by its procedure: in place before the procedure's first command leaves.
    var waiters: [GAPProcedures.ProcedureID: (Outcome) -> Void] = [:]
    /// The report streams of scans, by scan generation (the machine's); the one of the scan that is on gets reports.
    var scanStreams: [Int: ScanSink] = [:]
    /// The reports of the host's step under way, for a scan whose stream takes batches (``ScanSink/batches(_:)``):
    /// yielded as one element when the step ends (``HCIHost/flushReports()``).
    var pendingReports: [AdvertisementReport] = []
    /// The machine's timers.
    var timers = TimerSet<GAPProcedures.Timer>()
    /// Extended advertising reports split over several events, put back together.
    var assembler = ExtendedReportAssembler()

    let logger: Logger

    init(configuration: GAPProcedures.Configuration, logger: Logger) {
        machine = GAPProcedures(configuration: configuration)
        self.logger = logger
    }

    /// Carries out the machine's actions, in order: its callers told, its timers set, its commands and addresses asked
    /// of `port`.
    mutating func perform(_ actions: [GAPProcedures.Action], port: inout some GAPPort) {
        for action in actions {
            switch action {
            case .send(let command):
                port.send(command)
            case .makePrivateAddress:
                perform(machine.privateAddressMade(port.makePrivateAddress(), now: port.now), port: &port)
            case .makeStaticAddress:
                // From the controller's random numbers, as the random static identity of a controller without a
                // public address (Core 5.4, Vol 6, Part B, 1.3.2.1).
                port.makeStaticAddress()
            case .startTimer(let timer, let duration):
                timers.start(timer, after: duration, handler: port.timerHandler())
            case .cancelTimer(let timer):
                timers.cancel(timer)
            case .finished(let id, let failure):
                if let waiter = waiters.removeValue(forKey: id) {
                    waiter(failure.map { .failed($0) } ?? .done)
                } else if let failure {
                    // A procedure nobody waits for (a scan's stop, an address rotation, an advertising restart). When
                    // the controller is gone that is reported already, and its procedures ending with it is expected.
                    switch failure {
                    case .controllerLost, .command(_, .cancelled):
                        logger.debug("GAP: \(id) ended with the controller")
                    default:
                        logger.warning("GAP: \(id) failed: \(Self.error(failure))")
                    }
                }
            case .connected(let id, let handle):
                waiters.removeValue(forKey: id)?(.connected(handle))
            case .scanEnded(let generation):
                scanStreams.removeValue(forKey: generation)?.finish()
                pendingReports = []
            }
        }
    }

    /// One of the machine's timers fired: the machine's actions, when it was still set.
    mutating func timerFired(_ firing: TimerSet<GAPProcedures.Timer>.Firing, port: inout some GAPPort) {
        guard timers.expire(firing) else { return }
        perform(machine.timerFired(firing.key, now: port.now), port: &port)
    }

    /// The stream of the scan that is on.
    var currentScanStream: ScanSink? {
        machine.scan.flatMap { scanStreams[$0.generation] }
    }

    /// Ends every scan stream with `error` (the controller is gone).
    mutating func endScanStreams(throwing error: any Error) {
        for sink in scanStreams.values { sink.finish(throwing: error) }
        scanStreams = [:]
        pendingReports = []
    }

    /// The error a caller sees for a failed procedure.
    static func error(_ failure: GAPProcedures.Failure) -> any Error {
        switch failure {
        case .command(let command, let outcome):
            let (opcode, name) = command.identity
            switch outcome {
            case .failed(let status):
                return HostError(.commandFailed(opcode, status), "\(name) failed: \(status)")
            case .timedOut:
                return HostError(.commandTimedOut(opcode), "\(name): no answer from the controller")
            case .cancelled:
                return HostError(.transportClosed, "\(name): the transport closed")
            case .complete, .pending:
                return HostError(.malformedResponse(opcode), "\(name) failed")
            }
        case .connectionInProgress:
            return HostError(.connectionInProgress, "another connection attempt is in progress")
        case .connectionFailed(let status):
            return HostError(.connectionFailed(status), "connection failed: \(status)")
        case .connectionTimedOut:
            return HostError(.connectionTimedOut, "the connection attempt timed out and was cancelled")
        case .cancelled:
            return CancellationError()
        case .noPrivateAddress:
            return HostError(.commandFailed(.leSetRandomAddress, .unspecifiedError),
                             "privacy: this side has no identity resolving key (no identity address, or the bond store fails)")
        case .noStaticAddress:
            return HostError(.malformedResponse(.leRand), "could not make a random static address from LE Rand")
        case .controllerLost:
            return HostError(.transportClosed, "the transport closed")
        }
    }
}

/// Where a scan's reports go: one stream element per report (``HCIHost/scan(_:)``), or one element per step of the
/// host with every report that step decoded (``HCIHost/scanBatches(_:)``: one wake-up of the consumer for a burst).
enum ScanSink: Sendable {
    case reports(AsyncThrowingStream<AdvertisementReport, any Error>.Continuation)
    case batches(AsyncThrowingStream<[AdvertisementReport], any Error>.Continuation)

    /// Finishes the stream (with `error`, when given).
    func finish(throwing error: (any Error)? = nil) {
        switch self {
        case .reports(let c): if let error { c.finish(throwing: error) } else { c.finish() }
        case .batches(let c): if let error { c.finish(throwing: error) } else { c.finish() }
        }
    }
}

extension GAPProcedures.Command {
    /// The command's opcode and its type's name, for errors and logs.
    var identity: (HCIOpcode, String) {
        switch self {
        case .setScanParameters: (HCILESetScanParameters.opcode, "HCILESetScanParameters")
        case .setScanEnable: (HCILESetScanEnable.opcode, "HCILESetScanEnable")
        case .setAdvertisingParameters: (HCILESetAdvertisingParameters.opcode, "HCILESetAdvertisingParameters")
        case .setAdvertisingData: (HCILESetAdvertisingData.opcode, "HCILESetAdvertisingData")
        case .setScanResponseData: (HCILESetScanResponseData.opcode, "HCILESetScanResponseData")
        case .setAdvertisingEnable: (HCILESetAdvertisingEnable.opcode, "HCILESetAdvertisingEnable")
        case .setRandomAddress: (HCILESetRandomAddress.opcode, "HCILESetRandomAddress")
        case .createConnection: (HCILECreateConnection.opcode, "HCILECreateConnection")
        case .createConnectionCancel: (HCILECreateConnectionCancel.opcode, "HCILECreateConnectionCancel")
        case .setAdvertisingSetRandomAddress: (HCILESetAdvertisingSetRandomAddress.opcode, "HCILESetAdvertisingSetRandomAddress")
        case .setExtendedAdvertisingParameters: (HCILESetExtendedAdvertisingParameters.opcode, "HCILESetExtendedAdvertisingParameters")
        case .setExtendedAdvertisingData: (HCILESetExtendedAdvertisingData.opcode, "HCILESetExtendedAdvertisingData")
        case .setExtendedScanResponseData: (HCILESetExtendedScanResponseData.opcode, "HCILESetExtendedScanResponseData")
        case .setExtendedAdvertisingEnable: (HCILESetExtendedAdvertisingEnable.opcode, "HCILESetExtendedAdvertisingEnable")
        case .clearAdvertisingSets: (HCILEClearAdvertisingSets.opcode, "HCILEClearAdvertisingSets")
        case .setExtendedScanParameters: (HCILESetExtendedScanParameters.opcode, "HCILESetExtendedScanParameters")
        case .setExtendedScanEnable: (HCILESetExtendedScanEnable.opcode, "HCILESetExtendedScanEnable")
        case .extendedCreateConnection: (HCILEExtendedCreateConnection.opcode, "HCILEExtendedCreateConnection")
        }
    }
}
