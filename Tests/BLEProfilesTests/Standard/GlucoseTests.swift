import BLE
import BLEProfiles
import BLETestSupport
import Testing

@Suite struct GlucoseCodecTests {
    static let time = DateTime(year: 2026, month: 2, day: 3, hours: 4, minutes: 5, seconds: 6)
    static let timeBytes: [UInt8] = [0xEA, 0x07, 2, 3, 4, 5, 6]

    @Test func measurementVectors() throws {
        // 105 mg/dL = 105 × 10^-5 kg/L (0xB069), capillary whole blood from a finger (0x11).
        let basic = GlucoseMeasurement(sequenceNumber: 1, baseTime: Self.time, timeOffset: 0, concentration: .milligramsPerDecilitre(105))
        let basicBytes: [UInt8] = [0x03, 0x01, 0x00] + Self.timeBytes + [0x00, 0x00, 0x69, 0xB0, 0x11]
        #expect(basic.encoded == basicBytes)
        #expect(try GlucoseMeasurement(bytes: basicBytes) == basic)
        #expect(abs((basic.concentration?.milligramsPerDecilitre ?? 0) - 105) < 1e-9)
        // 5.8 mmol/L = 58 × 10^-4 mol/L, capillary plasma (2) from a finger, offset -30 min, time fault, context follows.
        let full = GlucoseMeasurement(sequenceNumber: 0x1234, baseTime: Self.time, timeOffset: -30,
                                      concentration: .init(value: SFloat(0.0058, fractionDigits: 4), unit: .molesPerLitre, type: 2, location: 1),
                                      sensorStatus: .timeFault, hasContext: true)
        let fullBytes: [UInt8] = [0x1F, 0x34, 0x12] + Self.timeBytes + [0xE2, 0xFF, 0x3A, 0xC0, 0x12, 0x00, 0x08]
        #expect(full.encoded == fullBytes)
        #expect(try GlucoseMeasurement(bytes: fullBytes) == full)
        // Only the mandatory fields.
        let bare = GlucoseMeasurement(sequenceNumber: 7, baseTime: Self.time)
        #expect(bare.encoded == [0x00, 0x07, 0x00] + Self.timeBytes)
    }

