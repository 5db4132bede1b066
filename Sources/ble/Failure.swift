import ArgumentParser
import BLE
import BLEProfiles
import Foundation

/// The tool's exit statuses (documented in `ble --help` and docs/ble-tool.md).
enum ExitStatus {
    /// Success.
    static let success: Int32 = 0
    /// Anything else: the controller cannot be reached, the link dropped, the transport failed...
    static let failure: Int32 = 1
    /// Not found or timed out: no such device, characteristic or descriptor; no answer in time.
    static let notFoundOrTimedOut: Int32 = 2
    /// A protocol error from the peer or the controller: an ATT error, a GATT procedure that broke the protocol,
    /// an HCI command or connection refused with a status.
    static let protocolError: Int32 = 3
    /// A command-line mistake (EX_USAGE); the usage text is printed with it.
    static let usage: Int32 = 64
}

/// A runtime failure the tool detected itself: the reason says what and where, the code's category how it ends.
typealias CommandFailure = BLEFailure<CommandFailureCode>

/// The kinds of ``CommandFailure``: one per exit status a failure the tool detects can earn.
struct CommandFailureCode: BLEErrorCode {
    private enum Backing: Hashable, Sendable { case notFound, timedOut, refused, failed }
    private let backing: Backing
    private init(_ backing: Backing) { self.backing = backing }

    /// A device, characteristic or descriptor is not there.
    static let notFound = CommandFailureCode(.notFound)
    /// Something did not answer in time.
    static let timedOut = CommandFailureCode(.timedOut)
    /// The peer refused (a pairing, a request).
    static let refused = CommandFailureCode(.refused)
    /// Anything else (a link that ended early...).
    static let failed = CommandFailureCode(.failed)

    var category: BLEErrorCategory {
        switch backing {
        case .notFound: .notFound
        case .timedOut: .timedOut
        case .refused: .protocolError
        case .failed: .failure
        }
    }

    var description: String {
        switch backing {
        case .notFound: "notFound"
        case .timedOut: "timedOut"
        case .refused: "refused"
        case .failed: "failed"
        }
    }
}

extension BLEFailure where Code == CommandFailureCode {
    /// A device, characteristic or descriptor is not there.
    static func notFound(_ message: String, file: String = #fileID, line: Int = #line) -> CommandFailure {
        CommandFailure(.notFound, message, file: file, line: line)
    }
    /// Something did not answer in time.
    static func timedOut(_ message: String, file: String = #fileID, line: Int = #line) -> CommandFailure {
        CommandFailure(.timedOut, message, file: file, line: line)
    }
    /// Anything else (a link that ended early...).
    static func failed(_ message: String, file: String = #fileID, line: Int = #line) -> CommandFailure {
        CommandFailure(.failed, message, file: file, line: line)
    }
}

/// An error with what the tool was doing when it happened ("reading 2A29 on SwiftBLELab").
struct InContext: Error, CustomStringConvertible {
    var context: String
    var underlying: any Error
    var description: String { "\(context): \(describeError(underlying))" }
}

/// Runs `body`, adding `context` to what it throws (a command-line mistake or a cancellation passes unchanged).
func during<T>(_ context: @autoclosure () -> String, _ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let error as ValidationError {
        throw error
    } catch let error as CancellationError {
        throw error
    } catch {
        throw InContext(context: context(), underlying: error)
    }
}

/// The message of an error, for `error: <message>`: the reason of the stack's errors (never a type dump), after
/// what the tool was doing.
func describeError(_ error: any Error) -> String {
    switch error {
    case let e as InContext: e.description
    case let e as any BLEError: e.reason
    case let e as HCIStatus: "the controller answered \(e)"
    case is CancellationError: "interrupted"
    default: "\(error)"
    }
}

/// The exit status an error earns (see ``ExitStatus``): its category's, for every error of the stack's shape.
func exitStatus(for error: any Error) -> Int32 {
    switch error {
    case let e as InContext: exitStatus(for: e.underlying)
    case let e as any BLEError: exitStatus(for: e.category)
    // A wire code thrown as it is: the controller said no.
    case is HCIStatus: ExitStatus.protocolError
    case is CancellationError: 130
    default: ExitStatus.failure
    }
}

/// The exit status of a category: not found or timed out 2, refused by the peer or the controller (or a protocol
/// broken) 3, anything else 1.
func exitStatus(for category: BLEErrorCategory) -> Int32 {
    switch category {
    case .notFound, .timedOut: ExitStatus.notFoundOrTimedOut
    case .protocolError: ExitStatus.protocolError
    default: ExitStatus.failure
    }
}

/// What running the command line came to.
private enum Outcome: Sendable {
    case success
    /// A command-line mistake, `--help` or an explicit exit: ArgumentParser prints it (with the usage for a mistake).
    case argumentParser(any Error)
    /// A runtime error.
    case failure(any Error)
}

/// The signal that interrupted the command, if one did.
private actor Interruption {
    private(set) var signal: Int32 = 0

    /// Records `number`; returns whether it is the first signal.
    func record(_ number: Int32) -> Bool {
        defer { if signal == 0 { signal = number } }
        return signal == 0
    }
}

extension BLETool {
    /// Parses the command line and runs the command. A command-line mistake prints the message and the usage text
    /// (exit 64); a runtime error prints `error: <message>` on standard error, without the usage text, and exits
    /// with the status of ``exitStatus(for:)``. SIGINT or SIGTERM cancels the command, which still disconnects and
    /// powers off on its way out, then exits with 128 + the signal's number (a second signal exits at once).
    static func main() async {
        let work = Task<Outcome, Never> {
            let command: any ParsableCommand
            do {
                command = try parseAsRoot()
            } catch {
                return .argumentParser(error)
            }
            do {
                var command = command
                if var asyncCommand = command as? any AsyncParsableCommand {
                    try await asyncCommand.run()
                } else {
                    try command.run()
                }
                return .success
            } catch {
                // ArgumentParser's own: a ValidationError (a command-line mistake found in run()), an explicit exit, or
                // --help (parsed as a help command whose run() throws). Every other error is a runtime failure.
                let own = error is ValidationError || error is CleanExit || error is ExitCode || BLETool.exitCode(for: error) != .failure
                return own ? .argumentParser(error) : .failure(error)
            }
        }
        let interruption = Interruption()
        let sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                Task {
                    guard await interruption.record(number) else { Foundation.exit(128 + number) }
                    work.cancel()
                }
            }
            source.resume()
            return source
        }
        let outcome = await work.value
        for source in sources { source.cancel() }
        let interrupted = await interruption.signal
        switch outcome {
        case .success:
            if interrupted != 0 { Foundation.exit(128 + interrupted) }
        case .argumentParser(let error):
            exit(withError: error)
        case .failure(let error):
            if interrupted != 0 { Foundation.exit(128 + interrupted) }
            writeErrorLine("error: \(describeError(error))")
            Foundation.exit(exitStatus(for: error))
        }
    }
}
