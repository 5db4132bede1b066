import BLEWire

/// GATT Specification Supplement (Record Access Control Point, 0x2A52), as Glucose Service 1.0, 3.4 uses it: the op
/// codes of the Record Access Control Point.
public struct RACPOpCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The byte.
    public var rawValue: UInt8
    /// An op code from its byte.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Report stored records (1).
    public static let reportStoredRecords = RACPOpCode(rawValue: 1)
    /// Delete stored records (2).
    public static let deleteStoredRecords = RACPOpCode(rawValue: 2)
    /// Abort operation (3).
    public static let abortOperation = RACPOpCode(rawValue: 3)
    /// Report number of stored records (4).
    public static let reportNumberOfStoredRecords = RACPOpCode(rawValue: 4)
    /// Number of stored records response (5), server to client.
    public static let numberOfStoredRecordsResponse = RACPOpCode(rawValue: 5)
    /// Response code (6), server to client.
    public static let responseCode = RACPOpCode(rawValue: 6)

    /// The op code's or response code's name.
    public var description: String {
        switch self {
        case .reportStoredRecords: "report stored records"
        case .deleteStoredRecords: "delete stored records"
        case .abortOperation: "abort operation"
        case .reportNumberOfStoredRecords: "report number of stored records"
        case .numberOfStoredRecordsResponse: "number of stored records response"
        case .responseCode: "response code"
        default: "op code \(rawValue)"
        }
    }
}

/// GATT Specification Supplement (Record Access Control Point, 0x2A52): the operators that select records.
public struct RACPOperator: RawRepresentable, Sendable, Hashable {
    /// The byte.
    public var rawValue: UInt8
    /// An operator from its byte.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Null (0): no operator (abort, responses).
    public static let null = RACPOperator(rawValue: 0)
    /// All records (1).
    public static let allRecords = RACPOperator(rawValue: 1)
    /// Less than or equal to (2).
    public static let lessThanOrEqual = RACPOperator(rawValue: 2)
    /// Greater than or equal to (3).
    public static let greaterThanOrEqual = RACPOperator(rawValue: 3)
    /// Within range of, inclusive (4).
    public static let withinRange = RACPOperator(rawValue: 4)
    /// First record, the oldest (5).
    public static let firstRecord = RACPOperator(rawValue: 5)
    /// Last record, the most recent (6).
    public static let lastRecord = RACPOperator(rawValue: 6)
}

/// GATT Specification Supplement (Record Access Control Point, 0x2A52): the response code values.
public struct RACPResponseCode: RawRepresentable, Sendable, Hashable, Error, CustomStringConvertible {
    /// The byte.
    public var rawValue: UInt8
    /// A response code from its byte.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Success (1).
    public static let success = RACPResponseCode(rawValue: 1)
    /// Op code not supported (2).
    public static let opCodeNotSupported = RACPResponseCode(rawValue: 2)
    /// Invalid operator (3).
    public static let invalidOperator = RACPResponseCode(rawValue: 3)
    /// Operator not supported (4).
    public static let operatorNotSupported = RACPResponseCode(rawValue: 4)
    /// Invalid operand (5).
    public static let invalidOperand = RACPResponseCode(rawValue: 5)
    /// No records found (6).
    public static let noRecordsFound = RACPResponseCode(rawValue: 6)
    /// Abort unsuccessful (7).
    public static let abortUnsuccessful = RACPResponseCode(rawValue: 7)
    /// Procedure not completed (8).
    public static let procedureNotCompleted = RACPResponseCode(rawValue: 8)
    /// Operand not supported (9).
    public static let operandNotSupported = RACPResponseCode(rawValue: 9)

    /// The op code's or response code's name.
    public var description: String {
        switch self {
        case .success: "success"
        case .opCodeNotSupported: "op code not supported"
        case .invalidOperator: "invalid operator"
        case .operatorNotSupported: "operator not supported"
        case .invalidOperand: "invalid operand"
        case .noRecordsFound: "no records found"
        case .abortUnsuccessful: "abort unsuccessful"
        case .procedureNotCompleted: "procedure not completed"
        case .operandNotSupported: "operand not supported"
        default: "response code \(rawValue)"
        }
    }
}

