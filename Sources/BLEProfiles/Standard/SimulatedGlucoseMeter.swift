/// A simulated glucose meter (Glucose and Device Information services) holding stored records served through the
/// Record Access Control Point (``RACPStateMachine``): it starts with `initialRecords` records, one every four
/// hours, every third with a context, concentrations around 105 mg/dL varied deterministically; each tick one more
/// measurement is taken and stored. The records of a report are notified to the client that asked (a context right
/// after its measurement), then the response is indicated; a record that cannot be delivered (the client did not
/// enable the measurement's notifications, or left) ends the report with Procedure Not Completed.
public actor SimulatedGlucoseMeter {
    /// The name it advertises unless told otherwise.
    public static let defaultName = "SwiftBLE Glucose"
    /// The features it publishes.
    public static let features: GlucoseFeature = [.lowBatteryDetection, .sensorMalfunctionDetection, .stripInsertionErrorDetection,
                                                  .resultHighLowDetection, .timeFault]
    /// The peripheral manager it publishes on.
    public let manager: PeripheralManager
    /// The advertised name.
    public let name: String
    /// The record store and control point state.
    public private(set) var machine: RACPStateMachine<GlucoseRecord>
    /// The device's clock.
    public private(set) var clock = DateTime(year: 2026, month: 1, day: 1, hours: 7)
    var nextSequenceNumber: UInt16 = 1
    var generator: StandardSeededGenerator
    var indicating: Set<ConnectionHandle> = []
    var tasks: [Task<Void, Never>] = []
    var reporter: Task<Void, Never>?
    /// Which report the running reporter sends (an aborted report's reporter must not take the next one's records).
    var reportGeneration = 0

    /// The pause after each record of a report (a slow meter; zero sends them back to back).
    public let recordSpacing: Duration

    /// A meter on `manager` with `initialRecords` stored records, pausing `recordSpacing` after each reported record;
    /// `seed` fixes its variation. Call ``start(tick:)``.
    public init(manager: PeripheralManager, name: String = SimulatedGlucoseMeter.defaultName, initialRecords: Int = 12,
                recordSpacing: Duration = .zero, seed: UInt64 = 1) async {
        self.manager = manager
        self.name = name
        self.recordSpacing = recordSpacing
        generator = StandardSeededGenerator(seed: seed)
        machine = RACPStateMachine()
        for _ in 0..<max(0, initialRecords) { takeMeasurement() }
    }

    /// The stored records now.
    public var records: [GlucoseRecord] { machine.records }

    /// Publishes the services, advertises, answers the control point and stores a new measurement every `tick`.
    public func start(tick: Duration = .seconds(1)) async throws {
        guard tasks.isEmpty else { return }
        // Two streams of the same requests: the control point's answers and the subscription tracking run apart, as
        // before, so that a long answer does not hold a subscription change back.
        let requests = await manager.requests()
        let changes = await manager.requests()
        try await standardPublish([GlucoseService.definition(features: Self.features), DeviceInformationService.definition(.simulated(model: "GLUCO-1"))],
                                  on: manager, name: name)
        tasks.append(Task { [weak self] in
            for await request in requests { if case .application(let asked) = request.kind { await self?.answer(asked) } }
        })
        tasks.append(Task { [weak self] in
            for await change in changes { await self?.track(change) }
        })
        tasks.append(standardTicker(every: tick) { [weak self] in
            await self?.takeMeasurement()
            return self != nil
        })
    }

    /// Stores the next measurement, four hours after the previous one.
    func takeMeasurement() {
        let sequence = nextSequenceNumber
        nextSequenceNumber &+= 1
        clock = clock.adding(seconds: 4 * 3600)
        let mgdL = 105 + Double(Int(generator.next() % 41) - 20)
        let status: GlucoseSensorStatus? = generator.next() % 6 == 0 ? .timeFault : nil
        let measurement = GlucoseMeasurement(sequenceNumber: sequence, baseTime: clock, timeOffset: 0,
                                             concentration: .milligramsPerDecilitre(mgdL), sensorStatus: status)
        let context = sequence % 3 == 0
            ? GlucoseMeasurementContext(sequenceNumber: sequence, carbohydrate: .init(id: 1, kilograms: SFloat(0.045, fractionDigits: 3)),
                                        meal: sequence % 2 == 0 ? 1 : 2, testerAndHealth: 0x51)
            : nil
        machine.store(GlucoseRecord(measurement: measurement, context: context))
    }

    /// Who enabled indications of the control point.
    func track(_ change: PeripheralRequest) {
        guard case .subscription(let characteristic, _, _, let indicate) = change.kind, characteristic == GlucoseService.recordAccessControlPoint else { return }
        if indicate { indicating.insert(change.central.handle) } else { indicating.remove(change.central.handle) }
    }

    func answer(_ request: AttributeRequest) async {
        guard request.characteristic == GlucoseService.recordAccessControlPoint, case .write(let value, _) = request.kind else {
            return await request.refuse(.requestNotSupported)
        }
        let central = request.central
        switch machine.write(value, indicationsEnabled: indicating.contains(central.handle)) {
        case .refused(let error):
            await request.refuse(error)
        case .respond(let response):
            await request.accept()
            // An abort's response follows the record the reporter was sending when it came.
            if case .response(.abortOperation, _) = response { await reporter?.value }
            _ = try? await manager.updateValue(response.encoded, for: GlucoseService.recordAccessControlPoint, onSubscribedCentrals: [central])
        case .reportStarted:
            await request.accept()
            reporter?.cancel()
            reportGeneration += 1
            let generation = reportGeneration
            reporter = Task { [weak self] in await self?.report(to: central, generation: generation) }
        }
    }

    /// Sends the report's records, then its response.
    func report(to central: HostConnection, generation: Int) async {
        while generation == reportGeneration, let step = machine.nextReportStep() {
            switch step {
            case .send(let record):
                let reached = try? await manager.updateValue(record.measurement.encoded, for: GlucoseService.measurement, onSubscribedCentrals: [central])
                if let context = record.context {
                    _ = try? await manager.updateValue(context.encoded, for: GlucoseService.measurementContext, onSubscribedCentrals: [central])
                }
                if reached?.isEmpty ?? true, generation == reportGeneration, let response = machine.interruptReport() {
                    _ = try? await manager.updateValue(response.encoded, for: GlucoseService.recordAccessControlPoint, onSubscribedCentrals: [central])
                    return
                }
                if recordSpacing > .zero { try? await Task.sleep(for: recordSpacing) }
            case .finish(let response):
                _ = try? await manager.updateValue(response.encoded, for: GlucoseService.recordAccessControlPoint, onSubscribedCentrals: [central])
                return
            }
        }
    }

    /// Stops measuring, answering, advertising and serving (the services are removed).
    public func stop() async {
        for task in tasks { task.cancel() }
        tasks = []
        reporter?.cancel()
        reporter = nil
        await standardUnpublish([GlucoseService.uuid, DeviceInformationService.uuid], on: manager)
    }
}
