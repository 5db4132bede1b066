/// A simulated phone serving the Apple Notification Center Service (``ANCS``) as an iPhone does to an accessory.
///
/// Its three characteristics need an encrypted link: subscribing (writing their Client Characteristic
/// Configuration) and writing the Control Point are refused with Insufficient Authentication until the central
/// pairs (and bonds). It holds a few apps (Phone, Messages, Calendar, Mail) and notifications; a central that enables
/// the Notification Source hears every notification held, flagged pre-existing, then the changes as they happen:
/// every tick the next step of a script adds, modifies or removes one (an incoming call, a message that is edited
/// and later read, a missed call...). The Control Point answers Get Notification Attributes and Get App Attributes
/// on the Data Source (cut into notifications of ATT_MTU − 3 bytes), performs actions (a positive or negative action
/// on an incoming call removes it) and refuses what it cannot do with ANCS's errors: Unknown Command (0xA0), Invalid
/// Command (0xA1), Invalid Parameter (0xA2: an unknown UID or app), Action Failed (0xA3: an action the notification
/// does not offer).
///
/// It advertises its name and, as an iPhone app does for accessories that look for a phone, the ANCS service UUID in
/// a Service Solicitation (AD type 0x15), not in a service UUID list: the service is not the phone's to announce.
public actor SimulatedNotificationProvider {
    /// The name it advertises unless told otherwise.
    public static let defaultName = "SwiftBLE Phone"

    /// An installed app.
    public struct App: Sendable, Hashable {
        /// Its bundle identifier.
        public var identifier: String
        /// Its display name.
        public var displayName: String
        /// Creates an app.
        public init(identifier: String, displayName: String) {
            self.identifier = identifier
            self.displayName = displayName
        }
    }

    /// A notification the phone holds.
    public struct Notification: Sendable, Hashable {
        /// Its UID.
        public var uid: UInt32
        /// The posting app's identifier.
        public var app: String
        /// Its category.
        public var category: ANCSCategory
        /// Its flags (the action flags follow the labels).
        public var flags: ANCSEventFlags
        /// Its title.
        public var title: String
        /// Its subtitle.
        public var subtitle: String
        /// Its message.
        public var message: String
        /// When it was posted (`yyyyMMdd'T'HHmmSS`).
        public var date: String
        /// The positive action's label (`nil`: no positive action).
        public var positiveActionLabel: String?
        /// The negative action's label (`nil`: no negative action).
        public var negativeActionLabel: String?

        /// Creates a notification.
        public init(uid: UInt32, app: String, category: ANCSCategory, flags: ANCSEventFlags = [], title: String, subtitle: String = "",
                    message: String, date: String, positiveActionLabel: String? = nil, negativeActionLabel: String? = nil) {
            self.uid = uid
            self.app = app
            self.category = category
            self.flags = flags
            self.title = title
            self.subtitle = subtitle
            self.message = message
            self.date = date
            self.positiveActionLabel = positiveActionLabel
            self.negativeActionLabel = negativeActionLabel
        }

        /// Its flags with the action flags its labels imply.
        var eventFlags: ANCSEventFlags {
            var flags = flags.subtracting([.positiveAction, .negativeAction])
            if positiveActionLabel != nil { flags.insert(.positiveAction) }
            if negativeActionLabel != nil { flags.insert(.negativeAction) }
            return flags
        }

        /// The value of attribute `id`, cut to `maximumLength` bytes (on a character boundary).
        func value(_ id: ANCSNotificationAttributeID, maximumLength: UInt16?) -> [UInt8] {
            let text: String
            switch id {
            case .appIdentifier: text = app
            case .title: text = title
            case .subtitle: text = subtitle
            case .message: text = message
            case .messageSize: text = String(message.utf8.count)
            case .date: text = date
            case .positiveActionLabel: text = positiveActionLabel ?? ""
            case .negativeActionLabel: text = negativeActionLabel ?? ""
            }
            guard let maximumLength, text.utf8.count > Int(maximumLength) else { return Array(text.utf8) }
            var cut = ""
            for character in text {
                if cut.utf8.count + String(character).utf8.count > Int(maximumLength) { break }
                cut.append(character)
            }
            return Array(cut.utf8)
        }
    }

    /// An action a central performed.
    public struct PerformedAction: Sendable, Hashable {
        /// On which notification.
        public var uid: UInt32
        /// Which action.
        public var action: ANCSActionID
        /// The notification's title.
        public var title: String
        /// Creates a record of an action.
        public init(uid: UInt32, action: ANCSActionID, title: String) {
            self.uid = uid
            self.action = action
            self.title = title
        }
    }

    /// The apps it knows.
    public static let apps: [App] = [
        App(identifier: "com.apple.mobilephone", displayName: "Phone"),
        App(identifier: "com.apple.MobileSMS", displayName: "Messages"),
        App(identifier: "com.apple.mobilecal", displayName: "Calendar"),
        App(identifier: "com.apple.mobilemail", displayName: "Mail"),
    ]

    /// The peripheral manager it publishes on.
    public nonisolated let manager: PeripheralManager
    /// The advertised name.
    public nonisolated let name: String
    /// The notifications it holds now, oldest first.
    public private(set) var notifications: [Notification] = []
    /// The actions centrals performed, in order.
    public private(set) var performedActions: [PerformedAction] = []
    /// The commands it refused, with the error it answered.
    public private(set) var refusals: [(command: [UInt8], error: ANCSControlPointError)] = []
    private var nextUID: UInt32 = 1
    private var step = 0
    /// Whether a central has enabled the Notification Source yet (the script waits for the first).
    private var heard = false
    private var clock = 9 * 3600
    private var tasks: [Task<Void, Never>] = []

    /// A phone on `manager` (which should publish nothing else) holding three notifications (a message, an event, an
    /// email). Call ``start(tick:)``.
    public init(manager: PeripheralManager, name: String = SimulatedNotificationProvider.defaultName) async {
        self.manager = manager
        self.name = name
        store(app: "com.apple.MobileSMS", category: .social, title: "Alex", message: "Are we still on for lunch?", negative: "Clear")
        store(app: "com.apple.mobilecal", category: .schedule, title: "Team meeting", subtitle: "Room 4", message: "In 15 minutes", negative: "Clear")
        store(app: "com.apple.mobilemail", category: .email, title: "Sam Lee", subtitle: "Quarterly report",
             message: "Hi, the figures are attached. Could you have a look before Friday?", negative: "Clear")
    }

    /// The ANCS service, as a phone publishes it: encryption required on all three characteristics.
    public static var service: GATTServiceDefinition {
        let encrypted: GATTPermissions = [.readable, .writeable, .readEncryptionRequired, .writeEncryptionRequired]
        return GATTServiceDefinition(uuid: ANCS.service, characteristics: [
            GATTCharacteristicDefinition(uuid: ANCS.notificationSource, properties: .notify, permissions: [.readEncryptionRequired],
                                         clientConfigurationPermissions: encrypted),
            GATTCharacteristicDefinition(uuid: ANCS.controlPoint, properties: .write, permissions: [.writeable, .writeEncryptionRequired],
                                         source: .application),
            GATTCharacteristicDefinition(uuid: ANCS.dataSource, properties: .notify, permissions: [.readEncryptionRequired],
                                         clientConfigurationPermissions: encrypted),
        ])
    }

    /// What it advertises: flags, the ANCS UUID solicited (AD type 0x15); its name in the scan response.
    public static func advertisement(name: String) -> Advertisement {
        Advertisement(data: AdvertisingData(structures: [
            ADStructure(type: .flags, data: [ADFlags.leOnlyGeneralDiscoverable.rawValue]),
            ADStructure(type: .solicitation128BitUUIDs, data: ANCS.service.wireBytes128),
        ]), scanResponse: AdvertisingData(localName: name), kind: .connectable)
    }

    /// Publishes the service, advertises (again after each connection), answers the Control Point and, once a central
    /// has enabled the Notification Source, plays the next step of its script every `tick` (so that the first
    /// consumer hears the whole script from its start).
    public func start(tick: Duration = .seconds(2)) async throws {
        guard tasks.isEmpty else { return }
        let requests = await manager.requests()
        try await manager.add(Self.service)
        try await manager.startAdvertising(Self.advertisement(name: name), restartAfterConnection: true)
        tasks.append(Task { [weak self] in
            for await request in requests {
                switch request.kind {
                case .application(let asked): await self?.answer(asked)
                case .subscription(ANCS.notificationSource, _, true, _):
                    await self?.announceAll(to: request.central)
                default: break
                }
            }
        })
        tasks.append(Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: tick)
                guard let self, !Task.isCancelled else { return }
                if await self.heard { await self.playNextStep() }
            }
        })
    }

    /// Stops the script and the Control Point (links stay up; the service stays published).
    public func stop() {
        for task in tasks { task.cancel() }
        tasks = []
    }

    // MARK: Notifications

    /// Posts a notification (a new UID) and announces it to the centrals that enabled the Notification Source;
    /// returns it. Its action flags follow `positive` and `negative`, the labels of its actions.
    @discardableResult
    public func post(app: String, category: ANCSCategory, flags: ANCSEventFlags = [], title: String, subtitle: String = "", message: String,
                     positive: String? = nil, negative: String? = nil) async -> Notification {
        let notification = store(app: app, category: category, flags: flags, title: title, subtitle: subtitle, message: message,
                                 positive: positive, negative: negative)
        await announce(event(.added, notification))
        return notification
    }

    /// Stores a notification and returns it (announced by the caller).
    @discardableResult
    private func store(app: String, category: ANCSCategory, flags: ANCSEventFlags = [], title: String, subtitle: String = "", message: String,
                      positive: String? = nil, negative: String? = nil) -> Notification {
        clock += 97
        let date = padded(2026, 4) + "1127T" + padded(clock / 3600 % 24, 2) + padded(clock / 60 % 60, 2)
            + padded(clock % 60, 2)
        let notification = Notification(uid: nextUID, app: app, category: category, flags: flags, title: title, subtitle: subtitle,
                                         message: message, date: date, positiveActionLabel: positive, negativeActionLabel: negative)
        nextUID &+= 1
        notifications.append(notification)
        return notification
    }

    /// The Notification Source event for `notification`.
    private func event(_ id: ANCSEventID, _ notification: Notification, extraFlags: ANCSEventFlags = []) -> ANCSNotificationEvent {
        let count = notifications.count(where: { $0.category == notification.category })
        return ANCSNotificationEvent(eventID: id, flags: notification.eventFlags.union(extraFlags), category: notification.category,
                                     categoryCount: UInt8(clamping: count), notificationUID: notification.uid)
    }

    /// Sends `event` to every central that enabled the Notification Source.
    private func announce(_ event: ANCSNotificationEvent) async {
        _ = try? await manager.updateValue(event.encoded, for: ANCS.notificationSource, in: ANCS.service)
    }

    /// Tells a central that just subscribed of every notification held, flagged pre-existing.
    private func announceAll(to central: HostConnection) async {
        heard = true
        for notification in notifications {
            let event = event(.added, notification, extraFlags: .preExisting)
            _ = try? await manager.updateValue(event.encoded, for: ANCS.notificationSource, in: ANCS.service, onSubscribedCentrals: [central])
        }
    }

    /// Removes notification `uid` and announces it; returns whether the phone held it.
    @discardableResult
    public func remove(_ uid: UInt32) async -> Bool {
        guard let index = notifications.firstIndex(where: { $0.uid == uid }) else { return false }
        let removed = notifications.remove(at: index)
        await announce(event(.removed, removed))
        return true
    }

    /// Plays the next step of the script (it repeats every five steps, with new UIDs): an incoming call from Mum; a
    /// message from Jo; the call becomes a missed call; Jo's message is edited; both are read (removed). The
    /// ticker calls it every tick.
    public func playNextStep() async {
        defer { step += 1 }
        switch step % 5 {
        case 0:
            let call = store(app: "com.apple.mobilephone", category: .incomingCall, flags: .important, title: "Mum", message: "Incoming call",
                            positive: "Answer", negative: "Decline")
            await announce(event(.added, call))
        case 1:
            let message = store(app: "com.apple.MobileSMS", category: .social, title: "Jo", message: "Running 10 minutes late", negative: "Clear")
            await announce(event(.added, message))
        case 2:
            // The call nobody answered becomes a missed call.
            if let call = notifications.last(where: { $0.category == .incomingCall }) { await remove(call.uid) }
            let missed = store(app: "com.apple.mobilephone", category: .missedCall, title: "Mum", message: "Missed call",
                              positive: "Call Back", negative: "Clear")
            await announce(event(.added, missed))
        case 3:
            if let index = notifications.lastIndex(where: { $0.title == "Jo" }) {
                notifications[index].message = "Running 20 minutes late, sorry!"
                await announce(event(.modified, notifications[index]))
            }
        default:
            // Read on the phone: the latest message and missed call go away.
            for uid in [notifications.last(where: { $0.title == "Jo" })?.uid, notifications.last(where: { $0.category == .missedCall })?.uid] {
                if let uid { await remove(uid) }
            }
        }
    }

    // MARK: Control Point

    private func answer(_ request: AttributeRequest) async {
        guard request.characteristic == ANCS.controlPoint, case .write(let value, _) = request.kind else {
            return await request.refuse(.requestNotSupported)
        }
        let command: ANCSCommand
        do {
            command = try ANCSCommand(bytes: value)
        } catch {
            return await refuse(request, value, error.controlPointError ?? .invalidCommand)
        }
        switch command {
        case .getNotificationAttributes(let uid, let attributes):
            guard let notification = notifications.first(where: { $0.uid == uid }) else { return await refuse(request, value, .invalidParameter) }
            let response = ANCSResponse(subject: .notification(uid), attributes: attributes.map {
                ANCSAttribute(id: $0.id.rawValue, value: notification.value($0.id, maximumLength: $0.maximumLength))
            })
            await request.accept()
            await send(response, to: request.central)
        case .getAppAttributes(let identifier, let attributes):
            guard let app = Self.apps.first(where: { $0.identifier == identifier }) else { return await refuse(request, value, .invalidParameter) }
            let response = ANCSResponse(subject: .app(identifier), attributes: attributes.map { _ in
                ANCSAttribute(id: ANCSAppAttributeID.displayName.rawValue, text: app.displayName)
            })
            await request.accept()
            await send(response, to: request.central)
        case .performNotificationAction(let uid, let action):
            guard let notification = notifications.first(where: { $0.uid == uid }) else { return await refuse(request, value, .invalidParameter) }
            let offered = action == .positive ? notification.positiveActionLabel : notification.negativeActionLabel
            guard offered != nil else { return await refuse(request, value, .actionFailed) }
            performedActions.append(PerformedAction(uid: uid, action: action, title: notification.title))
            await request.accept()
            // Answering or declining a call, calling back or clearing: the notification goes away.
            await remove(uid)
        }
    }

    private func refuse(_ request: AttributeRequest, _ value: [UInt8], _ error: ANCSControlPointError) async {
        refusals.append((value, error))
        await request.refuse(error.attError)
    }

    /// Sends a response on the Data Source, cut into notifications of ATT_MTU − 3 bytes.
    private func send(_ response: ANCSResponse, to central: HostConnection) async {
        guard let bytes = try? response.encoded() else { return }
        let size = max(1, await manager.maximumUpdateValueLength(for: central))
        var start = 0
        while start < bytes.count {
            let part = Array(bytes[start..<min(bytes.count, start + size)])
            guard (try? await manager.updateValue(part, for: ANCS.dataSource, in: ANCS.service, onSubscribedCentrals: [central])) != nil else { return }
            start += size
        }
    }
}

/// `value` in decimal, zero-padded to `width` digits.
private func padded(_ value: Int, _ width: Int) -> String {
    let digits = "\(value)"
    return String(repeating: "0", count: max(0, width - digits.count)) + digits
}
