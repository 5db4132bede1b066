import BLEWire

/// The Apple Notification Center Service (ANCS): how an accessory (the notification consumer, a GATT client) is told
/// of a phone's notifications (the provider, a GATT server), fetches their attributes and acts on them.
///
/// The consumer subscribes to the ``dataSource`` and the ``notificationSource`` (the phone refuses with Insufficient
/// Authentication until the link is encrypted: the accessory pairs), hears an ``ANCSNotificationEvent`` for every
/// notification added, modified or removed, writes an ``ANCSCommand`` to the ``controlPoint`` to get a notification's
/// or an app's attributes, and reassembles the ``ANCSResponse`` the ``dataSource`` sends in as many notifications as
/// it needs (``ANCSResponseReassembler``). ``ANCSClient`` does all of it; ``SimulatedNotificationProvider`` serves it.
public enum ANCS {
    /// The service, 7905F431-B5CE-4E99-A40F-4B1E122D00D0.
    public static let service = BluetoothUUID("7905F431-B5CE-4E99-A40F-4B1E122D00D0") ?? 0
    /// Notification Source (notify): an ``ANCSNotificationEvent`` per change.
    public static let notificationSource = BluetoothUUID("9FBF120D-6301-42D9-8C58-25E699A21DBD") ?? 0
    /// Control Point (write with response): an ``ANCSCommand``.
    public static let controlPoint = BluetoothUUID("69D1D8F3-45E1-49A8-9821-9BBDFDAAD9D9") ?? 0
    /// Data Source (notify): the ``ANCSResponse`` to a command, cut into notifications.
    public static let dataSource = BluetoothUUID("22EAC6E9-24D6-4BB5-BE44-B36ACE7C7BFB") ?? 0
}

/// What happened to a notification (EventID).
public enum ANCSEventID: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// A notification was added.
    case added = 0
    /// A notification changed.
    case modified = 1
    /// A notification was removed.
    case removed = 2

    /// `added`, `modified`, `removed`.
    public var description: String {
        switch self {
        case .added: "added"
        case .modified: "modified"
        case .removed: "removed"
        }
    }
}

/// A notification's flags (EventFlags).
public struct ANCSEventFlags: OptionSet, Sendable, Hashable, CustomStringConvertible {
    /// The EventFlags octet.
    public var rawValue: UInt8
    /// Flags from the EventFlags octet (reserved bits kept).
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// The notification is silent (low priority).
    public static let silent = ANCSEventFlags(rawValue: 0x01)
    /// The notification is important.
    public static let important = ANCSEventFlags(rawValue: 0x02)
    /// The notification existed before the consumer connected.
    public static let preExisting = ANCSEventFlags(rawValue: 0x04)
    /// The notification has a positive action (``ANCSActionID/positive``).
    public static let positiveAction = ANCSEventFlags(rawValue: 0x08)
    /// The notification has a negative action (``ANCSActionID/negative``).
    public static let negativeAction = ANCSEventFlags(rawValue: 0x10)

    /// The flags' names joined by `|` (`important|positive-action`), or `none`.
    public var description: String {
        let names: [(ANCSEventFlags, String)] = [(.silent, "silent"), (.important, "important"), (.preExisting, "pre-existing"),
                                                 (.positiveAction, "positive-action"), (.negativeAction, "negative-action")]
        let set = names.filter { contains($0.0) }.map(\.1)
        return set.isEmpty ? "none" : set.joined(separator: "|")
    }
}

/// A notification's category (CategoryID); values above 11 are reserved and kept as they are.
public struct ANCSCategory: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The CategoryID.
    public var rawValue: UInt8
    /// The category with this CategoryID.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Other (0).
    public static let other = ANCSCategory(rawValue: 0)
    /// Incoming call (1).
    public static let incomingCall = ANCSCategory(rawValue: 1)
    /// Missed call (2).
    public static let missedCall = ANCSCategory(rawValue: 2)
    /// Voicemail (3).
    public static let voicemail = ANCSCategory(rawValue: 3)
    /// Social: messages (4).
    public static let social = ANCSCategory(rawValue: 4)
    /// Schedule: calendar events (5).
    public static let schedule = ANCSCategory(rawValue: 5)
    /// Email (6).
    public static let email = ANCSCategory(rawValue: 6)
    /// News (7).
    public static let news = ANCSCategory(rawValue: 7)
    /// Health and fitness (8).
    public static let healthAndFitness = ANCSCategory(rawValue: 8)
    /// Business and finance (9).
    public static let businessAndFinance = ANCSCategory(rawValue: 9)
    /// Location (10).
    public static let location = ANCSCategory(rawValue: 10)
    /// Entertainment (11).
    public static let entertainment = ANCSCategory(rawValue: 11)

    /// `incoming call`, `email`..., or `category N` for a reserved value.
    public var description: String {
        let names = ["other", "incoming call", "missed call", "voicemail", "social", "schedule", "email", "news",
                     "health and fitness", "business and finance", "location", "entertainment"]
        return Int(rawValue) < names.count ? names[Int(rawValue)] : "category \(rawValue)"
    }
}