    @Test func everyMeasurementFlagCombinationRoundTripsAndTruncationThrows() throws {
        for flags in UInt8(0)...31 where flags & 0x06 != 0x04 {
            let measurement = GlucoseMeasurement(
                sequenceNumber: 42, baseTime: Self.time, timeOffset: flags & 1 != 0 ? 15 : nil,
                concentration: flags & 2 != 0 ? .init(value: SFloat(0.0061, fractionDigits: 4), unit: flags & 4 != 0 ? .molesPerLitre : .kilogramsPerLitre,
                                                      type: 4, location: 15) : nil,
                sensorStatus: flags & 8 != 0 ? [.batteryLow, .resultTooHigh] : nil, hasContext: flags & 16 != 0)
            let bytes = measurement.encoded
            #expect(bytes.first == flags)
            #expect(bytes.count == 10 + (flags & 1 != 0 ? 2 : 0) + (flags & 2 != 0 ? 3 : 0) + (flags & 8 != 0 ? 2 : 0))
            #expect(try GlucoseMeasurement(bytes: bytes) == measurement)
            #expect(try GlucoseMeasurement(bytes: [flags | 0xE0] + bytes.dropFirst()) == measurement)
            for length in 0..<bytes.count { #expect(throws: WireError.self) { try GlucoseMeasurement(bytes: bytes.prefix(length)) } }
        }
        // The unit bit without a concentration is ignored.
        #expect(try GlucoseMeasurement(bytes: [0x04, 0x01, 0x00] + Self.timeBytes).concentration == nil)
    }

    @Test func contextVectors() throws {
        let simple = GlucoseMeasurementContext(sequenceNumber: 3, carbohydrate: .init(id: 1, kilograms: SFloat(0.045, fractionDigits: 3)), meal: 1,
                                               testerAndHealth: 0x51)
        let simpleBytes: [UInt8] = [0x07, 0x03, 0x00, 0x01, 0x2D, 0xD0, 0x01, 0x51]
        #expect(simple.encoded == simpleBytes)
        #expect(try GlucoseMeasurementContext(bytes: simpleBytes) == simple)
        let full = GlucoseMeasurementContext(sequenceNumber: 0x0102, extendedFlags: 0x00, carbohydrate: .init(id: 2, kilograms: SFloat(0.1, fractionDigits: 1)),
                                             meal: 3, testerAndHealth: 0x12, exercise: .init(durationSeconds: 1800, intensityPercent: 60),
                                             medication: .init(id: 1, amount: SFloat(0.000004, fractionDigits: 6), inLitres: true),
                                             hbA1c: SFloat(6.5, fractionDigits: 1))
        let fullBytes: [UInt8] = [0xFF, 0x02, 0x01, 0x00, 0x02, 0x01, 0xF0, 0x03, 0x12, 0x08, 0x07, 0x3C, 0x01, 0x04, 0xA0, 0x41, 0xF0]
        #expect(full.encoded == fullBytes)
        #expect(try GlucoseMeasurementContext(bytes: fullBytes) == full)
    }

    @Test func everyContextFlagCombinationRoundTripsAndTruncationThrows() throws {
        for flags in 0...255 where flags & 0x30 != 0x20 {
            let context = GlucoseMeasurementContext(
                sequenceNumber: 9, extendedFlags: flags & 0x80 != 0 ? 0 : nil,
                carbohydrate: flags & 0x01 != 0 ? .init(id: 4, kilograms: SFloat(0.02, fractionDigits: 2)) : nil,
                meal: flags & 0x02 != 0 ? 5 : nil, testerAndHealth: flags & 0x04 != 0 ? 0xFF : nil,
                exercise: flags & 0x08 != 0 ? .init(durationSeconds: 0xFFFF, intensityPercent: 100) : nil,
                medication: flags & 0x10 != 0 ? .init(id: 3, amount: SFloat(0.00001, fractionDigits: 5), inLitres: flags & 0x20 != 0) : nil,
                hbA1c: flags & 0x40 != 0 ? SFloat(5.9, fractionDigits: 1) : nil)
            let bytes = context.encoded
            #expect(bytes.first == UInt8(flags))
            #expect(try GlucoseMeasurementContext(bytes: bytes) == context)
            for length in 0..<bytes.count { #expect(standardThrows(GlucoseMeasurementContext.self, Array(bytes.prefix(length)), .truncated)) }
        }
    }

    @Test func featureAndRACPWireForms() throws {
        #expect(try GlucoseFeature(bytes: [0x03, 0x04]) == [.lowBatteryDetection, .sensorMalfunctionDetection, .multipleBonds])
        #expect(RACPRequest.report(.all).encoded == [0x01, 0x01])
        #expect(RACPRequest.report(.first).encoded == [0x01, 0x05])
        #expect(RACPRequest.report(.last).encoded == [0x01, 0x06])
        #expect(RACPRequest.report(.sequenceNumbers(5...10)).encoded == [0x01, 0x04, 0x01, 0x05, 0x00, 0x0A, 0x00])
        #expect(RACPRequest.report(.atLeast(10)).encoded == [0x01, 0x03, 0x01, 0x0A, 0x00])
        #expect(RACPRequest.delete(.atMost(3)).encoded == [0x02, 0x02, 0x01, 0x03, 0x00])
        #expect(RACPRequest.count(.all).encoded == [0x04, 0x01])
        #expect(RACPRequest.abort.encoded == [0x03, 0x00])
        #expect(try RACPRequest(bytes: [0x01, 0x04, 0x01, 0x05, 0x00, 0x0A, 0x00]) == .report(.sequenceNumbers(5...10)))
        #expect(standardThrows(RACPRequest.self, [0x01], .truncated))
        #expect(RACPResponse.response(request: .reportStoredRecords, code: .success).encoded == [0x06, 0x00, 0x01, 0x01])
        #expect(RACPResponse.numberOfRecords(12).encoded == [0x05, 0x00, 0x0C, 0x00])
        #expect(try RACPResponse(bytes: [0x06, 0x00, 0x02, 0x06]) == .response(request: .deleteStoredRecords, code: .noRecordsFound))
        #expect(try RACPResponse(bytes: [0x05, 0x00, 0x00, 0x01]) == .numberOfRecords(256))
        #expect(standardThrows(RACPResponse.self, [0x01, 0x00, 0x01, 0x01], .unknownType))
        #expect(standardThrows(RACPResponse.self, [0x06, 0x01, 0x01, 0x01], .invalidValue))
        #expect(standardThrows(RACPResponse.self, [0x06, 0x00, 0x01], .truncated))
        #expect(standardThrows(RACPResponse.self, [0x05, 0x00, 0x01], .truncated))
    }
}

/// The Record Access Control Point as a synchronous machine, case by case.
@Suite struct RACPStateMachineTests {
    struct Record: RACPRecord {
        var sequenceNumber: UInt16
    }
    typealias Machine = RACPStateMachine<Record>

    static func machine(_ numbers: [UInt16] = [1, 2, 3, 4, 5]) -> Machine { Machine(records: numbers.map(Record.init)) }

    /// Runs the report in progress to its end: the records sent and the final response.
    static func drain(_ machine: inout Machine) -> ([UInt16], RACPResponse?) {
        var sent: [UInt16] = []
        while let step = machine.nextReportStep() {
            switch step {
            case .send(let record): sent.append(record.sequenceNumber)
            case .finish(let response): return (sent, response)
            }
        }
        return (sent, nil)
    }

    static let reportSuccess = RACPResponse.response(request: .reportStoredRecords, code: .success)

    @Test(arguments: [
        (RACPRecordFilter.all, [UInt16(1), 2, 3, 4, 5]),
        (.first, [1]),
        (.last, [5]),
        (.atMost(2), [1, 2]),
        (.atLeast(4), [4, 5]),
        (.sequenceNumbers(2...4), [2, 3, 4]),
        (.sequenceNumbers(3...3), [3]),
        (.atLeast(0), [1, 2, 3, 4, 5]),
    ])
    func reportsTheSelectedRecordsThenSuccess(filter: RACPRecordFilter, expected: [UInt16]) {
        var machine = Self.machine()
        #expect(machine.write(RACPRequest.report(filter).encoded, indicationsEnabled: true) == .reportStarted(count: expected.count))
        #expect(machine.isProcedureInProgress)
        let (sent, response) = Self.drain(&machine)
        #expect(sent == expected)
        #expect(response == Self.reportSuccess)
        #expect(!machine.isProcedureInProgress)
        #expect(machine.nextReportStep() == nil)
        #expect(machine.records.count == 5)
    }

    @Test(arguments: [RACPRecordFilter.atLeast(6), .atMost(0), .sequenceNumbers(10...20)])
    func reportAndDeleteOfNothingAnswerNoRecordsFound(filter: RACPRecordFilter) {
        var machine = Self.machine()
        #expect(machine.write(RACPRequest.report(filter).encoded, indicationsEnabled: true)
                == .respond(.response(request: .reportStoredRecords, code: .noRecordsFound)))
        #expect(machine.write(RACPRequest.delete(filter).encoded, indicationsEnabled: true)
                == .respond(.response(request: .deleteStoredRecords, code: .noRecordsFound)))
        #expect(machine.write(RACPRequest.count(filter).encoded, indicationsEnabled: true) == .respond(.numberOfRecords(0)))
        #expect(!machine.isProcedureInProgress)
    }

