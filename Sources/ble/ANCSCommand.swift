import ArgumentParser
import BLE
import BLEFiles
import BLEProfiles
import Foundation

extension ANCSActionID: ExpressibleByArgument {
    /// `positive` or `negative`.
    public init?(argument: String) {
        guard let action = Self.allCases.first(where: { $0.description == argument.lowercased() }) else { return nil }
        self = action
    }
}

/// `ble ancs TARGET`: an ANCS consumer printing a phone's notifications as they arrive.
struct ANCSCommandLine: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ancs",
        abstract: "Print a phone's notifications as they arrive (an Apple Notification Center Service consumer).",
        discussion: """
            Connects, pairs when the phone refuses the ANCS characteristics (it requires an encrypted link), \
            subscribes, and prints each notification with its app, category, title and message: first those the \
            phone already holds (pre-existing), then each added, modified or removed. Runs until interrupted, \
            --count notifications or --run-for seconds. --perform positive|negative performs that action on the \
            notification --uid names (when it arrives), or without --uid on the first one offering it. \
            The embedded world's phone: ble ancs 'SwiftBLE Phone' --count 6
            """)
    @OptionGroup var options: HostOptions
    @OptionGroup var target: TargetOptions
    @Option(help: "Stop after this many notifications.") var count: Int?
    @Option(help: "Stop after this many seconds (0: run until interrupted or --count).") var runFor: Double = 0
    @Option(help: "Perform this action (positive or negative) on a notification: --uid's, else the first one offering it.")
    var perform: ANCSActionID?
    @Option(help: "The notification UID --perform acts on.") var uid: UInt32?
    @OptionGroup var security: SecurityOptions

    func validate() throws {
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
        guard runFor >= 0, runFor.isFinite else { throw ValidationError("--run-for must be a number of seconds (0: no limit)") }
        if uid != nil && perform == nil { throw ValidationError("--uid names the notification --perform acts on; give --perform too") }
    }

    func run() async throws {
        let json = options.json
        let name = target.target
        try await ClientSession.run(options, target, security: security, discover: false) { session in
            let client = try await during("finding ANCS on \(name)") { try await ANCSClient(peripheral: session.peripheral) }
            let notifications = try await during("subscribing to ANCS on \(name)") { try await client.notifications() }
            emit(json, "subscribed to ANCS on \(name)", ["event": "subscribed", "peer": .string(session.peripheral.id.address.description)])
            let performed = try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask { try await receive(notifications, client: client, json: json) }
                if runFor > 0 {
                    group.addTask {
                        try await Task.sleep(for: .milliseconds(Int((runFor * 1000).rounded())))
                        return false
                    }
                }
                defer { group.cancelAll() }
                return try await group.next() ?? false
            }
            if let perform, !performed {
                let which = uid.map { "notification \($0)" } ?? "a notification offering it"
                throw CommandFailure.notFound("no \(perform) action performed: \(which) never arrived")
            }
        }
    }

    /// Prints the notifications until --count; performs --perform on the way. Returns whether it performed it.
    private func receive(_ notifications: AsyncThrowingStream<ANCSNotification, any Error>, client: ANCSClient, json: Bool) async throws -> Bool {
        var received = 0
        var performed = false
        for try await notification in notifications {
            received += 1
            emit(json, Self.text(notification), Self.fields(notification))
            if let perform, !performed, notification.event.eventID != .removed, uid.map({ $0 == notification.uid })
                ?? notification.event.flags.contains(perform == .positive ? .positiveAction : .negativeAction) {
                try await during("performing the \(perform) action on notification \(notification.uid)") {
                    try await client.perform(perform, on: notification.uid)
                }
                performed = true
                let label = (perform == .positive ? notification.positiveActionLabel : notification.negativeActionLabel) ?? ""
                emit(json, "performed the \(perform) action\(label.isEmpty ? "" : " (\(label.escapingControlCharacters))") on \(notification.uid)",
                     ["event": "performed", "uid": .int(Int(notification.uid)), "action": .string(perform.description), "label": .string(label)])
            }
            if let count, received >= count { return performed }
        }
        try Task.checkCancellation()   // interrupted, or --run-for is up
        throw CommandFailure.failed("the link to \(target.target) ended after \(received)\(count.map { " of \($0)" } ?? "") notification(s)")
    }

    /// `added 4 incoming call [important|positive-action|negative-action] Phone: Mum: Incoming call [Answer / Decline]`.
    static func text(_ n: ANCSNotification) -> String {
        var line = "\(n.event.eventID) \(n.uid) \(n.event.category) [\(n.event.flags)]"
        guard n.event.eventID != .removed else { return line }
        if let error = n.attributesError { return line + " ! \(error.reason)" }
        let app = n.appName ?? n.appIdentifier ?? "?"
        line += " \(app.escapingControlCharacters): \((n.title ?? "").escapingControlCharacters)"
        if let subtitle = n.subtitle { line += " (\(subtitle.escapingControlCharacters))" }
        line += ": \((n.message ?? "").escapingControlCharacters)"
        let actions = [n.positiveActionLabel, n.negativeActionLabel].compactMap { $0?.escapingControlCharacters }
        if !actions.isEmpty { line += " [\(actions.joined(separator: " / "))]" }
        return line
    }

    /// The notification as JSON fields: the event's, then each attribute present.
    static func fields(_ n: ANCSNotification) -> [String: JSONValue] {
        let flagNames = n.event.flags.description == "none" ? [] : n.event.flags.description.split(separator: "|").map { JSONValue.string(String($0)) }
        var fields: [String: JSONValue] = ["event": "notification", "event_id": .string(n.event.eventID.description), "uid": .int(Int(n.uid)),
                                           "category": .string(n.event.category.description), "category_id": .int(Int(n.event.category.rawValue)),
                                           "category_count": .int(Int(n.event.categoryCount)), "flags": .array(flagNames)]
        let texts: [(String, String?)] = [("app_identifier", n.appIdentifier), ("app_name", n.appName), ("title", n.title), ("subtitle", n.subtitle),
                                          ("message", n.message), ("date", n.date), ("positive_action", n.positiveActionLabel),
                                          ("negative_action", n.negativeActionLabel)]
        for (key, value) in texts { if let value { fields[key] = .string(value) } }
        if let size = n.messageSize { fields["message_size"] = .int(size) }
        if let error = n.attributesError { fields["error"] = .string(error.reason) }
        return fields
    }
}