/// A Notification Source notification: what happened to which notification.
public struct ANCSNotificationEvent: Sendable, Hashable {
    /// Added, modified or removed.
    public var eventID: ANCSEventID
    /// Its flags.
    public var flags: ANCSEventFlags
    /// Its category.
    public var category: ANCSCategory
    /// How many notifications of the category the phone holds now.
    public var categoryCount: UInt8
    /// The notification's identifier, for commands.
    public var notificationUID: UInt32

    /// Creates an event.
    public init(eventID: ANCSEventID, flags: ANCSEventFlags = [], category: ANCSCategory, categoryCount: UInt8, notificationUID: UInt32) {
        self.eventID = eventID
        self.flags = flags
        self.category = category
        self.categoryCount = categoryCount
        self.notificationUID = notificationUID
    }

    /// Decodes the 8 octets of a Notification Source notification (octets after them are ignored: a later version
    /// may add some). Throws ``ANCSError`` when it is shorter or its EventID is not 0–2.
    public init(bytes: [UInt8]) throws(ANCSError) {
        guard bytes.count >= 8 else { throw ANCSError(.truncated(what: "Notification Source event", length: bytes.count, needed: 8)) }
        guard let eventID = ANCSEventID(rawValue: bytes[0]) else { throw ANCSError(.unknownEventID(bytes[0])) }
        self.eventID = eventID
        flags = ANCSEventFlags(rawValue: bytes[1])
        category = ANCSCategory(rawValue: bytes[2])
        categoryCount = bytes[3]
        notificationUID = UInt32(littleEndian32: bytes[4...7])
    }

    /// The 8 octets.
    public var encoded: [UInt8] {
        [eventID.rawValue, flags.rawValue, category.rawValue, categoryCount] + notificationUID.littleEndianBytes
    }
}

/// A notification attribute (AttributeID of Get Notification Attributes).
public enum ANCSNotificationAttributeID: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The posting app's bundle identifier.
    case appIdentifier = 0
    /// The title (asked with a maximum length).
    case title = 1
    /// The subtitle (asked with a maximum length).
    case subtitle = 2
    /// The message (asked with a maximum length).
    case message = 3
    /// The message's full size in bytes, as decimal text.
    case messageSize = 4
    /// When it was posted, `yyyyMMdd'T'HHmmSS`.
    case date = 5
    /// The positive action's label.
    case positiveActionLabel = 6
    /// The negative action's label.
    case negativeActionLabel = 7

    /// Whether a request for it carries a maximum length (u16): title, subtitle and message.
    public var takesMaximumLength: Bool { self == .title || self == .subtitle || self == .message }

    /// `app-identifier`, `title`...
    public var description: String {
        switch self {
        case .appIdentifier: "app-identifier"
        case .title: "title"
        case .subtitle: "subtitle"
        case .message: "message"
        case .messageSize: "message-size"
        case .date: "date"
        case .positiveActionLabel: "positive-action-label"
        case .negativeActionLabel: "negative-action-label"
        }
    }
}

/// One attribute asked for by Get Notification Attributes: its ID and, for title, subtitle and message, the longest
/// value wanted in bytes.
public struct ANCSAttributeRequest: Sendable, Hashable {
    /// Which attribute.
    public var id: ANCSNotificationAttributeID
    /// The longest value wanted (title, subtitle and message only; `nil` for the others).
    public var maximumLength: UInt16?

    /// Asks for `id`; a title, subtitle or message without `maximumLength` asks for up to 255 bytes.
    public init(_ id: ANCSNotificationAttributeID, maximumLength: UInt16? = nil) {
        self.id = id
        self.maximumLength = id.takesMaximumLength ? (maximumLength ?? 255) : nil
    }