    @Test func anEmptyStoreHasNoFirstOrLastRecord() {
        var machine = Self.machine([])
        for filter in [RACPRecordFilter.all, .first, .last] {
            #expect(machine.write(RACPRequest.report(filter).encoded, indicationsEnabled: true)
                    == .respond(.response(request: .reportStoredRecords, code: .noRecordsFound)))
        }
    }

    @Test func deleteRemovesTheSelectedRecords() {
        var machine = Self.machine()
        #expect(machine.write(RACPRequest.delete(.sequenceNumbers(2...3)).encoded, indicationsEnabled: true)
                == .respond(.response(request: .deleteStoredRecords, code: .success)))
        #expect(machine.records.map(\.sequenceNumber) == [1, 4, 5])
        #expect(machine.write(RACPRequest.delete(.last).encoded, indicationsEnabled: true)
                == .respond(.response(request: .deleteStoredRecords, code: .success)))
        #expect(machine.records.map(\.sequenceNumber) == [1, 4])
        #expect(machine.write(RACPRequest.delete(.all).encoded, indicationsEnabled: true)
                == .respond(.response(request: .deleteStoredRecords, code: .success)))
        #expect(machine.records.isEmpty)
    }

    @Test func countsTheSelectedRecords() {
        var machine = Self.machine()
        #expect(machine.write(RACPRequest.count(.all).encoded, indicationsEnabled: true) == .respond(.numberOfRecords(5)))
        #expect(machine.write(RACPRequest.count(.atLeast(3)).encoded, indicationsEnabled: true) == .respond(.numberOfRecords(3)))
        #expect(machine.write(RACPRequest.count(.first).encoded, indicationsEnabled: true) == .respond(.numberOfRecords(1)))
        machine.store(Record(sequenceNumber: 9))
        machine.store(Record(sequenceNumber: 0))
        #expect(machine.records.map(\.sequenceNumber) == [0, 1, 2, 3, 4, 5, 9])
        #expect(machine.write(RACPRequest.count(.all).encoded, indicationsEnabled: true) == .respond(.numberOfRecords(7)))
    }

    @Test func abortStopsTheReportInProgress() {
        var machine = Self.machine()
        #expect(machine.write(RACPRequest.report(.all).encoded, indicationsEnabled: true) == .reportStarted(count: 5))
        #expect(machine.nextReportStep() == .send(Record(sequenceNumber: 1)))
        #expect(machine.write(RACPRequest.abort.encoded, indicationsEnabled: true)
                == .respond(.response(request: .abortOperation, code: .success)))
        #expect(!machine.isProcedureInProgress)
        #expect(machine.nextReportStep() == nil)
        // Another procedure may start, and abort with nothing in progress succeeds.
        #expect(machine.write(RACPRequest.count(.all).encoded, indicationsEnabled: true) == .respond(.numberOfRecords(5)))
        #expect(machine.write(RACPRequest.abort.encoded, indicationsEnabled: true)
                == .respond(.response(request: .abortOperation, code: .success)))
    }

    @Test func writesDuringAReportAreRefusedWithProcedureAlreadyInProgress() {
        var machine = Self.machine()
        #expect(machine.write(RACPRequest.report(.all).encoded, indicationsEnabled: true) == .reportStarted(count: 5))
        for request in [RACPRequest.report(.last), .delete(.all), .count(.all), RACPRequest(opCode: RACPOpCode(rawValue: 0x42), operator: .null)] {
            #expect(machine.write(request.encoded, indicationsEnabled: true) == .refused(ATTErrorCode(rawValue: 0x80)))
        }
        #expect(machine.records.count == 5)
        let (sent, response) = Self.drain(&machine)
        #expect(sent == [1, 2, 3, 4, 5] && response == Self.reportSuccess)
    }

    @Test func writesWithoutIndicationsAreRefusedWithCCCDImproperlyConfigured() {
        var machine = Self.machine()
        for request in [RACPRequest.report(.all), .delete(.all), .count(.all), .abort] {
            #expect(machine.write(request.encoded, indicationsEnabled: false) == .refused(ATTErrorCode(rawValue: 0x81)))
        }
        #expect(machine.records.count == 5 && !machine.isProcedureInProgress)
        #expect(machine.write([], indicationsEnabled: true) == .refused(.invalidAttributeValueLength))
    }

    @Test(arguments: [UInt8(0x00), 0x05, 0x06, 0x07, 0xFF])
    func unknownAndServerOpCodesAreNotSupported(opCode: UInt8) {
        var machine = Self.machine()
        #expect(machine.write([opCode, 0x01], indicationsEnabled: true)
                == .respond(.response(request: RACPOpCode(rawValue: opCode), code: .opCodeNotSupported)))
    }

    @Test(arguments: [
        ([UInt8(0x01)], RACPResponseCode.invalidOperator),
        ([0x01, 0x00], .invalidOperator),
        ([0x02, 0x00], .invalidOperator),
        ([0x04, 0x00], .invalidOperator),
        ([0x01, 0x07], .operatorNotSupported),
        ([0x04, 0xFF], .operatorNotSupported),
        ([0x01, 0x01, 0x01], .invalidOperand),
        ([0x01, 0x05, 0x00], .invalidOperand),
        ([0x01, 0x02], .invalidOperand),
        ([0x01, 0x02, 0x01], .invalidOperand),
        ([0x01, 0x02, 0x01, 0x05], .invalidOperand),
        ([0x01, 0x03, 0x01, 0x05, 0x00, 0x00], .invalidOperand),
        ([0x01, 0x04, 0x01, 0x05, 0x00], .invalidOperand),
        ([0x01, 0x04, 0x01, 0x05, 0x00, 0x02, 0x00], .invalidOperand),
        ([0x01, 0x03, 0x03, 0x05, 0x00], .invalidOperand),
        ([0x01, 0x03, 0x02, 0xEA, 0x07, 1, 1, 0, 0, 0], .operandNotSupported),
        ([0x02, 0x04, 0x02, 0xEA, 0x07, 1, 1, 0, 0, 0, 0xEA, 0x07, 1, 2, 0, 0, 0], .operandNotSupported),
    ])
    func malformedRequestsGetTheirResponseCode(bytes: [UInt8], code: RACPResponseCode) {
        var machine = Self.machine()
        #expect(machine.write(bytes, indicationsEnabled: true) == .respond(.response(request: RACPOpCode(rawValue: bytes[0]), code: code)))
        #expect(machine.records.count == 5 && !machine.isProcedureInProgress)
    }

    @Test func abortWithAnOperatorOrOperandIsRefused() {
        var machine = Self.machine()
        #expect(machine.write([0x03], indicationsEnabled: true) == .respond(.response(request: .abortOperation, code: .invalidOperator)))
        #expect(machine.write([0x03, 0x01], indicationsEnabled: true) == .respond(.response(request: .abortOperation, code: .invalidOperator)))
        #expect(machine.write([0x03, 0x00, 0x01], indicationsEnabled: true) == .respond(.response(request: .abortOperation, code: .invalidOperand)))
    }

    @Test func anUndeliverableRecordEndsTheReportNotCompleted() {
        var machine = Self.machine()
        #expect(machine.interruptReport() == nil)
        #expect(machine.write(RACPRequest.report(.all).encoded, indicationsEnabled: true) == .reportStarted(count: 5))
        #expect(machine.nextReportStep() == .send(Record(sequenceNumber: 1)))
        #expect(machine.interruptReport() == .response(request: .reportStoredRecords, code: .procedureNotCompleted))
        #expect(!machine.isProcedureInProgress && machine.nextReportStep() == nil)
    }
}

