import BLEWire

// What the ANCS Data Source sends (attributes, responses split over notifications, reassembled) and how ANCS fails.

/// An attribute of a response: its ID (a ``ANCSNotificationAttributeID`` or ``ANCSAppAttributeID`` raw value) and
/// its value.
public struct ANCSAttribute: Sendable, Hashable {
    /// The AttributeID.
    public var id: UInt8
    /// The value's bytes (UTF-8 text for every attribute ANCS defines).
    public var value: [UInt8]

    /// Creates an attribute.
    public init(id: UInt8, value: [UInt8]) {
        self.id = id
        self.value = value
    }

    /// Creates an attribute holding `text` in UTF-8.
    public init(id: UInt8, text: String) { self.init(id: id, value: Array(text.utf8)) }

    /// The value as text (invalid UTF-8 repaired with U+FFFD).
    public var text: String { String(decoding: value, as: UTF8.self) }
}

/// A Data Source response, whole: the command it answers, what it is about and the attributes, in the order sent.
public struct ANCSResponse: Sendable, Hashable {
    /// What a response is about.
    public enum Subject: Sendable, Hashable {
        /// A notification (Get Notification Attributes).
        case notification(UInt32)
        /// An app (Get App Attributes).
        case app(String)
    }

    /// What it is about (which also says which command it answers).
    public var subject: Subject
    /// The attributes, in the order sent.
    public var attributes: [ANCSAttribute]

    /// Creates a response.
    public init(subject: Subject, attributes: [ANCSAttribute]) {
        self.subject = subject
        self.attributes = attributes
    }

    /// The text of attribute `id`, if the response has it.
    public func text(_ id: UInt8) -> String? { attributes.first { $0.id == id }?.text }

    /// The text of notification attribute `id`, if the response has it.
    public subscript(_ id: ANCSNotificationAttributeID) -> String? { text(id.rawValue) }

    /// The bytes of the response, whole (the provider cuts them into notifications of at most ATT_MTU − 3 bytes).
    /// Throws ``ANCSError`` for what cannot be sent: an attribute over 65535 bytes, an app identifier holding a NUL.
    public func encoded() throws(ANCSError) -> [UInt8] {
        var bytes: [UInt8]
        switch subject {
        case .notification(let uid): bytes = [0] + uid.littleEndianBytes
        case .app(let app):
            guard !app.utf8.contains(0) else { throw ANCSError(.invalidCommand("an app identifier cannot hold a NUL")) }
            bytes = [1] + Array(app.utf8) + [0]
        }
        for attribute in attributes {
            guard attribute.value.count <= Int(UInt16.max) else {
                throw ANCSError(.invalidParameter("attribute \(attribute.id) is \(attribute.value.count) bytes; at most 65535"))
            }
            let length = UInt16(attribute.value.count)
            bytes += [attribute.id, UInt8(truncatingIfNeeded: length), UInt8(length >> 8)] + attribute.value
        }
        return bytes
    }
}

/// Reassembles the Data Source notifications that carry one response (sans I/O: bytes in, a state out).
///
/// The Data Source has no framing: the response to a Get command is cut into notifications of any size, and the
/// consumer parses until every attribute it asked for has arrived. Create one per command (one command is
/// outstanding at a time), ``append(_:)`` each fragment until it answers ``State/complete(_:)`` or
/// ``State/failed(_:)``; a response that stops coming is the caller's to time out (``missingAttributes`` says what
/// never came).
public struct ANCSResponseReassembler: Sendable {
    /// Where a response is.
    public enum State: Sendable, Hashable {
        /// More fragments are needed.
        case incomplete
        /// Every attribute asked for arrived.
        case complete(ANCSResponse)
        /// The bytes cannot be this command's response; later fragments change nothing.
        case failed(ANCSError)
    }

    /// The command's ID.
    public let commandID: UInt8
    /// What the response must be about.
    public let subject: ANCSResponse.Subject
    /// The attribute IDs asked for, in order.
    public let requested: [UInt8]
    private var buffer: [UInt8] = []
    /// Where it is now.
    public private(set) var state: State = .incomplete

