import BLEProfiles
import Testing

@Suite struct ANCSCodecTests {
    @Test func aNotificationSourceEventDecodesAndEncodes() throws {
        // Added, important with both actions, incoming call, 2 of them, UID 0x01020304.
        let bytes: [UInt8] = [0x00, 0x1A, 0x01, 0x02, 0x04, 0x03, 0x02, 0x01]
        let event = try ANCSNotificationEvent(bytes: bytes)
        #expect(event.eventID == .added)
        #expect(event.flags == [.important, .positiveAction, .negativeAction])
        #expect(event.category == .incomingCall)
        #expect(event.categoryCount == 2)
        #expect(event.notificationUID == 0x0102_0304)
        #expect(event.encoded == bytes)
        #expect("\(event.flags)" == "important|positive-action|negative-action")
        // Octets after the eight are a later version's: ignored.
        #expect(try ANCSNotificationEvent(bytes: bytes + [0xEE]) == event)
        // A reserved category is kept as it is.
        #expect(try ANCSNotificationEvent(bytes: [2, 0, 42, 0, 9, 0, 0, 0]).category.description == "category 42")
    }

    @Test func aMalformedEventIsATypedError() {
        for length in 0..<8 {
            #expect(throws: ANCSError.self) { try ANCSNotificationEvent(bytes: Array(repeating: 0, count: length)) }
        }
        #expect {
            try ANCSNotificationEvent(bytes: [3, 0, 0, 0, 1, 0, 0, 0])
        } throws: { error in
            (error as? ANCSError)?.code == .unknownEventID(3)
        }
    }

    @Test func commandsEncodeAsTheSpecificationLaysThemOut() throws {
        let get = ANCSCommand.getNotificationAttributes(notificationUID: 7, attributes: [ANCSAttributeRequest(.appIdentifier),
                                                                                         ANCSAttributeRequest(.title, maximumLength: 0x0120),
                                                                                         ANCSAttributeRequest(.date)])
        #expect(try get.encoded() == [0, 7, 0, 0, 0, 0, 1, 0x20, 0x01, 5])
        let app = ANCSCommand.getAppAttributes(appIdentifier: "com.a", attributes: [.displayName])
        #expect(try app.encoded() == [1, 0x63, 0x6F, 0x6D, 0x2E, 0x61, 0, 0])
        let act = ANCSCommand.performNotificationAction(notificationUID: 0x0A0B0C0D, action: .negative)
        #expect(try act.encoded() == [2, 0x0D, 0x0C, 0x0B, 0x0A, 1])
        for command in [get, app, act] { #expect(try ANCSCommand(bytes: try command.encoded()) == command) }
        // A title without a maximum length asks for 255 bytes; the others carry none.
        #expect(ANCSAttributeRequest(.message).maximumLength == 255)
        #expect(ANCSAttributeRequest(.date, maximumLength: 9).maximumLength == nil)
        #expect(try ANCSCommand.getNotificationAttributes(notificationUID: 1, attributes: ANCSAttributeRequest.all).encoded().count == 5 + 8 + 3 * 2)
    }

    @Test func commandsThatCannotBeWrittenThrow() {
        #expect(throws: ANCSError.self) { try ANCSCommand.getAppAttributes(appIdentifier: "a\u{0}b", attributes: [.displayName]).encoded() }
        #expect(throws: ANCSError.self) { try ANCSCommand.getNotificationAttributes(notificationUID: 1, attributes: []).encoded() }
        #expect(throws: ANCSError.self) { try ANCSCommand.getAppAttributes(appIdentifier: "a", attributes: []).encoded() }
    }

    @Test func badCommandsMapToTheControlPointErrors() {
        func error(_ bytes: [UInt8]) -> ANCSControlPointError? {
            do {
                _ = try ANCSCommand(bytes: bytes)
                return nil
            } catch {
                return error.controlPointError
            }
        }
        #expect(error([9, 1, 2, 3]) == .unknownCommand)
        #expect(error([]) == .invalidCommand)
        #expect(error([0, 1, 0]) == .invalidCommand)                 // UID cut short
        #expect(error([0, 1, 0, 0, 0]) == .invalidCommand)           // no attribute
        #expect(error([0, 1, 0, 0, 0, 1, 0x10]) == .invalidCommand)  // title's maximum length cut short
        #expect(error([0, 1, 0, 0, 0, 9]) == .invalidCommand)        // unknown attribute
        #expect(error([1, 0x61, 0x62]) == .invalidCommand)           // app identifier without its NUL
        #expect(error([1, 0x61, 0]) == .invalidCommand)              // no app attribute
        #expect(error([1, 0xFF, 0xFE, 0, 0]) == .invalidParameter)   // not UTF-8
        #expect(error([2, 1, 0, 0, 0]) == .invalidCommand)           // no ActionID
        #expect(error([2, 1, 0, 0, 0, 0, 0]) == .invalidCommand)     // one byte too many
        #expect(error([2, 1, 0, 0, 0, 2]) == .invalidParameter)      // unknown ActionID
        #expect(ANCSControlPointError.allCases.map(\.attError.rawValue) == [0xA0, 0xA1, 0xA2, 0xA3])
    }

    /// A response to Get Notification Attributes of UID 0x11223344: app identifier, title, message (300 bytes: over
    /// one notification at any MTU below 306), date.
    static let command = ANCSCommand.getNotificationAttributes(notificationUID: 0x1122_3344, attributes: [
        ANCSAttributeRequest(.appIdentifier), ANCSAttributeRequest(.title, maximumLength: 64), ANCSAttributeRequest(.message, maximumLength: 300),
        ANCSAttributeRequest(.date),
    ])
    static let response = ANCSResponse(subject: .notification(0x1122_3344), attributes: [
        ANCSAttribute(id: 0, text: "com.apple.MobileSMS"), ANCSAttribute(id: 1, text: "Alex ☕️"),
        ANCSAttribute(id: 3, text: String(repeating: "lunch? ", count: 42) + "!!!!!!"), ANCSAttribute(id: 5, text: "20261127T091500"),
    ])

    @Test func aResponseReassemblesFromFragmentsOfEverySize() throws {
        let bytes = try Self.response.encoded()
        #expect(bytes.count == 5 + 4 * 3 + 19 + "Alex ☕️".utf8.count + 300 + 15)
        for size in 1...bytes.count {
            var reassembler = try ANCSResponseReassembler(for: Self.command)
            var start = 0
            while start < bytes.count {
                let end = min(bytes.count, start + size)
                let state = reassembler.append(Array(bytes[start..<end]))
                if end < bytes.count { #expect(state == .incomplete, "size \(size) at \(end)") }
                start = end
            }
            #expect(reassembler.state == .complete(Self.response), "fragments of \(size)")
            #expect(reassembler.missingAttributes.isEmpty)
        }
    }

    @Test func attributesMayArriveInAnyOrderAndEmpty() throws {
        let response = ANCSResponse(subject: .notification(0x1122_3344), attributes: [
            ANCSAttribute(id: 5, text: "20261127T091500"), ANCSAttribute(id: 1, value: []), ANCSAttribute(id: 3, value: []),
            ANCSAttribute(id: 0, text: "x"),
        ])
        var reassembler = try ANCSResponseReassembler(for: Self.command)
        #expect(reassembler.append(try response.encoded()) == .complete(response))
        #expect(response[.title] == "")
        #expect(response[.subtitle] == nil)
    }

    @Test func anAppResponseReassembles() throws {
        let command = ANCSCommand.getAppAttributes(appIdentifier: "com.apple.mobilephone", attributes: [.displayName])
        let response = ANCSResponse(subject: .app("com.apple.mobilephone"), attributes: [ANCSAttribute(id: 0, text: "Phone")])
        let bytes = try response.encoded()
        for size in 1...bytes.count {
            var reassembler = try ANCSResponseReassembler(for: command)
            var state = ANCSResponseReassembler.State.incomplete
            for start in stride(from: 0, to: bytes.count, by: size) { state = reassembler.append(Array(bytes[start..<min(bytes.count, start + size)])) }
            #expect(state == .complete(response))
        }
        // Another app's answer fails as soon as its identifier departs from the one asked about.
        var other = try ANCSResponseReassembler(for: command)
        #expect(other.append([1, 0x63, 0x6F]) == .incomplete)
        guard case .failed(let error) = other.append([0x6E]) else {
            Issue.record("a response about another app was taken")
            return
        }
        guard error.code.unexpectedResponseDetail != nil else {
            Issue.record("\(error)")
            return
        }
    }

    @Test func aResponseThatNeverCompletesSaysWhatIsMissing() throws {
        let bytes = try Self.response.encoded()
        var reassembler = try ANCSResponseReassembler(for: Self.command)
        #expect(reassembler.missingAttributes == [0, 1, 3, 5])
        #expect(reassembler.append(Array(bytes.prefix(3))) == .incomplete)
        #expect(reassembler.missingAttributes == [0, 1, 3, 5])
        // Up to the middle of the message: the app identifier and title are in, the message and date missing.
        #expect(reassembler.append(Array(bytes[3..<100])) == .incomplete)
        #expect(reassembler.missingAttributes == [3, 5])
        #expect(reassembler.state == .incomplete)
    }

    @Test func malformedResponsesFailWithTypedErrors() throws {
        let bytes = try Self.response.encoded()
        func outcome(_ fragments: [[UInt8]]) throws -> ANCSError.Code? {
            var reassembler = try ANCSResponseReassembler(for: Self.command)
            for fragment in fragments {
                if case .failed(let error) = reassembler.append(fragment) { return error.code }
            }
            return nil
        }
        func isUnexpected(_ code: ANCSError.Code?) -> Bool {
            code?.unexpectedResponseDetail != nil
        }
        #expect(isUnexpected(try outcome([[1]])))                               // another command's response
        #expect(isUnexpected(try outcome([[0, 0x44, 0x33, 0x22, 0x12]])))       // another notification
        #expect(isUnexpected(try outcome([[0, 0x44, 0x33, 0x22, 0x11, 6]])))    // an attribute not asked for
        #expect(isUnexpected(try outcome([[0, 0x44, 0x33, 0x22, 0x11, 0, 1, 0, 0x61, 0, 1, 0, 0x62]])))   // one twice
        #expect(try outcome([bytes + [0]]) == .trailingBytes(1))
        #expect(try outcome([bytes.dropLast(1).map { $0 }, [bytes[bytes.count - 1], 0xFF, 0xFF]]) == .trailingBytes(2))
        // A length running past what arrives only waits (the rest may come).
        #expect(try outcome([[0, 0x44, 0x33, 0x22, 0x11, 0, 0xFF, 0xFF, 1, 2, 3]]) == nil)
        // After completion or failure nothing changes.
        var reassembler = try ANCSResponseReassembler(for: Self.command)
        reassembler.append(bytes)
        #expect(reassembler.append([9, 9, 9]) == .complete(Self.response))
        // No reassembler for an action, which has no response.
        #expect(throws: ANCSError.self) { try ANCSResponseReassembler(for: .performNotificationAction(notificationUID: 1, action: .positive)) }
    }

    @Test func randomBytesNeverTrap() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let bytes = (0..<Int.random(in: 0...40, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = try? ANCSNotificationEvent(bytes: bytes)
            _ = try? ANCSCommand(bytes: bytes)
            var reassembler = try ANCSResponseReassembler(for: Self.command)
            reassembler.append(bytes)
            _ = reassembler.missingAttributes
            var app = try ANCSResponseReassembler(for: .getAppAttributes(appIdentifier: "com.x", attributes: [.displayName]))
            app.append(bytes)
            _ = app.missingAttributes
        }
    }

    @Test func aNotificationTakesAResponsesAttributes() {
        var notification = ANCSNotification(event: ANCSNotificationEvent(eventID: .added, category: .email, categoryCount: 1, notificationUID: 3))
        notification.apply(ANCSResponse(subject: .notification(3), attributes: [
            ANCSAttribute(id: 0, text: "com.apple.mobilemail"), ANCSAttribute(id: 1, text: "Sam"), ANCSAttribute(id: 2, text: ""),
            ANCSAttribute(id: 3, text: "Hello"), ANCSAttribute(id: 4, text: "5"), ANCSAttribute(id: 6, text: ""), ANCSAttribute(id: 7, text: "Clear"),
        ]))
        #expect(notification.appIdentifier == "com.apple.mobilemail")
        #expect(notification.title == "Sam")
        #expect(notification.subtitle == nil)
        #expect(notification.message == "Hello")
        #expect(notification.messageSize == 5)
        #expect(notification.positiveActionLabel == nil)
        #expect(notification.negativeActionLabel == "Clear")
    }
}