    /// What ``ANCSClient`` asks for: every attribute, texts up to 255 bytes.
    public static let all: [ANCSAttributeRequest] = ANCSNotificationAttributeID.allCases.map { ANCSAttributeRequest($0) }
}

/// An app attribute (AttributeID of Get App Attributes).
public enum ANCSAppAttributeID: UInt8, Sendable, Hashable, CaseIterable {
    /// The app's display name.
    case displayName = 0
}

/// A notification action (ActionID of Perform Notification Action).
public enum ANCSActionID: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The positive action (answer a call...).
    case positive = 0
    /// The negative action (decline, dismiss...).
    case negative = 1

    /// `positive`, `negative`.
    public var description: String { self == .positive ? "positive" : "negative" }
}

/// A Control Point command.
public enum ANCSCommand: Sendable, Hashable {
    /// Get Notification Attributes (CommandID 0).
    case getNotificationAttributes(notificationUID: UInt32, attributes: [ANCSAttributeRequest])
    /// Get App Attributes (CommandID 1).
    case getAppAttributes(appIdentifier: String, attributes: [ANCSAppAttributeID])
    /// Perform Notification Action (CommandID 2).
    case performNotificationAction(notificationUID: UInt32, action: ANCSActionID)

    /// The CommandID.
    public var commandID: UInt8 {
        switch self {
        case .getNotificationAttributes: 0
        case .getAppAttributes: 1
        case .performNotificationAction: 2
        }
    }

    /// Whether the Data Source answers it (the two Get commands).
    public var hasResponse: Bool { commandID != 2 }

    /// The bytes written to the Control Point. Throws ``ANCSError`` for what cannot be written: an app identifier
    /// with a NUL in it, or a Get command asking for no attribute.
    public func encoded() throws(ANCSError) -> [UInt8] {
        switch self {
        case .getNotificationAttributes(let uid, let attributes):
            guard !attributes.isEmpty else { throw ANCSError(.invalidCommand("Get Notification Attributes asks for no attribute")) }
            var bytes = [commandID] + uid.littleEndianBytes
            for attribute in attributes {
                bytes.append(attribute.id.rawValue)
                if attribute.id.takesMaximumLength {
                    let length = attribute.maximumLength ?? 255
                    bytes += [UInt8(truncatingIfNeeded: length), UInt8(length >> 8)]
                }
            }
            return bytes
        case .getAppAttributes(let app, let attributes):
            guard !attributes.isEmpty else { throw ANCSError(.invalidCommand("Get App Attributes asks for no attribute")) }
            guard !app.utf8.contains(0) else { throw ANCSError(.invalidCommand("an app identifier cannot hold a NUL")) }
            return [commandID] + Array(app.utf8) + [0] + attributes.map(\.rawValue)
        case .performNotificationAction(let uid, let action):
            return [commandID] + uid.littleEndianBytes + [action.rawValue]
        }
    }