/// Which stored records a procedure is about, by sequence number (filter type 0x01).
public enum RACPRecordFilter: Sendable, Hashable {
    /// Every record (operator 1).
    case all
    /// The oldest record (operator 5).
    case first
    /// The most recent record (operator 6).
    case last
    /// Records whose sequence number is at most this (operator 2).
    case atMost(UInt16)
    /// Records whose sequence number is at least this (operator 3).
    case atLeast(UInt16)
    /// Records whose sequence number is within the range, inclusive (operator 4).
    case sequenceNumbers(ClosedRange<UInt16>)

    /// The operator and operand bytes.
    var operatorAndOperand: (RACPOperator, [UInt8]) {
        func le(_ v: UInt16) -> [UInt8] { [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8)] }
        switch self {
        case .all: return (.allRecords, [])
        case .first: return (.firstRecord, [])
        case .last: return (.lastRecord, [])
        case .atMost(let n): return (.lessThanOrEqual, [RACPRequest.sequenceNumberFilter] + le(n))
        case .atLeast(let n): return (.greaterThanOrEqual, [RACPRequest.sequenceNumberFilter] + le(n))
        case .sequenceNumbers(let range): return (.withinRange, [RACPRequest.sequenceNumberFilter] + le(range.lowerBound) + le(range.upperBound))
        }
    }
}

/// GATT Specification Supplement (Record Access Control Point, 0x2A52): a request a client writes: op code, operator
/// and operand.
public struct RACPRequest: Sendable, Hashable, WireCodable {
    /// Filter type 0x01: the operand selects by sequence number.
    public static let sequenceNumberFilter: UInt8 = 0x01
    /// Filter type 0x02: the operand selects by user facing time.
    public static let userFacingTimeFilter: UInt8 = 0x02

    /// The op code.
    public var opCode: RACPOpCode
    /// The operator.
    public var `operator`: RACPOperator
    /// The operand, as sent.
    public var operand: [UInt8]

    /// A request from its fields.
    public init(opCode: RACPOpCode, operator: RACPOperator, operand: [UInt8] = []) {
        self.opCode = opCode
        self.operator = `operator`
        self.operand = operand
    }

    /// Report the stored records `filter` selects.
    public static func report(_ filter: RACPRecordFilter) -> RACPRequest {
        let (op, operand) = filter.operatorAndOperand
        return RACPRequest(opCode: .reportStoredRecords, operator: op, operand: operand)
    }
    /// Delete the stored records `filter` selects.
    public static func delete(_ filter: RACPRecordFilter) -> RACPRequest {
        let (op, operand) = filter.operatorAndOperand
        return RACPRequest(opCode: .deleteStoredRecords, operator: op, operand: operand)
    }
    /// Report how many stored records `filter` selects.
    public static func count(_ filter: RACPRecordFilter) -> RACPRequest {
        let (op, operand) = filter.operatorAndOperand
        return RACPRequest(opCode: .reportNumberOfStoredRecords, operator: op, operand: operand)
    }
    /// Abort the procedure in progress.
    public static let abort = RACPRequest(opCode: .abortOperation, operator: .null)

    /// Decodes a request: op code and operator (truncated when either is missing), the rest as the operand.
    public init(from reader: inout ByteReader) throws(WireError) {
        opCode = RACPOpCode(rawValue: try reader.readUInt8("RACP op code"))
        `operator` = RACPOperator(rawValue: try reader.readUInt8("RACP operator"))
        operand = reader.readRemaining()
    }

    /// Appends the request.
    public func encode(into writer: inout ByteWriter) {
        writer.write(opCode.rawValue)
        writer.write(`operator`.rawValue)
        writer.write(operand)
    }
}

/// GATT Specification Supplement (Record Access Control Point, 0x2A52): what the server indicates at the end of a
/// procedure.
public enum RACPResponse: Sendable, Hashable, WireCodable {
    /// Number of stored records response (op code 5, operator null, UInt16 count).
    case numberOfRecords(UInt16)
    /// Response code (op code 6, operator null, the request's op code and the response code value).
    case response(request: RACPOpCode, code: RACPResponseCode)

    /// Decodes a response; throws ``WireError`` (unknown type) for another op code, (invalid value) for an operator
    /// other than null, (truncated) when short.
    public init(from reader: inout ByteReader) throws(WireError) {
        let opCode = RACPOpCode(rawValue: try reader.readUInt8("RACP response op code"))
        let op = try reader.readUInt8("RACP response operator")
        guard op == RACPOperator.null.rawValue else { throw WireError(.invalidValue, "RACP response operator \(op) is not null") }
        switch opCode {
        case .numberOfStoredRecordsResponse:
            self = .numberOfRecords(try reader.readUInt16("RACP number of stored records"))
        case .responseCode:
            let request = RACPOpCode(rawValue: try reader.readUInt8("RACP request op code"))
            self = .response(request: request, code: RACPResponseCode(rawValue: try reader.readUInt8("RACP response code value")))
        default:
            throw WireError(.unknownType, "RACP op code \(opCode.rawValue) is no response")
        }
    }

