/// A Glucose Service client on a connected peripheral: runs Record Access Control Point procedures and collects the
/// records notified before the control point's response.
///
/// Each characteristic's values reach the central on a stream of their own, so the response indication can be
/// consumed a moment before the last notified records: after the response, the client keeps collecting until the
/// record streams have been quiet for `settle` (50 ms by default).
public struct GlucoseClient: Sendable {
    let service: StandardDiscoveredService
    /// How long the record streams must be quiet after the response before a report is considered complete.
    public var settle: Duration = .milliseconds(50)
    /// How long to wait for the control point's response.
    public var timeout: Duration = .seconds(30)

    /// Discovers the Glucose Service of `peripheral`; throws ``StandardServiceError/serviceNotFound(_:)`` when it has
    /// none.
    public init(peripheral: RemotePeripheral) async throws {
        service = try await .discover(GlucoseService.uuid, on: peripheral)
    }

    /// Reads the meter's features.
    public func readFeature() async throws -> GlucoseFeature {
        try await service.read(GlucoseService.feature, GlucoseFeature.standardDecode)
    }

    /// Reports the stored records `filter` selects, oldest first; none found is an empty array. Throws
    /// ``StandardServiceError/recordAccessFailed(_:)`` when the meter answers another response code.
    public func records(_ filter: RACPRecordFilter = .all) async throws -> [GlucoseRecord] {
        let collector = StandardGlucoseCollector()
        let measurements = try await service.rawUpdates(GlucoseService.measurement)
        let contexts = service.has(GlucoseService.measurementContext) ? try await service.rawUpdates(GlucoseService.measurementContext) : nil
        let listeners = [
            Task { for await value in measurements { await collector.measurement(value) } },
            Task {
                guard let contexts else { return }
                for await value in contexts { await collector.context(value) }
            },
        ]
        defer { for listener in listeners { listener.cancel() } }
        let response = try await perform(.report(filter))
        if response == .response(request: .abortOperation, code: .success) { throw StandardServiceError(.aborted) }
        guard case .response(.reportStoredRecords, let code) = response else { throw StandardServiceError(.unexpectedResponse(response.encoded)) }
        guard code == .success else {
            if code == .noRecordsFound { return [] }
            throw StandardServiceError(.recordAccessFailed(code))
        }
        try await waitUntilQuiet(collector)
        return try await collector.records()
    }

    /// Deletes the stored records `filter` selects; throws ``StandardServiceError/recordAccessFailed(_:)`` (for
    /// example with No Records Found) unless the meter answers Success.
    public func deleteRecords(_ filter: RACPRecordFilter) async throws {
        let response = try await perform(.delete(filter))
        guard case .response(.deleteStoredRecords, let code) = response else { throw StandardServiceError(.unexpectedResponse(response.encoded)) }
        guard code == .success else { throw StandardServiceError(.recordAccessFailed(code)) }
    }

    /// The number of stored records `filter` selects.
    public func numberOfRecords(_ filter: RACPRecordFilter = .all) async throws -> Int {
        let response = try await perform(.count(filter))
        switch response {
        case .numberOfRecords(let count): return Int(count)
        case .response(.reportNumberOfStoredRecords, let code): throw StandardServiceError(.recordAccessFailed(code))
        default: throw StandardServiceError(.unexpectedResponse(response.encoded))
        }
    }

    /// Aborts the report in progress; returns once the records the meter sent before stopping have arrived (so the
    /// next report does not see them).
    public func abort() async throws {
        let collector = StandardGlucoseCollector()
        let measurements = try await service.rawUpdates(GlucoseService.measurement)
        let listener = Task { for await value in measurements { await collector.measurement(value) } }
        defer { listener.cancel() }
        let response = try await perform(.abort)
        guard case .response(.abortOperation, let code) = response else { throw StandardServiceError(.unexpectedResponse(response.encoded)) }
        guard code == .success else { throw StandardServiceError(.recordAccessFailed(code)) }
        try await waitUntilQuiet(collector)
    }

    /// Waits until `collector` has received nothing for ``settle``: the notifications sent before an indication
    /// reach their streams a moment after it.
    func waitUntilQuiet(_ collector: StandardGlucoseCollector) async throws {
        var seen = await collector.received
        while true {
            try await Task.sleep(for: settle)
            let now = await collector.received
            if now == seen { return }
            seen = now
        }
    }

    /// Writes `request` to the control point (with its indications enabled) and returns the response the meter
    /// indicates for it: the first Response Code naming the request's op code (or the Number of Stored Records
    /// Response of a count); a report aborted meanwhile returns the abort's Success. ATT errors (0x80 procedure
    /// already in progress, 0x81 CCCD improperly configured) are thrown as `GATTError`.
    public func perform(_ request: RACPRequest) async throws -> RACPResponse {
        let responses = try await service.updates(GlucoseService.recordAccessControlPoint, RACPResponse.standardDecode)
        try await service.write(request.encoded, to: GlucoseService.recordAccessControlPoint)
        let timeout = timeout
        return try await withThrowingTaskGroup(of: RACPResponse?.self) { group in
            group.addTask {
                for try await response in responses where Self.answers(response, request) { return response }
                return nil
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let response = first else { throw StandardServiceError(.timedOut) }
            return response
        }
    }
}

extension GlucoseClient {
    /// Whether `response` ends the procedure `request` started.
    static func answers(_ response: RACPResponse, _ request: RACPRequest) -> Bool {
        switch response {
        case .numberOfRecords: return request.opCode == .reportNumberOfStoredRecords
        case .response(let opCode, let code):
            return opCode == request.opCode || (request.opCode == .reportStoredRecords && opCode == .abortOperation && code == .success)
        }
    }
}

/// The records a report notifies, paired by sequence number.
actor StandardGlucoseCollector {
    var measurements: [GlucoseMeasurement] = []
    var contexts: [UInt16: GlucoseMeasurementContext] = [:]
    var failure: WireError?
    var received = 0

    func measurement(_ bytes: [UInt8]) {
        received += 1
        do { measurements.append(try GlucoseMeasurement(bytes: bytes)) } catch { failure = failure ?? error }
    }

    func context(_ bytes: [UInt8]) {
        received += 1
        do {
            let context = try GlucoseMeasurementContext(bytes: bytes)
            contexts[context.sequenceNumber] = context
        } catch { failure = failure ?? error }
    }

    func records() throws -> [GlucoseRecord] {
        if let failure { throw failure }
        return measurements.map { measurement in
            var record = GlucoseRecord(measurement: measurement, context: measurement.hasContext ? contexts[measurement.sequenceNumber] : nil)
            record.measurement.hasContext = measurement.hasContext
            return record
        }
    }
}