    /// A reassembler for the response to `command`; throws ``ANCSError`` when the command gets no response
    /// (Perform Notification Action) or asks for nothing.
    public init(for command: ANCSCommand) throws(ANCSError) {
        commandID = command.commandID
        switch command {
        case .getNotificationAttributes(let uid, let attributes):
            subject = .notification(uid)
            requested = attributes.map(\.id.rawValue)
        case .getAppAttributes(let app, let attributes):
            subject = .app(app)
            requested = attributes.map(\.rawValue)
        case .performNotificationAction:
            throw ANCSError(.invalidCommand("Perform Notification Action has no Data Source response"))
        }
        guard !requested.isEmpty else { throw ANCSError(.invalidCommand("a Get command asks for no attribute")) }
    }

    /// The attribute IDs asked for that have not arrived whole (all of them before the header).
    public var missingAttributes: [UInt8] {
        if case .complete = state { return [] }
        guard case .success(let parsed) = parse(), let parsed else { return requested }
        let arrived = Set(parsed.response.attributes.map(\.id))
        return requested.filter { !arrived.contains($0) }
    }

    /// Adds the next Data Source notification; returns (and keeps in ``state``) where the response is. After
    /// completion or failure, fragments change nothing (a response that goes on past its last attribute is
    /// ``ANCSErrorCode/trailingBytes(_:)``).
    @discardableResult
    public mutating func append(_ fragment: [UInt8]) -> State {
        guard case .incomplete = state else { return state }
        buffer += fragment
        switch parse() {
        case .failure(let error): state = .failed(error)
        case .success(let parsed):
            guard let parsed, parsed.complete else { break }
            state = parsed.consumed == buffer.count ? .complete(parsed.response)
                : .failed(ANCSError(.trailingBytes(buffer.count - parsed.consumed)))
        }
        return state
    }

    /// Parses what has arrived: `nil` before the header is whole; the attributes whole so far; whether every attribute
    /// asked for is in; how many bytes that took.
    private func parse() -> Result<(response: ANCSResponse, complete: Bool, consumed: Int)?, ANCSError> {
        var reader = ByteCursor(buffer, from: 0)
        guard let id = reader.uint8() else { return .success(nil) }
        guard id == commandID else { return .failure(ANCSError(.unexpectedResponse("CommandID \(id) answers command \(commandID)"))) }
        switch subject {
        case .notification(let uid):
            guard let got = reader.uint32() else { return .success(nil) }
            guard got == uid else { return .failure(ANCSError(.unexpectedResponse("NotificationUID \(got) answers \(uid)"))) }
        case .app(let app):
            let expected = Array(app.utf8)
            guard let got = reader.cString() else {
                // The identifier is still arriving: it must be a prefix of the one asked about.
                let sofar = Array(buffer.dropFirst())
                return sofar.count <= expected.count && Array(expected.prefix(sofar.count)) == sofar ? .success(nil)
                    : .failure(ANCSError(.unexpectedResponse("the app identifier answers another app than \(app)")))
            }
            guard got == expected else {
                return .failure(ANCSError(.unexpectedResponse("app \(String(decoding: got, as: UTF8.self)) answers \(app)")))
            }
        }
        var attributes: [ANCSAttribute] = []
        var pending = requested
        var consumed = reader.offset
        while !pending.isEmpty {
            guard let attributeID = reader.uint8() else { break }
            guard let index = pending.firstIndex(of: attributeID) else {
                let why = requested.contains(attributeID) ? "attribute \(attributeID) arrived twice" : "attribute \(attributeID) was not asked for"
                return .failure(ANCSError(.unexpectedResponse(why)))
            }
            guard let length = reader.uint16(), let value = reader.bytes(Int(length)) else { break }
            pending.remove(at: index)
            attributes.append(ANCSAttribute(id: attributeID, value: value))
            consumed = reader.offset
        }
        return .success((ANCSResponse(subject: subject, attributes: attributes), pending.isEmpty, consumed))
    }
}

/// The Control Point's ATT error codes (application errors of ANCS).
public enum ANCSControlPointError: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// 0xA0: the CommandID is unknown.
    case unknownCommand = 0xA0
    /// 0xA1: the command is malformed.
    case invalidCommand = 0xA1
    /// 0xA2: a parameter (the NotificationUID, the app identifier...) names nothing that exists.
    case invalidParameter = 0xA2
    /// 0xA3: the action failed.
    case actionFailed = 0xA3

    /// The ATT error code.
    public var attError: ATTErrorCode { ATTErrorCode(rawValue: rawValue) }

    /// `Unknown command (0xA0)`...
    public var description: String {
        switch self {
        case .unknownCommand: "Unknown command (0xA0)"
        case .invalidCommand: "Invalid command (0xA1)"
        case .invalidParameter: "Invalid parameter (0xA2)"
        case .actionFailed: "Action failed (0xA3)"
        }
    }
}

