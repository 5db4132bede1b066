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