    /// Appends the response.
    public func encode(into writer: inout ByteWriter) {
        switch self {
        case .numberOfRecords(let count):
            writer.write(RACPOpCode.numberOfStoredRecordsResponse.rawValue)
            writer.write(RACPOperator.null.rawValue)
            writer.write(count)
        case .response(let request, let code):
            writer.write(RACPOpCode.responseCode.rawValue)
            writer.write(RACPOperator.null.rawValue)
            writer.write(request.rawValue)
            writer.write(code.rawValue)
        }
    }
}

/// A stored record a Record Access Control Point selects by sequence number.
public protocol RACPRecord: Sendable, Hashable {
    /// The record's sequence number (increasing with each new record).
    var sequenceNumber: UInt16 { get }
}

/// Glucose Service 1.0, 3.4 and the Record Access Control Point of the GATT Specification Supplement: the server side
/// as a pure, synchronous state machine over a record store. Feed it each write of the control point (with whether
/// the writing client enabled its indications) and it says what to answer: an ATT error, a response to indicate, or
/// the start of a report whose records ``nextReportStep()`` then hands out one by one, ending with the response
/// to indicate. Only a report spans several steps, so only a report can be aborted or be "in progress".
///
/// - A write while a report is in progress (other than Abort) is refused with ATT error 0x80 (Procedure Already In
///   Progress); a write from a client that has not enabled indications of the control point with 0x81 (Client
///   Characteristic Configuration Descriptor Improperly Configured); an empty write with Invalid Attribute Value
///   Length.
/// - Unknown op codes and the server's own (5, 6) get Op Code Not Supported; a null or missing operator Invalid
///   Operator; operators 7...255 Operator Not Supported; an operand that does not fit the operator Invalid Operand;
///   filter type 0x02 (user facing time) Operand Not Supported.
/// - Report and Delete answer No Records Found when nothing matches; the count answers 0 then.
/// - Abort answers Success (stopping the report in progress, if any); its deletes and counts complete at once, so
///   this server never has to answer Abort Unsuccessful.
public struct RACPStateMachine<Record: RACPRecord>: Sendable {
    /// What to answer a write with.
    public enum WriteOutcome: Sendable, Hashable {
        /// Refuse the write with this ATT error.
        case refused(ATTErrorCode)
        /// Accept the write and indicate this response.
        case respond(RACPResponse)
        /// Accept the write; a report of this many records starts: call ``RACPStateMachine/nextReportStep()``.
        case reportStarted(count: Int)
    }

    /// One step of a report.
    public enum ReportStep: Sendable, Hashable {
        /// Notify this record.
        case send(Record)
        /// The report is over: indicate this response.
        case finish(RACPResponse)
    }

    /// The stored records, oldest (lowest sequence number) first.
    public private(set) var records: [Record]
    /// The records of the report in progress not yet handed out; `nil` when no report is in progress.
    public private(set) var reporting: [Record]?

    /// A machine over `records` (kept sorted by sequence number).
    public init(records: [Record] = []) {
        self.records = records.sorted { $0.sequenceNumber < $1.sequenceNumber }
    }

    /// Whether a report is in progress.
    public var isProcedureInProgress: Bool { reporting != nil }

    /// Stores a new record (kept in sequence-number order).
    public mutating func store(_ record: Record) {
        let index = records.firstIndex { $0.sequenceNumber > record.sequenceNumber } ?? records.endIndex
        records.insert(record, at: index)
    }

    /// Glucose Service 1.0: Procedure Already In Progress (ATT 0x80).
    public static var procedureAlreadyInProgress: ATTErrorCode { ATTErrorCode(rawValue: 0x80) }
    /// Glucose Service 1.0: Client Characteristic Configuration Descriptor Improperly Configured (ATT 0x81).
    public static var cccdImproperlyConfigured: ATTErrorCode { ATTErrorCode(rawValue: 0x81) }