/// What went wrong with ANCS bytes or a procedure.
public typealias ANCSError = BLEFailure<ANCSErrorCode>

extension BLEFailure where Code == ANCSErrorCode {
    /// The ATT error a provider answers a Control Point write with for this error (``ANCSControlPointError``), if
    /// it is one of a command's.
    public var controlPointError: ANCSControlPointError? { code.controlPointError }
}

/// The kind of an ``ANCSError``, with its details: an open struct, so a release may add kinds.
public struct ANCSErrorCode: BLEErrorCode {
    private enum Backing: Hashable, Sendable {
        case truncated(String, Int, Int)
        case unknownEventID(UInt8)
        case unknownCommand(UInt8)
        case invalidCommand(String)
        case invalidParameter(String)
        case actionFailed(String)
        case unexpectedResponse(String)
        case trailingBytes(Int)
        case incompleteResponse([UInt8])
        case refused(ATTErrorCode)
        case serviceNotFound(String)
    }

    private let backing: Backing
    private init(_ backing: Backing) { self.backing = backing }

    /// A value shorter than its format. ``BLEErrorCategory/protocolError``.
    public static func truncated(what: String, length: Int, needed: Int) -> ANCSErrorCode { ANCSErrorCode(.truncated(what, length, needed)) }
    /// A Notification Source event with an EventID other than 0–2. ``BLEErrorCategory/protocolError``.
    public static func unknownEventID(_ id: UInt8) -> ANCSErrorCode { ANCSErrorCode(.unknownEventID(id)) }
    /// A Control Point command with an unknown CommandID (the provider answers 0xA0). ``BLEErrorCategory/protocolError``.
    public static func unknownCommand(_ id: UInt8) -> ANCSErrorCode { ANCSErrorCode(.unknownCommand(id)) }
    /// A malformed command (the provider answers 0xA1). ``BLEErrorCategory/protocolError``.
    public static func invalidCommand(_ why: String) -> ANCSErrorCode { ANCSErrorCode(.invalidCommand(why)) }
    /// A command naming nothing that exists or an unknown action (the provider answers 0xA2).
    /// ``BLEErrorCategory/protocolError``.
    public static func invalidParameter(_ why: String) -> ANCSErrorCode { ANCSErrorCode(.invalidParameter(why)) }
    /// An action the provider could not perform (0xA3). ``BLEErrorCategory/protocolError``.
    public static func actionFailed(_ why: String) -> ANCSErrorCode { ANCSErrorCode(.actionFailed(why)) }
    /// A Data Source response that cannot answer the command outstanding. ``BLEErrorCategory/protocolError``.
    public static func unexpectedResponse(_ why: String) -> ANCSErrorCode { ANCSErrorCode(.unexpectedResponse(why)) }
    /// Bytes after the last attribute of a response. ``BLEErrorCategory/protocolError``.
    public static func trailingBytes(_ count: Int) -> ANCSErrorCode { ANCSErrorCode(.trailingBytes(count)) }
    /// The response did not complete in time; the attributes that never arrived. ``BLEErrorCategory/timedOut``.
    public static func incompleteResponse(missing: [UInt8]) -> ANCSErrorCode { ANCSErrorCode(.incompleteResponse(missing)) }
    /// The provider refused the Control Point write with this ATT error (0xA0–0xA3, or another).
    /// ``BLEErrorCategory/protocolError``.
    public static func refused(_ code: ATTErrorCode) -> ANCSErrorCode { ANCSErrorCode(.refused(code)) }
    /// The peripheral does not publish ANCS, or lacks one of its characteristics. ``BLEErrorCategory/notFound``.
    public static func serviceNotFound(_ what: String) -> ANCSErrorCode { ANCSErrorCode(.serviceNotFound(what)) }

