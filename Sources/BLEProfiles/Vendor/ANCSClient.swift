/// A notification as an ANCS consumer sees it: the event that announced it and the attributes fetched for it.
public struct ANCSNotification: Sendable, Hashable {
    /// The Notification Source event (added, modified or removed; flags, category, UID).
    public var event: ANCSNotificationEvent
    /// The posting app's bundle identifier.
    public var appIdentifier: String?
    /// The posting app's display name (Get App Attributes, cached per app).
    public var appName: String?
    /// The title.
    public var title: String?
    /// The subtitle.
    public var subtitle: String?
    /// The message (cut to the length asked for).
    public var message: String?
    /// The whole message's size in bytes.
    public var messageSize: Int?
    /// When it was posted, as the phone writes it (`yyyyMMdd'T'HHmmSS`).
    public var date: String?
    /// The positive action's label.
    public var positiveActionLabel: String?
    /// The negative action's label.
    public var negativeActionLabel: String?
    /// Why its attributes are missing, when the provider refused to give them (a notification removed before its
    /// attributes were asked for is refused with Invalid Parameter). A removed notification's attributes are not
    /// asked for, and this is `nil`.
    public var attributesError: ANCSError?

    /// A notification with no attributes yet.
    public init(event: ANCSNotificationEvent) { self.event = event }

    /// The notification's UID.
    public var uid: UInt32 { event.notificationUID }

    /// Takes the attributes of a Get Notification Attributes response (an empty value counts as absent).
    public mutating func apply(_ response: ANCSResponse) {
        func text(_ id: ANCSNotificationAttributeID) -> String? { response[id].flatMap { $0.isEmpty ? nil : $0 } }
        appIdentifier = text(.appIdentifier) ?? appIdentifier
        title = text(.title) ?? title
        subtitle = text(.subtitle) ?? subtitle
        message = text(.message) ?? message
        messageSize = text(.messageSize).flatMap { Int($0) } ?? messageSize
        date = text(.date) ?? date
        positiveActionLabel = text(.positiveActionLabel) ?? positiveActionLabel
        negativeActionLabel = text(.negativeActionLabel) ?? negativeActionLabel
    }
}

/// An ANCS consumer on a connected phone (the notification provider): its notifications as they arrive, each with
/// its attributes and its app's display name, and actions on them.
///
/// The phone refuses the ANCS characteristics until the link is encrypted; the central pairs when refused (its
/// ``Central/setPairsOnDemand(_:)``, on by default), so subscribing may pair. One command is outstanding at a time:
/// the client queues its Control Point writes and reassembles each Data Source response
/// (``ANCSResponseReassembler``) before the next command is written.
///
/// ```swift
/// let ancs = try await ANCSClient(peripheral: phone)
/// for try await notification in try await ancs.notifications() {
///     print(notification.appName ?? "?", notification.title ?? "", notification.message ?? "")
///     if notification.event.category == .incomingCall { try await ancs.perform(.negative, on: notification.uid) }
/// }
/// ```
public final class ANCSClient: Sendable {
    /// The phone.
    public let peripheral: RemotePeripheral
    /// How long a Data Source response may take to complete.
    public let responseTimeout: Duration
    let notificationSource: GATTCharacteristic
    let requester: ANCSRequester

    /// A consumer of `peripheral`'s ANCS (connected): discovers the service and its three characteristics, or throws
    /// ``ANCSError`` (``ANCSErrorCode/serviceNotFound(_:)``). A Data Source response that has not completed
    /// within `responseTimeout` fails with ``ANCSErrorCode/incompleteResponse(missing:)``.
    public init(peripheral: RemotePeripheral, responseTimeout: Duration = .seconds(10)) async throws {
        self.peripheral = peripheral
        self.responseTimeout = responseTimeout
        guard let service = try await peripheral.discoverServices([ANCS.service]).first else {
            throw ANCSError(.serviceNotFound("the peripheral publishes no service \(ANCS.service)"))
        }
        let found = try await peripheral.discoverCharacteristics([ANCS.notificationSource, ANCS.controlPoint, ANCS.dataSource], for: service)
        func characteristic(_ uuid: BluetoothUUID, _ name: String) throws(ANCSError) -> GATTCharacteristic {
            guard let match = found.first(where: { $0.uuid == uuid }) else { throw ANCSError(.serviceNotFound("the service has no \(name) (\(uuid))")) }
            return match
        }
        notificationSource = try characteristic(ANCS.notificationSource, "Notification Source")
        requester = ANCSRequester(peripheral: peripheral, controlPoint: try characteristic(ANCS.controlPoint, "Control Point"),
                                  dataSource: try characteristic(ANCS.dataSource, "Data Source"))
    }