/// The glucose client against the simulated meter through the whole stack.
@Suite(.timeLimit(.minutes(1))) struct GlucoseLiveTests {
    static func start(records: Int, spacing: Duration = .zero) async throws -> StandardLink<SimulatedGlucoseMeter> {
        try await StandardLink.start { manager in
            let meter = await SimulatedGlucoseMeter(manager: manager, initialRecords: records, recordSpacing: spacing, seed: 11)
            // No new measurement during the test.
            try await meter.start(tick: .seconds(600))
            return meter
        }
    }

    @Test func reportCountRangeAndDelete() async throws {
        let link = try await Self.start(records: 12)
        defer { link.air.shutdown() }
        let remote = link.remote
        // Before any client enabled the control point's indications: 0x81.
        let service = try #require(try await remote.discoverServices([GlucoseService.uuid]).first)
        let racp = try #require(try await remote.discoverCharacteristics([GlucoseService.recordAccessControlPoint], for: service).first)
        await #expect(throws: GATTError(.att(ATTErrorCode(rawValue: 0x81), handle: racp.valueHandle), "")) {
            try await remote.writeValue(RACPRequest.count(.all).encoded, for: racp, type: .withResponse)
        }
        let client = try await GlucoseClient(peripheral: remote)
        #expect(try await client.readFeature() == SimulatedGlucoseMeter.features)
        #expect(try await client.numberOfRecords() == 12)
        let stored = await link.simulator.records
        let all = try await client.records(.all)
        #expect(all == stored)
        #expect(all.map(\.sequenceNumber) == Array(1...12))
        #expect(all.filter { $0.context != nil }.map(\.sequenceNumber) == [3, 6, 9, 12])
        #expect(all.allSatisfy { (85...125).contains($0.measurement.concentration?.milligramsPerDecilitre ?? 0) })
        #expect(try await client.records(.last).map(\.sequenceNumber) == [12])
        #expect(try await client.records(.first).map(\.sequenceNumber) == [1])
        #expect(try await client.records(.sequenceNumbers(3...5)) == Array(stored[2...4]))
        #expect(try await client.records(.atLeast(11)).map(\.sequenceNumber) == [11, 12])
        #expect(try await client.numberOfRecords(.atMost(4)) == 4)
        try await client.deleteRecords(.atMost(4))
        #expect(try await client.numberOfRecords() == 8)
        #expect(try await client.records(.first).map(\.sequenceNumber) == [5])
        #expect(await link.simulator.records.map(\.sequenceNumber) == Array(5...12))
        await #expect(throws: StandardServiceError(.recordAccessFailed(.noRecordsFound))) { try await client.deleteRecords(.sequenceNumbers(100...200)) }
        #expect(try await client.records(.sequenceNumbers(1...4)).isEmpty)
        // Filters by user facing time are not supported by this meter.
        #expect(try await client.perform(RACPRequest(opCode: .reportStoredRecords, operator: .greaterThanOrEqual, operand: [0x02, 0xEA, 0x07, 1, 1, 0, 0, 0]))
                == .response(request: .reportStoredRecords, code: .operandNotSupported))
        await link.simulator.stop()
        withExtendedLifetime(link) {}
    }

    @Test func aWriteDuringAReportIsRefusedAndAbortStopsIt() async throws {
        // A slow meter (2 s for the 400 records) so that the abort comes in time.
        let link = try await Self.start(records: 400, spacing: .milliseconds(5))
        defer { link.air.shutdown() }
        let client = try await GlucoseClient(peripheral: link.remote)
        let service = try #require(try await link.remote.discoverServices([GlucoseService.uuid]).first)
        let characteristics = try await link.remote.discoverCharacteristics(for: service)
        let measurement = try #require(characteristics.first { $0.uuid == GlucoseService.measurement })
        let racp = try #require(characteristics.first { $0.uuid == GlucoseService.recordAccessControlPoint })
        let notified = try await link.remote.notifications(for: measurement)
        let responses = try await link.remote.notifications(for: racp)
        // Start a long report; once its first record arrives, another procedure is refused with 0x80 and Abort stops it.
        try await link.remote.writeValue(RACPRequest.report(.all).encoded, for: racp, type: .withResponse)
        let first = try await withTimeout(5) {
            for await value in notified { return try GlucoseMeasurement(bytes: value).sequenceNumber }
            return UInt16(0)
        }
        #expect(first == 1)
        await #expect(throws: GATTError(.att(ATTErrorCode(rawValue: 0x80), handle: racp.valueHandle), "")) {
            try await link.remote.writeValue(RACPRequest.count(.all).encoded, for: racp, type: .withResponse)
        }
        try await link.remote.writeValue(RACPRequest.abort.encoded, for: racp, type: .withResponse)
        let response = try await withTimeout(5) {
            for await value in responses { return try RACPResponse(bytes: value) }
            return RACPResponse.numberOfRecords(0)
        }
        // The abort's response is the only one: the report ends without its own.
        #expect(response == .response(request: .abortOperation, code: .success))
        #expect(await link.simulator.machine.isProcedureInProgress == false)
        #expect(try await client.numberOfRecords() == 400)
        // The aborted report's records do not leak into the next report.
        #expect(try await client.records(.sequenceNumbers(10...12)).map(\.sequenceNumber) == [10, 11, 12])
        await link.simulator.stop()
        withExtendedLifetime((link, notified, responses)) {}
    }

    @Test func aClientReportAbortedByTheSameClientThrowsAborted() async throws {
        // A slow meter (2 s for the 400 records) so that the abort comes in time.
        let link = try await Self.start(records: 400, spacing: .milliseconds(5))
        defer { link.air.shutdown() }
        let client = try await GlucoseClient(peripheral: link.remote)
        #expect(try await client.numberOfRecords() == 400)
        let report = Task { try await client.records(.all) }
        // Wait until the meter is sending, then abort.
        var reporting = false
        for _ in 0..<200 where !reporting {
            reporting = await link.simulator.machine.isProcedureInProgress
            if !reporting { try await Task.sleep(for: .milliseconds(2)) }
        }
        #expect(reporting)
        try await client.abort()
        await #expect(throws: StandardServiceError(.aborted)) { _ = try await withTimeout(5) { try await report.value } }
        #expect(try await client.records(.last).map(\.sequenceNumber) == [400])
        await link.simulator.stop()
        withExtendedLifetime(link) {}
    }

    @Test func aReportWhoseRecordsCannotBeDeliveredIsNotCompleted() async throws {
        let link = try await Self.start(records: 3)
        defer { link.air.shutdown() }
        let service = try #require(try await link.remote.discoverServices([GlucoseService.uuid]).first)
        let racp = try #require(try await link.remote.discoverCharacteristics([GlucoseService.recordAccessControlPoint], for: service).first)
        // Indications of the control point enabled, notifications of the measurement not.
        let responses = try await link.remote.notifications(for: racp)
        try await link.remote.writeValue(RACPRequest.report(.all).encoded, for: racp, type: .withResponse)
        let response = try await withTimeout(5) {
            for await value in responses { return try RACPResponse(bytes: value) }
            return RACPResponse.numberOfRecords(0)
        }
        #expect(response == .response(request: .reportStoredRecords, code: .procedureNotCompleted))
        #expect(await link.simulator.machine.isProcedureInProgress == false)
        #expect(await link.simulator.records.count == 3)
        await link.simulator.stop()
        withExtendedLifetime((link, responses)) {}
    }
}
