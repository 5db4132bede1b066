import BLEWire

/// What a GATT client procedure wants next.
public enum GATTProcedureStep<Output: Sendable>: Sendable {
    /// Send this request and feed its response (or Error Response) to ``GATTProcedure/receive(_:)``.
    case request(ATTPDU)
    /// The procedure is done.
    case finished(Output)
}

/// A GATT client procedure as a value: it names its requests one at a time and reads their responses, with no I/O
/// of its own. Core 5.4, Vol 3, Part G, 4. A driver runs it over an ``ATTBearer``:
///
/// ```swift
/// var procedure = CharacteristicDiscovery(in: service)
/// var step = try procedure.start()
/// while case .request(let pdu) = step { step = try procedure.receive(try await bearerTransaction(pdu)) }
/// ```
///
/// Responses reach the procedure already matched to its request by the bearer (an Error Response names the request's
/// opcode; any other PDU is the request's own response). A procedure throws ``GATTError`` when the server answers with
/// an error it does not expect, or breaks the protocol (handles going backwards, lengths that do not fit...).
public protocol GATTProcedure: Sendable {
    /// What the procedure produces.
    associatedtype Output: Sendable
    /// The first step.
    mutating func start() throws(GATTError) -> GATTProcedureStep<Output>
    /// The next step after the response to the last request.
    mutating func receive(_ response: ATTPDU) throws(GATTError) -> GATTProcedureStep<Output>
}

extension GATTProcedure {
    /// Runs the procedure against a synchronous `server` (for tests and in-process use).
    public mutating func run(_ server: (ATTPDU) throws(GATTError) -> ATTPDU) throws(GATTError) -> Output {
        var step = try start()
        while true {
            switch step {
            case .finished(let output): return output
            case .request(let pdu): step = try receive(try server(pdu))
            }
        }
    }
}

/// The walk every discovery procedure makes over a handle range: pages of results whose handles must rise strictly
/// within the range, the next page starting after the last handle seen, until the range's end or Attribute Not
/// Found. Core 5.4, Vol 3, Part G, 4.4.1, 4.5.1, 4.6.1, 4.7.1.
struct HandleWalk: Sendable, Hashable {
    /// Where the next page starts.
    private(set) var start: AttributeHandle
    /// The range's last handle.
    let end: AttributeHandle

    init(_ range: ClosedRange<AttributeHandle>) {
        start = max(1, range.lowerBound)
        end = range.upperBound
    }

    /// The range the next request covers.
    var range: ATTHandleRange { ATTHandleRange(start: start, end: end) }

    /// Checks one page of results, given as the first and last handle of each (the same handle for single
    /// attributes, the group end for services), and moves past it. Returns whether another page is needed.
    mutating func advance(past spans: [(first: AttributeHandle, last: AttributeHandle)], _ what: String) throws(GATTError) -> Bool {
        guard !spans.isEmpty else { throw GATTError(.malformedResponse, "\(what): an empty page") }
        var floor = start
        var last = start
        for (index, span) in spans.enumerated() {
            guard span.first >= floor, span.first <= end else {
                throw GATTError(.malformedResponse, index == 0 || span.first > end
                    ? "\(what): handle \(span.first) outside \(start)–\(end)"
                    : "\(what): handle \(span.first) repeats or goes backwards")
            }
            guard span.last >= span.first, span.last <= end else {
                throw GATTError(.malformedResponse, "\(what): group \(span.first)–\(span.last) is inverted or outside the range")
            }
            last = span.last
            guard span.last < end else {
                guard index == spans.count - 1 else { throw GATTError(.malformedResponse, "\(what): results after the range's end") }
                return false
            }
            guard let after = span.last.next else { return false }
            floor = after
        }
        // last < end here, so it has a next handle.
        guard let next = last.next else { return false }
        start = next
        return true
    }
}

extension ATTErrorResponse {
    /// The error as a ``GATTError`` of the request it answers.
    func gattError(_ request: String) -> GATTError {
        GATTError(.att(error, handle: handle), "\(request): \(error) on handle \(handle)")
    }
}
