import BLE
import BLEHost
import BLEProfiles
import BLEProtocols
import BLETestSupport
import BLEVirtualController
import Testing

@Suite(.timeLimit(.minutes(1))) struct ANCSLiveTests {
    /// The consumer against the simulated phone through the whole stack: refused until paired, then the phone's
    /// notifications with their attributes, an action that removes a call, and the provider's refusals as typed errors.
    @Test func theConsumerPairsReadsNotificationsAndActs() async throws {
        let rig = try await LiveRig.make(name: SimulatedNotificationProvider.defaultName)
        defer { rig.air.shutdown() }
        let phone = await SimulatedNotificationProvider(manager: rig.manager)
        try await phone.start(tick: .seconds(3600))   // the test plays the script's steps itself
        // It solicits ANCS (AD type 0x15) as a phone's app does, announcing no service of its own; its name is in
        // the scan response.
        var solicited: [BluetoothUUID] = []
        var names: Set<String> = []
        var services: [BluetoothUUID] = []
        for try await device in try await rig.central.scan(timeout: .seconds(5)) where device.address.address == rig.peripheralController.address {
            solicited += (try? device.advertisementData.solicitedServiceUUIDs()) ?? []
            if let name = device.name { names.insert(name) }
            services += device.serviceUUIDs
            if !solicited.isEmpty && !names.isEmpty { break }
        }
        #expect(Set(solicited) == [ANCS.service])
        #expect(names == [SimulatedNotificationProvider.defaultName])
        #expect(services.isEmpty)
        let remote = try await rig.connect()
        let client = try await ANCSClient(peripheral: remote)

        // Without pairing the phone refuses the subscription, as an iPhone does.
        await rig.central.setPairsOnDemand(false)
        await #expect {
            _ = try await client.notifications()
        } throws: { error in
            guard let code = (error as? GATTError)?.code.attError else { return false }
            return code == .insufficientAuthentication
        }
        #expect(await remote.security.isEncrypted == false)
        await rig.central.setPairsOnDemand(true)

        let notifications = try await client.notifications()
        let received = Received()
        let consumer = Task {
            do {
                for try await notification in notifications { await received.add(notification) }
            } catch {
                await received.fail(error)
            }
        }
        defer { consumer.cancel() }
        var index = 0
        func next() async throws -> ANCSNotification {
            let wanted = index
            try await eventually(10) {
                let count = await received.count
                let failed = await received.failure != nil
                return count > wanted || failed
            }
            if let failure = await received.failure { throw failure }
            index += 1
            return await received.items[wanted]
        }
        // Paired and bonded on the way.
        let security = await remote.security
        #expect(security.isEncrypted)
        #expect(await remote.bond != nil)

        // The three notifications the phone held, flagged pre-existing, with their attributes and app names.
        var held: [ANCSNotification] = []
        for _ in 0..<3 { held.append(try await next()) }
        #expect(held.map(\.event.eventID) == [.added, .added, .added])
        #expect(held.allSatisfy { $0.event.flags.contains(.preExisting) })
        #expect(held.map(\.appName) == ["Messages", "Calendar", "Mail"])
        #expect(held.map(\.appIdentifier) == ["com.apple.MobileSMS", "com.apple.mobilecal", "com.apple.mobilemail"])
        #expect(held.map(\.title) == ["Alex", "Team meeting", "Sam Lee"])
        #expect(held.map(\.subtitle) == [nil, "Room 4", "Quarterly report"])
        #expect(held[0].message == "Are we still on for lunch?")
        #expect(held[2].messageSize == held[2].message?.utf8.count)
        #expect(held.map(\.event.category) == [.social, .schedule, .email])
        #expect(held.allSatisfy { $0.negativeActionLabel == "Clear" && $0.positiveActionLabel == nil && $0.date?.count == 15 })
        let stored = await phone.notifications
        #expect(held.map(\.uid) == stored.map(\.uid))

        // Requests from several tasks at once are queued (one outstanding at a time): each gets its own response.
        let titles = try await withThrowingTaskGroup(of: (UInt32, String?).self) { group in
            for uid in held.map(\.uid) + held.map(\.uid) {
                group.addTask { (uid, try await client.attributes(ofNotification: uid, [ANCSAttributeRequest(.title), ANCSAttributeRequest(.date)])[.title]) }
            }
            var titles: [UInt32: Set<String?>] = [:]
            for try await (uid, title) in group { titles[uid, default: []].insert(title) }
            return titles
        }
        #expect(titles == Dictionary(uniqueKeysWithValues: held.map { ($0.uid, Set([$0.title])) }))

        // An incoming call, answered: the phone removes it.
        await phone.playNextStep()
        let call = try await next()
        #expect(call.event.eventID == .added)
        #expect(call.event.category == .incomingCall)
        #expect(call.event.flags == [.important, .positiveAction, .negativeAction])
        #expect(call.appName == "Phone")
        #expect(call.title == "Mum")
        #expect(call.positiveActionLabel == "Answer")
        #expect(call.negativeActionLabel == "Decline")
        try await client.perform(.positive, on: call.uid)
        let removed = try await next()
        #expect(removed.event.eventID == .removed)
        #expect(removed.uid == call.uid)
        #expect(removed.title == nil)
        #expect(await phone.performedActions == [.init(uid: call.uid, action: .positive, title: "Mum")])
        #expect(await phone.notifications.contains { $0.uid == call.uid } == false)

        // A modified message comes with its new text.
        await phone.playNextStep()   // Jo's message
        let jo = try await next()
        await phone.playNextStep()   // no call to turn into a missed call: only the missed call is added
        let missed = try await next()
        #expect(missed.event.category == .missedCall)
        await phone.playNextStep()   // Jo's message edited
        let edited = try await next()
        #expect(edited.event.eventID == .modified)
        #expect(edited.uid == jo.uid)
        #expect(jo.message == "Running 10 minutes late")
        #expect(edited.message == "Running 20 minutes late, sorry!")

        // The phone's refusals, as typed errors: an unknown UID, an action the notification does not offer, an
        // unknown app, an unknown command.
        func refusal(_ body: () async throws -> Void) async -> UInt8? {
            do {
                try await body()
                return nil
            } catch let error as ANCSError {
                guard let code = error.code.attError else { return nil }
                return code.rawValue
            } catch {
                return nil
            }
        }
        #expect(await refusal { try await client.perform(.positive, on: 9999) } == 0xA2)
        #expect(await refusal { try await client.perform(.positive, on: held[2].uid) } == 0xA3)
        #expect(await refusal { _ = try await client.attributes(ofNotification: 9999) } == 0xA2)
        #expect(await refusal { _ = try await client.displayName(ofApp: "com.example.nothing") } == 0xA2)
        let service = try #require(try await remote.discoverServices([ANCS.service]).first)
        let controlPoint = try #require(try await remote.discoverCharacteristics([ANCS.controlPoint], for: service).first)
        for (bytes, code) in [([UInt8(9)], UInt8(0xA0)), ([0, 1], 0xA1), ([2, 1, 0, 0, 0, 7], 0xA2)] {
            await #expect {
                try await remote.writeValue(bytes, for: controlPoint, type: .withResponse)
            } throws: { error in
                guard let got = (error as? GATTError)?.code.attError else { return false }
                return got.rawValue == code
            }
        }
        #expect(await phone.refusals.map(\.error) == [.invalidParameter, .actionFailed, .invalidParameter, .invalidParameter,
                                                     .unknownCommand, .invalidCommand, .invalidParameter])
        // A long message is cut to the 255 bytes asked for, and the response (over 300 bytes) arrives whole across
        // several Data Source notifications of ATT_MTU - 3 bytes.
        let long = String(repeating: "0123456789", count: 100)
        let posted = await phone.post(app: "com.apple.mobilemail", category: .email, title: "Long", message: long)
        let arrived = try await next()
        #expect(arrived.uid == posted.uid)
        #expect(arrived.message == String(long.prefix(255)))
        #expect(arrived.messageSize == 1000)
        #expect(await remote.mtu - 3 < 300)
        await phone.stop()
        withExtendedLifetime(notifications) {}
    }

    /// A provider whose Data Source answers wrongly: a response about another notification fails the stream with a
    /// typed error, and a response that stops half-way fails the request when it times out; nothing hangs.
    @Test func malformedProviderAnswersAreTypedErrors() async throws {
        let rig = try await LiveRig.make(name: "Bad Phone")
        defer { rig.air.shutdown() }
        let requests = await rig.manager.requests()
        try await rig.manager.add(SimulatedNotificationProvider.service)
        try await rig.manager.startAdvertising(name: "Bad Phone")
        let answers = Task {
            for await request in requests {
                switch request.kind {
                case .subscription(ANCS.notificationSource, _, true, _):
                    let event = ANCSNotificationEvent(eventID: .added, category: .news, categoryCount: 1, notificationUID: 5)
                    _ = try? await rig.manager.updateValue(event.encoded, for: ANCS.notificationSource, onSubscribedCentrals: [request.central])
                case .application(let asked):
                    guard case .write(let value, _) = asked.kind, let command = try? ANCSCommand(bytes: value) else {
                        await asked.refuse(.unlikelyError)
                        continue
                    }
                    await asked.accept()
                    guard case .getNotificationAttributes(let uid, _) = command else { continue }
                    // UID 5: answered about UID 6. UID 7: the header and half an attribute, then nothing.
                    let bytes: [UInt8] = uid == 5 ? [0, 6, 0, 0, 0, 0, 1, 0, 0x61] : [0, 7, 0, 0, 0, 0, 9, 0, 0x61]
                    _ = try? await rig.manager.updateValue(bytes, for: ANCS.dataSource, onSubscribedCentrals: [asked.central])
                default:
                    break
                }
            }
        }
        defer { answers.cancel() }
        let client = try await ANCSClient(peripheral: try await rig.connect(), responseTimeout: .milliseconds(500))
        let notifications = try await client.notifications()
        let failure = try await withTimeout(10) { () -> (any Error)? in
            do {
                for try await _ in notifications {}
                return nil
            } catch {
                return error
            }
        }
        guard let error = failure as? ANCSError, error.code.unexpectedResponseDetail != nil else {
            Issue.record("the stream ended with \(String(describing: failure))")
            return
        }
        let started = ContinuousClock.now
        await #expect {
            _ = try await client.attributes(ofNotification: 7, [ANCSAttributeRequest(.appIdentifier), ANCSAttributeRequest(.title)])
        } throws: { error in
            (error as? ANCSError)?.code == .incompleteResponse(missing: [0, 1])
        }
        #expect(ContinuousClock.now - started < .seconds(5))
    }
}

/// The notifications a stream delivered, for a test to wait on.
private actor Received {
    var items: [ANCSNotification] = []
    var failure: (any Error)?
    var count: Int { items.count }
    func add(_ notification: ANCSNotification) { items.append(notification) }
    func fail(_ error: any Error) { failure = error }
}
