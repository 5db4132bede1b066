import BLEWire

/// The ATT bearer of one link, both roles, as a sans-I/O state machine. Core 5.4, Vol 3, Part F, 3.3.
///
/// Client side: requests are sent one at a time (a client has at most one outstanding request); others wait in
/// order. A response is matched to the outstanding request by its opcode: an Error Response must name the request's
/// opcode and any other response must be the request's own response, or the request fails as malformed (the link
/// stays up). Responses nobody asked for are dropped. Notifications and indications are delivered; an indication is
/// confirmed after it was delivered.
///
/// Server side: one indication is outstanding at a time (others wait in order) until the client confirms it. The
/// peer's requests are handed up one at a time (``Action/serve(_:)``): the next one waits until ``respond(_:)``
/// answered the current one, so a server that answers later still answers in order. Commands are handed up at once.
///
/// Both directions have the 30-second transaction timeout, as timer actions: when a request or an indication
/// is not answered in time the bearer closes: what waits on it fails, and no further ATT PDU is sent or accepted on
/// it (Core 5.4, Vol 3, Part F, 3.3.3). The link is not the bearer's to end: it stays up for whatever else uses it
/// (L2CAP channels, SMP), and a new bearer comes with a new link.
public struct ATTBearer: Sendable {
    /// Identifies one request of this bearer's client side. Never reused within a bearer.
    public struct RequestID: Hashable, Sendable, CustomStringConvertible {
        /// The sequence number.
        public let rawValue: UInt64
        public var description: String { "request #\(rawValue)" }
    }

    /// Identifies one indication of this bearer's server side. Never reused within a bearer.
    public struct IndicationID: Hashable, Sendable, CustomStringConvertible {
        /// The sequence number.
        public let rawValue: UInt64
        public var description: String { "indication #\(rawValue)" }
    }

    /// The bearer's timers.
    public enum Timer: Hashable, Sendable {
        /// The outstanding request's transaction.
        case request
        /// The outstanding indication's transaction.
        case indication
    }

    /// What the driver must do.
    public enum Action: Sendable, Equatable {
        /// Send this PDU on the ATT channel.
        case send([UInt8])
        /// Start (or restart) a timer.
        case startTimer(Timer, Duration)
        /// Cancel a timer.
        case cancelTimer(Timer)
        /// A request finished: its response (an Error Response naming the request included), or why it failed.
        case complete(RequestID, Result<ATTPDU, GATTError>)
        /// The client confirmed an indication, or it failed.
        case confirmed(IndicationID, Result<Void, GATTError>)
        /// A notification arrived (one per value of a Multiple Handle Value Notification).
        case notification(handle: AttributeHandle, value: [UInt8])
        /// An indication arrived (its confirmation follows as a ``send(_:)``).
        case indication(handle: AttributeHandle, value: [UInt8])
        /// A PDU from the peer for the local server. A request (``ATTPDU/needsResponse``) must be answered with
        /// ``ATTBearer/respond(_:)`` before the next request is handed up.
        case serve([UInt8])

        public static func == (lhs: Action, rhs: Action) -> Bool {
            switch (lhs, rhs) {
            case (.send(let a), .send(let b)): a == b
            case (.startTimer(let a, let x), .startTimer(let b, let y)): a == b && x == y
            case (.cancelTimer(let a), .cancelTimer(let b)): a == b
            case (.complete(let a, let x), .complete(let b, let y)): a == b && x == y
            case (.confirmed(let a, let x), .confirmed(let b, let y)):
                switch (x, y) {
                case (.success, .success): a == b
                case (.failure(let e), .failure(let f)): a == b && e == f
                default: false
                }
            case (.notification(let a, let x), .notification(let b, let y)): a == b && x == y
            case (.indication(let a, let x), .indication(let b, let y)): a == b && x == y
            case (.serve(let a), .serve(let b)): a == b
            default: false
            }
        }
    }

    /// The ATT transaction timeout (30 s in the specification).
    public let transactionTimeout: Duration

    private var closedBecause: GATTError?
    private var nextID: UInt64 = 0
    private var outstanding: (id: RequestID, opcode: ATTOpcode)?
    private var requests = FIFO<(RequestID, ATTPDU)>()
    private var outstandingIndication: IndicationID?
    private var indications = FIFO<(IndicationID, [UInt8])>()
    private var serving = false
    private var incoming = FIFO<[UInt8]>()
    /// Requests from the peer waiting while the application answers an earlier one; more are dropped.
    public var incomingLimit = 16

    /// A new, open bearer.
    public init(transactionTimeout: Duration = .seconds(30)) {
        self.transactionTimeout = transactionTimeout
    }

    /// Why the bearer is closed, or `nil` while it is open.
    public var closedReason: GATTError? { closedBecause }
    /// Whether a request is outstanding.
    public var hasOutstandingRequest: Bool { outstanding != nil }
    /// Requests waiting behind the outstanding one.
    public var queuedRequestCount: Int { requests.count }
    /// Whether an indication waits for its confirmation.
    public var hasOutstandingIndication: Bool { outstandingIndication != nil }

    private mutating func makeID() -> UInt64 {
        nextID += 1
        return nextID
    }

    // MARK: Client side

    /// Queues a request; it goes out now when no other is outstanding.
    public mutating func request(_ pdu: ATTPDU) -> (RequestID, [Action]) {
        let id = RequestID(rawValue: makeID())
        if let closedBecause { return (id, [.complete(id, .failure(closedBecause))]) }
        requests.append((id, pdu))
        return (id, sendNextRequest())
    }

    /// Sends a PDU that gets no response (a command or a notification); nothing when the bearer is closed.
    public func unanswered(_ pdu: ATTPDU) -> [Action] {
        closedBecause == nil ? [.send(pdu.encoded)] : []
    }

