import BLEWire

/// What the application is asked about an attribute it answers (``GATTValueSource/application``).
public enum ATTApplicationRequest: Sendable, Hashable {
    /// Read the value from `offset` on (a Read Blob asks for the rest of a long value).
    case read(handle: AttributeHandle, offset: Int)
    /// Write `value` (a Write Request, or a Write Command when `withResponse` is false: its answer is not sent).
    case write(handle: AttributeHandle, value: [UInt8], withResponse: Bool)
    /// A client's prepared writes to the application's attributes, in the order they were queued, at Execute Write:
    /// accept them all or refuse them all (the stored attributes of the same set are written only on acceptance).
    case preparedWrites([ATTPrepareWriteRequest])
}

/// The application's answer to an ``ATTApplicationRequest``.
public enum ATTApplicationAnswer: Sendable, Hashable {
    /// The value read (from the request's offset on).
    case value([UInt8])
    /// The write (or the set of prepared writes) is accepted.
    case accepted
    /// Refused with an ATT error: a specification error, or an application error 0x80–0x9F.
    case error(ATTErrorCode)
}

extension ATTServer {
    /// A request that waits for the application. Give its ``requests`` to the application, then pass the answers,
    /// in the same order, to ``ATTServer/complete(_:with:connection:database:)``.
    public struct Pending: Sendable, Hashable {
        /// What to ask the application, in order.
        public let requests: [ATTApplicationRequest]
        /// Whether the peer waits for a response (false for a Write Command).
        public let needsResponse: Bool
        let finish: Finish
    }

    /// How to build the response once the application answered.
    enum Finish: Sendable, Hashable {
        case read(opcode: ATTOpcode, handle: AttributeHandle)
        case readByType(handle: AttributeHandle)
        case readMultiple(handles: [AttributeHandle], values: [AttributeHandle: [UInt8]], variable: Bool)
        case write(handle: AttributeHandle, value: [UInt8], withResponse: Bool)
        case execute(order: [AttributeHandle], values: [AttributeHandle: [UInt8]], firstHandle: AttributeHandle)
    }

    /// A Read or Read Blob of an attribute the application answers, once the request passed the server's checks.
    static func applicationRead(_ handle: AttributeHandle, offset: Int, opcode: ATTOpcode, _ c: ATTServerConnection, _ db: GATTDatabase) -> Output? {
        guard let a = db.attribute(handle), a.source == .application, accessError(a, write: false, c) == nil else { return nil }
        return Output(response: nil, events: [], pending: Pending(requests: [.read(handle: handle, offset: offset)], needsResponse: true,
                                                                  finish: .read(opcode: opcode, handle: handle)))
    }

    /// A write of an attribute the application answers, once it passed every check a stored value would.
    static func applicationWrite(_ handle: AttributeHandle, _ value: [UInt8], withResponse: Bool, _ c: ATTServerConnection, _ db: GATTDatabase) -> Output? {
        guard let a = db.attribute(handle), a.source == .application else { return nil }
        if let failure = writeError(a, value, withResponse: withResponse, c) {
            return withResponse ? output(fail(.writeRequest, handle, failure)) : Output(response: nil, events: [])
        }
        return Output(response: nil, events: [], pending: Pending(requests: [.write(handle: handle, value: value, withResponse: withResponse)],
                                                                  needsResponse: withResponse,
                                                                  finish: .write(handle: handle, value: value, withResponse: withResponse)))
    }

    /// Why a write of `value` to `a` is refused, if it is (the checks of every write, before the value is stored or
    /// handed to the application).
    static func writeError(_ a: GATTAttribute, _ value: [UInt8], withResponse: Bool, _ c: ATTServerConnection) -> ATTErrorCode? {
        if let failure = accessError(a, write: true, c) { return failure }
        guard value.count <= ATT.maximumAttributeValueLength else { return .invalidAttributeValueLength }
        switch a.role {
        case .characteristicValue(let properties):
            return (withResponse ? properties.contains(.write) : properties.contains(.writeWithoutResponse)) ? nil : .writeNotPermitted
        case .descriptor:
            return nil
        case .clientConfiguration, .serviceDeclaration, .include, .characteristicDeclaration:
            return .writeNotPermitted
        }
    }

    /// Builds the response to a pending request from the application's answers (one per request, in order; a
    /// missing answer counts as Unlikely Error), and applies what it accepted.
    public static func complete(_ pending: Pending, with answers: [ATTApplicationAnswer], connection c: inout ATTServerConnection,
                                database db: inout GATTDatabase) -> Output {
        func answer(_ i: Int) -> ATTApplicationAnswer { i < answers.count ? answers[i] : .error(.unlikelyError) }
        switch pending.finish {
        case .read(let opcode, let handle):
            switch answer(0) {
            case .value(let v):
                let part = Array(v.prefix(c.mtu - 1))
                return output(opcode == .readBlobRequest ? .readBlobResponse(.init(value: part)) : .readResponse(.init(value: part)))
            case .error(let code): return output(fail(opcode, handle, code))
            case .accepted: return output(fail(opcode, handle, .unlikelyError))
            }
        case .readByType(let handle):
            switch answer(0) {
            case .value(let v):
                return output(.readByTypeResponse(.init(entries: [.init(handle: handle, value: Array(v.prefix(readByTypeValueLimit(c))))])))
            case .error(let code): return output(fail(.readByTypeRequest, handle, code))
            case .accepted: return output(fail(.readByTypeRequest, handle, .unlikelyError))
            }
        case .readMultiple(let handles, var values, let variable):
            let opcode: ATTOpcode = variable ? .readMultipleVariableRequest : .readMultipleRequest
            for (i, request) in pending.requests.enumerated() {
                guard case .read(let handle, _) = request else { continue }
                switch answer(i) {
                case .value(let v): values[handle] = v
                case .error(let code): return output(fail(opcode, handle, code))
                case .accepted: return output(fail(opcode, handle, .unlikelyError))
                }
            }
            return output(composeMultiple(handles.map { values[$0] ?? [] }, variable: variable, c))
        case .write(let handle, let value, let withResponse):
            switch answer(0) {
            case .accepted, .value:
                return Output(response: withResponse ? ATTPDU.writeResponse(.init()).encoded : nil,
                              events: [.wrote(handle: handle, value: value, withResponse: withResponse)])
            case .error(let code):
                return withResponse ? output(fail(.writeRequest, handle, code)) : Output(response: nil, events: [])
            }
        case .execute(let order, let values, let firstHandle):
            guard case .accepted = answer(0) else {
                if case .error(let code) = answer(0) { return output(fail(.executeWriteRequest, firstHandle, code)) }
                return output(fail(.executeWriteRequest, firstHandle, .unlikelyError))
            }
            // Stored values may have changed while the application decided: check and write them again, all or none.
            var scratch = db
            var scratchConnection = c
            var events: [ATTServerEvent] = []
            for handle in order {
                if let failure = write(handle, values[handle] ?? [], withResponse: true, &scratchConnection, &scratch, &events) {
                    return output(fail(.executeWriteRequest, handle, failure))
                }
            }
            db = scratch
            c = scratchConnection
            return Output(response: ATTPDU.executeWriteResponse(.init()).encoded, events: events)
        }
    }
}