    /// Subscribes (the Data Source first, then the Notification Source: the phone then announces the notifications
    /// it already holds, flagged pre-existing) and returns the notifications as they arrive, each with the
    /// `attributes` asked for and its app's display name (a removed one with none). The stream throws (and ends) on
    /// a Notification Source event or a Data Source response that does not decode, or a response that does not
    /// complete in time (``ANCSError``); it ends when the link goes down.
    public func notifications(attributes: [ANCSAttributeRequest] = ANCSAttributeRequest.all) async throws
        -> AsyncThrowingStream<ANCSNotification, any Error> {
        try await requester.subscribe()
        let events = try await peripheral.notifications(for: notificationSource)
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: ANCSNotification.self)
        let task = Task { [self] in
            do {
                for await bytes in events {
                    let event = try ANCSNotificationEvent(bytes: bytes)
                    continuation.yield(try await notification(for: event, attributes: attributes))
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// The notification `event` announces, with the `attributes` asked for and its app's display name; a removed
    /// notification is returned as it is. A refusal of the provider (the notification is gone) is kept in
    /// ``ANCSNotification/attributesError``; other failures throw.
    public func notification(for event: ANCSNotificationEvent, attributes: [ANCSAttributeRequest] = ANCSAttributeRequest.all) async throws
        -> ANCSNotification {
        var notification = ANCSNotification(event: event)
        guard event.eventID != .removed else { return notification }
        do {
            notification.apply(try await self.attributes(ofNotification: event.notificationUID, attributes))
        } catch let error as ANCSError where error.isRefusal {
            notification.attributesError = error
            return notification
        }
        if let app = notification.appIdentifier {
            do {
                notification.appName = try await displayName(ofApp: app)
            } catch let error as ANCSError where error.isRefusal {
                notification.appName = nil
            }
        }
        return notification
    }

    /// Gets the attributes of notification `uid` (Get Notification Attributes). Throws ``ANCSError``:
    /// ``ANCSErrorCode/refused(_:)`` with the provider's error (Invalid Parameter for a UID it does not hold), or
    /// what was wrong with its response.
    public func attributes(ofNotification uid: UInt32, _ attributes: [ANCSAttributeRequest] = ANCSAttributeRequest.all) async throws -> ANCSResponse {
        try await send(.getNotificationAttributes(notificationUID: uid, attributes: attributes))
    }

    /// The display name of app `identifier` (Get App Attributes), asked once per app and then remembered.
    public func displayName(ofApp identifier: String) async throws -> String {
        if let known = await requester.names[identifier] { return known }
        let response = try await send(.getAppAttributes(appIdentifier: identifier, attributes: [.displayName]))
        let name = response.text(ANCSAppAttributeID.displayName.rawValue) ?? ""
        await requester.remember(name, for: identifier)
        return name
    }

    /// Performs `action` on notification `uid` (Perform Notification Action). Throws ``ANCSError``
    /// (``ANCSErrorCode/refused(_:)``) when the provider refuses: Invalid Parameter for an unknown UID, Action
    /// Failed.
    public func perform(_ action: ANCSActionID, on uid: UInt32) async throws {
        _ = try await requester.send(.performNotificationAction(notificationUID: uid, action: action), timeout: responseTimeout)
    }

    /// Writes a Get command and returns its reassembled response.
    public func send(_ command: ANCSCommand) async throws -> ANCSResponse {
        guard let response = try await requester.send(command, timeout: responseTimeout) else {
            throw ANCSError(.invalidCommand("\(command) has no response"))
        }
        return response
    }
}

extension ANCSError {
    /// Whether the provider refused the command (an ATT error on the Control Point write), rather than answering
    /// something that could not be understood.
    public var isRefusal: Bool {
        code.attError != nil
    }
}

/// Writes the Control Point one command at a time and reassembles the Data Source responses.
actor ANCSRequester {
    let peripheral: RemotePeripheral
    let controlPoint: GATTCharacteristic
    let dataSource: GATTCharacteristic
    /// App display names already asked for.
    private(set) var names: [String: String] = [:]
    /// Data Source notifications that arrived when no response was expected.
    private(set) var strayFragments = 0
    private var listener: Task<Void, Never>?
    private var busy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private var generation = 0
    private var reassembler: ANCSResponseReassembler?
    private var finished: Result<ANCSResponse, ANCSError>?
    private var waiting: CheckedContinuation<ANCSResponse, any Error>?

    init(peripheral: RemotePeripheral, controlPoint: GATTCharacteristic, dataSource: GATTCharacteristic) {
        self.peripheral = peripheral
        self.controlPoint = controlPoint
        self.dataSource = dataSource
    }

    deinit { listener?.cancel() }

    func remember(_ name: String, for app: String) { names[app] = name }

    /// Subscribes to the Data Source, once.
    func subscribe() async throws {
        await acquire()
        defer { release() }
        try await subscribeHeld()
    }

    private func subscribeHeld() async throws {
        guard listener == nil else { return }
        let fragments = try await peripheral.notifications(for: dataSource)
        listener = Task { [weak self] in
            for await fragment in fragments { await self?.received(fragment) }
            await self?.linkEnded()
        }
    }

    /// Writes `command` (after the commands before it have been answered) and returns its response (`nil` for an
    /// action, which has none).
    func send(_ command: ANCSCommand, timeout: Duration) async throws -> ANCSResponse? {
        let bytes = try command.encoded()
        await acquire()
        defer { release() }
        try await subscribeHeld()
        generation += 1
        let mine = generation
        finished = nil
        // Ready before the write: the first fragments can arrive before the Write Response.
        reassembler = command.hasResponse ? try ANCSResponseReassembler(for: command) : nil
        do {
            try await peripheral.writeValue(bytes, for: controlPoint, type: .withResponse)
        } catch let error as GATTError {
            reassembler = nil
            if let code = error.code.attError { throw ANCSError(.refused(code)) }
            throw error
        } catch {
            reassembler = nil
            throw error
        }
        guard command.hasResponse else { return nil }
        if let finished {
            self.finished = nil
            return try finished.get()
        }
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            await self?.expire(mine)
        }
        defer { timer.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in waiting = continuation }
        } onCancel: {
            Task { [weak self] in await self?.expire(mine) }
        }
    }

    private func received(_ fragment: [UInt8]) {
        guard var current = reassembler else {
            strayFragments += 1
            return
        }
        switch current.append(fragment) {
        case .incomplete: reassembler = current
        case .complete(let response): finish(.success(response))
        case .failed(let error): finish(.failure(error))
        }
    }

    private func finish(_ result: Result<ANCSResponse, ANCSError>) {
        reassembler = nil
        if let waiting {
            self.waiting = nil
            waiting.resume(with: result.mapError { $0 as any Error })
        } else {
            finished = result
        }
    }

    /// The response of command `mine` has not completed in time (or its caller was cancelled).
    private func expire(_ mine: Int) {
        guard mine == generation, waiting != nil, let current = reassembler else { return }
        finish(.failure(ANCSError(.incompleteResponse(missing: current.missingAttributes))))
    }

    /// The Data Source stream ended (the link went down): the response outstanding never completes.
    private func linkEnded() {
        if let current = reassembler { finish(.failure(ANCSError(.incompleteResponse(missing: current.missingAttributes)))) }
    }

    private func acquire() async {
        guard busy else {
            busy = true
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    private func release() {
        if waiters.isEmpty { busy = false } else { waiters.removeFirst().resume() }
    }
}

extension ANCSCommand {
    /// The command's name, for messages: `Get Notification Attributes of 4`, `Perform Notification Action positive on 4`.
    public var name: String {
        switch self {
        case .getNotificationAttributes(let uid, _): "Get Notification Attributes of \(uid)"
        case .getAppAttributes(let app, _): "Get App Attributes of \(app)"
        case .performNotificationAction(let uid, let action): "Perform Notification Action \(action) on \(uid)"
        }
    }
}