    /// Handles a write of the control point.
    public mutating func write(_ value: [UInt8], indicationsEnabled: Bool) -> WriteOutcome {
        guard let first = value.first else { return .refused(.invalidAttributeValueLength) }
        let opCode = RACPOpCode(rawValue: first)
        if opCode == .abortOperation {
            guard indicationsEnabled else { return .refused(Self.cccdImproperlyConfigured) }
            guard value.count >= 2, value[1] == RACPOperator.null.rawValue else { return .respond(.response(request: opCode, code: .invalidOperator)) }
            guard value.count == 2 else { return .respond(.response(request: opCode, code: .invalidOperand)) }
            reporting = nil
            return .respond(.response(request: opCode, code: .success))
        }
        guard !isProcedureInProgress else { return .refused(Self.procedureAlreadyInProgress) }
        guard indicationsEnabled else { return .refused(Self.cccdImproperlyConfigured) }
        guard [.reportStoredRecords, .deleteStoredRecords, .reportNumberOfStoredRecords].contains(opCode) else {
            return .respond(.response(request: opCode, code: .opCodeNotSupported))
        }
        let selected: [Record]
        switch select(value) {
        case .success(let records): selected = records
        case .failure(let code): return .respond(.response(request: opCode, code: code))
        }
        switch opCode {
        case .reportStoredRecords:
            guard !selected.isEmpty else { return .respond(.response(request: opCode, code: .noRecordsFound)) }
            reporting = selected
            return .reportStarted(count: selected.count)
        case .deleteStoredRecords:
            guard !selected.isEmpty else { return .respond(.response(request: opCode, code: .noRecordsFound)) }
            let doomed = Set(selected.map(\.sequenceNumber))
            records.removeAll { doomed.contains($0.sequenceNumber) }
            return .respond(.response(request: opCode, code: .success))
        default:
            return .respond(.numberOfRecords(UInt16(clamping: selected.count)))
        }
    }

    /// The next step of the report in progress, or `nil` when none is in progress (for example after an abort).
    public mutating func nextReportStep() -> ReportStep? {
        guard var remaining = reporting else { return nil }
        guard !remaining.isEmpty else {
            reporting = nil
            return .finish(.response(request: .reportStoredRecords, code: .success))
        }
        let record = remaining.removeFirst()
        reporting = remaining
        return .send(record)
    }

    /// Ends the report in progress because a record could not be delivered: the response to indicate (Procedure Not
    /// Completed), or `nil` when no report was in progress.
    public mutating func interruptReport() -> RACPResponse? {
        guard reporting != nil else { return nil }
        reporting = nil
        return .response(request: .reportStoredRecords, code: .procedureNotCompleted)
    }

    /// The records a request's operator and operand select, or the response code refusing them.
    func select(_ value: [UInt8]) -> Result<[Record], RACPResponseCode> {
        guard value.count >= 2 else { return .failure(.invalidOperator) }
        let op = RACPOperator(rawValue: value[1])
        let operand = Array(value.dropFirst(2))
        func sequenceOperand(_ count: Int) -> Result<[UInt16], RACPResponseCode> {
            guard let filter = operand.first else { return .failure(.invalidOperand) }
            guard filter == RACPRequest.sequenceNumberFilter else {
                return .failure(filter == RACPRequest.userFacingTimeFilter ? .operandNotSupported : .invalidOperand)
            }
            guard operand.count == 1 + 2 * count else { return .failure(.invalidOperand) }
            return .success((0..<count).map { UInt16(operand[1 + 2 * $0]) | UInt16(operand[2 + 2 * $0]) << 8 })
        }
        switch op {
        case .null: return .failure(.invalidOperator)
        case .allRecords, .firstRecord, .lastRecord:
            guard operand.isEmpty else { return .failure(.invalidOperand) }
            if op == .allRecords { return .success(records) }
            let one = op == .firstRecord ? records.first : records.last
            return .success(one.map { [$0] } ?? [])
        case .lessThanOrEqual, .greaterThanOrEqual:
            return sequenceOperand(1).map { bounds in
                let bound = bounds[0]
                return records.filter { op == .lessThanOrEqual ? $0.sequenceNumber <= bound : $0.sequenceNumber >= bound }
            }
        case .withinRange:
            switch sequenceOperand(2) {
            case .failure(let code): return .failure(code)
            case .success(let bounds):
                guard bounds[0] <= bounds[1] else { return .failure(.invalidOperand) }
                return .success(records.filter { (bounds[0]...bounds[1]).contains($0.sequenceNumber) })
            }
        default:
            return .failure(.operatorNotSupported)
        }
    }
}
