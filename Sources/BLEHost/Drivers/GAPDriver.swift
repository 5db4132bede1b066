import BLEProtocols
import BLEWire

/// The GAP driver: runs the ``GAPProcedures`` machine (scanning, advertising, connection attempts, the own address)
/// and holds what its callers wait on — each procedure's caller, the scan streams, the machine's timers.
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
    var scanStreams: [Int: AsyncThrowingStream<AdvertisementReport, any Error>.Continuation] = [:]
    /// The machine's timers.
    var timers = TimerSet<GAPProcedures.Timer>()
    /// Extended advertising reports split over several events, put back together.
    var assembler = ExtendedReportAssembler()

    init(configuration: GAPProcedures.Configuration) {
        machine = GAPProcedures(configuration: configuration)
    }

    /// The stream of the scan that is on.
    var currentScanStream: AsyncThrowingStream<AdvertisementReport, any Error>.Continuation? {
        machine.scan.flatMap { scanStreams[$0.generation] }
    }

    /// Ends every scan stream with `error` (the controller is gone).
    mutating func endScanStreams(throwing error: any Error) {
        for continuation in scanStreams.values { continuation.finish(throwing: error) }
        scanStreams = [:]
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
