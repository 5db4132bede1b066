import BLE
import BLEProfiles
import Testing

@Suite struct CurrentTimeCodecTests {
    @Test func currentTimeBothWays() throws {
        let time = CurrentTime(dateTime: DateTime(year: 2026, month: 11, day: 23, hours: 22), fractions256: 0x80, adjustReason: .externalReferenceTimeUpdate)
        #expect(time.dayOfWeek == .monday)
        let bytes: [UInt8] = [0xEA, 0x07, 11, 23, 22, 0, 0, 0x01, 0x80, 0x02]
        #expect(time.encoded == bytes)
        #expect(try CurrentTime(bytes: bytes) == time)
        // Reserved adjust-reason bits and day-of-week values are kept as sent.
        let odd = try CurrentTime(bytes: [0xEA, 0x07, 11, 23, 22, 0, 0, 0x09, 0x00, 0xF5])
        #expect(odd.dayOfWeek.rawValue == 9 && odd.adjustReason.rawValue == 0xF5)
        #expect(odd.adjustReason.contains([.manualTimeUpdate, .timeZoneChange]))
        #expect(odd.encoded == [0xEA, 0x07, 11, 23, 22, 0, 0, 0x09, 0x00, 0xF5])
        #expect(standardThrows(CurrentTime.self, Array(bytes.prefix(9)), .truncated))
        #expect(standardThrows(CurrentTime.self, bytes + [0], .trailingBytes))
        #expect(standardThrows(CurrentTime.self, [0xEA, 0x07, 13, 23, 22, 0, 0, 0x01, 0x00, 0x00], .invalidValue))
    }

    @Test func dayOfWeek() {
        #expect(DateTime(year: 2000, month: 1, day: 1).dayOfWeek == .saturday)
        #expect(DateTime(year: 2024, month: 2, day: 29).dayOfWeek == .thursday)
        #expect(DateTime(year: 2023, month: 12, day: 31).dayOfWeek == .sunday)
        #expect(DateTime(year: 1970, month: 1, day: 1).dayOfWeek == .thursday)
        #expect(DateTime(year: 0, month: 1, day: 1).dayOfWeek == .unknown)
    }

    @Test func referenceTimeInformation() throws {
        let reference = ReferenceTimeInformation(source: .gps, accuracy: 12, daysSinceUpdate: 3, hoursSinceUpdate: 5)
        #expect(reference.encoded == [0x02, 0x0C, 0x03, 0x05])
        #expect(try ReferenceTimeInformation(bytes: [0x02, 0x0C, 0x03, 0x05]) == reference)
        #expect(reference.accuracySeconds == 1.5)
        #expect(try ReferenceTimeInformation(bytes: [0x09, 0xFE, 0xFF, 0xFF]).accuracySeconds == nil)
        #expect(try ReferenceTimeInformation(bytes: [0x09, 0xFE, 0xFF, 0xFF]).source.rawValue == 9)
        #expect(standardThrows(ReferenceTimeInformation.self, [0x02, 0x0C, 0x03], .truncated))
    }

    @Test func localTimeInformation() throws {
        let paris = LocalTimeInformation(utcOffsetMinutes: 60)
        #expect(paris.encoded == [0x04, 0x00])
        #expect(try LocalTimeInformation(bytes: [0x04, 0x04]) == LocalTimeInformation(utcOffsetMinutes: 60, dstMinutes: 60))
        let newfoundland = LocalTimeInformation(utcOffsetMinutes: -210)
        #expect(newfoundland.encoded == [0xF2, 0x00])
        #expect(newfoundland.utcOffsetMinutes == -210)
        #expect(LocalTimeInformation(utcOffsetMinutes: 345).timeZone == 23)
        let unknown = try LocalTimeInformation(bytes: [0x80, 0xFF])
        #expect(unknown.utcOffsetMinutes == nil && unknown.dstMinutes == nil)
        #expect(try LocalTimeInformation(bytes: [0x39, 0x03]).utcOffsetMinutes == nil)
        #expect(standardThrows(LocalTimeInformation.self, [0x04], .truncated))
    }
}

@Suite(.timeLimit(.minutes(1))) struct CurrentTimeLiveTests {
    @Test func readsNotificationsAndWrites() async throws {
        let link = try await StandardLink.start { manager in
            let clock = await SimulatedClock(manager: manager)
            try await clock.start(tick: .milliseconds(20))
            return clock
        }
        defer { link.air.shutdown() }
        let client = try await CurrentTimeClient(peripheral: link.remote)
        #expect(try await client.readLocalTimeInformation() == SimulatedClock.localTime)
        let first = try await client.readCurrentTime()
        #expect(first.dateTime.year == 2026 && first.dayOfWeek == first.dateTime.dayOfWeek)
        // Every tenth tick the reference corrects the clock, notified with its reason.
        let updates = try await standardCollect(2, from: try await client.currentTimeUpdates())
        #expect(updates.allSatisfy { $0.adjustReason == .externalReferenceTimeUpdate })
        #expect(updates[1].dateTime.adding(seconds: -10) == updates[0].dateTime)
        let later = try await client.readCurrentTime()
        #expect(later.dateTime.description > first.dateTime.description)
        let reference = try await client.readReferenceTimeInformation()
        #expect(reference.source == .networkTimeProtocol && reference.daysSinceUpdate == 0 && reference.hoursSinceUpdate == 0)
        #expect(reference.accuracy % 8 == 0 && reference.accuracy <= 24)
        // Set by hand.
        let set = CurrentTime(dateTime: DateTime(year: 2030, month: 6, day: 15, hours: 12, minutes: 30))
        // The reference corrects the clock every tenth tick (200 ms): one may fall between the write and the read,
        // which then reports that correction instead; a few tries see the manual update.
        var after = try await client.readCurrentTime()
        for _ in 0..<5 {
            try await client.setCurrentTime(set)
            after = try await client.readCurrentTime()
            if after.adjustReason == .manualTimeUpdate { break }
        }
        #expect(after.adjustReason == .manualTimeUpdate)
        #expect(after.dayOfWeek == .saturday)
        #expect(after.dateTime.year == 2030 && after.dateTime.month == 6 && after.dateTime.day == 15 && after.dateTime.hours == 12)
        // Malformed writes are refused.
        do {
            try await client.setCurrentTime(CurrentTime(dateTime: DateTime(year: 2030, month: 13, day: 1)))
            Issue.record("a month 13 was accepted")
        } catch let error as GATTError {
            guard let code = error.code.attError else { throw error }
            #expect(code == .valueNotAllowed)
        }
        await link.simulator.stop()
        withExtendedLifetime(link) {}
    }
}