    private mutating func sendNextRequest() -> [Action] {
        guard outstanding == nil, let (id, pdu) = requests.popFirst() else { return [] }
        outstanding = (id, pdu.opcode)
        return [.send(pdu.encoded), .startTimer(.request, transactionTimeout)]
    }

    private mutating func receiveResponse(_ bytes: [UInt8], opcode: ATTOpcode) -> [Action] {
        // A response nobody asked for is dropped (Core 5.4, Vol 3, Part F, 3.3.2: at most one outstanding request).
        guard let (id, requestOpcode) = outstanding else { return [] }
        outstanding = nil
        let result: Result<ATTPDU, GATTError>
        do {
            let pdu = try ATTPDU(bytes: bytes)
            if case .errorResponse(let e) = pdu, e.requestOpcode != requestOpcode {
                result = .failure(GATTError(.malformedResponse, "Error Response names \(e.requestOpcode), the request was \(requestOpcode)"))
            } else if case .errorResponse = pdu {
                result = .success(pdu)
            } else if requestOpcode.responseOpcode != opcode {
                result = .failure(GATTError(.malformedResponse, "\(opcode) in answer to \(requestOpcode)"))
            } else {
                result = .success(pdu)
            }
        } catch {
            result = .failure(GATTError(.malformedResponse, "\(opcode) does not decode: \(error)"))
        }
        return [.cancelTimer(.request), .complete(id, result)] + sendNextRequest()
    }

    // MARK: Server side

    /// Queues an indication of `value` on attribute `handle`; it goes out now when no other is outstanding.
    public mutating func indicate(handle: AttributeHandle, value: [UInt8]) -> (IndicationID, [Action]) {
        let id = IndicationID(rawValue: makeID())
        if let closedBecause { return (id, [.confirmed(id, .failure(closedBecause))]) }
        indications.append((id, ATTPDU.handleValueIndication(.init(handle: handle, value: value)).encoded))
        return (id, sendNextIndication())
    }

    private mutating func sendNextIndication() -> [Action] {
        guard outstandingIndication == nil, let (id, bytes) = indications.popFirst() else { return [] }
        outstandingIndication = id
        return [.send(bytes), .startTimer(.indication, transactionTimeout)]
    }

    /// Answers the request handed up last by ``Action/serve(_:)``; the next waiting request is handed up.
    /// A `nil` response (the server decided the PDU needed none) only frees the slot.
    public mutating func respond(_ response: [UInt8]?) -> [Action] {
        guard serving else { return [] }
        serving = false
        var actions: [Action] = []
        if let response, closedBecause == nil { actions.append(.send(response)) }
        if closedBecause == nil, let next = incoming.popFirst() {
            serving = true
            actions.append(.serve(next))
        }
        return actions
    }

    // MARK: Input

    /// Handles one PDU from the peer.
    public mutating func receive(_ bytes: [UInt8]) -> [Action] {
        guard closedBecause == nil, let first = bytes.first else { return [] }
        let opcode = ATTOpcode(rawValue: first)
        if opcode.isResponse { return receiveResponse(bytes, opcode: opcode) }
        switch opcode {
        case .handleValueNotification, .multipleHandleValueNotification, .handleValueIndication:
            // Malformed notifications and indications are dropped (there is nothing to answer).
            switch try? ATTPDU(bytes: bytes) {
            case .handleValueNotification(let n): return [.notification(handle: n.handle, value: n.value)]
            case .multipleHandleValueNotification(let m): return m.entries.map { .notification(handle: $0.handle, value: $0.value) }
            case .handleValueIndication(let i):
                return [.indication(handle: i.handle, value: i.value), .send(ATTPDU.handleValueConfirmation(.init()).encoded)]
            default: return []
            }
        case .handleValueConfirmation:
            guard let id = outstandingIndication, bytes.count == 1 else { return [] }
            outstandingIndication = nil
            return [.cancelTimer(.indication), .confirmed(id, .success(()))] + sendNextIndication()
        default:
            // Commands never wait; requests (and unknown opcodes that are not commands) are served one at a time.
            guard !opcode.isCommand else { return [.serve(bytes)] }
            if serving {
                if incoming.count < incomingLimit { incoming.append(bytes) }
                return []
            }
            serving = true
            return [.serve(bytes)]
        }
    }

    /// A timer fired: the outstanding transaction timed out and the bearer closes (its link stays up).
    public mutating func timerFired(_ timer: Timer) -> [Action] {
        switch timer {
        case .request where outstanding != nil:
            return close(GATTError(.timeout, "no ATT response within \(transactionTimeout); the ATT bearer is closed"))
        case .indication where outstandingIndication != nil:
            return close(GATTError(.timeout, "no confirmation of an indication within \(transactionTimeout); the ATT bearer is closed"))
        default:
            return []
        }
    }

    /// Closes the bearer (the link went down, or a timeout): everything outstanding or queued fails with `error`,
    /// and nothing more is sent or accepted.
    public mutating func close(_ error: GATTError) -> [Action] {
        guard closedBecause == nil else { return [] }
        closedBecause = error
        var actions: [Action] = []
        if let (id, _) = outstanding {
            actions += [.cancelTimer(.request), .complete(id, .failure(error))]
            outstanding = nil
        }
        while let (id, _) = requests.popFirst() { actions.append(.complete(id, .failure(error))) }
        if let id = outstandingIndication {
            actions += [.cancelTimer(.indication), .confirmed(id, .failure(error))]
            outstandingIndication = nil
        }
        while let (id, _) = indications.popFirst() { actions.append(.confirmed(id, .failure(error))) }
        incoming.removeAll()
        serving = false
        return actions
    }
}