    public var category: BLEErrorCategory {
        switch backing {
        case .truncated, .unknownEventID, .unknownCommand, .invalidCommand, .invalidParameter, .actionFailed, .unexpectedResponse, .trailingBytes, .refused: .protocolError
        case .incompleteResponse: .timedOut
        case .serviceNotFound: .notFound
        }
    }

    /// What went wrong, in words (the reason an error of this code gets by default).
    public var description: String {
        switch backing {
        case .truncated(let what, let length, let needed): "a \(what) of \(length) byte(s); it needs \(needed)"
        case .unknownEventID(let id): "unknown EventID \(id)"
        case .unknownCommand(let id): "unknown CommandID \(id)"
        case .invalidCommand(let why): "invalid command: \(why)"
        case .invalidParameter(let why): "invalid parameter: \(why)"
        case .actionFailed(let why): "action failed: \(why)"
        case .unexpectedResponse(let why): "unexpected Data Source response: \(why)"
        case .trailingBytes(let count): "\(count) byte(s) after the response's last attribute"
        case .incompleteResponse(let missing): "the response never completed (attribute(s) \(missing.map(String.init).joined(separator: ", ")) missing)"
        case .refused(let code): ANCSControlPointError(rawValue: code.rawValue).map { "the provider refused the command: \($0)" }
                ?? "the provider refused the command with ATT error 0x\([code.rawValue].hexString())"
        case .serviceNotFound(let what): "no ANCS: \(what)"
        }
    }

    /// The ATT error the provider refused a command with, of ``refused(_:)``.
    public var attError: ATTErrorCode? {
        switch backing {
        case .refused(let x): x
        default: nil
        }
    }

    /// The attributes that never arrived, of ``incompleteResponse(missing:)``.
    public var missingAttributes: [UInt8]? {
        switch backing {
        case .incompleteResponse(let x): x
        default: nil
        }
    }

    /// What the kinds with words say: the command's, the parameter's, the action's, the response's or the
    /// service's problem.
    public var detail: String? {
        switch backing {
        case .invalidCommand(let x): x
        case .invalidParameter(let x): x
        case .actionFailed(let x): x
        case .unexpectedResponse(let x): x
        case .serviceNotFound(let x): x
        default: nil
        }
    }

    /// What the Data Source response of ``unexpectedResponse(_:)`` could not answer.
    public var unexpectedResponseDetail: String? {
        switch backing {
        case .unexpectedResponse(let x): x
        default: nil
        }
    }

    /// The ATT error a provider answers a Control Point write with for this kind (``ANCSControlPointError``), if
    /// it is one of a command's.
    public var controlPointError: ANCSControlPointError? {
        switch backing {
        case .unknownCommand: .unknownCommand
        case .invalidCommand, .truncated: .invalidCommand
        case .invalidParameter: .invalidParameter
        case .actionFailed: .actionFailed
        default: nil
        }
    }
}

/// Reads the fields of ANCS values from a byte array; every read checks the length (peer bytes never trap).
struct ByteCursor {
    let bytes: [UInt8]
    private(set) var offset: Int

    init(_ bytes: [UInt8], from offset: Int) {
        self.bytes = bytes
        self.offset = offset
    }

    var isAtEnd: Bool { offset >= bytes.count }

    mutating func uint8() -> UInt8? {
        guard offset < bytes.count else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func uint16() -> UInt16? {
        guard let part = bytes(2) else { return nil }
        return UInt16(part[0]) | UInt16(part[1]) << 8
    }

    mutating func uint32() -> UInt32? {
        guard let part = bytes(4) else { return nil }
        return UInt32(littleEndian32: part[0...3])
    }

    mutating func bytes(_ count: Int) -> [UInt8]? {
        guard count >= 0, bytes.count - offset >= count else { return nil }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    /// The bytes up to a NUL, which is consumed; `nil` (and nothing consumed) when no NUL follows.
    mutating func cString() -> [UInt8]? {
        guard offset <= bytes.count, let end = bytes[offset...].firstIndex(of: 0) else { return nil }
        defer { offset = end + 1 }
        return Array(bytes[offset..<end])
    }
}

extension UInt32 {
    /// The value from four little-endian octets (`slice` must hold exactly four).
    init(littleEndian32 slice: ArraySlice<UInt8>) {
        self = slice.reversed().reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// Its four octets, little-endian.
    var littleEndianBytes: [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: self >> (8 * UInt32($0))) } }
}