    /// Decodes a Control Point write (the provider's side). Throws ``ANCSError`` with
    /// ``ANCSError/controlPointError`` saying what the provider answers: Unknown Command (0xA0) for a CommandID it
    /// does not know, Invalid Command (0xA1) for a command cut short or an attribute ID it does not know, Invalid
    /// Parameter (0xA2) for an ActionID that is neither positive nor negative or an app identifier that is not UTF-8.
    public init(bytes: [UInt8]) throws(ANCSError) {
        guard let id = bytes.first else { throw ANCSError(.invalidCommand("an empty command")) }
        var reader = ByteCursor(bytes, from: 1)
        switch id {
        case 0:
            guard let uid = reader.uint32() else { throw ANCSError(.invalidCommand("Get Notification Attributes without a NotificationUID")) }
            var attributes: [ANCSAttributeRequest] = []
            while let raw = reader.uint8() {
                guard let attribute = ANCSNotificationAttributeID(rawValue: raw) else { throw ANCSError(.invalidCommand("unknown notification attribute \(raw)")) }
                if attribute.takesMaximumLength {
                    guard let length = reader.uint16() else { throw ANCSError(.invalidCommand("\(attribute) without its maximum length")) }
                    attributes.append(ANCSAttributeRequest(attribute, maximumLength: length))
                } else {
                    attributes.append(ANCSAttributeRequest(attribute))
                }
            }
            guard !attributes.isEmpty else { throw ANCSError(.invalidCommand("Get Notification Attributes asks for no attribute")) }
            self = .getNotificationAttributes(notificationUID: uid, attributes: attributes)
        case 1:
            guard let raw = reader.cString() else { throw ANCSError(.invalidCommand("Get App Attributes without a NUL-terminated app identifier")) }
            guard let app = String(validating: raw, as: UTF8.self) else { throw ANCSError(.invalidParameter("the app identifier is not UTF-8")) }
            var attributes: [ANCSAppAttributeID] = []
            while let raw = reader.uint8() {
                guard let attribute = ANCSAppAttributeID(rawValue: raw) else { throw ANCSError(.invalidCommand("unknown app attribute \(raw)")) }
                attributes.append(attribute)
            }
            guard !attributes.isEmpty else { throw ANCSError(.invalidCommand("Get App Attributes asks for no attribute")) }
            self = .getAppAttributes(appIdentifier: app, attributes: attributes)
        case 2:
            guard let uid = reader.uint32(), let raw = reader.uint8(), reader.isAtEnd else {
                throw ANCSError(.invalidCommand("Perform Notification Action is NotificationUID (4) and ActionID (1)"))
            }
            guard let action = ANCSActionID(rawValue: raw) else { throw ANCSError(.invalidParameter("unknown action \(raw)")) }
            self = .performNotificationAction(notificationUID: uid, action: action)
        default:
            throw ANCSError(.unknownCommand(id))
        }
    }
}

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
    /// ``ANCSError/Code/trailingBytes(_:)``).
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
public struct ANCSError: BLEError {
    /// What went wrong.
    public enum Code: Sendable, Hashable, CustomStringConvertible {
        /// A value shorter than its format.
        case truncated(what: String, length: Int, needed: Int)
        /// A Notification Source event with an EventID other than 0–2.
        case unknownEventID(UInt8)
        /// A Control Point command with an unknown CommandID (the provider answers 0xA0).
        case unknownCommand(UInt8)
        /// A malformed command (the provider answers 0xA1).
        case invalidCommand(String)
        /// A command naming nothing that exists or an unknown action (the provider answers 0xA2).
        case invalidParameter(String)
        /// An action the provider could not perform (0xA3).
        case actionFailed(String)
        /// A Data Source response that cannot answer the command outstanding.
        case unexpectedResponse(String)
        /// Bytes after the last attribute of a response.
        case trailingBytes(Int)
        /// The response did not complete in time; the attributes that never arrived.
        case incompleteResponse(missing: [UInt8])
        /// The provider refused the Control Point write with this ATT error (0xA0–0xA3, or another).
        case refused(ATTErrorCode)
        /// The peripheral does not publish ANCS, or lacks one of its characteristics.
        case serviceNotFound(String)

        /// What went wrong, in words.
        public var description: String {
            switch self {
            case .truncated(let what, let length, let needed): "a \(what) of \(length) byte(s); it needs \(needed)"
            case .unknownEventID(let id): "unknown EventID \(id)"
            case .unknownCommand(let id): "unknown CommandID \(id)"
            case .invalidCommand(let why): "invalid command: \(why)"
            case .invalidParameter(let why): "invalid parameter: \(why)"
            case .actionFailed(let why): "action failed: \(why)"
            case .unexpectedResponse(let why): "unexpected Data Source response: \(why)"
            case .trailingBytes(let count): "\(count) byte(s) after the response's last attribute"
            case .incompleteResponse(let missing): "the response never completed (attribute(s) \(missing.map(String.init).joined(separator: ", ")) missing)"
            case .refused(let code):
                ANCSControlPointError(rawValue: code.rawValue).map { "the provider refused the command: \($0)" }
                    ?? "the provider refused the command with ATT error 0x\([code.rawValue].hexString())"
            case .serviceNotFound(let what): "no ANCS: \(what)"
            }
        }
    }

    /// What went wrong.
    public var code: Code
    /// A human-readable explanation.
    public var reason: String
    /// The source file that raised the error.
    public var file: String
    /// The source line that raised the error.
    public var line: Int

    /// Creates an error; the reason defaults to the code's description.
    public init(_ code: Code, _ reason: String? = nil, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.reason = reason ?? code.description
        self.file = file
        self.line = line
    }

    /// The ATT error a provider answers a Control Point write with for this error (``ANCSControlPointError``), if
    /// it is one of a command's.
    public var controlPointError: ANCSControlPointError? {
        switch code {
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
